"""Adversarial / perturbation confidence loss (Cheng et al. 2018, Sec. II-D).

Given input transformers T_1, ..., T_n (rotation, noise, FGSM, DeepFool, ...), the paper's metric
analyses, for each input x, the change ``NN(T_i(x)) - NN(x)`` of the network's output and keeps
the most negative one, then averages over the inputs. labelwise follows the authors' toolkit:

- ``NN(x)`` is the softmax probability of the input's **true class** (or of the class the model
  predicts on x when no labels are given), so a model that already errs on x still has a
  probability to lose;
- the loss of x under T is ``max(0, p(x) - p(T(x)))`` and the loss of x is the largest over the
  transformers (the worst case; the paper's ``min_T NN(T(x)) - NN(x)`` is the same quantity with
  the opposite sign, floored at 0: a transformer that raises the probability does no harm);
- reported are the average loss (the metric), the maximum, the mean of the top 10% losses, and per
  transformer its average loss and how often it did the most harm.

Transformers
    :class:`FGSM`, :class:`PGD` and :class:`DeepFool` (torchattacks, inputs in [0, 1]),
    :class:`GaussianNoise`, :class:`Brightness`, :class:`Rotation`, :class:`Patch`, or any
    callable ``(x: Tensor) -> Tensor`` keeping the shape: see :mod:`labelwise.adapters.attacks`
    for what each does and how to install torchattacks.

The model must return logits of shape (N, C), C >= 2 (softmax is applied here), or
probabilities (rows non-negative and summing to 1, e.g. a final softmax layer), which are
used as they are, as :func:`labelwise.adapters.torch.capture` does.

This module is NumPy only: the result :class:`ConfidenceLoss` and :func:`plot_confidence_loss`.
The transformers and :func:`confidence_loss`, which run the model, live in
:mod:`labelwise.adapters.attacks` and are re-exported here lazily (reading
``robustness.confidence_loss`` imports the adapter, not torch).

Examples
--------
>>> from labelwise.dependability.robustness import FGSM, GaussianNoise, confidence_loss
>>> res = confidence_loss(model, x, y, [FGSM(0.05), GaussianNoise(0.1)], rng=0)  # doctest: +SKIP
>>> res.mean, res.maximum, res.top_mean  # doctest: +SKIP
>>> print(res.table())  # doctest: +SKIP
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
from numpy.typing import NDArray

from .. import _plotting
from .._contract import JSON_OMIT, Result, _readonly
from .._json import jsonable
from .._validation import check_int
from ..exceptions import LabelwiseError

if TYPE_CHECKING:
    from ..adapters.attacks import (
        DEFAULT_TRANSFORMERS,
        FGSM,
        PGD,
        Brightness,
        DeepFool,
        GaussianNoise,
        Patch,
        Rotation,
        confidence_loss,
    )

__all__ = [
    "DEFAULT_TRANSFORMERS",
    "FGSM",
    "PGD",
    "Brightness",
    "ConfidenceLoss",
    "DeepFool",
    "GaussianNoise",
    "Patch",
    "Rotation",
    "confidence_loss",
    "plot_confidence_loss",
]

# names that run the model: they live in labelwise.adapters.attacks, imported on first use
_ADAPTER_NAMES = frozenset(
    {
        "DEFAULT_TRANSFORMERS",
        "FGSM",
        "PGD",
        "Brightness",
        "DeepFool",
        "GaussianNoise",
        "Patch",
        "Rotation",
        "confidence_loss",
    }
)


def __getattr__(name: str) -> Any:
    if name in _ADAPTER_NAMES:
        from ..adapters import attacks

        return getattr(attacks, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *_ADAPTER_NAMES])


# --------------------------------------------------------------------------- result


@dataclass(frozen=True, eq=False)
class ConfidenceLoss(Result):
    """Confidence loss of a network under input transformers (Sec. II-D).

    Arrays are read-only; per-input arrays have one row per input, per-transformer columns
    follow ``transformers``. ``value`` is :attr:`mean` (lower is better).

    Attributes
    ----------
    transformers:
        Names of the K transformers, e.g. ``"FGSM(eps=0.03137)"``.
    targets:
        (N,) class whose probability is tracked: the true label, or the model's prediction on
        the unperturbed input when no labels were given (``labelled`` False).
    p_before:
        (N,) softmax probability of the target class on the input.
    p_after:
        (N, K) the same probability on each transformed input.
    loss_by_transformer:
        (N, K) ``max(0, p_before - p_after)``.
    loss:
        (N,) the input's loss: the largest over the transformers, in [0, 1].
    worst:
        (N,) index of the transformer with the largest loss (ties: the first), or -1 when no
        transformer lowered the probability (loss 0).
    labelled:
        Whether true labels were given.
    top_fraction:
        Share of inputs behind ``top_mean`` (default 0.1), in (0, 1].

    ``to_dict`` writes the summary figures, one ``{"name", "mean_loss", "n_worst"}`` row per
    transformer under ``"transformers"`` and the per-input arrays (not
    ``loss_by_transformer``).
    """

    higher_is_better: ClassVar[bool | None] = False
    _json_head: ClassVar[Mapping[str, Any]] = MappingProxyType({"metric": "confidence_loss"})
    _json_properties: ClassVar[tuple[str, ...]] = (
        "n_inputs",
        "mean",
        "maximum",
        "n_top",
        "top_mean",
        "n_unharmed",
    )

    transformers: tuple[str, ...]
    targets: NDArray[np.int64]
    p_before: NDArray[np.float64]
    p_after: NDArray[np.float64]
    loss_by_transformer: NDArray[np.float64] = field(metadata=JSON_OMIT)
    loss: NDArray[np.float64]
    worst: NDArray[np.int64]
    labelled: bool
    top_fraction: float = 0.1

    def __post_init__(self) -> None:
        if not 0 < self.top_fraction <= 1:  # also rejects NaN
            raise LabelwiseError(f"top_fraction must be in (0, 1], got {self.top_fraction}")
        object.__setattr__(self, "transformers", tuple(str(t) for t in self.transformers))
        super().__post_init__()

    @property
    def n_inputs(self) -> int:
        return int(self.loss.size)

    @property
    def mean(self) -> float:
        """The metric: the average loss over the inputs."""
        return float(self.loss.mean())

    @property
    def value(self) -> float:
        """Same as :attr:`mean` (the metric's value)."""
        return self.mean

    @property
    def maximum(self) -> float:
        return float(self.loss.max())

    @property
    def n_top(self) -> int:
        """Number of inputs behind :attr:`top_mean`: ``ceil(top_fraction * N)``."""
        return max(1, math.ceil(self.top_fraction * self.n_inputs - 1e-9))

    @property
    def top_mean(self) -> float:
        """Mean of the ``n_top`` largest losses (the top-10% figure by default)."""
        return float(np.sort(self.loss)[::-1][: self.n_top].mean())

    @property
    def mean_by_transformer(self) -> NDArray[np.float64]:
        """(K,) average loss each transformer alone causes."""
        return _readonly(self.loss_by_transformer.mean(axis=0))

    @property
    def n_worst(self) -> NDArray[np.int64]:
        """(K,) number of inputs on which each transformer did the most harm."""
        k = len(self.transformers)
        return _readonly(np.bincount(self.worst[self.worst >= 0], minlength=k).astype(np.int64))

    @property
    def n_unharmed(self) -> int:
        """Inputs that no transformer made less confident (loss 0)."""
        return int(np.count_nonzero(self.worst < 0))

    @property
    def worst_names(self) -> tuple[str | None, ...]:
        """Per input, the name of the most harmful transformer, or None (no harm)."""
        return tuple(None if w < 0 else self.transformers[w] for w in self.worst)

    def to_dict(self) -> dict[str, Any]:
        """The contract's dict, with one summary row per transformer under ``"transformers"``."""
        out = super().to_dict()
        out["transformers"] = jsonable(
            [
                {"name": name, "mean_loss": m, "n_worst": c}
                for name, m, c in zip(
                    self.transformers, self.mean_by_transformer, self.n_worst, strict=True
                )
            ]
        )
        return out

    def table(self) -> str:
        """A plain-text summary: the three figures, then one row per transformer."""
        what = "true class" if self.labelled else "predicted class"
        n = self.n_inputs
        lines = [
            f"Confidence loss over {n} inputs (probability of the {what})",
            f"  average  {self.mean:.4f}",
            f"  maximum  {self.maximum:.4f}",
            f"  top {100 * self.top_fraction:g}%  {self.top_mean:.4f} "
            f"(mean of the {self.n_top} largest)",
            "",
        ]
        width = max(len("transformer"), *(len(t) for t in self.transformers))
        lines.append(f"  {'transformer':<{width}}  mean loss  most harmful on")
        for name, m, c in zip(
            self.transformers, self.mean_by_transformer, self.n_worst, strict=True
        ):
            lines.append(f"  {name:<{width}}  {m:9.4f}  {c:>6d} ({100 * c / n:5.1f}%)")
        u = self.n_unharmed
        lines.append(f"  {'(no harm)':<{width}}  {'':9}  {u:>6d} ({100 * u / n:5.1f}%)")
        return "\n".join(lines)


# --------------------------------------------------------------------------- plot


def plot_confidence_loss(
    result: ConfidenceLoss, path: str | os.PathLike[str], *, bins: int = 20
) -> Path | None:
    """PNG: a histogram of the per-input losses (average and top-10% marked) beside a bar per
    transformer of its average loss, annotated with how often it did the most harm.

    Returns the path, or None when matplotlib is not installed.
    """
    if not isinstance(result, ConfidenceLoss):
        raise LabelwiseError(f"result must be a ConfidenceLoss, got {type(result).__name__}")
    bins = check_int(bins, "bins", minimum=1)
    plt = _plotting.pyplot()
    if plt is None:
        return None
    k = len(result.transformers)
    fig, (ax_h, ax_b) = plt.subplots(1, 2, figsize=(10.5, 3.8), width_ratios=(1.0, 1.2))
    ax_h.hist(result.loss, bins=bins, range=(0.0, 1.0), color="tab:blue", edgecolor="white")
    ax_h.axvline(result.mean, color="black", linestyle="--", label=f"average {result.mean:.3f}")
    ax_h.axvline(
        result.top_mean,
        color="tab:red",
        linestyle=":",
        label=f"top {100 * result.top_fraction:g}% {result.top_mean:.3f}",
    )
    ax_h.set_xlabel("confidence loss (worst transformer)", fontsize=8)
    ax_h.set_ylabel("inputs", fontsize=8)
    ax_h.set_title(f"{result.n_inputs} inputs, maximum {result.maximum:.3f}", fontsize=9)
    ax_h.legend(fontsize=7)
    ax_h.tick_params(labelsize=7)

    pos = np.arange(k)
    means = result.mean_by_transformer
    ax_b.barh(pos, means, color="tab:orange")
    for i, (m, c) in enumerate(zip(means, result.n_worst, strict=True)):
        ax_b.text(m, i, f" worst on {c}", va="center", fontsize=7)
    ax_b.set_yticks(pos)
    ax_b.set_yticklabels(result.transformers, fontsize=7)
    ax_b.invert_yaxis()
    ax_b.set_xlim(0, max(float(means.max()) * 1.35, 1e-3))
    ax_b.set_xlabel("average loss of the transformer alone", fontsize=8)
    ax_b.set_title("harm per transformer", fontsize=9)
    ax_b.tick_params(labelsize=7)
    fig.suptitle("Adversarial / perturbation confidence loss (Sec. II-D)", fontsize=10)
    fig.tight_layout()
    return _plotting.save_figure(fig, path)

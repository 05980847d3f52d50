"""Neuron activation-pattern metric (Cheng et al. 2018, "Towards Dependability Metrics for
Neural Networks", Sec. II-C, Eq. 3).

Inputs of one scenario (or one class) should activate similar numbers of neurons in the
analysed layer. For a group of inputs ``In`` and a layer of c neurons, let a(x) be the number
of neurons of input x with value ``> threshold``. The paper splits In into gamma groups
G_1..G_gamma by a(x) in ``[c/gamma * (i - 1), c/gamma * i]``; those closed ranges overlap at
their ends, so here

    bin(x) = min(floor(a(x) * gamma / c), gamma - 1)        (0-based; integer arithmetic)

i.e. bin i (1-based) holds ``c(i-1)/gamma <= a < c*i/gamma`` and the last one also a = c. With
G_j the largest group (ties: the lowest j, flagged by ``largest_tied``), the metric is the
share of inputs outside G_{j-1}, G_j and G_{j+1}:

    M_neu-pattern = sum_{i not in {j-1, j, j+1}} |G_i| / |In|.

The paper fixes no gamma; the default 10 (bins of 10% of the layer) is our choice. The
authors' toolkit only plots the per-count histogram (kept here as ``active_counts``, i.e. the
finest binning) for correctly classified inputs per predicted class; pass such a subset and
its classes as ``groups`` to reproduce it.
"""

from __future__ import annotations

import os
from collections.abc import Hashable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .. import _plotting
from .._contract import Result
from .._validation import check_int, check_per_input_rows
from ..exceptions import LabelwiseError
from .neuron import _check_threshold

__all__ = [
    "ActivationPattern",
    "GroupPattern",
    "activation_pattern",
    "plot_activation_pattern",
]

DEFAULT_GAMMA = 10


@dataclass(frozen=True, eq=False)
class GroupPattern(Result):
    """The activation-pattern metric of one scenario or class.

    Attributes
    ----------
    label:
        The group (scenario or class) label.
    n_inputs:
        |In|, inputs in the group.
    active_counts:
        (c + 1,) inputs per number of active neurons 0..c (the finest histogram).
    bin_counts:
        (gamma,) |G_1|, ..., |G_gamma| (index 0 is G_1).
    largest_bin:
        0-based index j of the largest group (the lowest one when several tie).
    largest_tied:
        True when another group is as large as ``largest_bin``.
    n_outside:
        Inputs outside bins j - 1, j, j + 1.
    value:
        ``n_outside / n_inputs`` (Eq. 3), in [0, 1]; the headline number (lower is better:
        fewer inputs stray from the group's typical activation count).
    """

    higher_is_better: ClassVar[bool | None] = False

    label: Hashable
    n_inputs: int
    active_counts: NDArray[np.int64]
    bin_counts: NDArray[np.int64]
    largest_bin: int
    largest_tied: bool
    n_outside: int
    value: float


@dataclass(frozen=True, eq=False)
class ActivationPattern(Result):
    """Activation-pattern metric (Sec. II-C) for every group, plus per-input details.

    Attributes
    ----------
    groups:
        One :class:`GroupPattern` per group, labels in sorted order.
    gamma:
        Number of bins.
    threshold:
        A neuron is active when its value is ``> threshold``.
    n_neurons:
        c, the layer width (activations flattened per input).
    bin_edges:
        (gamma + 1,) float ``c * i / gamma``; bin i holds ``edges[i] <= a < edges[i + 1]``
        (the last bin also ``a = c``).
    n_active:
        (N,) active neurons per input, in input order.
    outside:
        (N,) True for inputs outside their group's largest bin and its neighbours (the
        inputs that deserve a look).
    value:
        All groups together: ``outside.sum() / N`` (the headline number, lower is better).
    """

    higher_is_better: ClassVar[bool | None] = False

    groups: tuple[GroupPattern, ...]
    gamma: int
    threshold: float
    n_neurons: int
    bin_edges: NDArray[np.float64]
    n_active: NDArray[np.int64]
    outside: NDArray[np.bool_]
    value: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "groups", tuple(self.groups))
        super().__post_init__()

    @property
    def labels(self) -> tuple[Hashable, ...]:
        return tuple(g.label for g in self.groups)

    @property
    def values(self) -> NDArray[np.float64]:
        """Eq. 3 per group, in the order of ``labels``."""
        return np.array([g.value for g in self.groups], dtype=np.float64)

    def __len__(self) -> int:
        return len(self.groups)

    def __iter__(self) -> Iterator[GroupPattern]:
        return iter(self.groups)

    def __getitem__(self, label: Hashable) -> GroupPattern:
        for g in self.groups:
            if g.label == label:
                return g
        raise KeyError(label)


def _plain(v: Any) -> Any:
    return v.item() if isinstance(v, np.generic) else v


def _check_pattern_args(
    activations: ArrayLike, groups: ArrayLike | None, gamma: Any, threshold: Any
) -> tuple[NDArray[Any], NDArray[Any], int, float]:
    x = check_per_input_rows(activations, "activations", min_rows=1)
    if x.shape[1] < 1:
        shape = np.shape(activations)
        raise LabelwiseError(f"activations must have at least one neuron, got shape {shape}")
    gamma = check_int(gamma, "gamma", minimum=1)
    threshold = _check_threshold(threshold)
    if groups is None:
        labels = np.zeros(x.shape[0], dtype=np.int64)
    else:
        try:
            labels = np.asarray(groups)
        except (TypeError, ValueError) as exc:
            raise LabelwiseError(f"groups must be a 1-D array of labels: {exc}") from None
        if labels.ndim != 1 or labels.shape[0] != x.shape[0]:
            raise LabelwiseError(
                f"groups must be 1-D with one label per input ({x.shape[0]}), got shape "
                f"{labels.shape}"
            )
        if labels.dtype.kind == "f" and not np.all(np.isfinite(labels)):
            raise LabelwiseError("groups must not contain NaN or infinity")
        if labels.dtype.kind == "O":
            raise LabelwiseError("groups must be numbers or strings of one type, got objects")
    return x, labels, gamma, threshold


def activation_pattern(
    activations: ArrayLike,
    groups: ArrayLike | None = None,
    *,
    gamma: int = DEFAULT_GAMMA,
    threshold: float = 0.0,
) -> ActivationPattern:
    """Neuron activation-pattern metric per scenario or class (Cheng et al. 2018, Sec. II-C).

    ``activations`` is (N, c) (or (N, ...), flattened per input) for one layer; ``groups`` gives
    each input's scenario or class (None: all inputs form one scenario). Per group, inputs are
    binned by their number of active neurons (value ``> threshold``) into ``gamma`` equal
    ranges of [0, c]; the metric is the share of the group's inputs outside the largest bin
    and its two neighbours (Eq. 3; 0 = every input activates about as many neurons as the
    majority). See the module docstring for the exact binning and tie rule.
    """
    x, labels, gamma, threshold = _check_pattern_args(activations, groups, gamma, threshold)
    n, c = x.shape
    n_active = np.count_nonzero(x > np.float64(threshold), axis=1).astype(np.int64)
    bins = np.minimum(n_active * gamma // c, gamma - 1)
    uniq, inverse = np.unique(labels, return_inverse=True)
    inverse = inverse.reshape(-1)
    outside = np.zeros(n, dtype=bool)
    out: list[GroupPattern] = []
    for g, label in enumerate(uniq):
        rows = inverse == g
        counts = np.bincount(n_active[rows], minlength=c + 1).astype(np.int64)
        bin_counts = np.bincount(bins[rows], minlength=gamma).astype(np.int64)
        j = int(np.argmax(bin_counts))
        tied = int(np.count_nonzero(bin_counts == bin_counts[j])) > 1
        far = np.abs(bins - j) > 1
        outside |= rows & far
        n_out = int(np.count_nonzero(rows & far))
        size = int(np.count_nonzero(rows))
        out.append(
            GroupPattern(
                label=_plain(label),
                n_inputs=size,
                active_counts=counts,
                bin_counts=bin_counts,
                largest_bin=j,
                largest_tied=tied,
                n_outside=n_out,
                value=n_out / size,
            )
        )
    return ActivationPattern(
        groups=tuple(out),
        gamma=gamma,
        threshold=threshold,
        n_neurons=c,
        bin_edges=np.arange(gamma + 1, dtype=np.float64) * c / gamma,
        n_active=n_active,
        outside=outside,
        value=int(np.count_nonzero(outside)) / n,
    )


def plot_activation_pattern(
    result: ActivationPattern,
    path: str | os.PathLike[str],
    *,
    labels: Sequence[Hashable] | None = None,
    max_groups: int = 16,
) -> Path | None:
    """Histogram PNG of active-neuron counts per group, the gamma bins shaded.

    One panel per group (``labels``, default the first ``max_groups``): bars over the
    gamma bins of [0, c], the largest bin and its neighbours in one colour, the bins counted
    by Eq. 3 in another, the metric in the title. Returns the path, or None when matplotlib is
    not installed.
    """
    if not isinstance(result, ActivationPattern):
        raise LabelwiseError(f"result must be an ActivationPattern, got {type(result).__name__}")
    max_groups = check_int(max_groups, "max_groups", minimum=1)
    chosen = (
        list(result.groups[:max_groups])
        if labels is None
        else [_lookup(result, label) for label in labels]
    )
    if not chosen:
        raise LabelwiseError("labels must name at least one group")
    plt = _plotting.pyplot()
    if plt is None:
        return None
    cols = min(4, len(chosen))
    rows = -(-len(chosen) // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(3.6 * cols, 2.8 * rows), squeeze=False)
    edges = result.bin_edges
    widths = np.diff(edges)
    for ax in axes.ravel()[len(chosen) :]:
        ax.set_visible(False)
    for ax, g in zip(axes.ravel(), chosen, strict=False):
        near = np.abs(np.arange(result.gamma) - g.largest_bin) <= 1
        colours = np.where(near, "tab:blue", "tab:red")
        ax.bar(
            edges[:-1], g.bin_counts, width=widths, align="edge", color=colours, edgecolor="white"
        )
        ax.set_title(f"{g.label}: M = {g.value:.3f} (n = {g.n_inputs})", fontsize=9)
        ax.set_xlim(0, result.n_neurons)
        ax.set_xlabel("active neurons", fontsize=8)
        ax.set_ylabel("inputs", fontsize=8)
        ax.tick_params(labelsize=7)
    fig.suptitle(
        f"Activation patterns (gamma = {result.gamma}, threshold = {result.threshold:g}); "
        "red: outside the largest bin and its neighbours",
        fontsize=9,
    )
    fig.tight_layout()
    return _plotting.save_figure(fig, path)


def _lookup(result: ActivationPattern, label: Hashable) -> GroupPattern:
    try:
        return result[label]
    except KeyError:
        raise LabelwiseError(
            f"labels must be groups of the result {list(result.labels)}, got {label!r}"
        ) from None

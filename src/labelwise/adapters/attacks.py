"""Input transformers and the confidence-loss runner in PyTorch (Cheng et al. 2018, Sec. II-D).

The metric, its result :class:`~labelwise.dependability.robustness.ConfidenceLoss` and its plot
live in :mod:`labelwise.dependability.robustness` (NumPy); this module holds everything that runs
the model: the transformers and :func:`confidence_loss`. torch (and torchattacks, for the
attacks) are imported lazily inside the functions.

Transformers
    :class:`FGSM`, :class:`PGD` and :class:`DeepFool` wrap ``torchattacks`` (install it with
    ``pip install --no-deps torchattacks``; its declared torchvision dependency is not needed).
    torchattacks assumes inputs scaled to [0, 1] and clamps its adversarial inputs there, so
    these transformers require every input value to lie in [0, 1] (a :class:`LabelwiseError`
    otherwise). They attack the true label when labels are given, else the model's prediction.
    :class:`GaussianNoise`, :class:`Brightness`, :class:`Rotation` and :class:`Patch` are written
    in torch here; noise and brightness clamp their output to ``bounds`` (default ``(0, 1)``,
    ``None`` for no clamping). Any callable ``(x: Tensor) -> Tensor`` returning a tensor of the
    same shape is a transformer too; its name is its ``__name__`` (pass a mapping
    ``{name: transformer}`` to choose names).

Examples
--------
>>> from labelwise.adapters.attacks import FGSM, GaussianNoise, confidence_loss
>>> res = confidence_loss(model, x, y, [FGSM(0.05), GaussianNoise(0.1)], rng=0)  # doctest: +SKIP
>>> print(res.table())  # doctest: +SKIP
"""

from __future__ import annotations

import contextlib
import io
import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .._deps import require
from .._progress import progress_bar
from .._validation import check_int, check_rng
from ..dependability.robustness import ConfidenceLoss
from ..exceptions import LabelwiseError

if TYPE_CHECKING:
    import torch

__all__ = [
    "DEFAULT_TRANSFORMERS",
    "FGSM",
    "PGD",
    "Brightness",
    "DeepFool",
    "GaussianNoise",
    "Patch",
    "Rotation",
    "confidence_loss",
]

# one function applying a transformer to a batch: (x, targets, rng) -> T(x)
_Apply = Callable[["torch.Tensor", "torch.Tensor", np.random.Generator], "torch.Tensor"]


def _require_torch() -> None:
    require("torch", "confidence_loss")


def _torchattacks() -> Any:
    return require("torchattacks", "FGSM, PGD and DeepFool")


# --------------------------------------------------------------------------- validation helpers


def _number(value: Any, name: str, *, minimum: float | None = None, strict: bool = False) -> float:
    """A finite float, optionally ``>= minimum`` (``> minimum`` when ``strict``)."""
    if isinstance(value, bool):
        raise LabelwiseError(f"{name} must be a number, got {value!r}")
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise LabelwiseError(f"{name} must be a number, got {value!r}") from None
    if not math.isfinite(v):
        raise LabelwiseError(f"{name} must be finite, got {value!r}")
    if minimum is not None and (v <= minimum if strict else v < minimum):
        raise LabelwiseError(f"{name} must be {'>' if strict else '>='} {minimum:g}, got {v:g}")
    return v


def _bounds(value: Any) -> tuple[float, float] | None:
    if value is None:
        return None
    try:
        low, high = value
    except (TypeError, ValueError):
        raise LabelwiseError(f"bounds must be None or a pair (low, high), got {value!r}") from None
    lo, hi = _number(low, "bounds[0]"), _number(high, "bounds[1]")
    if lo > hi:
        raise LabelwiseError(f"bounds must have low <= high, got {value!r}")
    return (lo, hi)


def _clamp(x: torch.Tensor, bounds: tuple[float, float] | None) -> torch.Tensor:
    return x if bounds is None else x.clamp(bounds[0], bounds[1])


def _image_view(x: torch.Tensor, what: str) -> torch.Tensor:
    """``x`` as (N, C, H, W): 3-D (N, H, W) inputs get a channel axis."""
    if x.dim() == 3:
        return x.unsqueeze(1)
    if x.dim() == 4:
        return x
    # the shape of one input, not of the batch the pile happened to be cut into
    raise LabelwiseError(
        f"{what} needs images: each input of shape (H, W) or (C, H, W), got inputs of shape "
        f"{tuple(x.shape[1:])}"
    )


@contextlib.contextmanager
def _seeded(seed: int, device: torch.device) -> Iterator[None]:
    """Seed torch's global generator for code that uses it (torchattacks), then restore it."""
    import torch

    devices = [device] if device.type == "cuda" else []
    with torch.random.fork_rng(devices=devices):
        torch.manual_seed(seed)
        yield


def _seed(rng: np.random.Generator) -> int:
    return int(rng.integers(0, 2**62))


# --------------------------------------------------------------------------- transformers


class _Transformer:
    """Base of the built-in transformers: a name and a per-run ``_prepare``."""

    needs_grad: ClassVar[bool] = False
    needs_unit_range: ClassVar[bool] = False

    @property
    def name(self) -> str:
        raise NotImplementedError

    def _prepare(self, model: torch.nn.Module, device: torch.device) -> _Apply:
        raise NotImplementedError


class _Attack(_Transformer):
    """A torchattacks attack, built once per run around the model."""

    needs_grad = True
    needs_unit_range = True

    def _make(self, ta: Any, model: torch.nn.Module) -> Any:
        raise NotImplementedError

    def _prepare(self, model: torch.nn.Module, device: torch.device) -> _Apply:
        ta = _torchattacks()
        # torchattacks prints (instead of warning) when the model has no parameters
        with contextlib.redirect_stdout(io.StringIO()):
            attack = self._make(ta, _logit_view(model))
        attack.set_device(device)

        def apply(x: torch.Tensor, targets: torch.Tensor, rng: np.random.Generator) -> Any:
            with _seeded(_seed(rng), device):
                return attack(x, targets)

        return apply


def _logit_view(model: torch.nn.Module) -> torch.nn.Module:
    """``model`` as torchattacks needs it: returning logits. A model ending in a softmax layer
    returns probabilities, which torchattacks took for logits (its loss softmaxed them again,
    and DeepFool stepped by their differences: on a 5-class linear model it lost 0.062 of the
    true class's probability on average where the same model without the softmax lost 0.047,
    with per-input differences up to 0.31). Their logarithm is a set of logits of the same
    probabilities (log p = z - logsumexp(z): every difference between classes is the logits'),
    so the attacks see the model as if it had no final softmax."""
    import torch

    from .torch import outputs_are_probabilities

    class _LogitView(torch.nn.Module):
        def __init__(self, inner: torch.nn.Module) -> None:
            super().__init__()
            self.inner = inner

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            out = self.inner(x)
            if isinstance(out, torch.Tensor) and out.dim() == 2 and outputs_are_probabilities(out):
                return torch.log(out.clamp_min(torch.finfo(out.dtype).tiny))
            return out

    view = _LogitView(model)
    # a new Module is in training mode; torchattacks reads the mode from the model it is given
    # and restores it after each attack, which would put the wrapped model in training mode
    view.training = model.training
    return view


@dataclass(frozen=True)
class FGSM(_Attack):
    """Fast gradient sign method (Goodfellow et al. 2015): ``x + eps * sign(grad)``, in [0, 1].

    ``eps`` is the L-infinity budget in input units (inputs must be scaled to [0, 1]).
    """

    eps: float = 8 / 255

    def __post_init__(self) -> None:
        object.__setattr__(self, "eps", _number(self.eps, "eps", minimum=0))

    @property
    def name(self) -> str:
        return f"FGSM(eps={self.eps:.4g})"

    def _make(self, ta: Any, model: torch.nn.Module) -> Any:
        return ta.FGSM(model, eps=self.eps)


@dataclass(frozen=True)
class PGD(_Attack):
    """Projected gradient descent (Madry et al. 2018): ``steps`` signed steps of ``alpha``,
    projected to the L-infinity ball of radius ``eps`` and to [0, 1]; a seeded random start
    when ``random_start``."""

    eps: float = 8 / 255
    alpha: float = 2 / 255
    steps: int = 10
    random_start: bool = True

    def __post_init__(self) -> None:
        object.__setattr__(self, "eps", _number(self.eps, "eps", minimum=0))
        object.__setattr__(self, "alpha", _number(self.alpha, "alpha", minimum=0, strict=True))
        object.__setattr__(self, "steps", check_int(self.steps, "steps", minimum=1))
        if not isinstance(self.random_start, bool | np.bool_):
            raise LabelwiseError(f"random_start must be True or False, got {self.random_start!r}")
        object.__setattr__(self, "random_start", bool(self.random_start))

    @property
    def name(self) -> str:
        return f"PGD(eps={self.eps:.4g}, alpha={self.alpha:.4g}, steps={self.steps})"

    def _make(self, ta: Any, model: torch.nn.Module) -> Any:
        return ta.PGD(
            model, eps=self.eps, alpha=self.alpha, steps=self.steps, random_start=self.random_start
        )


@dataclass(frozen=True)
class DeepFool(_Attack):
    """DeepFool (Moosavi-Dezfooli et al. 2016): up to ``steps`` linearised steps towards the
    nearest decision boundary, overshooting by ``overshoot``; clamped to [0, 1].

    Slow: torchattacks runs it one input at a time with one backward pass per class.
    """

    steps: int = 50
    overshoot: float = 0.02

    def __post_init__(self) -> None:
        object.__setattr__(self, "steps", check_int(self.steps, "steps", minimum=1))
        object.__setattr__(self, "overshoot", _number(self.overshoot, "overshoot", minimum=0))

    @property
    def name(self) -> str:
        return f"DeepFool(steps={self.steps}, overshoot={self.overshoot:.4g})"

    def _make(self, ta: Any, model: torch.nn.Module) -> Any:
        return ta.DeepFool(model, steps=self.steps, overshoot=self.overshoot)


@dataclass(frozen=True)
class GaussianNoise(_Transformer):
    """Adds independent N(0, sigma^2) noise to every input value (seeded), clamped to
    ``bounds``."""

    sigma: float
    bounds: tuple[float, float] | None = (0.0, 1.0)

    def __post_init__(self) -> None:
        object.__setattr__(self, "sigma", _number(self.sigma, "sigma", minimum=0))
        object.__setattr__(self, "bounds", _bounds(self.bounds))

    @property
    def name(self) -> str:
        return f"GaussianNoise(sigma={self.sigma:.4g})"

    def _prepare(self, model: torch.nn.Module, device: torch.device) -> _Apply:
        import torch

        def apply(x: torch.Tensor, targets: torch.Tensor, rng: np.random.Generator) -> Any:
            gen = torch.Generator().manual_seed(_seed(rng))
            noise = torch.randn(tuple(x.shape), generator=gen, dtype=x.dtype)
            return _clamp(x + self.sigma * noise.to(x.device), self.bounds)

        return apply


@dataclass(frozen=True)
class Brightness(_Transformer):
    """Adds ``delta`` to every input value (negative: darker), clamped to ``bounds``."""

    delta: float
    bounds: tuple[float, float] | None = (0.0, 1.0)

    def __post_init__(self) -> None:
        object.__setattr__(self, "delta", _number(self.delta, "delta"))
        object.__setattr__(self, "bounds", _bounds(self.bounds))

    @property
    def name(self) -> str:
        return f"Brightness(delta={self.delta:+.4g})"

    def _prepare(self, model: torch.nn.Module, device: torch.device) -> _Apply:
        def apply(x: torch.Tensor, targets: torch.Tensor, rng: np.random.Generator) -> Any:
            return _clamp(x + self.delta, self.bounds)

        return apply


@dataclass(frozen=True)
class Rotation(_Transformer):
    """Rotates images by ``degrees`` counter-clockwise about their centre (bilinear, the
    uncovered corners filled with ``fill``).

    Inputs must be (N, H, W) or (N, C, H, W); implemented with ``affine_grid`` and
    ``grid_sample`` (no torchvision). Rotation by 90 degrees of a square image equals
    ``torch.rot90``.
    """

    degrees: float
    fill: float = 0.0

    def __post_init__(self) -> None:
        object.__setattr__(self, "degrees", _number(self.degrees, "degrees"))
        object.__setattr__(self, "fill", _number(self.fill, "fill"))

    @property
    def name(self) -> str:
        return f"Rotation(degrees={self.degrees:.4g})"

    def _prepare(self, model: torch.nn.Module, device: torch.device) -> _Apply:
        import torch
        import torch.nn.functional as F

        def apply(x: torch.Tensor, targets: torch.Tensor, rng: np.random.Generator) -> Any:
            img = _image_view(x, "Rotation")
            n, _, h, w = img.shape
            rad = math.radians(self.degrees)
            c, s = math.cos(rad), math.sin(rad)
            # affine_grid maps output to input coordinates in [-1, 1]; rescaling by the aspect
            # ratio keeps the rotation rigid on non-square images
            theta = torch.tensor(
                [[c, -s * h / w, 0.0], [s * w / h, c, 0.0]], dtype=img.dtype, device=img.device
            )
            grid = F.affine_grid(theta.expand(n, 2, 3), [n, 1, h, w], align_corners=False)
            out = F.grid_sample(
                img - self.fill, grid, mode="bilinear", padding_mode="zeros", align_corners=False
            )
            return (out + self.fill).reshape(x.shape)

        return apply


@dataclass(frozen=True)
class Patch(_Transformer):
    """Occludes a ``size`` x ``size`` square with ``value`` (all channels).

    ``position`` is the (row, column) of the square's top-left corner, or None for a position
    drawn uniformly for each input from the run's seeded generator. Inputs must be (N, H, W) or
    (N, C, H, W).
    """

    size: int
    value: float = 0.0
    position: tuple[int, int] | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "size", check_int(self.size, "size", minimum=1))
        object.__setattr__(self, "value", _number(self.value, "value"))
        if self.position is not None:
            try:
                row, col = self.position
            except (TypeError, ValueError):
                raise LabelwiseError(
                    f"position must be None or a pair (row, column), got {self.position!r}"
                ) from None
            pos = (
                check_int(row, "position[0]", minimum=0),
                check_int(col, "position[1]", minimum=0),
            )
            object.__setattr__(self, "position", pos)

    @property
    def name(self) -> str:
        where = "random" if self.position is None else f"{self.position[0]},{self.position[1]}"
        return f"Patch(size={self.size}, at={where})"

    def _prepare(self, model: torch.nn.Module, device: torch.device) -> _Apply:
        import torch

        def apply(x: torch.Tensor, targets: torch.Tensor, rng: np.random.Generator) -> Any:
            img = _image_view(x, "Patch")
            n, _, h, w = img.shape
            k = self.size
            if k > h or k > w:
                raise LabelwiseError(f"Patch size must be <= the image size {h}x{w}, got {k}")
            if self.position is None:
                rows = rng.integers(0, h - k + 1, size=n)
                cols = rng.integers(0, w - k + 1, size=n)
            else:
                r, c = self.position
                if r + k > h or c + k > w:
                    raise LabelwiseError(
                        f"Patch at position {self.position} with size {k} does not fit in a "
                        f"{h}x{w} image"
                    )
                rows, cols = np.full(n, r), np.full(n, c)
            r0 = torch.as_tensor(rows, device=img.device)[:, None]
            c0 = torch.as_tensor(cols, device=img.device)[:, None]
            hh = torch.arange(h, device=img.device)[None, :]
            ww = torch.arange(w, device=img.device)[None, :]
            in_rows = (hh >= r0) & (hh < r0 + k)  # (n, h)
            in_cols = (ww >= c0) & (ww < c0 + k)  # (n, w)
            mask = (in_rows[:, :, None] & in_cols[:, None, :])[:, None]  # (n, 1, h, w)
            out = torch.where(mask, torch.full_like(img, self.value), img)
            return out.reshape(x.shape)

        return apply


@dataclass(frozen=True)
class _Custom(_Transformer):
    """A user callable ``(x) -> Tensor`` of the same shape."""

    fn: Callable[[Any], Any]
    label: str

    @property
    def name(self) -> str:
        return self.label

    def _prepare(self, model: torch.nn.Module, device: torch.device) -> _Apply:
        import torch

        def apply(x: torch.Tensor, targets: torch.Tensor, rng: np.random.Generator) -> Any:
            out = self.fn(x)
            if not isinstance(out, torch.Tensor):
                raise LabelwiseError(
                    f"transformer {self.label!r} must return a torch.Tensor, "
                    f"got {type(out).__name__}"
                )
            return out

        return apply


DEFAULT_TRANSFORMERS: tuple[_Transformer, ...] = (
    FGSM(eps=8 / 255),
    PGD(eps=8 / 255, alpha=2 / 255, steps=10),
    GaussianNoise(sigma=8 / 255),
    Brightness(delta=8 / 255),
    Brightness(delta=-8 / 255),
)
"""Used when ``transformers`` is None: one perturbation budget, eps = 8/255, for every
transformer (the common CIFAR-style budget); needs torchattacks."""


def _check_transformers(transformers: Any) -> list[tuple[str, _Transformer]]:
    """``(name, transformer)`` pairs, names unique (repeats get ``#2``, ``#3``, ...)."""
    if transformers is None:
        return [(t.name, t) for t in DEFAULT_TRANSFORMERS]
    if isinstance(transformers, _Transformer) or (
        callable(transformers) and not isinstance(transformers, Mapping)
    ):
        transformers = [transformers]
    items: list[tuple[str | None, Any]]
    if isinstance(transformers, Mapping):
        items = [(str(k), v) for k, v in transformers.items()]
    elif isinstance(transformers, Sequence) and not isinstance(transformers, str | bytes):
        items = [(None, t) for t in transformers]
    else:
        raise LabelwiseError(
            "transformers must be a transformer, a sequence of them or a mapping "
            f"{{name: transformer}}, got {type(transformers).__name__}"
        )
    if not items:
        raise LabelwiseError("transformers must hold at least one transformer, got none")
    out: list[tuple[str, _Transformer]] = []
    seen: dict[str, int] = {}
    for given, t in items:
        tr: _Transformer
        if isinstance(t, _Transformer):
            tr = t
        elif callable(t):
            tr = _Custom(t, str(getattr(t, "__name__", type(t).__name__)))
        else:
            raise LabelwiseError(
                "each transformer must be FGSM, PGD, DeepFool, GaussianNoise, Brightness, "
                f"Rotation, Patch or a callable (x) -> Tensor, got {type(t).__name__}"
            )
        name = given if given is not None else tr.name
        count = seen.get(name, 0) + 1
        seen[name] = count
        out.append((name if count == 1 else f"{name}#{count}", tr))
    return out


# --------------------------------------------------------------------------- the metric


def confidence_loss(
    model: Any,
    inputs: Any,
    labels: ArrayLike | None = None,
    transformers: Any = None,
    *,
    batch_size: int = 128,
    device: Any = "cpu",
    top_fraction: float = 0.1,
    rng: Any = None,
    progress: bool = True,
) -> ConfidenceLoss:
    """Adversarial / perturbation confidence loss (Cheng et al. 2018, Sec. II-D).

    For each input x, p0 = probability (softmax of the logits) of its true class (of the predicted
    class when ``labels`` is None) on x, and for each transformer T, ``max(0, p0 - p(T(x)))``; the
    input's loss is the largest of these. Returns the per-input losses, the most harmful
    transformer, the average (the metric), the maximum and the mean of the top ``top_fraction``
    losses.

    Parameters
    ----------
    model:
        A ``torch.nn.Module`` returning logits (N, C), C >= 2, or probabilities (rows
        non-negative and summing to 1, e.g. a final softmax layer: kept as they are, as
        :func:`~labelwise.adapters.torch.capture` does). It runs in eval mode; its
        per-module training flags, ``requires_grad`` flags and device are restored afterwards.
        Parameter gradients are not touched.
    inputs:
        (N, ...) float tensor or array, N >= 1, finite; in [0, 1] when an attack (FGSM, PGD,
        DeepFool) is among the transformers.
    labels:
        (N,) true class labels in [0, C), or None (track the predicted class).
    transformers:
        A transformer, a sequence of them, or a mapping ``{name: transformer}``; each one
        :class:`FGSM`, :class:`PGD`, :class:`DeepFool`, :class:`GaussianNoise`,
        :class:`Brightness`, :class:`Rotation`, :class:`Patch` or a callable
        ``(x: Tensor) -> Tensor`` (same shape). None: :data:`DEFAULT_TRANSFORMERS`.
    batch_size:
        Inputs per forward pass.
    device:
        Where to run (``"cpu"``, ``"cuda"``, a ``torch.device``).
    top_fraction:
        In (0, 1]: ``top_mean`` averages the ``ceil(top_fraction * N)`` largest losses.
    rng:
        Seed or ``numpy.random.Generator`` for the random transformers (noise, random patch
        positions, PGD's random start). Each transformer gets its own stream, and torch's global
        generator is left as it was; the same seed and batch size give the same result.
    progress:
        Show a progress bar on a terminal.

    Raises
    ------
    LabelwiseError
        Bad arguments, shapes or labels; inputs outside [0, 1] with an attack; a transformer
        changing the input's shape; non-finite model outputs.
    MissingDependencyError
        torch (or, for the attacks, torchattacks) is not installed.
    """
    _require_torch()
    import torch

    from .torch import _check_device, _evaluating

    chosen = _check_transformers(transformers)
    if any(isinstance(t, _Attack) for _, t in chosen):
        _torchattacks()
    if not isinstance(model, torch.nn.Module):
        raise LabelwiseError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    batch_size = check_int(batch_size, "batch_size", minimum=1)
    target_device = _check_device(device)
    top_fraction = _number(top_fraction, "top_fraction", minimum=0, strict=True)
    if top_fraction > 1:
        raise LabelwiseError(f"top_fraction must be in (0, 1], got {top_fraction:g}")
    if not isinstance(progress, bool | np.bool_):
        raise LabelwiseError(f"progress must be True or False, got {progress!r}")
    gen = check_rng(rng)
    x_all = _check_inputs(inputs, unit_range=[name for name, t in chosen if t.needs_unit_range])
    n = int(x_all.shape[0])
    y_all = None if labels is None else _check_labels(labels, n)

    streams = [np.random.default_rng(s) for s in gen.integers(0, 2**62, size=len(chosen))]
    k = len(chosen)
    targets = np.empty(n, dtype=np.int64)
    p_before = np.empty(n, dtype=np.float64)
    p_after = np.empty((n, k), dtype=np.float64)

    # gradients are needed w.r.t. the inputs only: the parameters' are switched off
    with _evaluating(model, target_device):
        applies = [t._prepare(model, target_device) for _, t in chosen]
        starts = range(0, n, batch_size)
        bar = progress_bar(n, desc="labelwise confidence loss", unit="input", enabled=progress)
        with bar:
            for start in starts:
                stop = min(start + batch_size, n)
                x = x_all[start:stop].to(target_device)
                with torch.no_grad():
                    probs = _probabilities(model, x, "inputs")
                n_classes = int(probs.shape[1])
                if y_all is None:
                    y = probs.argmax(dim=1)
                else:
                    if int(y_all.max()) >= n_classes:
                        raise LabelwiseError(
                            f"labels must be in [0, {n_classes}) (the model has {n_classes} "
                            f"classes), got {int(y_all.max())}"
                        )
                    y = y_all[start:stop].to(target_device)
                targets[start:stop] = y.cpu().numpy()
                p_before[start:stop] = _gather(probs, y)
                for j, ((name, t), apply) in enumerate(zip(chosen, applies, strict=True)):
                    grad_mode = torch.enable_grad() if t.needs_grad else torch.no_grad()
                    with grad_mode:
                        xt = apply(x, y, streams[j])
                    xt = _check_transformed(xt, x, name)
                    with torch.no_grad():
                        probs_t = _probabilities(model, xt, f"inputs transformed by {name}")
                    p_after[start:stop, j] = _gather(probs_t, y)
                bar.update(stop - start)

    losses = np.clip(p_before[:, None] - p_after, 0.0, 1.0)
    loss = losses.max(axis=1)
    worst = np.where(loss > 0, losses.argmax(axis=1), -1).astype(np.int64)
    return ConfidenceLoss(
        transformers=tuple(name for name, _ in chosen),
        targets=targets,
        p_before=p_before,
        p_after=p_after,
        loss_by_transformer=losses,
        loss=loss,
        worst=worst,
        labelled=labels is not None,
        top_fraction=top_fraction,
    )


def _check_inputs(inputs: Any, *, unit_range: list[str]) -> torch.Tensor:
    """The inputs as a float32 CPU tensor (N, ...), N >= 1, finite."""
    import torch

    if isinstance(inputs, torch.Tensor):
        if inputs.is_complex() or inputs.dtype == torch.bool:
            raise LabelwiseError(f"inputs must hold real numbers, got dtype {inputs.dtype}")
        x = inputs.detach().to(device="cpu", dtype=torch.float32)
    else:
        try:
            arr = np.asarray(inputs)
        except (TypeError, ValueError) as exc:
            raise LabelwiseError(f"inputs must be a numeric array: {exc}") from None
        if arr.dtype.kind not in "iuf":
            raise LabelwiseError(f"inputs must hold real numbers, got dtype {arr.dtype}")
        x = torch.from_numpy(np.array(arr, dtype=np.float32, order="C", copy=True))
    if x.dim() < 2:
        raise LabelwiseError(
            f"inputs must be (N, ...) with at least 2 axes (rows first), got shape {tuple(x.shape)}"
        )
    if x.shape[0] == 0:
        raise LabelwiseError("inputs must have at least one row, got 0")
    finite = torch.isfinite(x.reshape(x.shape[0], -1)).all(dim=1)
    if not bool(finite.all()):
        row = int(torch.nonzero(~finite)[0, 0])
        raise LabelwiseError(f"inputs must be finite, found NaN or infinity at row {row}")
    if unit_range and x.numel():
        lo, hi = float(x.min()), float(x.max())
        if lo < 0 or hi > 1:
            raise LabelwiseError(
                f"inputs must lie in [0, 1] for the torchattacks transformers "
                f"({', '.join(unit_range)}), got values in [{lo:g}, {hi:g}]; scale them to "
                "[0, 1] first (and normalise inside the model)"
            )
    return x


def _check_labels(labels: Any, n: int) -> torch.Tensor:
    import torch

    if isinstance(labels, torch.Tensor):
        labels = labels.detach().cpu().numpy()
    try:
        arr = np.asarray(labels)
    except (TypeError, ValueError) as exc:
        raise LabelwiseError(f"labels must be an array of class labels: {exc}") from None
    if arr.ndim != 1 or arr.shape[0] != n:
        raise LabelwiseError(
            f"labels must be 1-D with one label per input ({n}), got shape {arr.shape}"
        )
    if arr.dtype.kind == "f" and not np.all(np.isfinite(arr) & (arr == np.round(arr))):
        raise LabelwiseError("labels must be integer class labels")
    if arr.dtype.kind not in "iuf":
        raise LabelwiseError(f"labels must be integer class labels, got dtype {arr.dtype}")
    out = arr.astype(np.int64)
    if out.min() < 0:
        raise LabelwiseError(f"labels must be non-negative class labels, got {int(out.min())}")
    return torch.from_numpy(out)


def _probabilities(model: torch.nn.Module, x: torch.Tensor, what: str) -> torch.Tensor:
    import torch

    from .torch import class_probabilities

    out = model(x)
    if not isinstance(out, torch.Tensor):
        raise LabelwiseError(f"the model must return a tensor of logits, got {type(out).__name__}")
    if out.dim() in (1, 2) and out.shape[0] == x.shape[0] and out[0].numel() == 1:
        raise LabelwiseError(
            f"the model returns one output per row (shape {tuple(out.shape)}: a binary "
            "classifier's logit or sigmoid probability); the perturbations measure the drop of "
            "the true class's probability and need one score per class: save a model that "
            "returns two logits, e.g. forward ending in torch.cat([torch.zeros_like(z), z], 1) "
            "for a logit z of shape (rows, 1), or torch.log(torch.cat([1 - p, p], 1)) for a "
            "sigmoid's p"
        )
    if out.dim() != 2 or out.shape[0] != x.shape[0] or out.shape[1] < 2:
        raise LabelwiseError(
            f"the model must return logits of shape ({x.shape[0]}, C) with C >= 2 classes, "
            f"got {tuple(out.shape)}"
        )
    probs = class_probabilities(out.detach(), torch.float64)
    if not bool(torch.isfinite(probs).all()):
        raise LabelwiseError(f"the model produced NaN or infinite outputs on the {what}")
    return probs


def _gather(probs: torch.Tensor, y: torch.Tensor) -> NDArray[np.float64]:
    picked = probs.gather(1, y.to(probs.device).reshape(-1, 1))[:, 0]
    return np.asarray(picked.cpu().numpy(), dtype=np.float64)


def _check_transformed(xt: Any, x: torch.Tensor, name: str) -> torch.Tensor:
    import torch

    if not isinstance(xt, torch.Tensor):
        raise LabelwiseError(f"transformer {name!r} must return a tensor, got {type(xt).__name__}")
    if tuple(xt.shape) != tuple(x.shape):
        raise LabelwiseError(
            f"transformer {name!r} must keep the input shape {tuple(x.shape)}, "
            f"got {tuple(xt.shape)}"
        )
    return xt.detach().to(device=x.device, dtype=x.dtype)

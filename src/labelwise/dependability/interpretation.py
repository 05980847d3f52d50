"""Interpretation precision and occlusion sensitivity covering (Cheng et al. 2018, II-F, II-G).

Both metrics read one occlusion sensitivity heatmap per detected object together with the
object's segmentation ground truth.

Window positions
    A ``window = (wh, ww)`` patch slides over an ``(H, W)`` image with ``stride = (sh, sw)``,
    top-left corners at ``(i * sh, j * sw)`` for ``i < nH = ceil((H - wh) / sh) + 1`` and
    ``j < nW = ceil((W - ww) / sw) + 1`` (captum's ``Occlusion`` grid). The last row and column
    of windows may stick out of the image and are then cut at its edge, so every pixel is
    occluded by at least one window. ``stride`` must not exceed ``window`` (else some pixels are
    never occluded). A heatmap has one value per position, shape ``(nH, nW)``.

Heatmap (the paper's H, II-F step 2)
    ``h[i, j]`` is the score of the object's original class for the image with window
    ``(i, j)`` occluded: a probability for classifiers, or for detectors the maximum probability
    of the correct class over the boxes that overlap the ground-truth box. It is the score
    *under occlusion*, not the drop: a low ``h`` means occluding there matters.

Hot and occluding positions (II-F step 3)
    ``P_hot = {h < rho}``: the positions whose occlusion pushes the score below the probability
    threshold ``rho`` (strictly). ``P_occluding``: the positions whose window overlaps the
    segmentation mask in at least one pixel ("partly occlude the segmentation ground truth").

Metrics
    ``M_interpret = |P_hot & P_occluding| / |P_hot|`` (Eq. 5): the share of the decisive
    positions that lie on the object; high is good (the network looks at the object).
    ``M_OccSen = |P_hot & P_occluding| / |P_occluding|``: the share of the object whose small
    occlusion already breaks the decision; high is bad (little robustness to partial occlusion).
    The paper's Fig. 3b has 9 hot positions, 30 occluding, 5 both: 5/9 and 5/30.

    For several objects the paper suggests an average or min/max; results keep every object's
    values and report the mean. ``M_OccSen`` grows with ``rho`` (the hot set only grows);
    ``M_interpret`` need not be monotone.

Empty sets
    With no hot position (nothing occluded changes the decision enough) ``M_interpret`` is 0/0,
    and with an empty mask ``M_OccSen`` is 0/0. Both are then taken as 0 -- for
    ``M_interpret`` the conservative value (no evidence the decision rests on the object) --
    and a :class:`~labelwise.exceptions.DegenerateDataWarning` says how many objects this hit.
    Results never hold NaN.

The NumPy core (:func:`precision_and_sensitivity`, :func:`interpretation_metrics`,
:func:`sweep`) works on arrays from any framework. :func:`occlusion_heatmaps` computes the
heatmaps of a PyTorch model with captum; it lives in :mod:`labelwise.adapters.occlusion` and is
re-exported here lazily (torch and captum are imported only when it is called).
"""

from __future__ import annotations

import math
import os
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .. import _plotting
from .._contract import JSON_OMIT, Result
from .._validation import check_finite_array, check_int
from ..exceptions import DegenerateDataWarning, LabelwiseError, user_stacklevel

if TYPE_CHECKING:
    import torch

    from ..adapters.occlusion import occlusion_heatmaps

__all__ = [
    "InterpretationResult",
    "InterpretationSweep",
    "OcclusionHeatmaps",
    "interpretation_metrics",
    "occluding_positions",
    "occlusion_grid_shape",
    "occlusion_heatmaps",
    "plot_sweep",
    "precision_and_sensitivity",
    "sweep",
]


def __getattr__(name: str) -> Any:
    if name == "occlusion_heatmaps":
        from ..adapters.occlusion import occlusion_heatmaps

        return occlusion_heatmaps
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), "occlusion_heatmaps"])


_DEFAULT_WINDOW = (4, 4)
_DEFAULT_STRIDE = (2, 2)


# --------------------------------------------------------------------------- results


@dataclass(frozen=True, eq=False)
class InterpretationResult(Result):
    """``M_interpret`` and ``M_OccSen`` for one or more objects (arrays are read-only).

    ``value`` is :attr:`interpret` (higher is better); ``occsen`` (higher is worse) is a
    second figure. ``to_dict`` leaves out the position sets ``hot`` and ``occluding``.

    Attributes
    ----------
    interpret:
        Mean ``M_interpret`` over the objects (for one object, its value).
    occsen:
        Mean ``M_OccSen`` over the objects.
    per_image_interpret, per_image_occsen:
        (N,) the metrics of each object; 0 where the denominator is empty.
    n_hot, n_occluding, n_hot_occluding:
        (N,) ``|P_hot|``, ``|P_occluding|`` and ``|P_hot & P_occluding|`` per object.
    hot, occluding:
        (N, ...) boolean position sets, one row per object.
    rho:
        The threshold (None when the hot set was given directly).
    window, stride:
        The occlusion geometry (None when the position sets were given directly).
    notes:
        Degenerate cases met (empty hot set, empty mask).
    """

    higher_is_better: ClassVar[bool | None] = True

    interpret: float
    occsen: float
    per_image_interpret: NDArray[np.float64]
    per_image_occsen: NDArray[np.float64]
    n_hot: NDArray[np.int64]
    n_occluding: NDArray[np.int64]
    n_hot_occluding: NDArray[np.int64]
    hot: NDArray[np.bool_] = field(metadata=JSON_OMIT)
    occluding: NDArray[np.bool_] = field(metadata=JSON_OMIT)
    rho: float | None = None
    window: tuple[int, int] | None = None
    stride: tuple[int, int] | None = None
    notes: tuple[str, ...] = ()

    @property
    def value(self) -> float:
        """The headline number: ``interpret`` (higher is better)."""
        return self.interpret

    @property
    def n_images(self) -> int:
        return int(self.n_hot.size)


@dataclass(frozen=True, eq=False)
class InterpretationSweep(Result):
    """Both metrics over a range of thresholds ``rho`` (arrays are read-only).

    A curve, one value per threshold: ``value`` is None.

    Attributes
    ----------
    rhos:
        (R,) the thresholds, ascending.
    interpret, occsen:
        (R,) mean ``M_interpret`` and ``M_OccSen`` over the objects at each threshold.
    per_image_interpret, per_image_occsen:
        (R, N) each object's values.
    n_hot:
        (R,) total number of hot positions over all objects (non-decreasing in ``rho``).
    n_occluding:
        (N,) ``|P_occluding|`` per object (does not depend on ``rho``).
    window, stride:
        The occlusion geometry.
    notes:
        Degenerate cases met.
    """

    value_missing_reason: ClassVar[str] = "a sweep is a curve over thresholds, one value per rho"

    rhos: NDArray[np.float64]
    interpret: NDArray[np.float64]
    occsen: NDArray[np.float64]
    per_image_interpret: NDArray[np.float64]
    per_image_occsen: NDArray[np.float64]
    n_hot: NDArray[np.int64]
    n_occluding: NDArray[np.int64]
    window: tuple[int, int]
    stride: tuple[int, int]
    notes: tuple[str, ...] = ()

    @property
    def value(self) -> None:
        """None (see the class docstring)."""
        return None

    def __len__(self) -> int:
        return int(self.rhos.size)


# --------------------------------------------------------------------------- geometry


def _check_pair(value: Any, name: str) -> tuple[int, int]:
    """``(a, b)`` positive integers from an int or a pair."""
    if isinstance(value, int | np.integer) and not isinstance(value, bool):
        value = (value, value)
    if not isinstance(value, Sequence | np.ndarray) or len(value) != 2:
        raise LabelwiseError(f"{name} must be an integer or a pair (rows, cols), got {value!r}")
    a = check_int(value[0], f"{name}[0]", minimum=1)
    b = check_int(value[1], f"{name}[1]", minimum=1)
    return a, b


def _check_geometry(
    image_shape: tuple[int, int], window: Any, stride: Any
) -> tuple[tuple[int, int], tuple[int, int]]:
    win = _check_pair(window, "window")
    st = _check_pair(stride, "stride")
    if win[0] > image_shape[0] or win[1] > image_shape[1]:
        raise LabelwiseError(
            f"window must fit in the image (H, W) = {tuple(image_shape)}, got {win}"
        )
    for k in (0, 1):
        if st[k] > win[k] and win[k] < image_shape[k]:
            raise LabelwiseError(
                f"stride must not exceed window {win} (else some pixels are never occluded), "
                f"got {st}"
            )
    return win, st


def occlusion_grid_shape(
    image_shape: tuple[int, int],
    *,
    window: int | tuple[int, int] = _DEFAULT_WINDOW,
    stride: int | tuple[int, int] = _DEFAULT_STRIDE,
) -> tuple[int, int]:
    """``(nH, nW)``, the number of window positions down and across an ``(H, W)`` image."""
    shape = _check_image_shape(image_shape)
    win, st = _check_geometry(shape, window, stride)
    return _grid(shape, win, st)


def _check_image_shape(image_shape: Any) -> tuple[int, int]:
    if not isinstance(image_shape, Sequence) or len(image_shape) != 2:
        raise LabelwiseError(f"image_shape must be a pair (H, W), got {image_shape!r}")
    return (
        check_int(image_shape[0], "image_shape[0]"),
        check_int(image_shape[1], "image_shape[1]"),
    )


def _grid(shape: tuple[int, int], win: tuple[int, int], st: tuple[int, int]) -> tuple[int, int]:
    return (
        math.ceil((shape[0] - win[0]) / st[0]) + 1,
        math.ceil((shape[1] - win[1]) / st[1]) + 1,
    )


def _window_bounds(
    shape: tuple[int, int], win: tuple[int, int], st: tuple[int, int]
) -> tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.int64], NDArray[np.int64]]:
    """Row starts/stops (nH,) and column starts/stops (nW,), cut at the image edge."""
    n_rows, n_cols = _grid(shape, win, st)
    r0 = np.arange(n_rows, dtype=np.int64) * st[0]
    c0 = np.arange(n_cols, dtype=np.int64) * st[1]
    return r0, np.minimum(r0 + win[0], shape[0]), c0, np.minimum(c0 + win[1], shape[1])


def occluding_positions(
    mask: ArrayLike,
    *,
    window: int | tuple[int, int] = _DEFAULT_WINDOW,
    stride: int | tuple[int, int] = _DEFAULT_STRIDE,
) -> NDArray[np.bool_]:
    """``P_occluding``: the window positions that overlap the mask in at least one pixel.

    ``mask`` is (H, W) or (N, H, W), boolean or 0/1; the result is (nH, nW) or (N, nH, nW).
    """
    m = _check_mask(mask)
    win, st = _check_geometry(m.shape[-2:], window, stride)
    return _occluding(m, win, st)


def _check_mask(mask: ArrayLike) -> NDArray[np.bool_]:
    m = check_finite_array(mask, "mask", ndim=(2, 3))
    if m.dtype != np.bool_:
        if not np.all((m == 0) | (m == 1)):
            raise LabelwiseError("mask must be boolean or hold only 0 and 1")
        m = m.astype(bool)
    if m.size == 0:
        raise LabelwiseError(f"mask must not be empty, got shape {m.shape}")
    return m


def _occluding(
    m: NDArray[np.bool_], win: tuple[int, int], st: tuple[int, int]
) -> NDArray[np.bool_]:
    shape = (int(m.shape[-2]), int(m.shape[-1]))
    r0, r1, c0, c1 = _window_bounds(shape, win, st)
    # summed-area table with a zero first row/column: any rectangle's count in O(1)
    sat = np.zeros((*m.shape[:-2], shape[0] + 1, shape[1] + 1), dtype=np.int64)
    sat[..., 1:, 1:] = m.astype(np.int64).cumsum(axis=-2).cumsum(axis=-1)
    counts = (
        sat[..., r1[:, None], c1[None, :]]
        - sat[..., r0[:, None], c1[None, :]]
        - sat[..., r1[:, None], c0[None, :]]
        + sat[..., r0[:, None], c0[None, :]]
    )
    return np.asarray(counts > 0)


# --------------------------------------------------------------------------- metrics


def precision_and_sensitivity(hot: ArrayLike, occluding: ArrayLike) -> InterpretationResult:
    """``M_interpret`` and ``M_OccSen`` from position sets given directly.

    ``hot`` and ``occluding`` are boolean (or 0/1) arrays of the same shape over the window
    positions: 1-D or 2-D for one object, 3-D ``(N, nH, nW)`` for N objects. Empty
    denominators give 0 and a :class:`DegenerateDataWarning` (see the module docstring).

    Examples
    --------
    >>> hot = np.zeros(100, bool); hot[:9] = True
    >>> occ = np.zeros(100, bool); occ[4:34] = True
    >>> r = precision_and_sensitivity(hot, occ)  # 5 positions in both
    >>> round(r.interpret, 4), round(r.occsen, 4)
    (0.5556, 0.1667)
    """
    h = _check_positions(hot, "hot")
    o = _check_positions(occluding, "occluding")
    if h.shape != o.shape:
        raise LabelwiseError(f"occluding must have the same shape as hot {h.shape}, got {o.shape}")
    return _metrics(h, o)


def _check_positions(x: ArrayLike, name: str) -> NDArray[np.bool_]:
    arr = check_finite_array(x, name, ndim=(1, 2, 3))
    if arr.dtype != np.bool_:
        if not np.all((arr == 0) | (arr == 1)):
            raise LabelwiseError(f"{name} must be boolean or hold only 0 and 1")
        arr = arr.astype(bool)
    if arr.size == 0:
        raise LabelwiseError(f"{name} must not be empty, got shape {arr.shape}")
    return arr if arr.ndim == 3 else arr.reshape((1, *arr.shape))


def _counts(
    hot: NDArray[np.bool_], occluding: NDArray[np.bool_]
) -> tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.int64]]:
    n = hot.shape[0]
    n_hot = hot.reshape(n, -1).sum(axis=1).astype(np.int64)
    n_occ = occluding.reshape(n, -1).sum(axis=1).astype(np.int64)
    n_both = (hot & occluding).reshape(n, -1).sum(axis=1).astype(np.int64)
    return n_hot, n_occ, n_both


def _ratio(num: NDArray[np.int64], den: NDArray[np.int64]) -> NDArray[np.float64]:
    """num / den, 0 where den == 0."""
    out = np.zeros(num.shape, dtype=np.float64)
    np.divide(num, den, out=out, where=den > 0)
    return out


def _degenerate_notes(n_hot: NDArray[np.int64], n_occ: NDArray[np.int64]) -> tuple[str, ...]:
    notes = []
    no_hot = int(np.count_nonzero(n_hot == 0))
    no_occ = int(np.count_nonzero(n_occ == 0))
    if no_hot:
        notes.append(
            f"{no_hot} of {n_hot.size} object(s) have no hot position (no occlusion pushes "
            "the score below rho); their M_interpret is taken as 0"
        )
    if no_occ:
        notes.append(
            f"{no_occ} of {n_occ.size} object(s) have an empty mask (no occluding position); "
            "their M_OccSen is taken as 0"
        )
    return tuple(notes)


def _metrics(
    hot: NDArray[np.bool_],
    occluding: NDArray[np.bool_],
    *,
    rho: float | None = None,
    window: tuple[int, int] | None = None,
    stride: tuple[int, int] | None = None,
) -> InterpretationResult:
    n_hot, n_occ, n_both = _counts(hot, occluding)
    interp = _ratio(n_both, n_hot)
    occsen = _ratio(n_both, n_occ)
    notes = _degenerate_notes(n_hot, n_occ)
    for note in notes:
        warnings.warn(note, DegenerateDataWarning, stacklevel=user_stacklevel())
    return InterpretationResult(
        interpret=float(interp.mean()),
        occsen=float(occsen.mean()),
        per_image_interpret=interp,
        per_image_occsen=occsen,
        n_hot=n_hot,
        n_occluding=n_occ,
        n_hot_occluding=n_both,
        hot=hot,
        occluding=occluding,
        rho=rho,
        window=window,
        stride=stride,
        notes=notes,
    )


def _check_rho(rho: Any, name: str = "rho") -> float:
    try:
        value = float(rho)
    except (TypeError, ValueError):
        raise LabelwiseError(f"{name} must be a finite number, got {rho!r}") from None
    if isinstance(rho, bool) or not math.isfinite(value):
        raise LabelwiseError(f"{name} must be a finite number, got {rho!r}")
    return value


def _check_heatmap_and_mask(
    heatmap: ArrayLike, mask: ArrayLike, window: Any, stride: Any
) -> tuple[NDArray[np.float64], NDArray[np.bool_], tuple[int, int], tuple[int, int]]:
    """Heatmap (N, nH, nW), occluding positions (N, nH, nW), window, stride."""
    h = check_finite_array(heatmap, "heatmap", ndim=(2, 3))
    if h.size == 0:
        raise LabelwiseError(f"heatmap must not be empty, got shape {h.shape}")
    h = np.asarray(h, dtype=np.float64)
    if h.ndim == 2:
        h = h[None]
    m = _check_mask(mask)
    if m.ndim == 3 and m.shape[0] != h.shape[0]:
        raise LabelwiseError(
            f"mask must have one (H, W) mask per heatmap ({h.shape[0]}), or a single (H, W) "
            f"mask for all, got {m.shape[0]} masks"
        )
    image_shape = (int(m.shape[-2]), int(m.shape[-1]))
    win, st = _check_geometry(image_shape, window, stride)
    grid = _grid(image_shape, win, st)
    if h.shape[1:] != grid:
        raise LabelwiseError(
            f"mask shape (H, W) = {image_shape} with window={win}, stride={st} gives a "
            f"{grid} grid of window positions, but heatmap has {h.shape[1:]} positions; "
            "the mask must have the image's shape"
        )
    occ = _occluding(m, win, st)
    if occ.ndim == 2:
        occ = np.broadcast_to(occ, h.shape)
    return h, occ, win, st


def interpretation_metrics(
    heatmap: ArrayLike,
    mask: ArrayLike,
    *,
    rho: float,
    window: int | tuple[int, int] = _DEFAULT_WINDOW,
    stride: int | tuple[int, int] = _DEFAULT_STRIDE,
) -> InterpretationResult:
    """Interpretation precision and occlusion sensitivity covering (II-F Eq. 5, II-G).

    Parameters
    ----------
    heatmap:
        (nH, nW) for one object or (N, nH, nW) for N objects: ``h[i, j]`` is the score
        (probability) of the object's original class with window ``(i, j)`` occluded -- the
        score under occlusion, not its drop (e.g. :attr:`OcclusionHeatmaps.heatmaps`).
    mask:
        The segmentation ground truth, (H, W) boolean (shared by all heatmaps) or (N, H, W).
    rho:
        Probability threshold: the hot positions are those with ``h < rho``.
    window, stride:
        The occlusion geometry that produced ``heatmap`` (see the module docstring for the grid).

    Returns
    -------
    InterpretationResult
        ``M_interpret = |hot & occluding| / |hot|`` and ``M_OccSen = |hot & occluding| /
        |occluding|``, per object and averaged; 0 with a :class:`DegenerateDataWarning` where
        a denominator is empty.
    """
    rho_value = _check_rho(rho)
    h, occ, win, st = _check_heatmap_and_mask(heatmap, mask, window, stride)
    return _metrics(h < rho_value, np.array(occ), rho=rho_value, window=win, stride=st)


def sweep(
    heatmap: ArrayLike,
    mask: ArrayLike,
    rhos: ArrayLike,
    *,
    window: int | tuple[int, int] = _DEFAULT_WINDOW,
    stride: int | tuple[int, int] = _DEFAULT_STRIDE,
) -> InterpretationSweep:
    """Both metrics for every threshold in ``rhos`` (sorted ascending), as in the paper's Fig. 4.

    Same inputs as :func:`interpretation_metrics`. ``M_OccSen`` and the number of hot positions
    are non-decreasing in ``rho``. One :class:`DegenerateDataWarning` sums up the thresholds
    at which some object had no hot position (usually the smallest ones).
    """
    try:
        r = np.atleast_1d(np.asarray(rhos))
    except (TypeError, ValueError) as exc:
        raise LabelwiseError(f"rhos must be a 1-D array of thresholds: {exc}") from None
    if r.size == 0:
        raise LabelwiseError("rhos must hold at least one threshold")
    r = np.sort(np.asarray(check_finite_array(r, "rhos", ndim=1), dtype=np.float64))
    h, occ, win, st = _check_heatmap_and_mask(heatmap, mask, window, stride)
    n = h.shape[0]
    hot = h.reshape(1, n, -1) < r[:, None, None]  # (R, N, P)
    occ_flat = occ.reshape(1, n, -1)
    n_hot = hot.sum(axis=2).astype(np.int64)
    n_both = (hot & occ_flat).sum(axis=2).astype(np.int64)
    n_occ = occ_flat[0].sum(axis=1).astype(np.int64)
    interp = _ratio(n_both, n_hot)
    occsen = _ratio(n_both, np.broadcast_to(n_occ, n_both.shape))
    notes: list[str] = []
    some_empty = (n_hot == 0).any(axis=1)
    if some_empty.any():
        notes.append(
            f"at {int(some_empty.sum())} of {r.size} thresholds (rho <= "
            f"{r[some_empty].max():g}) some object has no hot position; M_interpret is taken "
            "as 0 there"
        )
    if (n_occ == 0).any():
        notes.append(
            f"{int((n_occ == 0).sum())} of {n} object(s) have an empty mask; their M_OccSen is "
            "taken as 0"
        )
    for note in notes:
        warnings.warn(note, DegenerateDataWarning, stacklevel=user_stacklevel())
    return InterpretationSweep(
        rhos=r,
        interpret=interp.mean(axis=1),
        occsen=occsen.mean(axis=1),
        per_image_interpret=interp,
        per_image_occsen=occsen,
        n_hot=n_hot.sum(axis=1),
        n_occluding=n_occ,
        window=win,
        stride=st,
        notes=tuple(notes),
    )


def plot_sweep(result: InterpretationSweep, path: str | os.PathLike[str]) -> Path | None:
    """PNG of ``M_interpret`` and ``M_OccSen`` against ``rho``.

    Returns the path, or None when matplotlib is not installed.
    """
    if not isinstance(result, InterpretationSweep):
        raise LabelwiseError(f"result must be an InterpretationSweep, got {type(result).__name__}")
    plt = _plotting.pyplot()
    if plt is None:
        return None
    fig, ax = plt.subplots(figsize=(5.0, 3.4))
    ax.plot(result.rhos, result.interpret, marker="o", ms=3, label="M_interpret (high: good)")
    ax.plot(result.rhos, result.occsen, marker="s", ms=3, label="M_OccSen (high: bad)")
    ax.set_ylim(-0.02, 1.02)
    ax.set_xlabel("rho (hot: score under occlusion < rho)")
    ax.set_ylabel(f"mean over {result.n_occluding.size} object(s)")
    ax.set_title(f"Occlusion metrics (window {result.window}, stride {result.stride})", fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    return _plotting.save_figure(fig, path)


# --------------------------------------------------------------------------- torch + captum


@dataclass(frozen=True, eq=False)
class OcclusionHeatmaps(Result):
    """Occlusion sensitivity heatmaps of N images (arrays are read-only).

    The input of :func:`interpretation_metrics`, not a measurement: ``value`` is None.
    ``to_dict`` leaves out the per-pixel ``attributions``.

    Attributes
    ----------
    heatmaps:
        (N, nH, nW) float64: ``heatmaps[n, i, j]`` is the target score of image n with the
        window at rows ``[i * sh, i * sh + wh)`` and columns ``[j * sw, j * sw + ww)`` (cut at
        the image edge, all channels) set to ``baseline`` -- the paper's h, input to
        :func:`interpretation_metrics`.
    base_scores:
        (N,) the target score of each unoccluded image.
    attributions:
        Captum's per-pixel occlusion attribution, same shape as the images: for each pixel the
        mean of ``base_score - heatmap`` over the windows covering it.
    targets:
        (N,) the class scored for each image (None when ``score_fn`` was given).
    window, stride:
        The geometry, ``(wh, ww)`` and ``(sh, sw)``.
    baseline:
        The occlusion value.
    image_shape:
        (H, W).
    """

    value_missing_reason: ClassVar[str] = (
        "heatmaps are the input of interpretation_metrics, not a measurement"
    )

    heatmaps: NDArray[np.float64]
    base_scores: NDArray[np.float64]
    attributions: NDArray[np.float32] = field(metadata=JSON_OMIT)
    targets: NDArray[np.int64] | None
    window: tuple[int, int]
    stride: tuple[int, int]
    baseline: float
    image_shape: tuple[int, int]

    @property
    def value(self) -> None:
        """None (see the class docstring)."""
        return None

    def __len__(self) -> int:
        return int(self.heatmaps.shape[0])

    @property
    def drops(self) -> NDArray[np.float64]:
        """(N, nH, nW) ``base_score - heatmap``: how much occluding each window lowers the score."""
        return self.base_scores[:, None, None] - self.heatmaps


def _unpack_calls(
    calls: list[torch.Tensor], rows: int, grid: tuple[int, int]
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Captum runs the unoccluded batch first, then one batch per window position, the row
    index of the position varying fastest (its feature number ``f = i + nH * j``)."""
    n_pos = grid[0] * grid[1]
    if len(calls) != n_pos + 1:
        raise RuntimeError(
            f"captum's Occlusion made {len(calls)} forward calls, expected {n_pos + 1}; this "
            "captum version works differently from what labelwise expects"
        )
    base = calls[0].numpy()
    stacked = np.stack([c.numpy() for c in calls[1:]], axis=1)  # (rows, nH * nW)
    heat = stacked.reshape(rows, grid[1], grid[0]).transpose(0, 2, 1)
    return np.ascontiguousarray(heat), base


def _verify_order(
    attr: NDArray[np.float32],
    heat: NDArray[np.float64],
    base: NDArray[np.float64],
    shape: tuple[int, int],
    win: tuple[int, int],
    st: tuple[int, int],
) -> None:
    """Rebuild captum's per-pixel attribution from the heatmap; they must agree."""
    r0, r1, c0, c1 = _window_bounds(shape, win, st)
    total = np.zeros((heat.shape[0], *shape))
    count = np.zeros(shape)
    drops = base[:, None, None] - heat
    for i in range(r0.size):
        for j in range(c0.size):
            total[:, r0[i] : r1[i], c0[j] : c1[j]] += drops[:, i, j, None, None]
            count[r0[i] : r1[i], c0[j] : c1[j]] += 1
    rebuilt = total / count
    got = attr.reshape((attr.shape[0], -1, *shape))[:, 0]
    scale = max(1.0, float(np.abs(rebuilt).max()))
    if not np.allclose(got, rebuilt, rtol=1e-4, atol=1e-4 * scale):
        raise RuntimeError(
            "captum's occlusion attributions do not match the window positions labelwise "
            "assumed; this captum version orders or sizes its windows differently"
        )

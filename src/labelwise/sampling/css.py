"""Confidence-based stratified sampling (Li et al. 2019, Sec. 3.1 and 4.1)."""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .._chunks import check_rows, concat_rows, map_rows
from .._params import Param, Shares, SharesOr, validate_params
from .._results import Selection
from .._validation import RNGLike, check_probabilities, check_rng
from ..exceptions import DegenerateDataWarning, LabelwiseError, user_stacklevel
from ._common import (
    allocate,
    check_additional,
    check_same_population,
    draw,
    generator_for_extension,
    generator_state,
)

__all__ = ["confidence_strata", "css_select"]

PAPER_STRATA = (0.8, 0.1, 0.1)
PAPER_ALLOCATION = (0.2, 0.4, 0.4)
NAMED_ALLOCATIONS = ("proportional", "neyman")

#: CSS's tuning parameters (defaults: the signature of :func:`css_select`).
CSS_PARAMS = {
    "strata": Param(Shares(), "stratum shares, most to least confident"),
    "allocation": Param(
        SharesOr(NAMED_ALLOCATIONS), "label shares per stratum, or proportional, neyman"
    ),
}


@validate_params(CSS_PARAMS)
def css_select(
    confidences: ArrayLike,
    budget: int,
    *,
    strata: Sequence[float] = PAPER_STRATA,
    allocation: Sequence[float] | str = PAPER_ALLOCATION,
    rng: RNGLike = None,
) -> Selection:
    """Confidence-based stratified sampling (CSS).

    The pile is sorted by the model's confidence c(x) (the top softmax probability) and cut
    into strata by quantile: with the paper's default ``strata=(0.8, 0.1, 0.1)`` the 80%
    most confident rows form stratum 0, the next 10% stratum 1 and the 10% least confident
    stratum 2 (Sec. 4.1). Within each stratum rows are drawn by simple random sampling;
    stratum h gets n_h labels by ``allocation``:

    - a sequence of shares (default the paper's ``(0.2, 0.4, 0.4)``, Sec. 4.1);
    - ``"proportional"``: n_h ∝ N_h (Sec. 3.1);
    - ``"neyman"``: n_h ∝ N_h S_h, the variance-optimal allocation, with the unknown
      within-stratum standard deviation of correctness S_h replaced by the model's own
      forecast sqrt(c̄_h (1 - c̄_h)), c̄_h the stratum's mean confidence. This assumes the
      model is roughly calibrated, which is exactly what fails under shift (Sec. 3.1), so
      it is an option, not the default.

    Shares are turned into integers by largest-remainder rounding; every stratum gets at
    least one label (so ``budget`` must be at least the number of strata) and at most N_h.
    Ties in confidence are broken by row index, so the strata are deterministic.
    The estimate is Eq. 4, :func:`labelwise.stratified_estimate`.

    Parameters
    ----------
    confidences:
        Shape (N,) confidences, or (N, C) class probabilities (the row maximum is used).
    budget:
        Number of rows to label.
    strata:
        Population shares of the strata from the most to the least confident; positive,
        summing to 1.
    allocation:
        Sample shares per stratum (same length as ``strata``), or ``"proportional"`` or
        ``"neyman"``.
    rng:
        Seed or ``numpy.random.Generator``.
    """
    conf = _confidences(confidences)
    shares = _check_shares(strata, "strata")
    labels = confidence_strata(conf, shares)
    sizes = np.bincount(labels, minlength=len(shares)).astype(np.int64)
    weights, alloc_param = _allocation_weights(allocation, conf, labels, sizes)
    n_pop = conf.size
    k = int((sizes > 0).sum())
    if isinstance(budget, bool) or not isinstance(budget, int | np.integer):
        raise LabelwiseError(f"budget must be an integer, got {budget!r}")
    if not k <= budget <= n_pop:
        raise LabelwiseError(
            f"budget must be in [{k}, {n_pop}] for CSS (at least one label per stratum), "
            f"got {budget}"
        )
    gen = check_rng(rng)
    per_stratum = allocate(int(budget), weights, sizes, np.ones_like(sizes))
    idx, st = _draw_strata(gen, labels, per_stratum, taken=None)
    return Selection(
        indices=idx,
        method="css",
        population_size=n_pop,
        params={"strata": list(shares), "allocation": alloc_param},
        strata=st,
        stratum_sizes=tuple(int(s) for s in sizes),
        rng_state=generator_state(gen),
    )


def confidence_strata(
    confidences: ArrayLike, strata: Sequence[float] = PAPER_STRATA
) -> NDArray[np.int64]:
    """Stratum of every row: 0 for the most confident ``strata[0]`` share, and so on.

    Stratum sizes are the largest-remainder rounding of ``N * strata``.
    """
    conf = _confidences(confidences)
    shares = _check_shares(strata, "strata")
    n = conf.size
    sizes = allocate(
        n,
        np.asarray(shares),
        np.full(len(shares), n, dtype=np.int64),
        np.zeros(len(shares), dtype=np.int64),
    )
    order = np.argsort(-conf, kind="stable")
    labels = np.empty(n, dtype=np.int64)
    labels[order] = np.repeat(np.arange(len(shares), dtype=np.int64), sizes)
    return labels


def _css_extend(selection: Selection, data: Any, additional: int, rng: RNGLike) -> Selection:
    if data is None:
        raise LabelwiseError("confidences must be given to extend a CSS selection")
    conf = _confidences(data)
    check_same_population(selection, conf.size)
    shares = _check_shares(selection.params["strata"], "strata")
    labels = confidence_strata(conf, shares)
    sizes = np.bincount(labels, minlength=len(shares)).astype(np.int64)
    if (
        selection.strata is None
        or selection.stratum_sizes is None
        or tuple(sizes) != tuple(selection.stratum_sizes)
        or not np.array_equal(labels[selection.indices], selection.strata)
    ):
        raise LabelwiseError(
            "confidences must be the ones the selection was made from (the strata differ)"
        )
    additional = check_additional(selection, additional)
    weights, _ = _allocation_weights(selection.params["allocation"], conf, labels, sizes)
    have = np.bincount(np.asarray(selection.strata), minlength=len(shares)).astype(np.int64)
    total = allocate(selection.budget + additional, weights, sizes, np.maximum(have, 1))
    gen = generator_for_extension(selection.rng_state, rng)
    idx, st = _draw_strata(gen, labels, total - have, taken=selection.indices)
    return Selection(
        indices=np.concatenate([selection.indices, idx]),
        method="css",
        population_size=selection.population_size,
        params=dict(selection.params),
        strata=np.concatenate([np.asarray(selection.strata), st]),
        stratum_sizes=selection.stratum_sizes,
        rng_state=generator_state(gen),
    )


def _draw_strata(
    gen: np.random.Generator,
    labels: NDArray[np.int64],
    counts: NDArray[np.int64],
    taken: NDArray[np.int64] | None,
) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    free = np.ones(labels.size, dtype=bool)
    if taken is not None:
        free[taken] = False
    parts, strata = [], []
    for h, n_h in enumerate(counts):
        pool = np.flatnonzero((labels == h) & free)
        parts.append(draw(gen, pool, int(n_h)))
        strata.append(np.full(int(n_h), h, dtype=np.int64))
    return np.concatenate(parts), np.concatenate(strata)


def _confidences(confidences: ArrayLike) -> NDArray[np.float64]:
    """(N,) float64 confidences in one chunked pass (any array :mod:`labelwise._chunks` reads)."""
    arr = check_rows(confidences, "confidences", ndim=(1, 2))
    if arr.ndim == 2 and arr.shape[1] < 2:
        raise LabelwiseError(
            f"confidences must be (N,) or (N, C) with C >= 2 classes, got shape {arr.shape}"
        )
    conf = concat_rows(map_rows(_row_confidence, arr, name="confidences"))  # names a NaN's row
    check_probabilities(arr, "confidences")  # logits would make meaningless strata
    return conf


def _row_confidence(block: NDArray[Any], start: int) -> NDArray[np.float64]:
    return np.asarray(block.max(axis=1) if block.ndim == 2 else block, dtype=np.float64)


def _check_shares(shares: Sequence[float], name: str) -> tuple[float, ...]:
    """``shares`` as floats, checked by the same rule as CSS_PARAMS (:class:`Shares`)."""
    Shares().check(shares, name)
    return tuple(float(x) for x in shares)


def _allocation_weights(
    allocation: Sequence[float] | str,
    conf: NDArray[np.float64],
    labels: NDArray[np.int64],
    sizes: NDArray[np.int64],
) -> tuple[NDArray[np.float64], Any]:
    if isinstance(allocation, str):
        if allocation == "proportional":
            return np.asarray(sizes / sizes.sum(), dtype=np.float64), allocation
        if allocation == "neyman":
            mean_conf = np.bincount(labels, weights=conf, minlength=sizes.size) / np.maximum(
                sizes, 1
            )
            p = np.clip(mean_conf, 0.0, 1.0)
            sd = np.sqrt(p * (1 - p))
            if not np.any(sd > 0):
                warnings.warn(
                    "every stratum's mean confidence is 0 or 1, so Neyman allocation has no "
                    "spread to use; falling back to proportional allocation",
                    DegenerateDataWarning,
                    stacklevel=user_stacklevel(),
                )
                return sizes / sizes.sum(), allocation
            return np.asarray(sizes * sd, dtype=np.float64), allocation
        raise LabelwiseError(
            f"allocation must be a sequence of shares or one of {NAMED_ALLOCATIONS}, "
            f"got {allocation!r}"
        )
    shares = _check_shares(allocation, "allocation")
    if len(shares) != sizes.size:
        raise LabelwiseError(
            f"allocation must have one share per stratum ({sizes.size}), got {len(shares)} "
            f"({', '.join(f'{x:g}' for x in shares)}); with other strata give the allocation "
            "too, or 'proportional' / 'neyman'"
        )
    return np.asarray(shares), list(shares)

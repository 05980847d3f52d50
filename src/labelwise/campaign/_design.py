"""Strata from unlabeled signals, prior standard deviations and batch allocation.

Stratified sampling (Cochran 1977, Ch. 5; Li et al. 2019, Sec. 3.1 for the confidence-based
CSS that this generalises). Every partition uses only what is known before labelling: the
model's class probabilities (predicted class, confidence) or, for regression, the activations.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

__all__ = ["allocate", "build_strata", "prior_error"]


def prior_error(conf: NDArray[np.float64] | None, n_rows: int) -> NDArray[np.float64]:
    """The model's own expected error per row, 1 - max_k P_k (0.5 for regression: unknown).

    ``conf`` is the per-row confidence max_k P_k (:func:`._features.probability_summary`).
    """
    if conf is None:
        return np.full(n_rows, 0.5)
    return np.clip(1.0 - conf, 0.0, 1.0)


def _quantile_bins(x: NDArray[np.float64], k: int) -> NDArray[np.int64]:
    """Bin ids 0..k-1 of ``x`` by its quantiles (ties stay in one bin; empty bins dropped)."""
    if k <= 1 or x.size == 0:
        return np.zeros(x.size, dtype=np.int64)
    edges = np.quantile(x, np.linspace(0, 1, k + 1)[1:-1])
    ids = np.searchsorted(np.unique(edges), x, side="right").astype(np.int64)
    return _dense(ids)


def _dense(ids: NDArray[np.integer]) -> NDArray[np.int64]:
    """``np.unique(ids, return_inverse=True)[1]`` for small non-negative integer ids, in
    O(N) with one N-sized output (no sorted copies: a pile of 10^7 rows stays < 1 GB)."""
    present = np.bincount(ids) > 0
    return (np.cumsum(present) - 1).astype(np.int64)[ids]


def build_strata(
    dist: NDArray[np.float64],
    conf_pred: tuple[NDArray[np.float64], NDArray[np.integer]] | None,
    *,
    n_strata: int,
    min_size: int,
    low_fraction: float = 0.25,
    n_low: int = 3,
) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """A stratum id per row (0..H-1) and a group per stratum, from unlabeled signals only.

    ``conf_pred``: every row's confidence (max probability) and predicted class
    (:func:`._features.probability_summary`), None for regression.

    Classification (the model's probabilities known): the ``low_fraction`` least confident rows
    form ``n_low`` confidence-quantile strata (where most errors are); the other rows are split
    by predicted class, since a mislabelled or shifted class makes confident errors concentrated
    in one predicted class. Predicted-class strata with fewer than ``min_size`` rows, and beyond
    the ``n_strata - n_low`` largest, are merged into one "other classes" stratum.

    Regression: quantile bins of the rows' ``dist``, the distance from the activations' centre
    (in units of each neuron's spread, :func:`._features.outlyingness`): outlying
    activations are where a shifted model errs most.

    Groups (for pooling variances, see :func:`._estimators.shrunk_variances`): 0 for the
    low-confidence strata, 1 for the predicted-class strata; one group for regression.

    Collapse rule: strata smaller than ``min_size`` are merged with their neighbour in id order
    until every stratum has at least ``min_size`` rows (or one stratum is left).
    """
    n = dist.shape[0]
    if conf_pred is None:
        ids = _quantile_bins(dist, max(1, min(n_strata, n // max(min_size, 1))))
        ids = _collapse(ids, min_size)
        return ids, np.zeros(int(ids.max()) + 1, dtype=np.int64)
    conf, pred = conf_pred
    order_conf = np.argsort(conf, kind="stable")
    n_lo = round(low_fraction * n) if n_low > 0 else 0
    ids = np.empty(n, dtype=np.int64)
    low = order_conf[:n_lo]
    high = order_conf[n_lo:]
    k_low = max(1, min(n_low, n_lo // max(min_size, 1))) if n_lo else 0
    if n_lo:
        ids[low] = _quantile_bins(conf[low], k_low)
    # predicted-class strata among the confident rows
    all_counts = np.bincount(pred[high])
    classes = np.flatnonzero(all_counts)
    counts = all_counts[classes]
    keep_n = max(1, n_strata - k_low - 1)
    order = np.argsort(-counts, kind="stable")
    kept = classes[order[:keep_n]][counts[order[:keep_n]] >= min_size]
    code = np.full(int(pred.max()) + 1, len(kept), dtype=np.int64)  # "other" = len(kept)
    code[kept] = np.arange(len(kept))
    ids[high] = k_low + code[pred[high]]
    ids = _collapse(_dense(ids), min_size)
    is_high = np.ones(n)
    is_high[low] = 0.0
    share = np.bincount(ids, weights=is_high) / np.bincount(ids)
    return ids, (share > 0.5).astype(np.int64)


def _collapse(ids: NDArray[np.int64], min_size: int) -> NDArray[np.int64]:
    """Merge strata smaller than ``min_size`` into the next (or previous) stratum.

    ``ids`` is changed in place (callers pass a fresh array).
    """
    while True:
        all_counts = np.bincount(ids)
        labels = np.flatnonzero(all_counts)
        counts = all_counts[labels]
        small = np.flatnonzero(counts < min_size)
        if small.size == 0 or labels.size == 1:
            break
        j = int(small[0])
        into = labels[j + 1] if j + 1 < labels.size else labels[j - 1]
        ids[ids == labels[j]] = into
    return _dense(ids)


def allocate(
    total: int,
    weights: NDArray[np.float64],
    sds: NDArray[np.float64],
    have: NDArray[np.int64],
    capacity: NDArray[np.int64],
    *,
    floor: int = 2,
    defensive: float = 0.0,
) -> NDArray[np.int64]:
    """How many new rows each stratum gets so the design moves toward Neyman's allocation.

    Neyman (Cochran 1977, Sec. 5.5): n_h ∝ N_h S_h, here with a floor of ``floor`` labels per
    stratum (so every stratum has a variance estimate) and capped at the stratum's unproposed
    rows. ``total`` = rows in this batch; ``have`` = rows already proposed per stratum. The
    target for the new size n = have.sum() + total is computed, the deficits are filled first
    to the floor, then in proportion to the remaining Neyman deficit (largest remainders).
    ``defensive``: the target mixes proportional and Neyman shares,
    n_h ∝ d N_h / N + (1 - d) N_h S_h / Σ N_k S_k (Hesterberg 1995's defensive mixture: the
    variance is at most 1/d times proportional allocation's when the S_h are badly wrong).
    """
    h = weights.size
    out = np.zeros(h, dtype=np.int64)
    cap = capacity.astype(np.int64).copy()
    left = int(total)
    # 1. the floor
    need = np.minimum(np.maximum(floor - have, 0), cap)
    if need.sum() > left:  # not enough for the floor everywhere: largest strata first
        order = np.argsort(-weights, kind="stable")
        for j in order:
            take = int(min(need[j], left))
            out[j] += take
            left -= take
        return out
    out += need
    cap -= need
    left -= int(need.sum())
    # 2. toward Neyman, repeatedly (caps can bind)
    while left > 0 and cap.sum() > 0:
        n_new = int(have.sum() + out.sum() + left)
        ney = weights * np.maximum(sds, 1e-12)
        share = defensive * weights / weights.sum() + (1 - defensive) * ney / ney.sum()
        share = np.where(cap > 0, share, 0.0)
        if share.sum() <= 0:
            share = np.where(cap > 0, 1.0, 0.0)
        target = n_new * share / share.sum()
        deficit = np.clip(target - (have + out), 0.0, None)
        deficit = np.minimum(deficit, cap)
        if deficit.sum() <= 0:
            deficit = np.where(cap > 0, share, 0.0)
        want = left * deficit / deficit.sum()
        base = np.minimum(np.floor(want).astype(np.int64), cap)
        rem = left - int(base.sum())
        if rem > 0:
            frac = np.where(cap - base > 0, want - np.floor(want), -1.0)
            for j in np.argsort(-frac, kind="stable")[:rem]:
                if cap[j] - base[j] > 0:
                    base[j] += 1
        base = np.minimum(base, cap)
        if base.sum() == 0:
            j = int(np.argmax(cap))
            base[j] = 1
        out += base
        cap -= base
        left -= int(base.sum())
    return out

"""Unlabeled per-row features for the design and the surrogate, in chunked passes (float64).

Every function reads its (N, d) or (N, C) input block by block through
:mod:`labelwise._chunks` (a NumPy array, a memory-mapped ``.npy``, zarr, a directory of chunks
or a ``dask.array``, whose blocks then run as Dask tasks); what stays in memory is per row
(N values per output), never N x d.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from .._chunks import concat_rows, map_rows, reduce_rows, take_rows
from ..exceptions import LabelwiseError

__all__ = ["ProbabilitySummary", "outlyingness", "probability_summary", "surrogate_features"]

# rows of the subsample the principal components are fitted on
_PCA_EXACT_COLS = 512
_PCA_ROWS = 20000


@dataclass(frozen=True)
class ProbabilitySummary:
    """Per-row signals of (N, C) class probabilities: confidence (max) and predicted class."""

    conf: NDArray[np.float64]
    pred: NDArray[np.int32]


def _conf_pred_block(block: NDArray[Any], start: int) -> tuple[NDArray[Any], NDArray[Any]]:
    return block.max(axis=1).astype(np.float64), block.argmax(axis=1).astype(np.int32)


def probability_summary(probabilities: Any) -> ProbabilitySummary:
    """Confidence and predicted class of every row, in one chunked pass."""
    parts = map_rows(_conf_pred_block, probabilities, name="probabilities")
    return ProbabilitySummary(
        conf=concat_rows([c for c, _ in parts]), pred=concat_rows([p for _, p in parts])
    )


def _pow2_exponent(m: NDArray[np.float64]) -> NDArray[np.int64]:
    """k with max |x| <= 2^k per entry of ``m`` (0 where m is 0): dividing by 2^k is exact."""
    return np.frexp(m)[1].astype(np.int64)


def _moments_block(
    scaled: bool, block: NDArray[Any], start: int
) -> tuple[int, NDArray[np.int64], NDArray[Any], NDArray[Any]]:
    """Rows, per-column exponent k and the sums of a / 2^k and of (a / 2^k)². ``scaled``: k
    brings every column's largest |a| to at most 1 (powers of 2: exact), so activations of
    1e155 do not overflow their squares; else k = 0, the plain sums (an overflow is left to
    the caller, which then scales: :func:`outlyingness`)."""
    a = block.astype(np.float64)
    k = np.zeros(a.shape[1], np.int64)
    if scaled and a.shape[0]:
        k = _pow2_exponent(np.abs(a).max(axis=0))
        a = np.ldexp(a, -k)
    with np.errstate(over="ignore", invalid="ignore"):
        return a.shape[0], k, a.sum(axis=0), np.einsum("ij,ij->j", a, a)


def _add_moments(
    x: tuple[int, NDArray[np.int64], NDArray[Any], NDArray[Any]],
    y: tuple[int, NDArray[np.int64], NDArray[Any], NDArray[Any]],
) -> tuple[int, NDArray[np.int64], NDArray[Any], NDArray[Any]]:
    k = np.maximum(x[1], y[1])
    dx, dy = x[1] - k, y[1] - k
    return (
        x[0] + y[0],
        k,
        np.ldexp(x[2], dx) + np.ldexp(y[2], dy),
        np.ldexp(x[3], 2 * dx) + np.ldexp(y[3], 2 * dy),
    )


def _rms_block(
    k: NDArray[np.int64],
    mu: NDArray[np.float64],
    inv_sd: NDArray[np.float64],
    block: NDArray[Any],
    start: int,
) -> NDArray[np.float64]:
    """Per-row RMS of (a / 2^k - mu) * inv_sd, mu and 1 / inv_sd in units of 2^k."""
    a = block.astype(np.float64)  # one float64 copy, standardised in place
    if k.any():
        a = np.ldexp(a, -k)
    a -= mu
    a *= inv_sd
    return np.asarray(np.sqrt(np.einsum("ij,ij->i", a, a) / a.shape[1]))


def outlyingness(activations: Any) -> NDArray[np.float64]:
    """RMS of the standardised activations: sqrt(mean_j ((a_ij - mean_j) / sd_j)²).

    Two chunked passes: the column sums (blocks added in row order), then the per-row RMS.
    The first pass checks every block for NaN/inf (the error names the row). Activations
    whose squares overflow (beyond about 1e154) are summed again in units of 2^k per column
    (exact), so ordinary piles pay for no scaling.
    """
    n, k, total, sq = reduce_rows(
        functools.partial(_moments_block, False), _add_moments, activations, name="activations"
    )
    if not (np.isfinite(total).all() and np.isfinite(sq).all()):
        n, k, total, sq = reduce_rows(
            functools.partial(_moments_block, True), _add_moments, activations, name="activations"
        )
    # in units of 2^k per column (k = 0 unless scaled)
    mu_k = total / n
    sd_k = np.sqrt(np.maximum(sq / n - mu_k**2, 0.0))
    sd = np.ldexp(sd_k, k)
    sd[sd == 0] = 1.0
    # (a - mu) / sd computed as (a / 2^k - mu_k) * (2^k / sd): the same numbers, exactly
    with np.errstate(over="ignore", invalid="ignore"):
        parts = map_rows(
            functools.partial(_rms_block, k, mu_k, np.ldexp(1.0 / sd, k)),
            activations,
            name="activations",
            check_finite=False,
        )
    out = concat_rows(parts)
    bad = np.flatnonzero(~np.isfinite(out))
    if bad.size:
        raise LabelwiseError(
            "activations must be small enough to standardise (|a| well below 1e308), got "
            f"values whose standardised distance overflows at row {int(bad[0])}; divide "
            "them by a constant first"
        )
    return out


def _top_components(activations: Any, k: int, gen: np.random.Generator) -> NDArray[np.float64]:
    """Top ``k`` principal axes, fitted on a random subsample of at most 20,000 rows.

    Up to :data:`_PCA_EXACT_COLS` columns: the eigenvectors of the Gram matrix. Wider
    activations: a randomized range finder with 3 power iterations (Halko, Martinsson & Tropp
    2011, Alg. 4.4), whose cost grows with d, not d^3 (2,000 x 2,048: the full eigh of the
    Gram matrix took 1.3 s alone and 30-37 s on busy cores).
    """
    n = activations.shape[0]
    sub = np.sort(gen.choice(n, size=min(n, _PCA_ROWS), replace=False))
    a = np.asarray(take_rows(activations, sub), dtype=np.float64)
    if a.shape[1] > _PCA_EXACT_COLS and np.isfinite(a).all() and np.abs(a).max() < 1e150:
        a -= a.mean(axis=0)
        return _randomized_axes(a, k)
    with np.errstate(over="ignore", invalid="ignore"):
        a -= a.mean(axis=0)
        gram = a.T @ a
    if not np.isfinite(gram).all():  # activations beyond ~1e154: a power-of-2 scale (exact)
        a = np.asarray(take_rows(activations, sub), dtype=np.float64)
        a = np.ldexp(a, -int(_pow2_exponent(np.abs(a).max())))
        a -= a.mean(axis=0)
        gram = a.T @ a
    _vals, vecs = np.linalg.eigh(gram)
    return vecs[:, ::-1][:, :k]


def _randomized_axes(a: NDArray[np.float64], k: int, power: int = 3) -> NDArray[np.float64]:
    """Top ``k`` right singular vectors of the centred ``a`` by a randomized range finder (a
    fixed test matrix, so the same pile gives the same axes)."""
    width = min(a.shape[1], a.shape[0], k + 10)
    y = a @ np.random.default_rng(0).standard_normal((a.shape[1], width))
    q = np.linalg.qr(y)[0]
    for _ in range(power):
        q = np.linalg.qr(a @ np.linalg.qr(a.T @ q)[0])[0]
    _u, _s, vt = np.linalg.svd(q.T @ a, full_matrices=False)
    return np.asarray(vt[:k].T)


def _margin_entropy_block(block: NDArray[Any], start: int) -> NDArray[np.float64]:
    p = np.asarray(block, dtype=np.float64)
    top2 = -np.partition(-p, 1, axis=1)[:, :2] if p.shape[1] > 1 else np.hstack([p, 0 * p])
    entropy = -(p * np.log(np.clip(p, 1e-12, 1))).sum(axis=1)
    return np.column_stack([1 - top2[:, 0], top2[:, 0] - top2[:, 1], entropy])


def _project_block(comps: NDArray[np.float64], block: NDArray[Any], start: int) -> Any:
    return np.asarray(block, np.float64) @ comps


def surrogate_features(
    activations: Any,
    probabilities: Any | None,
    dist: NDArray[np.float64],
    *,
    n_components: int,
    gen: np.random.Generator,
) -> NDArray[np.float64]:
    """Standardised features: 1 - confidence, margin, entropy (classification), outlyingness
    and its square, and the top principal components of the activations.

    The result is (N, 8) float64 for a classifier (0.64 GB at N = 10^7): the surrogate is fitted
    on the labelled rows and predicted on every row.
    """
    cols: list[NDArray[np.float64]] = []
    if probabilities is not None:
        pc = concat_rows(
            map_rows(_margin_entropy_block, probabilities, name="probabilities", check_finite=False)
        )
        cols += list(pc.T)
    cols += [dist, dist**2]
    if n_components > 0 and activations.shape[1] > 0:
        comps = _top_components(activations, min(n_components, activations.shape[1]), gen)
        proj = concat_rows(
            map_rows(
                functools.partial(_project_block, comps),
                activations,
                name="activations",
                check_finite=False,
            )
        )
        cols += list(proj.T)
    x = np.column_stack(cols)
    big = np.abs(x).max(axis=0) > 1e100
    if big.any():  # projections of huge activations: a power-of-2 scale per column (exact)
        x[:, big] = np.ldexp(x[:, big], -_pow2_exponent(np.abs(x[:, big]).max(axis=0)))
    sd = x.std(axis=0)
    sd[sd == 0] = 1.0
    return np.asarray((x - x.mean(axis=0)) / sd, dtype=np.float64)

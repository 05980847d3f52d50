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

__all__ = ["ProbabilitySummary", "outlyingness", "probability_summary", "surrogate_features"]

# rows of the subsample the principal components are fitted on
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


def _moments_block(block: NDArray[Any], start: int) -> tuple[int, NDArray[Any], NDArray[Any]]:
    a = block.astype(np.float64)
    return a.shape[0], a.sum(axis=0), np.einsum("ij,ij->j", a, a)


def _add_moments(
    x: tuple[int, NDArray[Any], NDArray[Any]], y: tuple[int, NDArray[Any], NDArray[Any]]
) -> tuple[int, NDArray[Any], NDArray[Any]]:
    return x[0] + y[0], x[1] + y[1], x[2] + y[2]


def _rms_block(
    mu: NDArray[np.float64], inv_sd: NDArray[np.float64], block: NDArray[Any], start: int
) -> NDArray[np.float64]:
    a = block.astype(np.float64)  # one float64 copy of the block, standardised in place
    a -= mu
    a *= inv_sd
    return np.asarray(np.sqrt(np.einsum("ij,ij->i", a, a) / a.shape[1]))


def outlyingness(activations: Any) -> NDArray[np.float64]:
    """RMS of the standardised activations: sqrt(mean_j ((a_ij - mean_j) / sd_j)²).

    Two chunked passes: the column sums (blocks added in row order), then the per-row RMS.
    The first pass checks every block for NaN/inf (the error names the row).
    """
    n, total, sq = reduce_rows(_moments_block, _add_moments, activations, name="activations")
    mu = total / n
    sd = np.sqrt(np.maximum(sq / n - mu**2, 0.0))
    sd[sd == 0] = 1.0
    parts = map_rows(
        functools.partial(_rms_block, mu, 1.0 / sd),
        activations,
        name="activations",
        check_finite=False,
    )
    return concat_rows(parts)


def _top_components(activations: Any, k: int, gen: np.random.Generator) -> NDArray[np.float64]:
    """Top ``k`` principal axes, fitted on a random subsample of at most 20,000 rows."""
    n = activations.shape[0]
    sub = np.sort(gen.choice(n, size=min(n, _PCA_ROWS), replace=False))
    a = np.asarray(take_rows(activations, sub), dtype=np.float64)
    a -= a.mean(axis=0)
    _vals, vecs = np.linalg.eigh(a.T @ a)
    return vecs[:, ::-1][:, :k]


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
    sd = x.std(axis=0)
    sd[sd == 0] = 1.0
    return np.asarray((x - x.mean(axis=0)) / sd, dtype=np.float64)

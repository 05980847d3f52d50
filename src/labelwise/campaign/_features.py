"""Unlabeled per-row features for the surrogate (computed once, in chunks, float64)."""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

__all__ = ["outlyingness", "surrogate_features"]

_CHUNK = 65536


def outlyingness(activations: NDArray[np.floating]) -> NDArray[np.float64]:
    """RMS of the standardised activations: sqrt(mean_j ((a_ij - mean_j) / sd_j)²)."""
    n = activations.shape[0]
    mu = np.zeros(activations.shape[1])
    sq = np.zeros(activations.shape[1])
    for s in range(0, n, _CHUNK):
        a = np.asarray(activations[s : s + _CHUNK], dtype=np.float64)
        mu += a.sum(axis=0)
        sq += (a * a).sum(axis=0)
    mu /= n
    sd = np.sqrt(np.maximum(sq / n - mu**2, 0.0))
    sd[sd == 0] = 1.0
    out = np.empty(n)
    for s in range(0, n, _CHUNK):
        a = (np.asarray(activations[s : s + _CHUNK], dtype=np.float64) - mu) / sd
        out[s : s + _CHUNK] = np.sqrt((a * a).mean(axis=1))
    return out


def _top_components(
    activations: NDArray[np.floating], k: int, gen: np.random.Generator
) -> NDArray[np.float64]:
    n = activations.shape[0]
    sub = np.sort(gen.choice(n, size=min(n, 20000), replace=False))
    a = np.asarray(activations[sub], dtype=np.float64)
    a -= a.mean(axis=0)
    _vals, vecs = np.linalg.eigh(a.T @ a)
    return vecs[:, ::-1][:, :k]


def surrogate_features(
    activations: NDArray[np.floating],
    probabilities: NDArray[np.floating] | None,
    dist: NDArray[np.float64],
    *,
    n_components: int,
    gen: np.random.Generator,
) -> NDArray[np.float64]:
    """Standardised features: 1 - confidence, margin, entropy (classification), outlyingness
    and its square, and the top principal components of the activations."""
    cols: list[NDArray[np.float64]] = []
    if probabilities is not None:
        p = np.asarray(probabilities, dtype=np.float64)
        top2 = -np.partition(-p, 1, axis=1)[:, :2] if p.shape[1] > 1 else np.hstack([p, 0 * p])
        cols += [1 - top2[:, 0], top2[:, 0] - top2[:, 1]]
        cols.append(-(p * np.log(np.clip(p, 1e-12, 1))).sum(axis=1))
    cols += [dist, dist**2]
    if n_components > 0 and activations.shape[1] > 0:
        comps = _top_components(activations, min(n_components, activations.shape[1]), gen)
        proj = np.empty((activations.shape[0], comps.shape[1]))
        for s in range(0, activations.shape[0], _CHUNK):
            proj[s : s + _CHUNK] = np.asarray(activations[s : s + _CHUNK], np.float64) @ comps
        cols += list(proj.T)
    x = np.column_stack(cols)
    sd = x.std(axis=0)
    sd[sd == 0] = 1.0
    return (x - x.mean(axis=0)) / sd

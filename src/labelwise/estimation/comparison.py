"""How well an estimated ranking matches the actual one, and how two methods compare.

Meng et al. 2021, Sec. IV-C and IV-D:

- :func:`spearman`: Spearman's rank correlation between estimated and actual accuracies.
- :func:`jaccard_top_k`: Jaccard similarity of the estimated and actual top-k model sets.
- :func:`rank_sum_test`, :func:`cliffs_delta`, :func:`magnitude`, :func:`wtl`: compare a
  method's repeated results (e.g. 50 Spearman values) with a baseline's: Wilcoxon rank-sum
  p-value, Cliff's delta effect size with its magnitude, and the paper's win/tie/loss.
"""

from __future__ import annotations

import warnings
from typing import Any, Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import stats

from .._validation import check_finite_array, check_int, check_probability
from ..exceptions import DegenerateDataWarning, LabelwiseError, user_stacklevel

__all__ = [
    "CLIFF_THRESHOLDS",
    "cliffs_delta",
    "jaccard_top_k",
    "magnitude",
    "rank_sum_test",
    "spearman",
    "wtl",
]

# |delta| below these is negligible / small / medium; at or above the last, large (Sec. IV-D).
CLIFF_THRESHOLDS = (0.147, 0.330, 0.474)


def spearman(estimated: ArrayLike, actual: ArrayLike) -> float:
    """Spearman's rank correlation rho of two per-model values (``scipy.stats.spearmanr``).

    Ties get average ranks. If either input is constant, rho is undefined (SciPy returns
    NaN); this returns 0.0 (no evidence of agreement) with a
    :class:`~labelwise.DegenerateDataWarning`.
    """
    a, b = _paired(estimated, actual, minimum=2)
    if np.ptp(a) == 0 or np.ptp(b) == 0:
        which = "estimated" if np.ptp(a) == 0 else "actual"
        warnings.warn(
            f"{which} values are all equal, so Spearman's rho is undefined; returning 0.0",
            DegenerateDataWarning,
            stacklevel=user_stacklevel(),
        )
        return 0.0
    return float(stats.spearmanr(a, b).statistic)


def jaccard_top_k(estimated: ArrayLike, actual: ArrayLike, k: int) -> float:
    """Jaccard similarity |A ∩ B| / |A ∪ B| of the top-k model sets (Sec. IV-C, J_k).

    ``estimated`` and ``actual`` are per-model values where higher is better (e.g. the
    accuracies on the labelled subset and on the whole pile), not ranks. Each top-k set is
    the k models with the highest values; models tied at the cut are taken by model index
    (lower first), so both sets always have exactly k models.
    """
    a, b = _paired(estimated, actual, minimum=1)
    k = check_int(k, "k", minimum=1, maximum=a.size)
    top_a = set(np.argsort(-a, kind="stable")[:k].tolist())
    top_b = set(np.argsort(-b, kind="stable")[:k].tolist())
    return len(top_a & top_b) / len(top_a | top_b)


def rank_sum_test(a: ArrayLike, b: ArrayLike) -> float:
    """Two-sided p-value of the Wilcoxon rank-sum test (``scipy.stats.ranksums``)."""
    x, y = _sample(a, "a"), _sample(b, "b")
    return float(stats.ranksums(x, y).pvalue)


def cliffs_delta(a: ArrayLike, b: ArrayLike) -> float:
    """Cliff's delta (#{a_i > b_j} - #{a_i < b_j}) / (len(a) len(b)), in [-1, 1].

    Positive when values in ``a`` tend to be larger. Counted by binary search in the sorted
    ``b`` (O((n + m) log m) time, no n x m table).
    """
    x, y = _sample(a, "a"), np.sort(_sample(b, "b"))
    greater = np.searchsorted(y, x, side="left").sum()  # b_j < a_i
    less = (y.size - np.searchsorted(y, x, side="right")).sum()  # b_j > a_i
    return float((int(greater) - int(less)) / (x.size * y.size))


def magnitude(delta: float) -> str:
    """``"negligible"``, ``"small"``, ``"medium"`` or ``"large"`` for a Cliff's delta.

    |delta| < 0.147 negligible, < 0.330 small, < 0.474 medium, else large (Sec. IV-D).
    """
    try:
        d = abs(float(delta))
    except (TypeError, ValueError):
        raise LabelwiseError(f"delta must be a number in [-1, 1], got {delta!r}") from None
    if not d <= 1.0:
        raise LabelwiseError(f"delta must be in [-1, 1], got {delta!r}")
    small, medium, large = CLIFF_THRESHOLDS
    if d < small:
        return "negligible"
    if d < medium:
        return "small"
    if d < large:
        return "medium"
    return "large"


def wtl(
    ours: ArrayLike, baseline: ArrayLike, *, alpha: float = 0.05, negligible: float = 0.147
) -> Literal["W", "T", "L"]:
    """Win, tie or loss of ``ours`` against ``baseline`` (Sec. IV-D), higher values better.

    ``"W"`` if the rank-sum p-value < ``alpha`` and Cliff's delta(ours, baseline) >
    ``negligible``; ``"L"`` if p < ``alpha`` and delta < -``negligible``; else ``"T"``.
    """
    a_ = check_probability(alpha, "alpha")
    neg = _check_negligible(negligible)
    p = rank_sum_test(ours, baseline)
    delta = cliffs_delta(ours, baseline)
    if p < a_ and delta > neg:
        return "W"
    if p < a_ and delta < -neg:
        return "L"
    return "T"


def _check_negligible(value: Any) -> float:
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise LabelwiseError(f"negligible must be a number in [0, 1), got {value!r}") from None
    if not 0.0 <= v < 1.0:
        raise LabelwiseError(f"negligible must be in [0, 1), got {value!r}")
    return v


def _sample(x: ArrayLike, name: str) -> NDArray[np.float64]:
    return np.asarray(check_finite_array(x, name, ndim=1, min_rows=1), dtype=np.float64)


def _paired(
    estimated: ArrayLike, actual: ArrayLike, *, minimum: int
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    a = np.asarray(check_finite_array(estimated, "estimated", ndim=1), dtype=np.float64)
    b = np.asarray(check_finite_array(actual, "actual", ndim=1), dtype=np.float64)
    if a.size != b.size:
        raise LabelwiseError(
            f"actual must have one value per model like estimated ({a.size}), got {b.size}"
        )
    if a.size < minimum:
        raise LabelwiseError(f"estimated must hold at least {minimum} models, got {a.size}")
    return a, b

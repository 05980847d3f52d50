"""Estimators of the pile's mean score from the labelled rows, each with an interval.

The score H is 1/0 correctness for classification (mean = accuracy) or 1 - squared error
for regression (mean = 1-MSE), see :mod:`labelwise.estimation.scores`.
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import stats

from .._results import Estimate, Selection
from .._validation import check_confidence, check_scores, is_binary
from ..exceptions import DegenerateDataWarning, LabelwiseError, user_stacklevel
from ._bootstrap import bootstrap_t_interval, score_lower_miss

# below this many scores the t interval is kept (see srs_estimate)
BOOTSTRAP_MIN_N = 20


def without_replacement_factor(n: int | float, population: int | float) -> float:
    """(N - n) / (N - 1): the variance of n draws without replacement from N rows relative to
    n i.i.d. draws (0 when all N are drawn); Wilson's z² is scaled by it, and n draws are worth
    n / factor i.i.d. ones."""
    return (population - n) / (population - 1) if population > 1 else 0.0


def _bootstrap_gen(n: int) -> np.random.Generator:
    """The bootstrap's generator: a function of n only, so the same scores give the same
    interval."""
    return np.random.default_rng([n, 11])


__all__ = ["ces_estimate", "estimate", "srs_estimate", "stratified_estimate", "wilson_interval"]


def srs_estimate(
    scores: ArrayLike,
    *,
    population_size: int | None = None,
    confidence: float = 0.95,
    metric: str | None = None,
) -> Estimate:
    """Sample mean of a simple random sample without replacement (Li et al. 2019, Eq. 1).

    value = ȳ,  SE = sqrt((1 - n/N) s² / n)  with the finite-population correction
    (N = ``population_size``; omit it for an infinite population).

    Interval: for 0/1 scores the Wilson score interval with z² scaled by the exact
    without-replacement factor (N - n)/(N - 1), so labelling the whole pile gives a zero-width
    interval; otherwise the bootstrap-t interval of the mean (Efron & Tibshirani 1993, Sec.
    12.5; 999 resamples from a generator seeded by n, so the same scores give the same
    interval): regression's 1 - squared error has a long lower tail, and the Student-t
    interval covered 0.90-0.91 at n = 35 on the study's regression piles. Its lower limit is
    the pivot's 0.995 quantile, its upper the 0.025 (:func:`._bootstrap.score_lower_miss`:
    the misses are intervals above the truth, drawn before the rare large errors; worst size
    over n = 35..180 0.929-0.932 -> 0.953-0.957 there, Student-t(5) errors 0.877 -> 0.937,
    24-31 % wider). Below n = 20
    (:data:`BOOTSTRAP_MIN_N`; a handful of values has too few distinct resamples for a
    pivot) and when resamples do not vary, the Student-t interval with n - 1 degrees of
    freedom.

    When all labelled scores are equal (e.g. every labelled input correct) the plug-in SE is 0,
    which is not credible: a :class:`DegenerateDataWarning` is issued and, for 0/1 scores, the
    SE is taken from the Wilson interval (half-width / z), which stays positive.
    """
    y = check_scores(scores)
    _check_metric(metric, y)
    conf = check_confidence(confidence)
    n = y.size
    n_pop = _check_population(population_size, n)
    return _mean_estimate(y, n_pop, conf, method="srs", metric=metric)


def ces_estimate(
    scores: ArrayLike,
    *,
    population_size: int | None = None,
    confidence: float = 0.95,
    metric: str | None = None,
) -> Estimate:
    """CES estimator: the sample mean of the CES-selected rows (Li et al. 2019, Eq. 10).

    CES has no design-based variance formula (its selection is a random search, not a
    probability design with known inclusion probabilities). We report the SRS standard
    error and interval (Wilson for 0/1 scores, bootstrap-t otherwise, with finite-population
    correction), i.e. the interval is honest if CES is at least as precise as SRS and the
    mean is unbiased, which is what the paper reports (relative efficiency < 1). When CES
    does reduce the variance the interval is conservative. The statistical tests in
    ``tests/test_statistics.py`` measure its coverage by simulation (see README).
    """
    y = check_scores(scores)
    _check_metric(metric, y)
    conf = check_confidence(confidence)
    n_pop = _check_population(population_size, y.size)
    return _mean_estimate(y, n_pop, conf, method="ces", metric=metric)


def stratified_estimate(
    scores: ArrayLike,
    strata: ArrayLike,
    stratum_sizes: ArrayLike,
    *,
    confidence: float = 0.95,
    metric: str | None = None,
) -> Estimate:
    """Stratified estimator for CSS (Li et al. 2019, Eq. 4) with its stratified variance.

    value = Σ_h W_h ȳ_h,   W_h = N_h / N,
    Var   = Σ_h W_h² (1 - n_h/N_h) s_h² / n_h.

    For 0/1 scores each stratum's variance of the mean is the Agresti–Coull one,
    p̃_h (1 - p̃_h) / (n_h + z²) with p̃_h = (x_h + z²/2) / (n_h + z²), x_h the stratum's
    correct count (i.e. s_h² = p̃_h (1 - p̃_h) n_h / (n_h + z²)). The plug-in s_h² is 0 whenever
    a stratum's labels are all correct, which is common in the high-confidence stratum, and
    then the interval collapses: in our simulations (tests/test_statistics.py) plug-in
    intervals covered 52-65% at n = 40, add-one-half smoothing 88% at n = 100, this rule
    93.5-100% at n = 40..180 (conservative where the estimator is lumpy). For other scores
    a stratum with a single label has no variance estimate; it borrows the largest sample
    variance of the other strata (or of all labels) and a :class:`DegenerateDataWarning` says so.

    Interval: Student-t with Satterthwaite degrees of freedom, clipped to [0, 1] for 0/1
    scores; for other scores, when every stratum has 2 or more labels and there are at least
    :data:`BOOTSTRAP_MIN_N` labels, the stratified
    bootstrap-t (resampling within strata, Rao & Wu 1988; seeded by n so it repeats), which
    follows the long lower tail of 1 - squared error where the t interval undercovers (its
    lower limit at the pivot's 0.995 quantile, as for :func:`srs_estimate`). Every
    stratum with N_h > 0 must have at least one label.
    """
    y = check_scores(scores)
    _check_metric(metric, y)
    conf = check_confidence(confidence)
    st = np.asarray(strata)
    if st.shape != y.shape or st.dtype.kind not in "iu":
        raise LabelwiseError(f"strata must be integer stratum ids aligned with scores {y.shape}")
    sizes = np.asarray(stratum_sizes, dtype=np.int64)
    if sizes.ndim != 1 or (sizes < 0).any() or sizes.sum() == 0:
        raise LabelwiseError(f"stratum_sizes must be non-negative counts, got {stratum_sizes!r}")
    if st.min() < 0 or st.max() >= sizes.size:
        raise LabelwiseError(f"strata must be in [0, {sizes.size}), got values outside")
    n_h = np.bincount(st, minlength=sizes.size)
    if (n_h > sizes).any():
        raise LabelwiseError("strata must not hold more labels than their stratum has rows")
    missing = np.flatnonzero((sizes > 0) & (n_h == 0))
    if missing.size:
        raise LabelwiseError(
            f"every non-empty stratum needs a label; strata {missing.tolist()} have none"
        )
    binary = is_binary(y)
    z2 = float(stats.norm.ppf(0.5 + conf / 2)) ** 2
    notes: list[str] = []
    w = sizes / sizes.sum()
    used = np.flatnonzero(sizes > 0)
    means = np.bincount(st, weights=y, minlength=sizes.size)[used] / n_h[used]
    value = float(np.sum(w[used] * means))
    var_h = np.empty(used.size)
    for i, h in enumerate(used):
        yh = y[st == h]
        if binary:
            pt = (yh.sum() + z2 / 2) / (yh.size + z2)
            var_h[i] = pt * (1 - pt) * yh.size / (yh.size + z2)
        elif yh.size > 1:
            var_h[i] = yh.var(ddof=1)
        else:
            var_h[i] = np.nan
    fpc = 1 - n_h[used] / sizes[used]
    pool = var_h[~np.isnan(var_h)]  # strata whose variance was estimated
    var_h[fpc == 0] = 0.0  # a fully labelled stratum is known exactly
    lonely = np.isnan(var_h)
    if lonely.any():
        fallback = (
            float(pool.max()) if pool.size else (float(y.var(ddof=1)) if y.size > 1 else math.inf)
        )
        var_h[lonely] = fallback
        msg = (
            f"strata {used[lonely].tolist()} have a single label; their variance is taken "
            f"as the largest available ({fallback:.4g})"
        )
        warnings.warn(msg, DegenerateDataWarning, stacklevel=user_stacklevel())
        notes.append(msg)
    terms = w[used] ** 2 * fpc * var_h / n_h[used]
    var = float(terms.sum())
    se = math.sqrt(var)
    # Satterthwaite: df = (Σ a_h)^2 / Σ a_h^2 / (n_h - 1); strata with one label count as df 1.
    dfs = np.maximum(n_h[used] - 1, 1)
    df = var**2 / float(np.sum(terms**2 / dfs)) if var > 0 else float(max(y.size - 1, 1))
    if math.isinf(se):
        lo, hi = -math.inf, math.inf
    else:
        half = float(stats.t.ppf(0.5 + conf / 2, df)) * se
        lo, hi = value - half, value + half
    interval = "stratified-t"
    if not binary and not lonely.any() and math.isfinite(se) and y.size >= BOOTSTRAP_MIN_N:
        boot = bootstrap_t_interval(
            y, st, sizes, conf, gen=_bootstrap_gen(y.size), lower_miss=score_lower_miss(conf)
        )
        if boot is not None:
            lo, hi = boot
            interval = "stratified bootstrap-t"
    if binary:
        lo, hi = max(lo, 0.0), min(hi, 1.0)
    return Estimate(
        value=value,
        std_error=se,
        ci_low=lo,
        ci_high=hi,
        confidence=conf,
        n_labelled=int(y.size),
        method="css",
        metric=_metric(metric, binary),
        interval=interval,
        population_size=int(sizes.sum()),
        notes=tuple(notes),
    )


def estimate(
    selection: Selection, scores: ArrayLike, *, confidence: float = 0.95, metric: str | None = None
) -> Estimate:
    """The estimator that fits ``selection.method``; ``scores`` align with ``selection.indices``.

    The estimator is the one registered for the method in :mod:`labelwise.registry` (SRS:
    :func:`srs_estimate`; CSS: :func:`stratified_estimate`; CES: :func:`ces_estimate`).
    Ranking methods (SDS, DDG, RDG) have none: use :func:`labelwise.rank_models`.
    """
    from .. import registry

    if not isinstance(selection, Selection):
        raise LabelwiseError(f"selection must be a Selection, got {type(selection).__name__}")
    y = check_scores(scores)
    if y.size != selection.budget:
        raise LabelwiseError(
            f"scores must have one value per selected row ({selection.budget}), got {y.size}"
        )
    if selection.method not in registry.names():
        raise LabelwiseError(f"selection.method {selection.method!r} has no accuracy estimator")
    return registry.get(selection.method).estimate(
        selection, y, confidence=confidence, metric=metric
    )


def wilson_interval(
    successes: float, n: int, confidence: float = 0.95, *, fpc: float = 1.0
) -> tuple[float, float]:
    """Wilson score interval for a proportion, z² multiplied by ``fpc`` (finite population)."""
    if n < 1:
        raise LabelwiseError(f"n must be >= 1, got {n}")
    if not 0 <= successes <= n:
        raise LabelwiseError(f"successes must be in [0, n] = [0, {n}], got {successes}")
    confidence = check_confidence(confidence)  # numpy scalars too, as every estimator
    if not 0 <= fpc <= 1:
        raise LabelwiseError(f"fpc must be in [0, 1], got {fpc}")
    z = float(stats.norm.ppf(0.5 + confidence / 2)) * math.sqrt(fpc)
    lo, hi = wilson_limits(successes / n, n, np.array([z]))
    return float(lo[0]), float(hi[0])


def wilson_limits(
    p: float, n: float, z: NDArray[np.float64]
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Wilson's score interval (Wilson 1927) for a proportion ``p`` of ``n`` (possibly
    effective, non-integer) draws, at every normal quantile in ``z``:
    (p + z²/2n ± z sqrt(p(1-p)/n + z²/4n²)) / (1 + z²/n), within [0, 1].

    It always holds ``p``; rounding put the upper limit at 0.9999999999999999 when every
    draw succeeded (an accuracy of 1.0 just outside its own interval), so the limits are
    clipped to hold ``p``: exactly 1 (0) when every draw succeeded (failed)."""
    z2 = z * z
    denom = 1 + z2 / n
    centre = (p + z2 / (2 * n)) / denom
    half = z * np.sqrt(max(p * (1 - p), 0.0) / n + z2 / (4 * n**2)) / denom
    lo = np.maximum(0.0, np.minimum(centre - half, p))
    hi = np.minimum(1.0, np.maximum(centre + half, p))
    return lo, hi


def exact_estimate(
    value: float,
    n_pop: int,
    confidence: float,
    *,
    method: str,
    metric: str,
    notes: tuple[str, ...] = (),
    effective_sample_size: float | None = None,
) -> Estimate:
    """The estimate when every row of the pile is labelled: the mean, a zero-width interval."""
    return Estimate(
        value=value,
        std_error=0.0,
        ci_low=value,
        ci_high=value,
        confidence=confidence,
        n_labelled=n_pop,
        method=method,
        metric=metric,
        interval="exact (whole pile labelled)",
        population_size=n_pop,
        notes=notes,
        effective_sample_size=effective_sample_size,
    )


def _mean_estimate(
    y: NDArray[np.float64], n_pop: int | None, conf: float, *, method: str, metric: str | None
) -> Estimate:
    n = y.size
    value = float(y.mean())
    binary = is_binary(y)
    fpc = 1.0 if n_pop is None else 1 - n / n_pop
    notes: list[str] = []
    if n_pop is not None and n == n_pop:  # the whole pile is labelled: no sampling error
        return exact_estimate(value, n_pop, conf, method=method, metric=_metric(metric, binary))
    var1 = float(y.var(ddof=1)) if n > 1 else math.nan
    se = math.sqrt(fpc * var1 / n) if n > 1 else math.nan
    if binary:
        exact = 1.0 if n_pop is None else without_replacement_factor(n, n_pop)
        lo, hi = wilson_interval(float(y.sum()), n, conf, fpc=exact)
        interval = "wilson"
        if n == 1 or var1 == 0:
            z = float(stats.norm.ppf(0.5 + conf / 2))
            se = (hi - lo) / (2 * z)
            if fpc > 0:
                notes.append(
                    _warn(
                        f"all {n} labelled scores are {value:g}; the plug-in standard error would "
                        "be 0, so the Wilson interval's half-width / z is reported instead"
                    )
                )
    else:
        interval = "t"
        if n == 1:
            se, lo, hi = math.inf, -math.inf, math.inf
            notes.append(_warn("one label gives no variance estimate; the interval is unbounded"))
        else:
            half = float(stats.t.ppf(0.5 + conf / 2, n - 1)) * se
            lo, hi = value - half, value + half
            boot = (
                None
                if n < BOOTSTRAP_MIN_N
                else bootstrap_t_interval(
                    y,
                    np.zeros(n, dtype=np.int64),
                    np.array([n if n_pop is None else n_pop]),
                    conf,
                    gen=_bootstrap_gen(n),
                    with_replacement=n_pop is None,
                    lower_miss=score_lower_miss(conf),
                )
            )
            if boot is not None:
                lo, hi = boot
                interval = "bootstrap-t"
            # all equal (not var1 == 0: twenty scores of 0.1 have a variance of 1e-33)
            if np.ptp(y) == 0 and fpc > 0:
                notes.append(
                    _warn(
                        f"all {n} labelled scores are equal; the interval has zero width and "
                        "understates the uncertainty"
                    )
                )
    return Estimate(
        value=value,
        std_error=float(se),
        ci_low=float(lo),
        ci_high=float(hi),
        confidence=conf,
        n_labelled=n,
        method=method,
        metric=_metric(metric, binary),
        interval=interval,
        population_size=n_pop,
        notes=tuple(notes),
    )


def _warn(msg: str) -> str:
    warnings.warn(msg, DegenerateDataWarning, stacklevel=user_stacklevel())
    return msg


def _check_metric(metric: Any, y: NDArray[np.float64]) -> None:
    """``metric`` names the scores (None: named from them); ``"accuracy"`` needs scores in
    [0, 1] (1 correct, 0 wrong), else the estimate and its interval leave [0, 1]."""
    if metric is not None and not isinstance(metric, str):
        raise LabelwiseError(f"metric must be a string or None, got {metric!r}")
    if metric == "accuracy" and not bool(np.all((y >= 0) & (y <= 1))):
        raise LabelwiseError(
            f"metric 'accuracy' needs scores in [0, 1] (1 = correct, 0 = wrong), got values "
            f"in [{y.min():g}, {y.max():g}]; score the labels with labelwise.correctness, or "
            "leave metric out (a mean score)"
        )
    if metric is None and looks_like_class_labels(y):
        # class labels passed where 1/0 correctness was meant (the estimate was a "mean
        # score" of 4.5 without a word)
        warnings.warn(
            f"the scores are whole numbers up to {y.max():g}, not 1/0 correctness: the estimate "
            f"is their mean ('mean score'); if they are class labels, {SCORE_LABELS}, or pass "
            "metric= to name what they are",
            UserWarning,
            stacklevel=user_stacklevel(),
        )


#: How class labels given where 1/0 correctness scores belong become scores.
SCORE_LABELS = "score them first with labelwise.correctness(predicted, labels)"


def looks_like_class_labels(y: NDArray[np.float64]) -> bool:
    """Whole numbers above 1: class labels passed where 1/0 correctness was meant."""
    return bool(y.size) and float(y.max()) > 1 and bool(np.all(y == np.round(y)))


def _metric(metric: str | None, binary: bool) -> str:
    if metric is not None:
        return str(metric)
    return "accuracy" if binary else "mean score"


def _check_population(population_size: Any, n: int) -> int | None:
    if population_size is None:
        return None
    if isinstance(population_size, bool) or not isinstance(population_size, int | np.integer):
        raise LabelwiseError(f"population_size must be an integer, got {population_size!r}")
    if population_size < n:
        raise LabelwiseError(
            f"population_size must be at least the number of scores ({n}), got {population_size}"
        )
    return int(population_size)

"""Surprise adequacy: LSA, DSA and MDSA, plus surprise coverage.

Surprise adequacy (Kim, Feldt and Yoo, "Guiding Deep Learning System Testing using Surprise
Adequacy", ICSE 2019; MDSA: Kim et al. 2020) measures how unusual a test input's activation
trace (AT) is relative to the training ATs. The definitions here reproduce those of
``dnn-tip`` 0.1.1 (Weiss and Tonella, "Simple techniques work surprisingly well...",
ISSTA 2022; "A Review and Refinement of Surprise Adequacy", DeepTest 2021) with SciPy >= 1.10,
where dnn-tip fits a plain :class:`scipy.stats.gaussian_kde`:

* **LSA** (likelihood-based): ``-log f_c(x)``, with ``f_c`` a Gaussian KDE on the training ATs
  of class ``c`` (Scott's bandwidth factor ``n_c ** (-1 / (d + 4))`` times the unbiased sample
  covariance, ``d`` the number of kept neurons). Per class, only the ``max_features`` neurons
  (default 300) with the highest training variance are kept, or, alternatively, the neurons with
  variance ``>= var_threshold``.
* **DSA** (distance-based): with ``x_a`` the nearest training AT of the same class as ``x``
  (Euclidean), ``DSA(x) = ||x - x_a|| / min_{x_b in other classes} ||x_a - x_b||``.
* **MDSA** (Mahalanobis): the *squared* Mahalanobis distance
  ``(x - mu_c)^T S_c^+ (x - mu_c)``, with ``mu_c`` the class mean, ``S_c`` the biased (divide by
  ``n_c``) class covariance and ``+`` the pseudo-inverse (scikit-learn's
  ``EmpiricalCovariance().mahalanobis``, which dnn-tip calls).

"Class" is whatever the caller passes: true labels or the model's predictions (dnn-tip uses
predictions). Passing no classes to :class:`LSA` or :class:`MDSA` fits one model on all
training ATs (dnn-tip's plain ``LSA`` / ``MDSA``); passing classes is dnn-tip's
``MultiModalSA.build_by_class``. Test inputs are scored in chunks of rows, so memory is bounded
by ``chunk_size`` times the number of training rows, whatever the test set's size.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from typing import Any, ClassVar, TypeVar

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import linalg
from scipy.spatial.distance import cdist
from scipy.special import logsumexp

from .._contract import Result
from .._validation import check_int, check_magnitude, check_numeric_array, raise_if_nonfinite
from ..exceptions import DegenerateDataWarning, LabelwiseError, user_stacklevel

__all__ = ["DSA", "LSA", "MDSA", "SurpriseCoverage", "surprise_coverage"]

# Auto chunk size: at most this many float64 cells (64 MiB) in one test-by-train block.
_BLOCK_CELLS = 1 << 23

_SA = TypeVar("_SA", bound="_SurpriseAdequacy")


# ----------------------------------------------------------------------------- validation


def _check_acts(acts: ArrayLike, name: str, *, min_rows: int = 1) -> NDArray[np.float64]:
    """Activations as a finite (N, n_neurons) float64 array; higher ranks are flattened."""
    try:
        arr = np.asarray(acts)
    except (TypeError, ValueError) as exc:
        raise LabelwiseError(f"{name} must be a numeric array: {exc}") from None
    if arr.ndim < 2:
        raise LabelwiseError(f"{name} must be (N, n_neurons) or higher rank, got shape {arr.shape}")
    flat = arr.reshape(arr.shape[0], int(np.prod(arr.shape[1:])))
    arr = check_numeric_array(flat, name, ndim=2, min_rows=min_rows)
    if arr.shape[1] == 0:
        raise LabelwiseError(f"{name} must have at least one neuron, got shape {arr.shape}")
    arr = np.asarray(arr, dtype=np.float64)
    if arr.size:
        raise_if_nonfinite(arr, name)
        check_magnitude(arr, name)
    return arr


def _check_classes(classes: ArrayLike, n_rows: int, name: str, acts_name: str) -> NDArray[np.int64]:
    """Integer class labels, one per row of the activations."""
    arr = check_numeric_array(classes, name, ndim=1, min_rows=0)
    if arr.shape[0] != n_rows:
        raise LabelwiseError(
            f"{name} must have one label per row of {acts_name} ({n_rows}), got {arr.shape[0]}"
        )
    if arr.dtype.kind == "f":
        raise_if_nonfinite(arr, name)
        if not np.all(arr == np.round(arr)):
            raise LabelwiseError(f"{name} must be integer class labels, got non-integer values")
    return arr.astype(np.int64)


def _check_chunk_size(chunk_size: Any) -> int | None:
    return None if chunk_size is None else check_int(chunk_size, "chunk_size", minimum=1)


def _rows_per_chunk(chunk_size: int | None, n_cols: int) -> int:
    if chunk_size is not None:
        return chunk_size
    return max(1, _BLOCK_CELLS // max(1, n_cols))


# ----------------------------------------------------------------------------- shared base


class _SurpriseAdequacy:
    """Fit/score plumbing shared by LSA, DSA and MDSA."""

    _needs_classes = False
    _name = "surprise adequacy"

    classes_: NDArray[np.int64] | None
    n_features_in_: int

    def __init__(self, *, chunk_size: int | None = None) -> None:
        self.chunk_size = _check_chunk_size(chunk_size)
        self.classes_ = None
        self._fitted = False

    def fit(self: _SA, train_acts: ArrayLike, train_classes: ArrayLike | None = None) -> _SA:
        """Fit on training activations (N, n_neurons) and, per class, their classes (N,)."""
        acts = _check_acts(train_acts, "train_acts")
        if train_classes is None:
            if self._needs_classes:
                raise LabelwiseError(f"{self._name} needs train_classes (labels or predictions)")
            classes = None
        else:
            classes = _check_classes(train_classes, acts.shape[0], "train_classes", "train_acts")
        self.n_features_in_ = int(acts.shape[1])
        self.classes_ = None if classes is None else np.unique(classes)
        self._fit(acts, classes)
        self._fitted = True
        return self

    def score(
        self, test_acts: ArrayLike, test_classes: ArrayLike | None = None
    ) -> NDArray[np.float64]:
        """Per-input surprise (N_test,) float64 of the test activations."""
        if not self._fitted:
            raise LabelwiseError(f"{self._name} must be fitted before score (call fit first)")
        acts = _check_acts(test_acts, "test_acts", min_rows=0)
        if acts.shape[1] != self.n_features_in_:
            raise LabelwiseError(
                f"test_acts must have {self.n_features_in_} neurons like train_acts, "
                f"got {acts.shape[1]}"
            )
        if self.classes_ is None:
            if test_classes is not None:
                raise LabelwiseError(
                    "test_classes must be None: this model was fitted without train_classes"
                )
            return self._score_all(acts)
        if test_classes is None:
            raise LabelwiseError(
                "test_classes must be given: this model was fitted per class (train_classes)"
            )
        classes = _check_classes(test_classes, acts.shape[0], "test_classes", "test_acts")
        unknown = np.setdiff1d(classes, self.classes_)
        if unknown.size:
            raise LabelwiseError(
                f"test_classes must be classes seen in train_classes {self.classes_.tolist()}, "
                f"got unseen class(es) {unknown.tolist()}"
            )
        out = np.empty(acts.shape[0], dtype=np.float64)
        for c in np.unique(classes):
            rows = np.flatnonzero(classes == c)
            out[rows] = self._score_class(int(c), acts[rows])
        return out

    # subclasses implement these
    def _fit(self, acts: NDArray[np.float64], classes: NDArray[np.int64] | None) -> None:
        raise NotImplementedError

    def _score_all(self, acts: NDArray[np.float64]) -> NDArray[np.float64]:
        raise NotImplementedError

    def _score_class(self, c: int, acts: NDArray[np.float64]) -> NDArray[np.float64]:
        raise NotImplementedError


def _per_class(
    acts: NDArray[np.float64], classes: NDArray[np.int64] | None
) -> list[tuple[int | None, NDArray[np.float64]]]:
    if classes is None:
        return [(None, acts)]
    return [(int(c), acts[classes == c]) for c in np.unique(classes)]


# ----------------------------------------------------------------------------- LSA


@dataclass(frozen=True, eq=False)
class _KDE:
    """A fitted Gaussian KDE in whitened coordinates (kernel covariance = identity)."""

    kept: NDArray[np.intp]  # kept neuron indices
    chol: NDArray[np.float64] | None  # lower Cholesky factor of the kernel covariance
    white_train: NDArray[np.float64]  # training ATs, kept neurons, whitened
    log_norm: float  # -log(n) - log det(2 pi * kernel covariance) / 2


class LSA(_SurpriseAdequacy):
    """Likelihood-based surprise adequacy (Kim et al. 2019), as in dnn-tip.

    ``LSA(x) = -log f(x)`` with ``f`` a Gaussian KDE fitted to the training ATs of ``x``'s class
    (or of all training rows when fitted without classes). The KDE is SciPy's
    ``gaussian_kde`` with its default bandwidth: Scott's factor ``n ** (-1 / (d + 4))`` scaling
    the unbiased sample covariance of the ``d`` kept neurons. Neurons are filtered per class on
    the training variance (``numpy.var``, divide by n):

    * ``max_features`` (default 300, dnn-tip's default): keep the ``max_features`` neurons with
      the largest variance (an int; a float in (0, 1) is a share of the neurons, at least one);
    * ``var_threshold``: keep neurons with variance ``>= var_threshold`` (Kim et al. used
      1e-5); set ``max_features=None`` to use it, as in dnn-tip;
    * both None: keep every neuron.

    The log density is computed with log-sum-exp, so inputs far from every training AT get a
    large finite surprise where ``-log(gaussian_kde(x))`` would underflow to infinity.

    Parameters
    ----------
    max_features, var_threshold:
        Neuron filter, see above; at most one may be set.
    chunk_size:
        Test rows scored at once (memory ~ ``chunk_size * n_train`` floats); None sizes chunks
        to about 64 MiB.
    """

    _name = "LSA"

    def __init__(
        self,
        *,
        max_features: int | float | None = 300,
        var_threshold: float | None = None,
        chunk_size: int | None = None,
    ) -> None:
        super().__init__(chunk_size=chunk_size)
        if max_features is not None and var_threshold is not None:
            raise LabelwiseError(
                "max_features and var_threshold cannot both be set (as in dnn-tip): pass "
                "max_features=None to filter neurons by var_threshold"
            )
        if max_features is not None:
            if isinstance(max_features, float) and not isinstance(max_features, bool):
                if not 0 < max_features < 1:
                    raise LabelwiseError(
                        f"max_features must be an int >= 1 or a share in (0, 1), got {max_features}"
                    )
            else:
                max_features = check_int(max_features, "max_features", minimum=1)
        if var_threshold is not None:
            try:
                var_threshold = float(var_threshold)
            except (TypeError, ValueError):
                raise LabelwiseError(
                    f"var_threshold must be a number >= 0, got {var_threshold!r}"
                ) from None
            if not var_threshold >= 0:
                raise LabelwiseError(f"var_threshold must be a number >= 0, got {var_threshold}")
        self.max_features = max_features
        self.var_threshold = var_threshold
        self._kdes: dict[int | None, _KDE] = {}

    def kept_neurons(self, c: int | None = None) -> NDArray[np.intp]:
        """Sorted indices of the neurons the KDE of class ``c`` uses (None: fitted w/o classes)."""
        if not self._fitted:
            raise LabelwiseError("LSA must be fitted before kept_neurons (call fit first)")
        if c not in self._kdes:
            raise LabelwiseError(f"c must be a fitted class {sorted(self._kdes, key=str)}, got {c}")
        return self._kdes[c].kept.copy()

    def _select_neurons(self, acts: NDArray[np.float64]) -> NDArray[np.intp]:
        n_neurons = acts.shape[1]
        var = np.var(acts, axis=0)
        if self.var_threshold is not None and self.var_threshold > 0:
            return np.flatnonzero(var >= self.var_threshold)
        if self.max_features is None:
            return np.arange(n_neurons)
        if isinstance(self.max_features, float):
            n_keep = max(1, int(self.max_features * n_neurons))
        else:
            n_keep = min(self.max_features, n_neurons)
        # dnn-tip drops np.argsort(var)[:-n_keep] (same sort, so ties are broken alike).
        dropped = np.argsort(var)[: n_neurons - n_keep]
        return np.setdiff1d(np.arange(n_neurons), dropped)

    def _fit(self, acts: NDArray[np.float64], classes: NDArray[np.int64] | None) -> None:
        self._kdes = {}
        for c, rows in _per_class(acts, classes):
            self._kdes[c] = self._fit_kde(c, rows)

    def _fit_kde(self, c: int | None, rows: NDArray[np.float64]) -> _KDE:
        where = "the training rows" if c is None else f"class {c}"
        n = rows.shape[0]
        if n < 2:
            raise LabelwiseError(
                f"train_acts must have at least 2 rows for {where} (a KDE needs a covariance), "
                f"got {n}"
            )
        kept = self._select_neurons(rows)
        if kept.size == 0:
            warnings.warn(
                f"LSA: var_threshold={self.var_threshold} removes every neuron of {where}; its "
                "surprise is reported as 0 (as dnn-tip intends). Lower var_threshold.",
                DegenerateDataWarning,
                stacklevel=user_stacklevel(),
            )
            return _KDE(kept, None, np.empty((n, 0)), 0.0)
        data = rows[:, kept]
        d = kept.size
        factor = n ** (-1.0 / (d + 4))  # Scott's rule with n_eff = n (equal weights)
        cov = np.atleast_2d(np.cov(data, rowvar=False, ddof=1))
        try:
            chol = linalg.cholesky(cov, lower=True) * factor
        except linalg.LinAlgError:
            raise LabelwiseError(
                f"LSA: the covariance of the {d} kept neurons of {where} ({n} rows) is singular, "
                "so no KDE exists (SciPy's gaussian_kde fails alike). Keep fewer neurons "
                "(max_features below the class size) or drop collinear ones."
            ) from None
        log_det = 2.0 * np.log(np.diag(chol) * np.sqrt(2 * np.pi)).sum()
        white = linalg.solve_triangular(chol, data.T, lower=True).T
        return _KDE(kept, chol, np.ascontiguousarray(white), float(-np.log(n) - 0.5 * log_det))

    def _score_kde(self, kde: _KDE, acts: NDArray[np.float64]) -> NDArray[np.float64]:
        out = np.zeros(acts.shape[0], dtype=np.float64)
        if kde.chol is None:
            return out
        step = _rows_per_chunk(self.chunk_size, kde.white_train.shape[0])
        for start in range(0, acts.shape[0], step):
            block = acts[start : start + step, kde.kept]
            white = linalg.solve_triangular(kde.chol, block.T, lower=True).T
            sq = cdist(white, kde.white_train, "sqeuclidean")
            out[start : start + step] = -(logsumexp(-0.5 * sq, axis=1) + kde.log_norm)
        return out

    def _score_all(self, acts: NDArray[np.float64]) -> NDArray[np.float64]:
        return self._score_kde(self._kdes[None], acts)

    def _score_class(self, c: int, acts: NDArray[np.float64]) -> NDArray[np.float64]:
        return self._score_kde(self._kdes[c], acts)


# ----------------------------------------------------------------------------- DSA


class DSA(_SurpriseAdequacy):
    """Distance-based surprise adequacy (Kim et al. 2019), as in dnn-tip.

    For a test AT ``x`` of class ``c``: ``x_a`` is the nearest (Euclidean) training AT of class
    ``c`` (the first one on ties), ``dist_a = ||x - x_a||`` and
    ``dist_b = min ||x_a - x_b||`` over training ATs ``x_b`` of every other class;
    ``DSA(x) = dist_a / dist_b``. This is the refined variant of Weiss et al. (2021) that
    dnn-tip implements (``x_b`` is measured from ``x_a``, not from ``x``).

    ``dist_b`` depends only on ``x_a``, so it is computed once per training AT that is some
    test input's nearest neighbour and cached across ``score`` calls. When a training AT has an
    exact duplicate in another class, ``dist_b = 0`` and DSA is infinite (NaN if also
    ``dist_a = 0``), as in dnn-tip; a :class:`~labelwise.exceptions.DegenerateDataWarning`
    says so.

    Parameters
    ----------
    chunk_size:
        Test rows compared at once (memory ~ ``chunk_size * n_train`` floats); None sizes chunks
        to about 64 MiB.
    """

    _needs_classes = True
    _name = "DSA"

    def _fit(self, acts: NDArray[np.float64], classes: NDArray[np.int64] | None) -> None:
        assert classes is not None
        if np.unique(classes).size < 2:
            raise LabelwiseError(
                "train_classes must hold at least 2 classes for DSA (it measures the distance "
                f"to other classes), got only {np.unique(classes).tolist()}"
            )
        # DSA is a ratio of distances: scaled by a power of 2 (exact, so ordinary ATs give
        # bitwise the same DSA), ATs of any magnitude neither underflow in cdist's squares
        # (1e-170 gave dist 0, hence inf/NaN blamed on duplicates) nor overflow
        top = float(np.max(np.abs(acts))) if acts.size else 0.0
        self._scale = 2.0 ** -math.floor(math.log2(top)) if top > 0 else 1.0
        self._train = acts * self._scale
        self._train_classes = classes
        self._rows_of = {int(c): np.flatnonzero(classes == c) for c in np.unique(classes)}
        self._dist_b = np.full(acts.shape[0], np.nan)  # cache: per training row, dist to others

    def _other_class_distance(self, c: int, train_rows: NDArray[np.intp]) -> NDArray[np.float64]:
        """dist_b for training rows of class c, computing only those not cached yet."""
        todo = np.unique(train_rows[np.isnan(self._dist_b[train_rows])])
        if todo.size:
            others = self._train[self._train_classes != c]
            step = _rows_per_chunk(self.chunk_size, others.shape[0])
            for start in range(0, todo.size, step):
                rows = todo[start : start + step]
                self._dist_b[rows] = cdist(self._train[rows], others).min(axis=1)
        return self._dist_b[train_rows]

    def _score_class(self, c: int, acts: NDArray[np.float64]) -> NDArray[np.float64]:
        same_rows = self._rows_of[c]
        same = self._train[same_rows]
        acts = acts * self._scale
        dist_a = np.empty(acts.shape[0], dtype=np.float64)
        nearest = np.empty(acts.shape[0], dtype=np.intp)
        step = _rows_per_chunk(self.chunk_size, same.shape[0])
        for start in range(0, acts.shape[0], step):
            dists = cdist(acts[start : start + step], same)
            pos = np.argmin(dists, axis=1)
            dist_a[start : start + step] = dists[np.arange(pos.size), pos]
            nearest[start : start + step] = same_rows[pos]
        dist_b = self._other_class_distance(c, nearest)
        zero = dist_b == 0
        if zero.any():
            warnings.warn(
                f"DSA: {int(zero.sum())} test input(s) of class {c} have a nearest training AT "
                "duplicated in another class, so dist_b = 0 and their DSA is inf (NaN if "
                "dist_a = 0 too)",
                DegenerateDataWarning,
                stacklevel=user_stacklevel(),
            )
        with np.errstate(divide="ignore", invalid="ignore"):
            return dist_a / dist_b


# ----------------------------------------------------------------------------- MDSA


class MDSA(_SurpriseAdequacy):
    """Mahalanobis-distance surprise adequacy (Kim et al. 2020), as in dnn-tip.

    ``MDSA(x) = (x - mu)^T S^+ (x - mu)``, the **squared** Mahalanobis distance, with ``mu`` the
    mean and ``S`` the biased (divide by n) covariance of the training ATs of ``x``'s class (or
    of all training rows when fitted without classes) and ``S^+`` its pseudo-inverse
    (``scipy.linalg.pinvh``): exactly ``sklearn.covariance.EmpiricalCovariance().fit(train)
    .mahalanobis(x)``, which dnn-tip returns. A class with a single training row has ``S = 0``
    and so MDSA 0 everywhere.

    Parameters
    ----------
    chunk_size:
        Test rows scored at once; None sizes chunks to about 64 MiB.
    """

    _name = "MDSA"

    def _fit(self, acts: NDArray[np.float64], classes: NDArray[np.int64] | None) -> None:
        self._models: dict[int | None, tuple[NDArray[np.float64], NDArray[np.float64]]] = {}
        for c, rows in _per_class(acts, classes):
            mean = rows.mean(axis=0)
            centred = rows - mean
            cov = centred.T @ centred / rows.shape[0]
            self._models[c] = (mean, linalg.pinvh(cov, check_finite=False))

    def _score_model(self, c: int | None, acts: NDArray[np.float64]) -> NDArray[np.float64]:
        mean, precision = self._models[c]
        out = np.empty(acts.shape[0], dtype=np.float64)
        step = _rows_per_chunk(self.chunk_size, acts.shape[1])
        for start in range(0, acts.shape[0], step):
            diff = acts[start : start + step] - mean
            out[start : start + step] = np.einsum("ij,ij->i", diff @ precision, diff)
        return np.maximum(out, 0.0)  # rounding can leave tiny negatives

    def _score_all(self, acts: NDArray[np.float64]) -> NDArray[np.float64]:
        return self._score_model(None, acts)

    def _score_class(self, c: int, acts: NDArray[np.float64]) -> NDArray[np.float64]:
        return self._score_model(c, acts)


# ----------------------------------------------------------------------------- coverage


@dataclass(frozen=True, eq=False)
class SurpriseCoverage(Result):
    """Surprise coverage: the share of buckets of ``[0, upper]`` that some input falls into.

    Attributes
    ----------
    value:
        ``n_covered / n_buckets``, in [0, 1].
    n_covered:
        Buckets holding at least one input.
    n_buckets:
        Number of buckets.
    upper:
        Upper bound of the bucketed range.
    overflow_bucket:
        Whether the last bucket is ``[upper, inf)``.
    counts:
        (n_buckets,) inputs per bucket (int64, read-only); counts of chunks add up.
    """

    higher_is_better: ClassVar[bool | None] = True

    value: float
    n_covered: int
    n_buckets: int
    upper: float
    overflow_bucket: bool
    counts: NDArray[np.int64]


def surprise_coverage(
    surprise: ArrayLike, *, upper: float, n_buckets: int, overflow_bucket: bool = False
) -> SurpriseCoverage:
    """Surprise coverage (Kim et al. 2019, Sec. 3.3), as dnn-tip's ``SurpriseCoverageMapper``.

    Without ``overflow_bucket``, ``[0, upper)`` is cut into ``n_buckets`` equal half-open
    buckets ``[t_i, t_{i+1})``; values below 0 or ``>= upper`` cover nothing. With it, the
    first ``n_buckets - 1`` equal buckets split ``[0, upper)`` and the last is ``[upper, inf)``
    (``inf`` itself covers nothing). Kim et al. choose ``upper`` from the surprise of the
    training or adversarial inputs; it is a required, explicit choice here.
    """
    arr = check_numeric_array(surprise, "surprise", ndim=1, min_rows=0)
    arr = np.asarray(arr, dtype=np.float64)
    nan = np.flatnonzero(np.isnan(arr))
    if nan.size:
        raise LabelwiseError(f"surprise must not hold NaN, found one at position {int(nan[0])}")
    # one count (and one threshold) per bucket: 10 million is far beyond any use (SC uses
    # about 1,000) and keeps a typo from allocating gigabytes
    n_buckets = check_int(n_buckets, "n_buckets", minimum=1, maximum=10_000_000)
    try:
        upper = float(upper)
    except (TypeError, ValueError):
        raise LabelwiseError(f"upper must be a finite number > 0, got {upper!r}") from None
    if not (np.isfinite(upper) and upper > 0):
        raise LabelwiseError(f"upper must be a finite number > 0, got {upper}")
    if overflow_bucket:
        if n_buckets < 2:
            raise LabelwiseError(
                f"n_buckets must be >= 2 with overflow_bucket=True, got {n_buckets}"
            )
        thresholds = np.append(np.linspace(0.0, upper, n_buckets), np.inf)
    else:
        thresholds = np.linspace(0.0, upper, n_buckets + 1)
    bucket = np.searchsorted(thresholds, arr, side="right") - 1
    inside = (bucket >= 0) & (bucket < n_buckets)
    counts = np.bincount(bucket[inside], minlength=n_buckets).astype(np.int64)
    n_covered = int(np.count_nonzero(counts))
    return SurpriseCoverage(
        value=n_covered / n_buckets,
        n_covered=n_covered,
        n_buckets=n_buckets,
        upper=upper,
        overflow_bucket=bool(overflow_bucket),
        counts=counts,
    )

"""Test-set quality in a model's feature space (dataset-characterization-coverage, Sec. 4.2).

Four metrics of how well a test set covers what a classifier has learnt, plus the "existing
metric" the paper compares them with (Sec. 4.2.1, 5.2):

* :func:`equivalence_partitioning`: are the classes equally represented?
* :func:`centroid_positioning`: which share of each class lies in its centroid region?
* :func:`boundary_conditioning` and :func:`pairwise_boundary_conditioning`: which share lies
  near the decision boundary, overall and for each pair of classes?
* :func:`covariate_shift`: Jensen-Shannon divergence between Gaussian mixtures fitted to each
  class's training and test features.

The paper's formulas did not survive in our copy; every function's docstring states the exact
definition used here. Features are any per-input activations (last hidden or last
convolutional layer); inputs with more than two dimensions are flattened per row.
"""

from __future__ import annotations

import functools
import math
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from math import prod
from types import MappingProxyType
from typing import Any, ClassVar

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .._chunks import check_rows, concat_rows, map_rows, reduce_rows
from .._contract import JSON_OMIT, Result
from .._deps import require
from .._validation import (
    check_band,
    check_classes_in_range,
    check_finite_array,
    check_int,
    check_magnitude,
    check_rng,
)
from ..exceptions import DegenerateDataWarning, LabelwiseError, user_stacklevel

__all__ = [
    "BoundaryConditioning",
    "CentroidPositioning",
    "CovariateShift",
    "EquivalencePartitioning",
    "PairwiseBoundaryConditioning",
    "boundary_conditioning",
    "centroid_positioning",
    "covariate_shift",
    "equivalence_partitioning",
    "pairwise_boundary_conditioning",
]

# --------------------------------------------------------------------------- results


class _OverallValue:
    """Mixin (before :class:`Result`) for a result whose headline ``value`` is ``overall``."""

    overall: float

    @property
    def value(self) -> float:
        """The headline number: ``overall`` (whether more is better depends on the purpose)."""
        return self.overall


@dataclass(frozen=True, eq=False)
class EquivalencePartitioning(Result):
    """How evenly the test inputs are spread over the classes (arrays are read-only).

    Attributes
    ----------
    scores:
        (C,) ``n_c * C / N`` for every class c = 0 .. C-1; 1 is ideal (a perfectly balanced
        test set), 0 means the class is absent.
    counts:
        (C,) n_c, the number of test inputs of each class.
    n_inputs:
        N, the number of test inputs.
    n_classes:
        C.
    imbalance:
        Overall summary: the standard deviation of ``scores`` (ddof 0). The scores average 1, so
        this is the coefficient of variation of the class counts; 0 is ideal.
    """

    higher_is_better: ClassVar[bool | None] = False
    _json_head = MappingProxyType({"metric": "equivalence_partitioning"})

    scores: NDArray[np.float64]
    counts: NDArray[np.int64]
    n_inputs: int
    n_classes: int
    imbalance: float

    @property
    def value(self) -> float:
        """The headline number: ``imbalance`` (0 is ideal, lower is better)."""
        return self.imbalance


@dataclass(frozen=True, eq=False)
class CentroidPositioning(_OverallValue, Result):
    """Share of each class's test inputs in its centroid region (arrays are read-only).

    Attributes
    ----------
    classes:
        (K,) the class labels present in the training labels, sorted; every per-class array
        is aligned with it.
    shares:
        (K,) share of the class's test inputs whose normalised distance is ``<= radius``
        (NaN for a class with no test inputs).
    counts:
        (K,) number of the class's test inputs within the radius.
    n_test:
        (K,) number of the class's test inputs.
    centroids:
        (K, d) mean training feature vector of each class.
    scales:
        (K,) the normaliser of each class: the median Euclidean distance of its training
        points to its centroid.
    distances:
        (N_test,) normalised distance of every test input to its own class's centroid, in test
        row order.
    radius:
        The radius threshold.
    overall:
        Overall summary: the share of all test inputs within the radius of their centroid;
        also the headline ``value``.

    ``to_dict`` leaves out the per-input ``distances`` and the ``centroids``.
    """

    higher_is_better: ClassVar[bool | None] = None
    _json_head: ClassVar[Mapping[str, Any]] = MappingProxyType({"metric": "centroid_positioning"})

    classes: NDArray[np.int64]
    shares: NDArray[np.float64]
    counts: NDArray[np.int64]
    n_test: NDArray[np.int64]
    centroids: NDArray[np.float64] = field(metadata=JSON_OMIT)
    scales: NDArray[np.float64]
    distances: NDArray[np.float64] = field(metadata=JSON_OMIT)
    radius: float
    overall: float


@dataclass(frozen=True, eq=False)
class BoundaryConditioning(_OverallValue, Result):
    """Share of each class's test inputs with a weak confidence (arrays are read-only).

    Attributes
    ----------
    shares:
        (C,) share of the inputs of true class c whose confidence lies in ``[lo, hi]`` (NaN for
        a class with no inputs).
    counts:
        (C,) number of those inputs.
    n_inputs:
        (C,) number of inputs of each true class.
    in_band:
        (N,) whether each input's confidence lies in the band.
    lo, hi:
        The confidence band.
    overall:
        Overall summary: the share of all inputs whose confidence lies in the band; also the
        headline ``value``.

    ``to_dict`` leaves out the per-input ``in_band`` mask.
    """

    higher_is_better: ClassVar[bool | None] = None
    _json_head: ClassVar[Mapping[str, Any]] = MappingProxyType({"metric": "boundary_conditioning"})

    shares: NDArray[np.float64]
    counts: NDArray[np.int64]
    n_inputs: NDArray[np.int64]
    in_band: NDArray[np.bool_] = field(metadata=JSON_OMIT)
    lo: float
    hi: float
    overall: float


@dataclass(frozen=True, eq=False)
class PairwiseBoundaryConditioning(Result):
    """Boundary conditioning for every ordered pair of classes (arrays are read-only).

    Attributes
    ----------
    shares:
        (C, C) ``shares[a, b]``: share of the inputs of true class a whose two most probable
        classes are {a, b} (either order) and whose confidence lies in ``[lo, hi]``. The
        diagonal is 0 (the top two classes are always distinct); a row is NaN for a class with
        no inputs.
    counts:
        (C, C) number of those inputs.
    n_inputs:
        (C,) number of inputs of each true class.
    lo, hi:
        The confidence band.
    overall:
        Share of all inputs counted in some pair (in the band with their true class among the
        top two).
    pair_coverage:
        Overall summary: share of the C (C - 1) ordered pairs (a, b), a != b, with at least one
        input; 1 means every boundary was tested from both sides.
    """

    higher_is_better: ClassVar[bool | None] = True
    _json_head = MappingProxyType({"metric": "pairwise_boundary_conditioning"})

    shares: NDArray[np.float64]
    counts: NDArray[np.int64]
    n_inputs: NDArray[np.int64]
    lo: float
    hi: float
    overall: float
    pair_coverage: float

    @property
    def value(self) -> float:
        """The headline number: ``pair_coverage`` (higher is better)."""
        return self.pair_coverage


@dataclass(frozen=True, eq=False)
class CovariateShift(_OverallValue, Result):
    """Per-class Jensen-Shannon divergence between train and test features (read-only arrays).

    Attributes
    ----------
    classes:
        (K,) class labels present in the training labels, sorted.
    divergence:
        (K,) Monte Carlo estimate of JSD(P_c, Q_c) in bits, clipped to [0, 1]; NaN for a class
        with fewer than two test (or training) inputs.
    std_error:
        (K,) Monte Carlo standard error of each estimate (of the fitted mixtures' JSD; it does
        not include the uncertainty of the fits themselves).
    n_train, n_test:
        (K,) number of training and test inputs of each class.
    components_train, components_test:
        (K,) mixture components actually used (fewer than requested for small classes).
    n_components, n_samples, covariance_type:
        The requested settings.
    overall:
        Overall summary: mean divergence over the classes where it is defined (NaN if none);
        also the headline ``value``.
    """

    higher_is_better: ClassVar[bool | None] = None
    _json_head: ClassVar[Mapping[str, Any]] = MappingProxyType({"metric": "covariate_shift"})

    classes: NDArray[np.int64]
    divergence: NDArray[np.float64]
    std_error: NDArray[np.float64]
    n_train: NDArray[np.int64]
    n_test: NDArray[np.int64]
    components_train: NDArray[np.int64]
    components_test: NDArray[np.int64]
    n_components: int
    n_samples: int
    covariance_type: str
    overall: float


# --------------------------------------------------------------------------- validation


def _check_labels(labels: ArrayLike, name: str) -> NDArray[np.int64]:
    arr = check_finite_array(labels, name, ndim=1)
    if arr.dtype.kind == "f" and not np.all(arr == np.round(arr)):
        raise LabelwiseError(f"{name} must be integer class labels, got non-integer values")
    out = arr.astype(np.int64)
    if out.min() < 0:
        raise LabelwiseError(f"{name} must be non-negative class labels, got {out.min()}")
    return out


def _check_features(features: ArrayLike, name: str) -> NDArray[np.float64]:
    arr = check_finite_array(features, name, ndim=(2, 3, 4, 5))
    check_magnitude(arr, name)
    return np.asarray(arr, dtype=np.float64).reshape(arr.shape[0], -1)


def _check_same_length(a: NDArray[Any], a_name: str, b: NDArray[Any], b_name: str) -> None:
    if a.shape[0] != b.shape[0]:
        raise LabelwiseError(
            f"{a_name} and {b_name} must have the same number of rows, "
            f"got {a.shape[0]} and {b.shape[0]}"
        )


def _check_train_test(
    train_features: ArrayLike,
    train_labels: ArrayLike,
    test_features: ArrayLike,
    test_labels: ArrayLike,
) -> tuple[NDArray[np.float64], NDArray[np.int64], NDArray[np.float64], NDArray[np.int64]]:
    """Checked train and test features (in memory, flattened per row) and labels."""
    return _train_test(_check_features, train_features, train_labels, test_features, test_labels)


def _open_features(features: ArrayLike, name: str) -> Any:
    """(N, ...) features opened for chunked passes (not read; finiteness checked per block)."""
    return check_rows(features, name, ndim=(2, 3, 4, 5))


def _check_train_test_blocks(
    train_features: ArrayLike,
    train_labels: ArrayLike,
    test_features: ArrayLike,
    test_labels: ArrayLike,
) -> tuple[Any, NDArray[np.int64], Any, NDArray[np.int64]]:
    """As :func:`_check_train_test`, the features opened for chunked passes, not loaded."""
    return _train_test(_open_features, train_features, train_labels, test_features, test_labels)


def _train_test(
    open_features: Callable[[ArrayLike, str], Any],
    train_features: ArrayLike,
    train_labels: ArrayLike,
    test_features: ArrayLike,
    test_labels: ArrayLike,
) -> tuple[Any, NDArray[np.int64], Any, NDArray[np.int64]]:
    xtr = open_features(train_features, "train_features")
    ytr = _check_labels(train_labels, "train_labels")
    xte = open_features(test_features, "test_features")
    yte = _check_labels(test_labels, "test_labels")
    _check_same_length(xtr, "train_features", ytr, "train_labels")
    _check_same_length(xte, "test_features", yte, "test_labels")
    d_tr, d_te = prod(xtr.shape[1:]), prod(xte.shape[1:])
    if d_tr != d_te:
        raise LabelwiseError(
            "test_features must have as many features per row as train_features, "
            f"got {d_te} and {d_tr}"
        )
    missing = np.setdiff1d(yte, ytr)
    if missing.size:
        raise LabelwiseError(
            f"test_labels must only hold classes present in train_labels; class(es) "
            f"{missing.tolist()} have test inputs but no training features"
        )
    return xtr, ytr, xte, yte


def _class_sums_block(
    pos: NDArray[np.int64], k: int, block: NDArray[Any], start: int
) -> NDArray[np.float64]:
    x = np.asarray(block, dtype=np.float64).reshape(block.shape[0], -1)
    sums = np.zeros((k, x.shape[1]))
    np.add.at(sums, pos[start : start + x.shape[0]], x)
    return sums


def _add(a: NDArray[np.float64], b: NDArray[np.float64]) -> NDArray[np.float64]:
    return a + b


def _distance_block(
    centroids: NDArray[np.float64], pos: NDArray[np.int64], block: NDArray[Any], start: int
) -> NDArray[np.float64]:
    x = np.asarray(block, dtype=np.float64).reshape(block.shape[0], -1)
    return np.asarray(np.linalg.norm(x - centroids[pos[start : start + x.shape[0]]], axis=1))


def _check_positive_float(value: Any, name: str) -> float:
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise LabelwiseError(f"{name} must be a positive number, got {value!r}") from None
    if isinstance(value, bool) or not (math.isfinite(v) and v > 0):
        raise LabelwiseError(f"{name} must be a positive finite number, got {value!r}")
    return v


_check_band = check_band  # one rule for every band: 0 <= lo < hi <= 1


def _top2_block(block: NDArray[Any], start: int) -> tuple[Any, ...]:
    """Per row of one block: top probability, first and second class (ties: lower index);
    the block's value range and its first row not summing to 1 (global index) and its sum."""
    p = np.asarray(block, dtype=np.float64)
    order = np.argsort(-p, axis=1, kind="stable")
    first, second = order[:, 0], order[:, 1]
    conf = p[np.arange(p.shape[0]), first]
    sums = p.sum(axis=1)
    bad = np.flatnonzero(np.abs(sums - 1.0) > 1e-3)
    first_bad = (start + int(bad[0]), float(sums[bad[0]])) if bad.size else None
    return conf, first.astype(np.int64), second.astype(np.int64), p.min(), p.max(), first_bad


def _check_probabilities(
    probabilities: ArrayLike, labels: ArrayLike
) -> tuple[NDArray[np.float64], NDArray[np.int64], NDArray[np.int64], NDArray[np.int64], int]:
    """One chunked pass over (N, C) probabilities: per row the top probability and the first
    and second class, with the labels (checked) and C."""
    arr = check_rows(probabilities, "probabilities", ndim=2)
    if arr.shape[1] < 2:
        raise LabelwiseError(f"probabilities must have at least 2 columns, got {arr.shape[1]}")
    parts = map_rows(_top2_block, arr, name="probabilities")
    lo = min(float(part[3]) for part in parts)
    hi = max(float(part[4]) for part in parts)
    if lo < -1e-6 or hi > 1 + 1e-6:
        raise LabelwiseError(
            "probabilities must lie in [0, 1] (pass softmax outputs, not logits), "
            f"got values in [{lo:.4g}, {hi:.4g}]"
        )
    for part in parts:
        if part[5] is not None:
            row, total = part[5]
            raise LabelwiseError(
                "probabilities must sum to 1 in every row (pass softmax outputs, not logits), "
                f"row {row} sums to {total:.6g}"
            )
    conf = concat_rows([part[0] for part in parts])
    first = concat_rows([part[1] for part in parts])
    second = concat_rows([part[2] for part in parts])
    y = _check_labels(labels, "labels")
    _check_same_length(arr, "probabilities", y, "labels")
    check_classes_in_range(y, int(arr.shape[1]), "labels")
    return conf, first, second, y, int(arr.shape[1])


def _shares(counts: NDArray[Any], totals: NDArray[Any], what: str) -> NDArray[np.float64]:
    """counts / totals, NaN (with a warning) where a class has no inputs."""
    totals = np.asarray(totals)
    empty = totals == 0
    if empty.any():
        warnings.warn(
            f"{what}: class(es) {np.flatnonzero(empty).tolist()} have no inputs; "
            "their share is NaN",
            DegenerateDataWarning,
            stacklevel=user_stacklevel(),
        )
    denom = np.where(empty, 1, totals)
    out = np.asarray(counts, dtype=np.float64) / (denom if np.ndim(counts) == 1 else denom[:, None])
    if np.ndim(counts) == 1:
        out[empty] = np.nan
    else:
        out[empty, :] = np.nan
    return out


# --------------------------------------------------------------------------- metrics


#: Most classes equivalence_partitioning counts (one count each).
_MAX_CLASSES = 10_000_000


def equivalence_partitioning(
    labels: ArrayLike, n_classes: int | None = None
) -> EquivalencePartitioning:
    """Equivalence partitioning (Sec. 4.2 (1)): are all classes equally represented?

    For every class c = 0 .. C-1 the score is ``EP_c = n_c * C / N``, where ``n_c`` is the
    number of test inputs labelled c, ``C`` the number of classes and ``N`` the number of test
    inputs. A balanced test set scores 1 for every class; 0 means the class is missing.

    Parameters
    ----------
    labels:
        (N,) ground-truth class labels of the test inputs, non-negative integers.
    n_classes:
        C. Default: ``max(labels) + 1``. Pass it when some classes may be absent from the
        labels altogether (e.g. the last ones).

    Returns
    -------
    EquivalencePartitioning
        The per-class scores and their standard deviation (``imbalance``, the coefficient of
        variation of the class counts; 0 is ideal).
    """
    y = _check_labels(labels, "labels")
    top = int(y.max()) + 1
    if top > _MAX_CLASSES:  # one count per class: a stray id would allocate gigabytes
        raise LabelwiseError(
            f"labels must be class indices 0..C-1 with C at most {_MAX_CLASSES:,}, got a label "
            f"{top - 1}; map class ids to indices first"
        )
    c = (
        top
        if n_classes is None
        else check_int(n_classes, "n_classes", minimum=1, maximum=_MAX_CLASSES)
    )
    if c < top:
        raise LabelwiseError(
            f"n_classes must be > every label (labels go up to {top - 1}), got {c}"
        )
    counts = np.bincount(y, minlength=c).astype(np.int64)
    scores = counts * c / y.size
    return EquivalencePartitioning(
        scores=scores,
        counts=counts,
        n_inputs=int(y.size),
        n_classes=c,
        imbalance=float(np.std(scores)),
    )


def centroid_positioning(
    train_features: ArrayLike,
    train_labels: ArrayLike,
    test_features: ArrayLike,
    test_labels: ArrayLike,
    *,
    radius: float = 1.0,
) -> CentroidPositioning:
    """Centroid positioning (Sec. 4.2 (2)): share of each class's test inputs near its centroid.

    Definitions, for every class c of the training labels:

    * centroid ``mu_c``: the mean of the class's training feature vectors;
    * scale ``s_c``: the median, over the class's training points, of their Euclidean distance
      to ``mu_c``;
    * normalised distance of a test input x labelled c: ``||x - mu_c||_2 / s_c``;
    * ``CP_c``: the share of the class's test inputs whose normalised distance is
      ``<= radius``.

    Why the median distance: dividing by the class's own spread makes one radius meaningful
    across classes, layers and feature scales, and the median is robust to the few far-out
    training points that would inflate a mean or RMS distance. It also makes the default
    ``radius=1`` interpretable: the centroid region is the ball that holds the inner half of
    the class's training points, so a test set drawn like the training set has an expected
    share of 0.5 in every class, whatever the dimension; clearly higher shares mean the test
    inputs crowd the centroid (easy inputs), lower ones that they sit away from it.

    A class whose training points all coincide (``s_c = 0``, e.g. one training point) falls
    back to the median over all classes' training distances, with a
    :class:`~labelwise.exceptions.DegenerateDataWarning`.

    Parameters
    ----------
    train_features:
        (N_train, d) (or (N_train, ...) flattened per row) training features, e.g. last hidden
        layer activations.
    train_labels:
        (N_train,) training class labels.
    test_features, test_labels:
        The same for the test set; every test class must occur in the training labels.
    radius:
        Threshold on the normalised distance (positive).

    Returns
    -------
    CentroidPositioning
    """
    xtr, ytr, xte, yte = _check_train_test_blocks(
        train_features, train_labels, test_features, test_labels
    )
    radius = _check_positive_float(radius, "radius")
    classes = np.unique(ytr)
    k = classes.size
    pos_tr = np.searchsorted(classes, ytr).astype(np.int64)
    pos_te = np.searchsorted(classes, yte).astype(np.int64)

    # three chunked passes: class sums (train), train distances, test distances
    n_train = np.bincount(pos_tr, minlength=k)
    centroids = reduce_rows(
        functools.partial(_class_sums_block, pos_tr, k), _add, xtr, name="train_features"
    )
    centroids /= n_train[:, None]
    train_dist = concat_rows(
        map_rows(
            functools.partial(_distance_block, centroids, pos_tr),
            xtr,
            name="train_features",
            check_finite=False,
        )
    )
    scales = np.array([np.median(train_dist[pos_tr == j]) for j in range(k)])
    flat = scales <= 0
    if flat.any():
        pooled = float(np.median(train_dist))
        fallback = pooled if pooled > 0 else 1.0
        warnings.warn(
            f"centroid_positioning: class(es) {classes[flat].tolist()} have no spread in the "
            f"training features (all points at the centroid); their distances are normalised "
            f"by the median over all classes ({fallback:.4g}) instead",
            DegenerateDataWarning,
            stacklevel=user_stacklevel(),
        )
        scales[flat] = fallback

    test_dist = concat_rows(
        map_rows(functools.partial(_distance_block, centroids, pos_te), xte, name="test_features")
    )
    distances = test_dist / scales[pos_te]
    inside = distances <= radius
    counts = np.bincount(pos_te, weights=inside, minlength=k).astype(np.int64)
    n_test = np.bincount(pos_te, minlength=k).astype(np.int64)
    return CentroidPositioning(
        classes=classes,
        shares=_shares(counts, n_test, "centroid_positioning"),
        counts=counts,
        n_test=n_test,
        centroids=centroids,
        scales=scales,
        distances=distances,
        radius=radius,
        overall=float(inside.mean()),
    )


def boundary_conditioning(
    probabilities: ArrayLike, labels: ArrayLike, *, lo: float = 0.0, hi: float = 0.6
) -> BoundaryConditioning:
    """Boundary conditioning (Sec. 4.2 (3)): share of each class's inputs near the boundary.

    The confidence of an input is its top class probability ``max_k p_k(x)``. For every true
    class c, ``BC_c`` is the share of the inputs labelled c whose confidence lies in the closed
    band ``[lo, hi]``: the weakly classified inputs, near a decision boundary. The band uses
    the model's prediction only, so a weakly *mis*classified input counts too.

    Default band ``[0, 0.6]``: the top probability is always at least 1/C, so ``lo=0`` sets no
    lower limit, and ``hi=0.6`` counts an input as weak when the model gives its winner at most
    3:2 odds against all other classes together (for two classes: a runner-up of at least
    0.4). Raise ``lo`` to exclude inputs confused among many classes.

    Parameters
    ----------
    probabilities:
        (N, C) class probabilities (softmax outputs; rows sum to 1).
    labels:
        (N,) ground-truth class labels in ``[0, C)``.
    lo, hi:
        The band, ``0 <= lo < hi <= 1``.

    Returns
    -------
    BoundaryConditioning
    """
    conf, _, _, y, c = _check_probabilities(probabilities, labels)
    lo, hi = _check_band(lo, hi)
    in_band = (conf >= lo) & (conf <= hi)
    counts = np.bincount(y, weights=in_band, minlength=c).astype(np.int64)
    n_inputs = np.bincount(y, minlength=c).astype(np.int64)
    return BoundaryConditioning(
        shares=_shares(counts, n_inputs, "boundary_conditioning"),
        counts=counts,
        n_inputs=n_inputs,
        in_band=in_band,
        lo=lo,
        hi=hi,
        overall=float(in_band.mean()),
    )


def pairwise_boundary_conditioning(
    probabilities: ArrayLike, labels: ArrayLike, *, lo: float = 0.0, hi: float = 0.6
) -> PairwiseBoundaryConditioning:
    """Pair-wise boundary conditioning (Sec. 4.2 (4)): is every class boundary tested?

    For an ordered pair of distinct classes (a, b), ``PBC[a, b]`` is the share of the inputs of
    true class a whose two most probable classes are exactly {a, b} (a first or second) and
    whose confidence (top probability) lies in ``[lo, hi]`` (see
    :func:`boundary_conditioning`): the inputs of a that sit near the a/b boundary, on either
    side. Ties in the ranking go to the lower class index. The diagonal is 0. Each row sums
    to at most ``BC_a`` (inputs whose true class is not among the top two are not counted).

    Parameters
    ----------
    probabilities:
        (N, C) class probabilities (softmax outputs; rows sum to 1).
    labels:
        (N,) ground-truth class labels in ``[0, C)``.
    lo, hi:
        The band, ``0 <= lo < hi <= 1`` (default ``[0, 0.6]``, as in
        :func:`boundary_conditioning`).

    Returns
    -------
    PairwiseBoundaryConditioning
        The (C, C) shares, plus ``pair_coverage``: the share of ordered pairs with at least one
        input.
    """
    conf, first, second, y, c = _check_probabilities(probabilities, labels)
    lo, hi = _check_band(lo, hi)
    in_band = (conf >= lo) & (conf <= hi)
    other = np.where(first == y, second, first)
    counted = in_band & ((first == y) | (second == y))
    counts = np.zeros((c, c), dtype=np.int64)
    np.add.at(counts, (y[counted], other[counted]), 1)
    n_inputs = np.bincount(y, minlength=c).astype(np.int64)
    off_diag = ~np.eye(c, dtype=bool)
    return PairwiseBoundaryConditioning(
        shares=_shares(counts, n_inputs, "pairwise_boundary_conditioning"),
        counts=counts,
        n_inputs=n_inputs,
        lo=lo,
        hi=hi,
        overall=float(counted.mean()),
        pair_coverage=float((counts[off_diag] > 0).mean()),
    )


def _gaussian_mixture() -> Any:
    return require("sklearn.mixture", "covariate_shift", extra="study").GaussianMixture


def _fit_mixture(
    x: NDArray[np.float64],
    n_components: int,
    covariance_type: str,
    seed: int,
    what: str,
) -> tuple[Any, int]:
    gm_cls = _gaussian_mixture()
    k = min(n_components, max(1, x.shape[0] // 2))
    if k < n_components:
        warnings.warn(
            f"covariate_shift: {what} has only {x.shape[0]} points; fitting {k} mixture "
            f"component(s) instead of {n_components}",
            DegenerateDataWarning,
            stacklevel=user_stacklevel(),
        )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        gm = gm_cls(n_components=k, covariance_type=covariance_type, random_state=seed).fit(x)
    for w in caught:
        warnings.warn(
            f"covariate_shift: fitting {what}: {w.message}",
            DegenerateDataWarning,
            stacklevel=user_stacklevel(),
        )
    return gm, k


def _mc_jsd(p: Any, q: Any, n_samples: int, seeds: tuple[int, int]) -> tuple[float, float]:
    """Monte Carlo JSD in bits between two fitted mixtures, and its standard error."""
    log2 = math.log(2.0)
    terms = []
    for src, seed in ((p, seeds[0]), (q, seeds[1])):
        src.set_params(random_state=seed)  # draws independent of the fit's initialisation
        x, _ = src.sample(n_samples)
        lp, lq = p.score_samples(x), q.score_samples(x)
        lm = np.logaddexp(lp, lq) - log2
        own = lp if src is p else lq
        terms.append((own - lm) / log2)
    value = 0.5 * (terms[0].mean() + terms[1].mean())
    se = 0.5 * math.sqrt(terms[0].var(ddof=1) / n_samples + terms[1].var(ddof=1) / n_samples)
    return float(np.clip(value, 0.0, 1.0)), se


def covariate_shift(
    train_features: ArrayLike,
    train_labels: ArrayLike,
    test_features: ArrayLike,
    test_labels: ArrayLike,
    *,
    n_components: int = 3,
    n_samples: int = 10_000,
    covariance_type: str = "diag",
    rng: Any = None,
) -> CovariateShift:
    """Covariate shift (Sec. 4.2.1 and 5.2, after Turhan 2012): per-class train/test divergence.

    For every class c of the training labels, a Gaussian mixture ``P_c`` is fitted (scikit-learn
    ``GaussianMixture``) to the class's training features and another, ``Q_c``, to its test
    features. The shift is the Jensen-Shannon divergence in bits,

        ``JSD(P, Q) = 1/2 KL(P || M) + 1/2 KL(Q || M)``,  ``M = (P + Q) / 2``,

    which lies in [0, 1]: 0 when the test features follow the training distribution, 1 when
    the two do not overlap. It is estimated by Monte Carlo: ``n_samples`` points ``x ~ P`` and
    as many ``y ~ Q``, ``KL(P || M) ~ mean(log2 p(x) - log2 m(x))`` (and likewise for Q) with
    the log densities from ``score_samples``; the estimate is clipped to [0, 1] and its Monte
    Carlo standard error is reported.

    Classes with few points get fewer components (at most one per two points, with a
    :class:`~labelwise.exceptions.DegenerateDataWarning`); a class with fewer than two test
    inputs gets NaN, with a warning.

    The default diagonal covariance keeps the fit stable for wide feature layers with a few
    hundred inputs per class (a full covariance has d (d + 1) / 2 parameters per component and
    overfits there, which inflates the divergence of two samples of one distribution); pass
    ``covariance_type="full"`` for low-dimensional features. Note that the divergence of two
    finite samples of one distribution is small but not 0: the fitted mixtures differ.

    Parameters
    ----------
    train_features, train_labels, test_features, test_labels:
        As for :func:`centroid_positioning`.
    n_components:
        Mixture components per class (and per set).
    n_samples:
        Monte Carlo draws from each mixture (the standard error shrinks as 1/sqrt of it).
    covariance_type:
        ``"diag"``, ``"full"``, ``"tied"`` or ``"spherical"`` (scikit-learn's).
    rng:
        Seed or ``numpy.random.Generator`` for the fits and the draws.

    Returns
    -------
    CovariateShift
    """
    xtr, ytr, xte, yte = _check_train_test(train_features, train_labels, test_features, test_labels)
    n_components = check_int(n_components, "n_components", minimum=1)
    n_samples = check_int(n_samples, "n_samples", minimum=2)
    if covariance_type not in ("diag", "full", "tied", "spherical"):
        raise LabelwiseError(
            "covariance_type must be 'diag', 'full', 'tied' or 'spherical', "
            f"got {covariance_type!r}"
        )
    gen = check_rng(rng)
    _gaussian_mixture()  # fail early without scikit-learn

    classes = np.unique(ytr)
    k = classes.size
    divergence = np.full(k, np.nan)
    std_error = np.full(k, np.nan)
    n_train = np.zeros(k, dtype=np.int64)
    n_test = np.zeros(k, dtype=np.int64)
    comp_tr = np.zeros(k, dtype=np.int64)
    comp_te = np.zeros(k, dtype=np.int64)
    too_small = []
    for j, cls in enumerate(classes):
        a, b = xtr[ytr == cls], xte[yte == cls]
        n_train[j], n_test[j] = a.shape[0], b.shape[0]
        seeds = [int(s) for s in gen.integers(0, 2**31 - 1, size=4)]
        if a.shape[0] < 2 or b.shape[0] < 2:
            too_small.append(int(cls))
            continue
        p, comp_tr[j] = _fit_mixture(
            a, n_components, covariance_type, seeds[0], f"class {cls} (train)"
        )
        q, comp_te[j] = _fit_mixture(
            b, n_components, covariance_type, seeds[1], f"class {cls} (test)"
        )
        divergence[j], std_error[j] = _mc_jsd(p, q, n_samples, (seeds[2], seeds[3]))
    if too_small:
        warnings.warn(
            f"covariate_shift: class(es) {too_small} have fewer than 2 training or test "
            "inputs; their divergence is NaN",
            DegenerateDataWarning,
            stacklevel=user_stacklevel(),
        )
    defined = ~np.isnan(divergence)
    overall = float(divergence[defined].mean()) if defined.any() else math.nan
    return CovariateShift(
        classes=classes,
        divergence=divergence,
        std_error=std_error,
        n_train=n_train,
        n_test=n_test,
        components_train=comp_tr,
        components_test=comp_te,
        n_components=n_components,
        n_samples=n_samples,
        covariance_type=covariance_type,
        overall=overall,
    )

"""Feature-space test-set quality metrics (labelwise.quality.feature_space)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import integrate, stats

from labelwise.exceptions import DegenerateDataWarning, LabelwiseError
from labelwise.quality.feature_space import (
    boundary_conditioning,
    centroid_positioning,
    covariate_shift,
    equivalence_partitioning,
    pairwise_boundary_conditioning,
)

# --------------------------------------------------------------------------- fixtures


def _two_blobs(rng: np.random.Generator, n: int, shift: float = 0.0):
    """Two well separated 2-D Gaussian classes (means (0, 0) and (20, 0)), unit variance."""
    means = np.array([[0.0, 0.0], [20.0, 0.0]])
    y = np.repeat([0, 1], n)
    x = means[y] + rng.standard_normal((2 * n, 2)) + shift
    return x, y, means


def _softmax_nearest_centroid(x, means):
    logits = -0.5 * ((x[:, None, :] - means[None, :, :]) ** 2).sum(axis=2)
    logits -= logits.max(axis=1, keepdims=True)
    p = np.exp(logits)
    return p / p.sum(axis=1, keepdims=True)


# --------------------------------------------------------------------------- equivalence


def test_equivalence_partitioning_hand_computed():
    r = equivalence_partitioning([0, 0, 0, 1])
    np.testing.assert_allclose(r.scores, [1.5, 0.5])  # 3*2/4, 1*2/4
    assert r.counts.tolist() == [3, 1]
    assert r.imbalance == pytest.approx(0.5)
    r3 = equivalence_partitioning([0, 0, 0, 1], n_classes=3)
    np.testing.assert_allclose(r3.scores, [2.25, 0.75, 0.0])  # 3*3/4, 1*3/4, 0
    assert r3.n_classes == 3 and r3.n_inputs == 4


def test_equivalence_partitioning_balanced_is_one():
    r = equivalence_partitioning(np.tile(np.arange(10), 7))
    np.testing.assert_allclose(r.scores, 1.0)
    assert r.imbalance == pytest.approx(0.0)
    json.dumps(r.to_dict(), allow_nan=False)


@settings(max_examples=30, deadline=None)
@given(st.lists(st.integers(0, 5), min_size=1, max_size=50))
def test_equivalence_partitioning_scores_average_one(labels):
    r = equivalence_partitioning(labels, n_classes=6)
    assert r.scores.mean() == pytest.approx(1.0)
    assert np.all(r.scores >= 0)


# --------------------------------------------------------------------------- centroid


def test_centroid_positioning_hand_computed():
    xtr = np.array([[-1, 0], [1, 0], [0, 2], [0, -2], [10, 0], [12, 0]], dtype=float)
    ytr = np.array([0, 0, 0, 0, 1, 1])
    # class 0: centroid (0, 0), training distances 1, 1, 2, 2 -> scale (median) 1.5
    # class 1: centroid (11, 0), training distances 1, 1 -> scale 1
    xte = np.array([[1.5, 0], [0, 3], [11, 0.5]])
    yte = np.array([0, 0, 1])
    r = centroid_positioning(xtr, ytr, xte, yte)
    np.testing.assert_allclose(r.centroids, [[0, 0], [11, 0]])
    np.testing.assert_allclose(r.scales, [1.5, 1.0])
    np.testing.assert_allclose(r.distances, [1.0, 2.0, 0.5])
    np.testing.assert_allclose(r.shares, [0.5, 1.0])
    assert r.counts.tolist() == [1, 1] and r.n_test.tolist() == [2, 1]
    assert r.overall == pytest.approx(2 / 3)
    assert r.radius == 1.0
    r2 = centroid_positioning(xtr, ytr, xte, yte, radius=2.0)
    np.testing.assert_allclose(r2.shares, [1.0, 1.0])
    json.dumps(r.to_dict(), allow_nan=False)
    with pytest.raises(ValueError):
        r.shares[0] = 0.0  # read-only


def test_centroid_positioning_separated_gaussians():
    rng = np.random.default_rng(0)
    xtr, ytr, _ = _two_blobs(rng, 500)
    xte, yte, _ = _two_blobs(rng, 300)
    wide = centroid_positioning(xtr, ytr, xte, yte, radius=3.0)
    assert np.all(wide.shares > 0.97)
    # default radius: the inner half of each class's training points, so about 0.5
    default = centroid_positioning(xtr, ytr, xte, yte)
    np.testing.assert_allclose(default.shares, 0.5, atol=0.1)


def test_centroid_positioning_flattens_conv_features_and_ignores_row_order():
    rng = np.random.default_rng(1)
    xtr = rng.standard_normal((40, 2, 3, 3))
    ytr = np.repeat([0, 1], 20)
    xte = rng.standard_normal((10, 2, 3, 3))
    yte = np.tile([0, 1], 5)
    a = centroid_positioning(xtr, ytr, xte, yte)
    perm = rng.permutation(40)
    b = centroid_positioning(xtr[perm], ytr[perm], xte, yte)
    np.testing.assert_allclose(a.shares, b.shares)
    assert a.centroids.shape == (2, 18)


def test_centroid_positioning_degenerate_classes_warn():
    xtr = np.array([[0.0, 0.0], [2.0, 0.0], [10.0, 10.0]])
    ytr = np.array([0, 0, 1])  # class 1: one training point, no spread
    xte = np.array([[1.0, 0.0]])
    yte = np.array([0])
    with pytest.warns(DegenerateDataWarning) as record:
        r = centroid_positioning(xtr, ytr, xte, yte)
    messages = " ".join(str(w.message) for w in record)
    assert "no spread" in messages and "no inputs" in messages
    assert r.scales[1] == pytest.approx(1.0)  # median of all training distances 1, 1, 0
    assert np.isnan(r.shares[1]) and r.shares[0] == 1.0
    assert r.to_dict()["shares"] == [1.0, None]


# --------------------------------------------------------------------------- boundary


def test_boundary_conditioning_hand_computed():
    p = np.array([[0.9, 0.1], [0.55, 0.45], [0.3, 0.7], [0.5, 0.5]])
    y = np.array([0, 0, 1, 1])
    r = boundary_conditioning(p, y)  # [0, 0.6]: confidences 0.9, 0.55, 0.7, 0.5
    np.testing.assert_allclose(r.shares, [0.5, 0.5])
    assert r.in_band.tolist() == [False, True, False, True]
    assert r.overall == pytest.approx(0.5)
    r2 = boundary_conditioning(p, y, lo=0.52, hi=0.6)
    np.testing.assert_allclose(r2.shares, [0.5, 0.0])
    r3 = boundary_conditioning(p, y, lo=0.45, hi=0.5)  # closed band: 0.5 is in it
    np.testing.assert_allclose(r3.shares, [0.0, 0.5])
    with pytest.raises(LabelwiseError, match="lo must be below hi"):  # one rule: lo < hi
        boundary_conditioning(p, y, lo=0.5, hi=0.5)
    json.dumps(r.to_dict(), allow_nan=False)


def test_pairwise_boundary_conditioning_hand_computed():
    p = np.array(
        [
            [0.5, 0.3, 0.2],  # label 0, top two {0, 1}, in band -> (0, 1)
            [0.2, 0.5, 0.3],  # label 0, top two {1, 2}: not counted
            [0.4, 0.1, 0.5],  # label 0, top two {2, 0} -> (0, 2)
            [0.9, 0.05, 0.05],  # label 0, confident: not counted
            [0.3, 0.6, 0.1],  # label 1, top two {1, 0}, 0.6 in the closed band -> (1, 0)
            [0.35, 0.3, 0.35],  # label 2, tie goes to class 0: top two {0, 2} -> (2, 0)
        ]
    )
    y = np.array([0, 0, 0, 0, 1, 2])
    r = pairwise_boundary_conditioning(p, y, lo=0.0, hi=0.6)
    assert r.counts.tolist() == [[0, 1, 1], [1, 0, 0], [1, 0, 0]]
    np.testing.assert_allclose(r.shares, [[0, 0.25, 0.25], [1, 0, 0], [1, 0, 0]])
    assert r.overall == pytest.approx(4 / 6)
    assert r.pair_coverage == pytest.approx(4 / 6)
    bc = boundary_conditioning(p, y, lo=0.0, hi=0.6)
    assert np.all(r.shares.sum(axis=1) <= bc.shares + 1e-12)
    json.dumps(r.to_dict(), allow_nan=False)


def test_boundary_share_near_zero_for_confident_predictions():
    rng = np.random.default_rng(2)
    x, y, means = _two_blobs(rng, 300)
    p = _softmax_nearest_centroid(x, means)
    assert np.all(boundary_conditioning(p, y).shares < 0.01)
    pw = pairwise_boundary_conditioning(p, y)
    assert np.all(pw.shares < 0.01)
    # points on the perpendicular bisector sit on the boundary
    mid = np.column_stack([np.full(50, 10.0), rng.standard_normal(50)])
    pm = _softmax_nearest_centroid(mid, means)
    ym = np.repeat([0, 1], 25)
    assert boundary_conditioning(pm, ym).shares.tolist() == [1.0, 1.0]
    assert pairwise_boundary_conditioning(pm, ym).shares.tolist() == [[0, 1], [1, 0]]


def test_boundary_missing_class_is_nan_with_warning():
    p = np.array([[0.5, 0.3, 0.2], [0.2, 0.7, 0.1]])
    with pytest.warns(DegenerateDataWarning, match="no inputs"):
        r = boundary_conditioning(p, [0, 1])
    assert np.isnan(r.shares[2])
    with pytest.warns(DegenerateDataWarning, match="no inputs"):
        pw = pairwise_boundary_conditioning(p, [0, 1])
    assert np.all(np.isnan(pw.shares[2]))
    assert pw.to_dict()["shares"][2] == [None, None, None]


# --------------------------------------------------------------------------- covariate shift


def test_covariate_shift_matches_quadrature_for_single_gaussians():
    rng = np.random.default_rng(3)
    xtr = rng.standard_normal((4000, 1))
    xte = rng.standard_normal((4000, 1)) + 1.5
    y = np.zeros(4000, dtype=int)
    r = covariate_shift(xtr, y, xte, y, n_components=1, n_samples=20_000, rng=0)

    def integrand(t, a, b):  # p log2(p / m)
        pa, pb = stats.norm.pdf(t, a), stats.norm.pdf(t, b)
        return pa * np.log2(2 * pa / (pa + pb))

    exact = 0.5 * (
        integrate.quad(integrand, -12, 14, args=(0.0, 1.5))[0]
        + integrate.quad(integrand, -12, 14, args=(1.5, 0.0))[0]
    )
    assert r.divergence[0] == pytest.approx(exact, abs=0.02)
    assert 0 < r.std_error[0] < 0.01


def test_covariate_shift_same_distribution_near_zero_far_apart_near_one():
    rng = np.random.default_rng(4)
    xtr, ytr, _ = _two_blobs(rng, 800)
    xte, yte, _ = _two_blobs(rng, 800)
    same = covariate_shift(xtr, ytr, xte, yte, n_components=2, n_samples=4000, rng=1)
    assert np.all(same.divergence < 0.05)
    assert same.overall < 0.05
    xfar, yfar, _ = _two_blobs(rng, 800, shift=50.0)
    far = covariate_shift(xtr, ytr, xfar, yfar, n_components=2, n_samples=4000, rng=1)
    assert np.all(far.divergence > 0.99)
    assert np.all(far.divergence <= 1.0)
    assert far.components_train.tolist() == [2, 2]
    json.dumps(far.to_dict(), allow_nan=False)


def test_covariate_shift_is_reproducible_with_a_seed():
    rng = np.random.default_rng(5)
    xtr, ytr, _ = _two_blobs(rng, 100)
    xte, yte, _ = _two_blobs(rng, 100, shift=0.5)
    a = covariate_shift(xtr, ytr, xte, yte, n_samples=500, rng=7)
    b = covariate_shift(xtr, ytr, xte, yte, n_samples=500, rng=7)
    np.testing.assert_array_equal(a.divergence, b.divergence)


def test_covariate_shift_small_classes_warn():
    pytest.importorskip("sklearn")  # covariate_shift needs scikit-learn
    rng = np.random.default_rng(6)
    xtr = rng.standard_normal((60, 2))
    ytr = np.repeat([0, 1, 2], 20)
    xte = rng.standard_normal((5, 2))
    yte = np.array([0, 0, 0, 0, 1])  # class 0: 4 points -> 2 components; 1: 1 point; 2: none
    with pytest.warns(DegenerateDataWarning) as record:
        r = covariate_shift(xtr, ytr, xte, yte, n_components=3, n_samples=200, rng=0)
    messages = " ".join(str(w.message) for w in record)
    assert "fitting 2 mixture component(s) instead of 3" in messages
    assert "[1, 2]" in messages
    assert r.components_test.tolist() == [2, 0, 0]
    assert np.isnan(r.divergence[1]) and np.isnan(r.divergence[2])
    assert r.overall == pytest.approx(r.divergence[0])
    assert r.to_dict()["divergence"][1] is None


# --------------------------------------------------------------------------- bad input

_XTR = np.array([[0.0, 0.0], [1.0, 0.0], [5.0, 5.0], [6.0, 5.0]])
_YTR = np.array([0, 0, 1, 1])
_XTE = np.array([[0.5, 0.0], [5.5, 5.0]])
_YTE = np.array([0, 1])
_P = np.array([[0.8, 0.2], [0.4, 0.6]])


@pytest.mark.parametrize("metric", [centroid_positioning, covariate_shift])
def test_train_test_metrics_reject_bad_input(metric):
    with pytest.raises(LabelwiseError, match="train_features and train_labels"):
        metric(_XTR, _YTR[:3], _XTE, _YTE)
    with pytest.raises(LabelwiseError, match="test_features and test_labels"):
        metric(_XTR, _YTR, _XTE, [0, 1, 1])
    with pytest.raises(LabelwiseError, match=r"test_labels.*\[2\].*no training features"):
        metric(_XTR, _YTR, _XTE, [0, 2])
    with pytest.raises(LabelwiseError, match="test_features must have as many features"):
        metric(_XTR, _YTR, _XTE[:, :1], _YTE)
    bad = _XTR.copy()
    bad[1, 0] = np.nan
    with pytest.raises(LabelwiseError, match="train_features must be finite"):
        metric(bad, _YTR, _XTE, _YTE)
    with pytest.raises(LabelwiseError, match="test_labels must be finite"):
        metric(_XTR, _YTR, _XTE, [0.0, np.nan])
    with pytest.raises(LabelwiseError, match="train_labels must be non-negative"):
        metric(_XTR, [0, 0, -1, 1], _XTE, _YTE)


def test_centroid_positioning_rejects_bad_radius():
    for radius in (0, -1.0, np.nan, np.inf, "wide"):
        with pytest.raises(LabelwiseError, match="radius"):
            centroid_positioning(_XTR, _YTR, _XTE, _YTE, radius=radius)


def test_covariate_shift_rejects_bad_settings():
    with pytest.raises(LabelwiseError, match="n_components"):
        covariate_shift(_XTR, _YTR, _XTE, _YTE, n_components=0)
    with pytest.raises(LabelwiseError, match="n_samples"):
        covariate_shift(_XTR, _YTR, _XTE, _YTE, n_samples=1)
    with pytest.raises(LabelwiseError, match="covariance_type"):
        covariate_shift(_XTR, _YTR, _XTE, _YTE, covariance_type="banded")


@pytest.mark.parametrize("metric", [boundary_conditioning, pairwise_boundary_conditioning])
def test_boundary_metrics_reject_bad_input(metric):
    with pytest.raises(LabelwiseError, match="lo must be below hi"):
        metric(_P, [0, 1], lo=0.7, hi=0.5)
    with pytest.raises(LabelwiseError, match="hi must be in"):
        metric(_P, [0, 1], lo=0.2, hi=1.5)
    with pytest.raises(LabelwiseError, match="lo must be in"):
        metric(_P, [0, 1], lo=-0.1, hi=0.5)
    with pytest.raises(LabelwiseError, match="lo must be in"):
        metric(_P, [0, 1], lo=np.nan, hi=0.5)
    with pytest.raises(LabelwiseError, match="probabilities and labels"):
        metric(_P, [0, 1, 1])
    with pytest.raises(LabelwiseError, match="probabilities must be finite"):
        metric(np.array([[np.nan, 0.5], [0.5, 0.5]]), [0, 1])
    with pytest.raises(LabelwiseError, match="not logits"):
        metric(np.array([[2.0, -1.0], [0.5, 0.5]]), [0, 1])
    with pytest.raises(LabelwiseError, match="sum to 1"):
        metric(np.array([[0.2, 0.2], [0.5, 0.5]]), [0, 1])
    with pytest.raises(
        LabelwiseError, match=r"labels must be classes in \[0, 2\).*got \[2\] at positions \[1\]"
    ):
        metric(_P, [0, 2])


def test_equivalence_partitioning_rejects_bad_input():
    with pytest.raises(LabelwiseError, match="n_classes must be >"):
        equivalence_partitioning([0, 1, 2], n_classes=2)
    with pytest.raises(LabelwiseError, match="labels must be finite"):
        equivalence_partitioning([0.0, np.nan])
    with pytest.raises(LabelwiseError, match="labels must be integer"):
        equivalence_partitioning([0.5, 1.0])
    with pytest.raises(LabelwiseError, match="labels must have at least 1 row"):
        equivalence_partitioning([])

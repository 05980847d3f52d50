"""Surprise adequacy (LSA, DSA, MDSA) and surprise coverage."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from labelwise.exceptions import DegenerateDataWarning, LabelwiseError
from labelwise.quality.surprise import DSA, LSA, MDSA, surprise_coverage

# ----------------------------------------------------------------------------- helpers


def _data(seed: int, n_train: int = 90, n_test: int = 40, d: int = 6, n_classes: int = 3):
    rng = np.random.default_rng(seed)
    centres = rng.normal(0, 3, size=(n_classes, d))
    y_train = np.arange(n_train) % n_classes
    y_test = rng.integers(0, n_classes, n_test)
    scales = rng.uniform(0.5, 2.0, size=d)
    x_train = centres[y_train] + rng.normal(size=(n_train, d)) * scales
    x_test = centres[y_test] + rng.normal(size=(n_test, d)) * scales * 1.5
    return x_train, y_train, x_test, y_test


def _dnn_tip():
    return pytest.importorskip("dnn_tip.surprise")


def _quiet(fn, *args, **kwargs):
    """Call dnn-tip, which warns about SciPy >= 1.10 and prints progress."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*args, **kwargs)


# ----------------------------------------------------------------------------- hand-computed


def test_dsa_points_on_a_line() -> None:
    train = np.array([[0.0], [1.0], [3.0], [10.0]])
    classes = np.array([0, 0, 1, 1])
    test = np.array([[1.5], [-2.0], [9.0], [4.0]])
    test_classes = np.array([0, 0, 1, 1])
    got = DSA().fit(train, classes).score(test, test_classes)
    # x=1.5: x_a=1 (0.5), x_a to class 1 -> 3 (2); x=-2: x_a=0 (2), 0 -> 3 (3);
    # x=9: x_a=10 (1), 10 -> 1 (9); x=4: x_a=3 (1), 3 -> 1 (2).
    np.testing.assert_allclose(got, [0.25, 2 / 3, 1 / 9, 0.5])


def test_dsa_duplicate_across_classes_warns_inf() -> None:
    train = np.array([[0.0], [0.0], [5.0]])
    dsa = DSA().fit(train, [0, 1, 1])
    with pytest.warns(DegenerateDataWarning, match="dist_b = 0"):
        got = dsa.score([[1.0]], [0])
    assert np.isinf(got[0])


def test_mdsa_hand_values() -> None:
    train = np.array([[-1.0], [1.0], [0.0], [2.0], [4.0]])
    classes = np.array([7, 7, 9, 9, 9])
    got = MDSA().fit(train, classes).score([[3.0], [6.0], [2.0]], [7, 9, 9])
    # class 7: mean 0, biased var 1 -> x^2; class 9: mean 2, biased var 8/3.
    np.testing.assert_allclose(got, [9.0, 16 / (8 / 3), 0.0])


def test_mdsa_without_classes_single_row_class_is_zero() -> None:
    got = MDSA().fit([[1.0, 2.0], [3.0, 2.0]]).score([[2.0, 2.0], [5.0, 2.0]])
    # mean (2, 2), biased variance 1 on the first neuron, 0 on the second (pseudo-inverse).
    np.testing.assert_allclose(got, [0.0, 9.0])
    assert MDSA().fit([[1.0, 2.0]], [0]).score([[4.0, 4.0]], [0])[0] == 0.0


def test_lsa_two_points_hand_value() -> None:
    lsa = LSA().fit([[0.0], [2.0]])
    h2 = 2.0 * 2.0 ** (-2 / 5)  # unbiased variance 2 times Scott's factor (n=2, d=1) squared
    expected = 1 / (2 * h2) + 0.5 * np.log(2 * np.pi * h2)  # equidistant from both points
    np.testing.assert_allclose(lsa.score([[1.0]]), [expected], rtol=1e-12)


def test_lsa_keeps_highest_variance_neurons_per_class() -> None:
    rng = np.random.default_rng(0)
    x = rng.normal(size=(40, 4)) * np.array([1.0, 5.0, 0.1, 3.0])
    y = np.repeat([0, 1], 20)
    x[y == 1] *= np.array([10.0, 0.01, 1.0, 1.0])  # class 1: neuron 0 wide, neuron 1 narrow
    lsa = LSA(max_features=2).fit(x, y)
    np.testing.assert_array_equal(lsa.kept_neurons(0), [1, 3])
    np.testing.assert_array_equal(lsa.kept_neurons(1), [0, 3])
    lsa = LSA(max_features=None, var_threshold=0.5).fit(x, y)
    np.testing.assert_array_equal(lsa.kept_neurons(0), [0, 1, 3])


def test_lsa_far_point_is_finite() -> None:
    x_train, _, _, _ = _data(1)
    got = LSA().fit(x_train).score(np.full((1, x_train.shape[1]), 1e3))
    assert np.isfinite(got[0]) and got[0] > 1e4


def test_lsa_all_neurons_filtered_warns_and_scores_zero() -> None:
    x = np.zeros((5, 2))
    x[:, 0] = [0, 1e-4, 0, 1e-4, 0]
    with pytest.warns(DegenerateDataWarning, match="removes every neuron"):
        lsa = LSA(max_features=None, var_threshold=1.0).fit(x)
    np.testing.assert_array_equal(lsa.score(np.ones((3, 2))), 0.0)


# ----------------------------------------------------------------------------- dnn-tip


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_lsa_matches_dnn_tip(seed: int) -> None:
    sa = _dnn_tip()
    x_train, y_train, x_test, y_test = _data(seed)
    x_train[:, 2] *= 1e-2  # a low-variance neuron, so the filters matter
    x_test[:, 2] *= 1e-2
    # plain LSA, default max_features=300 (keeps all 6 neurons)
    ref = _quiet(lambda: sa.LSA(x_train)(x_test))
    np.testing.assert_allclose(LSA().fit(x_train).score(x_test), ref, rtol=1e-9)
    # per class, top-4 variance neurons
    ref = _quiet(
        lambda: sa.MultiModalSA.build_by_class(
            x_train, y_train, lambda a, p: sa.LSA(a, max_features=4)
        )(x_test, y_test)
    )
    got = LSA(max_features=4).fit(x_train, y_train).score(x_test, y_test)
    np.testing.assert_allclose(got, ref, rtol=1e-9)
    # per class, variance threshold
    ref = _quiet(
        lambda: sa.MultiModalSA.build_by_class(
            x_train,
            y_train,
            lambda a, p: sa.LSA(a, var_threshold=1e-3, max_features=None),
        )(x_test, y_test)
    )
    got = LSA(max_features=None, var_threshold=1e-3).fit(x_train, y_train)
    np.testing.assert_allclose(got.score(x_test, y_test), ref, rtol=1e-9)
    assert np.isfinite(ref).all()


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_dsa_matches_dnn_tip(seed: int) -> None:
    sa = _dnn_tip()
    x_train, y_train, x_test, y_test = _data(seed, d=8)
    ref = _quiet(lambda: sa.DSA(x_train, y_train)(x_test, y_test, num_threads=1))
    got = DSA().fit(x_train, y_train).score(x_test, y_test)
    assert np.isfinite(ref).all()
    np.testing.assert_allclose(got, ref, rtol=1e-12)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_mdsa_matches_dnn_tip(seed: int) -> None:
    sa = _dnn_tip()
    x_train, y_train, x_test, y_test = _data(seed)
    ref = _quiet(lambda: sa.MDSA(x_train)(x_test))
    np.testing.assert_allclose(MDSA().fit(x_train).score(x_test), ref, rtol=1e-9)
    ref = _quiet(
        lambda: sa.MultiModalSA.build_by_class(x_train, y_train, lambda a, p: sa.MDSA(a))(
            x_test, y_test
        )
    )
    got = MDSA().fit(x_train, y_train).score(x_test, y_test)
    np.testing.assert_allclose(got, ref, rtol=1e-9)


@pytest.mark.parametrize("overflow", [False, True])
def test_coverage_matches_dnn_tip(overflow: bool) -> None:
    sa = _dnn_tip()
    values = np.random.default_rng(3).exponential(2.0, size=50)
    values[:3] = [0.0, 5.0, np.inf]
    mapper = sa.SurpriseCoverageMapper(20, 5.0, overflow_bucket=overflow)
    profile = mapper.get_coverage_profile(values)
    cov = surprise_coverage(values, upper=5.0, n_buckets=20, overflow_bucket=overflow)
    np.testing.assert_array_equal(cov.counts, profile.sum(axis=0))
    assert cov.value == pytest.approx(profile.any(axis=0).mean())


# ----------------------------------------------------------------------------- chunks


@pytest.mark.parametrize("cls", [LSA, DSA, MDSA])
def test_chunked_scoring_equals_one_shot(cls: type) -> None:
    x_train, y_train, x_test, y_test = _data(4)
    whole = cls(chunk_size=10_000).fit(x_train, y_train).score(x_test, y_test)
    for chunk in (1, 3, None):
        got = cls(chunk_size=chunk).fit(x_train, y_train).score(x_test, y_test)
        np.testing.assert_allclose(got, whole, rtol=1e-12, atol=1e-12)
    model = cls(chunk_size=7).fit(x_train, y_train)
    parts = [model.score(x_test[i : i + 9], y_test[i : i + 9]) for i in range(0, 40, 9)]
    np.testing.assert_allclose(np.concatenate(parts), whole, rtol=1e-12, atol=1e-12)
    assert model.score(np.empty((0, 6)), np.empty(0, dtype=int)).shape == (0,)


def test_higher_rank_activations_are_flattened() -> None:
    x_train, y_train, x_test, y_test = _data(5, d=6)
    flat = MDSA().fit(x_train, y_train).score(x_test, y_test)
    cube = MDSA().fit(x_train.reshape(-1, 2, 3), y_train)
    np.testing.assert_allclose(cube.score(x_test.reshape(-1, 2, 3), y_test), flat)


# ----------------------------------------------------------------------------- coverage


def test_coverage_hand_values() -> None:
    cov = surprise_coverage([0.05, 0.15, 0.15, 1.0, -1.0], upper=1.0, n_buckets=10)
    assert cov.n_covered == 2 and cov.value == pytest.approx(0.2)
    assert cov.counts.tolist() == [1, 2, 0, 0, 0, 0, 0, 0, 0, 0]
    cov = surprise_coverage([0.05, 7.0], upper=1.0, n_buckets=2, overflow_bucket=True)
    assert cov.counts.tolist() == [1, 1] and cov.value == 1.0
    assert cov.to_dict()["n_buckets"] == 2


# ----------------------------------------------------------------------------- bad input


@pytest.mark.parametrize("cls", [LSA, DSA, MDSA])
def test_bad_inputs_raise(cls: type) -> None:
    x_train, y_train, x_test, y_test = _data(6)
    with pytest.raises(LabelwiseError, match="fitted before score"):
        cls().score(x_test, y_test)
    model = cls().fit(x_train, y_train)
    with pytest.raises(LabelwiseError, match="neurons like train_acts"):
        model.score(x_test[:, :4], y_test)
    bad = x_test.copy()
    bad[3, 1] = np.nan
    with pytest.raises(LabelwiseError, match="finite"):
        model.score(bad, y_test)
    bad_train = x_train.copy()
    bad_train[0, 0] = np.inf
    with pytest.raises(LabelwiseError, match="finite"):
        cls().fit(bad_train, y_train)
    with pytest.raises(LabelwiseError, match="unseen class"):
        model.score(x_test, np.full(len(x_test), 5))
    with pytest.raises(LabelwiseError, match="one label per row"):
        cls().fit(x_train, y_train[:-1])
    with pytest.raises(LabelwiseError, match="one label per row"):
        model.score(x_test, y_test[:-1])
    with pytest.raises(LabelwiseError, match="test_classes must be given"):
        model.score(x_test)
    with pytest.raises(LabelwiseError, match="integer class labels"):
        cls().fit(x_train, y_train + 0.5)
    with pytest.raises(LabelwiseError, match="must be"):
        cls().fit(x_train[:, 0], y_train)
    with pytest.raises(LabelwiseError, match="chunk_size"):
        cls(chunk_size=0)


def test_model_specific_errors() -> None:
    x_train, _, x_test, _ = _data(7)
    with pytest.raises(LabelwiseError, match="needs train_classes"):
        DSA().fit(x_train)
    with pytest.raises(LabelwiseError, match="at least 2 classes"):
        DSA().fit(x_train, np.zeros(len(x_train), dtype=int))
    with pytest.raises(LabelwiseError, match="test_classes must be None"):
        MDSA().fit(x_train).score(x_test, np.zeros(len(x_test), dtype=int))
    with pytest.raises(LabelwiseError, match="both be set"):
        LSA(var_threshold=1e-5)
    with pytest.raises(LabelwiseError, match="max_features"):
        LSA(max_features=1.5)
    with pytest.raises(LabelwiseError, match="singular"):
        LSA().fit(x_train[:5])  # 5 rows, 6 neurons: singular covariance
    with pytest.raises(LabelwiseError, match="at least 2 rows"):
        LSA().fit(x_train[:3], [0, 1, 1])
    with pytest.raises(LabelwiseError, match="NaN"):
        surprise_coverage([0.1, np.nan], upper=1.0, n_buckets=4)
    with pytest.raises(LabelwiseError, match="upper"):
        surprise_coverage([0.1], upper=0.0, n_buckets=4)
    with pytest.raises(LabelwiseError, match="n_buckets"):
        surprise_coverage([0.1], upper=1.0, n_buckets=1, overflow_bucket=True)

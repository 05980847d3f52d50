"""Kernel MMD covariate shift (labelwise.quality.shift): calibration, power, bad input."""

from __future__ import annotations

import numpy as np
import pytest

from labelwise.exceptions import DegenerateDataWarning, LabelwiseError
from labelwise.quality.shift import mmd_shift, mmd_test


def relu_like(rng: np.random.Generator, n: int, d: int, shift: float = 0.0) -> np.ndarray:
    """Zero-inflated features like ReLU activations (about half exact zeros)."""
    return np.maximum(rng.standard_normal((n, d)) + shift, 0.0)


@pytest.mark.parametrize("kind", ["gaussian", "relu"])
def test_null_rejection_rate_is_about_level(kind: str) -> None:
    rng = np.random.default_rng(123)
    rejected = 0
    reps = 200
    for rep in range(reps):
        if kind == "gaussian":
            x, y = rng.standard_normal((20, 5)), rng.standard_normal((15, 5))
        else:
            x, y = relu_like(rng, 20, 5), relu_like(rng, 15, 5)
        rejected += mmd_test(x, y, n_permutations=99, rng=rep).shifted
    # 5 % expected: binomial sd over 200 reps is 1.5 %, so [1 %, 10 %] is about +-3 sd
    assert 0.01 <= rejected / reps <= 0.10


def test_power_against_a_mean_shift() -> None:
    rng = np.random.default_rng(7)
    rejected = sum(
        mmd_test(
            rng.standard_normal((30, 5)),
            rng.standard_normal((30, 5)) + 0.8,
            n_permutations=99,
            rng=rep,
        ).shifted
        for rep in range(40)
    )
    assert rejected >= 36  # power well above 90 % for a 0.8 sd shift in every feature


def test_statistic_and_p_value_fields() -> None:
    rng = np.random.default_rng(1)  # a null draw; the rejection rate is tested above
    same = mmd_test(rng.standard_normal((50, 3)), rng.standard_normal((40, 3)), rng=1)
    far = mmd_test(rng.standard_normal((50, 3)), rng.standard_normal((40, 3)) + 3, rng=1)
    assert abs(same.statistic) < 0.05 and same.p_value > 0.05 and not same.shifted
    assert far.statistic > 0.5 and far.p_value == pytest.approx(1 / 501) and far.shifted
    assert (far.statistic - far.null_mean) / far.null_std > 10
    assert far.n_x == 50 and far.n_y == 40 and far.bandwidth > 0
    assert mmd_test(rng.standard_normal((50, 3)), rng.standard_normal((40, 3)), rng=2).to_dict()[
        "metric"
    ] == ("mmd_test")
    # seeded: the same seed gives the same p-value
    x, y = rng.standard_normal((30, 3)), rng.standard_normal((30, 3))
    assert mmd_test(x, y, rng=5).p_value == mmd_test(x, y, rng=5).p_value


def class_data(
    rng: np.random.Generator, n: int, shift_classes: tuple[int, ...] = (), shift: float = 0.0
) -> tuple[np.ndarray, np.ndarray]:
    y = np.repeat(np.arange(4), n)
    x = relu_like(rng, y.size, 16) + 3.0 * (y[:, None] == np.arange(16)[None, :] % 4)
    for c in shift_classes:
        x[y == c, :4] += shift
    return x, y


def test_mmd_shift_flags_only_the_shifted_classes() -> None:
    rng = np.random.default_rng(3)
    xtr, ytr = class_data(rng, 80)
    clean = mmd_shift(xtr, ytr, *class_data(rng, 60), rng=0)
    assert clean.shifted.sum() == 0 and not clean.overall_shifted and clean.overall_p > 0.05
    shifted = mmd_shift(xtr, ytr, *class_data(rng, 60, shift_classes=(1, 3), shift=1.5), rng=0)
    assert shifted.shifted.tolist() == [False, True, False, True]
    assert shifted.overall_shifted and shifted.overall_statistic > 5 * abs(clean.overall_statistic)
    assert np.all(shifted.adjusted_p >= shifted.p_value)
    assert not shifted.statistic.flags.writeable
    d = shifted.to_dict()
    assert d["metric"] == "mmd_shift" and d["shifted"] == [False, True, False, True]


def test_mmd_shift_on_patch_occluded_digits() -> None:
    """Clean held-out digits are not flagged, patch-occluded ones are (features: raw pixels)."""
    pytest.importorskip("sklearn")
    from labelwise.experiments.digits import apply_shift, load_digit_images

    images, labels = load_digit_images()
    rng = np.random.default_rng(0)
    order = rng.permutation(labels.size)
    tr, te = order[: labels.size // 2], order[labels.size // 2 :]
    xtr, ytr = images[tr].reshape(tr.size, -1), labels[tr]
    clean = mmd_shift(xtr, ytr, images[te].reshape(te.size, -1), labels[te], rng=0)
    patched = apply_shift(images[te], "patch", rng=np.random.default_rng([0, 1]))
    shifted = mmd_shift(xtr, ytr, patched.reshape(te.size, -1), labels[te], rng=0)
    assert clean.overall_p > 0.05 and clean.shifted.sum() == 0
    assert shifted.overall_p < 0.01 and shifted.shifted.sum() >= 1
    assert shifted.overall_statistic > 5 * abs(clean.overall_statistic)


def test_small_classes_are_nan_with_a_warning() -> None:
    rng = np.random.default_rng(0)
    xtr, ytr = rng.standard_normal((40, 3)), np.repeat([0, 1], 20)
    xte, yte = rng.standard_normal((21, 3)), np.r_[np.zeros(20, int), 1]
    with pytest.warns(DegenerateDataWarning, match=r"class\(es\) \[1\]"):
        r = mmd_shift(xtr, ytr, xte, yte, n_permutations=50, rng=0)
    assert np.isnan(r.statistic[1]) and np.isnan(r.p_value[1]) and not r.shifted[1]
    assert np.isfinite(r.overall_p)


def test_subsampling_caps_rows() -> None:
    rng = np.random.default_rng(0)
    r = mmd_test(rng.standard_normal((300, 2)), rng.standard_normal((200, 2)), max_rows=50, rng=0)
    assert (r.n_x, r.n_y) == (50, 50)
    xtr, ytr = rng.standard_normal((300, 2)), np.zeros(300, int)
    s = mmd_shift(xtr, ytr, xtr[:100], ytr[:100], max_per_class=40, n_permutations=20, rng=0)
    assert s.n_used.tolist() == [40] and s.n_test.tolist() == [100]


def test_constant_features_do_not_crash() -> None:
    x = np.zeros((10, 4))
    r = mmd_test(x, x.copy(), n_permutations=20, rng=0)
    assert r.statistic == pytest.approx(0.0) and r.p_value == 1.0 and not r.shifted


@pytest.mark.parametrize(
    ("x", "y", "kwargs", "match"),
    [
        (np.zeros((5, 3)), np.zeros((5, 4)), {}, "y must have as many features per row as x"),
        (np.zeros((1, 3)), np.zeros((5, 3)), {}, "x must have at least 2 row"),
        (np.zeros((5, 3)), np.full((5, 3), np.nan), {}, "y must be finite"),
        (np.zeros((5, 3)), np.zeros((5, 3)), {"n_permutations": 0}, "n_permutations must be"),
        (np.zeros((5, 3)), np.zeros((5, 3)), {"level": 1.5}, "level must be in"),
        (np.zeros((5, 3)), np.zeros((5, 3)), {"max_rows": 1}, "max_rows must be"),
    ],
)
def test_bad_input(x: np.ndarray, y: np.ndarray, kwargs: dict, match: str) -> None:
    with pytest.raises(LabelwiseError, match=match):
        mmd_test(x, y, **kwargs)


def test_bad_input_per_class() -> None:
    x, y = np.zeros((6, 3)), np.array([0, 0, 0, 1, 1, 1])
    with pytest.raises(LabelwiseError, match="test_features must have as many features"):
        mmd_shift(x, y, np.zeros((6, 2)), y)
    with pytest.raises(LabelwiseError, match="test_features must be finite"):
        mmd_shift(x, y, np.full((6, 3), np.nan), y)
    with pytest.raises(LabelwiseError, match="max_per_class must be"):
        mmd_shift(x, y, x, y, max_per_class=1)

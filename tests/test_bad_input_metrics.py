"""Bad input to the dependability and quality metrics: clear errors, not wrong numbers.

Found by a robustness sweep: features beyond float64's squaring range made the MMD test
report a shift from a NaN statistic, NBC/SNAC silently drop to 0 and LSA/MDSA/covariate_shift
crash in NumPy or SciPy; fractional labels were truncated by the dependability report; labels
outside the score columns were counted as wrong answers; one stray class id or bucket count
allocated gigabytes.
"""

from __future__ import annotations

import numpy as np
import pytest

import labelwise as lw
import labelwise.dependability as d
import labelwise.quality as q
from labelwise.dependability.report import dependability_report

GEN = np.random.default_rng(0)
X = GEN.normal(size=(60, 4))
Y = GEN.normal(size=(20, 4)) + 3
YTR = np.arange(60) % 3
YTE = np.arange(20) % 3


@pytest.mark.parametrize(
    "call",
    [
        lambda s: q.mmd_test(X * s, X[::-1][:20] * s, n_permutations=20, rng=0),
        lambda s: q.nbc(X * s, Y * s),
        lambda s: q.LSA().fit(X * s).score(Y * s),
        lambda s: q.MDSA().fit(X * s, YTR).score(Y * s, YTE),
        lambda s: q.covariate_shift(X * s, YTR, Y * s, YTE, n_samples=50, rng=0),
    ],
)
def test_features_beyond_the_squaring_range_are_refused(call) -> None:  # type: ignore[no-untyped-def]
    call(1e100)  # large but squarable: computed
    with pytest.raises(lw.LabelwiseError, match="rescale the features"):
        call(1e155)


def test_nbc_is_scale_invariant_up_to_the_limit() -> None:
    assert q.nbc(X * 1e100, Y * 1e100).value == q.nbc(X, Y).value


def test_labels_are_checked_by_the_dependability_metrics() -> None:
    probs = GEN.dirichlet(np.ones(3), 30)
    acts = GEN.normal(size=(30, 6))
    y = GEN.integers(0, 3, 30)
    with pytest.raises(lw.LabelwiseError, match="integer class labels"):
        dependability_report(labels=y + 0.5, probabilities=probs, activations=acts)
    scores = np.array([[0.9, 0.1], [0.2, 0.8]])
    with pytest.raises(
        lw.LabelwiseError,
        match=r"labels must be classes in \[0, 2\) \(the 2 score columns\), got \[7, 7\] at "
        r"positions \[0, 1\]; are the labels of another model",
    ):
        d.scenario_performance([7, 7], scores, ["a", "a"])
    assert d.scenario_performance([0, 1], scores, ["a", "a"]).accuracy == 1.0


def test_one_stray_id_does_not_allocate_gigabytes() -> None:
    with pytest.raises(lw.LabelwiseError, match="map class ids to indices"):
        q.equivalence_partitioning([0, 1, 10**12])
    with pytest.raises(lw.LabelwiseError, match="n_buckets must be"):
        q.surprise_coverage(np.array([1.0]), upper=5, n_buckets=10**9)


def test_mmd_does_not_move_with_a_common_offset() -> None:
    a = GEN.normal(size=(100, 8))
    b = GEN.normal(size=(100, 8)) + 0.5
    base = q.mmd_test(a, b, n_permutations=100, rng=0)
    far = q.mmd_test(a + 1e8, b + 1e8, n_permutations=100, rng=0)
    assert far.statistic == pytest.approx(base.statistic, rel=1e-6)
    assert far.bandwidth == pytest.approx(base.bandwidth, rel=1e-6)
    assert far.p_value == base.p_value


@pytest.mark.parametrize("scale", [1e-170, 1e-300, 3.0, 1e100])
def test_dsa_is_scale_invariant_at_any_magnitude(scale: float) -> None:
    """1e-170 underflowed in cdist's squares: dist_b = 0, DSA inf/NaN blamed on duplicates."""
    rng = np.random.default_rng(0)
    x, c = rng.normal(size=(200, 5)), rng.integers(0, 3, 200)
    t, tc = rng.normal(size=(50, 5)), rng.integers(0, 3, 50)
    base = q.DSA().fit(x, c).score(t, tc)
    scaled = q.DSA().fit(x * scale, c).score(t * scale, tc)  # no warning (warnings are errors)
    np.testing.assert_allclose(scaled, base, rtol=1e-12)
    assert np.isfinite(scaled).all()


def test_severity_weights_too_large_to_count_are_refused() -> None:
    """Weights of 1e308 gave a weighted error of inf and a weighted accuracy of -inf."""
    with pytest.raises(lw.LabelwiseError, match="rescale them"):
        d.SeverityMatrix(np.array([[0.0, 1e308], [1e308, 0.0]]))
    sev = d.SeverityMatrix(np.array([[0.0, 1e150], [5e149, 0.0]]))
    res = d.weighted_confusion([0, 0, 1, 1], [1, 1, 1, 0], sev)
    assert res.normalised_weighted_error == pytest.approx(0.625)

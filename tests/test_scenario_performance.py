"""Scenario-based performance degradation (Cheng et al. 2018, Sec. II-E)."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import labelwise as lw
from labelwise.dependability.degradation import scenario_performance

# 8 inputs, 3 scenarios: sunny 3/3 correct, rainy 1/3, foggy 1/2; overall 5/8
LABELS = [0, 1, 2, 0, 1, 2, 0, 1]
PREDS = [0, 1, 2, 1, 1, 0, 0, 2]
WEATHER = ["sunny", "sunny", "sunny", "rainy", "rainy", "rainy", "foggy", "foggy"]


def test_hand_computed_per_scenario_accuracy() -> None:
    r = scenario_performance(LABELS, PREDS, WEATHER)
    assert r.scenarios == ("foggy", "rainy", "sunny")  # sorted
    np.testing.assert_array_equal(r.n, [2, 3, 3])
    np.testing.assert_array_equal(r.n_correct, [1, 1, 3])
    np.testing.assert_allclose(r.accuracy, [1 / 2, 1 / 3, 1.0])
    assert r.overall_accuracy == pytest.approx(5 / 8)
    assert r.n_total == 8
    np.testing.assert_allclose(r.degradation, [5 / 8 - 1 / 2, 5 / 8 - 1 / 3, 5 / 8 - 1])
    assert r.coverage is None and r.discounted_accuracy is None
    assert r.conditions is None
    assert r.notes == ()


def test_wilson_intervals_match_labelwise() -> None:
    r = scenario_performance(LABELS, PREDS, WEATHER, confidence=0.9)
    for k, (c, n) in enumerate(zip(r.n_correct, r.n, strict=True)):
        assert (r.ci_low[k], r.ci_high[k]) == lw.wilson_interval(int(c), int(n), 0.9)
    assert (r.overall_ci_low, r.overall_ci_high) == lw.wilson_interval(5, 8, 0.9)
    assert r.confidence == 0.9


def test_wilson_interval_by_hand() -> None:
    # 1 of 3 correct, z = 1.959964: centre (1/3 + z²/6) / (1 + z²/3) = 0.426923,
    # half-width sqrt(z² (1/3)(2/3)/3 + z⁴/36) / (1 + z²/3) = 0.365424
    r = scenario_performance(LABELS, PREDS, WEATHER)
    z2 = 1.959963984540054**2
    centre = (1 / 3 + z2 / 6) / (1 + z2 / 3)
    half = math.sqrt(z2 * (2 / 9) / 3 + z2**2 / 36) / (1 + z2 / 3)
    assert r.scenario("rainy")["ci_low"] == pytest.approx(centre - half)
    assert r.scenario("rainy")["ci_high"] == pytest.approx(centre + half)
    assert centre - half == pytest.approx(0.0615, abs=1e-4)


@pytest.mark.parametrize("coverage", [0.0, 6 / 21, 0.5, 1.0])
def test_coverage_discount(coverage: float) -> None:
    r = scenario_performance(LABELS, PREDS, WEATHER, coverage=coverage)
    lo, hi = lw.wilson_interval(5, 8)
    assert r.coverage == coverage
    assert r.discounted_accuracy == pytest.approx(coverage * 5 / 8)
    assert r.discounted_ci_low == pytest.approx(coverage * lo)
    assert r.discounted_ci_high == pytest.approx(coverage * hi)
    # the per-scenario figures do not change
    np.testing.assert_allclose(r.accuracy, [1 / 2, 1 / 3, 1.0])


def test_paper_figure2_coverage_as_discount() -> None:
    # Sec. II-A: two inputs cover (2 + 2 + 2) / (9 + 6 + 6) of the 2-projection cells
    cov = (2 + 2 + 2) / (9 + 6 + 6)
    scen = [("sunny", "stone", "straight"), ("rainy", "tarmac", "curvy")] * 3
    r = scenario_performance([1] * 6, [1, 1, 1, 1, 1, 0], scen, coverage=cov)
    assert r.overall_accuracy == pytest.approx(5 / 6)
    assert r.discounted_accuracy == pytest.approx(cov * 5 / 6)


def test_condition_table_forms_agree() -> None:
    weather = ["s", "s", "r", "r", "s", "r", "s", "r"]
    road = ["mud", "mud", "tar", "tar", "tar", "mud", "tar", "mud"]
    y, p = [0, 1, 1, 0, 1, 2, 2, 2], [0, 1, 0, 0, 1, 1, 2, 2]
    rows = list(zip(weather, road, strict=True))
    forms = [
        rows,
        [list(r) for r in rows],
        np.array(rows),
        {"weather": weather, "road": road},
    ]
    results = [scenario_performance(y, p, f) for f in forms]
    for r in results:
        assert r.scenarios == (("r", "mud"), ("r", "tar"), ("s", "mud"), ("s", "tar"))
        np.testing.assert_array_equal(r.n, [2, 2, 2, 2])
        np.testing.assert_array_equal(r.n_correct, [1, 1, 2, 2])
    assert results[-1].conditions == ("weather", "road")
    assert results[0].conditions is None


def test_numeric_condition_rows_and_scenario_lookup() -> None:
    table = np.array([[0, 1], [0, 1], [1, 0], [1, 0]])
    r = scenario_performance([1, 1, 0, 0], [1, 0, 0, 0], table)
    assert r.scenarios == ((0, 1), (1, 0))
    assert all(type(v) is int for s in r.scenarios for v in s)  # plain Python, not NumPy
    assert r.scenario([0, 1])["accuracy"] == 0.5
    assert r.scenario((1, 0))["n_correct"] == 2
    with pytest.raises(lw.LabelwiseError, match="not among"):
        r.scenario((2, 2))


def test_single_input_scenario_warns_but_reports() -> None:
    with pytest.warns(lw.DegenerateDataWarning, match="single input.*'lonely'"):
        r = scenario_performance([0, 0, 1], [0, 1, 1], ["a", "a", "lonely"])
    k = r.scenarios.index("lonely")
    assert r.n[k] == 1 and r.accuracy[k] == 1.0
    assert (r.ci_low[k], r.ci_high[k]) == lw.wilson_interval(1, 1)
    assert r.ci_low[k] < 0.25  # a single input says little
    assert r.notes


def test_string_labels_and_score_predictions() -> None:
    r = scenario_performance(["cat", "dog", "dog"], ["cat", "cat", "dog"], ["a", "a", "a"])
    assert r.overall_accuracy == pytest.approx(2 / 3)
    scores = np.array([[0.9, 0.1], [0.2, 0.8], [0.6, 0.4], [0.3, 0.7]])
    r = scenario_performance([0, 1, 1, 1], scores, ["x", "x", "y", "y"])
    np.testing.assert_array_equal(r.n_correct, [2, 1])


def test_unorderable_scenarios_keep_first_appearance() -> None:
    r = scenario_performance([0, 0, 0, 0], [0, 0, 0, 1], ["b", 2, "b", 2])
    assert r.scenarios == ("b", 2)


def test_result_is_frozen_serialisable_and_prints() -> None:
    rows = [("sunny", "mud"), ("sunny", "mud"), ("rainy", "tar"), ("rainy", "tar")]
    r = scenario_performance([0, 1, 1, 0], [0, 1, 0, 0], rows, coverage=0.5)
    with pytest.raises(dataclasses.FrozenInstanceError):
        r.overall_accuracy = 1.0  # type: ignore[misc]
    assert not r.accuracy.flags.writeable
    d = json.loads(json.dumps(r.to_dict(), allow_nan=False))
    assert d["scenarios"][0]["scenario"] == ["rainy", "tar"]
    assert d["overall"]["accuracy"] == 0.75
    assert d["discounted"]["accuracy"] == 0.375
    text = r.table()
    for word in ("rainy / tar", "sunny / mud", "overall", "0.7500", "coverage", "0.3750"):
        assert word in text
    assert len(r) == 2


# --- bad input -------------------------------------------------------------------------------


@pytest.mark.parametrize("coverage", [-0.1, 1.5, float("nan"), True, "high"])
def test_bad_coverage_raises(coverage: object) -> None:
    with pytest.raises(lw.LabelwiseError, match="coverage"):
        scenario_performance([0, 1], [0, 1], ["a", "a"], coverage=coverage)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("labels", "preds", "scen", "match"),
    [
        ([0, 1, 1], [0, 1], ["a"] * 3, "predictions must have one entry per label"),
        ([0, 1], [0, 1], ["a"] * 3, "scenarios must have one entry per input"),
        ([0, 1], [0, 1], {"w": ["a"], "r": ["b", "c"]}, "scenarios column 'w'"),
        ([], [], [], "labels must hold at least one input"),
        ([0, 1], ["0", "1"], ["a", "a"], "same kind"),
        ([0, np.nan], [0, 1], ["a", "a"], "labels must be finite"),
        ([[0, 1]], [0, 1], ["a", "a"], "labels must be 1-D"),
        ([0, 1], [0, 1], "ab", "single string"),
        ([0, 1], [0, 1], [float("nan"), 1.0], "NaN"),
        ([0, 1], [0, 1], [("a", float("nan")), ("a", 1.0)], "NaN"),
        ([0, 1], [0, 1], [{"a": 1}, {"a": 2}], "hashable"),
        ([0, 1], [0, 1], np.zeros((2, 2, 2)), "condition table"),
        (["a", "b"], np.ones((2, 2)), ["x", "x"], "integer class indices"),
    ],
)
def test_bad_input_raises(labels: object, preds: object, scen: object, match: str) -> None:
    with pytest.raises(lw.LabelwiseError, match=match):
        scenario_performance(labels, preds, scen)  # type: ignore[arg-type]


@pytest.mark.parametrize("confidence", [0.0, 1.0, 1.5, "x"])
def test_bad_confidence_raises(confidence: object) -> None:
    with pytest.raises(lw.LabelwiseError, match="confidence"):
        scenario_performance([0], [0], ["a"], confidence=confidence)  # type: ignore[arg-type]


# --- properties ------------------------------------------------------------------------------


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.tuples(st.booleans(), st.integers(0, 4)), min_size=1, max_size=60),
    st.floats(0.0, 1.0),
)
def test_properties(rows: list[tuple[bool, int]], coverage: float) -> None:
    correct = np.array([c for c, _ in rows], dtype=np.int64)
    scen = [s for _, s in rows]
    labels = np.zeros(len(rows), dtype=np.int64)
    preds = 1 - correct
    counts = np.bincount(scen)
    single = bool((counts == 1).any())
    with pytest.warns(lw.DegenerateDataWarning) if single else contextlib.nullcontext():
        r = scenario_performance(labels, preds, scen, coverage=coverage)
    assert r.n.sum() == len(rows)
    # the overall accuracy is the n-weighted mean of the per-scenario accuracies
    assert float(np.sum(r.n * r.accuracy) / r.n.sum()) == pytest.approx(r.overall_accuracy)
    assert np.all((r.ci_low <= r.accuracy + 1e-12) & (r.accuracy <= r.ci_high + 1e-12))
    assert np.all((r.ci_low >= 0) & (r.ci_high <= 1))
    assert r.discounted_accuracy is not None
    assert 0.0 <= r.discounted_accuracy <= r.overall_accuracy + 1e-12
    # input order does not matter
    perm = np.random.default_rng(len(rows)).permutation(len(rows))
    with pytest.warns(lw.DegenerateDataWarning) if single else contextlib.nullcontext():
        r2 = scenario_performance(labels[perm], preds[perm], [scen[i] for i in perm])
    assert r2.scenarios == r.scenarios
    np.testing.assert_array_equal(r2.n_correct, r.n_correct)

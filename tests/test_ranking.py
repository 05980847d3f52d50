"""Ranking models on labelled inputs and the comparison statistics (Meng et al. 2021, Sec. IV)."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest
from scipy import stats

import labelwise as lw

# Fig. 2: right (1) / wrong (0) of M1..M3 on s1..s6.
FIG2_RIGHT = np.array(
    [
        [1, 1, 1, 1, 0, 0],  # M1: 4/6
        [1, 0, 0, 1, 0, 1],  # M2: 3/6
        [0, 0, 1, 0, 0, 1],  # M3: 2/6
    ],
    dtype=bool,
)
FIG2_LABELS = np.array([3, 1, 4, 1, 5, 9])


def _predictions(right: np.ndarray, labels: np.ndarray, n_classes: int = 10) -> np.ndarray:
    """Predicted labels: the label where ``right``, another class where not."""
    return np.where(right, labels[None, :], (labels[None, :] + 1) % n_classes)


FIG2 = _predictions(FIG2_RIGHT, FIG2_LABELS)


# --- rank_models --------------------------------------------------------------------------


def test_paper_fig2_example() -> None:
    r = lw.rank_models(FIG2, FIG2_LABELS, rng=0)
    assert r.accuracy.tolist() == pytest.approx([4 / 6, 3 / 6, 2 / 6])
    assert r.n_correct.tolist() == [4, 3, 2]
    assert r.rank.tolist() == [1, 2, 3]
    assert r.order.tolist() == [0, 1, 2]
    assert r.model_names == ("M1", "M2", "M3")
    assert r.n_labelled == 6
    for i, c in enumerate([4, 3, 2]):
        lo, hi = lw.wilson_interval(c, 6, 0.95)
        assert (r.ci_low[i], r.ci_high[i]) == pytest.approx((lo, hi))
    assert r.prob_better.shape == (2,)
    assert np.all((r.prob_better >= 0) & (r.prob_better <= 1))


def test_fig2_best_subset_s1_s2_gives_the_same_rank() -> None:
    # S* = {s1, s2}: M1 2/2, M2 1/2, M3 0/2.
    r = lw.rank_models(FIG2, FIG2_LABELS[[0, 1]], rows=[0, 1], rng=0)
    assert r.accuracy.tolist() == [1.0, 0.5, 0.0]
    assert r.rank.tolist() == [1, 2, 3]


def test_rows_in_any_order_with_matching_labels() -> None:
    rows = np.array([5, 0, 3])
    r = lw.rank_models(FIG2, FIG2_LABELS[rows], rows=rows, rng=0)
    # s6, s1, s4: M1 (0,1,1) = 2/3, M2 (1,1,1) = 3/3, M3 (1,0,0) = 1/3.
    assert r.n_correct.tolist() == [2, 3, 1]
    assert r.rank.tolist() == [2, 1, 3]
    assert r.order.tolist() == [1, 0, 2]


def test_rows_from_a_selection() -> None:
    sel = lw.srs_select(6, 4, rng=1)
    a = lw.rank_models(FIG2, FIG2_LABELS[sel.indices], rows=sel, rng=0)
    b = lw.rank_models(FIG2, FIG2_LABELS[sel.indices], rows=sel.indices, rng=0)
    assert np.array_equal(a.n_correct, b.n_correct)
    with pytest.raises(lw.LabelwiseError, match="rows"):
        lw.rank_models(FIG2, [0, 0, 0, 0], rows=lw.srs_select(7, 4, rng=1))


def test_probabilities_are_argmaxed() -> None:
    probs = np.eye(10)[FIG2]
    r = lw.rank_models(probs, FIG2_LABELS, rng=0)
    assert r.n_correct.tolist() == [4, 3, 2]


def test_ties_share_the_smallest_rank_and_are_ordered_by_index() -> None:
    right = np.array([[1, 0, 1, 0], [1, 1, 1, 0], [0, 1, 1, 0], [1, 1, 0, 1]], dtype=bool)
    labels = np.zeros(4, dtype=int)
    r = lw.rank_models(_predictions(right, labels), labels, rng=0)
    # Accuracies 2/4, 3/4, 2/4, 3/4 -> ranks 3, 1, 3, 1; order M2, M4, M1, M3.
    assert r.rank.tolist() == [3, 1, 3, 1]
    assert r.order.tolist() == [1, 3, 0, 2]


def test_identical_models_are_a_coin_flip() -> None:
    right = np.tile([1, 0, 1, 1, 0], (2, 1)).astype(bool)
    labels = np.arange(5)
    r = lw.rank_models(_predictions(right, labels), labels, rng=0)
    assert r.prob_better.tolist() == [0.5]
    assert r.rank.tolist() == [1, 1]


def test_clearly_better_model_has_probability_near_one() -> None:
    rng = np.random.default_rng(3)
    labels = rng.integers(0, 10, 200)
    right = np.stack([rng.random(200) < 0.95, rng.random(200) < 0.5])
    r = lw.rank_models(_predictions(right, labels), labels, rng=0)
    assert r.order.tolist() == [0, 1]
    assert r.prob_better[0] > 0.999


def test_bootstrap_probability_small_hand_case() -> None:
    # Row 1: A right, B wrong; row 2: both right. A resample of 2 rows has k copies of row 1,
    # k ~ Bin(2, 1/2): k = 0 (prob 1/4) is a tie, else A wins: P = 3/4 + 1/8 = 0.875.
    right = np.array([[1, 1], [0, 1]], dtype=bool)
    labels = np.array([0, 0])
    r = lw.rank_models(_predictions(right, labels), labels, n_bootstrap=40_000, rng=1)
    assert r.prob_better[0] == pytest.approx(0.875, abs=0.01)
    # One row where A is right and B wrong: every resample has A ahead.
    r1 = lw.rank_models(_predictions(right[:, :1], labels[:1]), labels[:1], rng=1)
    assert r1.prob_better.tolist() == [1.0]


def test_bootstrap_matches_resampling_rows() -> None:
    """The multinomial shortcut against plain paired resampling of the labelled rows."""
    rng = np.random.default_rng(11)
    n = 40
    labels = rng.integers(0, 3, n)
    right = np.stack([rng.random(n) < 0.7, rng.random(n) < 0.6, rng.random(n) < 0.55])
    r = lw.rank_models(_predictions(right, labels, 3), labels, n_bootstrap=20_000, rng=2)
    idx = rng.integers(0, n, size=(20_000, n))
    for pos, (a, b) in enumerate(zip(r.order[:-1], r.order[1:], strict=True)):
        diff = right[a][idx].sum(axis=1) - right[b][idx].sum(axis=1)
        want = np.mean(diff > 0) + 0.5 * np.mean(diff == 0)
        assert r.prob_better[pos] == pytest.approx(want, abs=0.015)


def test_reproducible_and_serialisable() -> None:
    a = lw.rank_models(FIG2, FIG2_LABELS, rng=5, model_names=["a", "b", "c"])
    b = lw.rank_models(FIG2, FIG2_LABELS, rng=5, model_names=["a", "b", "c"])
    assert np.array_equal(a.prob_better, b.prob_better)
    d = json.loads(json.dumps(a.to_dict()))
    assert d["model_names"] == ["a", "b", "c"]
    assert d["rank"] == [1, 2, 3]
    assert len(a) == 3
    with pytest.raises(ValueError):
        a.accuracy[0] = 0.0


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"labels": [0, 1, 2]}, "labels"),  # not N labels, no rows
        ({"labels": [0, 1], "rows": [0, 1, 2]}, "labels"),
        ({"labels": [-1, 0, 0, 0, 0, 0]}, "labels"),
        ({"labels": [0.5, 0, 0, 0, 0, 0]}, "labels"),
        ({"labels": [0, 0], "rows": [0, 0]}, "rows"),
        ({"labels": [0, 0], "rows": [0, 6]}, "rows"),
        ({"labels": [0, 0], "rows": [0.0, 1.0]}, "rows"),
        ({"labels": FIG2_LABELS, "model_names": ["a"]}, "model_names"),
        ({"labels": FIG2_LABELS, "n_bootstrap": 0}, "n_bootstrap"),
        ({"labels": FIG2_LABELS, "confidence": 1.5}, "confidence"),
    ],
)
def test_bad_input_is_an_error(kwargs: dict[str, Any], match: str) -> None:
    labels = kwargs.pop("labels")
    with pytest.raises(lw.LabelwiseError, match=match):
        lw.rank_models(FIG2, labels, **kwargs)


def test_one_model_is_not_a_ranking() -> None:
    # was a "ranking" of one model (rank 1, P(best) 1.000); now the error the ranking campaign
    # and SDS give, pointing at the estimator for one model's accuracy
    with pytest.raises(lw.LabelwiseError, match=r"at least 2 models .* labelwise.estimate"):
        lw.rank_models(FIG2[:1], FIG2_LABELS)


def test_labels_outside_the_classes_are_an_error_with_probabilities() -> None:
    probs = np.eye(10)[FIG2]
    with pytest.raises(lw.LabelwiseError, match=r"labels must be classes in \[0, 10\)"):
        lw.rank_models(probs, [10, 1, 4, 1, 5, 9])
    # With class labels C is unknown: 10 is simply a class no model predicts.
    r = lw.rank_models(FIG2, [10, 1, 4, 1, 5, 9], rng=0)
    assert r.n_correct.tolist() == [3, 2, 2]


# --- Spearman, Jaccard, Cliff's delta, W/T/L --------------------------------------------


def test_spearman_hand_value() -> None:
    # Ranks (1..5) vs (2,1,4,3,5): d = (-1,1,-1,1,0), sum d^2 = 4,
    # rho = 1 - 6 * 4 / (5 * 24) = 0.8.
    assert lw.spearman([0.1, 0.2, 0.3, 0.4, 0.5], [0.7, 0.6, 0.9, 0.8, 1.0]) == pytest.approx(0.8)
    assert lw.spearman([1, 2, 3], [3, 2, 1]) == pytest.approx(-1.0)
    a, b = [0.5, 0.7, 0.7, 0.9], [0.2, 0.1, 0.4, 0.3]
    assert lw.spearman(a, b) == pytest.approx(stats.spearmanr(a, b).statistic)


def test_spearman_constant_input_warns_and_returns_zero() -> None:
    with pytest.warns(lw.DegenerateDataWarning, match="estimated"):
        assert lw.spearman([0.5, 0.5, 0.5], [0.1, 0.2, 0.3]) == 0.0
    with pytest.warns(lw.DegenerateDataWarning, match="actual"):
        assert lw.spearman([0.1, 0.2, 0.3], [1, 1, 1]) == 0.0


def test_spearman_bad_input() -> None:
    with pytest.raises(lw.LabelwiseError, match="actual"):
        lw.spearman([1, 2, 3], [1, 2])
    with pytest.raises(lw.LabelwiseError, match="at least 2"):
        lw.spearman([1], [1])


def test_jaccard_paper_example() -> None:
    # Estimated order M1, M3, M5, ...; actual M1, M3, M2, ... (Sec. IV-C):
    # J_3 = |{M1,M3,M5} ∩ {M1,M2,M3}| / |{M1,M3,M5} ∪ {M1,M2,M3}| = 2 / 4.
    estimated = [0.9, 0.5, 0.8, 0.4, 0.7]  # M1, M2, M3, M4, M5
    actual = [0.95, 0.85, 0.9, 0.5, 0.6]
    assert lw.jaccard_top_k(estimated, actual, 3) == 0.5
    assert lw.jaccard_top_k(estimated, actual, 1) == 1.0  # {M1} both
    assert lw.jaccard_top_k(estimated, actual, 5) == 1.0
    # k = 2: {M1, M3} both.
    assert lw.jaccard_top_k(estimated, actual, 2) == 1.0
    # k = 4: {M1,M2,M3,M5} vs {M1,M2,M3,M5}.
    assert lw.jaccard_top_k(estimated, actual, 4) == 1.0


def test_jaccard_ties_at_the_cut_go_by_model_index() -> None:
    # Estimated top-2 of (0.7, 0.7, 0.7, 0.1) is {M1, M2}; actual top-2 {M2, M3}:
    # 1 / 3.
    assert lw.jaccard_top_k([0.7, 0.7, 0.7, 0.1], [0.1, 0.9, 0.8, 0.2], 2) == pytest.approx(1 / 3)
    assert lw.jaccard_top_k([1, 0], [0, 1], 1) == 0.0


@pytest.mark.parametrize("k", [0, 6, 1.5])
def test_jaccard_bad_k(k: Any) -> None:
    with pytest.raises(lw.LabelwiseError, match="k"):
        lw.jaccard_top_k([1, 2, 3, 4, 5], [1, 2, 3, 4, 5], k)


def test_cliffs_delta_hand_value() -> None:
    # a = (1,2,3), b = (2,2,4): a > b pairs: (3,2),(3,2) = 2; a < b pairs: (1,2),(1,2),(1,4),
    # (2,4),(3,4) = 5; delta = (2 - 5) / 9 = -1/3.
    assert lw.cliffs_delta([1, 2, 3], [2, 2, 4]) == pytest.approx(-1 / 3)
    assert lw.cliffs_delta([2, 2, 4], [1, 2, 3]) == pytest.approx(1 / 3)
    assert lw.cliffs_delta([5, 6], [1, 2, 3]) == 1.0
    assert lw.cliffs_delta([1, 1], [1, 1, 1]) == 0.0


def test_cliffs_delta_matches_the_pairwise_definition() -> None:
    rng = np.random.default_rng(0)
    a, b = rng.integers(0, 6, 37).astype(float), rng.integers(0, 6, 23).astype(float)
    brute = (np.sign(a[:, None] - b[None, :])).sum() / (a.size * b.size)
    assert lw.cliffs_delta(a, b) == pytest.approx(brute)


@pytest.mark.parametrize(
    ("delta", "name"),
    [
        (0.0, "negligible"),
        (0.146, "negligible"),
        (0.147, "small"),
        (-0.2, "small"),
        (0.33, "medium"),
        (-0.47, "medium"),
        (0.474, "large"),
        (-1.0, "large"),
    ],
)
def test_magnitude(delta: float, name: str) -> None:
    assert lw.magnitude(delta) == name


@pytest.mark.parametrize("delta", [1.5, np.nan, "big"])
def test_magnitude_bad_delta(delta: Any) -> None:
    with pytest.raises(lw.LabelwiseError, match="delta"):
        lw.magnitude(delta)


def test_rank_sum_test_is_scipys() -> None:
    a, b = [0.61, 0.7, 0.66, 0.72, 0.69], [0.5, 0.55, 0.62, 0.58, 0.6]
    assert lw.rank_sum_test(a, b) == pytest.approx(stats.ranksums(a, b).pvalue)
    assert lw.rank_sum_test([1, 1, 1], [1, 1, 1]) == 1.0


def test_wtl_constructed_cases() -> None:
    rng = np.random.default_rng(4)
    good = 0.8 + 0.02 * rng.normal(size=50)
    bad = 0.6 + 0.02 * rng.normal(size=50)
    assert lw.wtl(good, bad) == "W"  # p ~ 1e-17, delta = 1
    assert lw.wtl(bad, good) == "L"
    assert lw.wtl(good, good) == "T"  # p = 1, delta = 0
    # Clearly apart but too few repetitions to be significant: 2 vs 2 values, p = 0.12.
    assert lw.wtl([0.9, 0.91], [0.1, 0.11]) == "T"
    # Significant but negligible: a tiny shift with 20,000 repetitions (delta ~ 0.06).
    x = rng.normal(size=20_000)
    y = rng.normal(size=20_000) - 0.1
    assert lw.rank_sum_test(x, y) < 0.05
    assert 0 < lw.cliffs_delta(x, y) < 0.147
    assert lw.wtl(x, y) == "T"
    # The thresholds are parameters.
    assert lw.wtl(x, y, negligible=0.01) == "W"
    assert lw.wtl([0.9, 0.91], [0.1, 0.11], alpha=0.2) == "W"


@pytest.mark.parametrize(("kw", "match"), [({"alpha": 0}, "alpha"), ({"negligible": 1}, "neglig")])
def test_wtl_bad_thresholds(kw: dict[str, Any], match: str) -> None:
    with pytest.raises(lw.LabelwiseError, match=match):
        lw.wtl([1, 2], [3, 4], **kw)


def test_empty_samples_are_errors() -> None:
    with pytest.raises(lw.LabelwiseError, match="a must"):
        lw.cliffs_delta([], [1, 2])
    with pytest.raises(lw.LabelwiseError, match="b must"):
        lw.rank_sum_test([1], [])

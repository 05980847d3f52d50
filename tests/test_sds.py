"""Sample discrimination based selection (Meng et al. 2021, Sec. III-B, Algorithm 1)."""

from __future__ import annotations

import json
import warnings
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import norm

import labelwise as lw
import sds_reference
from labelwise.sampling._candidates import candidate_count
from labelwise.sampling.sds import group_size

# Fig. 3: classes star = 0, triangle = 1, diamond = 2; rows are models, columns inputs.
FIG3 = np.array(
    [
        [0, 1, 2, 0],  # M1
        [2, 1, 0, 0],  # M2
        [0, 1, 2, 1],  # M3
        [0, 0, 2, 0],  # M4
    ]
)


def _models(n_models: int, n: int, seed: int, n_classes: int = 10) -> np.ndarray:
    """Labels of models with accuracies spread 0.6-0.95 and errors correlated by input."""
    rng = np.random.default_rng(seed)
    truth = rng.integers(0, n_classes, n)
    hard = rng.normal(size=n)
    acc = np.linspace(0.95, 0.6, n_models)
    z = 0.8 * hard[None, :] + 0.6 * rng.normal(size=(n_models, n))
    wrong = z > norm.ppf(acc)[:, None]
    other = (truth[None, :] + rng.integers(1, n_classes, (n_models, n))) % n_classes
    return np.where(wrong, other, truth[None, :])


PRED = _models(12, 400, seed=1)


# --- Steps 2-4: votes, scores, groups, discrimination ----------------------------------


def test_paper_fig3_example() -> None:
    d = lw.sds_discrimination(FIG3)
    # Votes: s1 (0,2,0,0) -> 0; s2 (1,1,1,0) -> 1; s3 (2,0,2,2) -> 2; s4 (0,0,1,0) -> 0.
    assert d.votes.tolist() == [0, 1, 2, 0]
    # Scores: M1 agrees everywhere (4); M2 on s2, s4 (2); M3 on s1-s3 (3); M4 on s1, s3, s4 (3).
    assert d.model_scores.tolist() == [4, 2, 3, 3]
    # k = max(1, floor(0.27 * 4)) = max(1, 1) = 1: top {M1}, bottom {M2}.
    assert d.top.tolist() == [0]
    assert d.bottom.tolist() == [1]
    # D = (M1 right) - (M2 right): s1 1-0, s2 1-1, s3 1-0, s4 1-1.
    assert d.discrimination.tolist() == [1.0, 0.0, 1.0, 0.0]


def test_fig3_from_probabilities_is_the_same() -> None:
    probs = np.eye(3)[FIG3] * 0.8 + 0.2 / 3  # argmax is still FIG3
    d = lw.sds_discrimination(probs)
    assert d.votes.tolist() == [0, 1, 2, 0]
    assert d.discrimination.tolist() == [1.0, 0.0, 1.0, 0.0]


def test_fig3_selection_takes_the_one_candidate() -> None:
    # ceil(0.25 * 4) = 1 candidate; s1 and s3 tie at D = 1, so the candidate is one of them
    # at random, and both occur over seeds.
    picks = {int(lw.sds_select(FIG3, 1, rng=s).indices[0]) for s in range(40)}
    assert picks == {0, 2}


def test_results_are_read_only() -> None:
    d = lw.sds_discrimination(FIG3)
    with pytest.raises(ValueError):
        d.discrimination[0] = 5.0
    with pytest.raises(ValueError):
        d.votes[0] = 5


@pytest.mark.parametrize(
    ("column", "vote"),
    [
        ([2, 2, 1, 1], 1),  # 2-2 tie between 1 and 2 -> the smaller, 1
        ([3, 0, 3, 0], 0),
        ([2, 1, 0], 0),  # three-way 1-1-1 tie -> 0
        ([5, 7, 7, 5, 9], 5),
        ([4, 4, 4, 1], 4),  # a plain majority is not a tie
        ([1, 3, 3, 2, 2], 2),
    ],
)
def test_vote_ties_go_to_the_smallest_label(column: list[int], vote: int) -> None:
    preds = np.array(column)[:, None]  # one input
    assert lw.sds_discrimination(preds).votes.tolist() == [vote]


def test_vote_with_huge_labels_is_recoded_not_tabulated() -> None:
    big = 10**12
    preds = np.array([[big, 3, 7], [big, 7, 3], [5, 7, 3]])
    # input 0: big twice; input 1: 7 twice; input 2: 3 twice.
    assert lw.sds_discrimination(preds).votes.tolist() == [big, 7, 3]


# n_models: k = max(1, floor(0.27 n)). E.g. 7 -> floor(1.89) = 1, 8 -> floor(2.16) = 2,
# 11 -> floor(2.97) = 2, 25 -> floor(6.75) = 6 (the authors' code: 6 top, 7 bottom), 26 -> 7.
EXPECTED_K = {
    **dict.fromkeys(range(2, 8), 1),
    **dict.fromkeys(range(8, 12), 2),
    **dict.fromkeys(range(12, 15), 3),
    **dict.fromkeys(range(15, 19), 4),
    **dict.fromkeys(range(19, 23), 5),
    **dict.fromkeys(range(23, 26), 6),
    **dict.fromkeys(range(26, 30), 7),
    30: 8,
}


@pytest.mark.parametrize("n_models", range(2, 31))
def test_top_and_bottom_groups_have_floor_size(n_models: int) -> None:
    assert group_size(0.27, n_models) == EXPECTED_K[n_models]
    d = lw.sds_discrimination(_models(n_models, 200, seed=n_models))
    k = EXPECTED_K[n_models]
    assert d.top.size == d.bottom.size == k
    assert not set(d.top.tolist()) & set(d.bottom.tolist())
    # Top = the k best scores, bottom = the k worst.
    assert d.model_scores[d.top].min() >= d.model_scores[d.bottom].max()
    ranked = np.sort(d.model_scores)[::-1]
    assert sorted(d.model_scores[d.top].tolist(), reverse=True) == ranked[:k].tolist()
    assert sorted(d.model_scores[d.bottom].tolist(), reverse=True) == ranked[-k:].tolist()
    assert np.all(np.abs(d.discrimination) <= 1.0)


def test_group_size_guards_float_rounding() -> None:
    assert 0.29 * 100 < 29  # 28.999999999999996
    assert group_size(0.29, 100) == 29
    assert group_size(0.5, 2) == 1
    assert group_size(0.5, 9) == 4


def test_model_score_ties_are_broken_by_index() -> None:
    # Every model identical: all scores equal, so ranks follow the index.
    d = lw.sds_discrimination(np.tile([0, 1, 2, 3, 4], (10, 1)))
    assert d.model_scores.tolist() == [5] * 10
    assert d.top.tolist() == [0, 1]  # k = floor(2.7) = 2
    assert d.bottom.tolist() == [8, 9]
    assert d.discrimination.tolist() == [0.0] * 5


def test_two_models_split_into_top_and_bottom() -> None:
    # With 2 models a disagreement is a 1-1 tie, won by the smaller label: votes (0,0,0,1).
    # M1 agrees 4 times, M2 twice; k = max(1, floor(0.54)) = 1: top {M1}, bottom {M2}.
    # D = M1 right - M2 right: (1-1, 1-0, 1-0, 1-1).
    preds = np.array([[0, 0, 0, 1], [0, 1, 1, 1]])
    d = lw.sds_discrimination(preds)
    assert d.votes.tolist() == [0, 0, 0, 1]
    assert d.model_scores.tolist() == [4, 2]
    assert d.top.tolist() == [0]
    assert d.bottom.tolist() == [1]
    assert d.discrimination.tolist() == [0.0, 1.0, 1.0, 0.0]


def test_top_fraction_half_and_custom() -> None:
    d = lw.sds_discrimination(PRED, top_fraction=0.5)  # 12 models: 6 and 6
    assert d.top.size == d.bottom.size == 6
    assert set(d.top.tolist()) | set(d.bottom.tolist()) == set(range(12))


@settings(max_examples=60, deadline=None)
@given(
    n_models=st.integers(2, 12),
    n=st.integers(1, 25),
    n_classes=st.integers(1, 4),
    seed=st.integers(0, 2**32 - 1),
    frac=st.sampled_from([0.27, 0.1, 0.5, 0.33]),
)
def test_matches_the_plain_loop_reading(
    n_models: int, n: int, n_classes: int, seed: int, frac: float
) -> None:
    preds = np.random.default_rng(seed).integers(0, n_classes, (n_models, n))
    votes, scores, top, bottom, disc = sds_reference.discrimination(preds.tolist(), frac)
    d = lw.sds_discrimination(preds, top_fraction=frac)
    assert d.votes.tolist() == votes
    assert d.model_scores.tolist() == scores
    assert d.top.tolist() == top
    assert d.bottom.tolist() == bottom
    assert d.discrimination.tolist() == pytest.approx(disc)


# --- Step 5: candidates and the draw ---------------------------------------------------


@pytest.mark.parametrize(
    ("fraction", "n", "count"),
    [
        (0.25, 1, 1),
        (0.25, 3, 1),  # ceil(0.75)
        (0.25, 4, 1),
        (0.25, 5, 2),  # ceil(1.25)
        (0.25, 8, 2),
        (0.25, 9, 3),  # ceil(2.25)
        (0.25, 400, 100),
        (0.25, 401, 101),  # ceil(100.25)
        (0.07, 100, 7),  # 0.07 * 100 = 7.000000000000001 in floating point
        (1.0, 37, 37),
        (0.001, 10, 1),  # at least one
    ],
)
def test_candidate_count_is_the_ceiling(fraction: float, n: int, count: int) -> None:
    assert candidate_count(fraction, n) == count


def test_candidate_count_is_recorded() -> None:
    sel = lw.sds_select(PRED, 10, rng=0)
    assert sel.diagnostics["n_candidates"] == 100
    assert sel.diagnostics["n_models"] == 12
    assert sel.diagnostics["top_models"] == lw.sds_discrimination(PRED).top.tolist()
    assert sel.diagnostics["bottom_models"] == lw.sds_discrimination(PRED).bottom.tolist()
    assert sel.params == {"top_fraction": 0.27, "candidate_fraction": 0.25}
    assert sel.method == "sds"


def _cut(disc: np.ndarray, n_cand: int) -> float:
    return float(np.sort(disc)[::-1][n_cand - 1])


@pytest.mark.parametrize("seed", range(5))
def test_selection_is_drawn_from_the_top_quarter(seed: int) -> None:
    disc = lw.sds_discrimination(PRED).discrimination
    cut = _cut(disc, 100)
    sel = lw.sds_select(PRED, 60, rng=seed)
    assert np.all(disc[sel.indices] >= cut)
    # All 100 candidates: every row strictly above the cut, the rest at the cut.
    everything = lw.sds_select(PRED, 100, rng=seed)
    got = set(everything.indices.tolist())
    assert set(np.flatnonzero(disc > cut).tolist()) <= got
    assert np.all(disc[everything.indices] >= cut)


def test_ties_at_the_cut_are_admitted_at_random() -> None:
    # 10 inputs with D = 1 and 30 with D = 0. With candidate_fraction 0.5 there are
    # ceil(0.5 * 40) = 20 candidates: the 10 with D = 1 and 10 of the 30 tied at D = 0.
    disc = lw.sds_discrimination(_tied_pile()).discrimination
    assert sorted(disc.tolist(), reverse=True) == [1.0] * 10 + [0.0] * 30
    counts = np.zeros(40)
    for seed in range(200):
        sel = lw.sds_select(_tied_pile(), 20, candidate_fraction=0.5, rng=seed)
        assert set(np.flatnonzero(disc == 1).tolist()) <= set(sel.indices.tolist())
        counts[sel.indices] += 1
    tied = counts[disc == 0]
    # Each tied input is admitted with probability 10/30; 200 seeds: mean 66.7, sd 6.7.
    assert tied.min() > 35
    assert tied.max() < 100


def _tied_pile() -> np.ndarray:
    """2 models; the first 10 inputs: M1 (top) right, M2 wrong -> D = 1; else both agree."""
    m1 = np.zeros(40, dtype=int)
    m2 = np.zeros(40, dtype=int)
    m2[:10] = 1  # tie 0 vs 1 -> vote 0 (smaller): M1 agrees, M2 does not
    return np.stack([m1, m2])


def test_budget_above_candidates_warns_and_fills_by_discrimination() -> None:
    disc = lw.sds_discrimination(PRED).discrimination
    with pytest.warns(lw.DegenerateDataWarning, match="only 100 candidates"):
        sel = lw.sds_select(PRED, 150, rng=3)
    idx = sel.indices
    assert np.unique(idx).size == 150
    cut = _cut(disc, 100)
    # First the 100 candidates (in random order), then 50 by decreasing discrimination.
    assert np.all(disc[idx[:100]] >= cut)
    fill = disc[idx[100:]]
    assert np.all(np.diff(fill) <= 0)
    assert fill.max() <= disc[idx[:100]].min()
    # The fill is the next-highest: nothing left out is above the smallest filled value.
    left = np.setdiff1d(np.arange(400), idx)
    assert disc[left].max() <= fill.min()
    # The first 100 are the same candidates as a budget-100 selection with the same seed.
    assert np.array_equal(idx[:100], lw.sds_select(PRED, 100, rng=3).indices)


def test_budget_equal_to_candidates_does_not_warn() -> None:
    lw.sds_select(PRED, 100, rng=0)  # warnings are errors in this suite


def test_whole_pile_is_every_row_once() -> None:
    with pytest.warns(lw.DegenerateDataWarning):
        sel = lw.sds_select(PRED, 400, rng=0)
    assert np.array_equal(np.sort(sel.indices), np.arange(400))


def test_equal_discrimination_everywhere_warns() -> None:
    same = np.tile(np.arange(20) % 3, (5, 1))
    with pytest.warns(lw.DegenerateDataWarning, match="simple random sample"):
        sel = lw.sds_select(same, 3, rng=0)
    assert sel.indices.size == 3


def test_budget_above_the_pile_is_an_error_naming_budget() -> None:
    with pytest.raises(lw.LabelwiseError, match="budget"):
        lw.sds_select(FIG3, 5, rng=0)


@settings(max_examples=40, deadline=None)
@given(
    data=st.data(),
    n_models=st.integers(2, 8),
    n=st.integers(1, 80),
    seed=st.integers(0, 2**32 - 1),
)
def test_no_duplicates_property(data: st.DataObject, n_models: int, n: int, seed: int) -> None:
    preds = np.random.default_rng(seed).integers(0, 3, (n_models, n))
    budget = data.draw(st.integers(1, n), label="budget")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", lw.DegenerateDataWarning)
        sel = lw.sds_select(preds, budget, rng=seed)
    assert sel.indices.size == budget
    assert np.unique(sel.indices).size == budget
    assert sel.indices.min() >= 0
    assert sel.indices.max() < n


def test_reproducible_with_a_seed_and_varies_without() -> None:
    a = lw.sds_select(PRED, 30, rng=42)
    b = lw.sds_select(PRED, 30, rng=np.random.default_rng(42))
    assert np.array_equal(a.indices, b.indices)
    c = lw.sds_select(PRED, 30, rng=43)
    assert not np.array_equal(a.indices, c.indices)


def test_prefixes_are_selections() -> None:
    a = lw.sds_select(PRED, 50, rng=8)
    b = lw.sds_select(PRED, 20, rng=8)
    assert np.array_equal(a.indices[:20], b.indices)


# --- extension ----------------------------------------------------------------------------


@pytest.mark.parametrize(("n", "m"), [(20, 30), (1, 99), (60, 40)])
def test_extension_equals_selecting_at_once(n: int, m: int) -> None:
    ext = lw.extend(lw.sds_select(PRED, n, rng=5), PRED, m)
    assert np.array_equal(ext.indices, lw.sds_select(PRED, n + m, rng=5).indices)
    assert ext.diagnostics == lw.sds_select(PRED, n + m, rng=5).diagnostics


def test_extension_past_the_candidates_warns_and_matches_at_once() -> None:
    sel = lw.sds_select(PRED, 90, rng=5)
    with pytest.warns(lw.DegenerateDataWarning, match="only 100 candidates"):
        ext = lw.extend(sel, PRED, 30)
    with pytest.warns(lw.DegenerateDataWarning):
        once = lw.sds_select(PRED, 120, rng=5)
    assert np.array_equal(ext.indices, once.indices)


def test_extension_with_another_rng_keeps_the_candidates() -> None:
    disc = lw.sds_select(PRED, 100, rng=5)  # the 100 candidates of seed 5
    sel = lw.sds_select(PRED, 40, rng=5)
    ext = lw.extend(sel, PRED, 60, rng=123)
    assert set(ext.indices.tolist()) == set(disc.indices.tolist())
    assert not np.array_equal(ext.indices, disc.indices)
    # Then continuing from the stored state is reproducible.
    with pytest.warns(lw.DegenerateDataWarning):
        a = lw.extend(ext, PRED, 5)
    with pytest.warns(lw.DegenerateDataWarning):
        b = lw.extend(ext, PRED, 5)
    assert np.array_equal(a.indices, b.indices)


def test_extension_after_json_round_trip() -> None:
    sel = lw.sds_select(PRED, 25, rng=9)
    back = lw.Selection.from_dict(json.loads(json.dumps(sel.to_dict())))
    assert np.array_equal(lw.extend(back, PRED, 10).indices, lw.extend(sel, PRED, 10).indices)


def test_extension_needs_the_same_predictions() -> None:
    sel = lw.sds_select(PRED, 25, rng=9)
    with pytest.raises(lw.LabelwiseError, match="predictions"):
        lw.extend(sel, None, 5)
    with pytest.raises(lw.LabelwiseError, match="models"):
        lw.extend(sel, PRED[:-1], 5)  # one model fewer
    with pytest.raises(lw.LabelwiseError, match="models"):
        lw.extend(sel, PRED[::-1], 5)  # models in another order
    with pytest.raises(lw.LabelwiseError, match="rows"):
        lw.extend(sel, PRED[:, :-1], 5)  # another pile size
    other = _models(12, 400, seed=2)
    with pytest.raises(lw.LabelwiseError):
        lw.extend(sel, other, 5)


# --- bad input ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("predictions", "match"),
    [
        ([[0, 1, 2]], "at least 2 models"),  # a single model cannot be ranked
        ([[0, 1, 2], [0, 1]], "same inputs"),  # ragged: different input counts
        ([], "shape"),
        (np.zeros((0, 5), dtype=int), "at least one model"),
        (np.zeros((3, 0), dtype=int), "at least one model"),
        ([0, 1, 2], "shape"),  # 1-D
        ([[0, -1], [1, 1]], "non-negative"),
        ([[0.5, 1.0], [1.0, 1.0]], "integer"),
        ([[0, np.nan], [1, 1]], "finite"),
        ([["a", "b"], ["a", "b"]], "numbers"),
    ],
)
def test_bad_predictions_are_errors(predictions: Any, match: str) -> None:
    with pytest.raises(lw.LabelwiseError, match=match):
        lw.sds_select(predictions, 1, rng=0)


@pytest.mark.parametrize("value", [0, -0.1, 0.51, 1.0, "x", None, True])
def test_bad_top_fraction_is_an_error(value: Any) -> None:
    with pytest.raises(lw.LabelwiseError, match="top_fraction"):
        lw.sds_select(PRED, 5, top_fraction=value, rng=0)


@pytest.mark.parametrize("value", [0, -0.25, 1.5, "x", None])
def test_bad_candidate_fraction_is_an_error(value: Any) -> None:
    with pytest.raises(lw.LabelwiseError, match="candidate_fraction"):
        lw.sds_select(PRED, 5, candidate_fraction=value, rng=0)


def test_ragged_list_of_model_arrays_is_an_error() -> None:
    with pytest.raises(lw.LabelwiseError, match="same inputs"):
        lw.sds_discrimination([np.zeros(5, dtype=int), np.zeros(4, dtype=int)])

"""DeepGini impurity and the DDG / RDG baselines (Meng et al. 2021, Sec. IV-B)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import labelwise as lw


def _softmax(logits: np.ndarray) -> np.ndarray:
    e = np.exp(logits - logits.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


PROBS = _softmax(np.random.default_rng(0).normal(scale=2.0, size=(3, 400, 10)))


# --- impurity -----------------------------------------------------------------------------


@pytest.mark.parametrize("n_classes", [2, 3, 10])
def test_uniform_probabilities_have_impurity_one_minus_one_over_c(n_classes: int) -> None:
    probs = np.full((4, n_classes), 1.0 / n_classes)
    assert lw.deepgini_impurity(probs) == pytest.approx(np.full(4, 1 - 1 / n_classes))


def test_one_hot_has_impurity_zero() -> None:
    assert lw.deepgini_impurity(np.eye(5)).tolist() == [0.0] * 5


def test_known_value() -> None:
    # 1 - (0.25 + 0.09 + 0.04) = 0.62
    assert lw.deepgini_impurity([[0.5, 0.3, 0.2]]) == pytest.approx([0.62])


def test_combine_across_models() -> None:
    # Model A: inputs (0.62, 0); model B: (0, 0.5).
    a = [[0.5, 0.3, 0.2], [1.0, 0.0, 0.0]]
    b = [[0.0, 1.0, 0.0], [0.5, 0.5, 0.0]]
    probs = np.array([a, b])
    assert lw.deepgini_impurity(probs) == pytest.approx([0.62, 0.5])  # default max
    assert lw.deepgini_impurity(probs, combine="max") == pytest.approx([0.62, 0.5])
    assert lw.deepgini_impurity(probs, combine="min") == pytest.approx([0.0, 0.0])
    assert lw.deepgini_impurity(probs, combine="mean") == pytest.approx([0.31, 0.25])


def test_one_model_two_or_three_dimensions_agree() -> None:
    two = lw.deepgini_impurity(PROBS[0])
    three = lw.deepgini_impurity(PROBS[:1], combine="min")
    assert np.array_equal(two, three)
    assert two.shape == (400,)
    assert np.all((two >= 0) & (two <= 1 - 1 / 10 + 1e-12))


def test_float32_softmax_is_accepted() -> None:
    probs = PROBS[0].astype(np.float32)
    assert lw.deepgini_impurity(probs) == pytest.approx(lw.deepgini_impurity(PROBS[0]), abs=1e-6)


# --- DDG ----------------------------------------------------------------------------------

# Impurities: rows 0 and 3 -> 0.5, rows 1 and 4 -> 0.62, row 2 -> 0.
FIVE = np.array(
    [[0.5, 0.5, 0.0], [0.5, 0.3, 0.2], [0.0, 0.0, 1.0], [0.0, 0.5, 0.5], [0.3, 0.5, 0.2]]
)


def test_ddg_takes_the_highest_impurity_ties_by_index() -> None:
    sel = lw.ddg_select(FIVE, 3, rng=0)
    assert sel.indices.tolist() == [1, 4, 0]
    assert sel.method == "ddg"
    assert sel.params == {"combine": "max"}
    # No randomness: the seed does not matter.
    assert lw.ddg_select(FIVE, 3, rng=99).indices.tolist() == [1, 4, 0]
    assert lw.ddg_select(FIVE, 5).indices.tolist() == [1, 4, 0, 3, 2]


def test_ddg_extension_takes_the_next_rows() -> None:
    sel = lw.ddg_select(FIVE, 2)
    assert lw.extend(sel, FIVE, 2).indices.tolist() == [1, 4, 0, 3]
    with pytest.raises(lw.LabelwiseError, match="probabilities"):
        lw.extend(sel, FIVE[::-1], 2)


def test_ddg_combine_changes_the_order() -> None:
    probs = np.array([FIVE, FIVE[[2, 0, 1, 3, 4]]])
    # Model A: (0.5, 0.62, 0, 0.5, 0.62); model B: (0, 0.5, 0.62, 0.5, 0.62).
    # max: (0.5, 0.62, 0.62, 0.5, 0.62); min: (0, 0.5, 0, 0.5, 0.62).
    assert lw.ddg_select(probs, 3).indices.tolist() == [1, 2, 4]
    assert lw.ddg_select(probs, 3, combine="min").indices.tolist() == [4, 1, 3]


def test_ddg_still_checks_rng() -> None:
    with pytest.raises(lw.LabelwiseError, match="rng"):
        lw.ddg_select(FIVE, 2, rng="seed")


# --- RDG ----------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(5))
def test_rdg_draws_within_the_top_quarter(seed: int) -> None:
    xi = lw.deepgini_impurity(PROBS)
    cut = np.sort(xi)[::-1][99]  # 100 = ceil(0.25 * 400) candidates
    sel = lw.rdg_select(PROBS, 60, rng=seed)
    assert sel.method == "rdg"
    assert np.all(xi[sel.indices] >= cut)
    assert np.unique(sel.indices).size == 60
    assert sel.diagnostics["n_candidates"] == 100
    assert sel.params == {"combine": "max", "candidate_fraction": 0.25}
    # Random, unlike DDG.
    assert not np.array_equal(sel.indices, lw.rdg_select(PROBS, 60, rng=seed + 10).indices)


def test_rdg_budget_above_candidates_warns_and_fills() -> None:
    xi = lw.deepgini_impurity(PROBS, combine="mean")
    with pytest.warns(lw.DegenerateDataWarning, match="RDG has only 100 candidates"):
        sel = lw.rdg_select(PROBS, 130, combine="mean", rng=1)
    fill = xi[sel.indices[100:]]
    assert np.all(np.diff(fill) <= 0)
    assert fill.max() <= xi[sel.indices[:100]].min()


def test_rdg_extension_equals_selecting_at_once() -> None:
    ext = lw.extend(lw.rdg_select(PROBS, 30, rng=4), PROBS, 40)
    assert np.array_equal(ext.indices, lw.rdg_select(PROBS, 70, rng=4).indices)


def test_rdg_one_hot_everywhere_warns_simple_random_sample() -> None:
    with pytest.warns(lw.DegenerateDataWarning, match="simple random sample"):
        lw.rdg_select(np.eye(4)[np.arange(40) % 4], 5, rng=0)


# --- bad input ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("probs", "match"),
    [
        ([[0.5, 0.6], [0.5, 0.5]], "sum to 1"),
        ([[2.0, -1.0], [0.5, 0.5]], "non-negative"),
        ([[np.nan, 1.0], [0.5, 0.5]], "finite"),
        ([[np.inf, 0.0], [0.5, 0.5]], "finite"),
        ([0.5, 0.5], "2-D or 3-D"),
        (np.ones((2, 3, 4, 5)) / 5, "2-D or 3-D"),
        ([[1.0], [1.0]], "C >= 2"),
        (np.zeros((0, 3)), "at least 1"),
        ([[1.2, 3.4], [0.1, -2.0]], "sum to 1|non-negative"),  # logits
    ],
)
def test_bad_probabilities_are_errors(probs: Any, match: str) -> None:
    for fn in (lw.deepgini_impurity, lambda p: lw.ddg_select(p, 1), lambda p: lw.rdg_select(p, 1)):
        with pytest.raises(lw.LabelwiseError, match=match):
            fn(probs)


def test_sum_tolerance_is_one_in_a_thousand() -> None:
    lw.deepgini_impurity([[0.5, 0.5005]])  # off by 5e-4: fine
    with pytest.raises(lw.LabelwiseError, match=r"model 0, input 1 sums to 1\.002"):
        lw.deepgini_impurity([[0.5, 0.5], [0.5, 0.502]])


@pytest.mark.parametrize("combine", ["median", "", None, 1])
def test_bad_combine_is_an_error(combine: Any) -> None:
    with pytest.raises(lw.LabelwiseError, match="combine"):
        lw.deepgini_impurity(FIVE, combine=combine)


@pytest.mark.parametrize("fn", [lw.ddg_select, lw.rdg_select])
def test_budget_above_the_pile_is_an_error(fn: Any) -> None:
    with pytest.raises(lw.LabelwiseError, match="budget"):
        fn(FIVE, 6)

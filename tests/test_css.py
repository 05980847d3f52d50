"""Confidence-based stratified sampling (Li et al. 2019, Sec. 3.1 and 4.1)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import labelwise as lw
from labelwise.sampling._common import allocate


def _per_stratum(sel: lw.Selection) -> tuple[int, ...]:
    assert sel.strata is not None
    assert sel.stratum_sizes is not None
    return tuple(np.bincount(sel.strata, minlength=len(sel.stratum_sizes)).tolist())


def _shuffled_conf(n: int, seed: int = 0) -> np.ndarray:
    """n distinct confidences in random row order."""
    rng = np.random.default_rng(seed)
    return rng.permutation(np.linspace(0.3, 1.0, n))


# --- strata -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("n", "sizes"),
    [
        (10, (8, 1, 1)),
        (1000, (800, 100, 100)),
        # 7 * (0.8, 0.1, 0.1) = (5.6, 0.7, 0.7): largest remainder gives (5, 1, 1);
        # rounding each share would give (6, 1, 1), one row too many.
        (7, (5, 1, 1)),
        # 5 * shares = (4, 0.5, 0.5): the tie goes to the lower index.
        (5, (4, 1, 0)),
        (3, (3, 0, 0)),
    ],
)
def test_stratum_sizes_are_largest_remainder(n: int, sizes: tuple[int, ...]) -> None:
    labels = lw.confidence_strata(_shuffled_conf(n))
    assert tuple(np.bincount(labels, minlength=3).tolist()) == sizes


def test_most_confident_rows_are_in_stratum_zero() -> None:
    conf = _shuffled_conf(1000, seed=3)
    labels = lw.confidence_strata(conf)
    assert conf[labels == 0].min() > conf[labels == 1].max()
    assert conf[labels == 1].min() > conf[labels == 2].max()
    # Exactly the 800 largest confidences.
    top = np.argsort(-conf)[:800]
    assert set(np.flatnonzero(labels == 0).tolist()) == set(top.tolist())


def test_ties_are_broken_by_row_index() -> None:
    labels = lw.confidence_strata(np.full(10, 0.7))
    assert labels.tolist() == [0] * 8 + [1, 2]


def test_custom_strata_shares() -> None:
    conf = _shuffled_conf(100, seed=1)
    labels = lw.confidence_strata(conf, (0.5, 0.25, 0.15, 0.1))
    assert np.bincount(labels).tolist() == [50, 25, 15, 10]
    order = np.argsort(-conf)
    assert labels[order].tolist() == sorted(labels.tolist())


def test_probabilities_use_the_row_maximum() -> None:
    rng = np.random.default_rng(4)
    logits = rng.normal(size=(300, 4))
    probs = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    top = probs.max(axis=1)
    assert np.array_equal(lw.confidence_strata(probs), lw.confidence_strata(top))
    a = lw.css_select(probs, 20, rng=5)
    b = lw.css_select(top, 20, rng=5)
    assert np.array_equal(a.indices, b.indices)
    assert np.array_equal(a.strata, b.strata)
    # Not the first column's probability.
    assert not np.array_equal(lw.confidence_strata(probs), lw.confidence_strata(probs[:, 0]))


def test_selection_records_strata_of_its_rows() -> None:
    conf = _shuffled_conf(500, seed=2)
    sel = lw.css_select(conf, 30, rng=0)
    labels = lw.confidence_strata(conf)
    assert sel.strata is not None
    assert np.array_equal(sel.strata, labels[sel.indices])
    assert sel.stratum_sizes == (400, 50, 50)
    assert sel.params["strata"] == [0.8, 0.1, 0.1]
    assert sel.params["allocation"] == [0.2, 0.4, 0.4]


# --- allocation ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("budget", "expected"),
    [
        (10, (2, 4, 4)),
        # 7 * (0.2, 0.4, 0.4) = (1.4, 2.8, 2.8): floors (1, 2, 2) leave 2 units, which go to
        # the largest remainders 0.8, 0.8 (strata 1 and 2): (1, 3, 3).
        (7, (1, 3, 3)),
        # 3 * shares = (0.6, 1.2, 1.2): floors (0, 1, 1), the last unit to stratum 0 (0.6).
        (3, (1, 1, 1)),
        (100, (20, 40, 40)),
        # 11 * shares = (2.2, 4.4, 4.4): the tie between strata 1 and 2 goes to stratum 1.
        (11, (2, 5, 4)),
    ],
)
def test_paper_allocation(budget: int, expected: tuple[int, ...]) -> None:
    sel = lw.css_select(_shuffled_conf(1000), budget, rng=0)
    assert _per_stratum(sel) == expected


def test_proportional_allocation() -> None:
    conf = _shuffled_conf(1000)
    assert _per_stratum(lw.css_select(conf, 50, allocation="proportional", rng=0)) == (40, 5, 5)
    # 17 * (0.8, 0.1, 0.1) = (13.6, 1.7, 1.7) -> (13, 2, 2)
    assert _per_stratum(lw.css_select(conf, 17, allocation="proportional", rng=0)) == (13, 2, 2)


def _neyman_pile() -> np.ndarray:
    # Stratum means: 0.99 (800 rows), 0.8 (100), 0.5 (100), in shuffled row order.
    conf = np.concatenate([np.full(800, 0.99), np.full(100, 0.8), np.full(100, 0.5)])
    return np.random.default_rng(8).permutation(conf)


def test_neyman_allocation() -> None:
    conf = _neyman_pile()
    sel = lw.css_select(conf, 100, allocation="neyman", rng=0)
    # n_h ∝ N_h sqrt(c_h (1 - c_h)) = (800 * 0.0995, 100 * 0.4, 100 * 0.5) = (79.60, 40, 50)
    # -> ideal 100 * w / 169.60 = (46.93, 23.58, 29.48) -> (47, 24, 29).
    assert _per_stratum(sel) == (47, 24, 29)
    assert sel.params["allocation"] == "neyman"
    # Sampling fractions n_h / N_h grow as the stratum's mean confidence nears 0.5 ...
    frac = np.array(_per_stratum(sel)) / np.array(sel.stratum_sizes)
    assert frac[0] < frac[1] < frac[2]
    # ... so the low-confidence strata get more labels than under proportional allocation.
    prop = _per_stratum(lw.css_select(conf, 100, allocation="proportional", rng=0))
    assert _per_stratum(sel)[2] > prop[2]
    assert _per_stratum(sel)[1] > prop[1]


def test_neyman_with_no_spread_falls_back_to_proportional() -> None:
    conf = np.ones(100)
    with pytest.warns(lw.DegenerateDataWarning, match="proportional"):
        sel = lw.css_select(conf, 20, allocation="neyman", rng=0)
    assert _per_stratum(sel) == (16, 2, 2)


@pytest.mark.parametrize(
    ("budget", "expected"),
    [
        # Strata (8, 1, 1). 6 * (0.2, 0.4, 0.4) = (1.2, 2.4, 2.4) -> (1, 3, 2), capped at
        # (8, 1, 1) -> (1, 1, 1); the 3 missing units can only go to stratum 0: (4, 1, 1).
        (6, (4, 1, 1)),
        (10, (8, 1, 1)),
        (3, (1, 1, 1)),
    ],
)
def test_allocation_is_capped_by_stratum_size(budget: int, expected: tuple[int, ...]) -> None:
    sel = lw.css_select(_shuffled_conf(10), budget, rng=0)
    assert _per_stratum(sel) == expected


def test_allocate_prefers_the_stratum_furthest_below_its_share() -> None:
    # ideal (5, 2.5, 2.5) -> largest remainder (5, 3, 2); capping stratum 0 at 3 frees 2
    # units, given one at a time: first to stratum 2 (2 is 0.5 below its ideal), then the tie
    # (both strata at 3, 0.5 above) to the lower index -> (3, 4, 3).
    n = allocate(10, np.array([0.5, 0.25, 0.25]), np.array([3, 10, 10]), np.zeros(3, np.int64))
    assert n.tolist() == [3, 4, 3]
    # Minimums are raised first, then units are taken from the stratum furthest above ideal.
    n = allocate(10, np.array([0.9, 0.05, 0.05]), np.array([10, 10, 10]), np.array([1, 2, 2]))
    assert n.tolist() == [6, 2, 2]


def test_empty_stratum_needs_no_label() -> None:
    # N=5 gives strata (4, 1, 0): two labels suffice.
    sel = lw.css_select(_shuffled_conf(5), 2, rng=0)
    assert sel.stratum_sizes == (4, 1, 0)
    assert _per_stratum(sel) == (1, 1, 0)


def test_within_stratum_draws_are_uniform() -> None:
    conf = _shuffled_conf(40, seed=6)  # strata (32, 4, 4), allocation (2, 4, 4) of 10
    labels = lw.confidence_strata(conf)
    hits = np.zeros(40)
    for seed in range(400):
        hits[lw.css_select(conf, 10, rng=seed).indices] += 1
    assert np.all(hits[labels != 0] == 400)  # strata 1 and 2 are fully sampled
    freq0 = hits[labels == 0] / 400
    # Binomial(400, 2/32): sd ~ 0.012, allow ~4.5 sd.
    assert np.all(np.abs(freq0 - 2 / 32) < 0.055)


# --- errors -------------------------------------------------------------------------------


@pytest.mark.parametrize("budget", [1, 2])
def test_budget_below_number_of_strata_is_an_error(budget: int) -> None:
    with pytest.raises(lw.LabelwiseError, match="budget"):
        lw.css_select(_shuffled_conf(100), budget, rng=0)


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({"strata": (0.9, -0.1, 0.2)}, "strata"),
        ({"strata": (0.5, 0.4)}, "strata"),
        ({"strata": (0.8, 0.1, 0.1, 0.1)}, "strata"),
        ({"strata": (0.5, float("nan"), 0.5)}, "strata"),
        ({"strata": (0.5, 0.0, 0.5)}, "strata"),
        ({"strata": ()}, "strata"),
        ({"strata": "abc"}, "strata"),
        ({"allocation": (0.5, 0.5)}, "allocation"),
        ({"allocation": (0.2, 0.4, 0.4, 0.0)}, "allocation"),
        ({"allocation": (0.6, -0.2, 0.6)}, "allocation"),
        ({"allocation": (0.2, 0.4, 0.5)}, "allocation"),
        ({"allocation": "optimal"}, "allocation"),
        ({"allocation": None}, "allocation"),
    ],
)
def test_bad_shares_are_errors_naming_them(kwargs: dict[str, Any], name: str) -> None:
    with pytest.raises(lw.LabelwiseError, match=name):
        lw.css_select(_shuffled_conf(100), 10, rng=0, **kwargs)


@pytest.mark.parametrize(
    "conf",
    [
        np.array([0.5, np.nan, 0.7, 0.9]),
        np.array([0.5, np.inf, 0.7, 0.9]),
        np.ones((4, 1)),
        np.ones((4, 2, 2)),
        np.array([]),
        np.array(["a", "b", "c"]),
    ],
    ids=["nan", "inf", "one-class", "3-D", "empty", "strings"],
)
def test_bad_confidences_are_errors_naming_them(conf: np.ndarray) -> None:
    with pytest.raises(lw.LabelwiseError, match="confidences"):
        lw.css_select(conf, 3, rng=0)


# --- extension ----------------------------------------------------------------------------


def test_extension_reallocates_the_new_total() -> None:
    conf = _shuffled_conf(1000)
    sel = lw.css_select(conf, 10, rng=0)
    assert _per_stratum(sel) == (2, 4, 4)
    ext = lw.extend(sel, conf, 10)
    assert _per_stratum(ext) == (4, 8, 8)
    assert ext.stratum_sizes == sel.stratum_sizes
    assert ext.strata is not None
    assert np.array_equal(ext.strata, lw.confidence_strata(conf)[ext.indices])
    assert np.array_equal(ext.strata[:10], sel.strata)


def test_extension_never_takes_labels_away_from_a_stratum() -> None:
    conf = _shuffled_conf(1000)
    sel = lw.css_select(conf, 20, allocation="proportional", rng=0)  # (16, 2, 2)
    ext = lw.extend(sel, conf, 5)
    got = _per_stratum(ext)
    assert sum(got) == 25
    assert all(g >= h for g, h in zip(got, _per_stratum(sel), strict=True))


def test_extension_with_other_confidences_is_an_error() -> None:
    conf = _shuffled_conf(200, seed=1)
    sel = lw.css_select(conf, 12, rng=0)
    with pytest.raises(lw.LabelwiseError, match="confidences"):
        lw.extend(sel, 1.0 - conf, 5)
    with pytest.raises(lw.LabelwiseError, match="confidences"):
        lw.extend(sel, None, 5)
    with pytest.raises(lw.LabelwiseError):
        lw.extend(sel, conf[:-1], 5)

"""One contract that every sampler (SRS, CSS, CES, SDS, DDG, RDG) must honour.

Each sampler is built by a factory on the same synthetic pile; the tests below are
parametrized over the factories, so a new sampler gets the whole contract by adding one.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import labelwise as lw
from labelwise.sampling._common import allocate

N = 400


def _pile() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(12345)
    activations = np.maximum(rng.normal(size=(N, 12)), 0.0)  # ReLU-like last hidden layer
    logits = rng.normal(scale=2.0, size=(N, 5))
    probs = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    return {"activations": activations, "probs": probs}


PILE = _pile()


def _model_predictions(n_models: int = 8) -> np.ndarray:
    """Class labels of several models on the pile (5 classes), right on about 60-95% of rows."""
    rng = np.random.default_rng(54321)
    truth = rng.integers(0, 5, N)
    wrong = rng.random((n_models, N)) > np.linspace(0.95, 0.6, n_models)[:, None]
    other = (truth[None, :] + rng.integers(1, 5, (n_models, N))) % 5
    return np.where(wrong, other, truth[None, :])


PREDICTIONS = _model_predictions()


@dataclass(frozen=True)
class Sampler:
    name: str
    data: Any  # what the sampler (and extend) is given
    select: Callable[..., lw.Selection]  # select(budget, rng) -> Selection
    random: bool = True  # False for a deterministic sampler (DDG): the seed must not matter


def _srs(budget: Any, rng: Any) -> lw.Selection:
    return lw.srs_select(PILE["activations"], budget, rng=rng)


def _css(budget: Any, rng: Any) -> lw.Selection:
    return lw.css_select(PILE["probs"], budget, rng=rng)


def _ces(budget: Any, rng: Any) -> lw.Selection:
    # Paper defaults except a smaller l, to keep the contract fast.
    return lw.ces_select(PILE["activations"], budget, n_groups=40, rng=rng)


# SDS and RDG with every row a candidate: the contract extends up to the whole pile, and
# going past the candidate set warns by design (tested in test_sds.py and test_gini.py).
def _sds(budget: Any, rng: Any) -> lw.Selection:
    return lw.sds_select(PREDICTIONS, budget, candidate_fraction=1.0, rng=rng)


def _ddg(budget: Any, rng: Any) -> lw.Selection:
    return lw.ddg_select(PILE["probs"], budget, rng=rng)


def _rdg(budget: Any, rng: Any) -> lw.Selection:
    return lw.rdg_select(PILE["probs"], budget, candidate_fraction=1.0, rng=rng)


def _cppi(budget: Any, rng: Any) -> lw.Selection:
    from labelwise.ranking import cppi_select

    return cppi_select(PREDICTIONS, budget, rng=rng)


SAMPLERS = [
    Sampler("srs", PILE["activations"], _srs),
    Sampler("css", PILE["probs"], _css),
    Sampler("ces", PILE["activations"], _ces),
    Sampler("sds", PREDICTIONS, _sds),
    Sampler("ddg", PILE["probs"], _ddg, random=False),
    Sampler("rdg", PILE["probs"], _rdg),
    Sampler("cppi", PREDICTIONS, _cppi),
]


@pytest.fixture(params=SAMPLERS, ids=lambda s: s.name)
def sampler(request: pytest.FixtureRequest) -> Sampler:
    return request.param


# n - initial (30) is a multiple of CES's group size (5), so n is a whole CES run.
BUDGET = 40
MORE = 15


def _check_valid(sel: lw.Selection, size: int) -> None:
    idx = sel.indices
    assert idx.shape == (size,)
    assert idx.dtype == np.int64
    assert np.unique(idx).size == size, "duplicate rows in a selection"
    assert idx.min() >= 0
    assert idx.max() < N
    assert sel.population_size == N
    assert len(sel) == size == sel.budget


def test_selection_has_the_budget_distinct_rows_in_range(sampler: Sampler) -> None:
    sel = sampler.select(BUDGET, 0)
    _check_valid(sel, BUDGET)
    assert sel.method == sampler.name


def test_selection_indices_are_read_only(sampler: Sampler) -> None:
    sel = sampler.select(BUDGET, 0)
    with pytest.raises(ValueError):
        sel.indices[0] = 0


@pytest.mark.parametrize("seed", [0, 7, 2**40])
def test_same_seed_same_selection(sampler: Sampler, seed: int) -> None:
    a = sampler.select(BUDGET, seed)
    b = sampler.select(BUDGET, seed)
    c = sampler.select(BUDGET, np.random.default_rng(seed))
    d = sampler.select(BUDGET, np.random.default_rng(seed))
    assert np.array_equal(a.indices, b.indices)
    assert np.array_equal(c.indices, d.indices)
    # An int seed means numpy.random.default_rng(seed).
    assert np.array_equal(a.indices, c.indices)


def test_other_seed_other_selection(sampler: Sampler) -> None:
    a = sampler.select(BUDGET, 1)
    b = sampler.select(BUDGET, 2)
    if not sampler.random:
        assert np.array_equal(a.indices, b.indices)
        return
    assert not np.array_equal(a.indices, b.indices)
    assert set(a.indices.tolist()) != set(b.indices.tolist())


@pytest.mark.parametrize("budget", [0, -1, N + 1, 2.5, True, "10", None, np.float64(10)])
def test_bad_budget_is_an_error_naming_budget(sampler: Sampler, budget: Any) -> None:
    with pytest.raises(lw.LabelwiseError, match="budget"):
        sampler.select(budget, 0)


def test_budget_is_accepted_as_numpy_integer(sampler: Sampler) -> None:
    sel = sampler.select(np.int32(BUDGET), 0)
    _check_valid(sel, BUDGET)


@pytest.mark.parametrize("rng", ["seed", 1.5, np.random.RandomState(0)])
def test_bad_rng_is_an_error_naming_rng(sampler: Sampler, rng: Any) -> None:
    with pytest.raises(lw.LabelwiseError, match="rng"):
        sampler.select(BUDGET, rng)


def test_extension_keeps_the_prefix_and_adds_distinct_rows(sampler: Sampler) -> None:
    sel = sampler.select(BUDGET, 3)
    ext = lw.extend(sel, sampler.data, MORE)
    _check_valid(ext, BUDGET + MORE)
    assert np.array_equal(ext.indices[:BUDGET], sel.indices)
    new = ext.indices[BUDGET:]
    assert not set(new.tolist()) & set(sel.indices.tolist())
    assert ext.method == sel.method
    # The original is untouched (frozen).
    assert sel.budget == BUDGET


def test_extension_is_reproducible_from_the_stored_state(sampler: Sampler) -> None:
    sel = sampler.select(BUDGET, 3)
    a = lw.extend(sel, sampler.data, MORE)
    b = lw.extend(sel, sampler.data, MORE)
    assert np.array_equal(a.indices, b.indices)
    c = lw.extend(sel, sampler.data, MORE, rng=99)
    d = lw.extend(sel, sampler.data, MORE, rng=99)
    assert np.array_equal(c.indices, d.indices)
    assert np.array_equal(a.indices, c.indices) != sampler.random


def test_extension_twice_is_valid(sampler: Sampler) -> None:
    sel = sampler.select(BUDGET, 4)
    ext = lw.extend(lw.extend(sel, sampler.data, 5), sampler.data, 10)
    _check_valid(ext, BUDGET + 15)
    assert np.array_equal(ext.indices[:BUDGET], sel.indices)


def test_extension_up_to_the_whole_pile(sampler: Sampler) -> None:
    sel = sampler.select(BUDGET, 5)
    ext = lw.extend(sel, sampler.data, N - BUDGET)
    assert np.array_equal(np.sort(ext.indices), np.arange(N))
    with pytest.raises(lw.LabelwiseError, match="additional"):
        lw.extend(ext, sampler.data, 1)


@pytest.mark.parametrize("additional", [N - BUDGET + 1, 0, -3, 2.5])
def test_bad_extension_is_an_error(sampler: Sampler, additional: Any) -> None:
    sel = sampler.select(BUDGET, 5)
    with pytest.raises(lw.LabelwiseError, match="additional"):
        lw.extend(sel, sampler.data, additional)


def test_extension_with_another_pile_size_is_an_error(sampler: Sampler) -> None:
    sel = sampler.select(BUDGET, 5)
    with pytest.raises(lw.LabelwiseError):
        lw.extend(sel, sampler.data[:-1], 5)


def test_selection_round_trips_through_json(sampler: Sampler) -> None:
    sel = sampler.select(BUDGET, 6)
    d = json.loads(json.dumps(sel.to_dict()))
    back = lw.Selection.from_dict(d)
    assert np.array_equal(back.indices, sel.indices)
    assert back.method == sel.method
    assert back.population_size == sel.population_size
    assert dict(back.params) == dict(sel.params)
    assert back.stratum_sizes == sel.stratum_sizes
    if sel.strata is None:
        assert back.strata is None
    else:
        assert back.strata is not None
        assert np.array_equal(back.strata, sel.strata)
    assert back.to_dict() == sel.to_dict()
    # The restored selection continues exactly like the original.
    a = lw.extend(sel, sampler.data, MORE)
    b = lw.extend(back, sampler.data, MORE)
    assert np.array_equal(a.indices, b.indices)


def test_from_dict_rejects_other_formats() -> None:
    d = lw.srs_select(N, 5, rng=0).to_dict()
    with pytest.raises(lw.LabelwiseError, match="format"):
        lw.Selection.from_dict({**d, "format": 999})
    del d["indices"]
    with pytest.raises(lw.LabelwiseError):
        lw.Selection.from_dict(d)


@pytest.mark.parametrize(
    ("name", "n", "m"),
    [
        ("srs", 40, 15),
        ("srs", 5, 5),
        ("ces", 40, 15),
        ("ces", 30, 25),
        ("ces", 55, 7),  # n - initial = 25, a whole number of groups; m need not be
        ("sds", 40, 15),
        ("ddg", 40, 15),
        ("rdg", 40, 15),
    ],
)
def test_select_then_extend_equals_selecting_at_once(name: str, n: int, m: int) -> None:
    sampler = next(s for s in SAMPLERS if s.name == name)
    ext = lw.extend(sampler.select(n, 11), sampler.data, m)
    once = sampler.select(n + m, 11)
    assert np.array_equal(ext.indices, once.indices)


def test_ces_extension_continues_the_objective_trace() -> None:
    sel = _ces(BUDGET, 11)
    ext = lw.extend(sel, PILE["activations"], MORE)
    once = _ces(BUDGET + MORE, 11)
    assert ext.diagnostics["objective_trace"] == pytest.approx(once.diagnostics["objective_trace"])


# --- property tests ---------------------------------------------------------------------


@settings(max_examples=30, deadline=None)
@given(data=st.data(), n_pop=st.integers(1, 300), seed=st.integers(0, 2**32 - 1))
def test_srs_size_property(data: st.DataObject, n_pop: int, seed: int) -> None:
    budget = data.draw(st.integers(1, n_pop), label="budget")
    sel = lw.srs_select(n_pop, budget, rng=seed)
    assert sel.indices.size == budget
    assert np.unique(sel.indices).size == budget
    assert sel.indices.min() >= 0
    assert sel.indices.max() < n_pop


@settings(max_examples=30, deadline=None)
@given(data=st.data(), n_pop=st.integers(3, 300), seed=st.integers(0, 2**32 - 1))
def test_css_size_property(data: st.DataObject, n_pop: int, seed: int) -> None:
    budget = data.draw(st.integers(3, n_pop), label="budget")
    conf = np.random.default_rng(seed).random(n_pop)
    sel = lw.css_select(conf, budget, rng=seed)
    assert sel.indices.size == budget
    assert np.unique(sel.indices).size == budget
    assert sel.indices.min() >= 0
    assert sel.indices.max() < n_pop
    assert sel.stratum_sizes is not None
    assert sel.strata is not None
    assert sum(sel.stratum_sizes) == n_pop
    got = np.bincount(sel.strata, minlength=3)
    sizes = np.asarray(sel.stratum_sizes)
    assert np.all(got <= sizes)
    assert np.all(got[sizes > 0] >= 1)  # every non-empty stratum has a label


@st.composite
def _allocation_problems(draw: st.DrawFn) -> tuple[int, np.ndarray, np.ndarray, np.ndarray]:
    k = draw(st.integers(1, 6))
    caps = np.array(draw(st.lists(st.integers(0, 40), min_size=k, max_size=k)), dtype=np.int64)
    mins = np.array(draw(st.lists(st.integers(0, 4), min_size=k, max_size=k)), dtype=np.int64)
    weights = np.array(
        draw(
            st.lists(
                st.floats(0, 10, allow_nan=False, allow_infinity=False), min_size=k, max_size=k
            )
        )
    )
    low = int(np.minimum(mins, caps).sum())
    high = int(caps.sum())
    if high < max(low, 1):
        caps[0] += max(low, 1) - high
        high = int(caps.sum())
    budget = draw(st.integers(max(low, 1), high))
    return budget, weights, caps, mins


@settings(max_examples=30, deadline=None)
@given(problem=_allocation_problems())
def test_allocate_property(problem: tuple[int, np.ndarray, np.ndarray, np.ndarray]) -> None:
    budget, weights, caps, mins = problem
    n = allocate(budget, weights, caps, mins)
    assert n.dtype.kind == "i"
    assert int(n.sum()) == budget
    assert np.all(n <= caps)
    assert np.all(n >= np.minimum(mins, caps))


@settings(max_examples=30, deadline=None)
@given(
    budget=st.integers(1, 500),
    weights=st.lists(st.floats(0.01, 10, allow_nan=False), min_size=1, max_size=6),
)
def test_allocate_without_binding_bounds_is_within_one_of_the_ideal(
    budget: int, weights: list[float]
) -> None:
    w = np.asarray(weights)
    k = w.size
    n = allocate(budget, w, np.full(k, 10**6, dtype=np.int64), np.zeros(k, dtype=np.int64))
    ideal = budget * w / w.sum()
    assert int(n.sum()) == budget
    # Largest remainder: every stratum gets floor or ceil of its ideal share.
    assert np.all(np.abs(n - ideal) < 1 + 1e-9)


@pytest.mark.parametrize(
    ("budget", "caps", "mins"),
    [(10, [3, 3, 3], [0, 0, 0]), (2, [5, 5, 5], [1, 1, 1])],
)
def test_allocate_infeasible_is_an_error(budget: int, caps: list[int], mins: list[int]) -> None:
    with pytest.raises(lw.LabelwiseError, match="budget"):
        allocate(budget, np.ones(3), np.asarray(caps), np.asarray(mins))

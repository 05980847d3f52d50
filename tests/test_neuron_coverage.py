"""Neuron k-activation coverage (Cheng et al. 2018, Sec. II-B) against the definition."""

from __future__ import annotations

import itertools
import json
from math import comb

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from labelwise.dependability import neuron
from labelwise.dependability.neuron import (
    KActivationCoverage,
    NeuronKCoverage,
    k_activation_coverage,
)
from labelwise.exceptions import LabelwiseError


def brute_cells(x: np.ndarray, k: int, threshold: float) -> set[tuple[tuple[int, ...], int]]:
    """Covered cells (subset, pattern) by the definition, input by input."""
    on = np.asarray(x).reshape(len(x), -1) > threshold
    cells = set()
    for row in on:
        for sub in itertools.combinations(range(on.shape[1]), k):
            p = 0
            for i in sub:
                p = 2 * p + int(row[i])
            cells.add((sub, p))
    return cells


def all_cells(c: int, k: int) -> set[tuple[tuple[int, ...], int]]:
    return {(sub, p) for sub in itertools.combinations(range(c), k) for p in range(2**k)}


def random_layer(rng: np.random.Generator, n: int, c: int) -> np.ndarray:
    """Correlated ReLU-like values with some always-off and rarely-on neurons."""
    z = rng.standard_normal((n, 2)) @ rng.standard_normal((2, c))
    x = np.maximum(z + 0.5 * rng.standard_normal((n, c)) - rng.uniform(-1, 2, c), 0.0)
    x[:, 0] = 0.0
    return x


# --------------------------------------------------------------------------- known values


def test_paper_style_example() -> None:
    # Two inputs, three neurons: each pair sees two of its four patterns -> 6 / 12.
    x = np.array([[1.0, 0.0, 2.0], [0.0, 3.0, 0.0]])
    r = k_activation_coverage(x, k=2)
    assert (r.covered, r.total, r.value) == (6, 12, 0.5)
    # pairs (0,1): 10, 01; (0,2): 11, 00; (1,2): 01, 10
    assert r.covered_by_pattern == (1, 2, 2, 1)
    assert r.covered_by_order == (6, 6) and r.total_by_order == (6, 12)
    assert r.ever_on == 3 and r.active_share == 1.0
    r3 = k_activation_coverage(x, k=3)
    assert (r3.covered, r3.total) == (2, 8)
    r1 = k_activation_coverage(x, k=1)
    assert (r1.covered, r1.total) == (6, 6)


def test_threshold_is_strict_and_exact() -> None:
    x = np.array([[0.0, 0.1, 0.2]], dtype=np.float32)
    r = k_activation_coverage(x, k=1)
    assert r.ever_on == 2  # 0.0 is not > 0
    # float32(0.1) > 0.1 in exact arithmetic: compared in float64, not at float32 precision
    assert k_activation_coverage(x, k=1, threshold=0.1).ever_on == 2
    assert k_activation_coverage(x, k=1, threshold=0.2).ever_on == 1  # float32(0.2) > 0.2
    assert k_activation_coverage(x, k=1, threshold=0.25).ever_on == 0


# --------------------------------------------------------------------------- brute force


@pytest.mark.parametrize("k", [1, 2, 3])
@pytest.mark.parametrize("threshold", [0.0, 0.3, -0.5, 1.5])
@pytest.mark.parametrize("seed", range(4))
def test_matches_brute_force(k: int, threshold: float, seed: int) -> None:
    rng = np.random.default_rng(seed)
    c = int(rng.integers(3, 11))
    n = int(rng.integers(1, 90))
    x = random_layer(rng, n, c)
    r = k_activation_coverage(x, k=k, threshold=threshold)
    cells = brute_cells(x, k, threshold)
    assert r.covered == len(cells)
    assert r.total == comb(c, k) * 2**k
    assert r.value == len(cells) / r.total
    assert r.covered_by_pattern == tuple(sum(1 for _, p in cells if p == q) for q in range(2**k))
    assert r.covered_by_order == tuple(len(brute_cells(x, o, threshold)) for o in range(1, k + 1))
    assert r.ever_on == int(np.count_nonzero((x > threshold).any(axis=0)))
    assert (r.k, r.threshold, r.n_inputs, r.n_neurons) == (k, threshold, n, c)


@pytest.mark.parametrize("k", [1, 2, 3])
def test_uncovered_lists_the_missing_cells(k: int) -> None:
    rng = np.random.default_rng(7)
    x = random_layer(rng, 20, 7)
    acc = NeuronKCoverage(7, k=k).update(x)
    missing = all_cells(7, k) - brute_cells(x, k, 0.0)
    u = acc.uncovered(max_cells=None)
    listed = {
        (tuple(int(i) for i in nrn), int("".join("1" if b else "0" for b in pat), 2))
        for nrn, pat in zip(u.neurons, u.patterns, strict=True)
    }
    assert listed == missing
    assert u.n_uncovered == len(missing) == acc.result().total - acc.result().covered
    capped = acc.uncovered(max_cells=3)
    assert len(capped) == min(3, len(missing)) and capped.n_uncovered == len(missing)
    assert capped.neurons.shape == (len(capped), k)


@pytest.mark.parametrize("k", [2, 3])
def test_row_blocks_and_threads_give_the_same_cells(
    k: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = np.random.default_rng(3)
    x = random_layer(rng, 200, 12)
    want = len(brute_cells(x, k, 0.0))
    monkeypatch.setattr(neuron, "ROW_BLOCK", 37)  # several packed blocks, odd sizes
    monkeypatch.setattr(neuron, "PARALLEL_WORK", 0)  # round-robin tasks on all threads
    assert k_activation_coverage(x, k=k).covered == want


def test_many_inputs_span_several_words() -> None:
    rng = np.random.default_rng(11)
    x = random_layer(rng, 700, 6)  # 11 words of 64 inputs, last one partial
    for k in (2, 3):
        assert k_activation_coverage(x, k=k).covered == len(brute_cells(x, k, 0.0))


def test_higher_rank_and_other_dtypes() -> None:
    rng = np.random.default_rng(5)
    x = random_layer(rng, 30, 12)
    flat = k_activation_coverage(x, k=2)
    assert k_activation_coverage(x.reshape(30, 3, 4), k=2) == flat
    assert k_activation_coverage(x.astype(np.float32), k=2) == flat
    assert k_activation_coverage(x > 0, k=2) == flat
    assert k_activation_coverage((x > 0).astype(np.int8), k=2) == flat


# --------------------------------------------------------------------------- accumulator


@pytest.mark.parametrize("k", [1, 2, 3])
def test_merge_of_halves_equals_one_pass(k: int) -> None:
    rng = np.random.default_rng(k)
    x = random_layer(rng, 150, 9)
    whole = NeuronKCoverage(9, k=k).update(x).result()
    a = NeuronKCoverage(9, k=k).update(x[:70])
    b = NeuronKCoverage(9, k=k).update(x[70:])
    assert a.merge(b) is a
    assert a.result() == whole
    streamed = NeuronKCoverage(9, k=k)
    for part in np.array_split(x, 7):
        streamed.update(part)
    assert streamed.result() == whole
    assert whole.n_inputs == 150


def test_empty_state_and_empty_batch() -> None:
    acc = NeuronKCoverage(5, k=3)
    r = acc.result()
    assert (r.value, r.covered, r.n_inputs, r.ever_on) == (0.0, 0, 0, 0)
    acc.update(np.empty((0, 5)))
    assert acc.result() == r
    acc.update(np.ones((1, 5)))
    assert acc.result().covered == comb(5, 3)
    assert acc.reset().result() == r


def test_result_is_frozen_and_serialisable() -> None:
    r = k_activation_coverage(np.eye(4), k=2)
    assert isinstance(r, KActivationCoverage)
    with pytest.raises(AttributeError):
        r.value = 1.0  # type: ignore[misc]
    d = json.loads(json.dumps(r.to_dict()))
    assert d["covered"] == r.covered and d["covered_by_pattern"] == list(r.covered_by_pattern)
    assert r.value_by_order == tuple(
        c / t for c, t in zip(r.covered_by_order, r.total_by_order, strict=True)
    )


# --------------------------------------------------------------------------- properties

layers = st.tuples(st.integers(1, 25), st.integers(3, 8)).flatmap(
    lambda shape: hnp.arrays(
        np.float64, shape, elements=st.floats(-2, 2, allow_nan=False, width=32)
    )
)


@settings(max_examples=60, deadline=None)
@given(x=layers, k=st.integers(1, 3), threshold=st.sampled_from([0.0, 0.5, -1.0]))
def test_value_in_unit_interval_and_matches_definition(
    x: np.ndarray, k: int, threshold: float
) -> None:
    r = k_activation_coverage(x, k=k, threshold=threshold)
    assert 0.0 <= r.value <= 1.0
    assert 0 < r.covered <= r.total
    assert r.covered == len(brute_cells(x, k, threshold))


@settings(max_examples=40, deadline=None)
@given(x=layers, extra=layers, k=st.integers(1, 3))
def test_monotone_in_added_inputs(x: np.ndarray, extra: np.ndarray, k: int) -> None:
    c = x.shape[1]
    more = np.resize(extra, (extra.shape[0], c))
    acc = NeuronKCoverage(c, k=k).update(x)
    before = acc.result()
    missing_before = {tuple(map(tuple, row)) for row in _cells(acc)}
    after = acc.update(more).result()
    assert after.covered >= before.covered
    assert after.value >= before.value
    assert {tuple(map(tuple, row)) for row in _cells(acc)} <= missing_before


def _cells(acc: NeuronKCoverage) -> list[tuple[np.ndarray, np.ndarray]]:
    u = acc.uncovered(max_cells=None)
    return list(zip(u.neurons, u.patterns, strict=True))


@settings(max_examples=40, deadline=None)
@given(x=layers, k=st.integers(1, 3), seed=st.integers(0, 2**32 - 1))
def test_invariant_to_input_order(x: np.ndarray, k: int, seed: int) -> None:
    perm = np.random.default_rng(seed).permutation(x.shape[0])
    assert k_activation_coverage(x[perm], k=k) == k_activation_coverage(x, k=k)


# --------------------------------------------------------------------------- bad input


@pytest.mark.parametrize("k", [0, 4, -1, 2.0, True, "2"])
def test_bad_k(k: object) -> None:
    with pytest.raises(LabelwiseError, match="k must"):
        NeuronKCoverage(8, k=k)  # type: ignore[arg-type]
    with pytest.raises(LabelwiseError, match="k must"):
        k_activation_coverage(np.ones((3, 8)), k=k)  # type: ignore[arg-type]


def test_bad_config() -> None:
    with pytest.raises(LabelwiseError, match="k must be <= n_neurons"):
        NeuronKCoverage(2, k=3)
    with pytest.raises(LabelwiseError, match="n_neurons"):
        NeuronKCoverage(0)
    with pytest.raises(LabelwiseError, match="limit"):
        NeuronKCoverage(5000, k=3)
    for bad in (float("nan"), float("inf"), "0", True, None):
        with pytest.raises(LabelwiseError, match="threshold"):
            NeuronKCoverage(4, threshold=bad)  # type: ignore[arg-type]


def test_bad_batches() -> None:
    acc = NeuronKCoverage(4, k=2)
    with pytest.raises(LabelwiseError, match="n_neurons=4"):
        acc.update(np.ones((3, 5)))
    x = np.ones((3, 4))
    x[1, 2] = np.nan
    with pytest.raises(LabelwiseError, match="finite"):
        acc.update(x)
    x[1, 2] = np.inf
    with pytest.raises(LabelwiseError, match="finite"):
        k_activation_coverage(x)
    with pytest.raises(LabelwiseError, match="activations must be"):
        acc.update(np.ones(4))
    with pytest.raises(LabelwiseError, match="numbers"):
        acc.update(np.array([["a", "b", "c", "d"]]))
    with pytest.raises(LabelwiseError, match="at least 1 row"):
        k_activation_coverage(np.empty((0, 4)))
    assert acc.n_inputs == 0  # failed updates leave the state alone


def test_merge_needs_same_config() -> None:
    a = NeuronKCoverage(6, k=2).update(np.eye(6))
    for other in (
        NeuronKCoverage(7, k=2),
        NeuronKCoverage(6, k=3),
        NeuronKCoverage(6, k=2, threshold=0.5),
    ):
        with pytest.raises(LabelwiseError, match="same"):
            a.merge(other)
    with pytest.raises(LabelwiseError, match="NeuronKCoverage"):
        a.merge(k_activation_coverage(np.eye(6)))  # type: ignore[arg-type]
    assert a.n_inputs == 6


# --------------------------------------------------------------------------- dnn-tip


@pytest.mark.parametrize("threshold", [0.0, 0.25, 1.0])
def test_k1_active_share_equals_dnn_tip_nac(threshold: float) -> None:
    nc = pytest.importorskip("dnn_tip.neuron_coverage")
    rng = np.random.default_rng(17)
    x = random_layer(rng, 300, 40)
    _, profiles = nc.NAC(threshold)([x])
    nac = float(profiles.any(axis=0).mean())
    r = k_activation_coverage(x, k=1, threshold=threshold)
    assert r.active_share == nac
    assert 0 < nac < 1  # the case is not trivial


def test_a_scalar_gets_a_short_rank_message() -> None:
    # the rank check of any-rank per-input arrays listed all 32 NumPy ranks ("1-D or 2-D or ...
    # or 32-D"); a run of ranks is now said as one bound
    with pytest.raises(LabelwiseError, match=r"activations must be at least 1-D, got shape \(\)$"):
        k_activation_coverage(np.float64(1.0), k=1)
    with pytest.raises(LabelwiseError, match="per-input arrays, got shape"):
        k_activation_coverage(np.ones(4), k=1)

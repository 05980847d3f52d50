"""Every accumulator obeys update / merge / reset / result exactly (labelwise._accumulate).

Property: for any data and any split of its rows into chunks, one accumulator per chunk merged
together gives the same result as one accumulator updated with all rows; updating one
accumulator chunk by chunk does too; ``reset()`` returns to the result of no rows. Values are
drawn from a small grid so ties with thresholds, section bounds and corner boundaries occur.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import warnings
from collections.abc import Callable
from itertools import pairwise
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import labelwise
from labelwise._accumulate import Accumulator
from labelwise._contract import Result
from labelwise.dependability import NeuronKCoverage
from labelwise.exceptions import DegenerateDataWarning
from labelwise.quality import (
    ActivationProfile,
    KMultisectionCoverage,
    NeuronBoundaryCoverage,
    NeuronCoverage,
    StrongNeuronActivationCoverage,
    TopKNeuronCoverage,
)

GRID = (-2.0, -1.0, 0.0, 0.5, 1.0, 2.0, 3.0)
NOT_YET = {"labelwise.dependability.robustness", "labelwise.dependability.interpretation"}

Layers = list[np.ndarray]
Factory = Callable[[tuple[int, ...], Layers], Any]


def _profile(train: Layers) -> ActivationProfile:
    return ActivationProfile().update(train)


FACTORIES: dict[str, Factory] = {
    "NeuronKCoverage-k1": lambda w, train: NeuronKCoverage(sum(w), k=1, threshold=0.5),
    "NeuronKCoverage-k2": lambda w, train: NeuronKCoverage(sum(w), k=min(2, sum(w))),
    "NeuronKCoverage-k3": lambda w, train: NeuronKCoverage(sum(w), k=min(3, sum(w))),
    "NeuronCoverage": lambda w, train: NeuronCoverage(0.5),
    "TopKNeuronCoverage": lambda w, train: TopKNeuronCoverage(2),
    "KMultisectionCoverage": lambda w, train: KMultisectionCoverage(_profile(train), 3),
    "NeuronBoundaryCoverage": lambda w, train: NeuronBoundaryCoverage(_profile(train)),
    "NeuronBoundaryCoverage-inclusive": lambda w, train: NeuronBoundaryCoverage(
        _profile(train), scaler=0.5, inclusive=True
    ),
    "StrongNeuronActivationCoverage": lambda w, train: StrongNeuronActivationCoverage(
        _profile(train), inclusive=True
    ),
    "ActivationProfile": lambda w, train: ActivationProfile(),
}


def _batch(acc: Any, layers: Layers) -> Any:
    """NeuronKCoverage takes one (N, c) array; the adequacy accumulators take layer lists."""
    return np.concatenate(layers, axis=1) if isinstance(acc, NeuronKCoverage) else layers


def _rows(layers: Layers, a: int, b: int) -> Layers:
    return [x[a:b] for x in layers]


def _same(r1: Result, r2: Result) -> None:
    d1, d2 = r1.to_dict(), r2.to_dict()
    if "mean" in d1:  # ActivationStatistics: min/max exact, moments up to rounding
        for key in ("mean", "std"):
            a = np.array(d1.pop(key), dtype=float)
            b = np.array(d2.pop(key), dtype=float)
            np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-9)
    assert d1 == d2


@st.composite
def cases(draw: st.DrawFn) -> tuple[tuple[int, ...], Layers, Layers, list[int]]:
    widths = tuple(draw(st.lists(st.integers(1, 4), min_size=1, max_size=2)))
    n = draw(st.integers(0, 25))
    vals = st.sampled_from(GRID)

    def layers(rows: int) -> Layers:
        return [
            np.array(draw(st.lists(vals, min_size=rows * w, max_size=rows * w))).reshape(rows, w)
            for w in widths
        ]

    test = layers(n)
    train = layers(draw(st.integers(1, 6)))
    cuts = sorted(draw(st.lists(st.integers(0, n), max_size=4)))
    return widths, train, test, [0, *cuts, n]


@pytest.mark.parametrize("name", sorted(FACTORIES))
@settings(max_examples=40, deadline=None)
@given(case=cases())
def test_chunks_merged_equal_one_pass(
    name: str, case: tuple[tuple[int, ...], Layers, Layers, list[int]]
) -> None:
    widths, train, test, bounds = case
    make = FACTORIES[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DegenerateDataWarning)  # constant training neurons
        whole = make(widths, train)
        assert isinstance(whole, Accumulator)
        whole.update(_batch(whole, test))
        merged = make(widths, train)
        merged.update(_batch(merged, _rows(test, 0, 0)))  # an empty first chunk
        streamed = make(widths, train)
        for a, b in pairwise(bounds):
            part = make(widths, train).update(_batch(whole, _rows(test, a, b)))
            assert merged.merge(part) is merged
            assert streamed.update(_batch(whole, _rows(test, a, b))) is streamed
        expected = whole.result()
        assert isinstance(expected, Result)
        _same(merged.result(), expected)
        _same(streamed.result(), expected)
        # reset: back to the result of no rows, and usable again
        empty = make(widths, train).update(_batch(whole, _rows(test, 0, 0))).result()
        assert whole.reset() is whole
        _same(whole.result(), empty)
        _same(whole.update(_batch(whole, test)).result(), expected)


def test_accumulators_are_all_listed() -> None:
    """Every public class with update/merge/reset/result is exercised above."""
    for mod in pkgutil.walk_packages(labelwise.__path__, "labelwise."):
        if mod.name not in NOT_YET:
            try:
                importlib.import_module(mod.name)
            except ImportError:  # optional dependency missing
                continue
    found = set()
    for mod_name, module in list(__import__("sys").modules.items()):
        if not mod_name.startswith("labelwise.") or mod_name in NOT_YET:
            continue
        for name, obj in vars(module).items():
            if (
                inspect.isclass(obj)
                and obj.__module__ == mod_name
                and not name.startswith("_")
                and obj is not Accumulator
                and all(callable(getattr(obj, m, None)) for m in ("update", "merge", "result"))
            ):
                found.add(name)
    listed = {name.split("-")[0] for name in FACTORIES}
    assert found == listed


def test_merge_refuses_a_different_setup() -> None:
    a = NeuronCoverage(0.0).update(np.zeros((2, 3)))
    b = NeuronCoverage(0.5).update(np.zeros((2, 3)))
    with pytest.raises(labelwise.LabelwiseError, match="same setup"):
        a.merge(b)
    with pytest.raises(labelwise.LabelwiseError, match="n_neurons, k, threshold"):
        NeuronKCoverage(3, k=1).merge(NeuronKCoverage(3, k=1, threshold=1.0))


def test_nc_is_counted_by_the_k_activation_core() -> None:
    """NC and the "on" half of 1-activation coverage are one count."""
    rng = np.random.default_rng(3)
    x = np.maximum(rng.normal(size=(40, 30)) - 1.0, 0.0)
    nc = NeuronCoverage(0.0).update(x).result()
    k1 = NeuronKCoverage(30, k=1).update(x).result()
    assert nc.covered == k1.ever_on == int((x > 0).any(axis=0).sum())
    assert nc.value == k1.active_share

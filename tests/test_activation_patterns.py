"""Neuron activation-pattern metric (Cheng et al. 2018, Sec. II-C) on hand-computed cases."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from labelwise import _plotting
from labelwise.dependability.patterns import (
    ActivationPattern,
    activation_pattern,
    plot_activation_pattern,
)
from labelwise.exceptions import LabelwiseError


def layer_with_counts(counts: list[int], c: int) -> np.ndarray:
    """One row per input with exactly ``counts[r]`` active neurons (value 1, others 0)."""
    x = np.zeros((len(counts), c))
    for r, a in enumerate(counts):
        x[r, :a] = 1.0
    return x


def test_single_scenario_by_hand() -> None:
    # c = 10, gamma = 5: bins [0,2) [2,4) [4,6) [6,8) [8,10]
    counts = [0, 1, 4, 4, 5, 5, 4, 9, 10, 7]
    r = activation_pattern(layer_with_counts(counts, 10), gamma=5)
    (g,) = r.groups
    assert g.label == 0 and g.n_inputs == 10
    assert g.bin_counts.tolist() == [2, 0, 5, 1, 2]
    assert g.largest_bin == 2 and not g.largest_tied
    # outside bins 1, 2, 3: the two inputs in bin 0 and the two in bin 4
    assert g.n_outside == 4 and g.value == 0.4
    assert g.active_counts.tolist() == [1, 1, 0, 0, 3, 2, 0, 1, 0, 1, 1]
    assert r.n_active.tolist() == counts
    assert r.outside.tolist() == [True, True, False, False, False, False, False, True, True, False]
    assert r.value == 0.4
    assert r.bin_edges.tolist() == [0.0, 2.0, 4.0, 6.0, 8.0, 10.0]
    assert (r.gamma, r.n_neurons, r.threshold) == (5, 10, 0.0)


def test_boundaries_go_to_the_upper_bin_and_c_to_the_last() -> None:
    # c = 4, gamma = 2: a = 0, 1 -> bin 0; a = 2, 3, 4 -> bin 1
    r = activation_pattern(layer_with_counts([0, 1, 2, 3, 4], 4), gamma=2)
    assert r.groups[0].bin_counts.tolist() == [2, 3]
    # c = 3, gamma = 2: bins [0, 1.5) and [1.5, 3]
    r = activation_pattern(layer_with_counts([0, 1, 2, 3], 3), gamma=2)
    assert r.groups[0].bin_counts.tolist() == [2, 2]
    # gamma > c: some bins cannot be reached (c = 2, gamma = 4: a = 0, 1, 2 -> 0, 2, 3)
    r = activation_pattern(layer_with_counts([0, 1, 2, 2], 2), gamma=4)
    assert r.groups[0].bin_counts.tolist() == [1, 0, 1, 2]
    assert r.groups[0].largest_bin == 3 and r.groups[0].value == 0.25


def test_ties_take_the_lowest_bin_and_are_flagged() -> None:
    # c = 6, gamma = 3: bins [0,2) [2,4) [4,6]; counts 2 / 0 / 2 -> j = 0, bin 2 is outside
    r = activation_pattern(layer_with_counts([0, 1, 5, 6], 6), gamma=3)
    g = r.groups[0]
    assert g.bin_counts.tolist() == [2, 0, 2]
    assert g.largest_bin == 0 and g.largest_tied
    assert g.value == 0.5


def test_groups_are_scored_separately() -> None:
    # c = 10, gamma = 10 (one bin per count, last bin holds 9 and 10)
    sun = [3, 3, 3, 4, 2, 9]  # largest 3; bins 2, 4 are neighbours; 9 is outside
    rain = [7, 7, 0, 8, 6, 7, 1]  # largest 7; 0 and 1 outside
    x = layer_with_counts(sun + rain, 10)
    labels = ["sun"] * len(sun) + ["rain"] * len(rain)
    r = activation_pattern(x, labels, gamma=10)
    assert r.labels == ("rain", "sun")  # sorted
    assert r["sun"].largest_bin == 3 and r["sun"].n_outside == 1
    assert r["sun"].value == pytest.approx(1 / 6)
    assert r["rain"].largest_bin == 7 and r["rain"].n_outside == 2
    assert r["rain"].value == pytest.approx(2 / 7)
    assert r.values.tolist() == [r["rain"].value, r["sun"].value]
    sun_out = [False] * 5 + [True]
    rain_out = [False, False, True, False, False, False, True]
    assert r.outside.tolist() == sun_out + rain_out
    assert r.value == pytest.approx(3 / 13)
    assert len(r) == 2 and [g.label for g in r] == ["rain", "sun"]
    with pytest.raises(KeyError):
        r["snow"]


def test_integer_classes_and_threshold() -> None:
    x = np.array([[0.5, 0.6, 0.1], [0.5, 0.5, 0.5], [0.9, 0.9, 0.9]])
    r = activation_pattern(x, np.array([1, 1, 2]), gamma=3, threshold=0.5)
    assert r.n_active.tolist() == [1, 0, 3]  # 0.5 is not > 0.5
    assert r.labels == (1, 2) and isinstance(r.labels[0], int)
    assert r[2].bin_counts.tolist() == [0, 0, 1]


def test_gamma_one_means_no_outliers() -> None:
    x = layer_with_counts([0, 5, 10], 10)
    r = activation_pattern(x, gamma=1)
    assert r.groups[0].bin_counts.tolist() == [3] and r.value == 0.0


def test_higher_rank_flattened() -> None:
    x = layer_with_counts([1, 2, 3, 4], 6)
    assert activation_pattern(x.reshape(4, 2, 3), gamma=3).n_active.tolist() == [1, 2, 3, 4]


def test_result_is_frozen_readonly_and_serialisable() -> None:
    r = activation_pattern(layer_with_counts([0, 1, 2], 4), ["a", "b", "a"], gamma=2)
    assert isinstance(r, ActivationPattern)
    with pytest.raises(AttributeError):
        r.value = 0.0  # type: ignore[misc]
    with pytest.raises(ValueError):
        r.n_active[0] = 5
    d = json.loads(json.dumps(r.to_dict()))
    assert [g["label"] for g in d["groups"]] == ["a", "b"]
    assert d["groups"][0]["bin_counts"] == [1, 1]


layers = st.tuples(st.integers(1, 30), st.integers(1, 12)).flatmap(
    lambda shape: hnp.arrays(np.float64, shape, elements=st.floats(-1, 1, width=32))
)


@settings(max_examples=50, deadline=None)
@given(x=layers, gamma=st.integers(1, 15), n_groups=st.integers(1, 3), seed=st.integers(0, 99))
def test_properties(x: np.ndarray, gamma: int, n_groups: int, seed: int) -> None:
    groups = np.random.default_rng(seed).integers(0, n_groups, size=(x.shape[0],))
    r = activation_pattern(x, groups, gamma=gamma)
    assert 0.0 <= r.value <= 1.0
    assert sum(g.n_outside for g in r) == int(r.outside.sum())
    for g in r:
        assert g.bin_counts.sum() == g.active_counts.sum() == g.n_inputs
        assert g.bin_counts[g.largest_bin] == g.bin_counts.max()
        assert 0.0 <= g.value <= 1.0
    perm = np.random.default_rng(seed).permutation(x.shape[0])
    shuffled = activation_pattern(x[perm], groups[perm], gamma=gamma)
    assert shuffled.values.tolist() == r.values.tolist()


def test_bad_input() -> None:
    x = layer_with_counts([1, 2, 3], 4)
    with pytest.raises(LabelwiseError, match="gamma"):
        activation_pattern(x, gamma=0)
    with pytest.raises(LabelwiseError, match="gamma"):
        activation_pattern(x, gamma=2.5)  # type: ignore[arg-type]
    with pytest.raises(LabelwiseError, match="groups"):
        activation_pattern(x, [0, 1])
    with pytest.raises(LabelwiseError, match="groups"):
        activation_pattern(x, [0.0, np.nan, 1.0])
    with pytest.raises(LabelwiseError, match="threshold"):
        activation_pattern(x, threshold=float("nan"))
    with pytest.raises(LabelwiseError, match="activations"):
        activation_pattern(np.ones(4))
    bad = x.copy()
    bad[0, 0] = np.nan
    with pytest.raises(LabelwiseError, match="finite"):
        activation_pattern(bad)
    with pytest.raises(LabelwiseError, match="at least 1 row"):
        activation_pattern(np.empty((0, 4)))
    with pytest.raises(LabelwiseError, match="at least one neuron"):
        activation_pattern(np.empty((3, 0)))


def test_plot_writes_png(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    x = layer_with_counts([3, 3, 3, 4, 2, 9, 7, 7, 0, 8, 6], 10)
    r = activation_pattern(x, [0] * 6 + [1] * 5, gamma=5)
    out = plot_activation_pattern(r, tmp_path / "patterns.png")
    assert out is not None and out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    one = plot_activation_pattern(r, tmp_path / "one.png", labels=[1])
    assert one is not None and one.exists()
    with pytest.raises(LabelwiseError, match="labels"):
        plot_activation_pattern(r, tmp_path / "x.png", labels=[5])


def test_plot_without_matplotlib(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_plotting, "pyplot", lambda: None)
    r = activation_pattern(layer_with_counts([1, 2], 4))
    assert plot_activation_pattern(r, tmp_path / "none.png") is None
    assert not (tmp_path / "none.png").exists()

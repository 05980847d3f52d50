"""Classic adequacy coverage (NC, KMNC, NBC, SNAC, TKNC): known values, dnn-tip, streaming."""

from __future__ import annotations

import numpy as np
import pytest

from labelwise.exceptions import DegenerateDataWarning, LabelwiseError
from labelwise.quality.adequacy import (
    ActivationProfile,
    AdequacyCoverage,
    KMultisectionCoverage,
    NeuronBoundaryCoverage,
    NeuronCoverage,
    StrongNeuronActivationCoverage,
    TopKNeuronCoverage,
    kmnc,
    nbc,
    neuron_coverage,
    snac,
    tknc,
)

# --------------------------------------------------------------------------- hand-computed

TRAIN = np.array([[0.0, -1.0, 5.0], [4.0, 1.0, 5.0]])  # ranges [0, 4], [-1, 1], constant 5
TEST = np.array([[0.5, 0.9, 5.0], [3.9, -2.0, 6.0], [4.0, 0.0, 4.0]])


def test_nc_hand_computed() -> None:
    r = neuron_coverage(TEST, threshold=0.8)
    # neuron 0: 3.9 > 0.8; neuron 1: 0.9 > 0.8; neuron 2: 5 > 0.8
    assert (r.covered, r.total, r.value) == (3, 3, 1.0)
    r = neuron_coverage(TEST, threshold=4.5)
    assert (r.covered, r.total) == (1, 3)
    assert r.metric == "nc" and r.n_inputs == 3 and r.params == {"threshold": 4.5}


def test_kmnc_hand_computed() -> None:
    with pytest.warns(DegenerateDataWarning, match="1 of 3 neurons are constant"):
        r = kmnc(TRAIN, TEST, k=4)
    # neuron 0, sections [0,1) [1,2) [2,3) [3,4): 0.5 -> 0, 3.9 -> 3, 4.0 -> none (half-open)
    # neuron 1, sections [-1,-.5) [-.5,0) [0,.5) [.5,1): 0.9 -> 3, -2 -> none, 0.0 -> 2
    # neuron 2 is constant: never covered
    assert (r.covered, r.total) == (4, 12)
    assert r.value == pytest.approx(4 / 12)


def test_nbc_snac_hand_computed() -> None:
    r = nbc(TRAIN, TEST)
    # lower: neuron 1 (-2 < -1), neuron 2 (4 < 5); upper: neuron 2 (6 > 5); 4.0 == max is no
    assert (r.covered_lower, r.covered_upper, r.covered, r.total) == (2, 1, 3, 6)
    r = nbc(TRAIN, TEST, inclusive=True)  # dnn-tip: 4.0 >= max 4 now counts
    assert (r.covered_lower, r.covered_upper) == (2, 2)
    s = snac(TRAIN, TEST)
    assert (s.covered, s.total) == (1, 3)
    assert snac(TRAIN, TEST, inclusive=True).covered == 2
    # scaler widens by the population std: neuron 1 std = 1 -> lower bound -1 - 1.5 = -2.5
    assert nbc(TRAIN, TEST, scaler=1.5).covered_lower == 1  # only neuron 2 (std 0)


def test_tknc_hand_computed() -> None:
    layer1 = np.array([[1.0, 2.0, 3.0], [3.0, 2.0, 1.0]])
    layer2 = np.array([[0.0, 1.0], [0.0, 1.0]])
    r = tknc([layer1, layer2], k=1)
    assert (r.covered_by_layer, r.total_by_layer, r.covered, r.total) == ((2, 1), (3, 2), 3, 5)
    r = tknc([layer1, layer2], k=2)  # layer 2 is narrower than... equal to k: all covered
    assert r.covered_by_layer == (3, 2)
    ties = np.array([[1.0, 1.0, 0.0]])
    assert tknc(ties, k=1).covered_by_layer == (1,)  # the tie goes to the higher index


def test_layers_flatten_and_concatenate() -> None:
    rng = np.random.default_rng(0)
    conv = rng.normal(size=(5, 2, 3, 3))
    dense = rng.normal(size=(5, 4))
    r = neuron_coverage([conv, dense], threshold=0.5)
    assert r.total_by_layer == (18, 4) and r.n_neurons == 22
    flat = np.concatenate([conv.reshape(5, -1), dense], axis=1)
    assert neuron_coverage(flat, threshold=0.5).covered == r.covered
    assert isinstance(r, AdequacyCoverage) and r.to_dict()["covered_by_layer"] == list(
        r.covered_by_layer
    )


# --------------------------------------------------------------------------- dnn-tip


def _data(seed: int) -> tuple[list[np.ndarray], list[np.ndarray]]:
    rng = np.random.default_rng(seed)
    widths = [(3, 2, 2), (7,), (5,)]
    train = [rng.normal(size=(60, *w)) * (i + 1) for i, w in enumerate(widths)]
    test = [rng.normal(size=(40, *w)) * (i + 1.3) + 0.2 for i, w in enumerate(widths)]
    return train, test


def _set_coverage(profiles: np.ndarray) -> float:
    return float(profiles.reshape(profiles.shape[0], -1).any(axis=0).mean())


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_agrees_with_dnn_tip(seed: int) -> None:
    nc_mod = pytest.importorskip("dnn_tip.neuron_coverage")
    train, test = _data(seed)
    mins = [t.min(axis=0) for t in train]
    maxs = [t.max(axis=0) for t in train]
    stds = [t.std(axis=0) for t in train]
    profile = ActivationProfile.from_activations(train)

    for thr in (-0.5, 0.0, 0.75, 2.0):
        _, prof = nc_mod.NAC(thr)(test)
        assert neuron_coverage(test, thr).value == _set_coverage(prof)
    for k in (1, 2, 3, 10, 37):
        _, prof = nc_mod.KMNC(mins, maxs, k)(test)
        assert kmnc(profile, test, k).value == _set_coverage(prof)
        _, prof = nc_mod.KMNC(mins, maxs, k)(train)  # boundary values: minima and maxima
        assert kmnc(profile, train, k).value == _set_coverage(prof)
    for scaler in (0.0, 0.5, 1.0):
        _, prof = nc_mod.NBC(mins, maxs, stds, scaler)(test)
        assert nbc(profile, test, scaler=scaler, inclusive=True).value == _set_coverage(prof)
        assert nbc(profile, test, scaler=scaler).value == _set_coverage(prof)  # no ties
        _, prof = nc_mod.SNAC(maxs, stds, scaler)(test)
        assert snac(profile, test, scaler=scaler, inclusive=True).value == _set_coverage(prof)
    _, prof = nc_mod.NBC(mins, maxs, stds, 0.0)(train)  # ties everywhere: needs inclusive
    assert nbc(profile, train, inclusive=True).value == _set_coverage(prof) == 1.0
    assert nbc(profile, train).value == 0.0
    for k in (1, 2, 3, 6, 20):
        _, prof = nc_mod.TKNC(k)(test)
        assert tknc(test, k).value == _set_coverage(prof)


def test_profile_statistics_match_numpy() -> None:
    train, _ = _data(3)
    flat = np.concatenate([t.reshape(len(t), -1) for t in train], axis=1)
    p = ActivationProfile()
    for start in range(0, 60, 7):
        p.update([t[start : start + 7] for t in train])
    assert p.layer_widths == (12, 7, 5) and p.n_inputs == 60
    np.testing.assert_array_equal(p.min, flat.min(axis=0))
    np.testing.assert_array_equal(p.max, flat.max(axis=0))
    np.testing.assert_allclose(p.mean, flat.mean(axis=0), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(p.std, flat.std(axis=0), rtol=1e-12)


# --------------------------------------------------------------------------- streaming


def _accumulators(profile: ActivationProfile) -> list:
    return [
        lambda: NeuronCoverage(0.5),
        lambda: TopKNeuronCoverage(2),
        lambda: KMultisectionCoverage(profile, 8),
        lambda: NeuronBoundaryCoverage(profile, scaler=0.3),
        lambda: StrongNeuronActivationCoverage(profile),
    ]


def test_streaming_and_merge_equal_one_pass() -> None:
    train, test = _data(4)
    halves = [[t[:30] for t in train], [t[30:] for t in train]]
    profile = ActivationProfile.from_activations(halves[0]).merge(
        ActivationProfile.from_activations(halves[1])
    )
    for make in _accumulators(profile):
        whole = make().update(test).result()
        chunked = make()
        for start in range(0, 40, 9):
            chunked.update([t[start : start + 9] for t in test])
        a, b = make(), make()
        a.update([t[:13] for t in test])
        b.update([t[13:] for t in test])
        merged = make().merge(a).merge(b).result()
        assert chunked.result() == whole == merged
        assert whole.n_inputs == 40


def test_empty_accumulator_and_empty_batch() -> None:
    acc = NeuronCoverage(0.0)
    with pytest.raises(LabelwiseError, match="no layer widths"):
        acc.result()
    acc.update(np.zeros((0, 4)))
    r = acc.result()
    assert (r.value, r.covered, r.total, r.n_inputs) == (0.0, 0, 4, 0)


# --------------------------------------------------------------------------- bad input


def test_bad_inputs() -> None:
    train, test = _data(5)
    profile = ActivationProfile.from_activations(train)
    with pytest.raises(LabelwiseError, match="layer widths"):
        kmnc(profile, test[:2], 3)
    with pytest.raises(LabelwiseError, match="layer widths"):
        NeuronCoverage(0.0).update(np.ones((2, 3))).update(np.ones((2, 4)))
    with pytest.raises(LabelwiseError, match="same inputs"):
        neuron_coverage([np.ones((2, 3)), np.ones((3, 3))])
    bad = test[1].copy()
    bad[3, 2] = np.nan
    with pytest.raises(LabelwiseError, match="finite"):
        snac(profile, [test[0], bad, test[2]])
    with pytest.raises(LabelwiseError, match="finite"):
        ActivationProfile().update(np.array([[1.0, np.inf]]))
    for k in (0, -1, 1.5, True):
        with pytest.raises(LabelwiseError, match="k must"):
            kmnc(profile, test, k)
        with pytest.raises(LabelwiseError, match="k must"):
            tknc(test, k)
    with pytest.raises(LabelwiseError, match="per-input activations"):
        neuron_coverage(np.ones(5))
    with pytest.raises(LabelwiseError, match="threshold"):
        neuron_coverage(test, float("nan"))
    with pytest.raises(LabelwiseError, match="scaler"):
        nbc(profile, test, scaler=-1.0)
    with pytest.raises(LabelwiseError, match="at least one training input"):
        kmnc(ActivationProfile(), test, 2)
    with pytest.raises(LabelwiseError, match="merge"):
        NeuronCoverage(0.0).merge(NeuronCoverage(1.0))
    with pytest.raises(LabelwiseError, match="merge"):
        NeuronCoverage(0.0).merge(TopKNeuronCoverage(1))
    other = ActivationProfile.from_activations([t + 1 for t in train])
    with pytest.raises(LabelwiseError, match="same setup"):
        StrongNeuronActivationCoverage(profile).merge(StrongNeuronActivationCoverage(other))
    with pytest.raises(LabelwiseError, match="layer widths"):
        profile.merge(ActivationProfile.from_activations(np.ones((2, 3))))
    with pytest.raises(LabelwiseError, match="empty"):
        tknc([], 1)

"""benchmarks/peers.py, the half that runs in the project venv: what ``dump`` writes is what
``run`` reads, and ``run``'s measures are the campaign study's (the peers themselves run in
a separate venv, not needed here)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

from labelwise.experiments.campaign_study import Population, _run_srs, _summary
from test_campaign import _pile


def _peers() -> ModuleType:
    path = Path(__file__).resolve().parents[1] / "benchmarks" / "peers.py"
    spec = importlib.util.spec_from_file_location("peers_benchmark", path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


def test_dump_writes_the_pile_and_srs_half_width_that_run_reads(tmp_path: Path) -> None:
    peers = _peers()
    y, acts, probs = _pile(300, kind="informative", seed=5)
    pop = Population("pile-a", y, acts, probs)
    sizes = (35, 60)
    (path,) = peers.dump_populations(str(tmp_path), [pop], sizes=sizes, srs_repetitions=40)
    ctx = peers.load_context(path)
    assert ctx["name"] == "pile-a"
    np.testing.assert_array_equal(ctx["scores"], y)
    np.testing.assert_array_equal(ctx["probabilities"], probs)
    np.testing.assert_array_equal(ctx["activations"], acts)
    assert ctx["sizes"].tolist() == [35, 60]
    _, half, _ = _run_srs(pop, sizes, 40, 0, 0.95)  # the study's SRS, same seeds
    np.testing.assert_allclose(ctx["srs_half"], half.mean(axis=0), rtol=1e-12)
    assert np.all(ctx["srs_half"] > 0)
    with pytest.raises(ValueError, match="needs probabilities"):
        peers.dump_populations(str(tmp_path), [Population("reg", y, acts, None)], sizes=sizes)


def test_run_measures_are_the_campaign_studys() -> None:
    """E (with its Monte-Carlo se), coverage and w of the benchmark equal the study's
    ``_summary`` on the same errors, and E's denominator is the exact SRS variance."""
    peers = _peers()
    g = np.random.default_rng(0)
    y = (g.random(500) < 0.8).astype(float)
    sizes = (35, 100)
    mse = peers.srs_mse(y, sizes)
    n = np.array(sizes, dtype=float)
    np.testing.assert_allclose(mse, y.var(ddof=1) * (1 - n / 500) / n)
    err = g.normal(0, 0.05, (30, 2))
    half = g.uniform(0.05, 0.1, (30, 2))
    cover = g.random((30, 2)) < 0.9
    s_half = g.uniform(0.06, 0.12, (50, 2))  # SRS's half-widths; the dump keeps their mean
    ours = peers.summary(err, half, cover, mse, s_half.mean(axis=0))
    study = _summary("p", "m", err, half, cover, None, mse, s_half)
    for key in ("E", "E_se", "E_max", "coverage", "coverage_se", "coverage_min", "w", "bias"):
        assert ours[key] == pytest.approx(study[key], rel=1e-12), key


def test_glide_strata_are_confidence_quintiles_with_constant_ones_merged_down() -> None:
    """GLIDE refuses a stratum whose proxy is constant: such a top stratum (ties at 1.0)
    joins the one below; otherwise the strata are the quintiles, in confidence order."""
    peers = _peers()
    conf = np.linspace(0.5, 0.99, 100)
    groups = peers.confidence_strata(conf)
    assert np.bincount(groups).tolist() == [20, 20, 20, 20, 20]
    assert np.all(np.diff(groups) >= 0)
    tied = np.concatenate([np.linspace(0.5, 0.99, 70), np.ones(30)])  # top quintile all 1.0
    groups = peers.confidence_strata(tied)
    assert np.bincount(groups).tolist() == [20, 20, 20, 40]
    assert np.ptp(tied[groups == 3]) > 0
    assert np.all(np.diff(groups) >= 0)


def test_glide_asi_uncertainty_known_values() -> None:
    """sqrt(c (1 - c)), floored at max / 999; with uniform share s, (1 - s) u / mean(u) + s."""
    peers = _peers()
    conf = np.array([0.5, 0.9, 1.0, 0.99])
    u = peers.asi_uncertainty(conf)
    np.testing.assert_allclose(u, [0.5, 0.3, 0.5 / 999, np.sqrt(0.0099)], rtol=1e-12)
    mixed = peers.asi_uncertainty(conf, uniform_share=0.5)
    np.testing.assert_allclose(mixed, 0.5 * u / u.mean() + 0.5, rtol=1e-12)
    pi = 2 * mixed / mixed.sum()  # GLIDE's pi before its cap: half active, half uniform
    np.testing.assert_allclose(pi, 0.5 * 2 * u / u.sum() + 0.5 * 2 / 4, rtol=1e-12)


def test_capped_proportional_is_the_exact_minimiser() -> None:
    """min sum u²/pi s.t. sum pi = n, pi <= 1: the k largest capped at 1, the rest
    proportional to u (known values), and no feasible move lowers the objective."""
    peers = _peers()
    u = np.array([4.0, 2.0, 1.0, 1.0])
    np.testing.assert_allclose(peers.capped_proportional(u, 2), [1.0, 0.5, 0.25, 0.25])
    np.testing.assert_allclose(peers.capped_proportional(u, 1), u / 8)  # nothing capped
    np.testing.assert_allclose(peers.capped_proportional(u, 3), [1.0, 1.0, 0.5, 0.5])
    g = np.random.default_rng(3)
    u = g.gamma(0.5, size=300) + 1e-3
    pi = peers.capped_proportional(u, 60)
    assert pi.sum() == pytest.approx(60) and pi.max() == 1.0 and np.all(pi > 0)
    f = np.sum(u**2 / pi)
    for _ in range(200):  # move mass between two rows, staying feasible
        i, j = g.choice(300, 2, replace=False)
        d = 1e-4 * min(pi[i], 1 - pi[j])
        q = pi.copy()
        q[i] -= d
        q[j] += d
        assert np.sum(u**2 / q) >= f - 1e-9

"""The study harness: structure, reproducibility, and the relative-efficiency arithmetic."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import labelwise as lw
from labelwise.experiments.operational import (
    OperationalStudy,
    StudyConfig,
    format_table,
    operational_methods,
    run_operational_study,
    write_outputs,
)
from labelwise.experiments.study import MethodSpec, Population, default_methods, run_study


def synthetic(seed: int = 0, n: int = 1500, name: str = "Synthetic") -> Population:
    rng = np.random.default_rng(seed)
    z = rng.standard_normal((n, 3))
    act = np.maximum(z @ rng.standard_normal((3, 12)), 0).astype(np.float32)
    p = 1 / (1 + np.exp(-(1.2 + 1.5 * z[:, 0])))
    correct = (rng.random(n) < p).astype(float)
    return Population(name, "model", "clean", correct, act, p)


def test_srs_efficiency_is_one_and_mse_is_what_it_says() -> None:
    pop = synthetic()
    res = run_study(pop, sizes=(35, 60), repetitions=8, seed=1, progress=False)
    assert set(res.estimates) == {"SRS", "CSS", "CES", "CES-Eq8", "CES-common"}
    assert res.efficiency("SRS") == 1.0
    for m, est in res.estimates.items():
        assert est.shape == (8, 2)
        manual = np.mean((est - pop.truth) ** 2, axis=0)
        np.testing.assert_allclose(res.mse(m), manual)
        assert res.efficiency(m) == pytest.approx(np.mean(manual / res.mse("SRS")))


def test_sequential_methods_use_prefixes_of_one_run() -> None:
    pop = synthetic()
    res = run_study(
        pop, [MethodSpec("CES", "ces")], sizes=(35, 40, 180), repetitions=2, seed=3, progress=False
    )
    gen = np.random.default_rng(np.random.SeedSequence([3, 0, 1]))
    sel = lw.ces_select(pop.activations, 180, rng=gen)
    y = pop.scores[sel.indices]
    np.testing.assert_allclose(res.estimates["CES"][1], [y[:35].mean(), y[:40].mean(), y.mean()])


def test_css_estimates_are_the_stratified_estimator() -> None:
    pop = synthetic()
    res = run_study(
        pop, [MethodSpec("CSS", "css")], sizes=(50,), repetitions=2, seed=4, progress=False
    )
    gen = np.random.default_rng(np.random.SeedSequence([4, 0, 0]))
    sel = lw.css_select(pop.confidences, 50, rng=gen)
    expected = lw.estimate(sel, pop.scores[sel.indices]).value
    assert res.estimates["CSS"][0, 0] == pytest.approx(expected)


def test_reproducible_and_independent_of_workers() -> None:
    pop = synthetic(n=600)
    methods = [MethodSpec("SRS", "srs"), MethodSpec("CES", "ces", {"n_groups": 20})]
    a = run_study(pop, methods, sizes=(35, 50), repetitions=4, seed=9, progress=False)
    b = run_study(pop, methods, sizes=(35, 50), repetitions=4, seed=9, progress=False, n_jobs=2)
    c = run_study(pop, methods, sizes=(35, 50), repetitions=4, seed=10, progress=False)
    for m in a.estimates:
        np.testing.assert_array_equal(a.estimates[m], b.estimates[m])
    assert not np.array_equal(a.estimates["CES"], c.estimates["CES"])


def test_regression_population_skips_css() -> None:
    pop = synthetic()
    reg = Population("R", "mlp", "clean", 1 - pop.scores * 0.1, pop.activations, None, "1-MSE")
    res = run_study(reg, sizes=(35,), repetitions=3, progress=False)
    assert "CSS" not in res.estimates and "CES" in res.estimates


def test_bad_study_arguments() -> None:
    pop = synthetic(n=100)
    with pytest.raises(lw.LabelwiseError, match="sizes must not exceed"):
        run_study(pop, sizes=(35, 180), progress=False)
    with pytest.raises(lw.LabelwiseError, match="repetitions"):
        run_study(pop, sizes=(35,), repetitions=1, progress=False)
    with pytest.raises(lw.LabelwiseError, match="distinct names"):
        run_study(
            pop, [MethodSpec("A", "srs"), MethodSpec("A", "srs")], sizes=(35,), progress=False
        )
    with pytest.raises(lw.LabelwiseError, match="scores"):
        Population("x", "m", "o", np.array([0.0, np.nan]))


def test_operational_study_tiny_configuration(tmp_path: Path) -> None:
    config = StudyConfig(sizes=(35, 40), repetitions=3, small_piles=2, small_repetitions=3)
    builders = [lambda seed: synthetic(seed, name="A"), lambda seed: synthetic(seed + 1, name="B")]
    logs: list[str] = []
    study = run_operational_study(
        config, contexts=builders, small_contexts=builders[:1], progress=False, log=logs.append
    )
    assert isinstance(study, OperationalStudy)
    rows = study.table_rows()
    assert [r["context"] for r in rows] == ["A", "B"]
    for r in rows:
        assert set(r) >= {
            "no",
            "context",
            "model",
            "operational",
            "actual",
            "E(CES/SRS)",
            "E(CSS/SRS)",
            "E(CES-Eq8/SRS)",
        }
        assert 0 < r["E(CES/SRS)"] < 10
    assert [(s["pile"], s["labels"]) for s in study.small] == [(100, 30), (300, 50)]
    assert all(s["piles"] == 2 and s["E_max"] >= s["E_mean"] for s in study.small)
    table = format_table(study)
    assert "E(CSS/SRS)" in table and "100->30" in table and "Average E" in table
    written = write_outputs(study, tmp_path)
    assert {"table.csv", "table.json", "small_piles.csv"} <= set(written)
    doc = json.loads((tmp_path / "table.json").read_text())
    assert doc["rows"][0]["E(CES/SRS)"] == pytest.approx(rows[0]["E(CES/SRS)"])
    assert doc["details"][0]["efficiency"]["SRS"] == 1.0
    assert all((tmp_path / f).stat().st_size > 0 for f in written)
    # same seed, same numbers
    again = run_operational_study(
        config, contexts=builders, small_contexts=builders[:1], progress=False, log=logs.append
    )
    assert again.table_rows() == rows


def test_operational_study_has_a_campaign_row_with_coverage_and_width() -> None:
    config = StudyConfig(sizes=(35, 60), repetitions=6, small_piles=2, small_repetitions=3)
    builders = [lambda seed: synthetic(seed, name="A")]
    study = run_operational_study(
        config, contexts=builders, small_contexts=[], progress=False, log=lambda s: None
    )
    (row,) = study.table_rows()
    methods = ["SRS", "CSS", "CES", "CES-Eq8", "CES-common", "Campaign"]
    assert [m.name for m in operational_methods()] == methods
    assert 0 < row["E(Campaign/SRS)"] < 10
    for m in methods:
        assert 0 <= row[f"cov({m})"] <= 1
        assert m == "SRS" or row[f"w({m})"] > 0
    res = study.results[0]
    assert row["w(Campaign)"] == pytest.approx(res.width_ratio("Campaign"))
    assert row["cov(SRS)"] == pytest.approx(res.coverage("SRS").mean())
    table = format_table(study)
    assert "E(Campaign/SRS)" in table and "Intervals: coverage" in table
    line = next(ln for ln in table.splitlines() if ln.strip().startswith("mean"))
    assert f"{row['cov(Campaign)']:.2f} / {row['w(Campaign)']:.2f}" in line
    # repetition r of the campaign (method index 5) is Campaign(..., rng=SeedSequence([0, 5, r]))
    pop = builders[0](0)
    for r in range(config.repetitions):
        camp = lw.Campaign(
            pop.activations,
            np.column_stack([pop.confidences, 1 - np.asarray(pop.confidences)]),
            rng=np.random.default_rng(np.random.SeedSequence([0, 5, r])),
        )
        for j, n in enumerate(config.sizes):
            rows = camp.propose(n - camp.n_proposed)
            camp.record(rows, pop.scores[rows])
            est = camp.estimate()
            assert res.estimates["Campaign"][r, j] == pytest.approx(est.value)
            assert res.ci_high["Campaign"][r, j] == pytest.approx(est.ci_high)
    # the paper's methods keep their seeds and numbers with the campaign added
    without = run_operational_study(
        config,
        methods=default_methods(),
        contexts=builders,
        small_contexts=[],
        progress=False,
        log=lambda s: None,
    )
    for key in ("E(CES/SRS)", "E(CSS/SRS)", "cov(SRS)", "w(CES)"):
        assert without.table_rows()[0][key] == row[key]
    again = run_operational_study(
        config, contexts=builders, small_contexts=[], progress=False, log=lambda s: None
    )
    assert again.table_rows() == [row]


def test_default_methods_are_the_papers() -> None:
    names = {m.name: m for m in default_methods()}
    assert names["CSS"].params == {}  # css_select's defaults: 80/10/10 strata, 20/40/40
    assert names["CES"].params == {"objective": "kl"}  # labelwise's default, see ces_select
    assert names["CES-Eq8"].params == {"objective": "ce"}
    assert lw.ces_select.__kwdefaults__["objective"] == "kl"
    assert lw.ces_select.__kwdefaults__["n_sections"] == 20
    assert lw.ces_select.__kwdefaults__["initial"] == 30
    assert lw.ces_select.__kwdefaults__["group_size"] == 5
    assert lw.ces_select.__kwdefaults__["n_groups"] == 300

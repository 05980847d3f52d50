"""benchmarks/deepsample_peer.py: the pile in DeepSample's CSV, the Driver's output read back,
and the measures (peers.py's E, coverage only where DeepSample reports a variance). The Java
part runs only with java, javac, Weka and a DeepSample checkout in DEEPSAMPLE_DIR."""

from __future__ import annotations

import csv
import importlib.util
import io
import os
import shutil
import sys
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest


def _load(name: str) -> ModuleType:
    path = Path(__file__).resolve().parents[1] / "benchmarks" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"{name}_benchmark", path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


def test_pile_csv_is_deepsamples_classification_format() -> None:
    """Columns id, outcome (Pass where correct), prediction, confidence (key 3, the largest
    probability, exactly), then 3 unused columns; one line per row after the header."""
    ds = _load("deepsample_peer")
    g = np.random.default_rng(0)
    probs = g.dirichlet(np.ones(4), size=7).astype(np.float32)
    y = np.array([1, 0, 1, 1, 0, 1, 1], dtype=float)
    rows = list(csv.reader(io.StringIO(ds.pile_csv(y, probs))))
    assert rows[0] == ds.HEADER.split(",")
    assert rows[0][ds.KEY] == "confidence" and len(rows[0]) == 7  # Weka keeps column 3 only
    body = rows[1:]
    assert [r[0] for r in body] == [str(i) for i in range(7)]
    assert [r[1] for r in body] == ["Pass", "Fail", "Pass", "Pass", "Fail", "Pass", "Pass"]
    assert [int(r[2]) for r in body] == probs.argmax(axis=1).tolist()
    conf = np.array([float(r[ds.KEY]) for r in body])
    np.testing.assert_array_equal(conf, probs.max(axis=1).astype(np.float64))


def test_parse_driver_reads_runs_in_repetition_order_and_the_partitions() -> None:
    ds = _load("deepsample_peer")
    text = (
        "# partitions 3 5 2\n"
        "SSRS 35 1 0.91 NaN\n"
        "SSRS 35 0 0.9 NaN\n"
        "RHC-S 35 0 0.88 0.0004\n"
        "RHC-S 35 1 0.92 0.0009\n"
    )
    runs, parts = ds.parse_driver(text)
    assert parts == [3, 5, 2]
    np.testing.assert_array_equal(runs[("SSRS", 35)][:, 0], [0.9, 0.91])
    assert np.all(np.isnan(runs[("SSRS", 35)][:, 1]))
    np.testing.assert_array_equal(runs[("RHC-S", 35)], [[0.88, 0.0004], [0.92, 0.0009]])


def test_measures_are_peers_summary_and_no_interval_without_a_variance() -> None:
    """E is MSE over the exact SRS variance (peers.py's), coverage counts |estimate - truth|
    <= z sqrt(var) by hand; a method without a variance gets E only."""
    ds = _load("deepsample_peer")
    peers = _load("peers")
    g = np.random.default_rng(1)
    y = (g.random(400) < 0.8).astype(float)
    sizes = (35, 100)
    est = y.mean() + g.normal(0, 0.05, (50, 2))
    var = g.uniform(0.0005, 0.004, (50, 2))
    runs = {}
    for j, n in enumerate(sizes):
        runs[("RHC-S", n)] = np.column_stack([est[:, j], var[:, j]])
        runs[("SSRS", n)] = np.column_stack([est[:, j], np.full(50, np.nan)])
    srs_half = np.array([0.12, 0.07])
    s = ds.measures(runs, y, sizes, srs_half, "RHC-S", z=1.96)
    err = est - y.mean()
    mse = y.var(ddof=1) * (1 - np.array(sizes) / 400) / np.array(sizes)
    assert s["E"] == pytest.approx(np.mean(np.mean(err**2, axis=0) / mse), rel=1e-12)
    cover = np.abs(err) <= 1.96 * np.sqrt(var)
    assert s["coverage"] == pytest.approx(cover.mean(), rel=1e-12)
    assert s["coverage_min"] == pytest.approx(cover.mean(axis=0).min(), rel=1e-12)
    w = np.mean(1.96 * np.sqrt(var).mean(axis=0) / srs_half)
    assert s["w"] == pytest.approx(w, rel=1e-12)
    assert s["E"] == pytest.approx(
        peers.summary(err, 1.96 * np.sqrt(var), cover, mse, srs_half)["E"], rel=1e-12
    )
    none = ds.measures(runs, y, sizes, srs_half, "SSRS")
    assert not none["interval"] and np.isnan(none["coverage"]) and np.isnan(none["w"])
    assert none["E"] == pytest.approx(s["E"], rel=1e-12)
    assert ds.cell(none) == f"{s['E']:.2f} / no interval"


def _checkout() -> str:
    root = os.environ.get("DEEPSAMPLE_DIR", "")
    if not root or shutil.which("java") is None or shutil.which("javac") is None:
        pytest.skip("needs java, javac and DEEPSAMPLE_DIR (a checkout of dessertlab/DeepSample)")
    return root


def test_driver_runs_deepsamples_selectors_on_a_small_pile(tmp_path: Path) -> None:
    """SSRS with every row labelled is exact (each partition fully drawn without
    replacement); every selector gives an accuracy in a sane range; RHC-S and DeepEST report
    a variance, the others none."""
    root = _checkout()
    ds = _load("deepsample_peer")
    try:
        cp = ds.classpath(root)
    except SystemExit as e:
        pytest.skip(str(e))
    build = tmp_path / "classes"
    build.mkdir()
    ds.compile_deepsample(root, str(build), cp)
    g = np.random.default_rng(2)
    probs = g.dirichlet(np.full(3, 0.7), size=300)
    y = (g.random(300) < probs.max(axis=1)).astype(float)
    path = tmp_path / "pile.npz"
    np.savez(path, scores=y, probabilities=probs, sizes=np.array([40, 300]))
    from subprocess import run

    cmd = ["java", "-cp", os.pathsep.join([str(build), cp]), "Driver"]
    csv_path = tmp_path / "pile.csv"
    csv_path.write_text(ds.pile_csv(y, probs))
    cmd += [str(csv_path), "300", "3", "40,300", "5", ",".join(ds.METHODS)]
    done = run(cmd, capture_output=True, text=True, check=True)
    runs, parts = ds.parse_driver(done.stdout)
    assert sum(parts) == 300 and len(parts) == 10
    np.testing.assert_allclose(runs[("SSRS", 300)][:, 0], y.mean(), atol=1e-12)
    for m in ds.METHODS:
        assert runs[(m, 40)].shape == (5, 2)
        has_var = np.isfinite(runs[(m, 40)][:, 1]).all()
        assert has_var == (m in ("RHC-S", "DeepEST")), m

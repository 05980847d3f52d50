"""The shell commands read zarr stores and directories of .npy chunks where they read .npy
files (``--activations``, ``--probs``, ``--predictions``): the same selections, campaigns and
estimates, the same checks that a recorded source did not change, and one-line errors for
bad stores."""

from __future__ import annotations

import csv
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from labelwise.io import file_digest, is_zarr_store
from synthetic import classifier_pile, run_cli

zarr = pytest.importorskip("zarr")

N, C, M = 600, 4, 8


def _zarr(path: Path, x: np.ndarray, rows_per_chunk: int = 64) -> Path:
    z = zarr.open_array(
        str(path), mode="w", shape=x.shape, chunks=(rows_per_chunk, *x.shape[1:]), dtype=x.dtype
    )
    z[...] = x
    return path


@pytest.fixture()
def pile(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """The same (N, m) activations, (N, C) probabilities and (N,) regression outputs as .npy
    files and as zarr stores (chunks of 64 rows; a pass reads several blocks)."""
    monkeypatch.setenv("LABELWISE_BLOCK_BYTES", str(250 * M * 8))
    rng = np.random.default_rng(0)
    y, x, p = classifier_pile(rng, N, C, M)
    target = x[:, 0] + 0.1 * rng.normal(size=N)
    arrays = {
        "acts": x.astype(np.float32),
        "probs": p.astype(np.float32),
        "preds": x[:, 0].astype(np.float32),
    }
    out: dict[str, Any] = {"dir": tmp_path, "y": y, "target": target}
    for name, arr in arrays.items():
        np.save(tmp_path / f"{name}.npy", arr)
        out[f"{name}.npy"] = tmp_path / f"{name}.npy"
        out[f"{name}.zarr"] = _zarr(tmp_path / f"{name}.zarr", arr)
        parts = tmp_path / f"{name}-chunks"  # a directory of .npy chunks, in name order
        parts.mkdir()
        for i, start in enumerate(range(0, N, 250)):
            np.save(parts / f"part-{i:05d}.npy", arr[start : start + 250])
        out[f"{name}.chunks"] = parts
    return out


def _rows(d: Path) -> list[int]:
    with open(d / "to_label.csv", newline="") as fh:
        return [int(r["row"]) for r in csv.DictReader(fh)]


def _labels(path: Path, rows: list[int], values: Any, column: str = "label") -> Path:
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["row", column])
        w.writerows([r, values[r].item()] for r in rows)
    return path


def _one_line_error(code: int, err: str) -> str:
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("labelwise: error: "), err
    return lines[0]


def _estimate_numbers(d: Path) -> dict[str, Any]:
    doc = json.loads((d / "estimate.json").read_text())
    keys = ("value", "ci_low", "ci_high", "std_error", "n_labelled", "method")
    return {k: doc[k] for k in keys if k in doc}


# ------------------------------------------------------------------------- select


@pytest.mark.parametrize("method", ["ces", "srs", "css"])
def test_select_and_estimate_on_zarr_equal_npy(
    method: str, pile: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    results = {}
    for kind in ("npy", "zarr", "chunks"):
        d = pile["dir"] / f"sel-{method}-{kind}"
        code, _, err = run_cli(
            [
                "select",
                "--method",
                method,
                "--budget",
                30,
                "--seed",
                5,
                "--activations",
                pile[f"acts.{kind}"],
                "--probs",
                pile[f"probs.{kind}"],
                "--out",
                d,
            ],
            capsys,
        )
        assert code == 0, err
        rows = _rows(d)
        sel = json.loads((d / "selection.json").read_text())
        src = sel["sources"]["activations"]
        assert src["path"] == str(Path(pile[f"acts.{kind}"]).resolve())
        assert src["sha256"] == file_digest(pile[f"acts.{kind}"]) and src["shape"] == [N, M]
        labels = _labels(pile["dir"] / f"l-{method}-{kind}.csv", rows, pile["y"])
        code, _, err = run_cli(["estimate", d, "--labels", labels], capsys)
        assert code == 0, err
        results[kind] = (rows, sel["selection"], _estimate_numbers(d))
    assert len(results["zarr"][0]) == 30
    assert results["zarr"] == results["npy"] == results["chunks"]


def test_select_extend_on_zarr_equals_npy(
    pile: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    rows = {}
    for kind in ("npy", "zarr"):
        d = pile["dir"] / f"ext-{kind}"
        argv = ["select", "--method", "ces", "--budget", 20, "--seed", 2, "--out", d]
        code, _, err = run_cli([*argv, "--activations", pile[f"acts.{kind}"]], capsys)
        assert code == 0, err
        code, _, err = run_cli(["select", "--extend", d, "--budget", 10], capsys)
        assert code == 0, err
        rows[kind] = _rows(d)
    assert len(rows["zarr"]) == 30 and rows["zarr"] == rows["npy"]


# ----------------------------------------------------------------------- campaigns


def test_campaign_next_estimate_on_zarr_equal_npy(
    pile: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    results = {}
    y = pile["y"]
    for kind in ("npy", "zarr", "chunks"):  # chunks: a directory of .npy parts
        d = pile["dir"] / f"camp-{kind}"
        code, out, err = run_cli(
            [
                "campaign",
                d,
                "--activations",
                pile[f"acts.{kind}"],
                "--probs",
                pile[f"probs.{kind}"],
                "--seed",
                3,
            ],
            capsys,
        )
        assert code == 0, err
        assert "campaign on a pile of 600 rows (seed 3)" in out
        code, _, err = run_cli(["next", d, "--batch", 20], capsys)
        assert code == 0, err
        first = _rows(d)
        labels = _labels(pile["dir"] / f"c1-{kind}.csv", first, y)
        code, _, err = run_cli(["estimate", d, "--labels", labels], capsys)
        assert code == 0, err
        code, _, err = run_cli(["next", d, "--batch", 15], capsys)
        assert code == 0, err
        both = _rows(d)
        labels = _labels(pile["dir"] / f"c2-{kind}.csv", both, y)
        code, _, err = run_cli(["estimate", d, "--labels", labels], capsys)
        assert code == 0, err
        results[kind] = (both, _estimate_numbers(d))
    assert len(results["zarr"][0]) == 35
    assert results["zarr"] == results["npy"] == results["chunks"]


def test_regression_campaign_with_zarr_predictions_equals_npy(
    pile: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    results = {}
    for kind in ("npy", "zarr"):
        d = pile["dir"] / f"reg-{kind}"
        argv = ["campaign", d, "--activations", pile[f"acts.{kind}"], "--seed", 4]
        code, _, err = run_cli(argv, capsys)
        assert code == 0, err
        code, _, err = run_cli(["next", d, "--batch", 25], capsys)
        assert code == 0, err
        labels = _labels(pile["dir"] / f"t-{kind}.csv", _rows(d), pile["target"], "target")
        preds = pile[f"preds.{kind}"]
        code, _, err = run_cli(["estimate", d, "--labels", labels, "--predictions", preds], capsys)
        assert code == 0, err
        # given again, the recorded zarr predictions are recognised by their digest
        code, _, err = run_cli(["estimate", d, "--labels", labels, "--predictions", preds], capsys)
        assert code == 0, err
        results[kind] = (_rows(d), _estimate_numbers(d))
    assert results["zarr"] == results["npy"]


# ------------------------------------------------------------------ changed sources


def test_changed_zarr_source_is_detected(
    pile: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    store = pile["acts.zarr"]
    d = pile["dir"] / "sel"
    argv = ["select", "--method", "ces", "--budget", 20, "--seed", 1, "--activations", store]
    code, _, err = run_cli([*argv, "--out", d], capsys)
    assert code == 0, err
    camp = pile["dir"] / "camp"
    code, _, err = run_cli(["campaign", camp, "--activations", store, "--seed", 1], capsys)
    assert code == 0, err

    z = zarr.open_array(str(store), mode="r+")
    z[500, 3] = float(z[500, 3]) + 1.0  # one value in one chunk file
    for argv in (["select", "--extend", d, "--budget", 5], ["next", camp, "--batch", 5]):
        line = _one_line_error(*run_cli(argv, capsys)[::2])
        assert str(store.resolve()) in line and "changed since the" in line


def test_directory_digest_covers_names_and_contents(tmp_path: Path) -> None:
    a = _zarr(tmp_path / "a.zarr", np.arange(40.0).reshape(20, 2), rows_per_chunk=5)
    b = _zarr(tmp_path / "elsewhere" / "b.zarr", np.arange(40.0).reshape(20, 2), 5)
    assert is_zarr_store(a) and file_digest(a) == file_digest(b)  # not where it lies
    before = file_digest(a)
    extra = a / "notes.txt"
    extra.write_text("x")
    assert file_digest(a) != before
    extra.rename(a / "other.txt")
    renamed = file_digest(a)
    assert renamed != before
    (a / "other.txt").unlink()
    assert file_digest(a) == before


# -------------------------------------------------------------------------- errors


def test_a_directory_that_is_no_zarr_store_is_one_line(
    pile: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    plain = pile["dir"] / "plain"
    plain.mkdir()
    (plain / "readme.txt").write_text("not an array")
    for argv in (
        ["select", "--method", "ces", "--budget", 5, "--activations", plain],
        ["campaign", pile["dir"] / "c", "--activations", plain],
    ):
        if argv[0] == "select":
            argv += ["--out", pile["dir"] / "s"]
        line = _one_line_error(*run_cli(argv, capsys)[::2])
        assert "--activations" in line and "neither a zarr store" in line
        assert "nor a directory of .npy chunks" in line


def test_a_corrupt_zarr_store_is_one_line(
    pile: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    meta = pile["dir"] / "meta.zarr"
    _zarr(meta, np.zeros((50, 3)))
    for name in ("zarr.json", ".zarray"):
        if (meta / name).is_file():
            (meta / name).write_text("{ not json")
    argv = ["select", "--method", "ces", "--budget", 5, "--out", pile["dir"] / "s"]
    line = _one_line_error(*run_cli([*argv, "--activations", meta], capsys)[::2])
    assert "not a readable zarr array" in line and str(meta) in line

    # a chunk file overwritten with garbage: found when the pass reads it
    chunk = _zarr(pile["dir"] / "chunk.zarr", np.ones((200, 3)), rows_per_chunk=50)
    files = sorted(
        f for f in chunk.rglob("*") if f.is_file() and f.name not in ("zarr.json", ".zarray")
    )
    files = [f for f in files if not f.name.startswith(".z")]
    files[-1].write_bytes(b"garbage" * 7)
    for argv in (
        ["campaign", pile["dir"] / "c", "--activations", chunk, "--seed", 0],  # via _chunks
        ["select", "--method", "ces", "--budget", 5, "--out", pile["dir"] / "s2"],  # CES reads
    ):
        if argv[0] == "select":
            argv += ["--activations", chunk]
        line = _one_line_error(*run_cli(argv, capsys)[::2])
        assert "cannot read" in line and "zarr" in line


def test_without_zarr_npy_works_and_a_store_says_how_to_install(
    pile: dict[str, Any], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "zarr", None)  # import zarr fails
    argv = ["select", "--method", "ces", "--budget", 10, "--seed", 0]
    npy = [*argv, "--activations", pile["acts.npy"], "--out", pile["dir"] / "a"]
    code, _, err = run_cli(npy, capsys)
    assert code == 0, err
    store = [*argv, "--activations", pile["acts.zarr"], "--out", pile["dir"] / "b"]
    line = _one_line_error(*run_cli(store, capsys)[::2])
    assert "zarr" in line and "pip install" in line


@pytest.mark.parametrize("method", ["sds", "cppi"])
def test_rank_with_zarr_predictions_equals_npy(
    method: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rng = np.random.default_rng(0)
    y = rng.integers(3, size=300)
    preds = np.where(rng.random((4, 300)) < 0.7, y, rng.integers(3, size=(4, 300)))
    np.save(tmp_path / "p.npy", preds)
    z = zarr.open_array(
        str(tmp_path / "p.zarr"), mode="w", shape=preds.shape, chunks=(4, 64), dtype=preds.dtype
    )
    z[...] = preds
    shown = {}
    for kind in ("npy", "zarr"):
        d = tmp_path / kind
        argv = ["select", "--method", method, "--budget", 40, "--seed", 1, "--out", d]
        code, _, err = run_cli([*argv, "--predictions", tmp_path / f"p.{kind}"], capsys)
        assert code == 0, err
        rows = _rows(d)
        labels = _labels(tmp_path / f"l-{kind}.csv", rows, y)
        code, out, err = run_cli(["rank", d, "--labels", labels, "--bootstrap", 200], capsys)
        assert code == 0, err
        shown[kind] = (rows, out)
    assert shown["zarr"] == shown["npy"]


@pytest.mark.parametrize("case", ["sum", "nan", "range"])
def test_bad_probabilities_give_the_same_error_from_zarr(
    case: str, pile: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    p = np.load(pile["probs.npy"]).copy()
    if case == "sum":
        p[450] *= 0.5  # a row in a later block sums to 0.5
    elif case == "nan":
        p[450, 1] = np.nan
    else:
        p[450, 1] = -0.5
    np.save(pile["dir"] / "bad.npy", p)
    _zarr(pile["dir"] / "bad.zarr", p)
    lines = []
    for kind in ("npy", "zarr"):
        argv = ["select", "--method", "css", "--budget", 5, "--out", pile["dir"] / kind]
        code, _, err = run_cli([*argv, "--probs", pile["dir"] / f"bad.{kind}"], capsys)
        lines.append(_one_line_error(code, err))
    assert lines[0] == lines[1]
    assert ("row 450" in lines[0]) == (case in ("sum", "nan"))  # a NaN is named by its row

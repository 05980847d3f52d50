"""The per-class quality report and the 'labelwise quality' command."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

from labelwise.cli import main
from labelwise.exceptions import DegenerateDataWarning, LabelwiseError
from labelwise.quality.report import plot_quality, quality_report


def blobs(n: int, seed: int, shift: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    y = np.repeat([0, 1], n // 2)
    x = rng.standard_normal((n, 4)) + np.where(y[:, None] == 1, 6.0, 0.0) + shift
    return x, y


def probs_of(x: np.ndarray) -> np.ndarray:
    z = 2.0 * (x[:, 0] - 3.0)
    p1 = 1 / (1 + np.exp(-z))
    return np.c_[1 - p1, p1]


def test_report_on_separated_classes(tmp_path: Path) -> None:
    xtr, ytr = blobs(400, 0)
    xte, yte = blobs(200, 1)
    rep = quality_report(xtr, ytr, xte, yte, probs_of(xte), radius=1.0)
    assert [r["class"] for r in rep.rows] == [0, 1]
    assert all(r["equivalence"] == pytest.approx(1.0) for r in rep.rows)
    # the same distribution: about half of each class within the training median distance
    assert 0.3 < rep.overall["centroid_share"] < 0.7
    assert rep.overall["boundary_share"] < 0.05
    assert rep.overall["shift_jsd"] < 0.3
    assert set(rep.adequacy) == {"NC", "KMNC(k=100)", "NBC", "SNAC", "TKNC(k=1)"}
    assert "shift JSD" in rep.table() and "MMD2" in rep.table()
    assert rep.overall["shift_p"] > 0.05 and not rep.overall["shift_flag"]
    assert rep.overall["shift_classes"] == 0 and "mmd_shift" in rep.details
    assert plot_quality(rep, tmp_path / "q.png") is not None
    shifted = quality_report(xtr, ytr, *blobs(200, 2, shift=8.0), probs_of(blobs(200, 2, 8.0)[0]))
    assert shifted.overall["shift_jsd"] > 0.9 and shifted.overall["centroid_share"] < 0.05
    assert shifted.overall["shift_flag"] and shifted.overall["shift_classes"] == 2
    assert all(r["shift_flag"] and r["shift_p"] < 0.01 for r in shifted.rows)


def test_quality_command_from_features(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    pytest.importorskip("sklearn")  # covariate_shift needs scikit-learn
    xtr, ytr = blobs(400, 0)
    xte, yte = blobs(200, 1)
    for name, arr in {"tf": xtr, "tl": ytr, "f": xte, "l": yte, "p": probs_of(xte)}.items():
        np.save(tmp_path / f"{name}.npy", arr)
    args = [
        "quality",
        "--train-features",
        str(tmp_path / "tf.npy"),
        "--train-labels",
        str(tmp_path / "tl.npy"),
        "--test-features",
        str(tmp_path / "f.npy"),
        "--test-labels",
        str(tmp_path / "l.npy"),
        "--test-probs",
        str(tmp_path / "p.npy"),
        "--out",
        str(tmp_path / "out"),
    ]
    assert main(args) == 0
    doc = json.loads((tmp_path / "out" / "quality.json").read_text())
    assert len(doc["classes"]) == 2 and "adequacy" in doc
    assert "centroid" in capsys.readouterr().out
    assert main([a for a in args if a not in (str(tmp_path / "p.npy"), "--test-probs")]) == 2
    assert "--test-probs" in capsys.readouterr().err
    np.save(tmp_path / "bad.npy", yte[:-1])
    args[args.index(str(tmp_path / "l.npy"))] = str(tmp_path / "bad.npy")
    assert main(args) == 2
    assert "labelwise: error" in capsys.readouterr().err


def test_probabilities_that_are_not_a_class_table(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    """(M,) confidences as --test-probs ended in an IndexError traceback (the class count
    was read from a second axis before any check), and too few columns in an error about
    an 'n_classes' the user never gave; both are now checked first."""
    pytest.importorskip("sklearn")
    xtr, ytr = blobs(200, 0)
    xte, yte = blobs(100, 1)
    p = probs_of(xte)
    for bad, says in (
        (p.max(axis=1), "probabilities must be 2-D"),
        (0.5, "probabilities must be 2-D"),
        (p[:, :1], "at least 2 columns"),
    ):
        with pytest.raises(LabelwiseError, match=says):
            quality_report(xtr, ytr, xte, yte, bad)
    with pytest.raises(LabelwiseError, match=r"classes in \[0, 2\) \(the model has 2 output"):
        quality_report(xtr, ytr, xte, np.where(yte == 1, 2, 0), p)
    for name, arr in {"tf": xtr, "tl": ytr, "f": xte, "l": yte, "p": p.max(axis=1)}.items():
        np.save(tmp_path / f"{name}.npy", arr)
    argv = ["quality", "--train-features", "tf", "--train-labels", "tl", "--test-features",
            "f", "--test-labels", "l", "--test-probs", "p", "--out", "out"]  # fmt: skip
    argv = [a if a.startswith("-") or a == "quality" else str(tmp_path / f"{a}.npy") for a in argv]
    argv[-1] = str(tmp_path / "out")
    capsys.readouterr()
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "labelwise: error: probabilities must be 2-D" in err and "Traceback" not in err
    assert not (tmp_path / "out").exists()


def test_quality_study_on_digits() -> None:
    pytest.importorskip("torch")
    from labelwise.experiments.quality_study import (
        _digits,
        format_quality_table,
        run_quality_study,
    )

    logs: list[str] = []
    rows = run_quality_study(
        sizes=(50,), contexts=[_digits("none"), _digits("patch")], log=logs.append
    )
    row, patch = rows
    assert row.dataset == "digits" and 0.9 < row.accuracy <= 1.0
    table = format_quality_table(rows)
    assert "Centr" in table and "KMNC" in table and "MMD2" in table
    # the MMD test tells the clean test set from the patch-occluded one (the JSD cannot)
    clean, shifted = row.report.overall, patch.report.overall
    assert clean["shift_p"] > 0.05 and clean["shift_classes"] == 0
    assert shifted["shift_p"] < 0.01 and shifted["shift_classes"] >= 3
    assert shifted["shift_mmd2"] > 10 * abs(clean["shift_mmd2"])
    acc = np.asarray(row.generation.accuracy)
    assert acc.shape == (1, 5)
    # more centroid points, higher accuracy: the 100-0 split beats the 0-100 split
    assert acc[0, -1] > acc[0, 0]
    assert "0-100 split" in row.generation.format_table(dataset="digits")


def test_a_class_without_test_inputs_keeps_its_row(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    """A class of the model absent from the test set had no row at all (rows came from the
    test labels), so its equivalence score of 0, the finding, was only visible as a spread in
    the 'all' row; it now has a row with n 0, EP 0 and '-' (null in JSON) elsewhere."""
    pytest.importorskip("sklearn")
    xtr, ytr = blobs(400, 0)
    xte, yte = blobs(200, 1)
    p = np.c_[probs_of(xte) * 0.9, np.full(len(xte), 0.1)]  # a third class, never tested
    ytr = np.where(np.arange(len(ytr)) % 10 == 0, 2, ytr)
    with pytest.warns(DegenerateDataWarning) as caught:
        rep = quality_report(xtr, ytr, xte, yte, p)
    assert any("[2] have no inputs" in str(w.message) for w in caught)
    assert [r["class"] for r in rep.rows] == [0, 1, 2]
    absent = rep.rows[2]
    assert absent["n_test"] == 0 and absent["equivalence"] == 0.0
    assert np.isnan(absent["centroid_share"]) and not absent["shift_flag"]
    last = rep.table().splitlines()[3].split()
    assert last[:3] == ["2", "0", "0.000"] and set(last[3:]) == {"-"}
    assert "[2] have no test inputs" in rep.table() and "nan" not in rep.table()
    for name, arr in {"tf": xtr, "tl": ytr, "f": xte, "l": yte, "p": p}.items():
        np.save(tmp_path / f"{name}.npy", arr)
    argv = ["quality", "--train-features", "tf", "--train-labels", "tl", "--test-features",
            "f", "--test-labels", "l", "--test-probs", "p", "--out", "out"]  # fmt: skip
    argv = [a if a.startswith("-") or a == "quality" else str(tmp_path / f"{a}.npy") for a in argv]
    argv[-1] = str(tmp_path / "out")
    assert main(argv) == 0
    assert "[2] have no test inputs" in capsys.readouterr().out
    doc = json.loads((tmp_path / "out" / "quality.json").read_text())
    assert doc["classes"][2]["n_test"] == 0 and doc["classes"][2]["centroid_share"] is None
    assert (tmp_path / "out" / "quality.png").exists()


def test_the_table_states_band_radius_and_what_the_adequacy_numbers_count() -> None:
    """'centroid: share within the radius' and 'boundary: share with confidence in the band'
    never said which radius or band (--radius, --lo, --hi change them), and pair-wise boundary
    coverage, NC, KMNC, NBC, SNAC and TKNC were printed without any meaning."""
    xtr, ytr = blobs(200, 0)
    xte, yte = blobs(100, 1)
    rep = quality_report(xtr, ytr, xte, yte, probs_of(xte), radius=1.5, lo=0.1, hi=0.7)
    table = rep.table()
    assert "within 1.5 x the class's median training distance" in table
    assert "confidence (top probability) in [0.1, 0.7]" in table
    assert "NC neurons > 0 for some test input" in table and "TKNC neurons" in table
    assert "class pairs (a, b)" in table
    assert "MMD² train vs test features (unbiased: near 0, even slightly below" in table
    assert (rep.overall["radius"], rep.overall["lo"], rep.overall["hi"]) == (1.5, 0.1, 0.7)


def test_every_quality_json_field_is_explained_in_the_readme() -> None:
    """quality.json's fields (scales, components_train, adjusted_p, n_used ...) were only
    explained in the source; the README now lists each one."""
    pytest.importorskip("sklearn")
    from test_dependability_report import _json_keys, readme_json_section

    xtr, ytr = blobs(200, 0)
    xte, yte = blobs(100, 1)
    doc = quality_report(xtr, ytr, xte, yte, probs_of(xte)).to_dict()
    keys = _json_keys(doc, skip=frozenset({"adequacy"}))  # adequacy: the metrics' names
    section = readme_json_section()
    missing = sorted(k for k in keys if f"`{k}`" not in section)
    assert not missing, f"fields the README does not explain: {missing}"


def test_plot_with_a_radius_far_above_every_distance(tmp_path: Path) -> None:
    """--radius 1e308 drew the radius line at 1e308: matplotlib's ticks overflowed (a
    RuntimeWarning, an error under -W error) and the boxes were squashed to a line. The
    chart now keeps the data's scale and the legend says the radius is above it."""
    xtr, ytr = blobs(400, 0)
    xte, yte = blobs(200, 1)
    rep = quality_report(xtr, ytr, xte, yte, probs_of(xte), radius=1e308)
    assert rep.overall["centroid_share"] == 1.0
    assert plot_quality(rep, tmp_path / "q.png") is not None
    assert (tmp_path / "q.png").stat().st_size > 1000


def test_labels_csv_as_the_other_commands_take_it(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    """--test-labels labels.csv (row,label, as 'label', 'import' and dependability write or
    read it) was refused as 'not a readable .npy array ... a CSV or other table goes through
    labelwise capture --inputs FILE first': advice for a pile, not for labels. quality now
    reads a row,label CSV that labels every row (class names with --classes), and gives the
    numbers the .npy gives."""
    pytest.importorskip("sklearn")  # covariate_shift needs scikit-learn
    xtr, ytr = blobs(200, 0)
    xte, yte = blobs(100, 1)
    for name, arr in {"tf": xtr, "tl": ytr, "f": xte, "l": yte, "p": probs_of(xte)}.items():
        np.save(tmp_path / f"{name}.npy", arr)
    (tmp_path / "classes.txt").write_text("cat\ndog\n")
    with open(tmp_path / "l.csv", "w") as fh:
        fh.write("row,label\n" + "".join(f"{i},{['cat', 'dog'][c]}\n" for i, c in enumerate(yte)))
    common = ["quality", "--train-features", str(tmp_path / "tf.npy"), "--train-labels",
              str(tmp_path / "tl.npy"), "--test-features", str(tmp_path / "f.npy"),
              "--test-probs", str(tmp_path / "p.npy")]  # fmt: skip
    by_csv = ["--test-labels", str(tmp_path / "l.csv"), "--classes", str(tmp_path / "classes.txt")]
    docs = []
    for n, labels in enumerate((["--test-labels", str(tmp_path / "l.npy")], by_csv)):
        assert main([*common, *labels, "--out", str(tmp_path / f"q{n}")]) == 0
        docs.append(json.loads((tmp_path / f"q{n}" / "quality.json").read_text()))
    assert docs[0] == docs[1]
    capsys.readouterr()
    assert main([*common, *by_csv[:2], "--out", str(tmp_path / "q2")]) == 2
    err = capsys.readouterr().err
    assert "--classes" in err and "capture --inputs" not in err


def test_a_rerun_that_cannot_plot_removes_the_earlier_runs_plot(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """'quality --out D' re-run where it could not plot (no matplotlib) left the earlier run's
    quality.png beside the new quality.json, as if it charted this run's distances."""
    pytest.importorskip("matplotlib")
    xtr, ytr = blobs(200, 0)
    xte, yte = blobs(100, 1)
    arrays = {"tf": xtr, "tl": ytr, "f": xte, "l": yte, "p": probs_of(xte)}
    for name, arr in arrays.items():
        np.save(tmp_path / f"{name}.npy", arr)
    flags = ("--train-features", "--train-labels", "--test-features", "--test-labels")
    argv = ["quality", "--out", str(tmp_path / "out")]
    for flag, name in zip((*flags, "--test-probs"), arrays, strict=True):
        argv += [flag, str(tmp_path / f"{name}.npy")]
    assert main(argv) == 0
    assert (tmp_path / "out" / "quality.png").is_file()
    capsys.readouterr()
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # as where it is not installed
    assert main([*argv, "--radius", "2"]) == 0
    out = capsys.readouterr().out
    assert not (tmp_path / "out" / "quality.png").exists()
    assert "wrote quality.json to" in out
    assert "removed quality.png of an earlier run (not made by this one)" in out
    assert json.loads((tmp_path / "out" / "quality.json").read_text())["overall"]["radius"] == 2

"""The new-user hunt's leftovers (cli35): small CLI defects, each end to end through the CLI."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import numpy as np
import pytest

from synthetic import FakeDigits, run_cli


def _pile(tmp_path: Path) -> tuple[Path, Path]:
    rng = np.random.default_rng(0)
    np.save(tmp_path / "a.npy", rng.normal(size=(200, 5)))
    np.save(tmp_path / "p.npy", rng.dirichlet(np.ones(3), 200))
    return tmp_path / "a.npy", tmp_path / "p.npy"


def test_force_over_a_selection_without_labels_removes_its_label_studio_tasks(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """'select --force' over a selection without labels left the tasks 'labelwise export'
    wrote for the old selection (20 tasks beside the new selection of 30 rows). They are
    removed now (nothing is set aside: there are no labels); a task file the user edited
    stays, and so does the whole export over a labelled selection (set aside with it)."""
    acts, probs = _pile(tmp_path)
    sel = tmp_path / "sel"
    argv = ["select", "--method", "srs", "--activations", acts, "--probs", probs, "--out", sel]
    assert run_cli([*argv, "--budget", "20"], capsys)[0] == 0
    assert run_cli(["export", sel], capsys)[0] == 0
    tasks = sel / "label-studio-tasks.json"
    assert tasks.is_file()
    code, _, err = run_cli([*argv, "--budget", "30", "--force"], capsys)
    assert code == 0, err
    assert not tasks.exists() and not (sel / "label-studio-tasks.config.xml").exists()
    assert not (sel / "export.state.json").exists()
    assert not list(sel.glob("replaced-*"))
    # the next export writes the new selection's 30 tasks under the usual name
    assert run_cli(["export", sel], capsys)[0] == 0
    assert len(json.loads(tasks.read_text())) == 30
    # a task file edited since export wrote it is the user's: kept
    tasks.write_text(tasks.read_text().replace("[", "[ ", 1))
    assert run_cli([*argv, "--budget", "25", "--force"], capsys)[0] == 0
    assert tasks.is_file() and not (sel / "label-studio-tasks.config.xml").exists()


def test_import_of_a_file_that_is_no_text_says_it_is_not_a_label_studio_export(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """'labelwise import DIR a.npy' said "EXPORT a.npy cannot be read ('utf-8' codec can't
    decode byte 0x93 in position 0: invalid start byte)". It now says what the file is (a
    NumPy array, a zip archive, not UTF-8 text) and that it is no Label Studio JSON export,
    with how to make one; nothing is written."""
    acts, probs = _pile(tmp_path)
    sel = tmp_path / "sel"
    argv = ["select", "--method", "srs", "--activations", acts, "--probs", probs, "--out", sel]
    assert run_cli([*argv, "--budget", "20"], capsys)[0] == 0
    np.savez(tmp_path / "b.npz", x=np.zeros(3))
    (tmp_path / "c.json").write_bytes('[{"choice": "caf\u00e9"}]'.encode("cp1252"))
    for name, what in (
        ("a.npy", "is a NumPy array (.npy)"),
        ("b.npz", "is a zip archive (.npz, .xlsx, ...)"),
        ("c.json", "is not UTF-8 text (binary data?)"),
    ):
        code, _, err = run_cli(["import", sel, tmp_path / name], capsys)
        assert code == 2
        assert err == (
            f"labelwise: error: EXPORT {tmp_path / name} {what}, not a Label Studio JSON "
            "export: export the Label Studio project as JSON or JSON-MIN (Export > JSON) and "
            "import that file\n"
        )
        assert "codec" not in err
    assert not (sel / "labels.csv").exists()


def test_a_mistyped_id_column_or_column_says_which_column_was_meant(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """'capture --id-column ID' on a table with an 'id' column said only "'ID' is not a
    column of t.csv; columns: id, f1, f2", and '--columns F1' likewise, while a mistyped
    --logits-output said '(did you mean ...)'. Both flags now name the column meant: the
    same name in another case first, else the closest spelling; nothing when none is
    close. The ONNX and torch messages use the same helper, now case-aware as well."""
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    torch.save(torch.nn.Sequential(torch.nn.Linear(2, 3)), str(tmp_path / "m.pt"))
    rows = "".join(f"r{i},{i * 0.5},{i % 3}\n" for i in range(10))
    (tmp_path / "t.csv").write_text("id,f1,f2\n" + rows)
    t = tmp_path / "t.csv"
    argv = ["capture", "--model", tmp_path / "m.pt", "--inputs", t, "--out", tmp_path / "cap"]
    for more, said in (
        (["--id-column", "ID"], f"id_column (--id-column) 'ID' is not a column of {t} (did "
         "you mean 'id'?); columns: id, f1, f2"),
        (["--id-column", "idd"], "'idd' is not a column of " f"{t} (did you mean 'id'?)"),
        (["--id-column", "zzz"], f"'zzz' is not a column of {t}; columns: id, f1, f2"),
        (["--columns", "F1,F2,f9", "--id-column", "id"], f"columns (--columns): 'F1', 'F2', "
         f"'f9' not in {t} (did you mean 'f1', 'f2'?); columns: id, f1, f2"),
    ):  # fmt: skip
        code, _, err = run_cli([*argv, *more], capsys)
        assert code == 2
        assert said in err
    assert not (tmp_path / "cap").exists()
    code, _, err = run_cli([*argv, "--id-column", "id"], capsys)
    assert code == 0, err
    assert (tmp_path / "cap" / "ids.txt").read_text().split() == [f"r{i}" for i in range(10)]


def test_did_you_mean_prefers_the_same_name_in_another_case() -> None:
    """difflib alone finds nothing for 'ID' among 'id', 'f1' (ratio 0): the same name in
    another case comes first, then the closest spelling in any case."""
    from labelwise._validation import close_name, did_you_mean

    assert close_name("ID", ["id", "f1"]) == "id"
    assert close_name("Logit", ["probs", "logits"]) == "logits"
    assert close_name("q", ["id", "f1"]) is None
    assert did_you_mean("ID", ["x", "Id", "id"]) == " (did you mean 'Id'?)"
    assert did_you_mean("zzz", ["id"]) == ""


def _rows(sel: Path) -> int:
    return len((sel / "to_label.csv").read_text().splitlines()) - 1


def test_the_demo_refuses_to_overwrite_work_done_in_its_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """'labelwise demo --out D' run again into D overwrote a selection extended there
    ('select --extend D/srs --budget 20': 120 -> 100 rows), and with another --seed replaced
    the arrays a campaign in D was made from ('next D/camp': activations.npy changed). The
    demo now records the sha256 of the files it wrote (demo.json "files") and refuses, before
    training, a directory holding anything else or a file changed since, naming each and
    saying what to do; nothing is written. The same demo into an untouched D, or one
    interrupted before demo.json, still runs; --force (what `make demo` gives) moves the
    work into D/replaced-<time>/, whole, and runs."""
    pytest.importorskip("sklearn")  # the demo's digits module needs it (the study extra)
    import labelwise.demo as demo
    import labelwise.experiments.digits as digits
    from labelwise.io import file_digest

    n = demo._pile_size()
    monkeypatch.setattr(digits, "digits_context", lambda *a, seed, **k: FakeDigits(n, seed))
    monkeypatch.setattr(demo, "pyplot", lambda: None)  # no spread.png: as without matplotlib
    d = tmp_path / "my demo"
    argv = ["demo", "--budget", "20", "--repeats", "2", "--out", d]
    code, _, err = run_cli(argv, capsys)
    assert code == 0, err
    recorded = json.loads((d / "demo.json").read_text())["files"]
    assert recorded["srs/selection.json"] == file_digest(d / "srs" / "selection.json")
    assert set(recorded) == demo.demo_layout() - {"demo.json", "spread.png"}
    code, _, err = run_cli(argv, capsys)  # again into the untouched directory: `make demo` twice
    assert code == 0, err

    code, _, err = run_cli(["select", "--extend", d / "srs", "--budget", "5"], capsys)
    assert code == 0, err
    code, _, err = run_cli(["campaign", d / "camp", "--activations", d / "activations.npy",
                            "--probs", d / "probabilities.npy"], capsys)  # fmt: skip
    assert code == 0, err
    (d / "notes.txt").write_text("mine")
    before = {f: file_digest(f) for f in d.rglob("*") if f.is_file()}
    code, out, err = run_cli([*argv, "--seed", "1"], capsys)
    assert code == 2 and out == ""
    assert err == (
        f"labelwise: error: --out {d} holds work the demo did not write there: camp/ (a "
        "campaign the demo did not make), notes.txt (not written by the demo), srs/ (a "
        "selection: selection.json, to_label.csv changed since the demo wrote them); the demo "
        "would overwrite it, or the pile's arrays it was made from. Give the demo another "
        f'directory (--out), remove {d} first (rm -r "{d}"), or give --force to move that '
        f"work into {d / 'replaced-<time>'} and run the demo there\n"
    )
    assert {f: file_digest(f) for f in d.rglob("*") if f.is_file()} == before
    assert _rows(d / "srs") == 25
    code, _, err = run_cli(["next", d / "camp", "--batch", "5"], capsys)
    assert code == 0, err

    # a file the demo writes, changed (by hand) since: refused as well
    shutil.rmtree(d / "camp")
    (d / "notes.txt").unlink()
    acts = d / "activations.npy"
    code, _, err = run_cli(["select", "--method", "srs", "--budget", "20", "--activations",
                            acts, "--out", d / "srs", "--force"], capsys)  # fmt: skip
    assert code == 0, err
    (d / "ces" / "labels.csv").write_text((d / "ces" / "labels.csv").read_text() + "\n")
    code, _, err = run_cli(argv, capsys)
    assert code == 2
    assert "ces/ (a selection: labels.csv changed since the demo wrote it)" in err
    assert "srs/ (a selection: selection.json, to_label.csv changed since" in err
    assert "labels.csv not written by the demo" not in err
    aside = next((d / "srs").glob("replaced-*")).name  # the extended selection, set aside
    assert f"changed since the demo wrote them; {aside}/ not written by the demo)" in err

    # --force (what `make demo` gives): the changed selections go aside whole, the demo runs
    srs_before = {f.relative_to(d / "srs"): file_digest(f) for f in (d / "srs").rglob("*")
                  if f.is_file()}  # fmt: skip
    code, _, err = run_cli([*argv, "--force"], capsys)
    assert code == 0, err
    moved = [p for p in d.glob("replaced-*") if p.is_dir()]
    assert len(moved) == 1 and sorted(p.name for p in moved[0].iterdir()) == ["ces", "srs"]
    assert err.startswith("note: moved what the demo did not write (ces/ (a selection: ")
    assert {f.relative_to(moved[0] / "srs"): file_digest(f)
            for f in (moved[0] / "srs").rglob("*") if f.is_file()} == srs_before  # fmt: skip
    assert _rows(d / "srs") == 20 and _rows(d / "ces") == 20  # the demo's own, again
    code, _, err = run_cli(argv, capsys)  # the set-aside folder is no work at risk
    assert code == 0, err


def test_a_demo_json_without_file_digests_is_checked_by_time(tmp_path: Path) -> None:
    """A demo directory written before demo.json recorded its files' sha256: a file modified
    after demo.json (written last) counts as changed; untouched ones, an empty or a missing
    directory pass, and a file the demo never writes is refused by its name. Without
    demo.json (a demo interrupted while it wrote the directory) the names alone count."""
    pytest.importorskip("sklearn")
    from labelwise.demo import check_demo_out
    from labelwise.exceptions import LabelwiseError

    check_demo_out(tmp_path / "new")
    d = tmp_path / "old"
    (d / "css").mkdir(parents=True)
    for name in ("activations.npy", "css/selection.json", "css/to_label.csv", "demo.json"):
        (d / name).write_text("{}" if name == "demo.json" else "x")
        os.utime(d / name, (1000, 1000))
    check_demo_out(d)
    os.utime(d / "css" / "to_label.csv", (1001, 1001))
    with pytest.raises(LabelwiseError, match=r"css/ \(a selection: to_label.csv changed since"):
        check_demo_out(d)
    os.utime(d / "css" / "to_label.csv", (1000, 1000))
    (d / "css" / "estimate.json").write_text("{}")
    with pytest.raises(LabelwiseError, match=r"css/ \(a selection: estimate.json not written"):
        check_demo_out(d)
    (d / "css" / "estimate.json").unlink()
    (d / "demo.json").unlink()
    os.utime(d / "css" / "to_label.csv", (2000, 2000))
    check_demo_out(d)
    (d / "srs").mkdir()
    (d / "srs" / "replaced-20260101T000000Z").mkdir()
    (d / "srs" / "replaced-20260101T000000Z" / "labels.csv").write_text("row,label\n")
    with pytest.raises(LabelwiseError, match=r"srs/ \(replaced-20260101T000000Z/ not written"):
        check_demo_out(d)

"""Re-running a command on existing output loses nothing of the user's (end to end)."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pytest

from labelwise.cli import main


@pytest.fixture(scope="module")
def model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(8, 6), torch.nn.ReLU(), torch.nn.Linear(6, 3))
    path = tmp_path_factory.mktemp("model") / "model.pt"
    torch.save(net, str(path))
    return path


def _run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def _capture(model: Path, tmp: Path, name: str, rows: int, seed: int, out: Path) -> list[str]:
    np.save(tmp / name, np.random.default_rng(seed).normal(size=(rows, 8)).astype(np.float32))
    return ["capture", "--model", str(model), "--inputs", str(tmp / name), "--out", str(out)]


def _arrays(d: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(d.glob("*.npy"))}


def test_recapture_refuses_to_replace_the_arrays_a_selection_was_made_from(
    model: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cap, sel = tmp_path / "cap", tmp_path / "sel"
    first = _capture(model, tmp_path, "a.npy", 60, 1, cap)
    assert _run(first, capsys)[0] == 0
    act = str(cap / "activations.npy")
    argv = ["select", "--method", "srs", "--budget", "10", "--activations", act, "--out", str(sel)]
    assert _run([*argv, "--seed", "0"], capsys)[0] == 0
    before = _arrays(cap)
    again = _capture(model, tmp_path, "b.npy", 80, 2, cap)
    code, _, err = _run(again, capsys)
    assert code == 2
    assert f"the selection in {sel.resolve()}" in err
    assert "activations.npy" in err and "--force" in err and "another --out" in err
    assert _arrays(cap) == before
    # the selection still works on its arrays
    assert _run(["select", "--extend", str(sel), "--budget", "5"], capsys)[0] == 0
    # --force replaces them, as asked
    assert _run([*again, "--force"], capsys)[0] == 0
    assert np.load(cap / "activations.npy").shape[0] == 80
    # the selection's arrays are gone now: a capture no longer refuses
    assert _run(first, capsys)[0] == 0


def test_recapture_finds_a_campaign_made_elsewhere(
    model: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cap, camp = tmp_path / "p" / "cap", tmp_path / "far" / "away" / "camp"
    assert _run(_capture(model, tmp_path, "a.npy", 60, 1, cap), capsys)[0] == 0
    argv = ["campaign", str(camp), "--activations", str(cap / "activations.npy"), "--seed", "0"]
    assert _run(argv, capsys)[0] == 0
    before = _arrays(cap)
    code, _, err = _run(_capture(model, tmp_path, "b.npy", 70, 2, cap), capsys)
    assert code == 2 and f"the campaign in {camp.resolve()}" in err
    assert _arrays(cap) == before


@pytest.fixture
def pile(tmp_path: Path) -> dict[str, Path]:
    gen = np.random.default_rng(0)
    np.save(tmp_path / "act.npy", gen.normal(size=(300, 8)).astype(np.float32))
    np.save(tmp_path / "probs.npy", gen.dirichlet(np.ones(3), 300).astype(np.float32))
    return {"act": tmp_path / "act.npy", "probs": tmp_path / "probs.npy", "dir": tmp_path}


def _rows(d: Path) -> list[int]:
    with open(d / "to_label.csv", newline="") as fh:
        return [int(r["row"]) for r in csv.DictReader(fh)]


def _labels(path: Path, pairs: list[tuple[int, int]]) -> Path:
    path.write_text("row,label\n" + "".join(f"{r},{v}\n" for r, v in pairs))
    return path


def test_label_errors_name_the_file_and_its_line(
    pile: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    d, sel, camp = pile["dir"], pile["dir"] / "sel", pile["dir"] / "camp"
    src = ["--activations", str(pile["act"]), "--probs", str(pile["probs"])]
    assert (
        _run(["select", "--method", "srs", "--budget", "10", *src, "--out", str(sel)], capsys)[0]
        == 0
    )
    assert _run(["campaign", str(camp), *src, "--seed", "0"], capsys)[0] == 0
    assert _run(["next", str(camp), "--batch", "5"], capsys)[0] == 0
    for where in (sel, camp):
        rows = _rows(where)
        free = next(r for r in range(300) if r not in rows)
        cases = {
            "far.csv": ([(rows[0], 1), (5000, 1)], "far.csv line 3: row 5000 is not a row"),
            "neg.csv": ([(-3, 1)], "neg.csv line 2: row -3 is not a row of the pile"),
            "other.csv": ([(rows[0], 1), (free, 2)], f"row {free} (line 3)"),
            "class.csv": ([(rows[0], 1), (rows[1], 7)], "class.csv line 3: label '7' is not a"),
            "twice.csv": ([(rows[0], 1), (rows[1], 0), (rows[0], 2)], "(lines 2, 4)"),
        }
        for name, (pairs, message) in cases.items():
            code, _, err = _run(
                ["estimate", str(where), "--labels", str(_labels(d / name, pairs))], capsys
            )
            assert code == 2 and message in err, (where.name, name, err)


def test_report_on_a_selection_labelled_in_part_reports_the_labelled_prefix(
    pile: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    """Halfway through labelling: the report is that of the first k rows in selection order
    (equal to estimating a selection of those k rows), and says that it is partial."""
    d, sel, small = pile["dir"], pile["dir"] / "sel", pile["dir"] / "small"
    src = ["--activations", str(pile["act"]), "--probs", str(pile["probs"])]
    pick = ["select", "--method", "srs", "--seed", "4", *src]
    assert _run([*pick, "--budget", "6", "--out", str(sel)], capsys)[0] == 0
    rows = _rows(sel)
    truth = np.random.default_rng(5).integers(0, 3, size=300)
    # rows 1-3 in order and the 6th: the report uses the first 3 and says so
    part = _labels(d / "part.csv", [(r, int(truth[r])) for r in rows[:3] + rows[5:]])
    code, out, err = _run(
        ["report", str(sel), "--labels", str(part), "--out", str(d / "r.html")], capsys
    )
    assert code == 0, err
    assert "Partial: 3 of the 6 selected rows are labelled" in out
    assert "1 label further down the order is not used" in out
    page = (d / "r.html").read_text()
    assert 'id="partial"' in page and "Partial: 3 of the 6 selected rows" in page
    # the same numbers as a selection of those 3 rows, estimated with every label
    assert _run([*pick, "--budget", "3", "--out", str(small)], capsys)[0] == 0
    assert _rows(small) == rows[:3]
    head = _labels(d / "head.csv", [(r, int(truth[r])) for r in rows[:3]])
    code, out, _ = _run(["estimate", str(small), "--labels", str(head), "--json"], capsys)
    value = json.loads(out)["value"]
    assert f"{value:.4f}" in page
    # the first row unlabelled: an error that names the row to label
    late = _labels(d / "late.csv", [(r, int(truth[r])) for r in rows[1:4]])
    code, _, err = _run(
        ["report", str(sel), "--labels", str(late), "--out", str(d / "r.html")], capsys
    )
    assert code == 2 and f"label row {rows[0]} and report again" in err


def test_force_over_a_labelled_selection_or_campaign_moves_it_aside(
    pile: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    """'select --force' / 'campaign --force' over a directory with labels replaced the
    selection (or the campaign's recorded labels) the labels belong to: the labels.csv left
    behind named rows of no selection. The old one is now moved aside whole, still usable."""
    sel, camp = pile["dir"] / "sel", pile["dir"] / "camp"
    src = ["--activations", str(pile["act"]), "--probs", str(pile["probs"])]
    pick = ["select", "--method", "srs", "--budget", "6", *src, "--out", str(sel)]
    assert _run([*pick, "--seed", "0"], capsys)[0] == 0
    rows = _rows(sel)
    _labels(sel / "labels.csv", [(r, r % 3) for r in rows])
    code, first, _ = _run(["estimate", str(sel), "--labels", str(sel / "labels.csv")], capsys)
    assert code == 0
    code, out, _ = _run([*pick, "--seed", "1", "--force"], capsys)
    assert code == 0
    (aside,) = sel.glob("replaced-*")
    assert f"with its labels, is now in {aside}" in out
    assert not (sel / "labels.csv").exists() and _rows(aside) == rows
    code, again, _ = _run(["estimate", str(aside), "--labels", str(aside / "labels.csv")], capsys)
    assert code == 0 and again == first.replace(str(sel), str(aside))
    # without labels, --force just replaces (nothing of the user's to keep)
    assert _run([*pick, "--seed", "2", "--force"], capsys)[0] == 0
    assert len(list(sel.glob("replaced-*"))) == 1
    # a campaign with recorded labels
    assert _run(["campaign", str(camp), *src, "--seed", "0"], capsys)[0] == 0
    assert _run(["next", str(camp), "--batch", "5"], capsys)[0] == 0
    done = _labels(camp / "labels.csv", [(r, r % 3) for r in _rows(camp)])
    assert _run(["estimate", str(camp), "--labels", str(done), "--json"], capsys)[0] == 0
    code, out, _ = _run(["campaign", str(camp), *src, "--seed", "0", "--force"], capsys)
    assert code == 0
    (aside,) = camp.glob("replaced-*")
    assert f"with its labels, is now in {aside}" in out
    code, out, _ = _run(["estimate", str(aside), "--labels", str(aside / "labels.csv")], capsys)
    assert code == 0 and "5 labelled rows" in out


def test_capture_into_a_selection_directory_is_refused(
    model: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """'capture --out sel' over a selection removed the selection's classes.json (a capture
    removes the capture files it does not write): the labels' class names were gone."""
    cap, sel = tmp_path / "cap", tmp_path / "sel"
    assert _run(_capture(model, tmp_path, "a.npy", 60, 1, cap), capsys)[0] == 0
    act = str(cap / "activations.npy")
    argv = ["select", "--method", "srs", "--budget", "5", "--activations", act, "--out", str(sel)]
    (tmp_path / "names.txt").write_text("a\nb\nc\n")
    assert _run([*argv, "--classes", str(tmp_path / "names.txt")], capsys)[0] == 0
    before = {p.name: p.read_bytes() for p in sel.iterdir()}
    assert "classes.json" in before
    code, _, err = _run(_capture(model, tmp_path, "b.npy", 30, 2, sel), capsys)
    assert code == 2 and "holds a selection; a capture needs its own directory" in err
    assert {p.name: p.read_bytes() for p in sel.iterdir()} == before


def test_a_selection_moved_aside_still_protects_its_capture(
    model: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """'select --force' moved a labelled selection to DIR/replaced-<time>/ but did not note
    it in its capture's used_by.json: once DIR held a selection of another capture, a
    re-capture into the first one replaced the arrays the moved selection was made from."""
    cap, cap2, sel = tmp_path / "cap", tmp_path / "cap2", tmp_path / "sel"
    assert _run(_capture(model, tmp_path, "a.npy", 60, 1, cap), capsys)[0] == 0
    assert _run(_capture(model, tmp_path, "b.npy", 50, 2, cap2), capsys)[0] == 0
    pick = ["select", "--method", "srs", "--budget", "6", "--seed", "0", "--out", str(sel)]
    assert _run([*pick, "--activations", str(cap / "activations.npy")], capsys)[0] == 0
    _labels(sel / "labels.csv", [(r, r % 3) for r in _rows(sel)])
    code, first, _ = _run(["estimate", str(sel), "--labels", str(sel / "labels.csv")], capsys)
    assert code == 0
    other = [*pick, "--activations", str(cap2 / "activations.npy"), "--force"]
    assert _run(other, capsys)[0] == 0
    (aside,) = sel.glob("replaced-*")
    assert str(aside.resolve()) in json.loads((cap / "used_by.json").read_text())
    before = _arrays(cap)
    code, _, err = _run(_capture(model, tmp_path, "c.npy", 70, 3, cap), capsys)
    assert code == 2 and f"the selection in {aside.resolve()}" in err
    assert _arrays(cap) == before
    code, again, _ = _run(["estimate", str(aside), "--labels", str(aside / "labels.csv")], capsys)
    assert code == 0 and again == first.replace(str(sel), str(aside))
    # one moved aside before used_by.json noted it is found beside the capture all the same
    (cap / "used_by.json").write_text(json.dumps([str(sel.resolve())]))
    code, _, err = _run(_capture(model, tmp_path, "c.npy", 70, 3, cap), capsys)
    assert code == 2 and f"the selection in {aside.resolve()}" in err
    assert _arrays(cap) == before


def test_a_campaign_moved_aside_still_protects_its_capture(
    model: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The same for 'campaign --force' over a campaign with recorded labels."""
    cap, cap2, camp = tmp_path / "cap", tmp_path / "cap2", tmp_path / "camp"
    assert _run(_capture(model, tmp_path, "a.npy", 60, 1, cap), capsys)[0] == 0
    assert _run(_capture(model, tmp_path, "b.npy", 50, 2, cap2), capsys)[0] == 0
    assert (
        _run(["campaign", str(camp), "--activations", str(cap / "activations.npy")], capsys)[0] == 0
    )
    assert _run(["next", str(camp), "--batch", "5"], capsys)[0] == 0
    done = _labels(camp / "labels.csv", [(r, r % 3) for r in _rows(camp)])
    assert _run(["estimate", str(camp), "--labels", str(done)], capsys)[0] == 0
    again = ["campaign", str(camp), "--activations", str(cap2 / "activations.npy"), "--force"]
    assert _run(again, capsys)[0] == 0
    (aside,) = camp.glob("replaced-*")
    before = _arrays(cap)
    code, _, err = _run(_capture(model, tmp_path, "c.npy", 70, 3, cap), capsys)
    assert code == 2 and f"the campaign in {aside.resolve()}" in err
    assert _arrays(cap) == before


@pytest.mark.parametrize(
    ("study", "earlier"),
    [
        ("operational", ["table.json", "sd_mnist_1d.png"]),
        ("comparative", ["ranking_zoo.csv"]),
        ("quality", ["quality_study.json"]),
    ],
)
def test_a_study_refuses_to_replace_an_earlier_runs_tables(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], study: str, earlier: list[str]
) -> None:
    """'labelwise study ... --out DIR' replaced an earlier run's tables in DIR without a word
    (a run of minutes to hours). Like 'select' over a selection it now refuses, before the
    study runs, unless --force; another study's tables in DIR do not count."""
    out = tmp_path / "study-out"
    out.mkdir()
    for name in earlier:
        (out / name).write_text(f"earlier {name}")
    code, printed, err = _run(["study", study, "--quick", "--out", str(out)], capsys)
    assert code == 2 and printed == ""
    assert f"--out {out} holds the tables of an earlier {study} study" in err
    assert ", ".join(sorted(earlier)) in err and "--force" in err
    assert sorted(p.name for p in out.iterdir()) == sorted(earlier)
    assert all((out / n).read_text() == f"earlier {n}" for n in earlier)


def test_study_force_moves_the_earlier_runs_tables_aside(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """'--force' moves the earlier run's tables into DIR/replaced-<time>/ and says so; the
    tables of another study in DIR stay. (The study itself, training models for minutes,
    is replaced by one with no rows: what is tested is what happens to the files.)"""
    quality_study = pytest.importorskip("labelwise.experiments.quality_study")
    monkeypatch.setattr(quality_study, "run_quality_study", lambda **kw: [])
    out = tmp_path / "study-out"
    out.mkdir()
    (out / "quality_study.json").write_text('{"earlier": 1}')
    (out / "table.json").write_text('{"operational": 1}')
    code, printed, err = _run(["study", "quality", "--quick", "--force", "--out", str(out)], capsys)
    assert code == 0, err
    (aside,) = out.glob("replaced-*")
    assert (aside / "quality_study.json").read_text() == '{"earlier": 1}'
    assert f"the earlier quality study's tables are now in {aside}" in printed
    assert json.loads((out / "quality_study.json").read_text()) == {"seed": 0, "rows": []}
    assert (out / "table.json").read_text() == '{"operational": 1}'

"""Bad input to the CLI ends in one ``labelwise: error:`` line, never a traceback, and
changes no file: ``capture``, and ``export``, ``import``, ``report`` and ``label``."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from label_helpers import proposed
from labelwise.cli import main


def _run(capsys: pytest.CaptureFixture[str], argv: list[str]) -> str:
    code = main(argv)
    err = capsys.readouterr().err
    assert code == 2, err
    assert "Traceback" not in err
    lines = [line for line in err.splitlines() if line.startswith("labelwise: error:")]
    assert len(lines) == 1, err
    return lines[0]


def test_input_errors_before_the_model_is_loaded(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    model = str(tmp_path / "model.pt")  # never loaded: the inputs are checked first
    out = tmp_path / "out"
    base = ["capture", "--model", model, "--out", str(out), "--inputs"]
    text = tmp_path / "text.csv"
    text.write_text("a,b\n1,2\n3,oops\n")
    assert "is not a finite number: 'oops'" in _run(capsys, [*base, str(text)])
    (tmp_path / "empty.csv").write_text("")
    assert "is empty" in _run(capsys, [*base, str(tmp_path / "empty.csv")])
    npz = tmp_path / "x.npz"
    np.savez(npz, a=np.zeros((2, 2)), b=np.zeros((2, 2)))
    assert "--key" in _run(capsys, [*base, str(npz)])
    assert "does not exist" in _run(capsys, [*base, str(tmp_path / "missing.npy")])
    assert not out.exists()


def test_image_folder_errors_before_the_model_is_loaded(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("PIL.Image")
    out = tmp_path / "out"
    base = ["capture", "--model", str(tmp_path / "model.pt"), "--out", str(out), "--inputs"]
    (tmp_path / "empty").mkdir()
    assert "holds no images" in _run(capsys, [*base, str(tmp_path / "empty")])
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "fake.png").write_text("not a png")
    assert "cannot read image" in _run(capsys, [*base, str(bad)])
    assert "--image-size" in _run(capsys, [*base, str(bad), "--image-size", "abc"])
    assert not out.exists()


def test_model_kwargs_that_are_not_a_json_object(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    np.save(tmp_path / "x.npy", np.zeros((3, 4), dtype=np.float32))
    argv = ["capture", "--model-class", "m:C", "--state-dict", str(tmp_path / "s.pt")]
    argv += ["--inputs", str(tmp_path / "x.npy"), "--out", str(tmp_path / "out")]
    assert "JSON object" in _run(capsys, [*argv, "--model-kwargs", '{"hidden": 8'])


def test_image_options_on_an_array(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    np.save(tmp_path / "x.npy", np.zeros((3, 4), dtype=np.float32))
    argv = ["capture", "--model", str(tmp_path / "m.pt"), "--inputs", str(tmp_path / "x.npy")]
    argv += ["--out", str(tmp_path / "out"), "--mean", "1"]
    assert "--mean applies only to a folder of images" in _run(capsys, argv)


# ----------------------------------------------------------- export, import, report, label

N_ROWS = 120


@pytest.fixture(scope="module")
def dirs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A small campaign (12 rows proposed) and an SRS selection (10 rows), made by the CLI."""
    root = tmp_path_factory.mktemp("dirs")
    rng = np.random.default_rng(0)
    acts = rng.normal(size=(N_ROWS, 4)).astype(np.float32)
    p = rng.dirichlet(np.ones(3), size=N_ROWS).astype(np.float32)
    np.save(root / "a.npy", acts)
    np.save(root / "p.npy", p)
    src = ["--activations", str(root / "a.npy"), "--probs", str(root / "p.npy"), "--seed", "1"]
    assert main(["campaign", str(root / "camp"), *src]) == 0
    assert main(["next", str(root / "camp"), "--batch", "12"]) == 0
    argv = ["select", "--method", "srs", "--budget", "10", *src, "--out", str(root / "sel")]
    assert main(argv) == 0
    assert (root / "sel" / "selection.json").is_file()
    return {"camp": root / "camp", "sel": root / "sel"}


def _copy(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst)
    return dst


def _snapshot(d: Path) -> dict[str, bytes]:
    """Every file of ``d`` but the (empty) lock file 'labelwise label' leaves."""
    return {
        p.name: p.read_bytes()
        for p in sorted(d.iterdir())
        if p.is_file() and p.name != ".labelling.lock"
    }


def _edit(path: Path, key: str, value: Any) -> None:
    """Set ``doc[k1][k2]... = value`` in a JSON file (``key``: "k1.k2")."""
    doc = json.loads(path.read_text())
    obj = doc
    *up, last = key.split(".")
    for k in up:
        obj = obj[k]
    obj[last] = value
    path.write_text(json.dumps(doc))


COMMANDS = [["export"], ["import", "{d}", "{export}"], ["report"], ["label", "--port", "0"]]


def _argv(cmd: list[str], d: Path, export: Path) -> list[str]:
    argv = [a.format(d=d, export=export) for a in cmd]
    return [argv[0], *([str(d)] if "{d}" not in cmd else []), *argv[1:]]


@pytest.mark.parametrize(
    ("key", "value", "says"),
    [
        ("campaign", "x", "campaign state must be a JSON object"),
        ("campaign.proposed", [9999], "proposed must hold rows in [0, 120)"),
        ("campaign.recorded_rows", [-3], "recorded_rows must hold rows"),
        ("labels", 5, "'labels' must be a JSON object"),
        ("sources", [], "'sources' must map each source"),
    ],
)
def test_corrupt_campaign_state(
    dirs: dict[str, Path],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    key: str,
    value: Any,
    says: str,
) -> None:
    _every_command_refuses(dirs["camp"], "campaign.state.json", key, value, says, tmp_path, capsys)


def test_campaign_state_that_is_a_list(
    dirs: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    d = _copy(dirs["camp"], tmp_path / "camp")
    (d / "campaign.state.json").write_text("[1, 2]")
    assert "must be a JSON object, got list" in _run(capsys, ["report", str(d)])


def test_corrupt_campaign_arrays(
    dirs: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    d = _copy(dirs["camp"], tmp_path / "camp")
    npz = d / "campaign-arrays.state.npz"
    npz.write_bytes(npz.read_bytes()[:100])
    before = _snapshot(d)
    for cmd in (["export"], ["report"]):
        line = _run(capsys, _argv(cmd, d, tmp_path))
        assert "campaign-arrays.state.npz is not a readable .npz file" in line
    assert _snapshot(d) == before


@pytest.mark.parametrize(
    ("key", "value", "says"),
    [
        ("selection", "x", "selection must be a JSON object"),
        ("selection.indices", [-1], "selection indices must be a list of rows in [0, 120)"),
        ("selection.indices", "abc", "selection indices must be integer rows"),
        ("selection.population_size", "x", "population_size must be a positive integer"),
        ("sources", 5, "'sources' must map each source"),
        ("sources.activations.path", 7, "'sources' must map each source"),
    ],
)
def test_corrupt_selection(
    dirs: dict[str, Path],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    key: str,
    value: Any,
    says: str,
) -> None:
    _every_command_refuses(dirs["sel"], "selection.json", key, value, says, tmp_path, capsys)


def _every_command_refuses(
    source: Path,
    state: str,
    key: str,
    value: Any,
    says: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A copy of ``source`` whose ``state`` file has ``key`` set to ``value``: every command
    ends in one error line naming the file and saying ``says``, and changes no file."""
    d = _copy(source, tmp_path / source.name)
    _edit(d / state, key, value)
    before = _snapshot(d)
    export = tmp_path / "export.json"
    export.write_text("[]")
    for cmd in COMMANDS:
        line = _run(capsys, _argv(cmd, d, export))
        assert state in line and says in line, line
    assert _snapshot(d) == before


@pytest.mark.parametrize("name", ["camp", "sel"])
def test_out_that_cannot_be_written(
    dirs: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str
) -> None:
    d = _copy(dirs[name], tmp_path / name)
    held = "selection.json" if name == "sel" else "campaign.state.json"
    (tmp_path / "afile").write_text("x")
    before = _snapshot(d)
    for cmd in (["export"], ["report"]):
        base = [cmd[0], str(d), "--out"]
        assert "is a directory" in _run(capsys, [*base, str(d)])
        inside = "x.json" if cmd[0] == "export" else "x"  # export's --out names a .json
        assert "afile is a file, not a directory" in _run(
            capsys, [*base, str(tmp_path / "afile" / inside)]
        )
        assert "would overwrite a file" in _run(capsys, [*base, str(d / held)])
        # export names a .json: its refusal of labels.csv says so before any overwrite check
        said = "ending in .json" if cmd[0] == "export" else "would overwrite a file"
        assert said in _run(capsys, [*base, str(d / "labels.csv")])
    assert _snapshot(d) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["afile", name]


@pytest.mark.parametrize("port", ["70000", "-1"])
def test_label_port_out_of_range_opens_nothing(
    dirs: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str], port: str
) -> None:
    d = _copy(dirs["camp"], tmp_path / "camp")
    (d / "labels.csv").write_text("row,label\n")  # would be read (and fail) if opened
    before = _snapshot(d)
    assert "--port must be in [0, 65535]" in _run(capsys, ["label", str(d), "--port", port])
    assert _snapshot(d) == before
    assert not (d / ".labelling.lock").exists()


def test_import_task_rows_that_are_not_integers(
    dirs: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    d = _copy(dirs["sel"], tmp_path / "sel")
    row = json.loads((d / "selection.json").read_text())["selection"]["indices"][0]
    export = tmp_path / "export.json"
    # 1e400 is JSON for infinity; 0.5 + row and true are no rows; none may become a label
    export.write_text(
        f'[{{"labelwise_row": 1e400, "label": "0"}}, {{"labelwise_row": {row + 0.5}, '
        '"label": "0"}, {"labelwise_row": true, "label": "0"}]'
    )
    assert "no usable labels" in _run(capsys, ["import", str(d), str(export)])
    assert not (d / "labels.csv").exists()


@pytest.mark.parametrize("name", ["camp", "sel"])
def test_labels_csv_with_a_label_that_is_no_class(
    dirs: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str
) -> None:
    d = _copy(dirs[name], tmp_path / name)
    to_label = (d / "to_label.csv").read_text().splitlines()[1:]
    rows = [int(line.split(",")[1]) for line in to_label]
    (d / "labels.csv").write_text(f"row,label\n{rows[0]},9\n")
    export = tmp_path / "export.json"
    export.write_text(json.dumps([{"labelwise_row": rows[1], "label": "1"}]))
    before = _snapshot(d)
    for cmd in (["import", "{d}", "{export}"], ["label", "--port", "0"]):
        line = _run(capsys, _argv(cmd, d, export))
        assert "labels.csv has labels that are no class in [0, 3) (row" in line, line
    assert _snapshot(d) == before


def test_import_merges_a_labels_csv_that_names_classes(
    dirs: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """As 'estimate' and 'report' read it: a label may be a class name (classes.json)."""
    d = _copy(dirs["sel"], tmp_path / "sel")
    (d / "classes.json").write_text('["cat", "dog", "bird"]')
    rows = json.loads((d / "selection.json").read_text())["selection"]["indices"]
    (d / "labels.csv").write_text(f"row,label\n{rows[0]},bird\n")
    export = tmp_path / "export.json"
    export.write_text(json.dumps([{"labelwise_row": rows[1], "label": "dog"}]))
    assert main(["import", str(d), str(export)]) == 0, capsys.readouterr().err
    lines = (d / "labels.csv").read_text().splitlines()
    assert lines[0] == "row,label,class"  # the index and, unambiguously, its name
    assert sorted(lines[1:]) == sorted([f"{rows[0]},2,bird", f"{rows[1]},1,dog"])


@pytest.mark.parametrize("sub", ["label", "export", "import", "report", "rank"])
def test_help_exits_0_and_explains(capsys: pytest.CaptureFixture[str], sub: str) -> None:
    with pytest.raises(SystemExit) as exc:
        main([sub, "--help"])
    assert exc.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith(f"usage: labelwise {sub}") and "positional arguments" in out
    # an option that is not given says nothing, not "(default: None)" after its own default
    assert "(default: None)" not in out and "(default: False)" not in out


def test_dir_that_is_missing_or_a_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "afile").write_text("x")
    export = tmp_path / "export.json"
    for cmd in COMMANDS:
        assert "does not exist" in _run(capsys, _argv(cmd, tmp_path / "nope", export))
        assert "is a file, not a directory" in _run(capsys, _argv(cmd, tmp_path / "afile", export))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["afile"]


@pytest.mark.parametrize("doc", ['{"skipped": ["x"]}', '{"answered": [[1]]}', '{"answered": 5}'])
def test_label_page_state_that_is_malformed(
    dirs: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str], doc: str
) -> None:
    d = _copy(dirs["sel"], tmp_path / "sel")
    (d / "labelling.state.json").write_text(doc)
    before = _snapshot(d)
    line = _run(capsys, ["label", str(d), "--port", "0"])
    assert "labelling.state.json is malformed" in line and "delete it" in line
    assert _snapshot(d) == before


def test_paths_the_system_refuses_get_a_clear_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # --out under a file, or a name longer than the file system allows: no traceback
    (tmp_path / "afile").write_text("x")
    srs = ["select", "--method", "srs", "--budget", "3", "--population-size", "10"]
    for out, says in (
        (tmp_path / "afile" / "sel", "Not a directory"),
        (tmp_path / ("n" * 300), "File name too long"),
    ):
        assert main([*srs, "--out", str(out)]) == 2
        err = capsys.readouterr().err
        assert says in err and "Traceback" not in err
    assert (tmp_path / "afile").read_text() == "x"


def test_options_that_would_be_ignored_and_unclear_inputs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    gen = np.random.default_rng(0)
    acts = tmp_path / "acts.npy"
    np.save(acts, gen.normal(size=(60, 4)).astype(np.float32))
    preds = tmp_path / "preds.npy"
    np.save(preds, gen.integers(0, 3, (4, 60)))
    table = tmp_path / "pile.csv"
    table.write_text("a,b\n1,2\n")

    def refused(argv: list[Any], says: str) -> None:
        assert main([str(a) for a in argv]) == 2, argv
        err = capsys.readouterr().err
        assert says in err and "Traceback" not in err, err

    sel = tmp_path / "sel"
    assert main(["select", "--method", "srs", "--budget", "5", "--activations", str(acts),
                 "--seed", "1", "--out", str(sel)]) == 0  # fmt: skip
    capsys.readouterr()
    refused(["select", "--extend", sel, "--budget", "5", "--seed", "3"], "--seed does not apply")
    refused(["select", "--method", "srs", "--budget", "5", "--activations", acts,
             "--population-size", "100", "--out", tmp_path / "s2"],
            "--population-size 100 differs")  # fmt: skip
    refused(["select", "--method", "ddg", "--budget", "5", "--predictions", preds,
             "--out", tmp_path / "s3"], "(M, N, C) probabilities")  # fmt: skip
    refused(["select", "--method", "srs", "--budget", "5", "--activations", table,
             "--out", tmp_path / "s4"], "labelwise capture --inputs")  # fmt: skip
    refused(["estimate", sel, "--labels", tmp_path], "is a directory")
    refused(["estimate", sel, "--labels", tmp_path / "x.csv", "--n-classes", "0"],
            "--n-classes must be at least 2")  # fmt: skip
    cp = tmp_path / "cp"
    assert main(["select", "--method", "cppi", "--budget", "6", "--predictions", str(preds),
                 "--seed", "0", "--out", str(cp)]) == 0  # fmt: skip
    capsys.readouterr()
    rows = proposed(cp)
    (cp / "labels.csv").write_text("row,label\n" + "".join(f"{r},0\n" for r in rows))
    refused(["rank", cp, "--labels", cp / "labels.csv", "--names", "a,a,b,c"], "distinct")


def test_more_options_that_would_mislead(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    gen = np.random.default_rng(1)
    acts = tmp_path / "acts.npy"
    np.save(acts, gen.normal(size=(80, 4)).astype(np.float32))
    probs = tmp_path / "probs.npy"
    np.save(probs, gen.dirichlet(np.ones(3), 80).astype(np.float32))
    argv = ["select", "--budget", "10", "--out", str(tmp_path / "s")]
    assert main([*argv, "--method", "ces", "--activations", str(acts), "--epsilon", "0.1"]) == 2
    assert "--epsilon applies to the ce objectives" in capsys.readouterr().err
    assert main([*argv, "--method", "css", "--probs", str(probs), "--strata", "0.5,0.5"]) == 2
    assert "give the allocation too" in capsys.readouterr().err
    camp = tmp_path / "camp"
    assert main(["campaign", str(camp), "--activations", str(acts), "--probs", str(probs)]) == 0
    capsys.readouterr()
    assert main(["rank", str(camp), "--labels", str(tmp_path / "l.csv")]) == 2
    assert "holds a campaign" in capsys.readouterr().err


def test_target_labels_for_a_classifier_say_what_to_do(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    gen = np.random.default_rng(2)
    probs = tmp_path / "probs.npy"
    np.save(probs, gen.dirichlet(np.ones(3), 50).astype(np.float32))
    sel = tmp_path / "sel"
    assert main(["select", "--method", "css", "--budget", "9", "--probs", str(probs),
                 "--seed", "0", "--out", str(sel)]) == 0  # fmt: skip
    rows = proposed(sel)
    (sel / "t.csv").write_text("row,target\n" + "".join(f"{r},0.5\n" for r in rows))
    capsys.readouterr()
    assert main(["estimate", str(sel), "--labels", str(sel / "t.csv")]) == 2
    assert "give a 'label' column" in capsys.readouterr().err


def test_confidences_recorded_at_selection_ask_for_predictions(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A CSS selection made from (N,) confidences cannot score labels without the predicted
    classes: the error names the recorded --probs and asks for --predictions (not a
    --predictions the user never gave, nor a 'target' column)."""
    gen = np.random.default_rng(3)
    conf = tmp_path / "conf.npy"
    np.save(conf, gen.uniform(0.3, 1.0, 60))
    sel = tmp_path / "sel"
    assert main(["select", "--method", "css", "--budget", "9", "--probs", str(conf),
                 "--seed", "0", "--out", str(sel)]) == 0  # fmt: skip
    rows = proposed(sel)
    (sel / "labels.csv").write_text("row,label\n" + "".join(f"{r},1\n" for r in rows))
    capsys.readouterr()
    err = _run(capsys, ["estimate", str(sel), "--labels", str(sel / "labels.csv")])
    assert "(N,) confidences" in err and "give --predictions" in err
    assert "target" not in err
    assert not (sel / "estimate.json").exists()
    preds = tmp_path / "preds.npy"
    np.save(preds, gen.integers(0, 2, 60))
    assert main(["estimate", str(sel), "--labels", str(sel / "labels.csv"),
                 "--predictions", str(preds)]) == 0  # fmt: skip


def test_a_failed_select_or_campaign_keeps_the_older_class_names(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--force --classes with an error later (a bad budget, bad strata) left the directory's
    classes.json replaced under the older selection or campaign (and a lone classes.json in
    a new directory); the names are now saved with the selection or campaign only."""
    gen = np.random.default_rng(4)
    acts = tmp_path / "acts.npy"
    np.save(acts, gen.normal(size=(60, 4)).astype(np.float32))
    probs = tmp_path / "probs.npy"
    np.save(probs, gen.dirichlet(np.ones(3), 60).astype(np.float32))
    old, new = tmp_path / "old.txt", tmp_path / "new.txt"
    old.write_text("cat\ndog\nbird\n")
    new.write_text("x\ny\nz\n")
    sel, camp = tmp_path / "sel", tmp_path / "camp"
    select = ["select", "--method", "srs", "--probs", str(probs), "--seed", "0", "--out", str(sel)]
    start = ["campaign", str(camp), "--activations", str(acts), "--probs", str(probs)]
    assert main([*select, "--budget", "5", "--classes", str(old)]) == 0
    assert main([*start, "--classes", str(old)]) == 0
    before = {d: (d / "classes.json").read_text() for d in (sel, camp)}
    capsys.readouterr()
    _run(capsys, [*select, "--budget", "0", "--classes", str(new), "--force"])
    _run(capsys, [*start, "--classes", str(new), "--force", "--n-strata", "0"])
    assert {d: (d / "classes.json").read_text() for d in (sel, camp)} == before
    fresh = tmp_path / "fresh"
    _run(capsys, ["select", "--method", "srs", "--probs", str(probs), "--budget", "0",
                  "--classes", str(new), "--out", str(fresh)])  # fmt: skip
    assert not fresh.exists()
    assert main([*select, "--budget", "5", "--classes", str(new), "--force"]) == 0
    assert json.loads((sel / "classes.json").read_text()) == ["x", "y", "z"]


def test_ctrl_c_ends_with_one_line_and_keeps_the_older_selection(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ctrl-C during a long select (CES on a large pile) printed a Python traceback; it now
    ends with one line and exit 130, and the selection it would have replaced is intact."""
    from labelwise import registry

    gen = np.random.default_rng(5)
    acts = tmp_path / "acts.npy"
    np.save(acts, gen.normal(size=(80, 4)).astype(np.float32))
    sel = tmp_path / "sel"
    argv = ["select", "--method", "ces", "--budget", "10", "--activations", str(acts),
            "--out", str(sel)]  # fmt: skip
    assert main([*argv, "--seed", "0"]) == 0
    before = {p.name: p.read_bytes() for p in sel.iterdir()}

    def interrupted(*args: Any, **kwargs: Any) -> Any:
        raise KeyboardInterrupt

    monkeypatch.setattr(registry.Method, "run", interrupted)
    capsys.readouterr()
    assert main([*argv, "--seed", "1", "--force"]) == 130
    err = capsys.readouterr().err
    assert err == "labelwise: interrupted; no file was left half-written\n"
    assert {p.name: p.read_bytes() for p in sel.iterdir()} == before


def test_estimate_or_rank_that_fails_writes_no_class_names(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """estimate/rank --classes with names the labels do not use failed, but left those
    names in DIR/classes.json, so every later command (report, estimate without --classes)
    read the labels with them and failed too; the names are now saved only with a result."""
    gen = np.random.default_rng(6)
    acts = tmp_path / "acts.npy"
    np.save(acts, gen.normal(size=(60, 4)).astype(np.float32))
    probs = tmp_path / "probs.npy"
    np.save(probs, gen.dirichlet(np.ones(3), 60).astype(np.float32))
    preds = tmp_path / "preds.npy"
    np.save(preds, gen.integers(0, 3, (3, 60)))
    good, wrong = tmp_path / "good.txt", tmp_path / "wrong.txt"
    good.write_text("cat\ndog\nbird\n")
    wrong.write_text("x\ny\nz\n")
    names = ["cat", "dog", "bird"]

    def labelled(d: Path) -> Path:
        rows = proposed(d)
        text = "".join(f"{r},{names[r % 3]}\n" for r in rows)
        (d / "l.csv").write_text("row,label\n" + text)
        return d / "l.csv"

    sel, rk, camp = tmp_path / "sel", tmp_path / "rk", tmp_path / "camp"
    assert main(["select", "--method", "srs", "--budget", "6", "--probs", str(probs),
                 "--seed", "0", "--out", str(sel)]) == 0  # fmt: skip
    assert main(["select", "--method", "sds", "--budget", "6", "--predictions", str(preds),
                 "--seed", "0", "--out", str(rk)]) == 0  # fmt: skip
    assert main(["campaign", str(camp), "--activations", str(acts), "--probs", str(probs),
                 "--seed", "0"]) == 0  # fmt: skip
    assert main(["next", str(camp), "--batch", "6"]) == 0
    capsys.readouterr()
    for argv in (["estimate", sel], ["rank", rk], ["estimate", camp]):
        d = argv[1]
        run = [*map(str, argv), "--labels", str(labelled(d)), "--classes"]
        assert "is not a class name" in _run(capsys, [*run, str(wrong)])
        assert not (d / "classes.json").exists()
        assert main([*run, str(good)]) == 0
        assert json.loads((d / "classes.json").read_text()) == names

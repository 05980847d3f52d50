"""What a new user hits with odd inputs: each test is one case that printed a misleading
message (or none), run end to end through the CLI or the public API."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest

from labelwise.exceptions import LabelwiseError
from labelwise.piles import open_pile
from synthetic import classifier_pile, run_cli


def _srs_rows(
    capsys: pytest.CaptureFixture[str], out: Path, budget: int, *source: object
) -> list[str]:
    """'select --method srs --seed 0' of ``budget`` rows from ``source`` (e.g. '--probs',
    FILE) into ``out``; the row column of its to_label.csv."""
    code, _, err = run_cli(
        ["select", "--method", "srs", "--budget", str(budget), "--seed", "0", *source,
         "--out", out], capsys)  # fmt: skip
    assert code == 0, err
    with open(out / "to_label.csv") as fh:
        return [line.split(",")[1] for line in fh.read().splitlines()[1:]]


@pytest.fixture()
def pile(tmp_path: Path) -> dict[str, Path]:
    y, acts, probs = classifier_pile(np.random.default_rng(0), 120, 4, 8)
    np.save(tmp_path / "acts.npy", acts.astype(np.float32))
    np.save(tmp_path / "probs.npy", probs.astype(np.float32))
    np.save(tmp_path / "y.npy", y)
    return {"dir": tmp_path, "acts": tmp_path / "acts.npy", "probs": tmp_path / "probs.npy"}


def test_next_takes_budget_like_select(
    pile: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    """'labelwise next DIR --budget 10' (as 'select --budget' is spelled) stopped with
    'unrecognized arguments: --budget 10'; --budget is now the same as --batch."""
    camp = pile["dir"] / "camp"
    code, _, err = run_cli(
        ["campaign", camp, "--activations", pile["acts"], "--probs", pile["probs"]], capsys
    )
    assert code == 0, err
    code, out, err = run_cli(["next", camp, "--budget", "7"], capsys)
    assert code == 0, err
    assert "7 new rows to label" in out
    with open(camp / "to_label.csv") as fh:
        assert len(fh.read().splitlines()) == 1 + 7


def test_a_zarr_group_names_its_arrays(
    pile: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    """A zarr group given where an array is expected said "not a readable zarr array
    (Invalid value for 'node_type'. Expected 'array'. Got 'group'.)"; it now names the arrays
    inside to give instead."""
    zarr = pytest.importorskip("zarr")
    group = zarr.open_group(str(pile["dir"] / "g.zarr"), mode="w")
    group.create_array("probs", shape=(120, 4), dtype="f4")[:] = np.load(pile["probs"])
    code, _, err = run_cli(
        ["select", "--method", "srs", "--budget", "5", "--probs", pile["dir"] / "g.zarr",
         "--out", pile["dir"] / "sel"], capsys)  # fmt: skip
    assert code == 2
    assert "is a zarr group, not an array; give one of its arrays:" in err
    assert str(pile["dir"] / "g.zarr" / "probs") in err and "Traceback" not in err
    code, _, err = run_cli(
        ["select", "--method", "srs", "--budget", "5", "--probs",
         pile["dir"] / "g.zarr" / "probs", "--out", pile["dir"] / "sel"], capsys)  # fmt: skip
    assert code == 0, err


def test_a_pile_of_no_rows_says_so(tmp_path: Path) -> None:
    """open_pile of a (0, 10) array opened, and capture then said 'inputs must have at least
    one row, got 0' (no path, no flag); the pile now says which file has no rows."""
    np.save(tmp_path / "e.npy", np.zeros((0, 10), np.float32))
    with pytest.raises(LabelwiseError, match=r"^path: .*e\.npy has no rows \(shape \(0, 10\)\)"):
        open_pile(tmp_path / "e.npy")


def test_quality_names_the_labels_flag_it_read(
    pile: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    """'quality --test-labels t.csv' with a bad CSV said '--labels: t.csv needs a row
    column': a flag quality does not have. Labels out of range said 'labels must be < the
    number of probability columns (4), got 7' (which rows?)."""
    d = pile["dir"]
    (d / "t.csv").write_text("label\n1\n")
    rng = np.random.default_rng(1)
    np.save(d / "tr.npy", rng.integers(0, 4, 120))
    argv = ["quality", "--train-labels", d / "tr.npy", "--train-features", pile["acts"],
            "--test-features", pile["acts"], "--test-probs", pile["probs"],
            "--out", d / "q"]  # fmt: skip
    code, _, err = run_cli([*argv, "--test-labels", d / "t.csv"], capsys)
    assert code == 2 and "--test-labels: " in err and "needs a 'row' column" in err
    assert "--labels:" not in err
    y = np.load(d / "y.npy")
    y[[3, 9]] = [7, 4]
    np.save(d / "bad.npy", y)
    code, _, err = run_cli([*argv, "--test-labels", d / "bad.npy"], capsys)
    assert code == 2
    assert "labels must be classes in [0, 4)" in err and "got [7, 4] at positions [3, 9]" in err


def test_dependability_of_an_empty_input_file_says_it_has_no_rows(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """'dependability --inputs EMPTY.npy' (0 rows) said '--labels must hold 0 classes, got
    shape (40,)': it blamed the labels. It now names the inputs file."""
    torch = pytest.importorskip("torch")
    model = torch.nn.Sequential(torch.nn.Linear(4, 5), torch.nn.ReLU(), torch.nn.Linear(5, 3))
    torch.save(model, str(tmp_path / "m.pt"))
    np.save(tmp_path / "x.npy", np.zeros((0, 4), np.float32))
    np.save(tmp_path / "y.npy", np.zeros(40, np.int64))
    code, _, err = run_cli(
        ["dependability", "--model", tmp_path / "m.pt", "--inputs", tmp_path / "x.npy",
         "--labels", tmp_path / "y.npy", "--out", tmp_path / "d"], capsys)  # fmt: skip
    assert code == 2 and "--inputs: " in err and "x.npy has no rows" in err


def test_a_directory_without_a_selection_says_what_to_give(
    pile: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    """'estimate /some/dir' and 'rank' on a folder that is no selection said
    'DIR: /some/dir/selection.json does not exist' (what is that file? what to do?);
    'select --extend CAMPAIGN' said the same about a campaign. Each now says what the folder
    holds and what to give."""
    d = pile["dir"]
    code, _, err = run_cli(["estimate", d, "--labels", d / "l.csv"], capsys)
    assert code == 2 and f"DIR {d} holds no selection" in err and "labelwise select" in err
    code, _, err = run_cli(["rank", d / "nope", "--labels", d / "l.csv"], capsys)
    assert code == 2 and f"DIR {d / 'nope'} does not exist" in err
    camp = d / "camp"
    code, _, err = run_cli(
        ["campaign", camp, "--activations", pile["acts"], "--probs", pile["probs"]], capsys
    )
    assert code == 0, err
    code, _, err = run_cli(["select", "--extend", camp, "--budget", "3"], capsys)
    assert code == 2 and f"'labelwise next {camp}'" in err and "holds a campaign" in err


def test_a_folder_of_other_arrays_given_as_one_array_says_how_it_was_read(
    pile: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    """'--probs FOLDER' (a folder of several .npy files, not one array's chunks) said
    '--probs: every chunk must have the trailing shape (8,) of acts.npy, probs.npy has shape
    (120, 4)': chunks of what? It now says the folder was read as one array's chunks and
    what to give instead."""
    d = pile["dir"]
    code, _, err = run_cli(
        ["select", "--method", "srs", "--budget", "5", "--probs", d, "--out", d / "s"], capsys
    )
    assert code == 2
    assert f"--probs: {d} is a directory, so its .npy files are read as the chunks" in err
    assert "give a .npy file, a zarr array" in err and "Traceback" not in err


def test_open_array_of_a_folder_says_how_it_was_read(pile: dict[str, Path]) -> None:
    """lw.open_array(FOLDER) of a folder holding other arrays said 'every chunk must have the
    trailing shape ...' (the folder was read as one array's chunks without a word), and a
    missing path said only 'X does not exist'; both now name the argument and what to give."""
    import labelwise as lw

    with pytest.raises(LabelwiseError, match=r"^path: .* is a directory, so its \.npy files"):
        lw.open_array(pile["dir"])
    with pytest.raises(LabelwiseError, match=r"^path: .*nope does not exist"):
        lw.open_array(pile["dir"] / "nope")
    assert lw.open_array(pile["acts"]).shape == (120, 8)


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["--budget", "0"], "--budget must be >= 1, got 0"),
        (["--repeats", "0"], "--repeats must be >= 2, got 0"),
        (["--out", "{file}"], "is a file, not a directory"),
    ],
)
def test_demo_checks_its_options_before_training(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], says: str
) -> None:
    """'labelwise demo --budget 0' (or --repeats 0, or --out FILE) trained the CNN for 7 s,
    printed a table header and only then failed; it now fails first, having printed
    nothing."""
    (tmp_path / "f").write_text("")
    argv = [a.replace("{file}", str(tmp_path / "f")) for a in argv]
    code, out, err = run_cli(["demo", *argv], capsys)
    assert code == 2 and says in err
    assert out == ""  # no 'trained a LeNet-style CNN', no table


@pytest.mark.parametrize("study", ["operational", "comparative", "quality"])
def test_a_study_checks_its_out_and_jobs_before_running(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], study: str
) -> None:
    """'labelwise study operational --quick --out FILE' ran the study (minutes) and failed
    only when writing its tables; '--jobs 0' said 'n_jobs must be >= 1' (a name the CLI
    does not have). Both are now checked before anything runs."""
    (tmp_path / "f").write_text("")
    code, out, err = run_cli(["study", study, "--quick", "--out", tmp_path / "f" / "o"], capsys)
    assert code == 2 and f"--out {tmp_path / 'f' / 'o'}: {tmp_path / 'f'} is a file" in err
    assert out == ""
    if study == "operational":
        code, out, err = run_cli(["study", study, "--quick", "--jobs", "0"], capsys)
        assert code == 2 and "--jobs must be >= 1, got 0" in err and out == ""


@pytest.mark.parametrize("flag", [["--batch", "5"], ["--predictions", "{probs}"]])
def test_label_refuses_campaign_options_on_a_selection(
    pile: dict[str, Path], capsys: pytest.CaptureFixture[str], flag: list[str]
) -> None:
    """'labelwise label SEL --batch 5' (or --predictions) on a selection started the page
    and ignored the option without a word (a selection proposes nothing); it is now an
    error, as --until-halfwidth already was."""
    sel = pile["dir"] / "sel"
    code, _, err = run_cli(
        ["select", "--method", "srs", "--budget", "5", "--probs", pile["probs"], "--out", sel],
        capsys,
    )
    assert code == 0, err
    argv = [f.replace("{probs}", str(pile["probs"])) for f in flag]
    code, out, err = run_cli(["label", sel, "--port", "0", *argv], capsys)
    assert code == 2 and f"{flag[0]} applies to campaigns" in err and out == ""


def test_a_folder_of_npy_chunks_as_a_pile_says_to_give_one_array(tmp_path: Path) -> None:
    """open_pile / 'capture --inputs' of a folder of .npy chunks said only 'the folder holds
    no images' (the user gave arrays, not images); it now names them and what to give."""
    (tmp_path / "c").mkdir()
    for k in range(2):
        np.save(tmp_path / "c" / f"part-{k}.npy", np.zeros((3, 2), np.float32))
    with pytest.raises(LabelwiseError, match=r"holds 2 array file\(s\) \(part-0\.npy, part-1"):
        open_pile(tmp_path / "c")
    (tmp_path / "e").mkdir()
    with pytest.raises(LabelwiseError, match=r"holds no images \(.*searched recursively\)$"):
        open_pile(tmp_path / "e")


def test_import_into_a_regression_campaign_says_to_use_a_csv(
    pile: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    """'labelwise import REGRESSION_CAMPAIGN export.json' said 'no class names for DIR:
    write them to DIR/classes.json', advice that cannot work for a regression model;
    it now says what 'export' says: label the rows in a CSV (row,target) and estimate."""
    d = pile["dir"]
    np.save(d / "pred.npy", np.random.default_rng(0).normal(size=120))
    camp = d / "reg"
    code, _, err = run_cli(
        ["campaign", camp, "--activations", pile["acts"], "--predictions", d / "pred.npy"], capsys
    )
    assert code == 0, err
    assert run_cli(["next", camp, "--batch", "3"], capsys)[0] == 0
    (d / "ls.json").write_text('[{"labelwise_row": 0, "target": "1.5"}]')
    code, _, err = run_cli(["import", camp, d / "ls.json"], capsys)
    assert code == 2 and "holds a regression campaign" in err and "(row,target)" in err
    assert "classes.json" not in err


def test_rank_models_with_every_rows_label_says_to_pass_those_of_the_rows() -> None:
    """lw.rank_models(preds, labels_of_the_whole_pile, rows=sel.indices) said only 'labels
    must have one entry per labelled row (10 rows), got 300'; it now says to pass
    labels[rows] (or to leave rows out)."""
    import labelwise as lw

    gen = np.random.default_rng(0)
    preds, truth = gen.integers(0, 3, size=(3, 50)), gen.integers(0, 3, size=50)
    rows = lw.srs_select(50, 10, rng=0).indices
    with pytest.raises(LabelwiseError, match=r"got 50: one per pile row\? Pass labels\[rows\]"):
        lw.rank_models(preds, truth, rows=rows)
    r = lw.rank_models(preds, truth[rows], rows=rows, rng=0)
    np.testing.assert_allclose(r.accuracy, (preds[:, rows] == truth[rows]).mean(axis=1))


def test_demo_checks_its_budget_against_the_pile_before_training(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """'labelwise demo --budget 5000' trained the CNN (about 7 s) and only then said the
    pile has 899 rows; the pile's size is known from the digits before training, and the
    budget is now checked against it first (training here would fail the test)."""
    pytest.importorskip("torch")
    digits = pytest.importorskip("labelwise.experiments.digits")

    def no_training(*args: object, **kwargs: object) -> None:
        pytest.fail("the CNN was trained before the budget was checked")

    monkeypatch.setattr(digits, "train_digits_cnn", no_training)
    code, out, err = run_cli(["demo", "--budget", "5000", "--out", tmp_path / "d"], capsys)
    assert code == 2 and "--budget must be at most the pile's 899 rows, got 5000" in err
    assert out == "" and not (tmp_path / "d").exists()


def test_a_misspelt_image_folder_is_called_missing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """'capture --inputs imagez/ --image-size 28x28 --channels 1' with the folder misspelt
    said '--image-size, --channels apply only to a folder of images, not to imagez; drop it'
    (the user gave a folder, it just is not there); it now says the folder does not exist."""
    code, _, err = run_cli(
        ["capture", "--model", tmp_path / "m.onnx", "--inputs", f"{tmp_path / 'imagez'}/",
         "--image-size", "28x28", "--channels", "1", "--out", tmp_path / "cap"],
        capsys,
    )  # fmt: skip
    assert code == 2
    assert err.strip().endswith(f"--inputs: {tmp_path / 'imagez'} does not exist"), err
    assert "drop it" not in err and "Traceback" not in err


def test_a_labels_file_not_in_utf8_says_how_to_save_it(
    pile: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    """A labels file saved in Latin-1 (a class name with an accent on line 3) said
    "cannot read l.csv ('utf-8' codec can't decode byte 0xe9 in position 19: invalid
    continuation byte)", and '--labels activations.npy' the same about byte 0x93; now the
    line and how to save it, and that the .npy is an array, not labels."""
    d = pile["dir"]
    code, _, err = run_cli(
        ["select", "--method", "srs", "--budget", "2", "--seed", "0", "--probs", pile["probs"],
         "--out", d / "sel"], capsys)  # fmt: skip
    assert code == 0, err
    (d / "l.csv").write_bytes(b"row,label\n0,1\n1,caf\xe9\n")
    code, _, err = run_cli(["estimate", d / "sel", "--labels", d / "l.csv"], capsys)
    assert code == 2
    assert err.strip().endswith(
        "l.csv is not UTF-8 text (line 3 holds byte 0xe9); save it as UTF-8 "
        "(a spreadsheet's 'CSV UTF-8')"
    ), err
    code, _, err = run_cli(["estimate", d / "sel", "--labels", pile["acts"]], capsys)
    assert code == 2
    assert err.strip().endswith("acts.npy is a NumPy array, not a CSV of labels (row,label)")


def test_a_torchscript_model_refusing_the_rows_says_why(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A TorchScript model of 4 inputs given a table of 3 columns said '...: RuntimeError: The
    following operation failed in the TorchScript interpreter.' (the first line of the
    scripted traceback); it now gives the error at its end, as for an eager model."""
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 5), torch.nn.ReLU(), torch.nn.Linear(5, 3))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # TorchScript is deprecated in 2.13
        torch.jit.script(model.eval()).save(str(tmp_path / "m.pt"))
    (tmp_path / "t.csv").write_text("a,b,c\n" + "0.1,0.2,0.3\n" * 6)
    code, _, err = run_cli(
        ["capture", "--model", tmp_path / "m.pt", "--inputs", tmp_path / "t.csv",
         "--out", tmp_path / "cap"], capsys)  # fmt: skip
    assert code == 2
    assert "RuntimeError: mat1 and mat2 shapes cannot be multiplied (6x3 and 4x5);" in err, err
    assert "TorchScript interpreter" not in err and "Traceback" not in err
    assert "the rows are the 3 columns 'a', 'b', 'c' of" in err


def test_labels_numbered_from_one_are_named_as_such(
    pile: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    """Labels 1..4 for a 4-class model said only "label '4' is not a class: the model has 4
    classes, 0 to 3"; one past the last class now asks whether they count from 1."""
    d = pile["dir"]
    rows = _srs_rows(capsys, d / "sel", 3, "--probs", pile["probs"])
    (d / "l.csv").write_text("row,label\n" + "".join(f"{r},4\n" for r in rows))
    code, _, err = run_cli(["estimate", d / "sel", "--labels", d / "l.csv"], capsys)
    assert code == 2
    assert err.strip().endswith(
        "line 2: label '4' is not a class: the model has 4 classes, 0 to 3; are the labels "
        "numbered from 1? give class indices from 0 (label - 1)"
    ), err
    (d / "l.csv").write_text("row,label\n" + "".join(f"{r},5\n" for r in rows))
    code, _, err = run_cli(["estimate", d / "sel", "--labels", d / "l.csv"], capsys)
    assert err.strip().endswith("the model has 4 classes, 0 to 3"), err  # not one past


def test_a_capture_directory_as_activations_names_its_arrays(
    pile: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    """'select --activations cap' (the capture's directory, not its file) said 'cap is a
    directory, so its .npy files are read as the chunks of one array (in name order), but
    every chunk must have the trailing shape (8,) of cap/activations.npy, cap/predictions.npy
    has shape (120,); ...'; it now names the directory as a capture and lists its arrays."""
    cap = pile["dir"] / "cap"
    cap.mkdir()
    for name, src in (("activations.npy", "acts"), ("probabilities.npy", "probs")):
        (cap / name).write_bytes(pile[src].read_bytes())
    np.save(cap / "predictions.npy", np.load(pile["probs"]).argmax(1))
    (cap / "capture.json").write_text("{}")
    for argv in (
        ["select", "--method", "ces", "--budget", "5", "--out", pile["dir"] / "sel"],
        ["campaign", pile["dir"] / "camp"],
    ):
        code, _, err = run_cli([*argv, "--activations", cap], capsys)
        assert code == 2
        assert err.strip().endswith(
            f"--activations: {cap} is the directory 'labelwise capture' wrote; give one of its "
            f"arrays: {cap / 'activations.npy'}, {cap / 'predictions.npy'}, "
            f"{cap / 'probabilities.npy'}"
        ), err


def test_method_names_as_the_papers_write_them(
    pile: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    """'select --method CES' (as the README's tables and the papers write it) stopped with
    argparse's usage and "invalid choice: 'CES'"; method names are now case-insensitive, for
    'campaign --method' too."""
    code, out, err = run_cli(
        ["select", "--method", "CES", "--budget", "5", "--seed", "0", "--activations",
         pile["acts"], "--probs", pile["probs"], "--out", pile["dir"] / "sel"], capsys)  # fmt: skip
    assert code == 0, err
    assert out.startswith("ces: 5 rows selected")
    code, out, err = run_cli(
        ["campaign", pile["dir"] / "camp", "--method", "Stratified", "--activations",
         pile["acts"], "--probs", pile["probs"]], capsys)  # fmt: skip
    assert code == 0, err
    assert "stratified" in out.splitlines()[0]


def test_activations_and_probs_swapped_are_named_as_swapped(
    pile: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    """'--activations probabilities.npy --probs activations.npy' said the --probs were
    'logits or regression outputs? ... labelwise capture --head softmax'; when the
    --activations rows are probabilities it now asks whether the two were swapped."""
    d = pile["dir"]
    swapped = ["--activations", pile["probs"], "--probs", pile["acts"]]
    for argv in (
        ["select", "--method", "ces", "--budget", "5", "--out", d / "sel", *swapped],
        ["campaign", d / "camp", *swapped],
    ):
        code, _, err = run_cli(argv, capsys)
        assert code == 2
        assert err.strip().endswith(
            ", while the --activations rows are probabilities (each sums to 1): are "
            "--activations and --probs swapped?"
        ), err
        assert "--head softmax" not in err
    code, _, err = run_cli(
        ["select", "--method", "ces", "--budget", "5", "--out", d / "sel", "--activations",
         pile["acts"], "--probs", pile["acts"]], capsys)  # fmt: skip
    assert code == 2 and "--head softmax" in err and "swapped" not in err


def test_labels_as_text_say_how_to_make_numbers() -> None:
    """lw.correctness(predicted, labels) with the labels read from a CSV as strings said
    only 'labels must hold numbers, got dtype <U1'; it now shows a few values and how to
    convert numbers written as text or class names."""
    import labelwise as lw

    with pytest.raises(LabelwiseError) as info:
        lw.correctness(np.array([3, 5, 1]), ["3", "5", "2"])
    assert str(info.value) == (
        "labels must hold numbers, got dtype <U1 (text: '3', '5', '2', ...); numbers written "
        "as text: np.asarray(x, dtype=int) or float; class names: their indices, e.g. "
        "[classes.index(name) for name in x]"
    )
    with pytest.raises(LabelwiseError, match=r"^labels must hold numbers, got dtype complex128$"):
        lw.correctness(np.array([3, 5]), np.array([1 + 2j, 2]))  # not text: no hint


def test_a_capture_killed_outright_leaves_no_stage_after_the_rerun(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A capture killed with SIGKILL (or by the out-of-memory killer) left its staging
    directory OUT/.capture-XXXX/ with whatever it had written, and every later capture into
    OUT kept it. Stages now carry their process id, and a capture removes those of processes
    that are gone; a stage of a running process (another capture) is kept."""
    import os
    import subprocess
    import sys

    torch = pytest.importorskip("torch")
    model = torch.nn.Sequential(torch.nn.Linear(4, 5), torch.nn.ReLU(), torch.nn.Linear(5, 3))
    torch.save(model, str(tmp_path / "m.pt"))
    np.save(tmp_path / "x.npy", np.random.default_rng(0).normal(size=(30, 4)).astype(np.float32))
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)  # fmt: skip
    out = tmp_path / "cap"
    dead = out / f".capture-{int(gone.stdout)}-abcd1234"
    alive = out / f".capture-{os.getppid()}-efgh5678"
    for stage in (dead, alive):
        stage.mkdir(parents=True)
        np.save(stage / "activations.npy", np.zeros((30, 5), np.float32))
    code, _, err = run_cli(
        ["capture", "--model", tmp_path / "m.pt", "--inputs", tmp_path / "x.npy", "--out", out],
        capsys,
    )
    assert code == 0, err
    assert not dead.exists() and alive.is_dir()
    assert sorted(p.name for p in out.iterdir() if p.name.startswith(".capture")) == [alive.name]


def test_a_label_studio_export_given_as_labels_points_to_import(
    pile: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    """'estimate DIR --labels export.json' (Label Studio's export) said "needs a 'row'
    column (or 'id': ...), got columns ['[{\\"id\\": 1', ...]": the JSON cut at its commas.
    It now says the file is JSON and names 'labelwise import'."""
    d = pile["dir"]
    code, _, err = run_cli(
        ["select", "--method", "srs", "--budget", "2", "--seed", "0", "--probs", pile["probs"],
         "--out", d / "sel"], capsys)  # fmt: skip
    assert code == 0, err
    (d / "export.json").write_text('[{"id": 1, "data": {"labelwise_row": 3}, "annotations": []}]')
    code, _, err = run_cli(["estimate", d / "sel", "--labels", d / "export.json"], capsys)
    assert code == 2
    assert err.strip().endswith(
        "export.json is JSON, not a CSV of labels (row,label); a Label Studio export is read "
        "by 'labelwise import DIR FILE'"
    ), err


def test_a_changed_source_says_what_to_do(
    pile: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    """'select --extend' after the activations file was replaced (a re-capture with --force)
    said only 'changed since the selection was made (sha256 differs); going on would not
    continue the same selection'; it now says to put the file back or start anew."""
    d = pile["dir"]
    code, _, err = run_cli(
        ["select", "--method", "ces", "--budget", "5", "--seed", "0", "--activations",
         pile["acts"], "--probs", pile["probs"], "--out", d / "sel"], capsys)  # fmt: skip
    assert code == 0, err
    np.save(pile["acts"], np.load(pile["acts"])[::-1].copy())
    code, _, err = run_cli(["select", "--extend", d / "sel", "--budget", "5"], capsys)
    assert code == 2
    assert err.strip().endswith(
        "changed since the selection was made (sha256 differs); going on would not continue "
        "the same selection: put back the file it was made from (a re-capture with --force "
        "replaced it?), or start a new selection from this one in another directory"
    ), err


def test_line_numbers_count_the_blank_lines(
    pile: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    """A labels file or a CSV pile with blank lines (a spreadsheet's empty rows) named the
    wrong line: blank lines were dropped before numbering, so a typo on line 7 after two
    blank lines was 'line 5', a duplicate on lines 3 and 8 'lines 2, 5', and an empty cell
    of a table on line 6 'line 4'. Lines are now those of the file."""
    d = pile["dir"]
    rows = _srs_rows(capsys, d / "sel", 4, "--probs", pile["probs"])
    lines = ["row,label", "", "", *(f"{r},1" for r in rows[:3]), "", f"{rows[3]},x"]
    (d / "l.csv").write_text("\n".join(lines) + "\n")
    code, _, err = run_cli(["estimate", d / "sel", "--labels", d / "l.csv"], capsys)
    assert code == 2 and "l.csv line 8: label must be an integer" in err, err
    lines = ["row,label", "", f"{rows[0]},1", "", *(f"{r},1" for r in rows[1:]), f"{rows[0]},2"]
    (d / "l.csv").write_text("\n".join(lines) + "\n")
    code, _, err = run_cli(["estimate", d / "sel", "--labels", d / "l.csv"], capsys)
    assert code == 2 and f"row {rows[0]} (lines 3, 8)" in err, err
    (d / "t.csv").write_text("a,b\n1,2\n\n3,4\n\n5,\n")
    with pytest.raises(LabelwiseError, match=r"row 2 \(line 6\) column 'b' is not a finite"):
        open_pile(d / "t.csv")
    (d / "t.csv").write_text("a,b\n\n1,2\n3\n")
    with pytest.raises(LabelwiseError, match=r"t\.csv line 4 has 1 fields, the header 2"):
        open_pile(d / "t.csv")


def test_a_regression_estimate_without_predictions_names_the_captures_outputs(
    pile: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    """A regression model's capture ('--head raw': outputs.npy, no probabilities) selected
    from its activations, then 'estimate DIR --labels targets.csv' said only '--predictions
    is required: the selection did not record model probabilities'; it now names the
    capture's outputs.npy to give."""
    cap = pile["dir"] / "cap"
    cap.mkdir()
    (cap / "activations.npy").write_bytes(pile["acts"].read_bytes())
    np.save(cap / "outputs.npy", np.linspace(0, 1, 120).astype(np.float32))
    (cap / "capture.json").write_text('{"head": "raw"}')
    sel = pile["dir"] / "sel"
    rows = _srs_rows(capsys, sel, 3, "--activations", cap / "activations.npy")
    (pile["dir"] / "t.csv").write_text("row,target\n" + "".join(f"{r},0.5\n" for r in rows))
    code, _, err = run_cli(["estimate", sel, "--labels", pile["dir"] / "t.csv"], capsys)
    assert code == 2
    assert err.strip().endswith(
        f"give --predictions {cap.resolve() / 'outputs.npy'} (the model's outputs 'labelwise "
        "capture' wrote beside the activations)"
    ), err
    code, out, err = run_cli(
        ["estimate", sel, "--labels", pile["dir"] / "t.csv", "--predictions",
         cap / "outputs.npy"], capsys)  # fmt: skip
    assert code == 0 and "1-MSE" in out, err


def test_selecting_into_a_selection_says_how_to_add_rows(
    pile: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    """Running the README's 'select ... --out sel' again to get more rows said only '--out
    sel already holds a selection; use --force to overwrite' (which would throw away the
    selection its labels belong to); it now names --extend first (and 'next' for a
    campaign)."""
    d = pile["dir"]
    argv = ["select", "--method", "srs", "--budget", "3", "--probs", pile["probs"],
            "--out", d / "sel"]  # fmt: skip
    assert run_cli(argv, capsys)[0] == 0
    code, _, err = run_cli(argv, capsys)
    assert code == 2
    assert err.strip().endswith(
        f"--out {d / 'sel'} already holds a selection; to label more of it: labelwise select "
        f"--extend {d / 'sel'} --budget N; to start another, give another directory, or "
        "--force to overwrite this one"
    ), err

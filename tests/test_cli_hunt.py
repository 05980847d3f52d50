"""Rough edges a new user meets through the CLI (cli31): each test is one run that printed a
traceback, named a Python argument instead of a flag, or wrote something a browser cannot
show, end to end."""

from __future__ import annotations

import base64
import io
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any
from urllib.parse import quote

import numpy as np
import pytest

import labelwise
from label_helpers import Running
from labelwise.cli._labelling import LabelSession
from synthetic import captured_pile, interrupt_while_importing, run_cli, srs_selection

INTERRUPTED = "labelwise: interrupted while starting; nothing was done\n"


@pytest.mark.parametrize(
    ("module", "after"),
    [("labelwise", "labelwise.exceptions"), ("labelwise.cli", "labelwise.exceptions"),
     ("labelwise", "labelwise.cli._common")],
)  # fmt: skip
def test_ctrl_c_while_python_m_imports_the_package_prints_no_traceback(
    tmp_path: Path, module: str, after: str
) -> None:
    """'python -m labelwise.cli' (and 'python -m labelwise') imports the whole package
    (numba, scipy: about 2 s) before its __main__ runs: a Ctrl-C then printed a
    KeyboardInterrupt traceback through runpy. It now ends as the console command does: exit
    130 and one line. -X importtime reports each import as it completes: the first labelwise
    submodule reported means the package's own import is under way. The third case is a
    Ctrl-C while labelwise/__main__.py imports the CLI, after runpy has located it: that
    window still printed a traceback (found in session 34 by a loop of Ctrl-Cs at random
    times), and an interrupt caught and turned into SystemExit(130) could still end the
    process by SIGINT (exit -2: the failure CI saw)."""
    code, out, err = interrupt_while_importing(["-m", module], tmp_path, (after,))
    assert "Traceback" not in err, err
    assert (code, out, err) == (130, "", INTERRUPTED)


def test_the_console_module_run_as_a_script_hands_ctrl_c_back_to_the_command() -> None:
    """'python src/_labelwise_entry.py CMD' (the console module run as a script: its module
    is __main__, not _labelwise_entry) set its starting handler, and cli.main's release()
    looked for it in sys.modules['_labelwise_entry'] only: the handler stayed while the
    command ran, and a Ctrl-C then left at once ('nothing was done') without the command's
    clean-up. release() now knows the handler by its file; a caller's own handler is kept."""
    import runpy
    import signal

    from labelwise import _startup

    entry = Path(_startup.__file__).parents[1] / "_labelwise_entry.py"
    script = runpy.run_path(str(entry), run_name="not_the_entry_module")
    previous = signal.getsignal(signal.SIGINT)

    def mine(signum: int, frame: object) -> None:
        pass

    try:
        signal.signal(signal.SIGINT, script["_starting"])
        _startup.release()
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
        signal.signal(signal.SIGINT, mine)
        _startup.release()
        assert signal.getsignal(signal.SIGINT) is mine
    finally:
        signal.signal(signal.SIGINT, previous)


def _tiny_model_and_data() -> None:
    """m.pt (a 3 -> 4 -> 2 MLP saved whole), x.npy (8 x 3 inputs), y.npy (labels 0/1) in
    the current directory."""
    torch = pytest.importorskip("torch")
    torch.save(torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.ReLU(), torch.nn.Linear(4, 2)),
               "m.pt")  # fmt: skip
    np.save("x.npy", np.random.default_rng(0).uniform(size=(8, 3)).astype(np.float32))
    np.save("y.npy", np.arange(8) % 2)


def _tiff_pile(tmp_path: Path) -> tuple[dict[str, Any], list[str], dict[str, Any]]:
    """A captured pile of 12 image files under cap/imgs: .tif RGB, a .tiff of 32-bit float
    grey, a .tiff of 16-bit grey and .png files; the ids and the pixels written (uint8
    H x W x C arrays; float and 16-bit ones as written)."""
    image = pytest.importorskip("PIL.Image")
    names = ["cat", "dog"]
    ids = [f"{names[i % 2]}/img {i}." + ("tif" if i % 3 == 0 else "png") for i in range(10)]
    ids += ["dog/float 10.tiff", "cat/deep 11.tiff"]
    pile = captured_pile(tmp_path, 3, len(ids), names, 5, ids)
    pixels: dict[str, Any] = {}
    gen = np.random.default_rng(0)
    for name in ids:
        path = pile["cap"] / "imgs" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if name.startswith("dog/float"):
            x: Any = gen.normal(size=(5, 7)).astype(np.float32)
            image.fromarray(x, mode="F").save(path)
        elif name.startswith("cat/deep"):
            x = gen.integers(0, 65536, size=(5, 7)).astype(np.uint16)
            image.fromarray(x).save(path)
        else:
            x = gen.integers(0, 256, size=(5, 7, 3)).astype(np.uint8)
            image.fromarray(x).save(path)
        pixels[name] = x
    return pile, ids, pixels


def _data_png(url: str) -> Any:
    """The pixels of a ``data:image/png;base64,...`` URL."""
    image = pytest.importorskip("PIL.Image")
    head, _, body = url.partition(",")
    assert head == "data:image/png;base64"
    with image.open(io.BytesIO(base64.b64decode(body))) as im:
        assert im.format == "PNG"
        return np.asarray(im)


@pytest.mark.parametrize("prefix", [None, "/data/local-files/?d="])
def test_label_studio_tasks_of_tiff_images_hold_a_png_a_browser_shows(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], prefix: str | None
) -> None:
    """'labelwise export' pointed a TIFF row's task at the .tif file (or PREFIX + its id),
    which browsers, and so Label Studio's image view, do not show: the labeller saw a broken
    image. A TIFF's task now holds the image as a PNG data: URL with the same pixels (float
    grey scaled from its minimum to its maximum onto 0-255); other images are as before."""
    pile, ids, pixels = _tiff_pile(tmp_path)
    sel = srs_selection(pile, capsys, budget=len(ids))
    extra = [] if prefix is None else ["--image-url-prefix", prefix]
    code, _, err = run_cli(["export", sel, *extra], capsys)
    assert code == 0, err
    assert "6 of the images are TIFF" in err
    tasks = json.loads((sel / "label-studio-tasks.json").read_text())
    assert sorted(t["data"]["labelwise_row"] for t in tasks) == list(range(len(ids)))
    for task in tasks:
        name = ids[task["data"]["labelwise_row"]]
        url = task["data"]["image"]
        if name.endswith(".png"):
            original = pile["cap"] / "imgs" / name
            assert url == (
                str(original.resolve()) if prefix is None else prefix + quote(name, safe="/")
            )
            continue
        shown = _data_png(url)
        x = pixels[name]
        if x.dtype == np.float32:
            expected = np.round((x - x.min()) / (x.max() - x.min()) * 255).astype(np.uint8)
            np.testing.assert_array_equal(shown, expected)
        else:
            np.testing.assert_array_equal(shown, x)


def test_the_labelling_page_shows_a_float_tiff(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """'labelwise label' on a pile of 32-bit float TIFF images (microscopy, remote sensing):
    the page's GET /api/image/ROW called Pillow's PNG writer on mode F ('cannot write mode F
    as PNG'), an OSError the server did not catch: a traceback in the terminal and a broken
    image on the page. The image is now scaled from its minimum to its maximum onto 0-255,
    as the Label Studio export does."""
    pile, ids, pixels = _tiff_pile(tmp_path)
    sel = srs_selection(pile, capsys, budget=len(ids))
    served = Running(LabelSession(sel))
    try:
        row = ids.index("dog/float 10.tiff")
        code, body, kind = served.get(f"/api/image/{row}")
    finally:
        served.stop()
    assert (code, kind) == (200, "image/png")
    x = pixels[ids[row]]
    expected = np.round((x - x.min()) / (x.max() - x.min()) * 255).astype(np.uint8)
    shown = _data_png("data:image/png;base64," + base64.b64encode(body).decode())
    np.testing.assert_array_equal(shown, expected)


MODEL_COMMANDS = {
    "capture": ["capture", "--inputs", "x.npy", "--out", "c"],
    "dependability": ["dependability", "--inputs", "x.npy", "--labels", "y.npy", "--out", "d"],
    "quality": ["quality", "--train-inputs", "x.npy", "--test-inputs", "x.npy",
                "--train-labels", "y.npy", "--test-labels", "y.npy", "--out", "q"],
}  # fmt: skip


@pytest.mark.parametrize("value", ["", "  ", "-1"])
@pytest.mark.parametrize("command", list(MODEL_COMMANDS))
def test_an_empty_or_negative_logits_output_names_the_flag(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    command: str,
    value: str,
) -> None:
    """'--logits-output ""' was refused, after the model was loaded, with 'logits_output must
    be None, an output index >= 0 or ...' (the Python argument, and None, which no flag
    takes); '--logits-output -1' was taken as an output name (-1 is not a key of the model's
    dict). Both are now refused as the flag is parsed, naming --logits-output."""
    torch = pytest.importorskip("torch")
    monkeypatch.chdir(tmp_path)
    torch.save(torch.nn.Linear(3, 2), "m.pt")
    np.save("x.npy", np.zeros((4, 3), dtype=np.float32))
    np.save("y.npy", np.zeros(4, dtype=np.int64))
    capsys.readouterr()
    with pytest.raises(SystemExit) as stop:
        run_cli([*MODEL_COMMANDS[command], "--model", "m.pt", "--logits-output", value], capsys)
    err = capsys.readouterr().err
    assert stop.value.code == 2
    assert "argument --logits-output: " in err and "logits_output" not in err, err
    assert ("count from 0" if value == "-1" else "leave --logits-output out") in err
    assert not any(Path(d).exists() for d in ("c", "d", "q"))


def test_a_population_size_far_too_large_or_zero_is_an_error_not_a_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """'select --method srs --population-size 99999999999999' (a typo, or a pile's bytes for
    its rows) ended in a numpy MemoryError traceback (SRS draws one key per row: 728 TiB);
    any MemoryError is now one line naming the allocation. '--population-size 0' said 'data
    must be a positive population size' (the Python argument): it now names the flag. No
    directory is left behind."""
    out = tmp_path / "sel"
    base = ["select", "--method", "srs", "--budget", "10", "--out", out]
    code, _, err = run_cli([*base, "--population-size", "99999999999999"], capsys)
    assert code == 2 and "Traceback" not in err
    assert err.startswith("labelwise: error: not enough memory for this command (Unable to ")
    assert "TiB" in err and err.count("\n") == 1
    code, _, err = run_cli([*base, "--population-size", "0"], capsys)
    assert code == 2 and err.startswith("labelwise: error: --population-size must be ")
    assert not out.exists()


BEFORE_THE_MODEL_RUNS = [
    ("dependability", ["--out", "setup.txt"], "--out setup.txt is a file, not a directory"),
    ("dependability", ["--out", "d", "--threshold", "nan"], "--threshold must be a finite"),
    ("dependability", ["--out", "d", "--perturb", "noise", "--eps", "nan"],
     "--eps must be a finite number >= 0, got nan"),
    ("quality", ["--out", "setup.txt"], "--out setup.txt is a file, not a directory"),
    ("quality", ["--out", "q", "--radius", "nan"], "--radius must be a positive number"),
    ("quality", ["--out", "q", "--lo", "0.9", "--hi", "0.1"],
     "--lo must be below --hi (the weak-confidence band), got --lo 0.9 and --hi 0.1"),
    ("quality", ["--out", "q", "--hi", "nan"], "--hi must be a confidence in [0, 1], got nan"),
]  # fmt: skip


@pytest.mark.parametrize(("command", "extra", "message"), BEFORE_THE_MODEL_RUNS)
def test_dependability_and_quality_name_their_flags_before_the_model_runs(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    command: str,
    extra: list[str],
    message: str,
) -> None:
    """dependability and quality with --out naming a file ran the model and then said 'File
    exists: setup.txt (check the path ...)'; --threshold nan said 'threshold must be finite',
    --eps nan 'sigma must be finite' (an argument of the noise perturbation the user never
    named), --radius, --lo and --hi were named without their dashes. Each is now refused
    first, naming the flag; the file given as --out is untouched."""
    monkeypatch.chdir(tmp_path)
    _tiny_model_and_data()
    Path("setup.txt").write_text("mine\n")
    base = (
        ["--inputs", "x.npy", "--labels", "y.npy"]
        if command == "dependability"
        else ["--train-inputs", "x.npy", "--test-inputs", "x.npy", "--train-labels", "y.npy",
              "--test-labels", "y.npy"]
    )  # fmt: skip
    code, _, err = run_cli([command, "--model", "m.pt", *base, *extra], capsys)
    assert code == 2 and err.startswith(f"labelwise: error: {message}")
    assert err.count("\n") == 1 and Path("setup.txt").read_text() == "mine\n"
    assert not Path("d").exists() and not Path("q").exists()


def test_quality_test_probs_of_other_rows_name_both_flags(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """quality --test-features of 20 rows with --test-probs of 200 said 'probabilities and
    labels must have the same number of rows, got 200 and 20' (neither a flag nor the file
    that is off); it now names --test-probs and --test-features with their files."""
    monkeypatch.chdir(tmp_path)
    gen = np.random.default_rng(1)
    np.save("f.npy", gen.normal(size=(20, 4)))
    np.save("y.npy", np.arange(20) % 2)
    np.save("p.npy", np.full((200, 2), 0.5))
    code, _, err = run_cli(
        ["quality", "--train-features", "f.npy", "--test-features", "f.npy", "--train-labels",
         "y.npy", "--test-labels", "y.npy", "--test-probs", "p.npy", "--out", "q"],
        capsys,
    )  # fmt: skip
    assert code == 2
    assert err.startswith(
        "labelwise: error: --test-probs p.npy has 200 rows, --test-features f.npy 20: "
    )
    assert not Path("q").exists()


def test_a_budget_out_of_range_names_the_flag_new_or_extended(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """'select --budget 0' said 'budget must be in [1, 40] ...' and 'select --extend DIR
    --budget 0' 'additional budget must be in [1, 30] ...' (the Python arguments of
    ces_select and extend); a selection of every row extended said 'additional budget cannot
    be met'. They now name --budget, with the rows there are or are left."""
    pile = captured_pile(tmp_path, 2, 40, ["a", "b"], 4, [f"r{i}" for i in range(40)])
    cap = pile["cap"]
    arrays = ["--activations", cap / "activations.npy", "--probs", cap / "probabilities.npy"]
    out = tmp_path / "s"
    for budget in ("0", "41"):
        code, _, err = run_cli(
            ["select", "--method", "ces", "--budget", budget, *arrays, "--out", out], capsys
        )
        assert code == 2 and err == (
            f"labelwise: error: --budget must be in [1, 40] (the population has 40 rows), got "
            f"{budget}\n"
        )
    assert not out.exists()
    sel = srs_selection(pile, capsys, budget=10)
    for budget in ("0", "31"):
        code, _, err = run_cli(["select", "--extend", sel, "--budget", budget], capsys)
        assert code == 2 and err == (
            "labelwise: error: --budget must be in [1, 30] (the rows not yet selected: 30 of "
            f"40), got {budget}\n"
        )
    code, _, err = run_cli(["select", "--extend", sel, "--budget", "30"], capsys)
    assert code == 0, err
    code, _, err = run_cli(["select", "--extend", sel, "--budget", "1"], capsys)
    assert code == 2 and "every one of the 40 rows is already selected" in err


def test_campaign_score_floor_mistakes_name_the_flag(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """'campaign --score-floor' on a classifier's campaign said 'score_floor applies to
    regression campaigns (probabilities=None)', and --score-floor nan on a regression one
    'score_floor must be a finite number below 1': Campaign's Python arguments. Both now
    name --score-floor (and --probs); no campaign directory is left."""
    pile = captured_pile(tmp_path, 5, 30, ["a", "b"], 4, [f"r{i}" for i in range(30)])
    cap = pile["cap"]
    np.save(tmp_path / "reg.npy", np.linspace(-1, 1, 30))
    d = tmp_path / "camp"
    acts = ["campaign", d, "--activations", cap / "activations.npy"]
    cases = [
        (["--probs", cap / "probabilities.npy", "--score-floor", "0.5"],
         "--score-floor applies to regression campaigns (without --probs)"),
        (["--predictions", tmp_path / "reg.npy", "--score-floor", "nan"],
         "--score-floor must be a finite number below 1"),
    ]  # fmt: skip
    for extra, message in cases:
        code, _, err = run_cli([*acts, *extra], capsys)
        assert code == 2 and err.startswith(f"labelwise: error: {message}"), err
        assert not d.exists()


@pytest.mark.parametrize("mutant", ["8-8", "10-0", "8-0,0-7"])
def test_demo_mutant_mistakes_name_the_flag(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], mutant: str
) -> None:
    """'demo --mutant 8-8' said 'each pair must hold two different labels; got (8, 8)',
    --mutant 10-0 'mutant must look like '8-0'' (no flag, and not that the classes are the
    digits 0 to 9), 8-0,0-7 'label 0 appears in more than one pair'. Each now names
    --mutant and what it takes, before anything is trained or written."""
    out = tmp_path / "demo"
    code, _, err = run_cli(["demo", "--mutant", mutant, "--out", out], capsys)
    assert code == 2 and err == (
        "labelwise: error: --mutant must be pairs of two different digit classes (0 to 9) to "
        f"swap, each class in one pair at most, e.g. 8-0 or 8-0,7-1; got {mutant!r}\n"
    )
    assert not out.exists()


def test_ces_on_constant_activations_says_which_method_to_use_in_the_cli(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """'select --method ces' on activations that never vary (an int array of ones, a dead
    layer) said '... (use srs_select)': a Python function the CLI user cannot call. It now
    also names the flag to use, --method srs."""
    np.save(tmp_path / "a.npy", np.ones((30, 4), dtype=np.int64))
    code, _, err = run_cli(
        ["select", "--method", "ces", "--budget", "5", "--activations", tmp_path / "a.npy",
         "--out", tmp_path / "s"],
        capsys,
    )  # fmt: skip
    assert code == 2 and "activations must vary" in err and "--method srs" in err, err
    assert not (tmp_path / "s").exists()


EMPTY_PATHS = [
    (["select", "--method", "srs", "--budget", "5", "--activations", "a.npy", "--out", ""],
     "--out"),
    (["select", "--method", "srs", "--budget", "5", "--activations", "", "--out", "s"],
     "--activations"),
    (["estimate", "", "--labels", "labels.csv"], "dir"),
    (["report", "sel", "--labels", " "], "--labels"),
]  # fmt: skip


@pytest.mark.parametrize(("argv", "flag"), EMPTY_PATHS)
def test_an_empty_path_is_refused_not_taken_for_the_current_directory(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    argv: list[str],
    flag: str,
) -> None:
    """argparse's type=Path made '' the current directory: 'select ... --out "$OUT"' with OUT
    unset wrote to_label.csv and selection.json into it, '--activations ""' read it as
    chunks of an array, 'capture --inputs ""' as an image folder. Every path argument now
    refuses an empty (or blank) value, naming it; nothing is written."""
    monkeypatch.chdir(tmp_path)
    np.save("a.npy", np.random.default_rng(0).normal(size=(20, 3)))
    before = sorted(p.name for p in tmp_path.iterdir())
    capsys.readouterr()
    with pytest.raises(SystemExit) as stop:
        run_cli(argv, capsys)
    err = capsys.readouterr().err
    assert stop.value.code == 2
    assert f"error: argument {flag}: an empty path (an unset shell variable?)" in err, err
    assert sorted(p.name for p in tmp_path.iterdir()) == before


SCENARIO_MISTAKES = [
    ("weather,light\n" + "sun,day\n" * 5, [], "--scenarios s.csv has 5 rows of conditions, "
     "--inputs x.npy 8 inputs: give one row per input"),
    ("weather,light\n" + "caf\xe9,day\n" * 8, [], "--scenarios: cannot read s.csv ('utf-8'"),
    ("", [], "--scenarios: s.csv is empty (a header row is needed)"),
    ("weather,light\n" + "sun,day\n" * 8, ["--k", "3"],
     "--k must be at most the number of conditions (the 2 columns of --scenarios s.csv), got 3"),
    ("weather,light\n" + "sun,day\n" * 8, ["--spec", "bad.json"],
     "--spec: the allowed values of condition 'weather' must be a list, got 'sun'"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("csv_text", "extra", "message"),
    SCENARIO_MISTAKES,
    ids=["rows", "latin1", "empty", "k", "spec"],
)
def test_dependability_scenario_mistakes_name_the_flags_before_the_model_runs(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    csv_text: str,
    extra: list[str],
    message: str,
) -> None:
    """dependability --scenarios/--spec were read by the report after the model ran, and
    their errors named the library's words: 'conditions: cannot read s.csv', 'scenarios
    column 'weather' must have one value per input (8), got 5', 'k must be at most the
    number of conditions (2)', 'spec['weather'] must be a list'. The CLI now reads both
    first and names --scenarios, --spec, --k and --inputs; --out is not made."""
    monkeypatch.chdir(tmp_path)
    _tiny_model_and_data()
    Path("s.csv").write_bytes(csv_text.encode("latin-1"))
    Path("bad.json").write_text('{"weather": "sun", "light": ["day"]}')
    code, _, err = run_cli(
        ["dependability", "--model", "m.pt", "--inputs", "x.npy", "--labels", "y.npy",
         "--scenarios", "s.csv", *extra, "--out", "d"],
        capsys,
    )  # fmt: skip
    assert code == 2 and err.startswith(f"labelwise: error: {message}"), err
    assert not Path("d").exists()


def test_ces_on_one_dimensional_activations_names_the_flag(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """'select --method ces --activations a.npy' with a.npy of shape (30,) (one value per
    row, e.g. a confidence saved as the activations) said 'activations must be 2-D or 3-D
    or 4-D or 5-D'; the registry now gives CES's ranks, and the CLI's check names
    --activations and the method."""
    np.save(tmp_path / "a.npy", np.linspace(0, 1, 30))
    code, _, err = run_cli(
        ["select", "--method", "ces", "--budget", "5", "--activations", tmp_path / "a.npy",
         "--out", tmp_path / "s"],
        capsys,
    )  # fmt: skip
    assert code == 2 and err.startswith(
        "labelwise: error: --activations must be 2-D or 3-D or 4-D or 5-D for CES "
    ), err
    assert "got shape (30,)" in err and not (tmp_path / "s").exists()


def test_export_of_a_campaign_labelled_to_the_last_row_does_not_send_to_next(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """'labelwise export DIR' of a campaign whose every row was proposed and labelled said
    'has no rows waiting for labels; run 'labelwise next DIR'', and next then said every row
    has been proposed. It now says the pile is labelled to the last row and where the
    estimate is; a campaign with rows left still gets the 'next' hint."""
    pile = captured_pile(tmp_path, 4, 12, ["a", "b"], 3, [f"r{i}" for i in range(12)])
    cap, d = pile["cap"], tmp_path / "camp"
    code, _, err = run_cli(
        ["campaign", d, "--activations", cap / "activations.npy", "--probs",
         cap / "probabilities.npy", "--seed", "0"],
        capsys,
    )  # fmt: skip
    assert code == 0, err
    code, _, err = run_cli(["export", d], capsys)
    assert code == 2 and f"run 'labelwise next {d}'" in err, err
    assert run_cli(["next", d, "--batch", "12"], capsys)[0] == 0
    (tmp_path / "l.csv").write_text(
        "row,label\n" + "".join(f"{r},{int(pile['y'][r])}\n" for r in range(12))
    )
    code, _, err = run_cli(["estimate", d, "--labels", tmp_path / "l.csv"], capsys)
    assert code == 0, err
    code, _, err = run_cli(["export", d], capsys)
    assert code == 2 and "labelwise next" not in err, err
    assert "every row of its pile has been proposed and labelled" in err
    assert f"'labelwise report {d}'" in err


@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_ces_on_nonfinite_activations_names_the_flag(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], bad: float
) -> None:
    """'select --method ces' on activations holding NaN (or infinity) said 'activations must
    be finite, found NaN or infinity at row 7': CES's argument, found in the range pass CES
    makes anyway. The CLI now names --activations (the sampler's error, translated: no
    second pass over the data); nothing is written."""
    a = np.random.default_rng(2).normal(size=(30, 4))
    a[7, 2] = bad
    np.save(tmp_path / "a.npy", a)
    code, _, err = run_cli(
        ["select", "--method", "ces", "--budget", "5", "--activations", tmp_path / "a.npy",
         "--out", tmp_path / "s"],
        capsys,
    )  # fmt: skip
    assert code == 2 and err == (
        "labelwise: error: --activations must be finite, found NaN or infinity at row 7 (drop "
        "or impute those rows first)\n"
    ), err
    assert not (tmp_path / "s").exists()


MODEL_CLASS_MISTAKES = [
    ("nope_not_a_module:Net", None, "cannot import module 'nope_not_a_module' for --model-class "
     "'nope_not_a_module:Net' (No module named 'nope_not_a_module')"),
    ("os:Net", None, "--model-class 'os:Net': module 'os' has no class 'Net'"),
    ("Net", None, "--model-class must look like 'package.module:Class', got 'Net'"),
    ("os.path:join", None, "--model-class 'os.path:join' is a function, not a class"),
    ("torch.nn:Linear", None, "could not build Linear(**{}): TypeError: "),
    ("torch.nn:Linear", '{"in_features": 3, "out_features": 5}',
     "the weights in 'sd.pt' do not fit Linear(**{'in_features': 3, 'out_features': 5}): size "
     "mismatch for 'weight': the file has (2, 3), the model (5, 3); check --model-class and "
     "--model-kwargs (e.g. layer sizes)"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("spec", "kwargs", "message"),
    MODEL_CLASS_MISTAKES,
    ids=["import", "no-class", "form", "function", "no-kwargs", "weights"],
)
def test_capture_model_class_mistakes_name_the_flag(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    spec: str,
    kwargs: str | None,
    message: str,
) -> None:
    """'capture --model-class nope:X --state-dict sd.pt' said "cannot import module 'nope' for
    model_class 'nope:X'", and the other mistakes 'model_class must look like ...', 'module
    'os' has no class ...' (no flag), '... as model_kwargs', 'check model_class and
    model_kwargs': load_model's Python arguments. They now name --model-class and
    --model-kwargs; --out is not made."""
    torch = pytest.importorskip("torch")
    monkeypatch.chdir(tmp_path)
    torch.save(torch.nn.Linear(3, 2).state_dict(), "sd.pt")
    np.save("x.npy", np.zeros((4, 3), dtype=np.float32))
    extra = [] if kwargs is None else ["--model-kwargs", kwargs]
    code, _, err = run_cli(
        ["capture", "--inputs", "x.npy", "--state-dict", "sd.pt", "--model-class", spec, *extra,
         "--out", "c"],
        capsys,
    )  # fmt: skip
    assert code == 2 and err.startswith(f"labelwise: error: {message}"), err
    assert "model_class" not in err and "model_kwargs" not in err, err
    assert err.count("\n") == 1 and not Path("c").exists()


UNUSED_STRATA = [
    (["--method", "srs", "--n-strata", "3"], "--n-strata 3 ignored: --method srs samples the "
     "whole pile, one stratum; leave it out"),
    (["--method", "SRS", "--min-stratum-size", "4", "--n-strata", "2"], "--n-strata 2 and "
     "--min-stratum-size 4 ignored: --method srs samples the whole pile, one stratum; leave "
     "them out"),
    (["--method", "active", "--n-strata", "3"], "--n-strata 3 ignored: --method active draws "
     "from the whole pile, one stratum; leave it out"),
    (["--n-strata", "3", "regression"], "--n-strata 3 ignored: --method auto (srs for "
     "regression) samples the whole pile, one stratum; leave it out"),
    (["--method", "stratified", "--n-strata", "3"], None),
    (["--method", "srs"], None),
]  # fmt: skip


@pytest.mark.parametrize(
    ("extra", "note"),
    UNUSED_STRATA,
    ids=["srs", "srs-both", "active", "regression-auto", "stratified", "srs-alone"],
)
def test_campaign_strata_flags_a_design_ignores_get_a_note(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: list[str], note: str | None
) -> None:
    """'campaign --method srs --n-strata 3' (or --min-stratum-size, or --method active, or a
    regression campaign, whose auto is srs) was accepted without a word, though the design
    has one stratum, the whole pile. The campaign still starts (scripts that pass the flags
    to every --method keep working) and stderr now holds one note saying the flags were
    ignored; a design that uses them, or srs without them, gets no note."""
    pile = captured_pile(tmp_path, 6, 40, ["a", "b"], 4, [f"r{i}" for i in range(40)])
    cap = pile["cap"]
    data = ["--activations", cap / "activations.npy"]
    if extra[-1] == "regression":
        np.save(tmp_path / "reg.npy", np.linspace(-1, 1, 40))
        extra, data = extra[:-1], [*data, "--predictions", tmp_path / "reg.npy"]
    else:
        data += ["--probs", cap / "probabilities.npy"]
    d = tmp_path / "camp"
    code, out, err = run_cli(["campaign", d, *data, *extra, "--seed", "0"], capsys)
    assert code == 0, err
    assert (d / "campaign.state.json").is_file() and out.startswith(("started a ", "started an "))
    if note is None:
        assert err == "", err
    else:
        assert err.startswith(f"note: {note}") and err.count("\n") == 1, err
        assert err.rstrip().endswith(
            "or choose a stratified --method (stratified, proportional, model-assisted)"
        )


@pytest.mark.parametrize(
    ("content", "what"),
    [("null\n", "holds the JSON value null"), ("3", "holds the JSON value 3"),
     ('"cat"', 'holds the JSON value "cat"'), ("[]", "names no classes"),
     ("\n\n", "names no classes")],
    ids=["null", "number", "string", "empty-list", "blank"],
)  # fmt: skip
def test_a_classes_file_of_one_json_value_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str, what: str
) -> None:
    """A --classes file holding just 'null' (or 3, or "cat": a script's json.dump of None)
    was read as one name per line: one class named 'null', saved in classes.json; an empty
    list said 'names no classes' without saying what the file may hold. Each is now refused
    naming --classes, the file and the accepted forms; nothing is written."""
    (tmp_path / "c.json").write_text(content)
    out = tmp_path / "s"
    code, _, err = run_cli(
        ["select", "--method", "srs", "--budget", "3", "--population-size", "10", "--classes",
         tmp_path / "c.json", "--out", out],
        capsys,
    )  # fmt: skip
    tail = ", not class names" if "JSON" in what else ""
    assert code == 2 and err == (
        f"labelwise: error: --classes: {tmp_path / 'c.json'} {what}{tail}; "
        'give a text file with one name per line, a JSON list of names (["cat", "dog"]) '
        'or a JSON object name -> index ({"cat": 0, "dog": 1})\n'
    ), err
    assert not out.exists()


LIMITED = """
import resource, sys
from labelwise.cli import main
size = next(int(x.split()[1]) for x in open("/proc/self/status") if x.startswith("VmSize"))
resource.setrlimit(resource.RLIMIT_AS, (size * 1024 + int(sys.argv[1]), resource.RLIM_INFINITY))
sys.exit(main(sys.argv[2:]))
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="RLIMIT_AS and /proc: Linux")
def test_estimate_out_of_memory_says_what_to_do_for_estimate(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """'labelwise estimate' of a campaign that does not fit in memory (its per-row arrays,
    84 bytes a row for model-assisted, here 200,000 rows given half their size) said 'is a
    number given (a size, a count of rows or draws) far larger than meant?', though estimate
    takes no such number. It now says what estimate holds in memory and what to do (free
    memory, a campaign on fewer rows, a .npy or a zarr store chunked by rows); the campaign's
    state is untouched. The limit is set on the address space after the CLI is imported."""
    n = 200_000
    gen = np.random.default_rng(3)
    x = gen.normal(size=(n, 4)).astype(np.float32)
    p = np.exp(2 * x[:, :2] - (2 * x[:, :2]).max(axis=1, keepdims=True))
    np.save(tmp_path / "a.npy", x)
    np.save(tmp_path / "p.npy", (p / p.sum(axis=1, keepdims=True)).astype(np.float32))
    d = tmp_path / "camp"
    start = ["campaign", d, "--activations", tmp_path / "a.npy", "--probs", tmp_path / "p.npy"]
    assert run_cli([*start, "--seed", "0"], capsys)[0] == 0
    assert run_cli(["next", d, "--batch", "30"], capsys)[0] == 0
    rows = np.loadtxt(d / "to_label.csv", delimiter=",", skiprows=1, usecols=1, dtype=np.int64)
    (tmp_path / "l.csv").write_text("row,label\n" + "".join(f"{r},0\n" for r in rows))
    state = (d / "campaign.state.json").read_bytes()
    half = (d / "campaign-arrays.state.npz").stat().st_size // 2
    env = {**os.environ, "PYTHONPATH": str(Path(labelwise.__file__).parents[1])}
    proc = subprocess.run(
        [sys.executable, "-c", LIMITED, str(half), "estimate", str(d), "--labels",
         str(tmp_path / "l.csv")],
        capture_output=True, text=True, env=env, timeout=60,
    )  # fmt: skip
    assert proc.returncode == 2 and proc.stdout == "", proc.stderr
    assert proc.stderr.startswith("labelwise: error: not enough memory for this command (")
    assert "estimate holds a campaign's per-row arrays in memory" in proc.stderr
    assert "a number given" not in proc.stderr and proc.stderr.count("\n") == 1
    assert (d / "campaign.state.json").read_bytes() == state
    assert not (d / "estimate.json").exists()

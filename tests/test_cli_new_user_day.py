"""A new user's day with labelwise (user27): each test is one run that gave a wrong result
silently, an unhelpful message or a command that cannot be pasted, end to end through the
CLI."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from labelwise.registry import rank_instead
from synthetic import FakeDigits, interrupt_while_importing, run_cli


def _identity_classifier(tmp_path: Path, predictions: list[int]) -> tuple[Path, Path]:
    """A pickled 3-class torch model whose prediction for row i is ``predictions[i]`` (its
    input is that class's one-hot row), and the inputs file."""
    torch = pytest.importorskip("torch")
    model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.ReLU(), torch.nn.Linear(4, 3))
    with torch.no_grad():
        model[0].weight.copy_(torch.eye(4, 3))
        model[0].bias.zero_()
        model[2].weight.copy_(torch.eye(3, 4))
        model[2].bias.zero_()
    torch.save(model, str(tmp_path / "m.pt"))
    np.save(tmp_path / "x.npy", np.eye(3, dtype=np.float32)[predictions] * 5)
    return tmp_path / "m.pt", tmp_path / "x.npy"


def test_dependability_matches_the_severity_classes_to_classes_by_name(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """'dependability --classes classes.txt --severity sev.json' took the severity matrix's
    rows in file order whatever its "classes" said: with classes cat, dog, bird and a matrix
    naming dog, bird, cat, a dog taken for a cat cost W[bird][dog] = 2 instead of
    W[dog][cat] = 9 (normalised weighted error 1/9 instead of 2/9), and the paper's table
    (pedestrian, vehicle, background) was applied to cat, dog, bird without a word."""
    model, inputs = _identity_classifier(tmp_path, [0, 2, 0, 1, 2])
    np.save(tmp_path / "y.npy", np.array([1, 1, 0, 1, 2]))  # two dogs: taken for cat, bird
    (tmp_path / "classes.txt").write_text("cat\ndog\nbird\n")
    sev = {"classes": ["dog", "bird", "cat"], "severity": [[0, 1, 9], [2, 0, 3], [4, 7, 0]]}
    (tmp_path / "sev.json").write_text(json.dumps(sev))
    argv = ["dependability", "--model", model, "--inputs", inputs, "--labels",
            tmp_path / "y.npy", "--classes", tmp_path / "classes.txt"]  # fmt: skip
    code, _, err = run_cli([*argv, "--severity", tmp_path / "sev.json", "--out",
                            tmp_path / "d"], capsys)  # fmt: skip
    assert code == 0, err
    wc = json.loads((tmp_path / "d" / "dependability.json").read_text())["details"][
        "weighted_confusion"
    ]
    # dog -> cat costs 9, dog -> bird 1: (9 + 1) / 5 inputs, over the largest weight 9
    assert wc["weighted_error"] == pytest.approx(10 / 5)
    assert wc["normalised_weighted_error"] == pytest.approx(10 / 5 / 9)
    assert wc["classes"] == ["cat", "dog", "bird"]
    code, _, err = run_cli([*argv, "--severity", "paper-table1", "--out", tmp_path / "e"],
                           capsys)  # fmt: skip
    assert code == 2
    assert "--severity paper-table1 and --classes" in err and "pedestrian" in err
    assert not (tmp_path / "e").exists()


def test_quality_test_labels_of_some_rows_say_which_rows_lack_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """'quality --test-labels labels.csv' with the 20 rows of a selection, for a test set of
    120 inputs, said '--test-labels must label every row 0..19 exactly once': the 0..19 came
    from the file's own line count, not from the 120 inputs. It now counts the inputs and
    names rows without a label and rows beyond the last input."""
    from synthetic import classifier_pile

    y, acts, probs = classifier_pile(np.random.default_rng(0), 120, 4, 8)
    np.save(tmp_path / "a.npy", acts.astype(np.float32))
    np.save(tmp_path / "p.npy", probs.astype(np.float32))
    np.save(tmp_path / "y.npy", y)
    rows = [5, 17, 40, 90, 119]
    (tmp_path / "some.csv").write_text("row,label\n" + "".join(f"{r},{y[r]}\n" for r in rows))
    (tmp_path / "more.csv").write_text(
        "row,label\n" + "".join(f"{r},{y[r % 120]}\n" for r in range(122))
    )
    argv = ["quality", "--train-features", tmp_path / "a.npy", "--train-labels",
            tmp_path / "y.npy", "--test-features", tmp_path / "a.npy", "--test-probs",
            tmp_path / "p.npy", "--out", tmp_path / "q"]  # fmt: skip
    code, _, err = run_cli([*argv, "--test-labels", tmp_path / "some.csv"], capsys)
    assert code == 2
    assert "some.csv labels 5 rows; it must label every one of the 120 inputs once" in err
    assert "115 rows have no label (e.g. rows 0, 1, 2, 3, 4, 6, 7, 8, 9, 10, ...)" in err
    assert "0..4" not in err
    code, _, err = run_cli([*argv, "--test-labels", tmp_path / "more.csv"], capsys)
    assert code == 2 and "rows 120, 121 are beyond the last input (row 119)" in err
    assert not (tmp_path / "q").exists()
    pytest.importorskip("sklearn")  # the run itself needs the study extra (covariate_shift)
    code, _, err = run_cli([*argv, "--test-labels", tmp_path / "y.npy"], capsys)
    assert code == 0, err


def test_suggested_commands_for_a_directory_with_a_space_can_be_pasted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """'labelwise campaign "my camp" ...' printed 'next: labelwise next my camp --batch 20',
    and a second run 'to label more of it: labelwise next my camp --batch N': pasted, the
    shell splits the path in two ('labelwise: error: unrecognized arguments: camp'). The
    suggested commands now quote such paths, and pasting them runs."""
    import shlex

    from synthetic import classifier_pile

    _, acts, probs = classifier_pile(np.random.default_rng(0), 120, 4, 8)
    np.save(tmp_path / "a.npy", acts.astype(np.float32))
    np.save(tmp_path / "p.npy", probs.astype(np.float32))
    camp = tmp_path / "my camp ü"
    argv = ["campaign", camp, "--activations", tmp_path / "a.npy", "--probs",
            tmp_path / "p.npy", "--seed", "0"]  # fmt: skip
    code, out, err = run_cli(argv, capsys)
    assert code == 0, err
    line = next(x for x in out.splitlines() if "next:" in x)
    words = shlex.split(line.split("next:", 1)[1])
    assert words[:3] == ["labelwise", "next", str(camp)]
    code, out, err = run_cli(words[1:], capsys)
    assert code == 0, err
    assert "20 new rows to label" in out
    code, _, err = run_cli(argv, capsys)  # the same command twice
    assert code == 2
    again = shlex.split(err.split("to label more of it:", 1)[1].split(";")[0])
    assert again == ["labelwise", "next", str(camp), "--batch", "N"]
    # inside a message's own quotes the path is in double quotes, not nested single ones
    rows = [line.split(",")[1] for line in (camp / "to_label.csv").read_text().split()[1:]]
    (tmp_path / "l.csv").write_text("row,label\n" + "".join(f"{r},0\n" for r in rows))
    code, _, err = run_cli(["estimate", camp, "--labels", tmp_path / "l.csv"], capsys)
    assert code == 0, err
    code, _, err = run_cli(["export", camp, "--format", "label-studio"], capsys)
    assert code == 2 and f"""run 'labelwise next "{camp}"'""" in err
    # the same in the hint an estimate of a ranking selection gives (registry.rank_instead)
    said = rank_instead("sds", tmp_path / "my sel", tmp_path / "my sel" / "labels.csv")
    assert f"""run 'labelwise rank "{tmp_path / "my sel"}" --labels""" in said


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["estimate", "--help"], ["id,label (class numbers or names)", "'id' (its id there"]),
        (["rank", "--help"], ["row,label or id,label"]),
        (["report", "--help"], ["id,label"]),
        (["--help"], ["id,label"]),
        (["demo", "--help"], ["CES-Eq8", "Campaign"]),
        (["study", "operational", "--help"], ["coverage", "Campaign"]),
        (["campaign", "--help"], ["regression: srs with a bootstrap-t interval"]),
        (["select", "--help"], ["to_label.csv (order, row, id: the row's image path"]),
        (["next", "--help"], ["(order, row, id, new: 1 for this batch)"]),
    ],
)
def test_help_says_what_the_commands_take_and_do(
    argv: list[str], says: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    """The help said labels come as 'CSV: row,label | row,target | row,score' (estimate,
    report) or 'CSV: row,label' (rank), with a 'class index': an id,label file of image
    paths and class names, as the README shows, is read by all three. 'demo --help' said
    it runs SRS, CSS and CES (it also runs CES-Eq8 and a Campaign); 'study operational
    --help' that it prints E only (it also prints coverage and w); 'campaign --help' that
    auto is model-assisted (for regression it is srs, as the regression campaign says);
    'select --help' and 'next --help' that to_label.csv has columns order, row, new (also
    id, the column to label by)."""
    with pytest.raises(SystemExit) as stop:
        run_cli(argv, capsys)
    assert stop.value.code == 0
    text = " ".join(capsys.readouterr().out.split())  # argparse wraps lines
    for s in says:
        assert s in text


def test_a_class_name_in_another_case_is_suggested(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Labels typed as 'DOG' for the class 'dog' said "'DOG' is not a class name; known
    names: 'cat', 'dog', 'bird', 'fish'" (difflib compares case), where a misspelling
    ('fuor') gets "did you mean"; both now get the name meant."""
    from synthetic import classifier_pile

    _, _, probs = classifier_pile(np.random.default_rng(0), 120, 4, 8)
    np.save(tmp_path / "p.npy", probs.astype(np.float32))
    (tmp_path / "classes.txt").write_text("cat\ndog\nbird\nfish\n")
    sel = tmp_path / "sel"
    code, _, err = run_cli(
        ["select", "--method", "srs", "--budget", "3", "--probs", tmp_path / "p.npy",
         "--classes", tmp_path / "classes.txt", "--seed", "0", "--out", sel], capsys)  # fmt: skip
    assert code == 0, err
    rows = [line.split(",")[1] for line in (sel / "to_label.csv").read_text().split()[1:]]
    for typed, meant in (("DOG", "'dog'"), ("Birdd", "'bird'")):
        labels = [typed, "cat", "fish"]
        (tmp_path / "l.csv").write_text(
            "row,label\n" + "".join(f"{r},{c}\n" for r, c in zip(rows, labels, strict=True))
        )
        code, _, err = run_cli(["estimate", sel, "--labels", tmp_path / "l.csv"], capsys)
        assert code == 2
        assert f"line 2: {typed!r} is not a class name; did you mean {meant}?" in err


def test_labels_by_a_tables_own_ids_say_how_to_name_the_rows(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A table pile with a 'sample_id' column captured without --id-column numbers its rows
    0..N-1 (the text column is left out of the inputs). Labels keyed 'sample_id,label' said
    only "needs a 'row' column (or 'id' ...)", and renamed 'id,label' "names 5 ids that are
    not rows of the pile ... e.g. '0', '1', '2'": no word of why or what to do. The messages
    now say to name the column 'id', and that the ids are row numbers: label by row or
    capture again with --id-column."""
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.ReLU(), torch.nn.Linear(4, 2))
    torch.save(model, str(tmp_path / "m.pt"))
    x = np.random.default_rng(0).normal(size=(30, 3))
    lines = [f"s{i:03d},{a:.4f},{b:.4f},{c:.4f}\n" for i, (a, b, c) in enumerate(x)]
    (tmp_path / "t.csv").write_text("sample_id,a,b,c\n" + "".join(lines))
    cap, sel = tmp_path / "cap", tmp_path / "sel"
    code, _, err = run_cli(["capture", "--model", tmp_path / "m.pt", "--inputs",
                            tmp_path / "t.csv", "--out", cap], capsys)  # fmt: skip
    assert code == 0, err
    argv = ["select", "--method", "srs", "--budget", "5", "--seed", "0", "--probs",
            cap / "probabilities.npy", "--out", sel]  # fmt: skip
    code, _, err = run_cli(argv, capsys)
    assert code == 0, err
    rows = [int(line.split(",")[1]) for line in (sel / "to_label.csv").read_text().split()[1:]]
    for head in ("sample_id", "id"):
        (tmp_path / "l.csv").write_text(f"{head},label\n" + "".join(f"s{r:03d},1\n" for r in rows))
        code, _, err = run_cli(["estimate", sel, "--labels", tmp_path / "l.csv"], capsys)
        assert code == 2
        if head == "sample_id":
            assert (
                "if 'sample_id' holds the ids shown in to_label.csv, name that column 'id'" in err
            )
        else:
            assert (
                "the pile's ids are its row numbers (a table captured without --id-column)" in err
            )
            assert "capture again with --id-column COLUMN" in err


def test_regression_targets_in_a_label_column_say_to_name_it_target(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A regression campaign's labels saved as 'row,label' with values such as -0.8327
    said "label must be an integer (a class index), got '-0.8327'; to label by class name
    give the names: --classes FILE": about class names, for a number. It now says that a
    regression target goes in a 'target' column, and with that header the estimate runs."""
    rng = np.random.default_rng(0)
    np.save(tmp_path / "a.npy", rng.normal(size=(80, 4)).astype(np.float32))
    np.save(tmp_path / "o.npy", rng.normal(size=80).astype(np.float32))
    camp = tmp_path / "camp"
    argv = ["campaign", camp, "--activations", tmp_path / "a.npy", "--predictions",
            tmp_path / "o.npy", "--seed", "0"]  # fmt: skip
    code, _, err = run_cli(argv, capsys)
    assert code == 0, err
    code, _, err = run_cli(["next", camp, "--batch", "6"], capsys)
    assert code == 0, err
    rows = [int(line.split(",")[1]) for line in (camp / "to_label.csv").read_text().split()[1:]]
    body = "".join(f"{r},{rng.normal():.4f}\n" for r in rows)
    (tmp_path / "l.csv").write_text("row,label\n" + body)
    code, _, err = run_cli(["estimate", camp, "--labels", tmp_path / "l.csv"], capsys)
    assert code == 2
    assert "a regression target goes in a 'target' column (row,target)" in err
    assert "--classes" not in err
    (tmp_path / "l.csv").write_text("row,target\n" + body)
    code, out, err = run_cli(["estimate", camp, "--labels", tmp_path / "l.csv"], capsys)
    assert code == 0, err
    assert "1-MSE" in out


def test_arrays_of_two_captures_name_which_has_how_many_rows(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """'select --activations capA/activations.npy --probs capB/probabilities.npy' (two
    captures of different piles) said 'the inputs must describe the same pile rows, got row
    counts [60, 300]': which file has which? It now names each flag, file and row count,
    and writes nothing."""
    from synthetic import classifier_pile

    _, acts, _ = classifier_pile(np.random.default_rng(0), 60, 3, 5)
    _, _, probs = classifier_pile(np.random.default_rng(1), 300, 3, 5)
    np.save(tmp_path / "a.npy", acts.astype(np.float32))
    np.save(tmp_path / "p.npy", probs.astype(np.float32))
    code, _, err = run_cli(["select", "--method", "ces", "--budget", "10", "--activations",
                            tmp_path / "a.npy", "--probs", tmp_path / "p.npy", "--out",
                            tmp_path / "sel"], capsys)  # fmt: skip
    assert code == 2
    assert f"--activations {tmp_path / 'a.npy'} has 60 rows" in err
    assert f"--probs {tmp_path / 'p.npy'} has 300 rows" in err
    assert not (tmp_path / "sel").exists()


def test_a_pt2_exported_for_a_fixed_batch_says_how_to_export_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """torch.export.export(model, (x,)) with x of 2 rows (how its docs start) fixes the
    batch size at 2; 'capture --model net.pt2' then said "the model failed on inputs of
    shape (5, 4) ...: AssertionError: Guard failed: x.size()[0] == 2". It now says the
    program takes batches of exactly 2 rows and how to export it with a dynamic batch (that
    export, dynamic_shapes=({0: Dim('batch')},), captures: test_torch_model_routes.py)."""
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 6), torch.nn.ReLU(), torch.nn.Linear(6, 3))
    x = torch.randn(2, 4)
    torch.export.save(torch.export.export(model, (x,)), str(tmp_path / "fixed.pt2"))
    np.save(tmp_path / "x.npy", np.random.default_rng(0).normal(size=(5, 4)).astype(np.float32))
    argv = ["capture", "--inputs", tmp_path / "x.npy", "--model"]
    code, _, err = run_cli([*argv, tmp_path / "fixed.pt2", "--out", tmp_path / "c"], capsys)
    assert code == 2
    assert "the torch.export program takes batches of exactly 2 rows, got 5" in err
    assert "dynamic_shapes=({0: torch.export.Dim('batch')},)" in err
    assert not (tmp_path / "c").exists()


def test_a_file_that_is_no_model_says_what_it_is(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """'capture --model classes.txt' (the class names "cat\\ndog\\nbird") said "its class is
    defined in module 'at', which cannot be imported. Run labelwise from the directory that
    holds the class's module": the text unpickles as a GLOBAL of module 'at'. '--model
    pile.npy' (flags swapped) said "neither a TorchScript file (...miniz error...) nor a
    pickled torch.nn.Module (unpickling stack underflow)". Both now say what the file is."""
    pytest.importorskip("torch")
    x = np.zeros((4, 3), np.float32)
    np.save(tmp_path / "pile.npy", x)
    (tmp_path / "classes.txt").write_text("cat\ndog\nbird\n")
    for model, says in (
        ("classes.txt", "classes.txt' is not a PyTorch model file: it is a text file"),
        ("pile.npy", "is not a PyTorch model file: it is a NumPy array (.npy) (--model and "),
    ):
        argv = ["capture", "--model", tmp_path / model, "--inputs", tmp_path / "pile.npy",
                "--out", tmp_path / "c"]  # fmt: skip
        code, _, err = run_cli(argv, capsys)
        assert code == 2 and says in err, err
        assert "module 'at'" not in err and "miniz" not in err


def test_tiff_images_in_a_folder_are_rows_of_the_pile(tmp_path: Path) -> None:
    """A folder of .tif scans (microscopy, satellite, scanners save TIFF) beside .png files:
    the TIFFs were left out without a word (3 of 5 images became rows); they are now read
    like the other formats, 16-bit TIFF to the same scale as 16-bit PNG."""
    image = pytest.importorskip("PIL.Image")
    from labelwise.piles import ImageSpec, open_pile

    rng = np.random.default_rng(0)
    grey = (rng.random((6, 5)) * 255).astype(np.uint8)
    (tmp_path / "scans").mkdir()
    image.fromarray(grey).save(tmp_path / "scans" / "a.tif")
    image.fromarray(grey.astype(np.uint16) * 257).save(tmp_path / "scans" / "b16.tiff")
    for name in ("c.png", "d.png", "e.png"):
        image.fromarray(grey).save(tmp_path / "scans" / name)
    pile = open_pile(tmp_path / "scans", image=ImageSpec(channels=1))
    assert list(pile.ids) == ["a.tif", "b16.tiff", "c.png", "d.png", "e.png"]
    x = np.asarray(pile[:])
    np.testing.assert_allclose(x[0, 0], grey / 255.0, atol=1e-6)  # as the PNG reads it
    np.testing.assert_allclose(x[1], x[2], atol=1e-6)  # 16-bit: 257 x v / 65535 = v / 255


def test_dependability_that_fails_midway_leaves_out_as_it_was(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """'dependability ... --masks BAD.npy --out d' wrote d/patterns.png, then failed on the
    masks: a fresh --out was left holding a plot and no dependability.json, and an --out of
    an earlier run got this run's patterns.png beside the earlier dependability.json. Every
    file is now staged and moved into place only when all are made."""
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Flatten(), torch.nn.Linear(16, 6), torch.nn.ReLU(), torch.nn.Linear(6, 3)
    )
    torch.save(model, str(tmp_path / "m.pt"))
    rng = np.random.default_rng(0)
    np.save(tmp_path / "x.npy", rng.random((12, 1, 4, 4)).astype(np.float32))
    np.save(tmp_path / "y.npy", rng.integers(0, 3, 12))
    np.save(tmp_path / "bad_masks.npy", np.ones(12, bool))  # not (N, H, W)
    argv = ["dependability", "--model", tmp_path / "m.pt", "--inputs", tmp_path / "x.npy",
            "--labels", tmp_path / "y.npy", "--out"]  # fmt: skip
    bad = ["--masks", tmp_path / "bad_masks.npy"]
    fresh = tmp_path / "fresh" / "d"
    code, _, err = run_cli([*argv, fresh, *bad], capsys)
    assert code == 2 and "mask" in err
    assert not (tmp_path / "fresh").exists()
    done = tmp_path / "done"
    code, _, err = run_cli([*argv, done, "--threshold", "0.5"], capsys)
    assert code == 0, err
    before = {f.name: f.read_bytes() for f in done.iterdir()}
    assert set(before) == {"dependability.json", "patterns.png"}
    code, _, err = run_cli([*argv, done, *bad], capsys)  # another threshold: other plots
    assert code == 2
    assert {f.name: f.read_bytes() for f in done.iterdir()} == before


def test_grey_images_without_a_channel_axis_say_how_to_add_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A pile of grey images saved as (rows, 5, 5), as MNIST-like arrays come, for a model
    whose first layer is Conv2d(in_channels=1): the error said the model 'expects inputs of
    shape (rows, 1, ..., ...)' and torch's 'expected input[1, 10, 5, 5] to have 1 channels,
    but got 10' (the rows read as channels). It now says the rows have no channel axis and
    how to add one; the pile so saved captures."""
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Conv2d(1, 2, 3), torch.nn.Flatten(), torch.nn.Linear(18, 4),
        torch.nn.ReLU(), torch.nn.Linear(4, 3),
    )  # fmt: skip
    torch.save(model, str(tmp_path / "m.pt"))
    x = np.random.default_rng(0).random((10, 5, 5)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    argv = ["capture", "--model", tmp_path / "m.pt", "--out", tmp_path / "c", "--inputs"]
    code, _, err = run_cli([*argv, tmp_path / "x.npy"], capsys)
    assert code == 2
    assert (
        "the rows have no channel axis (5, 5): save the pile with one, np.save(FILE, x[:, None])"
        in err
    )
    np.save(tmp_path / "x1.npy", x[:, None])  # as the message says
    code, out, err = run_cli([*argv, tmp_path / "x1.npy"], capsys)
    assert code == 0, err
    assert "captured 10 rows" in out


def test_a_capture_over_arrays_two_directories_use_names_both_plainly(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A second capture into the --out whose arrays a campaign and a selection were made
    from said "holds the arrays that the campaign in A (...); the selection in B (...) was
    made from; ... its labels would no longer refer ... (the selection keeps working)": the
    list read as two sentences and the advice named the selection only. It now counts the
    directories, lists both and says they keep working."""
    torch = pytest.importorskip("torch")
    model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.ReLU(), torch.nn.Linear(4, 2))
    torch.save(model, str(tmp_path / "m.pt"))
    np.save(tmp_path / "x.npy", np.random.default_rng(0).normal(size=(30, 3)).astype(np.float32))
    cap = tmp_path / "cap"
    capture = ["capture", "--model", tmp_path / "m.pt", "--inputs", tmp_path / "x.npy",
               "--out", cap]  # fmt: skip
    assert run_cli(capture, capsys)[0] == 0
    acts, probs = cap / "activations.npy", cap / "probabilities.npy"
    camp, sel = tmp_path / "camp", tmp_path / "sel"
    argv = ["campaign", camp, "--activations", acts, "--probs", probs]
    assert run_cli(argv, capsys)[0] == 0
    argv = ["select", "--method", "srs", "--budget", "3", "--probs", probs, "--out", sel]
    assert run_cli(argv, capsys)[0] == 0
    code, _, err = run_cli(capture, capsys)
    assert code == 2
    assert (
        f"holds the arrays that 2 directories were made from: the campaign in {camp} "
        f"(activations.npy, probabilities.npy), the selection in {sel} (probabilities.npy); "
        "a new capture would replace them and their labels"
    ) in err
    assert "(they keep working)" in err


def test_capture_batch_size_zero_names_the_flag_before_loading_the_model(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """'capture --batch-size 0' loaded the model, then said 'batch_size must be >= 1, got 0'
    (the Python argument's name); the flag is now checked first and named, so the model
    file is not even read (here: a file that is no model)."""
    np.save(tmp_path / "x.npy", np.zeros((4, 3), np.float32))
    (tmp_path / "m.pt").write_bytes(b"\x80not a model")
    code, _, err = run_cli(["capture", "--model", tmp_path / "m.pt", "--inputs",
                            tmp_path / "x.npy", "--batch-size", "0", "--out",
                            tmp_path / "c"], capsys)  # fmt: skip
    assert code == 2
    assert "--batch-size must be >= 1 (rows per forward pass), got 0" in err
    assert not (tmp_path / "c").exists()


@pytest.fixture(scope="module")
def captured(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A capture directory of a small torch classifier over 30 rows."""
    torch = pytest.importorskip("torch")
    d = tmp_path_factory.mktemp("captured")
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.ReLU(), torch.nn.Linear(4, 2))
    torch.save(model, str(d / "m.pt"))
    np.save(d / "x.npy", np.random.default_rng(0).normal(size=(30, 3)).astype(np.float32))
    from labelwise.cli import main

    assert main(["capture", "--model", str(d / "m.pt"), "--inputs", str(d / "x.npy"),
                 "--out", str(d / "my cap")]) == 0  # fmt: skip
    return d / "my cap"


@pytest.mark.parametrize(
    "argv",
    [["estimate", "{cap}", "--labels", "l.csv"], ["next", "{cap}"], ["report", "{cap}"],
     ["export", "{cap}"], ["label", "{cap}"], ["select", "--extend", "{cap}", "--budget", "5"]],
)  # fmt: skip
def test_a_capture_directory_given_as_a_selection_says_how_to_choose_rows(
    argv: list[str], captured: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The capture directory given where a selection or campaign is asked for (the first
    thing a new user tries after 'labelwise capture --out cap') said 'DIR cap holds no
    selection (selection.json is not there); give the directory a 'labelwise select ...
    --out DIR' wrote' or '... holds no campaign; start one with 'labelwise campaign DIR
    --activations ...'': not that it is the capture, nor with which arrays. It now says so
    and gives the commands with the capture's own arrays; the select one, pasted, runs."""
    import shlex

    code, _, err = run_cli([a.format(cap=captured) for a in argv], capsys)
    assert code == 2
    assert f"{captured} is a capture (capture.json): choose the rows to label" in err
    select = err.split("e.g. '", 1)[1].split("'", 1)[0]
    words = shlex.split(select.replace("--out sel", f"--out {tmp_path / 'sel'}"))
    assert words[:2] == ["labelwise", "select"]
    code, out, err = run_cli(words[1:], capsys)
    assert code == 0, err
    assert "ces: 15 rows selected, 15 rows still unselected (pile of 30)" in out


def test_to_label_csv_filled_in_part_says_what_to_do_with_the_empty_cells(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A campaign's to_label.csv with a 'label' column filled in for 3 of its 6 rows (labels
    'may come in parts') said only "line 5 has an empty label". It now names the row, counts
    the other empty lines and says to fill them in or delete them; with them deleted the
    three labels are recorded."""
    from synthetic import classifier_pile

    y, acts, probs = classifier_pile(np.random.default_rng(0), 120, 4, 8)
    np.save(tmp_path / "a.npy", acts.astype(np.float32))
    np.save(tmp_path / "p.npy", probs.astype(np.float32))
    camp = tmp_path / "camp"
    argv = ["campaign", camp, "--activations", tmp_path / "a.npy", "--probs",
            tmp_path / "p.npy", "--seed", "0"]  # fmt: skip
    assert run_cli(argv, capsys)[0] == 0
    assert run_cli(["next", camp, "--batch", "6"], capsys)[0] == 0
    lines = (camp / "to_label.csv").read_text().split()
    rows = [int(line.split(",")[1]) for line in lines[1:]]
    filled = [f"{lines[0]},label"] + [
        f"{line},{y[r]}" if k < 3 else f"{line}," for k, (line, r) in enumerate(
            zip(lines[1:], rows, strict=True))
    ]  # fmt: skip
    (tmp_path / "l.csv").write_text("\n".join(filled) + "\n")
    code, _, err = run_cli(["estimate", camp, "--labels", tmp_path / "l.csv"], capsys)
    assert code == 2
    assert f"l.csv line 5 has an empty label (row {rows[3]}) (and 2 more line(s) like it): " in err
    assert "fill it in, or delete the lines of the rows not labelled yet" in err
    (tmp_path / "l.csv").write_text("\n".join(filled[:4]) + "\n")
    code, out, err = run_cli(["estimate", camp, "--labels", tmp_path / "l.csv"], capsys)
    assert code == 0, err
    assert "3 new labels; 3 labelled, 3 awaiting labels" in out


def test_a_confidence_given_in_percent_is_named_as_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """'estimate --confidence 95' (and 'rank') said 'confidence must be in (0, 1), got 95.0'
    (the Python argument's name, after the labels were read); 'rank --bootstrap 0'
    'n_bootstrap must be >= 1'. Each flag is now named and checked first, and a percentage
    is said to be one: '--confidence must be in (0, 1) (a share: 0.95 for 95 %), got 95'."""
    from synthetic import classifier_pile

    y, _, probs = classifier_pile(np.random.default_rng(0), 60, 3, 5)
    np.save(tmp_path / "p.npy", probs.astype(np.float32))
    np.save(tmp_path / "m.npy", np.stack([probs.argmax(1), y, (y + 1) % 3]))
    sel, rsel = tmp_path / "sel", tmp_path / "rsel"
    argv = ["select", "--method", "srs", "--budget", "5", "--probs", tmp_path / "p.npy",
            "--seed", "0", "--out", sel]  # fmt: skip
    assert run_cli(argv, capsys)[0] == 0
    argv = ["select", "--method", "sds", "--budget", "5", "--predictions", tmp_path / "m.npy",
            "--seed", "0", "--out", rsel]  # fmt: skip
    assert run_cli(argv, capsys)[0] == 0
    for d in (sel, rsel):
        rows = [int(line.split(",")[1]) for line in (d / "to_label.csv").read_text().split()[1:]]
        (d / "l.csv").write_text("row,label\n" + "".join(f"{r},{y[r]}\n" for r in rows))
    percent = "--confidence must be in (0, 1) (a share: 0.95 for 95 %), got 95"
    for cmd in (["estimate", sel], ["rank", rsel], ["report", sel]):
        code, _, err = run_cli([*cmd, "--labels", cmd[1] / "l.csv", "--confidence", "95"], capsys)
        assert code == 2 and percent in err, err
    code, _, err = run_cli(["rank", rsel, "--labels", rsel / "l.csv", "--bootstrap", "0"], capsys)
    assert code == 2 and "--bootstrap must be >= 1, got 0" in err
    assert not (sel / "estimate.json").exists() and not (rsel / "ranking.json").exists()


def test_classes_as_torchvisions_class_to_idx_are_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """PyTorch users have their class names as ImageFolder's class_to_idx, saved with
    json.dump: {"bird": 2, "cat": 0, "dog": 1}. '--classes class_to_idx.json' read it as a
    text file naming one class '{"bird": 2, ...}' ("names 1 classes, the model has 3").
    Such an object (or index -> name) is now read in index order; indices other than
    0..C-1 are an error naming them."""
    from synthetic import classifier_pile

    _, _, probs = classifier_pile(np.random.default_rng(0), 40, 3, 5)
    np.save(tmp_path / "p.npy", probs.astype(np.float32))
    files = {
        "c2i.json": '{"bird": 2, "cat": 0, "dog": 1}',
        "i2c.json": '{"0": "cat", "1": "dog", "2": "bird"}',
        "gap.json": '{"cat": 0, "dog": 2, "bird": 3}',
    }
    for name, text in files.items():
        (tmp_path / name).write_text(text)
        out = tmp_path / name.replace(".", "_")
        argv = ["select", "--method", "srs", "--budget", "3", "--probs", tmp_path / "p.npy",
                "--classes", tmp_path / name, "--out", out]  # fmt: skip
        code, _, err = run_cli(argv, capsys)
        if name == "gap.json":
            assert code == 2 and "maps to the indices [0, 2, 3]" in err, err
            continue
        assert code == 0, err
        assert json.loads((out / "classes.json").read_text()) == ["cat", "dog", "bird"]


def test_import_json_prints_only_json_on_stdout(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """'labelwise import camp export.json --json | jq .value' failed: stdout began with the
    import's summary ('imported 8 labels from 8 Label Studio tasks ...', 'wrote ...'), then
    the JSON. With --json the summary now goes to stderr and stdout is the estimate's JSON."""
    from synthetic import captured_pile

    names = ["cat", "dog", "bird"]
    pile = captured_pile(tmp_path, 0, 60, names, 4, lambda y: [f"{i}.png" for i in range(60)])
    cap, camp = pile["cap"], tmp_path / "camp"
    for argv in (["campaign", camp, "--activations", cap / "activations.npy", "--probs",
                  cap / "probabilities.npy", "--seed", "0"],
                 ["next", camp, "--batch", "8"], ["export", camp]):  # fmt: skip
        assert run_cli(argv, capsys)[0] == 0
    tasks = json.loads((camp / "label-studio-tasks.json").read_text())
    records = [{**t["data"], "id": i, "label": names[pile["y"][t["data"]["labelwise_row"]]]}
               for i, t in enumerate(tasks)]  # fmt: skip
    (tmp_path / "export.json").write_text(json.dumps(records))
    code, out, err = run_cli(["import", camp, tmp_path / "export.json", "--json"], capsys)
    assert code == 0, err
    assert json.loads(out)["n_labelled"] == 8  # the whole of stdout is the JSON
    assert "imported 8 labels from 8 Label Studio tasks" in err


_MANY_OUTPUTS = '''
import torch


class Net(torch.nn.Module):
    """forward returns a HuggingFace-style dict, or a tuple of three."""

    def __init__(self, mode: str = "logits") -> None:
        super().__init__()
        self.mode = mode
        self.body = torch.nn.Linear(3, 4)
        self.head = torch.nn.Linear(4, 2)

    def forward(self, x):
        hidden = torch.relu(self.body(x))
        scores = self.head(hidden)
        if self.mode == "logits":
            return {"logits": scores, "hidden_states": hidden}
        if self.mode == "scores":
            return {"scores": scores, "embedding": hidden}
        return hidden, scores, scores.argmax(dim=1)
'''


def test_a_model_returning_a_dict_or_three_outputs_is_captured_by_naming_the_output(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A model whose forward returns a dict (HuggingFace style) or a tuple of three: capture
    said only 'wrap the model so that forward returns the logits' (Python; nothing a CLI user
    can do). A dict's 'logits' is now taken, with a note; otherwise the error lists the
    outputs and names --logits-output KEY|INDEX, which picks one."""
    torch = pytest.importorskip("torch")
    (tmp_path / "many_outputs_net.py").write_text(_MANY_OUTPUTS)
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    import many_outputs_net

    torch.manual_seed(0)
    model = many_outputs_net.Net()
    torch.save(model.state_dict(), "w.pt")
    x = np.random.default_rng(0).normal(size=(7, 3)).astype(np.float32)
    np.save("x.npy", x)
    with torch.no_grad():
        expected = torch.softmax(model.head(torch.relu(model.body(torch.from_numpy(x)))), 1)

    def capture(mode: str, out: str, *more: str) -> tuple[int, str]:
        code, _, err = run_cli(
            ["capture", "--model-class", "many_outputs_net:Net", "--state-dict", "w.pt",
             "--model-kwargs", json.dumps({"mode": mode}), "--inputs", "x.npy", "--out", out,
             *more],
            capsys,
        )  # fmt: skip
        return code, err

    code, err = capture("logits", "a")
    assert code == 0, err
    assert "taking 'logits' as the class scores" in err and "--logits-output KEY" in err
    np.testing.assert_allclose(np.load("a/probabilities.npy"), expected.numpy(), atol=1e-6)
    assert json.loads(Path("a/capture.json").read_text())["neurons"] == 4  # the head's input

    code, err = capture("scores", "b")
    assert code == 2 and not Path("b").exists()
    assert "'scores' (7, 2), 'embedding' (7, 4)" in err and "--logits-output KEY" in err
    code, err = capture("scores", "b", "--logits-output", "scores")
    assert code == 0, err
    np.testing.assert_allclose(np.load("b/probabilities.npy"), expected.numpy(), atol=1e-6)
    code, err = capture("scores", "c", "--logits-output", "score")
    assert code == 2 and "did you mean 'scores'" in err

    code, err = capture("tuple", "d")
    assert code == 2 and "[0] (7, 4), [1] (7, 2), [2] (7,)" in err
    assert "--logits-output INDEX" in err
    code, err = capture("tuple", "d", "--logits-output", "1")
    assert code == 0, err
    np.testing.assert_allclose(np.load("d/probabilities.npy"), expected.numpy(), atol=1e-6)
    code, err = capture("tuple", "e", "--logits-output", "3")
    assert code == 2 and "is not an output of the model" in err


def test_an_onnx_model_of_three_outputs_is_captured_by_output_name(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An ONNX model of three outputs (hidden, logits, label) was read by its first output
    without a word, and --logits-output took only 0 or 1 of exactly two outputs. The output
    named 'logits' is now taken (with a note naming the outputs), and --logits-output takes
    an output's name or index."""
    torch = pytest.importorskip("torch")
    pytest.importorskip("onnx")
    pytest.importorskip("onnxruntime")
    import warnings

    class Three(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.body = torch.nn.Linear(3, 4)
            self.head = torch.nn.Linear(4, 2)

        def forward(self, x: Any) -> Any:
            hidden = torch.relu(self.body(x))
            scores = self.head(hidden)
            return hidden, scores, torch.softmax(scores, 1)[:, :1] * 10

    torch.manual_seed(0)
    model = Three().eval()
    x = np.random.default_rng(0).normal(size=(6, 3)).astype(np.float32)
    names = ["hidden", "logits", "scaled"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(model, (torch.from_numpy(x[:2]),), str(tmp_path / "m.onnx"),
                          dynamo=False, input_names=["x"], output_names=names,
                          dynamic_axes={n: {0: "batch"} for n in ["x", *names]})  # fmt: skip
    np.save(tmp_path / "x.npy", x)
    with torch.no_grad():
        hidden, scores, _ = model(torch.from_numpy(x))
    argv = ["capture", "--model", tmp_path / "m.onnx", "--inputs", tmp_path / "x.npy"]
    code, _, err = run_cli([*argv, "--out", tmp_path / "a"], capsys)
    assert code == 0, err
    assert "3 outputs ('hidden', 'logits', 'scaled'): taking 'logits'" in err
    np.testing.assert_allclose(
        np.load(tmp_path / "a" / "probabilities.npy"), torch.softmax(scores, 1).numpy(), atol=1e-5
    )
    np.testing.assert_allclose(np.load(tmp_path / "a" / "activations.npy"), hidden, atol=1e-5)
    for choice in ("logits", "1"):
        code, _, err = run_cli([*argv, "--out", tmp_path / choice, "--logits-output", choice],
                               capsys)  # fmt: skip
        assert code == 0 and "note" not in err, err
        np.testing.assert_array_equal(
            np.load(tmp_path / choice / "probabilities.npy"),
            np.load(tmp_path / "a" / "probabilities.npy"),
        )
    code, _, err = run_cli([*argv, "--out", tmp_path / "s", "--logits-output", "scaled"], capsys)
    assert code == 0, err
    assert np.load(tmp_path / "s" / "probabilities.npy").shape == (6, 2)  # [1 - sig, sig]
    code, _, err = run_cli([*argv, "--out", tmp_path / "b", "--logits-output", "logit"], capsys)
    assert code == 2 and "did you mean 'logits'" in err


def test_rank_of_a_capture_directory_suggests_a_ranking_selection(
    captured: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    """'labelwise rank CAP' suggested 'labelwise select --method ces ...' (the hint of every
    command given a capture), a selection for one model's accuracy: pasted, rank then refused
    it for want of several models' predictions. It now says how to stack the models'
    probabilities and select with sds (or cppi); both steps, pasted, run."""
    import shlex

    code, _, err = run_cli(["rank", captured, "--labels", "l.csv"], capsys)
    assert code == 2
    assert "--method ces" not in err and "--method cppi" in err
    assert f"DIR {captured} is a capture (capture.json) of one model, not a selection" in err
    monkeypatch.chdir(tmp_path)
    stack = err.split("(Python: ", 1)[1].split("]]))", 1)[0] + "]]))"
    other = repr(str(captured / "probabilities.npy"))  # a second model: the same one
    exec(stack.replace("...", other), {"np": np})
    assert np.load("preds.npy").shape == (2, 30, 2)
    select = err.split("then '", 1)[1].split("'", 1)[0]
    code, out, err = run_cli(shlex.split(select)[1:], capsys)
    assert code == 0, err
    assert "sds: 15 rows selected" in out


def test_ctrl_c_during_the_demo_says_what_it_left(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Ctrl-C while 'labelwise demo' wrote its directory left the pile's arrays and some
    selections but no demo.json, and said 'no file was left half-written', as if the demo
    were whole (and an earlier run's demo.json stayed beside this run's arrays). A directory
    the run created is now removed; an earlier one is said to be incomplete, its old
    demo.json removed, with the command to run again."""
    pytest.importorskip("sklearn")  # the demo's digits module needs it (the study extra)
    import labelwise.demo as demo
    import labelwise.experiments.digits as digits
    from labelwise.io import shell_arg

    fake = FakeDigits(demo._pile_size())
    monkeypatch.setattr(digits, "digits_context", lambda *a, **k: fake)

    def ctrl_c(*args: Any, **kwargs: Any) -> Any:
        raise KeyboardInterrupt

    monkeypatch.setattr(demo, "_repeat", ctrl_c)  # after the selections were written
    argv = ["demo", "--budget", "20", "--repeats", "2", "--out"]
    code, _, err = run_cli([*argv, tmp_path / "new" / "demo"], capsys)
    assert code == 130
    assert "no file was left half-written" not in err
    assert "removed the incomplete demo directory" in err
    assert not (tmp_path / "new").exists()

    earlier = tmp_path / "earlier demo"
    earlier.mkdir()
    (earlier / "demo.json").write_text("{}")
    code, _, err = run_cli([*argv, earlier], capsys)
    assert code == 130
    assert f"{earlier} holds an incomplete demo (no demo.json" in err
    assert f"--out {shell_arg(earlier)}' again" in err
    assert not (earlier / "demo.json").exists() and (earlier / "ces" / "selection.json").exists()


def test_dependability_and_quality_of_a_model_returning_a_dict_take_logits_output(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """dependability and quality --model run the model too: a forward returning a dict
    failed there with the Python-only remedy, and the perturbations read model(x) as a
    tensor. Both now take --logits-output KEY (and a dict's 'logits' by default)."""
    torch = pytest.importorskip("torch")
    (tmp_path / "many_outputs_net.py").write_text(_MANY_OUTPUTS)
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    import many_outputs_net

    torch.manual_seed(0)
    model = many_outputs_net.Net(mode="scores")
    torch.save(model, "m.pt")
    x = np.random.default_rng(0).uniform(size=(12, 3)).astype(np.float32)
    np.save("x.npy", x)
    with torch.no_grad():
        predicted = model(torch.from_numpy(x))["scores"].argmax(1).numpy()
    y = np.where(np.arange(12) < 9, predicted, 1 - predicted)  # accuracy 9/12
    np.save("y.npy", y)
    dep = ["dependability", "--model", "m.pt", "--inputs", "x.npy", "--labels", "y.npy",
           "--perturb", "noise", "--out", "d"]  # fmt: skip
    code, _, err = run_cli(dep, capsys)
    assert code == 2 and "--logits-output KEY" in err
    code, _, err = run_cli([*dep, "--logits-output", "scores"], capsys)
    assert code == 0, err
    report = json.loads(Path("d/dependability.json").read_text())
    assert report["summary"][0] == {**report["summary"][0], "metric": "accuracy", "value": 0.75}
    assert "confidence_loss" in report["details"]
    qual = ["quality", "--model", "m.pt", "--train-inputs", "x.npy", "--test-inputs", "x.npy",
            "--train-labels", "y.npy", "--test-labels", "y.npy", "--out", "q"]  # fmt: skip
    code, _, err = run_cli(qual, capsys)
    assert code == 2 and "--logits-output KEY" in err
    code, _, err = run_cli([*qual, "--logits-output", "scores"], capsys)
    assert code == 0, err


def test_ctrl_c_while_the_command_starts_prints_no_traceback(tmp_path: Path) -> None:
    """The console command 'labelwise' imported the whole package (numba, scipy: about 2 s)
    before main() ran: a Ctrl-C in those seconds printed a traceback through importlib. The
    console script (pyproject's [project.scripts]) now enters through a module outside the
    package that imports it inside a KeyboardInterrupt handler: exit 130, one line."""
    import re

    import labelwise

    pyproject = Path(labelwise.__file__).parents[2] / "pyproject.toml"
    if not pyproject.is_file():
        pytest.skip("not run from a source tree")
    target = re.search(r'^labelwise = "([\w.]+):(\w+)"', pyproject.read_text(), re.M)
    assert target is not None
    module, function = target.groups()
    # what the generated console script does
    code = f"import sys; from {module} import {function}; sys.exit({function}())"
    status, out, err = interrupt_while_importing(["-c", code], tmp_path)
    assert "Traceback" not in err, err
    assert (status, out) == (130, "")
    assert err == "labelwise: interrupted while starting; nothing was done\n"

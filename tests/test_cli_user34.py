"""A new user's day with labelwise (user34): each test is one run that gave a wrong result
silently, an unhelpful message or a file left half-written, end to end through the CLI."""

from __future__ import annotations

import json
import shutil
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from synthetic import run_cli


def test_a_binary_model_with_one_sigmoid_output_is_captured_as_its_probability(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A binary classifier ending in a sigmoid (one output per row, the probability of class
    1) was taken for a logit: its probabilities became [1 - sigmoid(p), sigmoid(p)], all in
    [0.5, 0.73], and every row was predicted class 1 (on this pile 21 of 40 predictions
    wrong, |p - stored| up to 0.5), with a note calling the output a logit. Every output in
    [0, 1] is now taken as the probability itself, with a note saying so; a logit model (an
    output outside [0, 1]) is unchanged, also when the batches are single rows, and so is
    the ONNX route."""
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    logit = torch.nn.Sequential(torch.nn.Linear(3, 1))
    with torch.no_grad():
        logit[0].weight.copy_(torch.tensor([[4.0, 0.0, 0.0]]))
        logit[0].bias.zero_()
    model = torch.nn.Sequential(logit, torch.nn.Sigmoid())
    x = np.random.default_rng(0).normal(size=(40, 3)).astype(np.float32)
    with torch.no_grad():
        p = model(torch.tensor(x)).numpy()[:, 0]
        s = logit(torch.tensor(x)).numpy()[:, 0]
    np.save(tmp_path / "x.npy", x)
    for name, net in (("sig", model), ("logit", logit)):
        torch.save(net, str(tmp_path / f"{name}.pt"))
    for name, batch, expected, said in (
        ("sig", "256", p, "in [0, 1] on every row: taken as a sigmoid's probability p"),
        ("sig", "1", p, "in [0, 1] on every row: taken as a sigmoid's probability p"),
        ("logit", "1", 1 / (1 + np.exp(-s)), "taken as a binary classifier's logit"),
    ):
        out = tmp_path / f"cap_{name}_{batch}"
        argv = ["capture", "--model", tmp_path / f"{name}.pt", "--inputs", tmp_path / "x.npy"]
        code, _, err = run_cli([*argv, "--out", out, "--batch-size", batch], capsys)
        assert code == 0, err
        assert said in err
        probs = np.load(out / "probabilities.npy")
        np.testing.assert_allclose(probs[:, 1], expected, atol=1e-6)
        np.testing.assert_allclose(probs.sum(axis=1), 1.0, atol=1e-6)
        np.testing.assert_array_equal(np.load(out / "predictions.npy"), expected > 0.5)
    pytest.importorskip("onnxruntime")
    pytest.importorskip("onnx")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch's note on its legacy exporter
        torch.onnx.export(model, torch.tensor(x[:1]), str(tmp_path / "sig.onnx"), dynamo=False)
    out = tmp_path / "cap_onnx"
    code, _, err = run_cli(["capture", "--model", tmp_path / "sig.onnx", "--inputs",
                            tmp_path / "x.npy", "--out", out], capsys)  # fmt: skip
    assert code == 0, err
    assert "taken as a sigmoid's probability p" in err
    np.testing.assert_allclose(np.load(out / "probabilities.npy")[:, 1], p, atol=1e-6)


def test_the_labelling_api_takes_class_names_and_refuses_a_batch_of_zero(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """'curl -d {"row": r, "value": "dog"} /api/answer' on a campaign with classes cat, dog,
    bird, fish was refused ('a label must be a class number, got 'dog''), though labels.csv
    takes names; {"row": r} without a value said 'got None'; and /api/propose {"n": 0}
    proposed a whole default batch of 20 rows (n or batch) instead of refusing. Names now
    label (in any case when only one class matches), an unknown one lists the names, a
    missing value names the keys, and n = 0 is refused with nothing proposed."""
    from label_helpers import NAMES, Running, labels_of, make_campaign, make_pile, proposed
    from labelwise.cli._labelling import LabelSession

    pile = make_pile(tmp_path / "pile")
    camp = make_campaign(pile, tmp_path / "camp", 3)
    capsys.readouterr()
    served = Running(LabelSession(camp))
    try:
        rows = proposed(camp)
        y = [int(pile["y"][r]) for r in rows]
        code, st = served.post("/api/answer", {"row": rows[0], "value": NAMES[y[0]]})
        assert code == 200, st
        code, st = served.post("/api/answer", {"row": rows[1], "value": NAMES[y[1]].upper()})
        assert code == 200, st
        code, st = served.post("/api/answer", {"row": rows[2], "value": "horse"})
        assert code == 400
        assert st["error"] == (
            "a label must be a class number or name (cat, dog, bird, fish), got 'horse'"
        )
        code, st = served.post("/api/answer", {"row": rows[2]})
        assert code == 400 and 'needs "row" and "value"' in st["error"]
        assert "['row']" in st["error"]
        code, st = served.post("/api/answer", {"row": rows[2], "value": y[2]})
        assert code == 200, st
        assert labels_of(camp) == dict(zip(rows, y, strict=True))
        for n in (0, -3):
            code, st = served.post("/api/propose", {"n": n})
            assert code == 400 and "--batch" in st["error"], st
            assert st["state"]["n_to_label"] == 3
        assert proposed(camp) == rows
        code, st = served.post("/api/propose", {"n": 2})
        assert code == 200 and st["n_to_label"] == 5
    finally:
        served.stop()


def test_the_labelling_api_refuses_a_class_name_that_is_another_class_number(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Classes named by numbers ('1', '3', '0', '2'): {"value": "3"} names class 1 and is the
    index of class 3 ('2'). labels.csv refuses such a label as ambiguous; the labelling API,
    which takes names since 5748c95, stored class 3 without a word. It is now refused the
    same way, naming both classes, and nothing is stored; the JSON number 3 is the index."""
    from label_helpers import Running, labels_of, make_campaign, make_pile, proposed
    from labelwise.cli._labelling import LabelSession

    pile = make_pile(tmp_path / "pile")
    (pile["cap"] / "classes.json").write_text(json.dumps(["1", "3", "0", "2"]))
    camp = make_campaign(pile, tmp_path / "camp", 3)
    capsys.readouterr()
    served = Running(LabelSession(camp))
    try:
        rows = proposed(camp)
        code, st = served.post("/api/answer", {"row": rows[0], "value": "3"})
        assert code == 400, st
        assert st["error"] == (
            "label '3' is ambiguous: the class named '3' is class 1, but 3 is also the index "
            "of class '2'; send the class index as a JSON number"
        )
        assert not (camp / "labels.csv").exists() or labels_of(camp) == {}
        code, st = served.post("/api/answer", {"row": rows[0], "value": 3})
        assert code == 200, st
        assert labels_of(camp) == {rows[0]: 3}
    finally:
        served.stop()


def _channels_last_model(torch: Any) -> Any:
    """A model of (rows, 8, 8, 3) images: its forward permutes NHWC to NCHW, then a 3 -> 2
    channel conv and a Linear(72, 2)."""

    class ChannelsLast(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.conv = torch.nn.Conv2d(3, 2, 3)
            self.fc = torch.nn.Linear(72, 2)

        def forward(self, x: torch.Tensor) -> torch.Tensor:  # TorchScript reads the types
            return self.fc(torch.relu(self.conv(x.permute(0, 3, 1, 2))).flatten(1))

    return ChannelsLast()


def _channel_layouts(tmp_path: Path) -> np.random.Generator:
    """chw.npy and hwc.npy in ``tmp_path``: 6 random images, channels first and last; the
    generator that drew them."""
    rng = np.random.default_rng(0)
    np.save(tmp_path / "chw.npy", rng.normal(size=(6, 3, 8, 8)).astype(np.float32))
    np.save(tmp_path / "hwc.npy", rng.normal(size=(6, 8, 8, 3)).astype(np.float32))
    return rng


def test_rows_in_the_other_channel_layout_say_how_to_move_the_axis(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A channels-last model (forward permutes NHWC to NCHW) given (rows, 3, 8, 8) rows
    failed with 'the model's first layer 'conv' ... expects inputs of shape (rows, 3, ...,
    ...)': exactly the shape given, so the message read as if the rows were right. A
    channels-first model given (rows, 8, 8, 3) rows said nothing of the layout either. Each
    now says which way the channel axis goes and how to move it."""
    torch = pytest.importorskip("torch")

    first = torch.nn.Sequential(
        torch.nn.Conv2d(3, 2, 3), torch.nn.Flatten(), torch.nn.Linear(72, 2)
    )
    _channel_layouts(tmp_path)
    for net, wrong, right, said in (
        (_channels_last_model(torch), "chw", "hwc", "the model's forward rearranges its input"),
        (first, "hwc", "chw", "the rows look channels last (8, 8, 3)"),
    ):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)  # TorchScript is deprecated
            torch.jit.save(torch.jit.script(net.eval()), str(tmp_path / "m.pt"))
        argv = ["capture", "--model", tmp_path / "m.pt", "--out", tmp_path / "cap"]
        code, _, err = run_cli([*argv, "--inputs", tmp_path / f"{wrong}.npy"], capsys)
        assert code == 2 and said in err, err
        moved = "np.moveaxis(x, 1, -1)" if right == "hwc" else "np.moveaxis(x, -1, 1)"
        assert moved in err and "Traceback" not in err
        assert not (tmp_path / "cap").exists()
        code, _, err = run_cli([*argv, "--inputs", tmp_path / f"{right}.npy"], capsys)
        assert code == 0, err
        assert np.load(tmp_path / "cap" / "activations.npy").shape == (6, 72)
        shutil.rmtree(tmp_path / "cap")


def test_images_of_another_size_get_no_advice_to_move_the_channel_axis(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A channels-first model (Conv2d(3, ...), then Linear(72, 2) for 8 x 8 images) given
    (rows, 3, 16, 16) images fails in the Linear ('mat1 and mat2 shapes cannot be
    multiplied'), not on the channels; the layout advice added for channels-last models
    still said 'the rows already are channels first (3, 16, 16), so the model's forward
    rearranges its input ...: np.save(FILE, np.moveaxis(x, 1, -1))', which then fails on
    the channels. Only a failure on the count of channels gets the advice now."""
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Conv2d(3, 2, 3), torch.nn.Flatten(), torch.nn.Linear(72, 2))
    torch.save(net, str(tmp_path / "m.pt"))
    np.save(tmp_path / "big.npy", np.zeros((6, 3, 16, 16), dtype=np.float32))
    code, _, err = run_cli(["capture", "--model", tmp_path / "m.pt", "--inputs",
                            tmp_path / "big.npy", "--out", tmp_path / "cap"], capsys)  # fmt: skip
    assert code == 2 and "mat1 and mat2 shapes cannot be multiplied" in err, err
    assert "moveaxis" not in err and "rearranges" not in err and "channels last" not in err


def test_dependability_perturbations_of_a_one_output_model_say_how_to_give_two(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """'dependability --perturb noise' on a binary classifier with one sigmoid output said
    'the model must return logits of shape (128, C) with C >= 2 classes, got (128, 1)': a
    dead end for a model that is a classifier. It now names the one output and the line that
    gives two logits; the model so wrapped runs, and its accuracy is the sigmoid model's."""
    torch = pytest.importorskip("torch")

    class TwoLogits(torch.nn.Module):
        def __init__(self, inner: torch.nn.Module) -> None:
            super().__init__()
            self.inner = inner

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            p = self.inner(x)
            return torch.log(torch.cat([1 - p, p], 1))

    torch.manual_seed(0)
    sig = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Linear(4, 1), torch.nn.Sigmoid())
    x = np.random.default_rng(0).uniform(size=(30, 3)).astype(np.float32)
    with torch.no_grad():
        y = (sig(torch.tensor(x))[:, 0] > 0.5).numpy().astype(np.int64)
    y[:3] = 1 - y[:3]  # 27 of 30 right
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "y.npy", y)
    for name, net in (("sig", sig), ("two", TwoLogits(sig))):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)  # TorchScript is deprecated
            torch.jit.save(torch.jit.script(net.eval()), str(tmp_path / f"{name}.pt"))
    argv = ["dependability", "--inputs", tmp_path / "x.npy", "--labels", tmp_path / "y.npy",
            "--perturb", "noise", "--eps", "0.05"]  # fmt: skip
    code, _, err = run_cli([*argv, "--model", tmp_path / "sig.pt", "--out", tmp_path / "a"],
                           capsys)  # fmt: skip
    assert code == 2 and "one output per row" in err, err
    assert "torch.log(torch.cat([1 - p, p], 1))" in err
    assert not (tmp_path / "a").exists()
    code, out, err = run_cli([*argv, "--model", tmp_path / "two.pt", "--out", tmp_path / "b"],
                             capsys)  # fmt: skip
    assert code == 0, err
    assert "27/30" in out and "confidence loss" in out


def test_labels_of_another_selection_are_named_as_such(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """'estimate b --labels a/labels.csv' (the labels of another selection of the pile) said
    '... labels 17 rows that were not selected: ...; remove these lines': done, the next run
    said 17 selected rows have no label. When most of the file's rows are outside the
    selection the message now asks whether it is another selection's file and points to
    to_label.csv; one stray line still says to remove it (and no longer 'these lines'), and so
    does a file of one or two lines that are all outside."""
    from synthetic import classifier_pile

    y, acts, probs = classifier_pile(np.random.default_rng(0), 200, 3, 6)
    np.save(tmp_path / "a.npy", acts.astype(np.float32))
    np.save(tmp_path / "p.npy", probs.astype(np.float32))
    sel = {}
    for name, seed in (("a", "1"), ("b", "2")):
        argv = ["select", "--method", "srs", "--budget", "20", "--activations",
                tmp_path / "a.npy", "--probs", tmp_path / "p.npy", "--seed", seed]  # fmt: skip
        code, _, err = run_cli([*argv, "--out", tmp_path / name], capsys)
        assert code == 0, err
        rows = np.loadtxt(tmp_path / name / "to_label.csv", delimiter=",", skiprows=1,
                          usecols=1, dtype=int)  # fmt: skip
        sel[name] = rows.tolist()
        (tmp_path / name / "labels.csv").write_text(
            "row,label\n" + "".join(f"{r},{y[r]}\n" for r in sel[name])
        )
    outside = len(set(sel["a"]) - set(sel["b"]))
    assert outside > 10
    code, _, err = run_cli(["estimate", tmp_path / "b", "--labels",
                            tmp_path / "a" / "labels.csv"], capsys)  # fmt: skip
    assert code == 2
    assert f"that is {outside} of its 20 rows: is it the labels file of another selection" in err
    assert "to_label.csv" in err and "remove these lines" not in err
    stray = next(r for r in sel["a"] if r not in sel["b"])
    with open(tmp_path / "b" / "labels.csv", "a") as fh:
        fh.write(f"{stray},{y[stray]}\n")
    code, _, err = run_cli(["estimate", tmp_path / "b", "--labels",
                            tmp_path / "b" / "labels.csv"], capsys)  # fmt: skip
    assert code == 2 and "labels 1 row that was not selected" in err
    assert "remove this line" in err and "another selection" not in err
    (tmp_path / "one.csv").write_text(f"row,label\n{stray},{y[stray]}\n")
    code, _, err = run_cli(["estimate", tmp_path / "b", "--labels", tmp_path / "one.csv"], capsys)
    assert code == 2 and "remove this line" in err and "another selection" not in err


def test_campaign_force_sets_the_label_studio_tasks_aside_with_the_labels(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """'campaign DIR --force' over a labelled campaign moved its labels, state and report into
    DIR/replaced-<time>/ but left its Label Studio tasks and config in DIR (with the export's
    record moved away): the old campaign's tasks sat beside the new one's, and the new
    campaign's 'export' took them for the user's file and wrote label-studio-tasks.new.json.
    They now go aside with the labels they belong to, and the next export writes
    label-studio-tasks.json."""
    from synthetic import classifier_pile

    y, acts, probs = classifier_pile(np.random.default_rng(0), 120, 3, 6)
    np.save(tmp_path / "a.npy", acts.astype(np.float32))
    np.save(tmp_path / "p.npy", probs.astype(np.float32))
    d = tmp_path / "camp"
    start = ["campaign", d, "--activations", tmp_path / "a.npy", "--probs", tmp_path / "p.npy"]
    for argv in (start, ["next", d, "--batch", "6"]):
        code, _, err = run_cli(argv, capsys)
        assert code == 0, err
    rows = np.loadtxt(d / "to_label.csv", delimiter=",", skiprows=1, usecols=1, dtype=int)
    (d / "labels.csv").write_text("row,label\n" + "".join(f"{r},{y[r]}\n" for r in rows))
    code, _, err = run_cli(["estimate", d, "--labels", d / "labels.csv"], capsys)
    assert code == 0, err
    code, _, err = run_cli(["next", d, "--batch", "4"], capsys)
    assert code == 0, err
    code, _, err = run_cli(["export", d, "--format", "label-studio"], capsys)
    assert code == 0, err
    old_tasks = (d / "label-studio-tasks.json").read_text()
    code, _, err = run_cli([*start, "--seed", "7", "--force"], capsys)
    assert code == 0, err
    (aside,) = d.glob("replaced-*")
    assert (aside / "label-studio-tasks.json").read_text() == old_tasks
    assert (aside / "label-studio-tasks.config.xml").is_file()
    assert (aside / "labels.csv").is_file()
    assert not (d / "label-studio-tasks.json").exists()
    assert not (d / "label-studio-tasks.config.xml").exists()
    for argv in (["next", d, "--batch", "5"], ["export", d, "--format", "label-studio"]):
        code, _, err = run_cli(argv, capsys)
        assert code == 0, err
    assert not (d / "label-studio-tasks.new.json").exists()
    new_rows = np.loadtxt(d / "to_label.csv", delimiter=",", skiprows=1, usecols=1, dtype=int)
    tasks = json.loads((d / "label-studio-tasks.json").read_text())
    assert sorted(t["data"]["labelwise_row"] for t in tasks) == sorted(new_rows.tolist())


def test_extend_with_other_arrays_is_refused_not_ignored(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """'select --extend sel --budget 5 --activations cap2/activations.npy' (a new capture)
    extended the selection on its old arrays and said nothing of the new file: 'extended ces
    selection from 20 to 25 rows'. Another file is now refused naming the recorded one, and
    the selection is unchanged; the recorded file itself is accepted."""
    from synthetic import classifier_pile

    _, acts, probs = classifier_pile(np.random.default_rng(0), 150, 3, 6)
    np.save(tmp_path / "a.npy", acts.astype(np.float32))
    np.save(tmp_path / "b.npy", acts[::-1].astype(np.float32))
    np.save(tmp_path / "p.npy", probs.astype(np.float32))
    sel = tmp_path / "sel"
    code, _, err = run_cli(["select", "--method", "ces", "--budget", "10", "--activations",
                            tmp_path / "a.npy", "--out", sel, "--seed", "0"], capsys)  # fmt: skip
    assert code == 0, err
    before = (sel / "selection.json").read_text()
    extend = ["select", "--extend", sel, "--budget", "5"]
    for flag, path in (("--activations", "b.npy"), ("--probs", "p.npy")):
        code, _, err = run_cli([*extend, flag, tmp_path / path], capsys)
        assert code == 2, err
        assert f"{flag} {tmp_path / path}: --extend continues the selection" in err
        assert f"leave {flag} out" in err
        assert (sel / "selection.json").read_text() == before
    assert (
        str((tmp_path / "a.npy").resolve())
        in run_cli([*extend, "--activations", tmp_path / "b.npy"], capsys)[2]
    )
    code, out, err = run_cli([*extend, "--activations", tmp_path / "a.npy"], capsys)
    assert code == 0, err
    assert "from 10 to 15 rows" in out


def test_extend_with_the_same_population_size_is_taken_as_the_same_file_is(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """'select --extend sel --budget 5 --population-size 200' (the first command line with
    --extend added) on a selection of a 200-row pile was refused ('--population-size cannot
    change an existing selection'), though the same --activations file or --method is taken.
    The same size is taken now; another is refused naming the selection's."""
    sel = tmp_path / "sel"
    code, _, err = run_cli(["select", "--method", "srs", "--budget", "10", "--population-size",
                            "200", "--out", sel, "--seed", "0"], capsys)  # fmt: skip
    assert code == 0, err
    extend = ["select", "--extend", sel, "--budget", "5", "--population-size"]
    code, _, err = run_cli([*extend, "300"], capsys)
    assert code == 2 and "--population-size 300 cannot change" in err and "of 200 rows" in err
    code, out, err = run_cli([*extend, "200"], capsys)
    assert code == 0, err
    assert "from 10 to 15 rows" in out


def test_an_onnx_model_taking_the_other_channel_layout_says_how_to_move_the_axis(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An ONNX model exported for (rows, 8, 8, 3) images given (rows, 3, 8, 8) rows was told
    'reshape the inputs (e.g. images as (rows, channels, height, width))': what it had been
    given. It is now told which way the channel axis goes, both ways; other shapes keep the
    general advice."""
    torch = pytest.importorskip("torch")
    pytest.importorskip("onnxruntime")
    pytest.importorskip("onnx")

    first = torch.nn.Sequential(
        torch.nn.Conv2d(3, 2, 3), torch.nn.ReLU(), torch.nn.Flatten(), torch.nn.Linear(72, 2)
    )
    rng = _channel_layouts(tmp_path)
    np.save(tmp_path / "flat.npy", rng.normal(size=(6, 5)).astype(np.float32))
    for name, net, example in (
        ("last", _channels_last_model(torch), (1, 8, 8, 3)),
        ("first", first, (1, 3, 8, 8)),
    ):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # torch's note on its legacy exporter
            torch.onnx.export(net.eval(), torch.zeros(example), str(tmp_path / f"{name}.onnx"),
                              dynamo=False, input_names=["x"],
                              dynamic_axes={"x": {0: "b"}})  # fmt: skip
    for name, wrong, said in (
        ("last", "chw", "the model takes channels last: np.save(FILE, np.moveaxis(x, 1, -1))"),
        ("first", "hwc", "the model takes channels first: np.save(FILE, np.moveaxis(x, -1, 1))"),
        ("first", "flat", "reshape the inputs"),
    ):
        argv = ["capture", "--model", tmp_path / f"{name}.onnx", "--out", tmp_path / "cap"]
        code, _, err = run_cli([*argv, "--inputs", tmp_path / f"{wrong}.npy"], capsys)
        assert code == 2 and said in err, err
    argv = ["capture", "--model", tmp_path / "last.onnx", "--out", tmp_path / "cap"]
    code, _, err = run_cli([*argv, "--inputs", tmp_path / "hwc.npy"], capsys)
    assert code == 0, err


def test_a_pile_that_is_no_npy_array_gets_advice_capture_can_follow(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """'capture --inputs table.npy' (a CSV saved under .npy) said 'a CSV or other table goes
    through 'labelwise capture --inputs FILE' first': the very command that failed. An empty
    .npy said 'No data left in file'. capture now says to name a table .csv or .parquet, an
    empty file says it is empty, and select keeps its advice to capture first."""
    torch = pytest.importorskip("torch")
    torch.save(torch.nn.Sequential(torch.nn.Linear(2, 2)), str(tmp_path / "m.pt"))
    (tmp_path / "table.npy").write_text("a,b\n1,2\n")
    (tmp_path / "zero.npy").write_bytes(b"")
    argv = ["capture", "--model", tmp_path / "m.pt", "--out", tmp_path / "cap", "--inputs"]
    code, _, err = run_cli([*argv, tmp_path / "table.npy"], capsys)
    assert code == 2 and "a table is read from a .csv or .parquet file" in err, err
    assert "labelwise capture" not in err
    code, _, err = run_cli([*argv, tmp_path / "zero.npy"], capsys)
    assert code == 2 and "the file is empty, 0 bytes" in err, err
    code, _, err = run_cli(["select", "--method", "ces", "--budget", "2", "--activations",
                            tmp_path / "table.npy", "--out", tmp_path / "s"], capsys)  # fmt: skip
    assert code == 2 and "goes through 'labelwise capture --inputs FILE' first" in err, err
    assert not (tmp_path / "cap").exists()


def test_a_huge_regression_target_names_its_row(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A regression target of 1e200 (another unit, a typo) said 'targets must be at most
    1e+150 in magnitude ..., got a larger value at position 0': a position among the labelled
    rows that no file shows. Campaign and selection now name the pile row and the value."""
    rng = np.random.default_rng(0)
    acts = rng.normal(size=(60, 4)).astype(np.float32)
    preds = rng.normal(size=60).astype(np.float32)
    np.save(tmp_path / "a.npy", acts)
    np.save(tmp_path / "o.npy", preds)
    camp, sel = tmp_path / "camp", tmp_path / "sel"
    for argv in (
        ["campaign", camp, "--activations", tmp_path / "a.npy", "--predictions",
         tmp_path / "o.npy", "--seed", "0"],
        ["next", camp, "--batch", "5"],
        ["select", "--method", "srs", "--budget", "5", "--activations", tmp_path / "a.npy",
         "--out", sel, "--seed", "0"],
    ):  # fmt: skip
        code, _, err = run_cli(argv, capsys)
        assert code == 0, err
    for d, extra in ((camp, []), (sel, ["--predictions", tmp_path / "o.npy"])):
        rows = np.loadtxt(d / "to_label.csv", delimiter=",", skiprows=1, usecols=1, dtype=int)
        targets = preds[rows].astype(np.float64)
        targets[2] = 1e200
        (d / "t.csv").write_text(
            "row,target\n"
            + "".join(f"{r},{float(t)!r}\n" for r, t in zip(rows, targets, strict=True))
        )
        code, _, err = run_cli(["estimate", d, "--labels", d / "t.csv", *extra], capsys)
        assert code == 2
        assert f"--labels: target of row {rows[2]} is 1e+200, above 1e+150 in magnitude" in err


def test_image_preprocessing_mistakes_name_their_flags(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """'capture --mean 0.5,0.5' (two values for RGB) said 'image mean must be 1 or 3 (channels)
    finite numbers', naming no flag; so did --std 0,1,1 and --scale. Each now names its flag."""
    pytest.importorskip("PIL")
    from PIL import Image

    (tmp_path / "imgs").mkdir()
    Image.new("RGB", (4, 4)).save(tmp_path / "imgs" / "a.png")
    argv = ["capture", "--model", tmp_path / "none.pt", "--inputs", tmp_path / "imgs",
            "--out", tmp_path / "cap"]  # fmt: skip
    for extra, said in (
        (["--mean", "0.5,0.5"], "image mean (CLI: --mean) must be 1 or 3 (channels)"),
        (["--std", "0,1,1"], "image std (CLI: --std) must be positive"),
        (["--scale", "0"], "image scale (CLI: --scale) must be a positive finite number"),
    ):
        code, _, err = run_cli([*argv, *extra], capsys)
        assert code == 2 and said in err, err


def test_a_campaign_on_a_classifiers_predicted_classes_points_to_its_probabilities(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """'campaign c --activations cap/activations.npy --predictions cap/predictions.npy' of a
    classifier's capture (predicted classes beside probabilities.npy) started 'an srs (auto)
    regression campaign', scoring 1 - (class difference)^2, and refused every class label
    later. It is now refused, naming --probs cap/probabilities.npy; nothing is written. A
    regression capture's predictions still start a regression campaign."""
    from synthetic import classifier_pile

    _, acts, probs = classifier_pile(np.random.default_rng(0), 80, 3, 5)
    cap = tmp_path / "cap"
    cap.mkdir()
    np.save(cap / "activations.npy", acts.astype(np.float32))
    np.save(cap / "probabilities.npy", probs.astype(np.float32))
    np.save(cap / "predictions.npy", probs.argmax(axis=1).astype(np.int64))
    argv = ["campaign", tmp_path / "c", "--activations", cap / "activations.npy"]
    code, _, err = run_cli([*argv, "--predictions", cap / "predictions.npy"], capsys)
    assert code == 2
    assert "holds a classifier's predicted classes" in err
    assert f"--probs {cap / 'probabilities.npy'}" in err
    assert not (tmp_path / "c").exists()
    reg = tmp_path / "reg"
    reg.mkdir()
    np.save(reg / "activations.npy", acts.astype(np.float32))
    np.save(reg / "predictions.npy", acts[:, 0].astype(np.float32))
    code, out, err = run_cli(["campaign", tmp_path / "r", "--activations",
                              reg / "activations.npy", "--predictions",
                              reg / "predictions.npy"], capsys)  # fmt: skip
    assert code == 0 and "regression campaign" in out, err


def test_predicted_classes_given_as_probs_are_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """'select --method css --probs cap/predictions.npy' of a binary classifier (classes 0
    and 1) took the classes for confidences: 'css: 10 rows selected', strata by the predicted
    class, without a word. Integer --probs are now refused, naming probabilities.npy; float
    confidences are still taken."""
    from synthetic import classifier_pile

    _, _, probs = classifier_pile(np.random.default_rng(0), 100, 2, 5)
    cap = tmp_path / "cap"
    cap.mkdir()
    np.save(cap / "probabilities.npy", probs.astype(np.float32))
    np.save(cap / "predictions.npy", probs.argmax(axis=1).astype(np.int64))
    np.save(cap / "conf.npy", probs.max(axis=1).astype(np.float32))
    argv = ["select", "--method", "css", "--budget", "10", "--out", tmp_path / "s", "--probs"]
    code, _, err = run_cli([*argv, cap / "predictions.npy"], capsys)
    assert code == 2 and "holds integers (int64): predicted classes, not confidences" in err
    assert f"--probs {cap / 'probabilities.npy'}" in err
    assert not (tmp_path / "s").exists()
    code, _, err = run_cli([*argv, cap / "conf.npy"], capsys)
    assert code == 0, err


def test_to_label_csv_given_as_the_labels_says_to_add_a_label_column(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """'estimate sel --labels sel/to_label.csv' (the list of rows, not yet labelled) said
    'needs exactly one of the columns 'label' (or 'class': class names), 'target' or
    'score', got ['order', 'row', 'id', 'new']'. It now says the file is the list of rows to
    label and how to add the labels; the same file with a label column is read."""
    from synthetic import classifier_pile

    y, acts, probs = classifier_pile(np.random.default_rng(0), 60, 3, 5)
    np.save(tmp_path / "a.npy", acts.astype(np.float32))
    np.save(tmp_path / "p.npy", probs.astype(np.float32))
    sel = tmp_path / "sel"
    code, _, err = run_cli(["select", "--method", "srs", "--budget", "6", "--activations",
                            tmp_path / "a.npy", "--probs", tmp_path / "p.npy", "--out", sel],
                           capsys)  # fmt: skip
    assert code == 0, err
    code, _, err = run_cli(["estimate", sel, "--labels", sel / "to_label.csv"], capsys)
    assert code == 2
    assert "is a to_label.csv, the list of rows to label (order,row,id,new)" in err
    assert "add a 'label' column" in err
    lines = (sel / "to_label.csv").read_text().splitlines()
    labelled = [f"{ln},{y[int(ln.split(',')[1])]}\n" for ln in lines[1:]]
    (tmp_path / "done.csv").write_text(lines[0] + ",label\n" + "".join(labelled))
    code, out, err = run_cli(["estimate", sel, "--labels", tmp_path / "done.csv"], capsys)
    assert code == 0 and "from 6 labelled rows" in out, err


def test_export_of_an_extended_selection_sends_only_the_rows_without_a_label(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """After 'select --extend sel --budget 4' on a selection of 6 labelled rows, 'export sel'
    wrote 10 Label Studio tasks: the 6 labelled rows went to be labelled again with the 4
    new ones. It now writes the 4 rows without a label (and says how many it left out); the
    import of their answers completes labels.csv, and a selection labelled to the last row
    has nothing to export."""
    from synthetic import classifier_pile

    y, acts, probs = classifier_pile(np.random.default_rng(0), 60, 3, 5)
    np.save(tmp_path / "a.npy", acts.astype(np.float32))
    np.save(tmp_path / "p.npy", probs.astype(np.float32))
    sel = tmp_path / "sel"
    code, _, err = run_cli(["select", "--method", "srs", "--budget", "6", "--activations",
                            tmp_path / "a.npy", "--probs", tmp_path / "p.npy", "--out", sel],
                           capsys)  # fmt: skip
    assert code == 0, err
    first = np.loadtxt(sel / "to_label.csv", delimiter=",", skiprows=1, usecols=1, dtype=int)
    (sel / "labels.csv").write_text("row,label\n" + "".join(f"{r},{y[r]}\n" for r in first))
    code, _, err = run_cli(["select", "--extend", sel, "--budget", "4"], capsys)
    assert code == 0, err
    code, out, err = run_cli(["export", sel], capsys)
    assert code == 0, err
    assert "wrote 4 Label Studio tasks" in out and "left out 6 selected rows" in out
    tasks = json.loads((sel / "label-studio-tasks.json").read_text())
    new = [t["data"]["labelwise_row"] for t in tasks]
    assert not set(new) & set(first.tolist()) and len(set(new)) == 4
    answers = [{"id": i, "data": t["data"], "annotations": [{"result": [
        {"from_name": "label", "to_name": "text", "type": "choices",
         "value": {"choices": [str(y[t["data"]["labelwise_row"]])]}}]}]}
        for i, t in enumerate(tasks)]  # fmt: skip
    (tmp_path / "export.json").write_text(json.dumps(answers))
    code, _, err = run_cli(["import", sel, tmp_path / "export.json"], capsys)
    assert code == 0, err
    code, out, err = run_cli(["estimate", sel, "--labels", sel / "labels.csv"], capsys)
    assert code == 0 and "from 10 labelled rows" in out, err
    code, _, err = run_cli(["export", sel], capsys)
    assert code == 2 and "every selected row has a label" in err


def test_export_of_a_campaign_leaves_out_the_rows_labelled_in_labels_csv(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A campaign's export wrote every proposed row not yet recorded: 3 of its 6 rows labelled
    in DIR/labels.csv (no 'estimate' since) went to Label Studio again, 6 tasks, as a
    selection's labelled rows did before a807015. It now writes the 3 without a label and
    says how many it left out; with all 6 labelled it says to record them or propose more."""
    from synthetic import classifier_pile

    y, acts, probs = classifier_pile(np.random.default_rng(0), 120, 3, 6)
    np.save(tmp_path / "a.npy", acts.astype(np.float32))
    np.save(tmp_path / "p.npy", probs.astype(np.float32))
    d = tmp_path / "camp"
    for argv in (
        ["campaign", d, "--activations", tmp_path / "a.npy", "--probs", tmp_path / "p.npy",
         "--seed", "1"],
        ["next", d, "--batch", "6"],
    ):  # fmt: skip
        code, _, err = run_cli(argv, capsys)
        assert code == 0, err
    rows = np.loadtxt(d / "to_label.csv", delimiter=",", skiprows=1, usecols=1, dtype=int)
    (d / "labels.csv").write_text("row,label\n" + "".join(f"{r},{y[r]}\n" for r in rows[:3]))
    code, out, err = run_cli(["export", d], capsys)
    assert code == 0, err
    assert "wrote 3 Label Studio tasks" in out and "left out 3 proposed rows" in out
    tasks = json.loads((d / "label-studio-tasks.json").read_text())
    assert sorted(t["data"]["labelwise_row"] for t in tasks) == sorted(rows[3:].tolist())
    (d / "labels.csv").write_text("row,label\n" + "".join(f"{r},{y[r]}\n" for r in rows))
    code, _, err = run_cli(["export", d], capsys)
    assert code == 2 and "every proposed row has a label" in err
    assert f"labelwise next {d}" in err


def test_a_regression_campaign_without_outputs_names_the_captures_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A regression campaign started with --score-floor only: its first estimate said
    '--predictions is required: the campaign has no regression outputs recorded', naming no
    file; a selection's estimate names the capture's outputs.npy. The campaign's now does."""
    rng = np.random.default_rng(0)
    cap = tmp_path / "cap"
    cap.mkdir()
    np.save(cap / "activations.npy", rng.normal(size=(40, 3)).astype(np.float32))
    outputs = rng.uniform(-1, 1, size=40).astype(np.float32)  # 1 - (o - 0.5)^2 >= -1.25
    np.save(cap / "outputs.npy", outputs)
    (cap / "capture.json").write_text(json.dumps({"head": "raw", "rows": 40}))
    camp = tmp_path / "camp"
    for argv in (
        [
            "campaign",
            camp,
            "--activations",
            cap / "activations.npy",
            "--score-floor",
            "-3",
            "--seed",
            "0",
        ],
        ["next", camp, "--batch", "4"],
    ):
        code, _, err = run_cli(argv, capsys)
        assert code == 0, err
    rows = np.loadtxt(camp / "to_label.csv", delimiter=",", skiprows=1, usecols=1, dtype=int)
    (camp / "t.csv").write_text("row,target\n" + "".join(f"{r},0.5\n" for r in rows))
    code, _, err = run_cli(["estimate", camp, "--labels", camp / "t.csv"], capsys)
    assert code == 2
    assert f"give --predictions {(cap / 'outputs.npy').resolve()}" in err
    code, out, err = run_cli(["estimate", camp, "--labels", camp / "t.csv", "--predictions",
                              cap / "outputs.npy"], capsys)  # fmt: skip
    assert code == 0 and "1-MSE" in out, err


def test_the_transposed_predictions_command_writes_beside_the_file_not_over_preds_npy(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Predictions saved (inputs, models) got the advice np.save('preds.npy', ...): pasted in
    a project folder that already held a preds.npy (another model zoo's), it overwrote it.
    The advice now writes <stem>_models_first.npy beside the given file; pasted, it gives
    the array select takes, and the other preds.npy is untouched."""
    rng = np.random.default_rng(0)
    preds = rng.integers(0, 3, size=(4, 30))
    np.save(tmp_path / "zoo_T.npy", preds.T.copy())
    np.save(tmp_path / "preds.npy", np.zeros((2, 30), dtype=np.int64))
    before = (tmp_path / "preds.npy").read_bytes()
    argv = ["select", "--method", "cppi", "--budget", "5", "--out", tmp_path / "s"]
    code, _, err = run_cli([*argv, "--predictions", tmp_path / "zoo_T.npy"], capsys)
    assert code == 2
    target = tmp_path / "zoo_T_models_first.npy"
    assert f"np.save('{target}', np.swapaxes(np.load('{tmp_path / 'zoo_T.npy'}'), 0, 1))" in err
    assert "'preds.npy'" not in err
    np.save(target, np.swapaxes(np.load(tmp_path / "zoo_T.npy"), 0, 1))  # what it says to run
    np.testing.assert_array_equal(np.load(target), preds)
    assert (tmp_path / "preds.npy").read_bytes() == before
    code, _, err = run_cli([*argv, "--predictions", target], capsys)
    assert code == 0, err


def test_token_ids_outside_the_embedding_say_which_ids_the_model_has(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A text model (first layer nn.Embedding(10, 4)) given ids up to 29 said only
    'IndexError: index out of range in self'. It now names the table's 10 ids and the
    range the rows hold; ids in range are captured."""
    torch = pytest.importorskip("torch")

    class Tok(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.emb = torch.nn.Embedding(10, 4)
            self.fc1 = torch.nn.Linear(4, 8)
            self.fc2 = torch.nn.Linear(8, 2)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.fc2(torch.relu(self.fc1(self.emb(x).mean(1))))

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # TorchScript is deprecated
        torch.jit.save(torch.jit.script(Tok().eval()), str(tmp_path / "m.pt"))
    rng = np.random.default_rng(0)
    np.save(tmp_path / "big.npy", rng.integers(0, 30, size=(12, 5)))
    np.save(tmp_path / "ok.npy", rng.integers(0, 10, size=(12, 5)))
    argv = ["capture", "--model", tmp_path / "m.pt", "--out", tmp_path / "cap", "--inputs"]
    code, _, err = run_cli([*argv, tmp_path / "big.npy"], capsys)
    assert code == 2
    high = int(np.load(tmp_path / "big.npy").max())
    assert f"nn.Embedding of 10 ids (0 to 9) but these rows hold ids from 0 to {high}" in err
    code, _, err = run_cli([*argv, tmp_path / "ok.npy"], capsys)
    assert code == 0, err


def test_rank_labels_of_a_class_no_model_predicts_name_the_cli_flag(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """rank with a label no model predicts ended 'pass n_classes= if a class is never
    predicted': a Python argument the CLI user cannot pass (user34's leftover). The message
    now names --classes FILE."""
    preds = np.random.default_rng(0).integers(0, 3, size=(3, 60))
    np.save(tmp_path / "preds.npy", preds)
    sel = tmp_path / "sel"
    code, _, err = run_cli(
        ["select", "--method", "cppi", "--budget", 10, "--seed", 1, "--predictions",
         tmp_path / "preds.npy", "--out", sel],
        capsys,
    )  # fmt: skip
    assert code == 0, err
    rows = [int(line.split(",")[1]) for line in (sel / "to_label.csv").read_text().split()[1:]]
    labels = "".join(f"{r},{3 if i == 0 else 1}\n" for i, r in enumerate(rows))
    (tmp_path / "labels.csv").write_text("row,label\n" + labels)
    code, _, err = run_cli(["rank", sel, "--labels", tmp_path / "labels.csv"], capsys)
    assert code == 2 and "Traceback" not in err
    assert "--classes FILE" in err.splitlines()[0], err

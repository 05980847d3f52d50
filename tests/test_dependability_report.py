"""The combined dependability report on arrays."""

from __future__ import annotations

import json
import re
import warnings

import numpy as np
import pytest

from labelwise import LabelwiseError
from labelwise.dependability.report import dependability_report


def data(n: int = 400, seed: int = 0) -> dict:
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 3, n)
    logits = rng.standard_normal((n, 3))
    logits[np.arange(n), y] += 1.5
    probs = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    acts = np.maximum(rng.standard_normal((n, 12)) + y[:, None] * 0.3, 0)
    weather = rng.choice(["sunny", "rainy"], n)
    road = rng.choice(["stone", "tarmac", "mud"], n)
    return {"y": y, "probs": probs, "acts": acts, "scen": {"weather": weather, "road": road}}


def test_report_rows_and_values() -> None:
    d = data()
    spec = {"weather": ["sunny", "cloudy", "rainy"], "road": ["stone", "tarmac", "mud"]}
    rep = dependability_report(
        labels=d["y"],
        probabilities=d["probs"],
        activations=d["acts"],
        scenarios=d["scen"],
        spec=spec,
        severity=np.ones((3, 3)) - np.eye(3),
    )
    names = [r[0] for r in rep.rows]
    assert names[:3] == ["accuracy", "neuron 1-activation coverage", "neuron 2-activation coverage"]
    values = dict((r[0], r[1]) for r in rep.rows)
    acc = float(np.mean(d["probs"].argmax(1) == d["y"]))
    assert values["accuracy"] == pytest.approx(acc)
    # cloudy never occurs: 6 of the 9 weather x road cells are occupied
    assert values["scenario 2-projection coverage"] == pytest.approx(6 / 9)
    assert values["accuracy discounted by coverage"] == pytest.approx(acc * 6 / 9)
    # all off-diagonal weights 1: the normalised weighted error is the plain error rate
    assert values["weighted error (normalised)"] == pytest.approx(1 - acc)
    doc = rep.to_dict()
    assert doc["details"]["next_scenarios"]["proposals"]
    assert "accuracy" in rep.table()


def test_every_summary_value_says_its_range_and_direction() -> None:
    """The summary printed bare numbers: nothing said they were shares in [0, 1], which ones
    are better low, what 'top 10% mean' averages or what the normalised weighted error divides
    by. The table now ends with that legend and every JSON summary row has a meaning."""
    d = data()
    rep = dependability_report(
        labels=d["y"],
        probabilities=d["probs"],
        activations=d["acts"],
        scenarios=d["scen"],
        spec={"weather": ["sunny", "cloudy", "rainy"], "road": ["stone", "tarmac", "mud"]},
        severity=np.ones((3, 3)) - np.eye(3),
    )
    table = rep.table()
    assert "a share or probability in [0, 1]" in table
    assert "lower is better for activation pattern, weighted error, higher for the others" in table
    assert "mean severity per input / largest severity 1" in table
    summary = rep.to_dict()["summary"]
    assert all(row["meaning"] and "[0, 1]" in row["meaning"] for row in summary)


def test_scenario_results_name_their_conditions() -> None:
    """The per-scenario results were computed from unnamed rows: dependability.json had
    'conditions': null and scenarios like ['rainy', 'mud'], and the worst scenario printed as a
    bare tuple. They now keep the condition names."""
    d = data()
    spec = {"weather": ["sunny", "cloudy", "rainy"], "road": ["stone", "tarmac", "mud"]}
    rep = dependability_report(
        labels=d["y"],
        probabilities=d["probs"],
        activations=d["acts"],
        scenarios=d["scen"],
        spec=spec,
    )
    perf = rep.to_dict()["details"]["scenario_performance"]
    assert perf["conditions"] == ["weather", "road"]
    detail = dict((r[0], r[2]) for r in rep.rows)["worst scenario accuracy"]
    assert detail.startswith("weather=") and ", road=" in detail


def test_report_without_optional_parts_and_bad_labels() -> None:
    d = data()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        rep = dependability_report(labels=d["y"], probabilities=d["probs"], activations=d["acts"])
    assert len(rep.rows) == 4
    with pytest.raises(LabelwiseError, match="labels"):
        dependability_report(labels=d["y"][:-1], probabilities=d["probs"], activations=d["acts"])
    with pytest.raises(LabelwiseError, match="labels"):
        dependability_report(labels=d["y"] + 3, probabilities=d["probs"], activations=d["acts"])


def _json_keys(obj: object, skip: frozenset[str] = frozenset()) -> set[str]:
    """Every key of a JSON document, except the contents of the keys in ``skip``."""
    keys: set[str] = set()
    if isinstance(obj, dict):
        for k, v in obj.items():
            keys.add(k)
            if k not in skip:
                keys |= _json_keys(v, skip)
    elif isinstance(obj, list):
        for v in obj:
            keys |= _json_keys(v, skip)
    return keys


def readme_json_section() -> str:
    from pathlib import Path

    text = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")
    start = text.index("### What `dependability.json` and `quality.json` hold")
    return text[start : text.index("\n## ", start)]


def test_every_dependability_json_field_is_explained_in_the_readme() -> None:
    """dependability.json held about a hundred fields (covered_by_pattern, degradation, worst,
    n_hot ...) whose meaning was only in the source; the README now lists each one."""
    from labelwise.dependability.interpretation import interpretation_metrics
    from labelwise.dependability.robustness import ConfidenceLoss

    d = data()
    spec = {"weather": ["sunny", "cloudy", "rainy"], "road": ["stone", "tarmac", "mud"]}
    rep = dependability_report(
        labels=d["y"],
        probabilities=d["probs"],
        activations=d["acts"],
        scenarios=d["scen"],
        spec=spec,
        severity=np.ones((3, 3)) - np.eye(3),
    )
    rep.details["confidence_loss"] = ConfidenceLoss(
        transformers=("noise",),
        targets=np.array([0, 1]),
        p_before=np.array([0.9, 0.8]),
        p_after=np.array([[0.5], [0.9]]),
        loss_by_transformer=np.array([[0.4], [0.0]]),
        loss=np.array([0.4, 0.0]),
        worst=np.array([0, -1]),
        labelled=True,
    ).to_dict()
    heat = np.full((1, 3, 3), 0.9)
    heat[0, 1, 1] = 0.1
    mask = np.zeros((1, 8, 8), dtype=bool)
    mask[0, 2:6, 2:6] = True
    rep.details["interpretation"] = interpretation_metrics(
        heat, mask, rho=0.5, window=4, stride=2
    ).to_dict()
    doc = {"layer": "x", **rep.to_dict()}
    # the spec's and the proposals' keys are the user's condition names
    keys = _json_keys(doc, skip=frozenset({"spec", "scenario"}))
    keys = {re.sub(r"^neuron_\d_activation$", "neuron_<k>_activation", k) for k in keys}
    section = readme_json_section()
    missing = sorted(k for k in keys if f"`{k}`" not in section)
    assert not missing, f"fields the README does not explain: {missing}"


def test_spec_without_scenarios_is_an_error(tmp_path, capsys) -> None:
    """--spec without --scenarios was silently ignored: the run printed no scenario coverage
    and said nothing about the file the user gave."""
    from labelwise.cli import main

    argv = ["dependability", "--model", str(tmp_path / "m.pt"), "--inputs",
            str(tmp_path / "x.npy"), "--labels", str(tmp_path / "y.npy"), "--out",
            str(tmp_path / "out"), "--spec", str(tmp_path / "spec.json")]  # fmt: skip
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "labelwise: error: --spec needs --scenarios" in err and "Traceback" not in err


@pytest.mark.parametrize(
    ("extra", "needs"),
    [(["--eps", "0.1"], "--perturb"), (["--window", "8"], "--masks"),
     (["--stride", "3"], "--masks"), (["--rho", "0.3"], "--masks")],
)  # fmt: skip
def test_an_option_of_a_metric_not_asked_for_is_an_error(tmp_path, capsys, extra, needs) -> None:
    """--eps without --perturb and --window / --stride / --rho without --masks were ignored
    without a word: the run looked as if the value had been used."""
    from labelwise.cli import main

    argv = ["dependability", "--model", str(tmp_path / "m.pt"), "--inputs",
            str(tmp_path / "x.npy"), "--labels", str(tmp_path / "y.npy"), "--out",
            str(tmp_path / "out"), *extra]  # fmt: skip
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert f"labelwise: error: {extra[0]} needs {needs}" in err and "Traceback" not in err


def _channel_models(tmp_path):
    """One small CNN saved twice (TorchScript): taking (N, 1, 8, 8) and taking (N, 8, 8, 1)."""
    torch = pytest.importorskip("torch")
    nn = torch.nn
    torch.manual_seed(0)
    body = nn.Sequential(
        nn.Conv2d(1, 3, 3, padding=1), nn.ReLU(), nn.Flatten(),
        nn.Linear(3 * 8 * 8, 12), nn.ReLU(), nn.Linear(12, 4),
    ).eval()  # fmt: skip
    with torch.no_grad():
        body[-1].weight.mul_(40.0)  # confident: perturbations and occlusion move it

    class ChannelsLast(nn.Module):
        def __init__(self, inner: nn.Module) -> None:
            super().__init__()
            self.inner = inner

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.inner(x.permute(0, 3, 1, 2))

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # TorchScript is deprecated
        torch.jit.save(torch.jit.script(body), str(tmp_path / "chw.pt"))
        torch.jit.save(torch.jit.script(ChannelsLast(body).eval()), str(tmp_path / "hwc.pt"))
    rng = np.random.default_rng(0)
    x = rng.random((16, 1, 8, 8)).astype(np.float32)
    np.save(tmp_path / "chw.npy", x)
    np.save(tmp_path / "hwc.npy", np.ascontiguousarray(x.transpose(0, 2, 3, 1)))
    np.save(tmp_path / "y.npy", rng.integers(0, 4, 16))
    np.save(tmp_path / "masks.npy", x[:, 0] > 0.5)


def test_channels_last_images_are_perturbed_and_occluded_as_images(tmp_path, capsys) -> None:
    """A model taking (N, H, W, C) images: rotation ran on (C=8, H=8, W=1) 'images' and
    reported another confidence loss than the same model taking (N, C, H, W) (digits CNN:
    0.094 against 0.159) without a word; patch and occlusion failed on an 'image size 8x1'.
    With --layout hwc every image metric equals the channels-first model's; without it,
    inputs that look channels-last are an error naming --layout."""
    from labelwise.cli import main

    _channel_models(tmp_path)
    common = ["--labels", str(tmp_path / "y.npy"), "--perturb", "rotation,patch,noise",
              "--eps", "0.1", "--masks", str(tmp_path / "masks.npy")]  # fmt: skip
    docs = {}
    for kind, extra in (("chw", []), ("hwc", ["--layout", "hwc"])):
        argv = ["dependability", "--model", str(tmp_path / f"{kind}.pt"), "--inputs",
                str(tmp_path / f"{kind}.npy"), "--out", str(tmp_path / kind),
                *common, *extra]  # fmt: skip
        assert main(argv) == 0, capsys.readouterr().err
        docs[kind] = json.loads((tmp_path / kind / "dependability.json").read_text())["details"]
    chw, hwc = docs["chw"], docs["hwc"]
    for key in ("loss", "p_after"):
        assert np.allclose(chw["confidence_loss"][key], hwc["confidence_loss"][key], atol=1e-6)
    assert max(chw["confidence_loss"]["loss"]) > 0.01  # the perturbations do something
    for key in ("per_image_interpret", "per_image_occsen", "n_hot"):
        assert np.allclose(chw["interpretation"][key], hwc["interpretation"][key], atol=1e-6)
    argv = ["dependability", "--model", str(tmp_path / "hwc.pt"), "--inputs",
            str(tmp_path / "hwc.npy"), "--out", str(tmp_path / "guess"), *common]  # fmt: skip
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "labelwise: error:" in err and "--layout hwc" in err and "Traceback" not in err
    assert not (tmp_path / "guess").exists()


def test_labels_by_class_name_with_classes(tmp_path, capsys) -> None:
    """A labels CSV of class names was refused with 'to label by class name give the names:
    --classes FILE', an option dependability did not have (unrecognized arguments). It now
    takes --classes, and names give the accuracy numbers give."""
    from labelwise.cli import main

    _channel_models(tmp_path)
    y = np.load(tmp_path / "y.npy")
    names = ["ant", "bee", "cow", "doe"]
    (tmp_path / "classes.txt").write_text("\n".join(names) + "\n")
    with open(tmp_path / "names.csv", "w") as fh:
        fh.write("row,label\n" + "".join(f"{i},{names[c]}\n" for i, c in enumerate(y)))
    base = ["dependability", "--model", str(tmp_path / "chw.pt"), "--inputs",
            str(tmp_path / "chw.npy")]  # fmt: skip
    accuracy = {}
    by_name = ["--labels", str(tmp_path / "names.csv"), "--classes", str(tmp_path / "classes.txt")]
    for kind, labels in (("npy", ["--labels", str(tmp_path / "y.npy")]), ("csv", by_name)):
        assert main([*base, "--out", str(tmp_path / kind), *labels]) == 0
        doc = json.loads((tmp_path / kind / "dependability.json").read_text())
        accuracy[kind] = {r["metric"]: r["value"] for r in doc["summary"]}["accuracy"]
    capsys.readouterr()
    assert accuracy["csv"] == accuracy["npy"]
    argv = [*base, "--out", str(tmp_path / "x"), "--labels", str(tmp_path / "names.csv")]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "give the names: --classes FILE" in err and "Traceback" not in err


def test_a_rerun_does_not_leave_an_earlier_runs_plots_as_its_own(tmp_path, capsys) -> None:
    """'dependability --out D --perturb ...' then 'dependability --out D' (no --perturb) left
    the first run's confidence_loss.png beside the second run's dependability.json, which
    has no confidence loss: the plot looked like the second run's."""
    from labelwise.cli import main

    _channel_models(tmp_path)
    base = ["dependability", "--model", str(tmp_path / "chw.pt"), "--inputs",
            str(tmp_path / "chw.npy"), "--labels", str(tmp_path / "y.npy"),
            "--out", str(tmp_path / "d")]  # fmt: skip
    assert main([*base, "--perturb", "noise", "--eps", "0.1"]) == 0, capsys.readouterr().err
    assert (tmp_path / "d" / "confidence_loss.png").is_file()
    capsys.readouterr()
    assert main(base) == 0
    out = capsys.readouterr().out
    doc = json.loads((tmp_path / "d" / "dependability.json").read_text())
    assert "confidence_loss" not in doc["details"]
    assert not (tmp_path / "d" / "confidence_loss.png").exists()
    assert "removed confidence_loss.png of an earlier run" in out


def test_a_one_logit_classifier_gets_no_note_naming_an_option_the_command_lacks(
    tmp_path, capsys
) -> None:
    """'labelwise dependability' of a binary classifier with one logit per row printed
    capture's note 'pass ... (CLI: --head raw) ... --head softmax to silence this', options
    this command does not have. Its probabilities are a classifier's: no note now."""
    torch = pytest.importorskip("torch")
    from labelwise.cli import main

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(6, 4), torch.nn.ReLU(), torch.nn.Linear(4, 1))
    torch.save(model, str(tmp_path / "m.pt"))
    rng = np.random.default_rng(0)
    np.save(tmp_path / "x.npy", rng.normal(size=(60, 6)).astype(np.float32))
    np.save(tmp_path / "y.npy", rng.integers(0, 2, size=60))
    argv = ["dependability", "--model", str(tmp_path / "m.pt"), "--inputs",
            str(tmp_path / "x.npy"), "--labels", str(tmp_path / "y.npy"), "--out",
            str(tmp_path / "out")]  # fmt: skip
    assert main(argv) == 0
    err = capsys.readouterr().err
    assert "--head" not in err and "one output per row" not in err

"""End to end on real small data: capture -> select -> label from the true labels -> estimate."""

from __future__ import annotations

import csv
import json
import warnings
from pathlib import Path

import numpy as np
import pytest

from labelwise.cli import main

torch = pytest.importorskip("torch")


@pytest.fixture(scope="module")
def pile(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """A small MLP trained on half of scikit-learn's digits; the pile is the other half."""
    from sklearn.datasets import load_digits

    x, y = load_digits(return_X_y=True)
    x = (x / 16.0).astype(np.float32)
    rng = np.random.default_rng(0)
    order = rng.permutation(len(y))
    train, op = order[:900], order[900:]
    with torch.random.fork_rng():
        torch.manual_seed(0)
        model = torch.nn.Sequential(
            torch.nn.Linear(64, 32), torch.nn.ReLU(), torch.nn.Linear(32, 10)
        )
        opt = torch.optim.Adam(model.parameters(), lr=1e-2)
        xt, yt = torch.from_numpy(x[train]), torch.from_numpy(y[train])
        for _ in range(60):  # deliberately short: accuracy well below 1
            opt.zero_grad()
            torch.nn.functional.cross_entropy(model(xt), yt).backward()
            opt.step()
    d = tmp_path_factory.mktemp("pile")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # TorchScript is deprecated in 2.13
        torch.jit.save(torch.jit.script(model.eval()), str(d / "model.pt"))
    np.save(d / "inputs.npy", x[op])
    labels = y[op]
    with open(d / "all_labels.csv", "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["row", "label"])
        w.writerows([i, int(v)] for i, v in enumerate(labels))
    code = main(
        [
            "capture",
            "--model",
            str(d / "model.pt"),
            "--inputs",
            str(d / "inputs.npy"),
            "--out",
            str(d / "cap"),
        ]
    )
    assert code == 0
    probs = np.load(d / "cap" / "probabilities.npy")
    return {
        "dir": d,
        "labels": labels,
        "probs": probs,
        "truth": float(np.mean(probs.argmax(1) == labels)),
    }


def _label(sel_dir: Path, labels: np.ndarray, out: Path) -> None:
    """The tester labels exactly the selected rows (here: from the true labels)."""
    with open(sel_dir / "to_label.csv") as fh:
        rows = [int(r["row"]) for r in csv.DictReader(fh)]
    with open(out, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["row", "label"])
        w.writerows([r, int(labels[r])] for r in rows)


def test_capture_outputs(pile: dict) -> None:
    cap = pile["dir"] / "cap"
    acts = np.load(cap / "activations.npy")
    assert acts.dtype == np.float32 and acts.shape == (897, 32)
    assert np.allclose(pile["probs"].sum(axis=1), 1, atol=1e-5)
    meta = json.loads((cap / "capture.json").read_text())
    assert meta["neurons"] == 32 and meta["rows"] == 897
    assert 0.6 < pile["truth"] < 0.99  # a model worth testing


@pytest.mark.parametrize("method", ["srs", "css", "ces"])
def test_select_label_estimate(
    pile: dict, method: str, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    cap = pile["dir"] / "cap"
    sel_dir = tmp_path / method
    code = main(
        [
            "select",
            "--method",
            method,
            "--budget",
            "120",
            "--seed",
            "3",
            "--activations",
            str(cap / "activations.npy"),
            "--probs",
            str(cap / "probabilities.npy"),
            "--out",
            str(sel_dir),
        ]
    )
    assert code == 0
    printed = capsys.readouterr().out
    assert f"{method}: 120 rows selected, 777 rows still unselected" in printed
    doc = json.loads((sel_dir / "selection.json").read_text())
    idx = np.asarray(doc["selection"]["indices"])
    assert idx.size == 120 and np.unique(idx).size == 120
    with open(sel_dir / "to_label.csv") as fh:
        assert [int(r["row"]) for r in csv.DictReader(fh)] == idx.tolist()

    _label(sel_dir, pile["labels"], tmp_path / "labels.csv")
    assert main(["estimate", str(sel_dir), "--labels", str(tmp_path / "labels.csv")]) == 0
    table = capsys.readouterr().out
    est = json.loads((sel_dir / "estimate.json").read_text())["estimate"]
    assert est["n_labelled"] == 120 and est["metric"] == "accuracy"
    assert f"{est['value']:.4f}" in table and "95% interval" in table
    correct = (pile["probs"].argmax(1) == pile["labels"])[idx]
    if method == "css":
        strata = np.asarray(doc["selection"]["strata"])
        sizes = np.asarray(doc["selection"]["stratum_sizes"])
        expected = sum(sizes[h] / sizes.sum() * correct[strata == h].mean() for h in range(3))
    else:
        expected = correct.mean()
    assert est["value"] == pytest.approx(expected)
    assert est["ci_low"] < est["value"] < est["ci_high"]
    assert abs(est["value"] - pile["truth"]) < 0.15


def test_extend_keeps_prefix_and_estimates(pile: dict, tmp_path: Path) -> None:
    cap = pile["dir"] / "cap"
    sel_dir = tmp_path / "ces"
    args = ["--activations", str(cap / "activations.npy"), "--out", str(sel_dir)]
    assert main(["select", "--method", "ces", "--budget", "40", "--seed", "1", *args]) == 0
    first = json.loads((sel_dir / "selection.json").read_text())["selection"]["indices"]
    assert main(["select", "--extend", str(sel_dir), "--budget", "25"]) == 0
    doc = json.loads((sel_dir / "selection.json").read_text())["selection"]
    assert doc["indices"][:40] == first and len(set(doc["indices"])) == 65
    # the same as selecting 65 at once with the same seed (40 - 30 is whole groups of 5)
    once = tmp_path / "once"
    assert (
        main(
            [
                "select",
                "--method",
                "ces",
                "--budget",
                "65",
                "--seed",
                "1",
                "--activations",
                str(cap / "activations.npy"),
                "--out",
                str(once),
            ]
        )
        == 0
    )
    assert (
        json.loads((once / "selection.json").read_text())["selection"]["indices"] == doc["indices"]
    )
    # the capture's probabilities beside the activations were recorded at selection, so the
    # estimate needs no --predictions and equals the one from the capture's predictions
    _label(sel_dir, pile["labels"], tmp_path / "labels.csv")
    assert main(["estimate", str(sel_dir), "--labels", str(tmp_path / "labels.csv")]) == 0
    recorded = json.loads((sel_dir / "estimate.json").read_text())
    sources = json.loads((sel_dir / "selection.json").read_text())["sources"]
    assert sources["probs"]["path"] == str((cap / "probabilities.npy").resolve())
    assert (
        main(
            [
                "estimate",
                str(sel_dir),
                "--labels",
                str(tmp_path / "labels.csv"),
                "--predictions",
                str(cap / "predictions.npy"),
            ]
        )
        == 0
    )
    given = json.loads((sel_dir / "estimate.json").read_text())
    assert given["estimate"]["value"] == recorded["estimate"]["value"]


def test_regression_targets_give_one_minus_mse(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    from sklearn.datasets import load_diabetes

    x, y = load_diabetes(return_X_y=True)
    y = (y - y.mean()) / y.std()
    coef, *_ = np.linalg.lstsq(np.c_[x, np.ones(len(y))], y, rcond=None)
    pred = np.c_[x, np.ones(len(y))] @ coef
    np.save(tmp_path / "pred.npy", pred)
    assert (
        main(
            [
                "select",
                "--method",
                "srs",
                "--budget",
                "60",
                "--population-size",
                str(len(y)),
                "--seed",
                "0",
                "--out",
                str(tmp_path / "s"),
            ]
        )
        == 0
    )
    idx = json.loads((tmp_path / "s" / "selection.json").read_text())["selection"]["indices"]
    with open(tmp_path / "t.csv", "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["row", "target"])
        w.writerows([i, float(y[i])] for i in idx)
    assert (
        main(
            [
                "estimate",
                str(tmp_path / "s"),
                "--labels",
                str(tmp_path / "t.csv"),
                "--predictions",
                str(tmp_path / "pred.npy"),
            ]
        )
        == 0
    )
    est = json.loads((tmp_path / "s" / "estimate.json").read_text())["estimate"]
    assert est["metric"] == "1-MSE" and est["interval"] == "bootstrap-t"
    assert est["value"] == pytest.approx(1 - np.mean((pred[idx] - y[idx]) ** 2))
    assert "1-MSE" in capsys.readouterr().out


# ------------------------------------------------------------------------------ bad input


@pytest.fixture()
def selected(pile: dict, tmp_path: Path) -> Path:
    cap = pile["dir"] / "cap"
    d = tmp_path / "sel"
    assert (
        main(
            [
                "select",
                "--method",
                "srs",
                "--budget",
                "10",
                "--seed",
                "0",
                "--probs",
                str(cap / "probabilities.npy"),
                "--out",
                str(d),
            ]
        )
        == 0
    )
    return d


def _write(path: Path, rows: list[list]) -> Path:
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["row", "label"])
        w.writerows(rows)
    return path


def _selected_rows(d: Path) -> list[int]:
    return json.loads((d / "selection.json").read_text())["selection"]["indices"]


@pytest.mark.parametrize(
    ("case", "message"),
    [
        ("unselected", "that was not selected: row"),
        ("missing", "have no label"),
        ("unknown_class", "is not a class: the model has 10 classes, 0 to 9"),
        ("duplicate", "more than once"),
        ("out_of_range", "is not a row of the pile (rows are 0 to 896)"),
        ("not_integer", "must be an integer"),
    ],
)
def test_bad_labels_are_clear_errors(
    pile: dict,
    selected: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture,
    case: str,
    message: str,
) -> None:
    rows = _selected_rows(selected)
    good = [[r, int(pile["labels"][r])] for r in rows]
    other = next(r for r in range(897) if r not in rows)
    bad = {
        "unselected": [*good, [other, 1]],
        "missing": good[:-1],
        "unknown_class": [*good[:-1], [rows[-1], 10]],
        "duplicate": [*good, good[0]],
        "out_of_range": [*good, [5000, 1]],
        "not_integer": [*good[:-1], [rows[-1], "seven"]],
    }[case]
    capsys.readouterr()
    assert main(["estimate", str(selected), "--labels", str(_write(tmp_path / "l.csv", bad))]) == 2
    err = capsys.readouterr().err
    assert message in err and "--labels" in err
    assert not (selected / "estimate.json").exists()  # nothing half-written


def test_bad_select_inputs(pile: dict, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    cap = pile["dir"] / "cap"
    acts = str(cap / "activations.npy")
    out = str(tmp_path / "o")
    assert (
        main(["select", "--method", "ces", "--budget", "5000", "--activations", acts, "--out", out])
        == 2
    )
    assert "budget must be in [1, 897]" in capsys.readouterr().err
    assert (
        main(["select", "--method", "ces", "--budget", "0", "--activations", acts, "--out", out])
        == 2
    )
    assert "budget" in capsys.readouterr().err
    (tmp_path / "corrupt.npy").write_bytes(b"\x93NUMPY garbage")
    assert (
        main(
            [
                "select",
                "--method",
                "ces",
                "--budget",
                "5",
                "--activations",
                str(tmp_path / "corrupt.npy"),
                "--out",
                out,
            ]
        )
        == 2
    )
    assert "--activations" in capsys.readouterr().err
    nan = np.load(acts)
    nan[17, 3] = np.nan
    np.save(tmp_path / "nan.npy", nan)
    assert (
        main(
            [
                "select",
                "--method",
                "ces",
                "--budget",
                "5",
                "--activations",
                str(tmp_path / "nan.npy"),
                "--out",
                out,
            ]
        )
        == 2
    )
    err = capsys.readouterr().err
    assert "activations must be finite" in err and "row 17" in err
    np.save(tmp_path / "flat.npy", np.zeros(10))
    assert (
        main(
            [
                "select",
                "--method",
                "ces",
                "--budget",
                "5",
                "--activations",
                str(tmp_path / "flat.npy"),
                "--out",
                out,
            ]
        )
        == 2
    )
    assert "2-D" in capsys.readouterr().err
    assert main(["select", "--method", "css", "--budget", "5", "--out", out]) == 2
    assert "--probs is required" in capsys.readouterr().err
    assert not (tmp_path / "o" / "selection.json").exists()


def test_existing_selection_is_not_overwritten(
    selected: Path, capsys: pytest.CaptureFixture
) -> None:
    before = (selected / "selection.json").read_text()
    assert (
        main(
            [
                "select",
                "--method",
                "srs",
                "--budget",
                "3",
                "--population-size",
                "897",
                "--out",
                str(selected),
            ]
        )
        == 2
    )
    assert "--force" in capsys.readouterr().err
    assert (selected / "selection.json").read_text() == before


def test_extend_detects_changed_source(
    pile: dict, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    acts = np.load(pile["dir"] / "cap" / "activations.npy")
    np.save(tmp_path / "a.npy", acts)
    assert (
        main(
            [
                "select",
                "--method",
                "ces",
                "--budget",
                "35",
                "--seed",
                "0",
                "--activations",
                str(tmp_path / "a.npy"),
                "--out",
                str(tmp_path / "s"),
            ]
        )
        == 0
    )
    np.save(tmp_path / "a.npy", acts[::-1].copy())
    assert main(["select", "--extend", str(tmp_path / "s"), "--budget", "5"]) == 2
    assert "changed since the selection was made" in capsys.readouterr().err


def test_help_explains(capsys: pytest.CaptureFixture) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["--help"])
    assert exc.value.code == 0
    out = capsys.readouterr().out
    for word in ("select", "estimate", "capture", "demo", "typical session"):
        assert word in out


SUBCOMMANDS = [
    ["select"],
    ["campaign"],
    ["next"],
    ["label"],
    ["estimate"],
    ["export"],
    ["import"],
    ["report"],
    ["rank"],
    ["capture"],
    ["dependability"],
    ["quality"],
    ["demo"],
    ["study", "operational"],
    ["study", "comparative"],
    ["study", "quality"],
]


@pytest.mark.parametrize("sub", SUBCOMMANDS, ids=" ".join)
def test_every_help_shows_real_defaults_only(capsys: pytest.CaptureFixture, sub: list[str]) -> None:
    """An option not given says nothing, not "(default: None)" after its own default text."""
    with pytest.raises(SystemExit) as exc:
        main([*sub, "--help"])
    assert exc.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith(f"usage: labelwise {' '.join(sub)}")
    assert "(default: None)" not in out and "(default: False)" not in out


def test_demo_end_to_end_and_its_hints(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    out = tmp_path / "demo"
    assert main(["demo", "--budget", "60", "--repeats", "3", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    for method in ("SRS", "CSS", "CES", "CES-Eq8", "Campaign"):
        assert f"  {method} " in printed
    summary = json.loads((out / "demo.json").read_text())
    assert summary["budget"] == 60 and len(summary["spread"]) == 5
    assert all(0 < r["w"] < 5 for r in summary["spread"])
    assert 0.5 < summary["true_accuracy"] < 1
    # the commands the demo suggests work as printed
    assert main(["estimate", str(out / "ces"), "--labels", str(out / "ces" / "labels.csv")]) == 0
    est = json.loads((out / "ces" / "estimate.json").read_text())["estimate"]
    assert est["n_labelled"] == 60
    assert main(["select", "--extend", str(out / "ces"), "--budget", "20"]) == 0
    assert len(_selected_rows(out / "ces")) == 80
    hint = next(line for line in printed.splitlines() if "labelwise campaign" in line)
    assert main(hint.split("labelwise ", 1)[1].split()) == 0
    assert (out / "camp" / "campaign.state.json").exists()


def test_dependability_command(pile: dict, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    d = pile["dir"]
    labels = pile["labels"]
    np.save(tmp_path / "y.npy", labels)
    inputs = np.load(d / "inputs.npy")
    ink = np.where(inputs.mean(axis=1) > np.median(inputs.mean(axis=1)), "heavy", "light")
    parity = np.where(labels % 2 == 0, "even", "odd")
    with open(tmp_path / "scen.csv", "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["ink", "parity"])
        w.writerows(zip(ink, parity, strict=True))
    (tmp_path / "spec.json").write_text(
        json.dumps({"ink": ["light", "heavy", "smudged"], "parity": ["even", "odd"]})
    )
    severity = (np.ones((10, 10)) - np.eye(10)).tolist()
    (tmp_path / "sev.json").write_text(json.dumps({"severity": severity}))
    out = tmp_path / "dep"
    code = main(
        [
            "dependability",
            "--model",
            str(d / "model.pt"),
            "--inputs",
            str(d / "inputs.npy"),
            "--labels",
            str(tmp_path / "y.npy"),
            "--scenarios",
            str(tmp_path / "scen.csv"),
            "--spec",
            str(tmp_path / "spec.json"),
            "--severity",
            str(tmp_path / "sev.json"),
            "--perturb",
            "fgsm,noise,brightness",
            "--eps",
            "0.05",
            "--out",
            str(out),
        ]
    )
    assert code == 0
    printed = capsys.readouterr().out
    doc = json.loads((out / "dependability.json").read_text())
    values = {r["metric"]: r["value"] for r in doc["summary"]}
    assert values["accuracy"] == pytest.approx(pile["truth"])
    assert values["scenario 2-projection coverage"] == pytest.approx(4 / 6)  # no "smudged"
    assert values["weighted error (normalised)"] == pytest.approx(1 - pile["truth"])
    assert 0 < values["neuron 2-activation coverage"] <= 1
    assert "neuron 2-activation coverage" in printed and (out / "patterns.png").exists()
    assert 0 <= values["confidence loss: average"] <= values["confidence loss: top 10% mean"] <= 1
    used = {t["name"] for t in doc["details"]["confidence_loss"]["transformers"]}
    assert used == {"fgsm", "noise", "brightness"}
    assert (out / "confidence_loss.png").exists()
    # labels that do not fit are a clear error
    np.save(tmp_path / "short.npy", labels[:-1])
    assert (
        main(
            [
                "dependability",
                "--model",
                str(d / "model.pt"),
                "--inputs",
                str(d / "inputs.npy"),
                "--labels",
                str(tmp_path / "short.npy"),
                "--out",
                str(out),
            ]
        )
        == 2
    )
    assert "--labels must hold 897 classes" in capsys.readouterr().err


def test_python_dash_m_labelwise_is_the_command_line() -> None:
    import subprocess
    import sys

    import labelwise

    done = subprocess.run(
        [sys.executable, "-m", "labelwise", "--version"], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert labelwise.__version__ in done.stdout


def test_study_operational_rejects_too_few_repetitions(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    out = tmp_path / "study"
    assert main(["study", "operational", "--repetitions", "1", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "--repetitions must be at least 2, got 1" in err
    assert "Traceback" not in err
    assert not out.exists()

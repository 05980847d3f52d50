"""The method registry, the workspace, and the CLI defects of issue 10 (part 6)."""

from __future__ import annotations

import csv
import inspect
import json
import re
import warnings
from pathlib import Path

import numpy as np
import pytest

import labelwise as lw
from labelwise import registry
from labelwise.cli import main
from labelwise.experiments.study import MethodSpec, Population, run_study
from labelwise.workspace import Workspace

RNG = np.random.default_rng(0)
N = 300
ACT = RNG.normal(size=(N, 6)).astype(np.float32)
LOGITS = RNG.normal(size=(N, 4)) * 3
PROBS = np.exp(LOGITS) / np.exp(LOGITS).sum(axis=1, keepdims=True)
PREDS = np.stack([np.clip(PROBS + RNG.uniform(0, 0.3, PROBS.shape), 0, None) for _ in range(4)])
PREDS /= PREDS.sum(axis=2, keepdims=True)
LABELS = RNG.integers(0, 4, size=N)
DATA = {None: N, "activations": ACT, "probs": PROBS, "predictions": PREDS}


# ---------------------------------------------------------------------------- registry


@pytest.mark.parametrize("name", registry.names())
def test_every_method_selects_extends_and_estimates_or_ranks(name: str) -> None:
    m = registry.get(name)
    data = DATA[m.data]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", lw.DegenerateDataWarning)
        sel = m.run(data, 40, rng=1)
        more = lw.extend(sel, data, 10)
    assert sel.method == name and sel.budget == 40 and len(set(sel.indices.tolist())) == 40
    assert more.budget == 50 and np.array_equal(more.indices[:40], sel.indices)
    if m.purpose == "accuracy":
        scores = (PROBS.argmax(axis=1) == LABELS)[more.indices].astype(float)
        est = lw.estimate(more, scores)
        assert 0 <= est.ci_low <= est.value <= est.ci_high <= 1 and est.method == name
    else:
        with pytest.raises(lw.LabelwiseError, match="ranking method"):
            lw.estimate(more, np.ones(50))
        ranking = lw.rank_models(PREDS, LABELS[more.indices], rows=more.indices, rng=0)
        assert sorted(np.asarray(ranking.order).tolist()) == [0, 1, 2, 3]
        assert ranking.n_labelled == 50


#: per method: data without what the method declares it needs, and the words of its
#: declared ``needs`` that the select function's error must name
WITHOUT = {
    "srs": (None, "one row per input"),
    "css": (LOGITS, "probabilities"),  # logits, not probabilities
    "ces": (ACT[:, 0], "activations"),  # one value per row, not a layer's activations
    "sds": (PROBS[:, 0], "predictions"),  # one model's confidences
    "ddg": (PREDS.argmax(axis=2), "probabilities"),  # class labels of several models
    "rdg": (PREDS.argmax(axis=2), "probabilities"),
    "cppi": (PROBS[:, 0], "predictions"),
}


def test_every_method_is_checked_against_its_declared_needs() -> None:
    assert set(WITHOUT) == set(registry.names())


@pytest.mark.parametrize("name", registry.names())
def test_declared_needs_are_what_the_select_function_requires(name: str) -> None:
    m = registry.get(name)
    data, named = WITHOUT[name]
    assert named in m.needs
    with pytest.raises(lw.LabelwiseError) as caught:
        m.run(data, 40, rng=1)
    assert named in str(caught.value)
    if m.data == "predictions":  # class labels of several models: taken if declared
        labels = PREDS.argmax(axis=2)
        if "(M, N) classes" in m.needs:
            assert m.run(labels, 40, rng=1).budget == 40
        else:
            with pytest.raises(lw.LabelwiseError, match="probabilities"):
                m.run(labels, 40, rng=1)


def test_needs_are_declared_on_the_entry_or_follow_the_data_key() -> None:
    import dataclasses

    srs = registry.get("srs")
    assert dataclasses.replace(srs, name="x", requires="a count").needs == "a count"
    assert dataclasses.replace(srs, name="x", data="probs").needs == registry.NEEDS["probs"]
    assert registry.get("ddg").needs == "predictions of several models: (M, N, C) probabilities"


@pytest.mark.parametrize("name", registry.names())
def test_defaults_come_from_the_signature_and_show_in_select_help(
    name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    m = registry.get(name)
    sig = inspect.signature(m.select)
    with pytest.raises(SystemExit):
        main(["select", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert re.search(rf"\b{name}\b\s+{re.escape(m.title)}", text)
    for pname, param in m.params.items():
        default = sig.parameters[pname].default
        assert m.defaults()[pname] == default
        flag = param.flag or "--" + pname.replace("_", "-")
        shown = param.constraint.format(default)
        pattern = rf"{flag} \S+ {re.escape(param.help)} \[[a-z, ]*\b{name}\b[a-z, ]*\] "
        assert re.search(pattern + rf"\(default: {re.escape(shown)}\)", text), (flag, shown)


def test_declared_constraints_validate_with_one_message_style() -> None:
    with pytest.raises(lw.LabelwiseError, match=r"n_sections must be an integer in \[1, 255\]"):
        lw.ces_select(ACT, 40, n_sections=0)
    with pytest.raises(lw.LabelwiseError, match="objective must be one of"):
        lw.ces_select(ACT, 40, objective="nope")
    with pytest.raises(lw.LabelwiseError, match=r"top_fraction must be a number in \(0, 0.5\]"):
        lw.sds_select(PREDS, 10, top_fraction=0.6)
    with pytest.raises(lw.LabelwiseError, match="combine must be one of"):
        lw.ddg_select(PROBS, 10, combine="median")


def test_rng_state_is_the_state_after_the_draws_for_every_method() -> None:
    for name in ("srs", "css", "ces", "sds", "rdg"):
        m = registry.get(name)
        gen = np.random.default_rng(5)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", lw.DegenerateDataWarning)
            sel = m.run(DATA[m.data], 40, rng=gen)
        assert sel.rng_state == gen.bit_generator.state, name
    # select n + extend m == select n + m where it held before (keys replayed)
    for name in ("srs", "sds", "rdg"):
        m = registry.get(name)
        a = lw.extend(m.run(DATA[m.data], 30, rng=9), DATA[m.data], 20)
        assert np.array_equal(a.indices, m.run(DATA[m.data], 50, rng=9).indices)


def test_workspace_state_round_trip(tmp_path: Path) -> None:
    ws = Workspace(tmp_path / "w")
    ws.write_state("campaign", {"step": 3, "history": [0.5, None]})
    ws.write_state("arrays", {"keys": np.arange(4.0)})
    assert ws.read_state("campaign") == {"step": 3, "history": [0.5, None]}
    assert np.array_equal(ws.read_state("arrays")["keys"], np.arange(4.0))
    assert ws.read_state("missing") is None
    with pytest.raises(lw.LabelwiseError, match="name must be"):
        ws.write_state("../x", {})


# ----------------------------------------------------------------------- study clients


def test_study_selections_are_the_public_samplers() -> None:
    pop = Population("p", "m", "o", (PROBS.argmax(1) == LABELS).astype(float), ACT, PROBS)
    for kind, select in (
        ("srs", lambda n, g: lw.srs_select(N, n, rng=g)),
        ("css", lambda n, g: lw.css_select(PROBS, n, rng=g)),
    ):
        got = MethodSpec(kind.upper(), kind).selections(pop, (35, 60), np.random.default_rng(7))
        gen = np.random.default_rng(7)
        if kind == "srs":
            want = lw.srs_select(N, 60, rng=7)
            assert np.array_equal(got[0].indices, lw.srs_select(N, 35, rng=7).indices)
            assert np.array_equal(got[1].indices, want.indices)
        else:
            for sel, n in zip(got, (35, 60), strict=True):
                assert np.array_equal(sel.indices, select(n, gen).indices)
    res = run_study(pop, [MethodSpec("SRS", "srs")], sizes=(35,), repetitions=2, progress=False)
    gen = np.random.default_rng(np.random.SeedSequence([0, 0, 1]))
    sel = lw.srs_select(N, 35, rng=gen)
    assert res.estimates["SRS"][1, 0] == lw.estimate(sel, pop.scores[sel.indices]).value


# --------------------------------------------------------------------------- CLI defects


@pytest.fixture()
def pile(tmp_path: Path) -> dict[str, Path]:
    np.save(tmp_path / "act.npy", ACT)
    np.save(tmp_path / "probs.npy", PROBS)
    np.save(tmp_path / "logits.npy", LOGITS)
    np.save(tmp_path / "preds.npy", PREDS)
    return {"dir": tmp_path}


def _fails(argv: list[str], capsys: pytest.CaptureFixture[str], *words: str) -> None:
    code = main(argv)
    err = capsys.readouterr().err
    assert code != 0 and "labelwise: error:" in err and "Traceback" not in err
    for w in words:
        assert w in err


@pytest.mark.parametrize(
    "argv",
    [
        ["select", "--method", "srs", "--budget", "5", "--population-size", "50", "--out", "o"],
        ["rank", "dir", "--labels", "l.csv"],
        ["demo"],
        ["study", "operational", "--quick"],
        ["study", "comparative", "--quick"],
        ["study", "quality", "--quick"],
        ["dependability", "--model", "m", "--inputs", "i", "--labels", "l", "--out", "o"],
    ],
)
def test_negative_seed_is_an_error_everywhere(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    _fails([*argv, "--seed", "-1"], capsys, "--seed must be a non-negative integer, got -1")


def _select(pile: dict[str, Path], method: str, budget: int) -> Path:
    out = pile["dir"] / method
    data = {
        "css": ["--probs", str(pile["dir"] / "probs.npy")],
        "ces": ["--activations", str(pile["dir"] / "act.npy")],
    }.get(method, ["--population-size", str(N)])
    argv = ["select", "--method", method, "--budget", str(budget), "--seed", "1"]
    assert main([*argv, *data, "--out", str(out)]) == 0
    return out


def _labels(path: Path, header: list[str], rows: list[list[object]], bom: bool = False) -> Path:
    with open(path, "w", encoding="utf-8-sig" if bom else "utf-8", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(header)
        w.writerows(rows)
    return path


def test_regression_estimate_with_one_label_says_unbounded(
    pile: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    out = _select(pile, "srs", 1)
    np.save(pile["dir"] / "outputs.npy", np.linspace(0, 1, N))
    row = json.loads((out / "selection.json").read_text())["selection"]["indices"][0]
    lab = _labels(pile["dir"] / "t.csv", ["row", "target"], [[row, 0.5]])
    capsys.readouterr()
    code = main(
        [
            "estimate",
            str(out),
            "--labels",
            str(lab),
            "--predictions",
            str(pile["dir"] / "outputs.npy"),
        ]
    )
    printed = capsys.readouterr()
    assert code == 0 and "Traceback" not in printed.err
    assert "unbounded" in printed.out and "RMSE" in printed.out
    doc = json.loads((out / "estimate.json").read_text())
    assert doc["estimate"]["ci_low"] is None and doc["estimate"]["ci_high"] is None


def test_regression_on_unscaled_targets_reports_mse_and_warns(
    pile: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    out = _select(pile, "srs", 20)
    np.save(pile["dir"] / "outputs.npy", np.zeros(N))
    rows = json.loads((out / "selection.json").read_text())["selection"]["indices"]
    targets = [100.0 + i for i in range(20)]
    lab = _labels(
        pile["dir"] / "t.csv",
        ["row", "target"],
        [[r, t] for r, t in zip(rows, targets, strict=True)],
    )
    capsys.readouterr()
    assert (
        main(
            [
                "estimate",
                str(out),
                "--labels",
                str(lab),
                "--predictions",
                str(pile["dir"] / "outputs.npy"),
            ]
        )
        == 0
    )
    printed = capsys.readouterr()
    mse = float(np.mean(np.square(targets)))
    doc = json.loads((out / "estimate.json").read_text())
    assert doc["regression"]["mse"] == pytest.approx(mse)
    assert doc["regression"]["rmse"] == pytest.approx(np.sqrt(mse))
    assert f"{mse:.4g}" in printed.out and "RMSE" in printed.out
    assert "scale the targets" in printed.err


@pytest.mark.parametrize("where", ["select", "estimate"])
def test_logits_given_as_probs_are_rejected(
    where: str, pile: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    if where == "select":
        argv = [
            "select",
            "--method",
            "css",
            "--budget",
            "30",
            "--probs",
            str(pile["dir"] / "logits.npy"),
            "--out",
            str(pile["dir"] / "o"),
        ]
    else:
        out = _select(pile, "srs", 10)
        rows = json.loads((out / "selection.json").read_text())["selection"]["indices"]
        lab = _labels(pile["dir"] / "l.csv", ["row", "label"], [[r, 0] for r in rows])
        argv = [
            "estimate",
            str(out),
            "--labels",
            str(lab),
            "--predictions",
            str(pile["dir"] / "logits.npy"),
        ]
    _fails(argv, capsys, "probabilities", "labelwise capture --head softmax")


def test_extend_names_the_new_rows_and_marks_them(
    pile: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    out = _select(pile, "ces", 40)
    old = json.loads((out / "selection.json").read_text())["selection"]["indices"]
    capsys.readouterr()
    assert main(["select", "--extend", str(out), "--budget", "10"]) == 0
    printed = capsys.readouterr().out
    with open(out / "to_label.csv", newline="") as fh:
        table = list(csv.DictReader(fh))
    new = [int(r["row"]) for r in table if r["new"] == "1"]
    assert len(new) == 10 and [int(r["row"]) for r in table if r["new"] == "0"] == old
    assert f"new rows to label (10): {', '.join(map(str, new[:10]))}" in printed
    assert f"{N - 50:,} rows still unselected" in printed


def test_labels_csv_with_a_byte_order_mark_and_the_pile_wording(
    pile: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    out = _select(pile, "srs", 30)
    rows = json.loads((out / "selection.json").read_text())["selection"]["indices"]
    lab = _labels(
        pile["dir"] / "l.csv", ["row", "label"], [[r, int(LABELS[r])] for r in rows], bom=True
    )
    assert (pile["dir"] / "l.csv").read_bytes().startswith(b"\xef\xbb\xbf")
    capsys.readouterr()
    assert (
        main(
            [
                "estimate",
                str(out),
                "--labels",
                str(lab),
                "--predictions",
                str(pile["dir"] / "probs.npy"),
            ]
        )
        == 0
    )
    assert f"from 30 labelled rows of a pile of {N:,}" in capsys.readouterr().out


def test_a_tuning_option_of_another_method_is_an_error(
    pile: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    _fails(
        [
            "select",
            "--method",
            "css",
            "--budget",
            "30",
            "--probs",
            str(pile["dir"] / "probs.npy"),
            "--sections",
            "10",
            "--out",
            str(pile["dir"] / "o"),
        ],
        capsys,
        "--sections applies to ces, not css",
    )
    _fails(
        [
            "select",
            "--method",
            "ces",
            "--budget",
            "30",
            "--activations",
            str(pile["dir"] / "act.npy"),
            "--sections",
            "0",
            "--out",
            str(pile["dir"] / "o"),
        ],
        capsys,
        "--sections must be an integer in [1, 255], got 0",
    )


def test_integer_valued_float_labels_are_classes_in_degradation() -> None:
    from labelwise.dependability.degradation import _correctness

    probs = np.array([[0.9, 0.1], [0.2, 0.8]])
    assert _correctness(np.array([0.0, 0.0]), probs).tolist() == [1.0, 0.0]

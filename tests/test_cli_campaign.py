"""``labelwise campaign | next | estimate`` end to end on small synthetic piles with known truth."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pytest

import labelwise as lw
from labelwise.cli import main
from synthetic import classifier_pile

N, C = 1200, 4


@pytest.fixture()
def pile(tmp_path: Path) -> dict:
    """Activations, (N, C) softmax probabilities and the true labels of a pile (~70 % acc.)."""
    rng = np.random.default_rng(0)
    y, x, p = classifier_pile(rng, N, C, 8)
    np.save(tmp_path / "acts.npy", x.astype(np.float32))
    np.save(tmp_path / "probs.npy", p.astype(np.float32))
    return {"dir": tmp_path, "y": y, "acts": x.astype(np.float32), "probs": p.astype(np.float32)}


def _run(argv: list[str], capsys: pytest.CaptureFixture) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def _start(pile: dict, capsys: pytest.CaptureFixture, *extra: str) -> Path:
    d = pile["dir"] / "camp"
    code, out, err = _run(
        [
            "campaign",
            d,
            "--activations",
            pile["dir"] / "acts.npy",
            "--probs",
            pile["dir"] / "probs.npy",
            "--seed",
            "3",
            *extra,
        ],
        capsys,
    )
    assert code == 0, err
    assert "campaign on a pile of 1,200 rows (seed 3)" in out
    return d


def _to_label(d: Path) -> list[dict[str, int]]:
    with open(d / "to_label.csv", newline="") as fh:
        return [{k: int(v) for k, v in r.items()} for r in csv.DictReader(fh)]


def _write_labels(path: Path, rows: list[int], labels: list[int], *, bom: bool = False) -> Path:
    with open(path, "w", newline="", encoding="utf-8-sig" if bom else "utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(["row", "label"])
        w.writerows([r, v] for r, v in zip(rows, labels, strict=True))
    return path


def _state(d: Path) -> tuple[bytes, bytes]:
    return (d / "campaign.state.json").read_bytes(), (d / "to_label.csv").read_bytes()


def test_campaign_next_estimate_in_parts_matches_the_api(
    pile: dict, capsys: pytest.CaptureFixture
) -> None:
    d = _start(pile, capsys)
    y = pile["y"]
    code, out, err = _run(["next", d, "--batch", 20], capsys)
    assert code == 0, err
    first = [r["row"] for r in _to_label(d)]
    assert len(first) == 20 == len(set(first))
    assert all(r["new"] == 1 for r in _to_label(d))
    assert f"new rows to label (20): {', '.join(map(str, first))}" in out

    # part 1 from a spreadsheet (BOM), then all 20 in reverse order (8 again, same labels)
    part1 = _write_labels(d.parent / "l1.csv", first[:8], [int(y[r]) for r in first[:8]], bom=True)
    code, out, err = _run(["estimate", d, "--labels", part1], capsys)
    assert code == 0, err
    assert "estimate from 8 labelled rows" in out and "12 awaiting labels" in out
    rest = first[::-1]
    part2 = _write_labels(d.parent / "l2.csv", rest, [int(y[r]) for r in rest])
    code, out, err = _run(["estimate", d, "--labels", part2], capsys)
    assert code == 0, err
    assert "12 new labels; 20 labelled, 0 awaiting labels" in out
    assert "these 20 labels are worth about" in out and "random ones" in out

    code, out, err = _run(["next", d, "--batch", 30], capsys)
    assert code == 0, err
    table = _to_label(d)
    assert [r["row"] for r in table[:20]] == first  # resumed: earlier rows kept, in order
    assert [r["new"] for r in table] == [0] * 20 + [1] * 30
    second = [r["row"] for r in table[20:]]
    assert not set(second) & set(first)
    allrows = first + second
    part3 = _write_labels(d.parent / "l3.csv", allrows, [int(y[r]) for r in allrows])
    code, out, err = _run(["estimate", d, "--labels", part3, "--json"], capsys)
    assert code == 0, err
    doc = json.loads(out)
    assert doc["n_labelled"] == 50 and doc["campaign"]["new_labels"] == 30
    assert doc["campaign"]["n_pending"] == 0 and doc["method"] == "model-assisted"
    assert json.loads((d / "estimate.json").read_text())["value"] == doc["value"]

    # the same campaign through the public API, seeded alike, gives the same numbers
    camp = lw.Campaign(pile["acts"], pile["probs"], rng=3)
    correct = (pile["probs"].argmax(axis=1) == y).astype(float)
    rows = camp.propose(20)
    assert rows.tolist() == first
    camp.record(rows, correct[rows])
    rows = camp.propose(30)
    assert rows.tolist() == second
    camp.record(rows, correct[rows])
    est = camp.estimate()
    assert doc["value"] == pytest.approx(est.value)
    assert [doc["ci_low"], doc["ci_high"]] == pytest.approx([est.ci_low, est.ci_high])
    assert doc["effective_sample_size"] == pytest.approx(est.effective_sample_size)
    assert abs(doc["value"] - correct.mean()) < 4 * doc["std_error"]


def _bad_row_file(d: Path, y: np.ndarray, case: str) -> Path:
    rows = [r["row"] for r in _to_label(d)]
    if case == "unproposed":
        other = next(r for r in range(N) if r not in rows)
        return _write_labels(d.parent / "bad.csv", [rows[0], other], [int(y[rows[0]]), 0])
    if case == "changed":
        return _write_labels(d.parent / "bad.csv", [rows[1]], [(int(y[rows[1]]) + 1) % C])
    if case == "class":
        return _write_labels(d.parent / "bad.csv", [rows[7]], [C])
    path = d.parent / "bad.csv"
    path.write_text(f"row,target\n{rows[7]},0.5\n")
    return path


@pytest.mark.parametrize(
    ("case", "message"),
    [
        ("unproposed", "never proposed by this campaign"),
        ("changed", "already recorded with another label"),
        ("class", "line 2: label '4' is not a class: the model has 4 classes"),
        ("target", "every part must use the same column"),
    ],
)
def test_bad_labels_are_errors_and_leave_the_state(
    pile: dict, capsys: pytest.CaptureFixture, case: str, message: str
) -> None:
    d = _start(pile, capsys)
    y = pile["y"]
    assert _run(["next", d, "--batch", 10], capsys)[0] == 0
    rows = [r["row"] for r in _to_label(d)]
    good = _write_labels(d.parent / "good.csv", rows[:5], [int(y[r]) for r in rows[:5]])
    assert _run(["estimate", d, "--labels", good], capsys)[0] == 0
    before = _state(d)
    code, out, err = _run(["estimate", d, "--labels", _bad_row_file(d, y, case)], capsys)
    assert code != 0 and out == ""
    assert err.startswith("labelwise: error:") and message in err and "Traceback" not in err
    assert _state(d) == before
    # and the campaign goes on from where it was
    code, out, err = _run(["estimate", d, "--labels", good], capsys)
    assert code == 0 and "0 new labels; 5 labelled" in out


def test_bad_inputs_are_errors(pile: dict, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    acts, probs = tmp_path / "acts.npy", tmp_path / "probs.npy"
    nan = pile["acts"].copy()
    nan[7, 2] = np.nan
    np.save(tmp_path / "nan.npy", nan)
    np.save(tmp_path / "logits.npy", np.log(pile["probs"]))
    np.save(tmp_path / "short.npy", pile["probs"][:-1])
    cases = [
        (["campaign", tmp_path / "a", "--activations", tmp_path / "nan.npy"], "--activations"),
        (
            ["campaign", tmp_path / "b", "--activations", acts, "--probs", tmp_path / "logits.npy"],
            "probabilities in [0, 1]",
        ),
        (
            ["campaign", tmp_path / "c", "--activations", acts, "--probs", tmp_path / "short.npy"],
            "one row per --activations row (1200)",
        ),
        (["next", tmp_path / "nothing", "--batch", 5], "holds no campaign"),
        (["estimate", tmp_path / "nothing", "--labels", tmp_path / "x.csv"], "does not exist"),
    ]
    for argv, message in cases:
        code, out, err = _run(argv, capsys)
        assert out == ""
        assert code != 0, argv
        assert err.startswith("labelwise: error:") and message in err, (argv, err)
        assert "Traceback" not in err
    assert not (tmp_path / "a" / "campaign.state.json").exists()
    d = _start(pile, capsys)
    assert _run(["next", d, "--batch", 5], capsys)[0] == 0
    before = _state(d)
    for batch, message in (("-3", "--batch must be >= 1"), ("5000", "at most")):
        code, _, err = _run(["next", d, "--batch", batch], capsys)
        assert code != 0 and err.startswith("labelwise: error:") and message in err
        assert _state(d) == before
    code, _, err = _run(
        ["campaign", d, "--activations", acts, "--probs", probs, "--seed", "1"], capsys
    )
    assert code != 0 and "already holds a campaign; to label more of it: labelwise next" in err
    assert _state(d) == before
    np.save(acts, pile["acts"][::-1].copy())  # the recorded source changed under the campaign
    code, _, err = _run(["next", d, "--batch", 5], capsys)
    assert code != 0 and "changed since the campaign was made (sha256 differs)" in err
    assert _state(d) == before


def test_selection_and_campaign_directories_stay_apart(
    pile: dict, capsys: pytest.CaptureFixture
) -> None:
    acts = pile["dir"] / "acts.npy"
    sel = pile["dir"] / "sel"
    code, _, err = _run(
        ["select", "--method", "srs", "--budget", 10, "--activations", acts, "--out", sel], capsys
    )
    assert code == 0, err
    code, _, err = _run(["next", sel, "--batch", 5], capsys)
    assert code != 0 and "holds no campaign (it holds a selection" in err
    code, _, err = _run(["campaign", sel, "--activations", acts, "--force"], capsys)
    assert code != 0 and "already holds a selection; a campaign needs its own directory" in err
    rows = [r["row"] for r in _to_label(sel)]
    labels = _write_labels(pile["dir"] / "s.csv", rows, [int(pile["y"][r]) for r in rows])
    code, _, err = _run(["estimate", sel, "--labels", labels, "--until-halfwidth", "0.1"], capsys)
    assert code != 0 and "--until-halfwidth applies to campaigns" in err
    code, out, err = _run(
        ["estimate", sel, "--labels", labels, "--predictions", pile["dir"] / "probs.npy"], capsys
    )
    assert code == 0 and "SRS estimate from 10 labelled rows" in out  # unchanged path


def test_until_halfwidth_says_whether_to_stop(pile: dict, capsys: pytest.CaptureFixture) -> None:
    d = _start(pile, capsys, "--method", "stratified")
    y = pile["y"]
    assert _run(["next", d, "--batch", 60], capsys)[0] == 0
    rows = [r["row"] for r in _to_label(d)]
    labels = _write_labels(d.parent / "l.csv", rows, [int(y[r]) for r in rows])
    code, out, err = _run(["estimate", d, "--labels", labels, "--until-halfwidth", 0.02], capsys)
    assert code == 0, err
    assert "anytime-valid 95% interval" in out and "confidence sequence" in out
    assert "CONTINUE: the half-width" in out and f"labelwise next {d}" in out
    code, out, err = _run(
        ["estimate", d, "--labels", labels, "--until-halfwidth", 0.99, "--json"], capsys
    )
    doc = json.loads(out)["anytime"]
    assert doc["stop"] is True and doc["halfwidth"] <= 0.99 and doc["until_halfwidth"] == 0.99
    assert doc["interval"].endswith("(anytime)")  # betting (srs) or asymptotic (designs)
    camp = lw.Campaign(pile["acts"], pile["probs"], method="stratified", rng=3)
    r = camp.propose(60)
    camp.record(r, (pile["probs"][r].argmax(axis=1) == y[r]).astype(float))
    any_ = camp.estimate(anytime=True)
    assert [doc["ci_low"], doc["ci_high"]] == pytest.approx([any_.ci_low, any_.ci_high])
    code, out, err = _run(["estimate", d, "--labels", labels, "--until-halfwidth", 0.99], capsys)
    assert "STOP: the half-width" in out
    # 'active' has no anytime interval: a clear error before anything is recorded
    a = pile["dir"] / "active"
    acts, probs = pile["dir"] / "acts.npy", pile["dir"] / "probs.npy"
    args = ["campaign", a, "--activations", acts, "--probs", probs, "--method", "active"]
    assert _run(args, capsys)[0] == 0
    assert _run(["next", a, "--batch", 10], capsys)[0] == 0
    before = _state(a)
    rows = [r["row"] for r in _to_label(a)]
    labels = _write_labels(a.parent / "la.csv", rows, [int(y[r]) for r in rows])
    code, _, err = _run(["estimate", a, "--labels", labels, "--until-halfwidth", 0.1], capsys)
    assert code != 0 and "method 'active' does not have" in err
    assert _state(a) == before


def test_exact_decides_by_the_exact_betting_sequence(
    pile: dict, capsys: pytest.CaptureFixture
) -> None:
    """--exact: --until-halfwidth decides by Campaign.estimate(anytime="exact"), the product
    of the strata's betting capitals, not by the asymptotic sequence; without
    --until-halfwidth, or on a selection, it is an error that records nothing."""
    d = _start(pile, capsys, "--method", "stratified")
    y = pile["y"]
    assert _run(["next", d, "--batch", 60], capsys)[0] == 0
    rows = [r["row"] for r in _to_label(d)]
    labels = _write_labels(d.parent / "l.csv", rows, [int(y[r]) for r in rows])
    before = _state(d)
    code, _, err = _run(["estimate", d, "--labels", labels, "--exact"], capsys)
    assert code != 0 and "give --until-halfwidth H too" in err
    assert _state(d) == before
    argv = ["estimate", d, "--labels", labels, "--until-halfwidth", 0.5, "--exact", "--json"]
    code, out, err = _run(argv, capsys)
    assert code == 0, err
    doc = json.loads(out)["anytime"]
    assert doc["interval"] == "betting-cs (anytime)"
    camp = lw.Campaign(pile["acts"], pile["probs"], method="stratified", rng=3)
    r = camp.propose(60)
    camp.record(r, (pile["probs"][r].argmax(axis=1) == y[r]).astype(float))
    exact, asym = camp.estimate(anytime="exact"), camp.estimate(anytime=True)
    assert [doc["ci_low"], doc["ci_high"]] == pytest.approx([exact.ci_low, exact.ci_high])
    assert (exact.ci_low, exact.ci_high) != (asym.ci_low, asym.ci_high)
    sel = pile["dir"] / "sel-exact"
    acts = pile["dir"] / "acts.npy"
    argv = ["select", "--method", "srs", "--budget", 10, "--activations", acts, "--out", sel]
    assert _run(argv, capsys)[0] == 0
    rows = [r["row"] for r in _to_label(sel)]
    labels = _write_labels(pile["dir"] / "s.csv", rows, [int(y[r]) for r in rows])
    code, _, err = _run(["estimate", sel, "--labels", labels, "--exact"], capsys)
    assert code != 0 and "--exact applies to campaigns" in err


def test_until_halfwidth_stops_when_the_whole_pile_is_labelled(
    pile: dict, capsys: pytest.CaptureFixture
) -> None:
    """With every row of the pile labelled, --until-halfwidth still said "CONTINUE: ...
    label more (labelwise next DIR)", which then refuses (no row left); it now says STOP."""
    small = pile["dir"] / "small"
    small.mkdir()
    np.save(small / "acts.npy", pile["acts"][:40])
    np.save(small / "probs.npy", pile["probs"][:40])
    d = small / "camp"
    start = ["campaign", d, "--activations", small / "acts.npy", "--probs",
             small / "probs.npy", "--seed", "0"]  # fmt: skip
    assert _run(start, capsys)[0] == 0
    assert _run(["next", d, "--batch", 40], capsys)[0] == 0
    rows = [r["row"] for r in _to_label(d)]
    labels = _write_labels(small / "l.csv", rows, [int(pile["y"][r]) for r in rows])
    code, out, err = _run(["estimate", d, "--labels", labels, "--until-halfwidth", 0.01], capsys)
    assert code == 0, err
    assert "STOP: every row of the pile is labelled" in out and "CONTINUE" not in out
    code, out, _ = _run(
        ["estimate", d, "--labels", labels, "--until-halfwidth", 0.01, "--json"], capsys
    )
    doc = json.loads(out)["anytime"]
    assert doc["stop"] is True and doc["whole_pile"] is True
    assert _run(["next", d], capsys)[0] == 2  # indeed nothing left to propose


def test_regression_campaign_scores_targets(
    pile: dict, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    rng = np.random.default_rng(5)
    target = rng.random(N)
    pred = np.clip(target + rng.normal(scale=0.2, size=N), 0, 1)
    np.save(tmp_path / "pred.npy", pred)
    d = tmp_path / "reg"
    argv = ["campaign", d, "--activations", tmp_path / "acts.npy", "--seed", 1]
    assert _run(argv, capsys)[0] == 0
    assert _run(["next", d, "--batch", 40], capsys)[0] == 0
    rows = [r["row"] for r in _to_label(d)]
    lab = tmp_path / "t.csv"
    lab.write_text("row,target\n" + "".join(f"{r},{float(target[r])!r}\n" for r in rows))
    code, _, err = _run(["estimate", d, "--labels", lab], capsys)
    assert code != 0 and "--predictions is required" in err
    code, out, err = _run(
        ["estimate", d, "--labels", lab, "--predictions", tmp_path / "pred.npy", "--json"], capsys
    )
    assert code == 0, err
    doc = json.loads(out)
    assert doc["metric"] == "1-MSE" and "rmse" in doc["regression"]
    camp = lw.Campaign(pile["acts"], None, rng=1)
    r = camp.propose(40)
    camp.record(r, 1 - (pred[r] - target[r]) ** 2)
    assert doc["value"] == pytest.approx(camp.estimate().value)
    # later parts reuse the recorded predictions; a different file is refused
    np.save(tmp_path / "other.npy", pred[::-1].copy())
    code, _, err = _run(
        ["estimate", d, "--labels", lab, "--predictions", tmp_path / "other.npy"], capsys
    )
    assert code != 0 and "differs from the file recorded" in err
    assert _run(["estimate", d, "--labels", lab], capsys)[0] == 0


def test_help_explains(capsys: pytest.CaptureFixture) -> None:
    for cmd in ("campaign", "next", "estimate"):
        with pytest.raises(SystemExit):
            main([cmd, "--help"])
        out = capsys.readouterr().out
        assert "campaign" in out
    with pytest.raises(SystemExit):
        main(["--help"])
    assert "labelwise next camp --batch 20" in capsys.readouterr().out


def test_a_closed_pipe_ends_quietly(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """`labelwise ... | head -1`: the reader has gone; no BrokenPipeError traceback."""
    import os
    import sys

    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader left before the CLI wrote anything
    stream = os.fdopen(write_end, "w", buffering=1)
    monkeypatch.setattr(sys, "stdout", stream)
    try:
        argv = ["select", "--method", "srs", "--budget", "3", "--population-size", "10"]
        assert main([*argv, "--seed", "0", "--out", str(tmp_path / "sel")]) == 1
    finally:
        stream.close()  # flushes what is left into /dev/null, where the handler pointed it


def test_a_note_is_printed_once_and_one_label_is_singular(
    pile: dict, capsys: pytest.CaptureFixture
) -> None:
    """The estimate's notes go in its table, not again on stderr; '1 label', not '1 labels'."""
    d = _start(pile, capsys)
    code, _, err = _run(["next", d, "--batch", 20], capsys)
    assert code == 0, err
    row = _to_label(d)[0]["row"]
    one = _write_labels(d.parent / "one.csv", [row], [int(pile["y"][row])])
    code, out, err = _run(["estimate", d, "--labels", one], capsys)
    assert code == 0, err
    notes = [ln for ln in out.splitlines() if ln.strip().startswith("note")]
    assert notes, out  # one label leaves strata empty: the estimate says so
    for ln in notes:
        text = ln.strip()[len("note") :].strip()
        assert text not in err, (text, err)
    assert "these 1 labels" not in out
    assert "this label" in out


def test_commands_resume_from_the_saved_arrays_and_without_them(
    pile: dict, capsys: pytest.CaptureFixture
) -> None:
    """`campaign` saves what it computed from the pile; `next` resumes from it, and a
    campaign saved before that cache existed (no arrays file) proposes the same rows."""
    d = _start(pile, capsys)
    arrays = d / "campaign-arrays.state.npz"
    assert arrays.is_file()
    saved = {k: v.copy() for k, v in np.load(arrays).items()}
    before = _state(d)
    code, _, err = _run(["next", d, "--batch", 12], capsys)
    assert code == 0, err
    with_cache = [r["row"] for r in _to_label(d)]
    (d / "campaign.state.json").write_bytes(before[0])
    arrays.unlink()
    code, _, err = _run(["next", d, "--batch", 12], capsys)
    assert code == 0, err
    assert [r["row"] for r in _to_label(d)] == with_cache
    assert saved  # strata and features, not an empty file


def test_regression_campaign_with_a_score_floor(
    pile: dict, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    """--score-floor: the interval is the API's with the same floor (never narrower than the
    betting interval on [floor, 1]); a label whose error passes the floor is refused and the
    state is kept; a classification campaign refuses the option."""
    rng = np.random.default_rng(5)
    target = rng.random(N)
    pred = np.clip(target + rng.normal(scale=0.2, size=N), 0, 1)
    np.save(tmp_path / "pred.npy", pred)
    d = tmp_path / "reg"
    argv = ["campaign", d, "--activations", tmp_path / "acts.npy", "--seed", 1]
    code, out, _ = _run([*argv, "--score-floor", -0.5], capsys)
    assert code == 0 and "one stratum (the whole pile)" in out
    assert _run(["next", d, "--batch", 40], capsys)[0] == 0
    rows = [r["row"] for r in _to_label(d)]
    lab = tmp_path / "t.csv"
    lab.write_text("row,target\n" + "".join(f"{r},{float(target[r])!r}\n" for r in rows))
    est = ["estimate", d, "--predictions", tmp_path / "pred.npy", "--json", "--labels"]
    code, out, err = _run([*est, lab], capsys)
    assert code == 0, err
    doc = json.loads(out)
    camp = lw.Campaign(pile["acts"], None, rng=1, score_floor=-0.5)
    r = camp.propose(40)
    camp.record(r, 1 - (pred[r] - target[r]) ** 2)
    api = camp.estimate()
    assert (doc["ci_low"], doc["ci_high"]) == pytest.approx((api.ci_low, api.ci_high))
    assert "betting on [-0.5, 1]" in doc["interval"]
    assert _run(["next", d, "--batch", 5], capsys)[0] == 0
    new = [r["row"] for r in _to_label(d) if r["new"] == 1]
    bad = tmp_path / "bad.csv"  # a new row with an error of 2.0 squared: score -3 < -0.5
    bad.write_text(
        lab.read_text()
        + "".join(f"{r},{3.0 if r == new[0] else float(target[r])!r}\n" for r in new)
    )
    state = (d / "campaign.state.json").read_text()
    code, _, err = _run([*est, bad], capsys)
    assert code == 2 and "score_floor" in err
    assert (d / "campaign.state.json").read_text() == state
    code, _, err = _run(
        [
            "campaign",
            tmp_path / "cls",
            "--activations",
            tmp_path / "acts.npy",
            "--probs",
            tmp_path / "probs.npy",
            "--score-floor",
            -1,
        ],
        capsys,
    )
    assert code == 2 and "regression" in err


def test_a_campaign_on_a_capture_without_probs_is_a_classification_one(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    """'campaign DIR --activations CAP/activations.npy' without --probs started a regression
    campaign (one stratum) that refused the class labels of its first batch; it now takes the
    capture's probabilities, and says so."""
    from synthetic import captured_pile

    names = ["a", "b", "c"]
    pile = captured_pile(tmp_path, 2, 300, names, 6, [f"{i}.png" for i in range(300)])
    d = tmp_path / "camp"
    code, out, err = _run(
        ["campaign", d, "--activations", pile["cap"] / "activations.npy", "--seed", 0], capsys
    )
    assert code == 0, err
    assert "probabilities.npy" in out and "classification campaign" in out
    assert _run(["next", d, "--batch", 20], capsys)[0] == 0
    with open(d / "to_label.csv", newline="") as fh:
        rows = [int(r["row"]) for r in csv.DictReader(fh)]
    with open(tmp_path / "labels.csv", "w", newline="") as fh:
        lines = [[f"{r}.png", names[pile["y"][r]]] for r in rows]
        csv.writer(fh).writerows([["id", "label"], *lines])
    code, out, err = _run(["estimate", d, "--labels", tmp_path / "labels.csv", "--json"], capsys)
    assert code == 0, err
    assert json.loads(out)["campaign"]["task"] == "classification"


def test_a_raw_classifier_capture_does_not_start_a_regression_campaign(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """'capture --head raw' of a 10-class model writes outputs.npy (logits), no
    probabilities: 'campaign --activations CAP/activations.npy' then started a *regression*
    campaign that refused every class label ('needs a target column') and every target
    ('targets must have the predictions' shape (20, 10)'). It is now an error naming the
    raw outputs and the way out; a one-output raw capture (a regression model) still starts."""
    from synthetic import captured_pile, run_cli

    pile = captured_pile(tmp_path, 0, 200, [f"c{i}" for i in range(10)], 12, lambda y: [])
    cap = pile["cap"]
    (cap / "probabilities.npy").rename(cap / "outputs.npy")
    (cap / "capture.json").write_text(json.dumps({"head": "raw", "outputs": 10}))
    argv = ["campaign", tmp_path / "camp", "--activations", cap / "activations.npy"]
    code, _, err = run_cli(argv, capsys)
    assert code == 2 and "Traceback" not in err
    assert "outputs.npy" in err and "--head raw" in err and "--probs" in err
    assert not (tmp_path / "camp" / "campaign.state.json").exists()
    np.save(cap / "outputs.npy", np.zeros((200, 1), dtype=np.float32))  # a regression model
    code, out, err = run_cli(argv, capsys)
    assert code == 0, err
    assert "regression campaign" in out

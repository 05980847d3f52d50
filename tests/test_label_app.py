"""``labelwise label``: the labelling session, its HTTP server and the CLI on a small real campaign.

Answers, skips, undo, restarts, racing answers, stop-now and regression, each checked against
what ``labelwise estimate DIR --labels DIR/labels.csv`` says (see tests/label_helpers.py for
the campaign). The page in a real browser: tests/test_label_page.py.
"""

from __future__ import annotations

import json
import socket
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from label_helpers import (
    NAMES,
    N,
    Running,
    cli_estimate,
    labels_of,
    make_campaign,
    make_pile,
    proposed,
)
from labelwise.cli import main
from labelwise.cli._labelling import LabelSession, Refused
from labelwise.exceptions import LabelwiseError
from labelwise.io import read_labels_csv


@pytest.fixture(scope="module")
def pile(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return make_pile(tmp_path_factory.mktemp("pile"))


@pytest.fixture()
def camp(pile: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    d = make_campaign(pile, tmp_path / "camp")
    capsys.readouterr()
    return d


@pytest.fixture()
def served(camp: Path) -> Iterator[Running]:
    r = Running(LabelSession(camp))
    yield r
    r.stop()


# ----------------------------------------------------------------------------- session + HTTP


def test_answers_are_recorded_as_estimate_records_them(
    served: Running, camp: Path, pile: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    order = proposed(camp)
    code, st = served.post("/api/state", {})
    assert code == 404  # state is a GET
    code, body, kind = served.get("/api/state")
    st = json.loads(body)
    assert code == 200 and kind == "application/json"
    assert st["current"]["row"] == order[0] and st["n_to_label"] == 12 and st["n_labelled"] == 0
    assert st["current"]["id"] == pile["ids"][order[0]]
    assert (
        next(t["name"] for t in st["current"]["top"])
        == NAMES[int(pile["probs"][order[0]].argmax())]
    )
    assert st["current"]["view"] == {"type": "image", "url": f"/api/image/{order[0]}"}
    for r in order[:4]:
        code, st = served.post("/api/answer", {"row": r, "value": int(pile["y"][r])})
        assert code == 200, st
    assert labels_of(camp) == {r: int(pile["y"][r]) for r in order[:4]}
    state = json.loads((camp / "campaign.state.json").read_text())
    assert state["labels"]["rows"] == sorted(order[:4])
    shown = st["estimate"]
    cli = cli_estimate(camp, capsys)
    assert (shown["value"], shown["ci_low"], shown["ci_high"]) == (
        cli["value"],
        cli["ci_low"],
        cli["ci_high"],
    )
    assert cli["campaign"]["new_labels"] == 0  # the page had recorded them all
    assert "8 proposed rows are not yet recorded" in st["estimate_note"]
    assert st["current"]["row"] == order[4]
    # the row's picture is the file under the image root
    code, body, kind = served.get(f"/api/image/{order[4]}")
    assert code == 200 and kind == "image/png"
    assert (
        body
        == (
            Path(json.loads((pile["cap"] / "capture.json").read_text())["pile"]["root"])
            / pile["ids"][order[4]]
        ).read_bytes()
    )


def test_a_stale_answer_is_refused_and_bad_values_are_errors(
    served: Running, camp: Path, pile: dict[str, Any]
) -> None:
    r0 = proposed(camp)[0]
    assert served.post("/api/answer", {"row": r0, "value": 1})[0] == 200
    code, doc = served.post("/api/answer", {"row": r0, "value": 2})
    assert code == 409 and f"row {r0} was already labelled 1" in doc["error"]
    assert doc["state"]["n_labelled"] == 1
    assert labels_of(camp) == {r0: 1}
    r1 = proposed(camp)[1]
    for value, words in ((7, "class in [0, 4)"), ("x", "class number"), (1.5, "class number")):
        code, doc = served.post("/api/answer", {"row": r1, "value": value})
        assert code == 400 and words in doc["error"], doc  # a bad request, not a conflict
    not_proposed = next(r for r in range(N) if r not in proposed(camp))
    code, doc = served.post("/api/answer", {"row": not_proposed, "value": 0})
    assert code == 409 and "not a row to label" in doc["error"]
    code, doc = served.post("/api/answer", {"row": "3", "value": 0})
    assert code == 400 and "'row' must be an integer" in doc["error"]
    req = urllib.request.Request(served.url + "api/undo", data=b"row=1", method="POST")
    with pytest.raises(urllib.error.HTTPError) as info:
        urllib.request.urlopen(req, timeout=30)
    info.value.close()
    assert info.value.code == 400  # a form post from another site is not an action
    assert labels_of(camp) == {r0: 1}


def test_skip_and_undo(served: Running, camp: Path, pile: dict[str, Any]) -> None:
    order = proposed(camp)
    y = pile["y"]
    code, doc = served.post("/api/undo", {})
    assert code == 409 and "nothing to undo" in doc["error"]
    _, st = served.post("/api/skip", {"row": order[0]})
    assert st["current"]["row"] == order[1] and st["n_skipped"] == 1
    _, st = served.post("/api/answer", {"row": order[1], "value": int(y[order[1]])})
    _, st = served.post("/api/answer", {"row": order[2], "value": int(y[order[2]])})
    assert st["current"]["row"] == order[3]
    _, st = served.post("/api/undo", {})
    assert st["current"]["row"] == order[2] and st["n_labelled"] == 1
    assert labels_of(camp) == {order[1]: int(y[order[1]])}
    rec = json.loads((camp / "campaign.state.json").read_text())
    assert rec["labels"]["rows"] == [order[1]]
    assert rec["campaign"]["recorded_rows"] == [order[1]]
    # the skipped row comes back after the others
    for r in order[2:]:
        _, st = served.post("/api/answer", {"row": r, "value": int(y[r])})
    assert st["current"]["row"] == order[0] and st["current"]["skipped"]
    _, st = served.post("/api/answer", {"row": order[0], "value": int(y[order[0]])})
    assert st["current"] is None and st["can_propose"] and st["n_labelled"] == 12
    # propose more: what 'labelwise next' does
    _, st = served.post("/api/propose", {"n": 5})
    assert st["n_to_label"] == 17 and st["current"]["row"] == proposed(camp)[12]
    # an answer given before the proposal cannot be undone (the design used it)
    code, doc = served.post("/api/undo", {})
    assert code == 409 and "before the campaign proposed more rows" in doc["error"]
    # undo everything on a fresh campaign: the labels file goes away
    _, st = served.post("/api/answer", {"row": proposed(camp)[12], "value": 0})
    _, st = served.post("/api/undo", {})
    assert st["n_labelled"] == 12


def test_restart_resumes_with_skips_at_the_end(camp: Path, pile: dict[str, Any]) -> None:
    order = proposed(camp)
    s = LabelSession(camp)
    try:
        s.skip(order[0])
        for r in order[1:4]:
            s.answer(r, int(pile["y"][r]))
    finally:
        s.close()
    s = LabelSession(camp)
    try:
        assert s.queue() == [*order[4:], order[0]]
        assert s.state()["n_labelled"] == 3
        s.undo()  # the answer log survives the restart
        assert s.queue()[0] == order[3]
    finally:
        s.close()


def test_the_page_follows_commands_run_beside_it(
    served: Running, camp: Path, pile: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    order = proposed(camp)
    served.post("/api/answer", {"row": order[0], "value": int(pile["y"][order[0]])})
    assert main(["next", str(camp), "--batch", "3"]) == 0
    st = json.loads(served.get("/api/state")[1])
    assert st["n_to_label"] == 15 and st["n_labelled"] == 1
    assert proposed(camp)[:12] == order  # the page kept what 'next' wrote
    assert json.loads((camp / "campaign.state.json").read_text())["campaign"]["proposed"] == (
        proposed(camp)
    )


def test_many_threads_answer_at_once(served: Running, camp: Path, pile: dict[str, Any]) -> None:
    """Two tabs' worth of answers racing: every row labelled once, the file always parseable."""
    order = proposed(camp)
    y = pile["y"]
    jobs = [(r, int(y[r])) for r in order] * 2  # each row answered twice, in parallel
    seen: list[dict[int, int]] = []
    stop = threading.Event()

    def watch() -> None:
        while not stop.is_set():
            if (camp / "labels.csv").is_file():
                seen.append(labels_of(camp))

    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        with ThreadPoolExecutor(8) as pool:
            codes = list(
                pool.map(
                    lambda j: served.post("/api/answer", {"row": j[0], "value": j[1]})[0], jobs
                )
            )
    finally:
        stop.set()
        watcher.join()
    assert codes.count(200) == len(order) and codes.count(409) == len(order)
    assert labels_of(camp) == {r: int(y[r]) for r in order}
    rows = json.loads((camp / "campaign.state.json").read_text())["labels"]["rows"]
    assert rows == sorted(order)
    assert seen and all(set(d.items()) <= set(labels_of(camp).items()) for d in seen)


def test_a_second_server_process_cannot_open_the_directory(served: Running, camp: Path) -> None:
    with pytest.raises(LabelwiseError, match="is being labelled by another"):
        LabelSession(camp)


def test_a_selection_directory(
    pile: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cap = pile["cap"]
    d = tmp_path / "sel"
    argv = ["select", "--method", "srs", "--budget", "6", "--activations", cap / "activations.npy"]
    argv += ["--probs", cap / "probabilities.npy", "--out", d, "--seed", "2"]
    assert main([str(a) for a in argv]) == 0
    order = proposed(d)
    s = LabelSession(d)
    try:
        assert s.kind == "selection" and s.queue() == order
        for r in order[:-1]:
            st = s.answer(r, int(pile["y"][r]))
        assert st["estimate"] is None and "1 to go" in st["estimate_note"]
        st = s.answer(order[-1], int(pile["y"][order[-1]]))
    finally:
        s.close()
    cli = cli_estimate(d, capsys)
    assert (st["estimate"]["value"], st["estimate"]["ci_low"]) == (cli["value"], cli["ci_low"])


def test_a_ranking_selection_is_labelled_by_class_then_ranked(
    pile: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """'labelwise label' on an sds selection crashed with a traceback (IndexError): it took
    the models' (M, N) predictions for a regression model's outputs. It now asks for classes
    and, once every row is labelled, points at 'labelwise rank'."""
    gen = np.random.default_rng(0)
    preds = np.where(gen.random((3, N)) < 0.8, pile["y"], (pile["y"] + 1) % len(NAMES))
    np.save(tmp_path / "preds.npy", preds)
    d = tmp_path / "sds"
    argv = ["select", "--method", "sds", "--budget", "6", "--predictions", tmp_path / "preds.npy"]
    assert main([str(a) for a in [*argv, "--out", d, "--seed", "2"]]) == 0
    order = proposed(d)
    s = LabelSession(d)
    try:
        st = s.state()
        assert st["task"] == "classification" and len(st["classes"]) == len(NAMES)
        for r in order:
            st = s.answer(r, int(pile["y"][r]))
    finally:
        s.close()
    assert st["estimate"] is None and f"labelwise rank {d}" in st["estimate_note"]
    capsys.readouterr()
    assert main(["rank", str(d), "--labels", str(d / "labels.csv")]) == 0
    assert "3 models ranked on 6 labelled rows" in capsys.readouterr().out


# ----------------------------------------------------------------------------- CLI errors


def test_cli_errors_are_one_line(
    camp: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    capsys.readouterr()
    assert main(["label", str(empty)]) == 2
    err = capsys.readouterr().err
    assert "holds no campaign or selection" in err and err.count("\n") == 1
    assert main(["label", str(tmp_path / "missing")]) == 2
    assert "missing does not exist" in capsys.readouterr().err
    assert main(["label", str(camp), "--host", "0.0.0.0"]) == 2
    err = capsys.readouterr().err
    assert "--allow-remote" in err and err.count("\n") == 1
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        assert main(["label", str(camp), "--port", str(port)]) == 2
    err = capsys.readouterr().err
    assert f"--port {port} on 127.0.0.1 is in use" in err and err.count("\n") == 1
    assert main(["label", str(camp), "--until-halfwidth", "2"]) == 2
    assert "--until-halfwidth must be in (0, 1)" in capsys.readouterr().err
    # the lock was released after each failure: a session opens
    LabelSession(camp).close()


# ----------------------------------------------------------------------------- stop, regression


def test_stop_now_is_the_cli_s_verdict(
    camp: Path, pile: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    order = proposed(camp)
    for h, stop in ((0.9, True), (0.01, False)):
        s = LabelSession(camp, until_halfwidth=h)
        try:
            for r in order[:6]:
                if r not in s.labels:
                    s.answer(r, int(pile["y"][r]))
            st = s.state()
        finally:
            s.close()
        cli = cli_estimate(camp, capsys, "--until-halfwidth", str(h))
        assert st["stop"] is stop and cli["anytime"]["stop"] is stop
        assert st["estimate"]["anytime"]["halfwidth"] == cli["anytime"]["halfwidth"]


def test_a_regression_campaign_takes_numbers(
    pile: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rng = np.random.default_rng(1)
    target = rng.uniform(size=N)
    np.save(tmp_path / "preds.npy", target + rng.normal(scale=0.1, size=N))
    d = tmp_path / "reg"
    cap = pile["cap"]
    argv = ["campaign", d, "--activations", cap / "activations.npy"]
    argv += ["--predictions", tmp_path / "preds.npy", "--seed", "1"]
    assert main([str(a) for a in argv]) == 0
    assert main(["next", str(d), "--batch", "8"]) == 0
    order = proposed(d)
    s = LabelSession(d)
    try:
        st = s.state()
        assert st["task"] == "regression" and st["column"] == "target"
        assert "predicted_value" in st["current"] and "top" not in st["current"]
        with pytest.raises(Refused, match="finite number"):
            s.answer(order[0], "nan")
        for r in order[:5]:
            st = s.answer(r, float(target[r]))
    finally:
        s.close()
    rows, kind, values = read_labels_csv(d / "labels.csv")
    assert kind == "target" and rows.tolist() == order[:5]
    assert np.allclose(values, target[order[:5]])
    cli = cli_estimate(d, capsys)
    assert (st["estimate"]["value"], st["estimate"]["ci_high"]) == (cli["value"], cli["ci_high"])


def test_the_cli_serves_until_interrupted_and_keeps_a_second_server_off(
    camp: Path, pile: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    import os
    import signal
    import subprocess
    import sys

    src = Path(__file__).resolve().parents[1] / "src"
    env = {**os.environ, "PYTHONPATH": f"{src}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    cmd = [sys.executable, "-m", "labelwise.cli", "label", str(camp), "--port", "0"]
    # started with SIGINT ignored, as a shell without job control starts a background command:
    # Ctrl-C must still stop it (it did not, and a CI run launched that way hung here)
    proc = subprocess.Popen(
        cmd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN),
    )
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline()
        second = proc.stdout.readline()
        assert "labelling the campaign in" in first and "0 of 12 rows labelled" in first, first
        url = second.split()[1]
        assert url.startswith("http://127.0.0.1:")
        with urllib.request.urlopen(url + "api/state", timeout=30) as r:
            assert json.loads(r.read())["current"]["row"] == proposed(camp)[0]
        assert main(["label", str(camp), "--port", "0"]) == 2
        assert "is being labelled by another 'labelwise label'" in capsys.readouterr().err
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 0, err
    assert "stopped; 0 labels in" in out and "Traceback" not in err


def test_help_documents_every_api_route(capsys: pytest.CaptureFixture) -> None:
    """The page's JSON API was only in a module docstring: a tool driving 'label' without a
    browser had to read the source. Every POST route the server serves is in --help."""
    import re

    from labelwise.cli import _label_server

    with pytest.raises(SystemExit):
        main(["label", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    routes = set(re.findall(r'path == "(/api/[a-z]+)"', Path(_label_server.__file__).read_text()))
    assert routes >= {"/api/state", "/api/answer", "/api/skip", "/api/undo", "/api/propose"}
    for route in routes:
        assert route in text, route

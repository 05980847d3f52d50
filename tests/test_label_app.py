"""``labelwise label``: the labelling page's session, server and CLI on a small real campaign.

The campaign is built with the CLI (``campaign`` + ``next``) on a generated pile whose true
labels the tests know; the pile is an image folder described by a capture directory
(``CAP/capture.json``, ``CAP/ids.txt``, ``CAP/classes.json``) as ``labelwise capture`` writes
it. The browser tests drive Debian's chromium through Playwright (one browser per module) and
skip, saying why, when either is missing.
"""

from __future__ import annotations

import csv
import io
import json
import shutil
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

from labelwise.cli import main
from labelwise.cli._label_server import LabelServer, make_server
from labelwise.cli._labelling import LabelSession, Refused
from labelwise.io import read_labels_csv

N, C = 240, 4
NAMES = ["cat", "dog", "bird", "fish"]
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


# ----------------------------------------------------------------------------- fixtures


def _pile(root: Path) -> dict[str, Any]:
    """Activations, probabilities (about 70 % accurate), true labels and one PNG per row."""
    from PIL import Image

    rng = np.random.default_rng(0)
    y = rng.integers(C, size=N)
    x = rng.normal(size=(N, 8))
    x[np.arange(N), y] += 1.5
    logits = 2 * x[:, :C]
    p = np.exp(logits - logits.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    cap = root / "cap"
    images = root / "images"
    (images / "sub").mkdir(parents=True)
    cap.mkdir()
    ids = [f"sub/img_{i:04d}.png" for i in range(N)]
    colours = [(220, 40, 40), (40, 160, 40), (40, 40, 220), (230, 180, 20)]
    for i, name in enumerate(ids):
        a = np.zeros((24, 24, 3), dtype=np.uint8)
        a[:, :] = colours[y[i]]
        a[4 + i % 10 : 12 + i % 10, 6:18] = 255
        Image.fromarray(a).save(images / name)
    np.save(cap / "activations.npy", x.astype(np.float32))
    np.save(cap / "probabilities.npy", p.astype(np.float32))
    (cap / "capture.json").write_text(json.dumps({"pile": {"kind": "images", "root": str(images)}}))
    (cap / "ids.txt").write_text("\n".join(ids) + "\n")
    (cap / "classes.json").write_text(json.dumps(NAMES))
    return {"cap": cap, "y": y, "ids": ids, "probs": p}


@pytest.fixture(scope="module")
def pile(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return _pile(tmp_path_factory.mktemp("pile"))


def _campaign(pile: dict[str, Any], d: Path, batch: int = 12, *extra: str) -> Path:
    cap = pile["cap"]
    argv = ["campaign", d, "--activations", cap / "activations.npy"]
    argv += ["--probs", cap / "probabilities.npy", "--seed", "5", *extra]
    assert main([str(a) for a in argv]) == 0
    assert main(["next", str(d), "--batch", str(batch)]) == 0
    return d


@pytest.fixture()
def camp(pile: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    d = _campaign(pile, tmp_path / "camp")
    capsys.readouterr()
    return d


def _proposed(d: Path) -> list[int]:
    with open(d / "to_label.csv", newline="") as fh:
        return [int(r["row"]) for r in csv.DictReader(fh)]


def _labels(d: Path) -> dict[int, int]:
    rows, kind, values = read_labels_csv(d / "labels.csv")
    assert kind == "label"
    return dict(zip(rows.tolist(), values.tolist(), strict=True))


def _cli_estimate(d: Path, capsys: pytest.CaptureFixture[str], *extra: str) -> dict[str, Any]:
    capsys.readouterr()
    code = main(["estimate", str(d), "--labels", str(d / "labels.csv"), "--json", *extra])
    out, err = capsys.readouterr()
    assert code == 0, err
    return json.loads(out)


class Running:
    """A server for a session, serving from a thread."""

    def __init__(self, session: LabelSession, port: int = 0) -> None:
        self.session = session
        self.server: LabelServer = make_server(session, "127.0.0.1", port)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()
        self.url = self.server.url

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(5)
        self.session.close()

    def post(self, path: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        req = urllib.request.Request(
            self.url + path.lstrip("/"),
            data=json.dumps(body).encode(),
            headers={"Content-Type": "application/json"},
            method="POST",
        )
        try:
            with urllib.request.urlopen(req, timeout=30) as r:
                return r.status, json.loads(r.read())
        except urllib.error.HTTPError as exc:
            with exc:
                return exc.code, json.loads(exc.read())

    def get(self, path: str) -> tuple[int, bytes, str]:
        try:
            with urllib.request.urlopen(self.url + path.lstrip("/"), timeout=30) as r:
                return r.status, r.read(), r.headers.get("Content-Type", "")
        except urllib.error.HTTPError as exc:
            with exc:
                return exc.code, exc.read(), exc.headers.get("Content-Type", "")


@pytest.fixture()
def served(camp: Path) -> Iterator[Running]:
    r = Running(LabelSession(camp))
    yield r
    r.stop()


# ----------------------------------------------------------------------------- session + HTTP


def test_answers_are_recorded_as_estimate_records_them(
    served: Running, camp: Path, pile: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    order = _proposed(camp)
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
    assert _labels(camp) == {r: int(pile["y"][r]) for r in order[:4]}
    state = json.loads((camp / "campaign.state.json").read_text())
    assert state["labels"]["rows"] == sorted(order[:4])
    shown = st["estimate"]
    cli = _cli_estimate(camp, capsys)
    assert (shown["value"], shown["ci_low"], shown["ci_high"]) == (
        cli["value"],
        cli["ci_low"],
        cli["ci_high"],
    )
    assert cli["campaign"]["new_labels"] == 0  # the page had recorded them all
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
    r0 = _proposed(camp)[0]
    assert served.post("/api/answer", {"row": r0, "value": 1})[0] == 200
    code, doc = served.post("/api/answer", {"row": r0, "value": 2})
    assert code == 409 and f"row {r0} was already labelled 1" in doc["error"]
    assert doc["state"]["n_labelled"] == 1
    assert _labels(camp) == {r0: 1}
    r1 = _proposed(camp)[1]
    for value, words in ((7, "class in [0, 4)"), ("x", "class number"), (1.5, "class number")):
        code, doc = served.post("/api/answer", {"row": r1, "value": value})
        assert code == 409 and words in doc["error"], doc
    not_proposed = next(r for r in range(N) if r not in _proposed(camp))
    code, doc = served.post("/api/answer", {"row": not_proposed, "value": 0})
    assert code == 409 and "not a row to label" in doc["error"]
    code, doc = served.post("/api/answer", {"row": "3", "value": 0})
    assert code == 400 and "'row' must be an integer" in doc["error"]
    req = urllib.request.Request(served.url + "api/undo", data=b"row=1", method="POST")
    with pytest.raises(urllib.error.HTTPError) as info:
        urllib.request.urlopen(req, timeout=30)
    info.value.close()
    assert info.value.code == 400  # a form post from another site is not an action
    assert _labels(camp) == {r0: 1}


def test_skip_and_undo(served: Running, camp: Path, pile: dict[str, Any]) -> None:
    order = _proposed(camp)
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
    assert _labels(camp) == {order[1]: int(y[order[1]])}
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
    assert st["n_to_label"] == 17 and st["current"]["row"] == _proposed(camp)[12]
    # an answer given before the proposal cannot be undone (the design used it)
    code, doc = served.post("/api/undo", {})
    assert code == 409 and "before the campaign proposed more rows" in doc["error"]
    # undo everything on a fresh campaign: the labels file goes away
    _, st = served.post("/api/answer", {"row": _proposed(camp)[12], "value": 0})
    _, st = served.post("/api/undo", {})
    assert st["n_labelled"] == 12


def test_restart_resumes_with_skips_at_the_end(camp: Path, pile: dict[str, Any]) -> None:
    order = _proposed(camp)
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


def test_many_threads_answer_at_once(served: Running, camp: Path, pile: dict[str, Any]) -> None:
    """Two tabs' worth of answers racing: every row labelled once, the file always parseable."""
    order = _proposed(camp)
    y = pile["y"]
    jobs = [(r, int(y[r])) for r in order] * 3  # each row answered three times, in parallel
    seen: list[dict[int, int]] = []
    stop = threading.Event()

    def watch() -> None:
        while not stop.is_set():
            if (camp / "labels.csv").is_file():
                seen.append(_labels(camp))

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
    assert codes.count(200) == len(order) and codes.count(409) == 2 * len(order)
    assert _labels(camp) == {r: int(y[r]) for r in order}
    rows = json.loads((camp / "campaign.state.json").read_text())["labels"]["rows"]
    assert rows == sorted(order)
    assert seen and all(set(d.items()) <= set(_labels(camp).items()) for d in seen)


def test_a_second_server_process_cannot_open_the_directory(served: Running, camp: Path) -> None:
    with pytest.raises(Refused.__mro__[1], match="is being labelled by another"):
        LabelSession(camp)


def test_a_selection_directory(
    pile: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cap = pile["cap"]
    d = tmp_path / "sel"
    argv = ["select", "--method", "srs", "--budget", "6", "--activations", cap / "activations.npy"]
    argv += ["--probs", cap / "probabilities.npy", "--out", d, "--seed", "2"]
    assert main([str(a) for a in argv]) == 0
    order = _proposed(d)
    s = LabelSession(d)
    try:
        assert s.kind == "selection" and s.queue() == order
        for r in order[:-1]:
            st = s.answer(r, int(pile["y"][r]))
        assert st["estimate"] is None and "1 to go" in st["estimate_note"]
        st = s.answer(order[-1], int(pile["y"][order[-1]]))
    finally:
        s.close()
    cli = _cli_estimate(d, capsys)
    assert (st["estimate"]["value"], st["estimate"]["ci_low"]) == (cli["value"], cli["ci_low"])


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
    assert "holds no campaign or selection" in capsys.readouterr().err
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


# ----------------------------------------------------------------------------- browser


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    if shutil.which(CHROMIUM) is None:
        pytest.skip(
            f"browser tests need Debian's chromium at {CHROMIUM} (apt-get install chromium)"
        )
    sync_api = pytest.importorskip("playwright.sync_api", reason="browser tests need playwright")
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield b
        b.close()


def _press_and_wait(page: Any, key: str, labelled: int) -> None:
    page.keyboard.press(key)
    page.wait_for_selector(f"#progress[data-labelled='{labelled}']", timeout=15000)


def test_browser_label_five_reload_resume_and_estimate(
    browser: Any,
    served: Running,
    camp: Path,
    pile: dict[str, Any],
    capsys: pytest.CaptureFixture[str],
) -> None:
    order = _proposed(camp)
    y = pile["y"]
    page = browser.new_page()
    try:
        page.goto(served.url)
        page.wait_for_selector(f"#rowline[data-row='{order[0]}']")
        for i in range(5):
            assert page.get_attribute("#rowline", "data-row") == str(order[i])
            key = str(int(y[order[i]]) + 1)  # class k is key k+1
            _press_and_wait(page, key, i + 1)
        page.reload()
        page.wait_for_selector(f"#rowline[data-row='{order[5]}']")
        assert page.get_attribute("#progress", "data-labelled") == "5"
        assert _labels(camp) == {r: int(y[r]) for r in order[:5]}
        value = float(page.get_attribute("#est-value", "data-value"))
        low = float(page.get_attribute("#est-value", "data-low"))
        high = float(page.get_attribute("#est-value", "data-high"))
        cli = _cli_estimate(camp, capsys)
        assert (value, low, high) == (cli["value"], cli["ci_low"], cli["ci_high"])
        assert f"[{cli['ci_low']:.4f}, {cli['ci_high']:.4f}]" in page.inner_text("#est-interval")
        # skip and undo from the keyboard
        page.keyboard.press("s")
        page.wait_for_selector(f"#rowline[data-row='{order[6]}']")
        _press_and_wait(page, "Backspace", 4)
        assert page.get_attribute("#rowline", "data-row") == str(order[4])
    finally:
        page.close()


def test_browser_stale_tab_sees_a_clear_message(browser: Any, served: Running, camp: Path) -> None:
    order = _proposed(camp)
    a, b = browser.new_page(), browser.new_page()
    try:
        for p in (a, b):
            p.goto(served.url)
            p.wait_for_selector(f"#rowline[data-row='{order[0]}']")
        _press_and_wait(a, "2", 1)
        b.keyboard.press("3")
        b.wait_for_selector(f"#rowline[data-row='{order[1]}']")
        assert f"row {order[0]} was already labelled 1" in b.inner_text("#message")
        assert _labels(camp) == {order[0]: 1}
    finally:
        a.close()
        b.close()


def test_browser_screenshot_shows_the_page_and_the_row_image(
    browser: Any, served: Running, camp: Path, pile: dict[str, Any], tmp_path: Path
) -> None:
    from PIL import Image

    page = browser.new_page(viewport={"width": 1000, "height": 700})
    try:
        page.goto(served.url)
        page.wait_for_selector("#rowimage")
        page.wait_for_function(
            "() => { const i = document.getElementById('rowimage'); "
            "return i.complete && i.naturalWidth > 0; }"
        )
        assert page.evaluate("document.getElementById('rowimage').naturalWidth") == 24
        shot = Image.open(io.BytesIO(page.screenshot(full_page=True))).convert("RGB")
        arr = np.asarray(shot, dtype=np.float64)
        assert arr.std() > 10  # not blank
        box = page.locator("#rowimage").bounding_box()
        assert box is not None and box["width"] >= 24
        crop = arr[
            int(box["y"]) + 3 : int(box["y"] + box["height"]) - 3,
            int(box["x"]) + 3 : int(box["x"] + box["width"]) - 3,
        ]
        # the row's colour (its true class's) fills most of the image on the page
        colours = [(220, 40, 40), (40, 160, 40), (40, 40, 220), (230, 180, 20)]
        want = np.asarray(colours[int(pile["y"][_proposed(camp)[0]])], dtype=np.float64)
        share = np.mean(np.abs(crop - want).sum(axis=2) < 30)
        assert share > 0.4, share
        labels = page.inner_text("#classes")
        assert all(name in labels for name in NAMES)
    finally:
        page.close()

"""``labelwise label``: the page in Debian's chromium (Playwright), and the rows' pictures.

One browser per module; the browser tests skip, saying why, when /usr/bin/chromium or
playwright is missing. The campaign: tests/label_helpers.py.
"""

from __future__ import annotations

import io
import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from label_helpers import (
    COLOURS,
    NAMES,
    Running,
    cli_estimate,
    labels_of,
    make_campaign,
    make_pile,
    proposed,
)
from labelwise.cli._labelling import LabelSession
from synthetic import CHROMIUM, CHROMIUM_ARGS


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
    order = proposed(camp)
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
        assert labels_of(camp) == {r: int(y[r]) for r in order[:5]}
        value = float(page.get_attribute("#est-value", "data-value"))
        low = float(page.get_attribute("#est-value", "data-low"))
        high = float(page.get_attribute("#est-value", "data-high"))
        cli = cli_estimate(camp, capsys)
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
    order = proposed(camp)
    a, b = browser.new_page(), browser.new_page()
    try:
        for p in (a, b):
            p.goto(served.url)
            p.wait_for_selector(f"#rowline[data-row='{order[0]}']")
        _press_and_wait(a, "2", 1)
        b.keyboard.press("3")
        b.wait_for_selector(f"#rowline[data-row='{order[1]}']")
        assert f"row {order[0]} was already labelled 1" in b.inner_text("#message")
        assert labels_of(camp) == {order[0]: 1}
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
        want = np.asarray(COLOURS[int(pile["y"][proposed(camp)[0]])], dtype=np.float64)
        share = np.mean(np.abs(crop - want).sum(axis=2) < 30)
        assert share > 0.4, share
        labels = page.inner_text("#classes")
        assert all(name in labels for name in NAMES)
    finally:
        page.close()


# ----------------------------------------------------------------------------- row pictures


def _renderer(tmp_path: Path, pile_entry: dict[str, Any] | None, ids: list[str] | None) -> Any:
    from labelwise.cli._label_render import RowRenderer
    from labelwise.workspace import Workspace

    cap = tmp_path / "cap"
    cap.mkdir(exist_ok=True)
    np.save(cap / "activations.npy", np.zeros((3, 2)))
    if pile_entry is not None:
        (cap / "capture.json").write_text(json.dumps({"pile": pile_entry}))
    ws = Workspace(tmp_path / "dir")
    ws.sources = {"activations": {"path": str(cap / "activations.npy")}}
    return RowRenderer(ws, ids)


@pytest.mark.parametrize(
    ("shape", "size", "mode"),
    [
        ((3, 8, 16), (256, 128), "L"),
        ((3, 3, 8, 8), (256, 256), "RGB"),
        ((3, 8, 8, 3), (256, 256), "RGB"),
    ],
)
def test_array_rows_are_drawn_as_images(
    tmp_path: Path, shape: tuple[int, ...], size: tuple[int, int], mode: str
) -> None:
    from PIL import Image

    x = np.random.default_rng(0).normal(size=shape)
    np.save(tmp_path / "pile.npy", x)
    (tmp_path / "cap").mkdir()
    np.save(tmp_path / "cap" / "pile.npy", x)
    r = _renderer(tmp_path, {"kind": "array", "path": "pile.npy"}, None)  # relative to CAP
    assert r.view(1) == {"type": "image", "url": "/api/image/1"}
    body, kind = r.image(1)
    im = Image.open(io.BytesIO(body))
    assert kind == "image/png" and im.size == size and im.mode == mode
    a = np.asarray(im, dtype=np.float64)
    assert a.std() > 20  # the row's values, not a blank square
    if mode == "L":  # brightness follows the values: the row's largest value is drawn white
        i, j = np.unravel_index(np.argmax(x[1]), x[1].shape)
        assert a[i * 16, j * 16] == 255


def test_1d_rows_are_a_line_plot_and_a_table_and_csv_rows_a_table(tmp_path: Path) -> None:
    from PIL import Image

    x = np.sin(np.linspace(0, 6, 20))[None, :].repeat(3, axis=0)
    (tmp_path / "cap").mkdir()
    np.save(tmp_path / "cap" / "pile.npy", x)
    r = _renderer(tmp_path, {"kind": "array", "path": str(tmp_path / "cap" / "pile.npy")}, None)
    v = r.view(2)
    assert v["type"] == "image" and v["table"]["values"][1] == f"{x[2, 1]:.4g}"
    im = np.asarray(Image.open(io.BytesIO(r.image(2)[0])).convert("RGB"), dtype=np.float64)
    assert im.shape == (200, 480, 3) and (np.abs(im - [30, 90, 200]).sum(axis=2) < 5).sum() > 300
    (tmp_path / "cap" / "pile.csv").write_text("a,b\n1,x\n2,y\n3,z\n")
    r = _renderer(tmp_path, {"kind": "table", "path": "pile.csv"}, None)
    assert r.view(1) == {"type": "table", "table": {"columns": ["a", "b"], "values": ["2", "y"]}}


def test_unknown_piles_show_nothing_and_ids_cannot_leave_the_root(tmp_path: Path) -> None:
    from labelwise.exceptions import LabelwiseError

    assert _renderer(tmp_path, None, None).view(0) == {"type": "none"}
    (tmp_path / "secret.png").write_bytes(b"not yours")
    (tmp_path / "root").mkdir()
    r = _renderer(
        tmp_path, {"kind": "images", "root": str(tmp_path / "root")}, ["../secret.png"] * 3
    )
    with pytest.raises(LabelwiseError, match="points outside"):
        r.image(0)


def test_browser_many_classes_are_searched_and_an_unknown_pile_shows_the_row(
    browser: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from labelwise.cli import main

    rng = np.random.default_rng(3)
    n, c = 150, 12
    p = rng.dirichlet(np.ones(c), size=n)
    np.save(tmp_path / "acts.npy", rng.normal(size=(n, 4)))
    np.save(tmp_path / "probs.npy", p)
    d = tmp_path / "camp"
    argv = [
        "campaign",
        d,
        "--activations",
        tmp_path / "acts.npy",
        "--probs",
        tmp_path / "probs.npy",
    ]
    assert main([str(a) for a in [*argv, "--seed", "0", "--method", "srs"]]) == 0
    assert main(["next", str(d), "--batch", "4"]) == 0
    capsys.readouterr()
    order = proposed(d)
    served = Running(LabelSession(d))
    page = browser.new_page()
    try:
        page.goto(served.url)
        page.wait_for_selector(f"#rowline[data-row='{order[0]}']")
        assert "nothing more is known" in page.inner_text("#view")
        assert page.is_visible("#search")
        assert page.locator("#classes button").count() == c
        page.keyboard.press("/")
        page.keyboard.type("class 11")
        assert page.locator("#classes button").count() == 1
        page.keyboard.press("Enter")
        page.wait_for_selector("#progress[data-labelled='1']")
        assert labels_of(d) == {order[0]: 11}
        # back on the page, the digit keys still pick the first ten classes
        page.locator("body").click()
        page.keyboard.press("0")
        page.wait_for_selector("#progress[data-labelled='2']")
        assert labels_of(d) == {order[0]: 11, order[1]: 9}
    finally:
        page.close()
        served.stop()


def test_browser_a_moved_pile_is_said_on_the_page(
    browser: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from labelwise.cli import main

    rng = np.random.default_rng(4)
    cap = tmp_path / "cap"
    cap.mkdir()
    np.save(cap / "acts.npy", rng.normal(size=(60, 4)))
    np.save(cap / "probs.npy", rng.dirichlet(np.ones(3), size=60))
    (cap / "capture.json").write_text(json.dumps({"pile": {"kind": "npy", "path": "gone.npy"}}))
    d = tmp_path / "camp"
    argv = ["campaign", d, "--activations", cap / "acts.npy", "--probs", cap / "probs.npy"]
    assert main([str(a) for a in [*argv, "--seed", "0"]]) == 0
    assert main(["next", str(d), "--batch", "3"]) == 0
    capsys.readouterr()
    served = Running(LabelSession(d))
    page = browser.new_page()
    try:
        page.goto(served.url)
        page.wait_for_selector(f"#rowline[data-row='{proposed(d)[0]}']")
        note = page.inner_text("#viewnote")
        assert str(cap / "gone.npy") in note and "is not there any more" in note
        assert "nothing more is known" in page.inner_text("#view")
    finally:
        page.close()
        served.stop()

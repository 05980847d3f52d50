"""One row preview (labelwise._rowview) on REAL captures: ``labelwise capture`` of a folder of
PNGs, a Parquet table and an .npz archive, then ``campaign``, ``next``, the labelling page's
routes (its server and session, no browser) and ``labelwise export --format label-studio``.
Also what happens when the pile moves (a note, no error) or changes (an error)."""

from __future__ import annotations

import csv
import io
import json
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from label_helpers import Running
from labelwise._rowview import RowView
from labelwise.cli import main
from labelwise.cli._labelling import LabelSession
from labelwise.exceptions import LabelwiseError
from labelwise.piles import open_pile
from labelwise.workspace import Workspace
from test_piles import CLASSES, _png_pile
from test_piles import torch_model as torch_model  # the module's seeded model (a fixture)

Image = pytest.importorskip("PIL.Image")


def _run(capsys: pytest.CaptureFixture[str], *argv: object) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def _captured_campaign(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    model_path: Path,
    inputs: Path,
    *options: object,
) -> tuple[Path, Path, list[int]]:
    """``capture`` INPUTS, ``campaign`` on the capture, ``next --batch 5``: (CAP, DIR, rows)."""
    (tmp_path / "classes.txt").write_text("dark\nbright\n")
    cap, d = tmp_path / "cap", tmp_path / "camp"
    code, _, err = _run(
        capsys, "capture", "--model", model_path, "--inputs", inputs, *options,
        "--classes", tmp_path / "classes.txt", "--out", cap,
    )  # fmt: skip
    assert code == 0, err
    code, _, err = _run(
        capsys, "campaign", d, "--activations", cap / "activations.npy",
        "--probs", cap / "probabilities.npy", "--seed", "1",
    )  # fmt: skip
    assert code == 0, err
    code, _, err = _run(capsys, "next", d, "--batch", "5")
    assert code == 0, err
    with open(d / "to_label.csv", newline="") as fh:
        rows = [int(r["row"]) for r in csv.DictReader(fh)]
    assert len(rows) == 5
    return cap, d, rows


def _page(d: Path) -> tuple[Running, dict[str, Any]]:
    served = Running(LabelSession(d))
    code, body, _ = served.get("/api/state")
    assert code == 200
    return served, json.loads(body)


def _export(
    d: Path, capsys: pytest.CaptureFixture[str], *extra: object
) -> tuple[list[dict[str, Any]], ET.Element, str]:
    code, _, err = _run(capsys, "export", d, "--format", "label-studio", *extra)
    assert code == 0, err
    tasks = json.loads((d / "label-studio-tasks.json").read_text())
    return tasks, ET.parse(d / "label-studio-tasks.config.xml").getroot(), err


def _choices(config: ET.Element) -> list[str | None]:
    choices = config.find("Choices")
    assert choices is not None
    return [c.get("value") for c in choices.findall("Choice")]


def test_image_folder_capture_page_and_label_studio_show_the_png_files(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], torch_model: tuple[Path, Any]
) -> None:
    import torch

    model_path, model = torch_model
    ids, _ = _png_pile(tmp_path / "pile", n=40, seed=4)
    cap, d, rows = _captured_campaign(
        tmp_path, capsys, model_path, tmp_path / "pile", "--image-size", "8x8", "--channels", "1"
    )
    assert (cap / "ids.txt").read_text().splitlines() == ids
    first = rows[0]
    png = tmp_path / "pile" / ids[first]
    # (a) the labelling page: the first proposed row, its picture is the PNG file itself
    served, state = _page(d)
    try:
        assert state["current"]["row"] == first and state["current"]["id"] == ids[first]
        assert state["current"]["view"] == {"type": "image", "url": f"/api/image/{first}"}
        code, body, kind = served.get(state["current"]["view"]["url"])
        assert code == 200 and kind == "image/png" and body == png.read_bytes()
        other = next(r for r in range(40) if r != first)
        assert served.get(f"/api/image/{other}")[1] != body  # each row its own file
        assert served.get(f"/api/image/{other}")[1] == (tmp_path / "pile" / ids[other]).read_bytes()
    finally:
        served.stop()
    # the same rows as the library sees them; the model's input is the preprocessed image
    view = RowView(_ws(d))
    assert view.kind == "image" and view.note == "" and view.image_file(first) == png.resolve()
    with torch.no_grad():
        logits = model(torch.from_numpy(view.inputs(first)[None]))
    assert int(logits.argmax()) == int(np.load(cap / "predictions.npy")[first])
    # (b) Label Studio: the tasks point at those files; the class names make the choices
    tasks, config, _ = _export(d, capsys)
    assert [t["data"]["labelwise_row"] for t in tasks] == rows
    assert [t["data"]["image"] for t in tasks] == [
        str((tmp_path / "pile" / ids[r]).resolve()) for r in rows
    ]
    assert all(Path(t["data"]["image"]).read_bytes() == (tmp_path / "pile" / ids[r]).read_bytes()
               for t, r in zip(tasks, rows, strict=True))  # fmt: skip
    assert _choices(config) == CLASSES
    predicted = np.load(cap / "predictions.npy")
    assert [t["predictions"][0]["result"][0]["value"]["choices"][0] for t in tasks] == [
        CLASSES[int(predicted[r])] for r in rows
    ]
    tasks, _, _ = _export(d, capsys, "--image-url-prefix", "/data/local-files/?d=")
    assert tasks[0]["data"]["image"] == "/data/local-files/?d=" + ids[first]

    # the folder moves: no error, the page and the export say so; the files are named
    shutil.move(tmp_path / "pile", tmp_path / "moved")
    served, state = _page(d)
    try:
        view_doc = state["current"]["view"]
        assert view_doc["type"] == "image" and "is not there any more" in view_doc["note"]
        code, body, _ = served.get(view_doc["url"])
        assert code == 404 and ids[first] in json.loads(body)["error"]
    finally:
        served.stop()
    tasks, _, err = _export(d, capsys, "--image-url-prefix", "/data/local-files/?d=")
    assert tasks[0]["data"]["image"].endswith(ids[first])
    assert "note:" in err and str(tmp_path / "pile") in err


def _ws(d: Path) -> Workspace:
    from labelwise.cli.campaign import CampaignState

    return CampaignState.open(d).ws


def _table(tmp_path: Path, n: int = 40) -> tuple[Path, list[dict[str, Any]]]:
    """A Parquet pile: 64 pixel columns, a name (the id column) and a caption (text)."""
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    rng = np.random.default_rng(7)
    bright = rng.integers(2, size=n)
    pixels = np.clip(rng.uniform(0.2, 0.5, size=(n, 1)) + 0.4 * bright[:, None]
                     + rng.normal(0, 0.1, size=(n, 64)), 0, 1)  # fmt: skip
    cols: dict[str, Any] = {"name": [f"item-{i:02d}" for i in range(n)]}
    cols["caption"] = [f"a {'bright' if b else 'dark'} square" for b in bright]
    for j in range(64):
        cols[f"p{j}"] = pixels[:, j]
    path = tmp_path / "table.parquet"
    pq.write_table(pa.table(cols), path)
    records = [{k: v[i] for k, v in cols.items()} for i in range(n)]
    return path, records


def test_parquet_pile_shows_the_row_cells_on_the_page_and_in_label_studio(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], torch_model: tuple[Path, Any]
) -> None:
    model_path, _ = torch_model
    path, records = _table(tmp_path)
    cap, d, rows = _captured_campaign(tmp_path, capsys, model_path, path, "--id-column", "name")
    pile = json.loads((cap / "capture.json").read_text())["pile"]
    assert pile["kind"] == "parquet" and pile["id_column"] == "name" and len(pile["columns"]) == 64
    first = rows[0]
    rec = records[first]
    served, state = _page(d)
    try:
        assert state["current"]["row"] == first and state["current"]["id"] == rec["name"]
        table = state["current"]["view"]["table"]
        assert state["current"]["view"]["type"] == "table"
        assert table["columns"][:3] == ["name", "caption", "p0"]
        assert table["values"][:2] == [rec["name"], rec["caption"]]
        assert [float(v) for v in table["values"][2:]] == pytest.approx(
            [rec[f"p{j}"] for j in range(64)], abs=1e-5
        )
    finally:
        served.stop()
    view = RowView(_ws(d))
    np.testing.assert_allclose(view.values(first), [rec[f"p{j}"] for j in range(64)], rtol=1e-6)
    tasks, config, _ = _export(d, capsys)
    assert [t["data"]["labelwise_id"] for t in tasks] == [records[r]["name"] for r in rows]
    text = tasks[0]["data"]["text"]
    assert text.startswith(f"row {first}: name={rec['name']}, caption={rec['caption']}, p0=")
    assert f"p63={rec['p63']:.6g}" in text
    assert _choices(config) == CLASSES and config.find("Text") is not None

    # the table changes (a row more): an error, not the wrong row's cells
    pa, pq = pytest.importorskip("pyarrow"), pytest.importorskip("pyarrow.parquet")
    more = {k: [r[k] for r in records] + [records[0][k]] for k in records[0]}
    more["name"][-1] = "item-new"
    pq.write_table(pa.table(more), path)
    with pytest.raises(LabelwiseError, match=r"changed since the capture.*41 rows.*40 rows"):
        RowView(_ws(d))
    code, _, err = _run(capsys, "export", d)
    assert code == 2 and "changed since the capture" in err
    code, _, err = _run(capsys, "label", d, "--port", "0")  # before serving: one line
    assert code == 2 and "changed since the capture" in err and err.count("\n") == 1
    LabelSession(d).close()  # and the directory was let go


def test_npz_pile_shows_the_row_values_and_a_picture(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], torch_model: tuple[Path, Any]
) -> None:
    model_path, _ = torch_model
    rng = np.random.default_rng(9)
    pixels = rng.uniform(0, 1, size=(40, 1, 8, 8)).astype(np.float32)
    pixels[::2] += 0.5
    np.savez(tmp_path / "pile.npz", pixels=pixels, other=np.arange(3))
    _, d, rows = _captured_campaign(
        tmp_path, capsys, model_path, tmp_path / "pile.npz", "--key", "pixels"
    )
    first = rows[0]
    served, state = _page(d)
    try:
        assert state["current"]["view"] == {"type": "image", "url": f"/api/image/{first}"}
        code, body, kind = served.get(f"/api/image/{first}")
        assert code == 200 and kind == "image/png"
        drawn = np.asarray(Image.open(io.BytesIO(body)), dtype=np.float64)
        assert drawn.shape == (256, 256)  # 8x8 drawn large; the brightest pixel is white
        i, j = np.unravel_index(np.argmax(pixels[first, 0]), (8, 8))
        assert drawn[i * 32, j * 32] == 255
    finally:
        served.stop()
    tasks, config, _ = _export(d, capsys)
    flat = pixels[first].reshape(-1)
    shown = ", ".join(f"{float(v):.4g}" for v in flat)
    assert tasks[0]["data"]["text"] == f"row {first}: [{shown}]"
    assert _choices(config) == CLASSES

    # the archive moves: rows by number with a note (page and export), no error
    (tmp_path / "pile.npz").rename(tmp_path / "elsewhere.npz")
    served, state = _page(d)
    try:
        v = state["current"]["view"]
        assert v["type"] == "none" and "pile.npz" in v["note"] and "not there" in v["note"]
        assert served.get(f"/api/image/{first}")[0] == 404
    finally:
        served.stop()
    tasks, _, err = _export(d, capsys)
    assert tasks[0]["data"]["text"] == f"row {first} (id {first})"
    assert "not there any more" in err
    # ... and comes back with another key's rows: an error naming the change
    np.savez(tmp_path / "pile.npz", pixels=pixels[:, :, :4], other=np.arange(3))
    with pytest.raises(LabelwiseError, match=r"shape is \[40, 1, 4, 8\].*\[40, 1, 8, 8\]"):
        RowView(_ws(d))
    np.savez(tmp_path / "pile.npz", features=pixels)
    with pytest.raises(LabelwiseError, match=r"cannot be reopened.*'pixels' \(--key\) is not in"):
        RowView(_ws(d))


def test_zarr_pile_shows_the_row_values_and_a_picture(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], torch_model: tuple[Path, Any]
) -> None:
    """A pile captured from a zarr store ('capture --inputs pile.zarr', kind 'zarr') was 'of an
    unknown kind' to the page and to Label Studio's export: rows by number only. It is an
    array pile like .npy and .npz."""
    zarr = pytest.importorskip("zarr")
    model_path, _ = torch_model
    pixels = np.random.default_rng(3).uniform(0, 1, size=(30, 1, 8, 8)).astype(np.float32)
    store = zarr.open(
        str(tmp_path / "pile.zarr"), mode="w", shape=pixels.shape, chunks=(7, 1, 8, 8), dtype="f4"
    )
    store[:] = pixels
    _, d, rows = _captured_campaign(tmp_path, capsys, model_path, tmp_path / "pile.zarr")
    first = rows[0]
    served, state = _page(d)
    try:
        assert state["current"]["view"] == {"type": "image", "url": f"/api/image/{first}"}
        assert served.get(f"/api/image/{first}")[:3:2] == (200, "image/png")
    finally:
        served.stop()
    tasks, _, _ = _export(d, capsys)
    shown = ", ".join(f"{float(v):.4g}" for v in pixels[first].reshape(-1))
    assert tasks[0]["data"]["text"] == f"row {first}: [{shown}]"


def test_csv_blank_lines_are_no_rows_and_relative_paths_read_against_the_capture(
    tmp_path: Path,
) -> None:
    cap = tmp_path / "cap"
    cap.mkdir()
    np.save(cap / "activations.npy", np.zeros((3, 2)))
    (cap / "pile.csv").write_text("a,b,note\n1,2,first\n\n3,4,second\n5,6,third\n")
    (cap / "capture.json").write_text(json.dumps({"pile": {"kind": "csv", "path": "pile.csv"}}))
    ws = Workspace(tmp_path / "dir")
    ws.sources = {"activations": {"path": str(cap / "activations.npy")}}
    view = RowView(ws)
    assert view.kind == "table"
    assert view.record(1) == (["a", "b", "note"], ["3", "4", "second"])  # not the blank line
    np.testing.assert_array_equal(view.values(2), [5, 6])
    assert view.text(0) == "row 0: a=1, b=2, note=first"
    with pytest.raises(LabelwiseError, match="row 3 is not in the pile of 3 rows"):
        view.record(3)
    (cap / "capture.json").write_text(json.dumps({"pile": {"kind": "hdf5", "path": "pile.csv"}}))
    unknown = RowView(ws)
    assert unknown.kind == "none" and "unknown kind 'hdf5'" in unknown.note


def test_a_semicolon_csv_pile_is_read_and_shown_by_its_columns(tmp_path: Path) -> None:
    """A CSV saved by a spreadsheet where ',' is the decimal mark ('a;b;note', '1,5;2;x')
    was one column 'a;b;note': 'has no numeric column' or 'column 'a;b;c' is not a finite
    number: '4;5;6''. open_pile and the label page now read its ';' fields (and decimal
    commas), as the labels reader does."""
    cap = tmp_path / "cap"
    cap.mkdir()
    np.save(cap / "activations.npy", np.zeros((2, 2)))
    (cap / "pile.csv").write_text("a;b;note\n1,5;2;first\n3;4,25;second, with a comma\n")
    pile = open_pile(cap / "pile.csv")
    np.testing.assert_array_equal(pile[:], [[1.5, 2.0], [3.0, 4.25]])
    (cap / "capture.json").write_text(json.dumps({"pile": {"kind": "csv", "path": "pile.csv"}}))
    ws = Workspace(tmp_path / "dir")
    ws.sources = {"activations": {"path": str(cap / "activations.npy")}}
    view = RowView(ws)
    assert view.record(1) == (["a", "b", "note"], ["3", "4,25", "second, with a comma"])
    np.testing.assert_array_equal(view.values(0), [1.5, 2.0])


def test_csv_pile_with_a_repeated_column_or_a_short_line_is_refused(tmp_path: Path) -> None:
    """'x,x' read both columns as the second x ([[2, 2]] for the line '1,2') without a word;
    a line with a field missing said "column 'c' is not a finite number: ''"."""
    (tmp_path / "d.csv").write_text("x,x\n1,2\n")
    with pytest.raises(LabelwiseError, match=r"names the columns \['x'\] more than once"):
        open_pile(tmp_path / "d.csv")
    (tmp_path / "r.csv").write_text("a,b,c\n1,2,3\n4,5\n")
    with pytest.raises(LabelwiseError, match=r"line 3 has 2 fields, the header 3 \(a, b, c\)"):
        open_pile(tmp_path / "r.csv")

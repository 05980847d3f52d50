"""Piles (labelwise.piles) and labels by class name and by row id.

Round trips of .npy, .npz, CSV and Parquet piles (values and ids equal to the source), image
folders (decoding, preprocessing, errors naming the file), and the CLI end to end on a folder
of generated PNGs: capture, select, label by file name and class name, estimate.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from labelwise.cli import main
from labelwise.exceptions import LabelwiseError
from labelwise.io import read_labels_csv
from labelwise.piles import ImageSpec, open_pile

Image = pytest.importorskip("PIL.Image")

CLASSES = ["dark", "bright"]


def _write_csv(path: Path, header: list[str], rows: list[list[object]], bom: bool = False) -> Path:
    with open(path, "w", newline="", encoding="utf-8-sig" if bom else "utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(header)
        w.writerows(rows)
    return path


def _png_pile(root: Path, n: int = 60, seed: int = 0) -> tuple[list[str], np.ndarray]:
    """``n`` 8x8 grey PNGs in two sub-folders; a class is dark or bright. Returns the ids
    (sorted relative paths) and the true class of each, in id order."""
    rng = np.random.default_rng(seed)
    truth: dict[str, int] = {}
    for i in range(n):
        y = int(rng.integers(2))
        base = rng.uniform(40, 150) if y == 0 else rng.uniform(110, 220)  # overlapping
        pixels = np.clip(base + rng.normal(0, 40, size=(8, 8)), 0, 255).astype(np.uint8)
        rel = f"{'ab'[i % 2]}/img_{i:03d}.png"
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        Image.fromarray(pixels, mode="L").save(root / rel)
        truth[rel] = y
    ids = sorted(truth)
    return ids, np.asarray([truth[i] for i in ids])


# ------------------------------------------------------------------------------ arrays


def test_npy_is_memory_mapped_and_rows_come_back_in_the_order_asked(tmp_path: Path) -> None:
    x = np.arange(40, dtype=np.float64).reshape(10, 4)
    np.save(tmp_path / "x.npy", x)
    pile = open_pile(tmp_path / "x.npy")
    assert pile.shape == (10, 4) and pile.dtype == np.float32 and len(pile) == 10
    np.testing.assert_array_equal(pile[2:5], x[2:5])
    np.testing.assert_array_equal(pile[np.array([7, 1, 7, 0])], x[[7, 1, 7, 0]])
    np.testing.assert_array_equal(pile[-1], x[9])
    assert list(pile.ids) == [str(i) for i in range(10)]
    assert pile.describe()["kind"] == "npy" and pile.describe()["shape"] == [10, 4]


def test_npz_key_round_trip_and_bad_key_lists_the_keys(tmp_path: Path) -> None:
    a = np.random.default_rng(0).normal(size=(6, 3)).astype(np.float32)
    np.savez(tmp_path / "x.npz", features=a, labels=np.arange(6))
    pile = open_pile(tmp_path / "x.npz", key="features")
    np.testing.assert_array_equal(pile[:], a)
    assert pile.describe()["key"] == "features" and pile.ids[5] == "5"
    with pytest.raises(LabelwiseError, match=r"key 'feats' \(--key\) is not in .*features, labels"):
        open_pile(tmp_path / "x.npz", key="feats")
    with pytest.raises(LabelwiseError, match=r"holds 2 arrays; choose one with key= \(--key\)"):
        open_pile(tmp_path / "x.npz")
    np.savez(tmp_path / "one.npz", only=a)
    np.testing.assert_array_equal(open_pile(tmp_path / "one.npz")[:], a)


def test_option_for_another_kind_is_an_error(tmp_path: Path) -> None:
    np.save(tmp_path / "x.npy", np.zeros((3, 2)))
    with pytest.raises(LabelwiseError, match=r"key \(--key\) applies to npz piles"):
        open_pile(tmp_path / "x.npy", key="a")
    (tmp_path / "x.txt").write_text("1 2\n")
    with pytest.raises(LabelwiseError, match=r"not a pile labelwise reads"):
        open_pile(tmp_path / "x.txt")


# ------------------------------------------------------------------------------ tables


def test_csv_table_default_columns_ids_and_a_bad_value(tmp_path: Path) -> None:
    path = _write_csv(
        tmp_path / "t.csv",
        ["name", "x", "y", "note"],
        [["r0", 1, 2.5, "ok"], ["r1", -3, 4, "fine"], ["r2", 5, 6e3, "x"]],
        bom=True,
    )
    pile = open_pile(path, id_column="name")
    assert pile.describe()["columns"] == ["x", "y"]
    np.testing.assert_array_equal(pile[:], [[1, 2.5], [-3, 4], [5, 6000]])
    assert list(pile.ids) == ["r0", "r1", "r2"]
    np.testing.assert_array_equal(open_pile(path, columns=["y"])[:], [[2.5], [4], [6000]])
    assert open_pile(path).ids[2] == "2"  # no id column: the row number
    with pytest.raises(LabelwiseError, match=r"row 0 \(line 2\) column 'note' .*'ok'"):
        open_pile(path, columns=["x", "note"])
    with pytest.raises(LabelwiseError, match=r"'z' not in .*columns: name, x, y, note"):
        open_pile(path, columns=["z"])
    bad = _write_csv(tmp_path / "b.csv", ["x", "y"], [[1, 2], [3, "n/a"]])
    with pytest.raises(LabelwiseError, match=r"row 1 .*column 'y' is not a finite number: 'n/a'"):
        open_pile(bad)
    dup = _write_csv(tmp_path / "d.csv", ["id", "x"], [["a", 1], ["a", 2]])
    with pytest.raises(LabelwiseError, match=r"repeats ids"):
        open_pile(dup, id_column="id")


def test_parquet_table_round_trip(tmp_path: Path) -> None:
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    rng = np.random.default_rng(1)
    x = rng.normal(size=(7, 3))
    table = pa.table(
        {
            "file": [f"f{i}.png" for i in range(7)],
            "a": x[:, 0],
            "b": x[:, 1].astype(np.float32),
            "c": np.arange(7, dtype=np.int32),
            "tag": ["t"] * 7,
        }
    )
    pq.write_table(table, tmp_path / "t.parquet")
    pile = open_pile(tmp_path / "t.parquet", id_column="file")
    assert pile.describe()["columns"] == ["a", "b", "c"] and pile.kind == "parquet"
    expected = np.column_stack([x[:, 0], x[:, 1], np.arange(7)]).astype(np.float32)
    np.testing.assert_array_equal(pile[:], expected)
    np.testing.assert_array_equal(pile[np.array([6, 2])], expected[[6, 2]])
    assert pile.ids[3] == "f3.png"
    with pytest.raises(LabelwiseError, match=r"column 'tag' .* is not numeric"):
        open_pile(tmp_path / "t.parquet", columns=["a", "tag"])


# ------------------------------------------------------------------------------ images


def test_image_folder_ids_preprocessing_and_decoding(tmp_path: Path) -> None:
    ids, _ = _png_pile(tmp_path / "pile", n=6)
    pile = open_pile(tmp_path / "pile", image=ImageSpec(channels=1))
    assert list(pile.ids) == ids and ids[0] == "a/img_000.png" and ids[-1] == "b/img_005.png"
    assert pile.shape == (6, 1, 8, 8)
    raw = np.asarray(Image.open(tmp_path / "pile" / ids[4]), dtype=np.float32)
    np.testing.assert_allclose(pile[4][0], raw / 255, rtol=1e-6)
    spec = ImageSpec(size=(4, 5), channels=3, mean=(0.5,), std=(0.25,), layout="hwc")
    norm = open_pile(tmp_path / "pile", image=spec)
    assert norm.shape == (6, 4, 5, 3)
    img = Image.open(tmp_path / "pile" / ids[1]).convert("RGB").resize((5, 4), Image.BILINEAR)
    expected = (np.asarray(img, dtype=np.float32) / 255 - 0.5) / 0.25
    np.testing.assert_allclose(norm[1], expected, rtol=1e-5, atol=1e-6)
    info = norm.describe()
    assert info["kind"] == "images" and info["root"] == str((tmp_path / "pile").resolve())
    assert info["preprocessing"] == {
        "size": [4, 5],
        "channels": 3,
        "scale": 1 / 255,
        "mean": [0.5],
        "std": [0.25],
        "layout": "hwc",
    }


def test_images_of_two_sizes_name_two_files(tmp_path: Path) -> None:
    _png_pile(tmp_path / "pile", n=3)
    Image.fromarray(np.zeros((9, 8), np.uint8), mode="L").save(tmp_path / "pile" / "z.png")
    with pytest.raises(LabelwiseError, match=r"img_000.png is 8x8 .*z.png is 9x8.*--image-size"):
        open_pile(tmp_path / "pile")
    assert open_pile(tmp_path / "pile", image=ImageSpec(size=(8, 8))).shape == (4, 3, 8, 8)


def test_corrupt_png_is_named(tmp_path: Path) -> None:
    _png_pile(tmp_path / "pile", n=4)
    good = (tmp_path / "pile" / "a" / "img_000.png").read_bytes()
    (tmp_path / "pile" / "a" / "img_002.png").write_bytes(good[: len(good) // 2])  # truncated
    (tmp_path / "pile" / "b" / "junk.png").write_bytes(b"not a png at all")
    with pytest.raises(LabelwiseError, match=r"cannot read image .*junk\.png"):
        open_pile(tmp_path / "pile")
    (tmp_path / "pile" / "b" / "junk.png").unlink()
    pile = open_pile(tmp_path / "pile", image=ImageSpec(size=(8, 8), channels=1))
    assert pile.ids[1] == "a/img_002.png"
    assert pile[np.array([0, 2])].shape == (2, 1, 8, 8)  # only the corrupt one fails
    with pytest.raises(LabelwiseError, match=r"cannot decode image .*a/img_002\.png"):
        pile[:]


# ------------------------------------------------------------------------------ labels


def test_labels_by_class_name_and_by_id(tmp_path: Path) -> None:
    ids = ["a/x.png", "a/y.png", "b/z.png"]
    names = CLASSES
    by_name = _write_csv(tmp_path / "l.csv", ["row", "label"], [[0, " bright"], [2, "0"]], True)
    rows, kind, values = read_labels_csv(by_name, classes=names)
    assert kind == "label" and rows.tolist() == [0, 2] and values.tolist() == [1, 0]
    with pytest.raises(LabelwiseError, match=r"line 2: label must be an integer.*--classes"):
        read_labels_csv(by_name)
    typo = _write_csv(tmp_path / "t.csv", ["row", "label"], [[0, "dark"], [1, "brigth"]])
    with pytest.raises(LabelwiseError, match=r"line 3: 'brigth' is not a class name; did you mean"):
        read_labels_csv(typo, classes=names)
    by_id = _write_csv(tmp_path / "i.csv", ["id", "label"], [["b/z.png", "dark"], ["a/x.png", 1]])
    rows, _, values = read_labels_csv(by_id, classes=names, ids=ids)
    assert rows.tolist() == [2, 0] and values.tolist() == [0, 1]
    with pytest.raises(LabelwiseError, match=r"row ids of this pile are unknown"):
        read_labels_csv(by_id, classes=names)
    lost = _write_csv(tmp_path / "u.csv", ["id", "label"], [["a/x.png", 1], ["c/q.png", 0]])
    with pytest.raises(LabelwiseError, match=r"1 ids that are not rows .*'c/q.png' \(line 3\)"):
        read_labels_csv(lost, ids=ids)
    both = _write_csv(tmp_path / "b.csv", ["row", "id", "label"], [[1, "b/z.png", 0]])
    with pytest.raises(LabelwiseError, match=r"row 1 has id 'a/y.png', but the file says"):
        read_labels_csv(both, ids=ids)


def test_windows_ids_match_and_ambiguous_ids_are_an_error(tmp_path: Path) -> None:
    """A labeller on Windows wrote 'blue\\011.png' for the pile's 'blue/011.png': 'not a row
    of the pile'. Ids that become the same key (both spellings in one pile) are an error
    naming the rows, not a silent choice of one of them."""
    ids = ["red/001.png", "blue/011.png"]
    win = _write_csv(
        tmp_path / "w.csv", ["id", "label"], [["blue\\011.png", 1], ["red\\001.png", 0]]
    )
    rows, _, values = read_labels_csv(win, ids=ids)
    assert rows.tolist() == [1, 0] and values.tolist() == [1, 0]
    both = ["a/b.png", "a\\b.png", "c.png"]
    ok = _write_csv(tmp_path / "c.csv", ["id", "label"], [["c.png", 2]])
    assert read_labels_csv(ok, ids=both)[0].tolist() == [2]
    amb = _write_csv(tmp_path / "a.csv", ["id", "label"], [["a/b.png", 1]])
    with pytest.raises(LabelwiseError, match=r"names rows \[0, 1\]"):
        read_labels_csv(amb, ids=both)


def test_unicode_ids_match_in_either_normal_form(tmp_path: Path) -> None:
    """'blå.png' typed in a labeller's CSV (composed, NFC) was 'not a row of the pile' when
    ids.txt held the file name as macOS writes it (decomposed, NFD), and the other way round."""
    import unicodedata

    nfc, nfd = (unicodedata.normalize(f, "blå/ü.png") for f in ("NFC", "NFD"))
    assert nfc != nfd
    for in_ids, in_csv in ((nfd, nfc), (nfc, nfd)):
        ids = ["a.png", in_ids]
        by_id = _write_csv(tmp_path / "i.csv", ["id", "label"], [[in_csv, 1], ["a.png", 0]])
        rows, _, values = read_labels_csv(by_id, ids=ids)
        assert rows.tolist() == [1, 0] and values.tolist() == [1, 0]
        both = _write_csv(tmp_path / "b.csv", ["row", "id", "label"], [[1, in_csv, 0]])
        assert read_labels_csv(both, ids=ids)[0].tolist() == [1]


# ------------------------------------------------------------------------------ CLI


def _run(*argv: object) -> int:
    return main([str(a) for a in argv])


@pytest.fixture(scope="module")
def torch_model(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, object]:
    torch = pytest.importorskip("torch")
    torch.manual_seed(3)
    model = torch.nn.Sequential(
        torch.nn.Flatten(), torch.nn.Linear(64, 6), torch.nn.ReLU(), torch.nn.Linear(6, 2)
    )
    with torch.no_grad():  # hidden 0: brightness, hidden 1: darkness; a brightness threshold
        model[1].weight[:2] = torch.tensor([1.0, -1.0])[:, None] / 64
        model[1].bias[:2] = torch.tensor([0.0, 1.0])
        model[3].weight[:] = 0.01 * model[3].weight + torch.tensor([[0.0, 1, 0, 0, 0, 0]] * 2)
        model[3].weight[1, :2] = torch.tensor([1.0, 0.0])
    path = tmp_path_factory.mktemp("model") / "model.pt"
    torch.save(model, str(path))
    return path, model


def _predict(model: object, root: Path, ids: list[str]) -> np.ndarray:
    import torch

    x = np.stack([np.asarray(Image.open(root / i), dtype=np.float32) / 255 for i in ids])
    with torch.no_grad():
        logits = model(torch.from_numpy(x[:, None]))  # type: ignore[operator]
    return logits.argmax(dim=1).numpy()


def test_image_folder_end_to_end_labels_by_file_and_class_name(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], torch_model: tuple[Path, object]
) -> None:
    model_path, model = torch_model
    ids, truth = _png_pile(tmp_path / "pile")
    (tmp_path / "classes.txt").write_text("dark\nbright\n")
    cap, sel = tmp_path / "cap", tmp_path / "sel"
    code = _run(
        "capture", "--model", model_path, "--inputs", tmp_path / "pile", "--image-size", "8x8",
        "--channels", "1", "--batch-size", "16", "--classes", tmp_path / "classes.txt",
        "--out", cap,
    )  # fmt: skip
    assert code == 0, capsys.readouterr().err
    assert (cap / "ids.txt").read_text().splitlines() == ids
    assert json.loads((cap / "classes.json").read_text()) == CLASSES
    pile = json.loads((cap / "capture.json").read_text())["pile"]
    assert pile["kind"] == "images" and pile["preprocessing"]["size"] == [8, 8]
    assert pile["preprocessing"]["channels"] == 1 and pile["rows"] == 60
    preds = _predict(model, tmp_path / "pile", ids)
    np.testing.assert_array_equal(np.load(cap / "predictions.npy"), preds)

    assert _run(
        "select", "--method", "srs", "--budget", "24", "--seed", "5",
        "--activations", cap / "activations.npy", "--probs", cap / "probabilities.npy",
        "--out", sel,
    ) == 0  # fmt: skip
    with open(sel / "to_label.csv", newline="") as fh:
        to_label = list(csv.DictReader(fh))
    assert list(to_label[0]) == ["order", "row", "id", "new"]
    assert all(r["id"] == ids[int(r["row"])] for r in to_label)
    # the labeller answers by file name and class name, in a spreadsheet (BOM)
    labelled = [r["id"] for r in to_label]
    rows = [ids.index(i) for i in labelled]
    _write_csv(
        tmp_path / "labels.csv",
        ["id", "label"],
        [[i, CLASSES[truth[r]]] for i, r in zip(labelled, rows, strict=True)],
        bom=True,
    )
    capsys.readouterr()
    assert main(["estimate", str(sel), "--labels", str(tmp_path / "labels.csv"), "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    by_hand = float(np.mean(preds[rows] == truth[rows]))
    assert shown["value"] == pytest.approx(by_hand) and shown["n_labelled"] == 24
    assert 0.6 < by_hand < 1, (by_hand, preds.mean())  # a model that errs, sometimes
    assert main(["estimate", str(sel), "--labels", str(tmp_path / "labels.csv")]) == 0
    text = capsys.readouterr().out
    dark = [r for r in rows if truth[r] == 0]
    dark_ok = int(np.sum(preds[dark] == 0))
    assert f"    {'dark':<6}  {len(dark):>8}  {dark_ok:>7}" in text
    doc = json.loads((sel / "estimate.json").read_text())
    assert [c["class"] for c in doc["by_class"]] == CLASSES

    # an unknown file name and an unknown class name are errors naming them
    _write_csv(tmp_path / "bad.csv", ["id", "label"], [[labelled[0], "dark"], ["a/nope.png", 1]])
    assert main(["estimate", str(sel), "--labels", str(tmp_path / "bad.csv")]) == 2
    assert "'a/nope.png' (line 3)" in capsys.readouterr().err
    _write_csv(tmp_path / "bad2.csv", ["row", "label"], [[rows[0], "grey"]])
    assert main(["estimate", str(sel), "--labels", str(tmp_path / "bad2.csv")]) == 2
    err = capsys.readouterr().err
    assert "line 2: 'grey' is not a class name; known names: 'dark', 'bright'" in err


def test_campaign_and_rank_read_class_names(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], torch_model: tuple[Path, object]
) -> None:
    model_path, _ = torch_model
    ids, truth = _png_pile(tmp_path / "pile", n=40, seed=2)
    cap = tmp_path / "cap"
    base = ["capture", "--model", str(model_path), "--inputs", str(tmp_path / "pile")]
    assert main([*base, "--channels", "1", "--out", str(cap)]) == 0
    (tmp_path / "classes.json").write_text(json.dumps(CLASSES))
    camp = tmp_path / "camp"
    assert _run(
        "campaign", camp, "--activations", cap / "activations.npy",
        "--probs", cap / "probabilities.npy", "--method", "srs", "--seed", "1",
        "--classes", tmp_path / "classes.json",
    ) == 0  # fmt: skip
    assert main(["next", str(camp), "--batch", "10"]) == 0
    with open(camp / "to_label.csv", newline="") as fh:
        proposed = [(int(r["row"]), r["id"]) for r in csv.DictReader(fh)]
    assert [i for _, i in proposed] == [ids[r] for r, _ in proposed]
    _write_csv(tmp_path / "l.csv", ["id", "label"], [[i, CLASSES[truth[r]]] for r, i in proposed])
    capsys.readouterr()
    assert main(["estimate", str(camp), "--labels", str(tmp_path / "l.csv"), "--json"]) == 0
    preds = np.load(cap / "predictions.npy")
    rows = [r for r, _ in proposed]
    shown = json.loads(capsys.readouterr().out)
    assert shown["value"] == pytest.approx(float(np.mean(preds[rows] == truth[rows])))
    bright = [r for r in rows if truth[r] == 1]
    assert shown["by_class"][1] == {
        "class": "bright",
        "index": 1,
        "labelled": len(bright),
        "correct": int(np.sum(preds[bright] == 1)),
    }

    # rank: two models' predictions, labels by class name from --classes
    two = np.stack([preds, 1 - preds])
    np.save(tmp_path / "two.npy", two)
    sel = tmp_path / "sel"
    assert _run(
        "select", "--method", "srs", "--budget", "12", "--seed", "0",
        "--activations", cap / "activations.npy", "--predictions", tmp_path / "two.npy",
        "--out", sel,
    ) == 0  # fmt: skip
    with open(sel / "to_label.csv", newline="") as fh:
        chosen = [int(r["row"]) for r in csv.DictReader(fh)]
    _write_csv(tmp_path / "r.csv", ["row", "label"], [[r, CLASSES[truth[r]]] for r in chosen])
    capsys.readouterr()
    assert _run(
        "rank", sel, "--labels", tmp_path / "r.csv", "--bootstrap", "200",
        "--classes", tmp_path / "classes.json", "--names", "model,flipped",
    ) == 0  # fmt: skip
    out = capsys.readouterr().out
    acc = float(np.mean(preds[chosen] == truth[chosen]))
    table = {line.split()[1]: float(line.split()[2]) for line in out.splitlines()[3:]}
    assert table == {
        "model": pytest.approx(acc, abs=1e-4),
        "flipped": pytest.approx(1 - acc, abs=1e-4),
    }
    assert json.loads((sel / "classes.json").read_text()) == CLASSES


def test_capture_cli_bad_key_and_classes_count(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], torch_model: tuple[Path, object]
) -> None:
    model_path, _ = torch_model
    x = np.random.default_rng(0).normal(size=(5, 64)).astype(np.float32)
    np.savez(tmp_path / "x.npz", pixels=x, y=np.zeros(5))
    base = ["capture", "--model", str(model_path), "--inputs", str(tmp_path / "x.npz")]
    assert main([*base, "--key", "px", "--out", str(tmp_path / "c")]) == 2
    assert "key 'px' (--key) is not in" in capsys.readouterr().err
    assert main([*base, "--image-size", "8x8", "--out", str(tmp_path / "c")]) == 2
    assert "--image-size applies only to a folder of images" in capsys.readouterr().err
    (tmp_path / "three.txt").write_text("a\nb\nc\n")
    argv = [*base, "--key", "pixels", "--classes", str(tmp_path / "three.txt")]
    assert main([*argv, "--out", str(tmp_path / "c")]) == 2
    assert "names 3 classes, the model outputs 2" in capsys.readouterr().err
    assert main([*base, "--key", "pixels", "--out", str(tmp_path / "c")]) == 0
    assert (tmp_path / "c" / "ids.txt").read_text().splitlines() == ["0", "1", "2", "3", "4"]
    assert json.loads((tmp_path / "c" / "capture.json").read_text())["pile"]["key"] == "pixels"


def test_a_failed_capture_leaves_the_earlier_capture_as_it_was(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], torch_model: tuple[Path, object]
) -> None:
    """A run into an existing --out that fails after the model ran changes no file there."""
    model_path, _ = torch_model
    gen = np.random.default_rng(1)
    np.save(tmp_path / "a.npy", gen.normal(size=(6, 64)).astype(np.float32))
    np.save(tmp_path / "b.npy", gen.normal(size=(9, 64)).astype(np.float32))
    out = tmp_path / "c"
    base = ["capture", "--model", str(model_path), "--out", str(out)]
    assert main([*base, "--inputs", str(tmp_path / "a.npy")]) == 0
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    assert {"activations.npy", "probabilities.npy", "capture.json", "ids.txt"} <= set(before)
    (tmp_path / "three.txt").write_text("a\nb\nc\n")
    capsys.readouterr()
    argv = [*base, "--inputs", str(tmp_path / "b.npy"), "--classes", str(tmp_path / "three.txt")]
    assert main(argv) == 2
    assert "names 3 classes, the model outputs 2" in capsys.readouterr().err
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before  # no staging left either
    assert np.load(out / "activations.npy").shape[0] == 6
    # a run that succeeds replaces the capture and drops files it no longer writes
    (out / "classes.json").write_text('["x", "y"]')
    assert main([*base, "--inputs", str(tmp_path / "b.npy")]) == 0
    assert np.load(out / "activations.npy").shape[0] == 9
    assert not (out / "classes.json").exists()
    assert sorted(p.name for p in out.iterdir() if p.name.startswith(".")) == []


def test_zarr_pile_captures_like_the_same_npy(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], torch_model: tuple[Path, object]
) -> None:
    """A zarr store is a pile: read chunk by chunk, same capture as the .npy of its rows."""
    zarr = pytest.importorskip("zarr")
    model_path, _ = torch_model
    x = np.random.default_rng(3).normal(size=(23, 64)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    z = zarr.open_array(str(tmp_path / "x.zarr"), mode="w", shape=x.shape, chunks=(5, 64))
    z[:] = x
    pile = open_pile(tmp_path / "x.zarr")
    assert pile.kind == "zarr" and pile.describe()["chunks"] == [5, 64]
    rows = np.array([22, 0, 7, 7, 11])
    np.testing.assert_array_equal(pile[rows], x[rows])  # chunk boundaries, a repeated row
    base = ["capture", "--model", str(model_path), "--batch-size", "4"]
    for name, out in (("x.npy", "from_npy"), ("x.zarr", "from_zarr")):
        assert main([*base, "--inputs", str(tmp_path / name), "--out", str(tmp_path / out)]) == 0
    for arr in ("activations.npy", "probabilities.npy"):
        expected = np.load(tmp_path / "from_npy" / arr)
        np.testing.assert_array_equal(np.load(tmp_path / "from_zarr" / arr), expected)
    assert (
        json.loads((tmp_path / "from_zarr" / "capture.json").read_text())["pile"]["kind"] == "zarr"
    )
    capsys.readouterr()
    (tmp_path / "bad.zarr").mkdir()
    assert main([*base, "--inputs", str(tmp_path / "bad.zarr"), "--out", str(tmp_path / "b")]) == 2
    assert "not a readable zarr array" in capsys.readouterr().err


def test_a_selection_from_one_capture_file_knows_ids_and_the_model(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """CSS from CAP/probabilities.npy alone wrote no ids (so labels by file name were refused),
    and SRS/CES from CAP/activations.npy alone recorded no probabilities (so estimate, label
    and report asked for --predictions): both now find the capture beside the file given."""
    from synthetic import captured_pile, run_cli

    ids = [f"c/{i:03d}.png" for i in range(80)]
    pile = captured_pile(tmp_path, 4, 80, CLASSES, 4, ids)
    cap, y = pile["cap"], pile["y"]
    preds = pile["probs"].argmax(axis=1)
    for method, flag, file in (
        ("css", "--probs", "probabilities.npy"),
        ("srs", "--activations", "activations.npy"),
    ):
        sel = tmp_path / method
        code, out, err = run_cli(
            ["select", "--method", method, "--budget", 12, flag, cap / file, "--seed", 0,
             "--out", sel],
            capsys,
        )  # fmt: skip
        assert code == 0, err
        with open(sel / "to_label.csv", newline="") as fh:
            rows = [int(r["row"]) for r in csv.DictReader(fh) if r["id"] == ids[int(r["row"])]]
        assert len(rows) == 12
        labels = _write_csv(
            tmp_path / f"{method}.csv", ["id", "label"], [[ids[r], CLASSES[y[r]]] for r in rows]
        )
        code, out, err = run_cli(["estimate", sel, "--labels", labels, "--json"], capsys)
        assert code == 0, err
        shown = json.loads(out)
        assert shown["n_labelled"] == 12
        if method == "srs":  # a plain mean; CSS weighs its strata
            assert shown["value"] == pytest.approx(np.mean(preds[rows] == y[rows]))


def test_classes_that_contradict_the_capture_are_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """'estimate --classes' naming the capture's classes in another order was taken: labels
    by name were then scored against the wrong class numbers (0.05 for a model of 0.7),
    exit 0. Names that contradict CAP/classes.json are now an error; the same names pass."""
    from synthetic import captured_pile, run_cli

    ids = [f"{i}.png" for i in range(40)]
    pile = captured_pile(tmp_path, 5, 40, CLASSES, 4, ids)
    sel = tmp_path / "sel"
    argv = ["select", "--method", "srs", "--budget", 40, "--activations"]
    code, _, err = run_cli([*argv, pile["cap"] / "activations.npy", "--out", sel], capsys)
    assert code == 0, err
    labels = _write_csv(
        tmp_path / "l.csv",
        ["id", "label"],
        [[i, CLASSES[c]] for i, c in zip(ids, pile["y"], strict=True)],
    )
    (tmp_path / "rev.txt").write_text("\n".join(reversed(CLASSES)) + "\n")
    (tmp_path / "same.txt").write_text("\n".join(CLASSES) + "\n")
    code, _, err = run_cli(
        ["estimate", sel, "--labels", labels, "--classes", tmp_path / "rev.txt"], capsys
    )
    assert code == 2 and "names the classes otherwise than the capture's" in err, err
    assert not (sel / "classes.json").exists()
    code, out, err = run_cli(
        ["estimate", sel, "--labels", labels, "--classes", tmp_path / "same.txt", "--json"], capsys
    )
    truth = np.mean(pile["probs"].argmax(axis=1) == pile["y"])
    assert code == 0 and json.loads(out)["value"] == pytest.approx(truth), err


def test_a_project_folder_moved_as_a_whole_still_works(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A team copies its folder (capture and selection side by side) elsewhere: every command
    failed with 'probs recorded in selection.json: /old/cap/probabilities.npy does not exist'.
    Sources are now also found where they lay relative to the directory (sha256 checked);
    one that is really gone is named with both places to put it back."""
    from synthetic import captured_pile, run_cli

    ids = [f"{i}.png" for i in range(50)]
    (tmp_path / "old").mkdir()
    pile = captured_pile(tmp_path / "old", 6, 50, CLASSES, 4, ids)
    sel = tmp_path / "old" / "sel"
    argv = ["select", "--method", "srs", "--budget", 10, "--seed", 1, "--out", sel]
    code, _, err = run_cli([*argv, "--activations", pile["cap"] / "activations.npy"], capsys)
    assert code == 0, err
    with open(sel / "to_label.csv", newline="") as fh:
        rows = [int(r["row"]) for r in csv.DictReader(fh)]
    _write_csv(sel / "labels.csv", ["row", "label"], [[r, pile["y"][r]] for r in rows])
    (tmp_path / "old").rename(tmp_path / "new")
    moved = tmp_path / "new" / "sel"
    code, out, err = run_cli(
        ["estimate", moved, "--labels", moved / "labels.csv", "--json"], capsys
    )
    assert code == 0, err
    assert json.loads(out)["value"] == np.mean(
        pile["probs"].argmax(axis=1)[rows] == pile["y"][rows]
    )
    (tmp_path / "new" / "cap" / "probabilities.npy").unlink()
    code, _, err = run_cli(["estimate", moved, "--labels", moved / "labels.csv"], capsys)
    assert code == 2 and "probabilities.npy does not exist (moved or deleted?)" in err
    assert f"or at {moved / '..' / 'cap' / 'probabilities.npy'}" in err


def test_python_callers_are_told_the_parameter_not_only_the_cli_flag(tmp_path: Path) -> None:
    """open_pile in a notebook said 'choose one with --key', 'give --image-size HxW', 'leave
    them out with --columns': options of the shell, not of the function called. Each
    message now names the parameter (key=, ImageSpec(size=...), columns=, id_column=) with
    the CLI flag beside it."""
    a = np.zeros((4, 2), np.float32)
    np.savez(tmp_path / "x.npz", features=a, labels=a)
    with pytest.raises(LabelwiseError, match=r"choose one with key= \(--key\)"):
        open_pile(tmp_path / "x.npz")
    with pytest.raises(LabelwiseError, match=r"^key 'feats' \(--key\) is not in"):
        open_pile(tmp_path / "x.npz", key="feats")
    _png_pile(tmp_path / "pile", n=2)
    Image.fromarray(np.zeros((9, 8), np.uint8), mode="L").save(tmp_path / "pile" / "z.png")
    with pytest.raises(LabelwiseError, match=r"ImageSpec\(size=\(H, W\)\) \(--image-size HxW\)"):
        open_pile(tmp_path / "pile")
    (tmp_path / "t.csv").write_text("a,b\n1,2\n3,4\n")
    with pytest.raises(LabelwiseError, match=r"^columns \(--columns\): 'c' not in"):
        open_pile(tmp_path / "t.csv", columns=["c"])
    with pytest.raises(LabelwiseError, match=r"^id_column \(--id-column\) 'id' is not a column"):
        open_pile(tmp_path / "t.csv", id_column="id")
    (tmp_path / "i.csv").write_text("index,a\n0,2\n1,4\n2,5\n")
    with pytest.warns(UserWarning, match=r"columns= \(--columns\) or name it with id_column="):
        open_pile(tmp_path / "i.csv", warn_id_like=True)


@pytest.mark.parametrize("scale", [0, -1.0, -1 / 255])
def test_an_image_scale_that_is_not_positive_is_refused(scale: float) -> None:
    """ImageSpec(scale=0) made every image zeros, scale=-1/255 negated every pixel, both
    without a word (every row the same, or inverted, fed to the model)."""
    with pytest.raises(
        LabelwiseError, match=r"image scale \(CLI: --scale\) must be a positive finite number"
    ):
        ImageSpec(scale=scale)


def test_an_array_given_to_open_pile_is_named() -> None:
    """open_pile(np.zeros((3, 2))) raised TypeError: expected str, bytes or os.PathLike
    object, not ndarray (from pathlib)."""
    with pytest.raises(LabelwiseError, match=r"path must be .*got ndarray.*as it is"):
        open_pile(np.zeros((3, 2)))  # type: ignore[arg-type]


def test_python_errors_name_the_path_argument_and_the_cli_names_inputs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], torch_model: tuple[Path, object]
) -> None:
    """open_pile in Python said '--inputs: x.npy does not exist', '--inputs: t.csv has a
    header but no rows': a flag of the shell. Python callers are now told 'path: ...'; the CLI
    still says '--inputs: ...'."""
    with pytest.raises(LabelwiseError, match=r"^path: .*nope\.npy does not exist"):
        open_pile(tmp_path / "nope.npy")
    (tmp_path / "t.csv").write_text("a,b\n")
    with pytest.raises(LabelwiseError, match=r"^path: .*t\.csv has a header but no rows"):
        open_pile(tmp_path / "t.csv")
    np.save(tmp_path / "s.npy", np.array(["x", "y"]))
    with pytest.raises(LabelwiseError, match=r"^path: .*s\.npy must hold real numbers"):
        open_pile(tmp_path / "s.npy")
    model_path, _ = torch_model
    base = ["capture", "--model", model_path, "--out", tmp_path / "cap"]
    assert _run(*base, "--inputs", tmp_path / "t.csv") == 2
    err = capsys.readouterr().err
    assert "--inputs: " in err and "has a header but no rows" in err and "path:" not in err


def _corrupt_pile(root: Path) -> list[str]:
    ids, _ = _png_pile(root, n=6)
    good = (root / "a" / "img_000.png").read_bytes()
    (root / "a" / "img_002.png").write_bytes(good[: len(good) // 2])  # truncated: header ok
    (root / "b" / "img_003.png").write_bytes(b"not a png at all")
    return [i for i in ids if i not in ("a/img_002.png", "b/img_003.png")]


def test_skip_corrupt_leaves_out_the_undecodable_images_and_names_them(tmp_path: Path) -> None:
    """One corrupt image in a folder stopped every capture (the error named it, but there was
    no way on). skip_corrupt=True leaves out the files Pillow cannot decode, warns which, and
    the pile's ids (ids.txt) and describe()['skipped'] record which files are rows."""
    kept = _corrupt_pile(tmp_path / "pile")
    with pytest.raises(LabelwiseError, match=r"img_003\.png .*skip_corrupt=True"):
        open_pile(tmp_path / "pile")
    with pytest.warns(UserWarning, match=r"skipped 2 corrupt image\(s\) of 6.*a/img_002\.png"):
        pile = open_pile(tmp_path / "pile", image=ImageSpec(channels=1), skip_corrupt=True)
    assert list(pile.ids) == kept and pile.shape == (4, 1, 8, 8)
    assert [s["id"] for s in pile.describe()["skipped"]] == ["a/img_002.png", "b/img_003.png"]
    assert [i for i, _ in pile.skipped] == ["a/img_002.png", "b/img_003.png"]
    assert pile.skipped == tuple((s["id"], s["reason"]) for s in pile.describe()["skipped"])
    for row, i in enumerate(kept):  # row r is the file ids[r]
        want = np.asarray(Image.open(tmp_path / "pile" / i), dtype=np.float32) / 255
        np.testing.assert_allclose(pile[row][0], want, rtol=1e-6)
    np.save(tmp_path / "t.npy", np.zeros((2, 2)))
    assert open_pile(tmp_path / "t.npy").skipped == ()
    with pytest.raises(LabelwiseError, match=r"skip_corrupt \(--skip-corrupt\) applies to"):
        open_pile(tmp_path / "t.npy", skip_corrupt=True)


def test_capture_skip_corrupt_records_the_skipped_files(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], torch_model: tuple[Path, object]
) -> None:
    """'capture --skip-corrupt' captures the images that decode; ids.txt lists them (row r
    is the file on line r), capture.json names the skipped ones, and a selection's label page
    reopens the same rows."""
    from labelwise._rowview import RowView
    from labelwise.workspace import Workspace

    model_path, model = torch_model
    kept = _corrupt_pile(tmp_path / "pile")
    base = ["capture", "--model", model_path, "--inputs", tmp_path / "pile", "--channels", "1"]
    assert _run(*base, "--out", tmp_path / "cap") == 2
    assert "--skip-corrupt" in capsys.readouterr().err
    assert _run(*base, "--skip-corrupt", "--out", tmp_path / "cap") == 0
    err = capsys.readouterr().err
    assert "skipped 2 corrupt image(s) of 6" in err and "a/img_002.png, b/img_003.png" in err
    cap = tmp_path / "cap"
    assert (cap / "ids.txt").read_text().split() == kept
    doc = json.loads((cap / "capture.json").read_text())
    assert [s["id"] for s in doc["pile"]["skipped"]] == ["a/img_002.png", "b/img_003.png"]
    np.testing.assert_array_equal(
        np.load(cap / "predictions.npy"), _predict(model, tmp_path / "pile", kept)
    )
    sel = tmp_path / "sel"
    assert _run("select", "--method", "srs", "--budget", "4", "--probs",
                cap / "probabilities.npy", "--out", sel) == 0  # fmt: skip
    view = RowView(Workspace.open(sel)[0])
    for row, i in enumerate(kept):
        assert view.image_file(row).name == Path(i).name
        np.testing.assert_allclose(
            view.inputs(row)[0], np.asarray(Image.open(tmp_path / "pile" / i)) / 255, rtol=1e-6
        )


def test_skip_corrupt_opens_each_image_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """skip_corrupt=True opened every file twice when the pile was opened (decoded to find
    the corrupt ones, then again for its size): 2,000 32x32 PNGs took 0.40 s against 0.24 s
    without it. Its size is now read while it is decoded: one open per file, sizes as
    before (an EXIF-turned image counts turned)."""
    _corrupt_pile(tmp_path / "pile")
    pixels = np.arange(48, dtype=np.uint8).reshape(6, 8)  # stored 6 high, 8 wide ...
    exif = Image.Exif()
    exif[0x0112] = 6  # ... shown turned: 8 high, 6 wide, unlike the 8x8 others
    Image.fromarray(pixels, mode="L").save(tmp_path / "pile" / "a" / "turned.png", exif=exif)
    opened: list[str] = []
    real_open = Image.open

    def counting_open(fp: Any, *args: Any, **kwargs: Any) -> Any:
        opened.append(Path(fp).name)
        return real_open(fp, *args, **kwargs)

    monkeypatch.setattr(Image, "open", counting_open)
    with (
        pytest.raises(LabelwiseError, match=r"images differ in size: .*turned\.png is 8x6;"),
        pytest.warns(UserWarning, match=r"skipped 2 corrupt image\(s\) of 7"),
    ):
        open_pile(tmp_path / "pile", image=ImageSpec(channels=1), skip_corrupt=True)
    (tmp_path / "pile" / "a" / "turned.png").unlink()
    opened.clear()
    with pytest.warns(UserWarning, match=r"skipped 2 corrupt image\(s\) of 6"):
        pile = open_pile(tmp_path / "pile", image=ImageSpec(channels=1), skip_corrupt=True)
    assert pile.shape == (4, 1, 8, 8)
    assert sorted(opened) == sorted(Path(i).name for i in [*pile.ids, "img_002.png", "img_003.png"])

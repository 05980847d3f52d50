"""Piles as people bring them: 16-bit and EXIF-rotated images, hidden and symlinked folders,
CSV tables with gaps and index columns, ids with spaces; Ctrl-C during a capture."""

from __future__ import annotations

import os
import warnings
from pathlib import Path

import numpy as np
import pytest

from labelwise.cli import main
from labelwise.exceptions import LabelwiseError
from labelwise.piles import ImageSpec, open_pile

Image = pytest.importorskip("PIL.Image")


# ------------------------------------------------------------------------------ 5. 16-bit


def test_16_bit_images_keep_their_depth(tmp_path: Path) -> None:
    root = tmp_path / "pile"
    root.mkdir()
    values = [(np.arange(16).reshape(4, 4) * k * 100).astype(np.uint16) for k in (1, 2)]
    for i, v in enumerate(values):
        Image.fromarray(v).save(root / f"{i}.png")
    with Image.open(root / "0.png") as img:
        assert img.mode.startswith("I")
    pile = open_pile(root, image=ImageSpec(channels=1))
    got = pile[0:2]
    for i, v in enumerate(values):
        np.testing.assert_allclose(got[i, 0], v / 65535.0, rtol=1e-5, atol=1e-7)
    rgb = open_pile(root, image=ImageSpec(channels=3))[0:1]
    np.testing.assert_allclose(rgb[0, 2], values[0] / 65535.0, rtol=1e-5, atol=1e-7)


# ------------------------------------------------------------------------------ 12. EXIF


def test_exif_orientation_is_applied(tmp_path: Path) -> None:
    root = tmp_path / "pile"
    root.mkdir()
    turned = np.zeros((6, 8, 3), np.uint8)
    turned[0, :, 0] = 255  # the top row of the stored image is red
    exif = Image.Exif()
    exif[0x0112] = 6  # shown turned by 90 degrees: 8 high, 6 wide
    Image.fromarray(turned).save(root / "a.png", exif=exif)
    Image.fromarray(np.zeros((8, 6, 3), np.uint8)).save(root / "b.png")
    pile = open_pile(root, image=ImageSpec(channels=3))
    assert pile.shape == (2, 3, 8, 6)
    first = pile[0:1][0]
    assert first[0].sum(axis=0).max() > 0 and first.shape == (3, 8, 6)


# ------------------------------------------------------------------------------ 9. folders


def _png(path: Path, value: int = 0) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(np.full((4, 4), value, np.uint8), mode="L").save(path)


def test_hidden_folders_are_skipped_and_symlinked_folders_followed(tmp_path: Path) -> None:
    root = tmp_path / "pile"
    _png(root / "own" / "0.png")
    _png(root / ".ipynb_checkpoints" / "0-checkpoint.png")
    _png(root / "own" / ".hidden.png")
    _png(tmp_path / "store" / "cats" / "1.png")
    os.symlink(tmp_path / "store" / "cats", root / "cats")
    os.symlink(root, root / "own" / "loop")  # a cycle is read once
    pile = open_pile(root, image=ImageSpec(channels=1))
    assert list(pile.ids) == ["cats/1.png", "own/0.png"]


# ------------------------------------------------------------------------------ 12. Ctrl-C


def test_ctrl_c_during_capture_is_one_line_and_exit_130(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from labelwise.cli import capture as cli_capture

    np.save(tmp_path / "x.npy", np.zeros((3, 4), np.float32))
    out = tmp_path / "out"
    out.mkdir()
    (out / "activations.npy").write_text("earlier")

    def interrupted(*args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(cli_capture, "_capture", interrupted)
    code = main(["capture", "--model", str(tmp_path / "m.pt"), "--inputs",
                 str(tmp_path / "x.npy"), "--out", str(out)])  # fmt: skip
    assert code == 130
    err = capsys.readouterr().err
    assert err.strip() == f"labelwise: interrupted; {out} left unchanged"
    assert sorted(p.name for p in out.iterdir()) == ["activations.npy"]
    assert (out / "activations.npy").read_text() == "earlier"


# ------------------------------------------------------------------------------ 6. CSV


def test_csv_numeric_columns_are_judged_on_the_whole_table(tmp_path: Path) -> None:
    path = tmp_path / "pile.csv"
    rows = ["a,b,name"] + [f"{i * 0.5},{'' if i == 0 else i},x{i}" for i in range(6)]
    path.write_text("\n".join(rows) + "\n")
    with pytest.raises(LabelwiseError, match=r"row 0 \(line 2\) column 'b' is not a finite"):
        open_pile(path)
    assert open_pile(path, columns=["a"]).shape == (6, 1)


def test_csv_index_like_columns_are_named_in_a_warning(tmp_path: Path) -> None:
    path = tmp_path / "pd.csv"
    rows = [",f0,f1"] + [f"{i},{i * 0.3},{1 - i * 0.1}" for i in range(5)]
    path.write_text("\n".join(rows) + "\n")
    with pytest.warns(UserWarning, match=r"column\(s\) '' look like row ids.*--columns"):
        pile = open_pile(path, warn_id_like=True)
    assert pile.shape == (5, 3)
    with warnings.catch_warnings():  # opened to show its rows (the label page): no warning
        warnings.simplefilter("error")
        assert open_pile(path).shape == (5, 3)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert open_pile(path, columns=["f0", "f1"]).shape == (5, 2)


@pytest.mark.parametrize("model", ["missing.pt", "broken.onnx", "broken.pt"])
def test_a_model_error_is_reported_without_notes_about_the_inputs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], model: str
) -> None:
    pytest.importorskip("onnxruntime" if model.endswith(".onnx") else "torch")
    path = tmp_path / "pd.csv"  # an index column: opening the pile would give a note
    path.write_text("\n".join([",f0,f1"] + [f"{i},{i * 0.3},{1 - i * 0.1}" for i in range(5)]))
    if model.startswith("broken"):
        (tmp_path / model).write_bytes(b"not a model")
    argv = ["capture", "--model", str(tmp_path / model), "--inputs", str(path)]
    assert main([*argv, "--out", str(tmp_path / "cap")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("labelwise: error: ") and err.count("\n") == 1, err
    assert "note:" not in err and "row ids" not in err


def test_the_id_like_note_comes_once_the_model_has_loaded(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    torch = pytest.importorskip("torch")
    torch.save(torch.nn.Sequential(torch.nn.Linear(3, 2)).eval(), tmp_path / "m.pt")
    path = tmp_path / "pd.csv"
    path.write_text("\n".join([",f0,f1"] + [f"{i},{i * 0.3},{1 - i * 0.1}" for i in range(5)]))
    argv = ["capture", "--model", str(tmp_path / "m.pt"), "--inputs", str(path)]
    assert main([*argv, "--out", str(tmp_path / "cap")]) == 0
    err = capsys.readouterr().err
    assert err.count("note:") == 1 and "look like row ids" in err


def test_capture_shape_error_names_the_table_columns(tmp_path: Path) -> None:
    torch = pytest.importorskip("torch")
    torch.save(torch.nn.Sequential(torch.nn.Linear(2, 3)).eval(), tmp_path / "m.pt")
    path = tmp_path / "t.csv"
    path.write_text("x,y,z\n" + "".join(f"{i * 0.5},{i * 0.25},{i * 2.5}\n" for i in range(4)))
    from labelwise.cli import build_parser
    from labelwise.cli import capture as cli_capture

    argv = ["capture", "--model", str(tmp_path / "m.pt"), "--inputs", str(path)]
    args = build_parser().parse_args([*argv, "--out", str(tmp_path / "o")])
    with pytest.raises(LabelwiseError) as err:
        cli_capture.cmd_capture(args)
    assert "3 columns 'x', 'y', 'z'" in str(err.value) and "--columns" in str(err.value)


# ------------------------------------------------------------------------------ 10. ids


def test_ids_with_spaces_round_trip_and_empty_ids_are_refused(tmp_path: Path) -> None:
    root = tmp_path / "pile"
    _png(root / " lead.png")
    _png(root / "b.png", 50)
    pile = open_pile(root, image=ImageSpec(channels=1))
    assert list(pile.ids) == ["b.png", "lead.png"] or list(pile.ids) == ["lead.png", "b.png"]
    _png(root / "lead.png")
    with pytest.raises(LabelwiseError, match="surrounding spaces"):
        open_pile(root, image=ImageSpec(channels=1))
    table = tmp_path / "t.csv"
    table.write_text("id,x\na,1.5\n,2.5\nc,0.5\n")
    with pytest.raises(LabelwiseError, match=r"'id' is empty \(or null\) at row 1"):
        open_pile(table, id_column="id")

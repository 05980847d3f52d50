"""Bad input to ``labelwise capture`` ends in one ``labelwise: error:`` line, never a traceback."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from labelwise.cli import main


def _run(capsys: pytest.CaptureFixture[str], argv: list[str]) -> str:
    code = main(argv)
    err = capsys.readouterr().err
    assert code == 2, err
    assert "Traceback" not in err
    lines = [line for line in err.splitlines() if line.startswith("labelwise: error:")]
    assert len(lines) == 1, err
    return lines[0]


def test_input_errors_before_the_model_is_loaded(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    model = str(tmp_path / "model.pt")  # never loaded: the inputs are checked first
    out = tmp_path / "out"
    base = ["capture", "--model", model, "--out", str(out), "--inputs"]
    text = tmp_path / "text.csv"
    text.write_text("a,b\n1,2\n3,oops\n")
    assert "is not a finite number: 'oops'" in _run(capsys, [*base, str(text)])
    (tmp_path / "empty.csv").write_text("")
    assert "is empty" in _run(capsys, [*base, str(tmp_path / "empty.csv")])
    npz = tmp_path / "x.npz"
    np.savez(npz, a=np.zeros((2, 2)), b=np.zeros((2, 2)))
    assert "--key" in _run(capsys, [*base, str(npz)])
    assert "does not exist" in _run(capsys, [*base, str(tmp_path / "missing.npy")])
    assert not out.exists()


def test_image_folder_errors_before_the_model_is_loaded(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("PIL.Image")
    out = tmp_path / "out"
    base = ["capture", "--model", str(tmp_path / "model.pt"), "--out", str(out), "--inputs"]
    (tmp_path / "empty").mkdir()
    assert "holds no images" in _run(capsys, [*base, str(tmp_path / "empty")])
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "fake.png").write_text("not a png")
    assert "cannot read image" in _run(capsys, [*base, str(bad)])
    assert "--image-size" in _run(capsys, [*base, str(bad), "--image-size", "abc"])
    assert not out.exists()


def test_model_kwargs_that_are_not_a_json_object(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    np.save(tmp_path / "x.npy", np.zeros((3, 4), dtype=np.float32))
    argv = ["capture", "--model-class", "m:C", "--state-dict", str(tmp_path / "s.pt")]
    argv += ["--inputs", str(tmp_path / "x.npy"), "--out", str(tmp_path / "out")]
    assert "JSON object" in _run(capsys, [*argv, "--model-kwargs", '{"hidden": 8'])


def test_image_options_on_an_array(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    np.save(tmp_path / "x.npy", np.zeros((3, 4), dtype=np.float32))
    argv = ["capture", "--model", str(tmp_path / "m.pt"), "--inputs", str(tmp_path / "x.npy")]
    argv += ["--out", str(tmp_path / "out"), "--mean", "1"]
    assert "--mean applies only to a folder of images" in _run(capsys, argv)

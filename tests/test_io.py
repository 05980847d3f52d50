"""Atomic writes: complete files or none, with ordinary permissions."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import numpy as np
import pytest

from labelwise import LabelwiseError
from labelwise.io import (
    atomic_write,
    load_array,
    read_labels_csv,
    save_array,
    write_files,
    write_json,
)


def test_new_files_get_umask_permissions(tmp_path: Path) -> None:
    old = os.umask(0o022)
    try:
        write_json(tmp_path / "a.json", {"x": 1})
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "a.json").stat().st_mode) == 0o644


def test_replacing_keeps_the_files_permissions(tmp_path: Path) -> None:
    target = tmp_path / "a.json"
    target.write_text("{}")
    target.chmod(0o640)
    write_json(target, {"x": 2})
    assert stat.S_IMODE(target.stat().st_mode) == 0o640
    assert target.read_text().strip().endswith("}")


def test_failed_write_leaves_the_old_file_and_no_temporary(tmp_path: Path) -> None:
    target = tmp_path / "a.json"
    target.write_text('{"old": true}')

    def boom(fh: object) -> None:
        raise RuntimeError("disk full")

    with pytest.raises(RuntimeError):
        atomic_write(target, boom)
    assert target.read_text() == '{"old": true}'
    assert [p.name for p in tmp_path.iterdir()] == ["a.json"]


def test_nan_is_written_as_null_and_bad_objects_write_nothing(tmp_path: Path) -> None:
    write_json(tmp_path / "a.json", {"x": float("nan"), "y": float("inf")})
    assert json.loads((tmp_path / "a.json").read_text()) == {"x": None, "y": None}
    with pytest.raises(TypeError):
        write_json(tmp_path / "b.json", {"x": object()})
    assert not (tmp_path / "b.json").exists()


def test_arrays_round_trip_and_pickles_are_refused(tmp_path: Path) -> None:
    save_array(tmp_path / "a.npy", np.arange(6.0).reshape(2, 3))
    np.testing.assert_array_equal(
        load_array(tmp_path / "a.npy", "--x"), np.arange(6.0).reshape(2, 3)
    )
    np.save(tmp_path / "obj.npy", np.array([{"a": 1}], dtype=object), allow_pickle=True)
    with pytest.raises(LabelwiseError, match="--x"):
        load_array(tmp_path / "obj.npy", "--x")
    with pytest.raises(LabelwiseError, match="does not exist"):
        load_array(tmp_path / "missing.npy", "--x")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "is empty"),
        ("row,label\n", "no labels"),
        ("row,foo\n1,2\n", "exactly one of"),
        ("label\n1\n", "'row' column"),
        ("row,label\n1,2\n1,3\n", "more than once"),
        ("row,target\n1,nan\n", "finite number"),
        ("row,label\n1,\n", "empty label"),
        ("row,label\nx,1\n", "row must be an integer"),
    ],
)
def test_label_csv_errors(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "l.csv"
    path.write_text(text)
    with pytest.raises(LabelwiseError, match=message):
        read_labels_csv(path)


def test_label_csv_reads_kinds(tmp_path: Path) -> None:
    path = tmp_path / "l.csv"
    path.write_text("Row,Target\n3,0.5\n1,2.0\n\n")
    rows, kind, values = read_labels_csv(path)
    assert kind == "target" and rows.tolist() == [3, 1] and values.tolist() == [0.5, 2.0]


def test_label_csv_from_a_semicolon_or_tab_spreadsheet(tmp_path: Path) -> None:
    """A spreadsheet where the comma is the decimal mark saves 'row;label' (or tabs): it was
    refused as one column 'row;label'. The header's separator is now used, and there a
    decimal comma ('0,5') is a number."""
    path = tmp_path / "l.csv"
    path.write_text("\ufeffrow;label\r\n3;1\r\n1;0\r\n", encoding="utf-8")
    rows, kind, values = read_labels_csv(path)
    assert kind == "label" and rows.tolist() == [3, 1] and values.tolist() == [1, 0]
    path.write_text("row\tscore\n3\t0,5\n1\t1\n")
    rows, kind, values = read_labels_csv(path)
    assert kind == "score" and values.tolist() == [0.5, 1.0]
    path.write_text("row,score\n3,0.25\n")  # a comma file keeps its dots
    assert read_labels_csv(path)[2].tolist() == [0.25]


def test_write_files_writes_all_or_none(tmp_path: Path) -> None:
    """Several files written as one (labelwise export's tasks, config and state): when one
    cannot be written (its path a directory, or under a file) no file is replaced and no
    temporary file is left; when all can, each holds its text."""
    first, second = tmp_path / "tasks.json", tmp_path / "state.json"
    first.write_text("old tasks")
    second.mkdir()
    with pytest.raises(LabelwiseError) as err:
        write_files([(first, "new tasks"), (second, "{}")])
    assert f"cannot write {second}: it is a directory" in str(err.value)
    assert f"nothing was written ({first} as they were)" in str(err.value)
    under = tmp_path / "a file" / "state.json"
    (tmp_path / "a file").write_text("x")
    with pytest.raises(LabelwiseError, match="is a file, not a directory; nothing was written"):
        write_files([(first, "new tasks"), (under, "{}")])
    assert first.read_text() == "old tasks"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a file", "state.json", "tasks.json"]
    second.rmdir()
    write_files([(first, "new tasks"), (second, "{}\n")])
    assert first.read_text() == "new tasks" and second.read_text() == "{}\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a file", "state.json", "tasks.json"]


def test_a_labels_csv_in_utf16_is_named_as_such(tmp_path: Path) -> None:
    """A labels file saved as a spreadsheet's 'Unicode Text' (UTF-16 with its byte-order
    mark) was refused as 'not UTF-8 text (line 1 holds byte 0xff)'; it is now named UTF-16,
    with how to save it. The same rows as UTF-8 with a BOM and CRLF line ends are read."""
    text = "row,label\r\n0,1\r\n3,2\r\n"
    (tmp_path / "u16.csv").write_bytes(text.encode("utf-16"))
    with pytest.raises(LabelwiseError) as err:
        read_labels_csv(tmp_path / "u16.csv")
    assert str(err.value) == (
        f"--labels: {tmp_path / 'u16.csv'} is UTF-16 text (a spreadsheet's 'Unicode Text'), "
        "not UTF-8: save it as 'CSV UTF-8'"
    )
    (tmp_path / "u8.csv").write_bytes(b"\xef\xbb\xbf" + text.encode())
    rows, column, values = read_labels_csv(tmp_path / "u8.csv")
    assert rows.tolist() == [0, 3] and column == "label" and values.tolist() == [1, 2]

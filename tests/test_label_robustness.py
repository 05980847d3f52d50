"""Labelling, Label Studio import, the report and Dask inputs on bad or tricky input: class
names that are numbers, labels.csv changed under the page, an export of another pile,
timestamps, malformed requests, dask arrays of unknown length, bad arguments."""

from __future__ import annotations

import json
import socket
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from label_helpers import Running
from labelwise.cli._labelling import LabelSession
from labelwise.exceptions import LabelwiseError
from labelwise.io import read_labels_csv, write_labels_csv
from labelwise.labelstudio import read_label_studio_export
from synthetic import captured_pile, run_cli, srs_selection

N, C = 90, 3
NUMERIC = ["1", "2", "3"]


@pytest.fixture()
def pile(tmp_path: Path) -> dict[str, Any]:
    """A captured pile (ids, class names "1", "2", "3"), small."""
    return captured_pile(tmp_path, 3, N, NUMERIC, 5, [f"img {i}.png" for i in range(N)])


def _campaign(pile: dict[str, Any], capsys: pytest.CaptureFixture[str], batch: int = 10) -> Path:
    d = pile["dir"] / "camp"
    cap = pile["cap"]
    for argv in (
        ["campaign", d, "--activations", cap / "activations.npy", "--probs",
         cap / "probabilities.npy", "--seed", "4"],
        ["next", d, "--batch", batch],
    ):  # fmt: skip
        code, _, err = run_cli(argv, capsys)
        assert code == 0, err
    return d


def _rows(d: Path) -> list[int]:
    key = "campaign" if (d / "campaign.state.json").is_file() else "selection"
    if key == "selection":
        return list(json.loads((d / "selection.json").read_text())["selection"]["indices"])
    import csv

    with open(d / "to_label.csv", newline="") as fh:
        return [int(r["row"]) for r in csv.DictReader(fh)]


def _min_export(path: Path, rows: list[int], choice: Any, ids: list[str] | None = None) -> Path:
    """Label Studio's JSON-MIN export: one flat record per annotated task."""
    recs = []
    for r in rows:
        rec = {"labelwise_row": r, "label": choice(r)}
        if ids is not None:
            rec["labelwise_id"] = ids[r]
        recs.append(rec)
    path.write_text(json.dumps(recs))
    return path


# ------------------------------------------------------------------ 1. numeric class names


def test_numeric_class_names_read_back_as_written(
    pile: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Classes "1", "2", "3": labels the model agrees with give accuracy 1.0 (was 0.2: the
    written indices were read back as names, one class off)."""
    d = srs_selection(pile, capsys)
    rows = _rows(d)
    pred = pile["probs"].argmax(axis=1)
    export = _min_export(tmp_path / "ls.json", rows, lambda r: NUMERIC[pred[r]])
    code, _, err = run_cli(["import", d, export], capsys)
    assert code == 0, err
    assert (d / "labels.csv").read_text().splitlines()[0] == "row,label,class,id"
    code, out, err = run_cli(["estimate", d, "--labels", d / "labels.csv", "--json"], capsys)
    assert code == 0, err
    assert json.loads(out)["value"] == 1.0


def test_an_ambiguous_labels_csv_is_refused_not_guessed(
    pile: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    """A bare label '1' with classes "1", "2", "3" (the class named "1" or class 1?): an error
    naming the line and saying how to write it; a 'class' column is read as names."""
    d = srs_selection(pile, capsys)
    rows = _rows(d)
    f = d / "labels.csv"
    f.write_text("row,label\n" + "".join(f"{r},1\n" for r in rows))
    code, _, err = run_cli(["estimate", d, "--labels", f], capsys)
    assert code == 2 and "line 2: label '1' is ambiguous" in err and "'class' column" in err
    assert len(err.strip().splitlines()) == 1
    f.write_text("row,class\n" + "".join(f"{r},1\n" for r in rows))  # names: class 0
    got = read_labels_csv(f, classes=NUMERIC)
    assert got[1] == "label" and got[2].tolist() == [0] * len(rows)
    f.write_text(f"row,label,class\n{rows[0]},1,1\n")  # index 1 is "2", not "1"
    with pytest.raises(LabelwiseError, match="label 1 is the class '2', but the 'class' column"):
        read_labels_csv(f, classes=NUMERIC)
    # unambiguous files read as before: "0" is no name (an index), "3" no index (a name)
    f.write_text(f"row,label\n{rows[0]},0\n{rows[1]},3\n")
    assert read_labels_csv(f, classes=NUMERIC)[2].tolist() == [0, 2]


def test_write_labels_csv_round_trips(tmp_path: Path) -> None:
    f = tmp_path / "labels.csv"
    write_labels_csv(f, [5, 2, 7], np.asarray([0, 2, 1]), classes=NUMERIC, ids=list("abcdefgh"))
    assert f.read_text().splitlines() == ["row,label,class,id", "5,0,1,f", "2,2,3,c", "7,1,2,h"]
    rows, kind, values = read_labels_csv(f, classes=NUMERIC, ids=list("abcdefgh"))
    assert (rows.tolist(), kind, values.tolist()) == ([5, 2, 7], "label", [0, 2, 1])
    assert read_labels_csv(f)[2].tolist() == [0, 2, 1]  # no names known: the indices


def test_the_page_restarts_on_numeric_class_names(
    pile: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    """A restart of the page read its own labels.csv one class off, refused to start and
    rewrote the file shifted."""
    d = _campaign(pile, capsys)
    s = LabelSession(d)
    try:
        for _ in range(4):
            cur = s.state()["current"]
            st = s.answer(cur["row"], cur["prediction"])
    finally:
        s.close()
    written = (d / "labels.csv").read_text()
    assert st["estimate"]["value"] == 1.0
    s = LabelSession(d)
    try:
        assert s.state()["n_labelled"] == 4 and s.state()["estimate"]["value"] == 1.0
    finally:
        s.close()
    assert (d / "labels.csv").read_text() == written


# ------------------------------------------------------------------ 2. labels.csv under the page


def test_import_waits_for_the_page_and_the_page_merges_labels_added_meanwhile(
    pile: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    d = srs_selection(pile, capsys)
    rows = _rows(d)
    s = LabelSession(d)
    try:
        s.answer(rows[0], 0)
        export = _min_export(tmp_path / "ls.json", rows[1:4], lambda r: "2")
        code, _, err = run_cli(["import", d, export], capsys)
        assert code == 2 and "being labelled on a 'labelwise label' page" in err, err
        assert "nothing written" in err
        # another program adds labels anyway (by hand): the page keeps them
        before = (d / "labels.csv").read_text()
        added = f"{rows[1]},1,2,img {rows[1]}.png\n{rows[2]},2,3,img {rows[2]}.png\n"
        (d / "labels.csv").write_text(before + added)
        st = s.answer(rows[3], 0)
        assert st["n_labelled"] == 4
        rows_now, _, values = read_labels_csv(d / "labels.csv", classes=NUMERIC)
        assert dict(zip(rows_now.tolist(), values.tolist(), strict=True)) == {
            rows[0]: 0,
            rows[1]: 1,
            rows[2]: 2,
            rows[3]: 0,
        }
        # a contradicting label is an error naming the row; nothing changes
        text = (d / "labels.csv").read_text().replace(f"{rows[0]},0,1", f"{rows[0]},2,3")
        (d / "labels.csv").write_text(text)
        with pytest.raises(LabelwiseError, match=f"row {rows[0]}: 2 in the file, 0 on this page"):
            s.answer(rows[4], 0)
        assert rows[4] not in s.labels
    finally:
        s.close()
    code, _, err = run_cli(["import", d, export], capsys)  # the page stopped: import runs
    assert "being labelled" not in err


# ------------------------------------------------------------------ 3. an export of another pile


def test_import_refuses_an_export_of_another_pile(
    pile: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    d = srs_selection(pile, capsys)
    rows = _rows(d)
    other = [f"other/{i}.png" for i in range(N)]
    export = _min_export(tmp_path / "ls.json", rows, lambda r: "1", ids=other)
    code, _, err = run_cli(["import", d, export], capsys)
    assert code == 2 and "carry a labelwise_id other than their row's" in err, err
    assert f"row {sorted(rows)[0]}: 'other/{sorted(rows)[0]}.png' in the export" in err
    assert not (d / "labels.csv").exists()
    ids = [f"img {i}.png" for i in range(N)]  # the right ids: imported
    export = _min_export(tmp_path / "ls.json", rows, lambda r: "1", ids=ids)
    code, _, err = run_cli(["import", d, export], capsys)
    assert code == 0, err


# ------------------------------------------------------------------ 4. latest annotation by time


def test_the_latest_annotation_is_chosen_by_time_not_text(tmp_path: Path) -> None:
    def ann(choice: str, when: str) -> dict[str, Any]:
        result = [{"from_name": "label", "type": "choices", "value": {"choices": [choice]}}]
        return {"result": result, "was_cancelled": False, "updated_at": when}

    tasks = [
        {  # "…10:00:00Z" sorts after "…10:00:00.500000Z" as text, but is earlier
            "data": {"labelwise_row": 3},
            "annotations": [
                ann("dog", "2024-05-01T10:00:00.500000Z"),
                ann("cat", "2024-05-01T10:00:00Z"),
            ],
        },
        {  # 12:00+03:00 is 09:00 UTC, before 10:30Z
            "data": {"labelwise_row": 4},
            "annotations": [
                ann("bird", "2024-05-01T10:30:00Z"),
                ann("cat", "2024-05-01T12:00:00+03:00"),
            ],
        },
    ]
    path = tmp_path / "export.json"
    path.write_text(json.dumps(tasks))
    ans = read_label_studio_export(path, ["cat", "dog", "bird"])
    assert ans.labels == {3: 1, 4: 2}


# ------------------------------------------------------------------ 5. malformed requests


def _raw_post(url: str, body: bytes, length: bytes | None = None) -> tuple[int, bytes]:
    host, port = url.split("//")[1].rstrip("/").rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=10) as s:
        n = str(len(body)).encode() if length is None else length
        s.sendall(
            b"POST /api/answer HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            b"Content-Length: " + n + b"\r\nConnection: close\r\n\r\n" + body
        )
        data = b""
        while chunk := s.recv(65536):
            data += chunk
    head, _, rest = data.partition(b"\r\n\r\n")
    return int(head.split()[1]), rest


def test_the_page_answers_400_to_malformed_requests(
    pile: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    d = srs_selection(pile, capsys)
    row = _rows(d)[0]
    running = Running(LabelSession(d))
    try:
        for body, length, words in (
            (b'{"row":%d,"value":1e999}' % row, None, "finite number"),
            (b'{"row":%d,"value":Infinity}' % row, None, "not valid JSON"),
            (b'{"row":%d,"value":NaN}' % row, None, "not valid JSON"),
            (b'{"row":%d,"value":true}' % row, None, "must be a number, got True"),
            (b'{"row":1}', b"abc", "Content-Length must be a number"),
            (b'{"row":1}', b"-1", "Content-Length must be a number"),
            (b'{"row":1}', b"99999999999999999999", "request too large"),
        ):
            t0 = time.monotonic()
            code, rest = _raw_post(running.url, body, length)
            assert code == 400 and words in json.loads(rest)["error"], (body, length, rest)
            assert time.monotonic() - t0 < 5
        assert not (d / "labels.csv").exists()  # true was not taken as class 1
    finally:
        running.stop()


# ------------------------------------------------------------------ 6. dask of unknown length


def test_a_dask_array_of_unknown_length_says_compute_chunk_sizes() -> None:
    da = pytest.importorskip("dask.array")
    import labelwise as lw

    rng = np.random.default_rng(0)
    a = rng.normal(size=(120, 4)).astype(np.float32)
    z = rng.normal(size=(120, 3))
    p = np.exp(z) / np.exp(z).sum(1, keepdims=True)
    dp = da.from_array(p, chunks=(40, 3))
    dp = dp[dp[:, 0] >= 0]
    dx = da.from_array(a, chunks=(40, 4))
    dx = dx[dx[:, 0] > -1e9]
    assert np.isnan(dx.shape[0])
    for call in (
        lambda: lw.css_select(dp, 20, rng=0),
        lambda: lw.ces_select(dx, 20, rng=0),
        lambda: lw.Campaign(dx, dp, rng=0),
    ):
        with pytest.raises(LabelwiseError, match=r"unknown chunk sizes.*compute_chunk_sizes"):
            call()


# ------------------------------------------------------------------ 7. arguments first


def test_import_checks_confidence_before_writing(
    pile: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    d = _campaign(pile, capsys)
    export = _min_export(tmp_path / "ls.json", _rows(d)[:5], lambda r: "1")
    code, _, err = run_cli(["import", d, export, "--confidence", "1.5"], capsys)
    assert code == 2 and "--confidence must be in (0, 1), got 1.5" in err
    assert not (d / "labels.csv").exists()


# ------------------------------------------------------------------ 8. report: unrecorded labels


def test_the_campaign_report_says_which_labels_are_not_recorded(
    pile: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("matplotlib")
    d = _campaign(pile, capsys, batch=12)
    rows = _rows(d)
    y = pile["y"]
    f = d / "labels.csv"
    f.write_text("row,label,class\n" + "".join(f"{r},{y[r]},{NUMERIC[y[r]]}\n" for r in rows[:8]))
    code, _, err = run_cli(["estimate", d, "--labels", f], capsys)
    assert code == 0, err
    f.write_text("row,label,class\n" + "".join(f"{r},{y[r]},{NUMERIC[y[r]]}\n" for r in rows[:11]))
    code, _, err = run_cli(["report", d], capsys)
    assert code == 0, err
    page = (d / "report.html").read_text()
    assert "holds 3 labels not yet recorded" in page
    assert f"estimate {d} --labels {f}" in page.replace("&#x27;", "'")


# ------------------------------------------------------------------ 9. a CSV export


def test_import_of_a_csv_or_cut_export_says_to_export_json(
    pile: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    d = srs_selection(pile, capsys)
    csv_export = tmp_path / "export.csv"
    csv_export.write_text("image,labelwise_row,label\nimg 1.png,1,2\n")
    cut = tmp_path / "cut.json"
    cut.write_text('[{"labelwise_row": 1, "label": "2"}, {"labelwise_r')
    for path, words in ((csv_export, "looks like a CSV or TSV export"), (cut, "cut short")):
        code, _, err = run_cli(["import", d, path], capsys)
        assert code == 2 and words in err and "export the Label Studio project as JSON" in err
        assert len(err.strip().splitlines()) == 1

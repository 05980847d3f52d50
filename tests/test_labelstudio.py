"""``labelwise export | import``: the Label Studio round trip, against the formats as Label
Studio documents them (https://labelstud.io/guide/task_format, /guide/export: JSON with
``annotations[].result[].value.choices`` and ``was_cancelled``; JSON-MIN with one flat record
per annotation). The exports below are written by hand in that shape."""

from __future__ import annotations

import contextlib
import csv
import json
import os
import shutil
import subprocess
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from labelwise.labelstudio import read_label_studio_export
from synthetic import captured_pile, run_cli, srs_selection

N, C = 400, 3
NAMES = ["cat", "dog", "bird"]


@pytest.fixture()
def pile(tmp_path: Path) -> dict[str, Any]:
    """A captured pile of image files: activations, probabilities, ids, class names, truth."""
    return captured_pile(
        tmp_path, 0, N, NAMES, 6, lambda y: [f"{NAMES[y[i]]}/img {i}.png" for i in range(N)]
    )


def _campaign(pile: dict[str, Any], name: str, capsys: pytest.CaptureFixture[str]) -> Path:
    d = pile["dir"] / name
    cap = pile["cap"]
    for argv in (
        ["campaign", d, "--activations", cap / "activations.npy", "--probs",
         cap / "probabilities.npy", "--seed", "4"],
        ["next", d, "--batch", "30"],
    ):  # fmt: skip
        code, _, err = run_cli(argv, capsys)
        assert code == 0, err
    return d


def _export(d: Path, capsys: pytest.CaptureFixture[str], *extra: Any) -> list[dict[str, Any]]:
    code, out, err = run_cli(["export", d, *extra], capsys)
    assert code == 0, err
    assert "Label Studio tasks" in out
    out_file = Path(str(extra[extra.index("--out") + 1])) if "--out" in extra else None
    path = out_file or d / "label-studio-tasks.json"
    return list(json.loads(path.read_text()))


def _annotation(choice: str, *, when: str = "2026-03-01T10:00:00.000000Z", **kw: Any) -> dict:
    return {
        "id": 1,
        "completed_by": 1,
        "result": [
            {
                "id": "a1",
                "from_name": "label",
                "to_name": "image",
                "type": "choices",
                "origin": "manual",
                "value": {"choices": [choice]},
            }
        ],
        "was_cancelled": False,
        "ground_truth": False,
        "created_at": when,
        "updated_at": when,
        "lead_time": 2.5,
        "task": 1,
        **kw,
    }


def _full_export(tasks: list[dict[str, Any]], y: np.ndarray) -> list[dict[str, Any]]:
    """Label Studio's JSON export of the tasks, each labelled with its true class."""
    out = []
    for i, t in enumerate(tasks):
        r = t["data"]["labelwise_row"]
        out.append(
            {
                "id": i + 1,
                "data": t["data"],
                "meta": t.get("meta", {}),
                "annotations": [_annotation(NAMES[y[r]])],
                "predictions": t.get("predictions", []),
                "created_at": "2026-03-01T09:00:00.000000Z",
                "project": 7,
            }
        )
    return out


def _to_label(d: Path) -> list[int]:
    with open(d / "to_label.csv", newline="") as fh:
        return [int(r["row"]) for r in csv.DictReader(fh)]


def _labels_csv(path: Path) -> dict[int, int]:
    with open(path, newline="") as fh:
        return {int(r["row"]): int(r["label"]) for r in csv.DictReader(fh)}


# ----------------------------------------------------------------------------- export


def test_export_writes_documented_tasks_and_config(
    pile: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    d = _campaign(pile, "camp", capsys)
    tasks = _export(d, capsys, "--image-url-prefix", "/data/local-files/?d=")
    pending = _to_label(d)
    assert [t["data"]["labelwise_row"] for t in tasks] == pending
    ids = (pile["cap"] / "ids.txt").read_text().splitlines()
    t = tasks[0]
    r = t["data"]["labelwise_row"]
    assert t["data"]["labelwise_id"] == ids[r] == t["meta"]["labelwise_id"]
    assert t["data"]["image"] == "/data/local-files/?d=" + ids[r].replace(" ", "%20")
    (pred,) = t["predictions"]
    p = pile["probs"][r]
    assert pred["model_version"] == "labelwise"
    assert pred["score"] == pytest.approx(float(p.max()), abs=1e-6)
    (res,) = pred["result"]
    assert res["from_name"] == "label" and res["to_name"] == "image"
    assert res["type"] == "choices" and res["value"] == {"choices": [NAMES[int(p.argmax())]]}
    root = ET.parse(d / "label-studio-tasks.config.xml").getroot()
    assert root.tag == "View"
    image = root.find("Image")
    assert image is not None and image.get("value") == "$image"
    choices = root.find("Choices")
    assert choices is not None and choices.get("name") == "label"
    assert choices.get("toName") == image.get("name")
    assert [c.get("value") for c in choices.findall("Choice")] == NAMES


def test_export_without_prefix_gives_the_image_files_path(
    pile: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    d = srs_selection(pile, capsys, budget=25, seed=2)
    tasks = _export(d, capsys, "--out", d / "ls" / "tasks.json")
    assert (d / "ls" / "tasks.config.xml").is_file()
    r = tasks[0]["data"]["labelwise_row"]
    ids = (pile["cap"] / "ids.txt").read_text().splitlines()
    assert tasks[0]["data"]["image"] == str((pile["cap"] / "imgs" / ids[r]).resolve())


def test_export_of_an_array_pile_shows_the_row_as_text(
    pile: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    cap = pile["cap"]
    np.save(cap / "pile.npy", np.arange(N * 4, dtype=np.float32).reshape(N, 4))
    (cap / "capture.json").write_text(json.dumps({"pile": {"kind": "npy", "path": "pile.npy"}}))
    d = srs_selection(pile, capsys, budget=25, seed=2)
    tasks = _export(d, capsys)
    r = tasks[0]["data"]["labelwise_row"]
    assert tasks[0]["data"]["text"] == f"row {r}: [{4 * r:g}, {4 * r + 1:g}, {4 * r + 2:g}, " \
        f"{4 * r + 3:g}]"  # fmt: skip
    assert tasks[0]["predictions"][0]["result"][0]["to_name"] == "text"
    root = ET.parse(d / "label-studio-tasks.config.xml").getroot()
    assert root.find("Text") is not None and root.find("Image") is None


# ----------------------------------------------------------------------------- import


def test_import_reports_skipped_cancelled_unknown_and_several(
    pile: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    d = _campaign(pile, "camp", capsys)
    tasks = _export(d, capsys)
    y = pile["y"]
    doc = _full_export(tasks, y)
    rows = [t["data"]["labelwise_row"] for t in tasks]
    doc[0]["annotations"] = []  # skipped: never annotated
    doc[1]["annotations"] = [_annotation(NAMES[y[rows[1]]], was_cancelled=True)]
    doc[2]["annotations"] = [_annotation("dgo")]  # a choice that is no class
    wrong = NAMES[(y[rows[3]] + 1) % C]
    doc[3]["annotations"] = [  # the newer answer counts, whatever the list order
        _annotation(NAMES[y[rows[3]]], when="2026-03-02T08:00:00.000000Z"),
        _annotation(wrong, when="2026-03-01T08:00:00.000000Z"),
    ]
    doc[4]["annotations"] = [  # cancelled newer + valid older: the valid one counts
        _annotation(NAMES[y[rows[4]]], when="2026-03-01T08:00:00.000000Z"),
        _annotation(wrong, when="2026-03-03T08:00:00.000000Z", was_cancelled=True),
    ]
    (d / "export.json").write_text(json.dumps(doc))
    code, out, err = run_cli(["import", d, d / "export.json", "--json"], capsys)
    assert code == 0, err
    # with --json the import's summary goes to stderr, stdout is the JSON only
    assert "imported 27 labels from 30 Label Studio tasks (JSON export); 3 tasks not used" in err
    assert (
        f"1 task without an annotation (skipped in Label Studio or not done): row {rows[0]}" in err
    )
    assert f"1 task whose every annotation was cancelled (skipped): row {rows[1]}" in err
    assert (
        f"1 unknown choice, not used (row {rows[2]}: 'dgo'); the classes are cat, dog, bird" in err
    )
    assert f"1 task with several annotations that disagree; the latest one not cancelled was " \
        f"taken: rows {rows[3]}" in err  # fmt: skip
    labels = _labels_csv(d / "labels.csv")
    assert sorted(labels) == sorted(rows[3:])
    assert all(labels[r] == y[r] for r in labels)
    est = json.loads(out)
    assert est["campaign"]["n_recorded"] == 27 and est["campaign"]["new_labels"] == 27
    assert est["n_labelled"] == 27


def test_import_with_nothing_usable_is_an_error(
    pile: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    d = _campaign(pile, "camp", capsys)
    doc = _full_export(_export(d, capsys), pile["y"])
    for t in doc:
        t["annotations"] = [_annotation("cat", was_cancelled=True)]
    doc[0]["annotations"] = [_annotation("zebra")]
    (d / "export.json").write_text(json.dumps(doc))
    code, out, err = run_cli(["import", d, d / "export.json"], capsys)
    assert code == 2 and out == ""
    assert "imported 0 labels from 30 Label Studio tasks (JSON export); 30 tasks not used" in err
    last = err.strip().splitlines()[-1]
    assert last.startswith(f"labelwise: error: no usable labels in {d / 'export.json'} (see above)")
    assert last.endswith("'labelwise export " + str(d) + "' wrote?")
    assert "29 tasks whose every annotation was cancelled" in err
    assert "1 unknown choice, not used" in err and "'zebra'" in err
    assert "Traceback" not in err
    assert not (d / "labels.csv").exists()


def test_import_rows_outside_the_selection_are_reported(
    pile: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    d = srs_selection(pile, capsys, budget=25, seed=2)
    tasks = _export(d, capsys)
    chosen = {t["data"]["labelwise_row"] for t in tasks}
    stranger = next(r for r in range(N) if r not in chosen)
    extra = {"data": {"labelwise_row": stranger, "image": "x.png"}, "meta": {}, "id": 99}
    doc = [*_full_export(tasks[:5], pile["y"]), dict(extra, annotations=[_annotation("cat")])]
    (d / "export.json").write_text(json.dumps(doc))
    code, out, err = run_cli(["import", d, d / "export.json"], capsys)
    assert code == 0, err
    assert f"1 row not in this directory's selection or campaign, not used: {stranger}" in out
    assert "20 selected rows still lack a label" in out
    assert stranger not in _labels_csv(d / "labels.csv")


def test_json_min_export_is_read(pile: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> None:
    d = srs_selection(pile, capsys, budget=25, seed=2)
    tasks = _export(d, capsys)
    y = pile["y"]
    records: list[dict[str, Any]] = []
    for i, t in enumerate(tasks):
        r = t["data"]["labelwise_row"]
        rec = {**t["data"], "id": i + 1, "annotator": 1, "annotation_id": 100 + i,
               "created_at": "2026-03-01T10:00:00.000000Z",
               "updated_at": "2026-03-01T10:00:00.000000Z", "lead_time": 1.0}  # fmt: skip
        if i == 0:
            records.append(rec)  # a task without annotation: data only
            continue
        # single choice: the name; JSON-MIN writes several choices as {"choices": [...]}
        rec["label"] = NAMES[y[r]] if i % 2 else {"choices": [NAMES[y[r]]]}
        records.append(rec)
    r1 = tasks[1]["data"]["labelwise_row"]
    older = {**records[1], "label": NAMES[(y[r1] + 1) % C], "annotation_id": 999,
             "created_at": "2026-02-01T10:00:00.000000Z",
             "updated_at": "2026-02-01T10:00:00.000000Z"}  # fmt: skip
    records.append(older)  # JSON-MIN lists each annotation; the latest counts
    r2 = tasks[2]["data"]["labelwise_row"]
    records[2]["label"] = {"choices": ["cat", "dog"]}  # several choices: ambiguous
    (d / "min.json").write_text(json.dumps(records))
    ans = read_label_studio_export(d / "min.json", NAMES)
    assert ans.format == "JSON-MIN" and ans.n_tasks == len(records)
    assert ans.skipped == [(tasks[0]["data"]["labelwise_row"], "no annotation")]
    assert ans.ambiguous == [(r2, ["cat", "dog"])] and ans.several == [r1]
    assert ans.labels[r1] == y[r1]
    assert len(ans.labels) == len(tasks) - 2
    assert all(ans.labels[r] == y[r] for r in ans.labels)


def test_integer_choices_map_to_classes(tmp_path: Path) -> None:
    doc = [
        {"id": 1, "data": {"labelwise_row": 3}, "annotations": [_annotation("2")]},
        {"id": 2, "data": {"labelwise_row": 4}, "annotations": [_annotation("7")]},
        {"id": 3, "data": {"image": "a.png"}, "annotations": [_annotation("1")]},
    ]
    (tmp_path / "e.json").write_text(json.dumps(doc))
    ans = read_label_studio_export(tmp_path / "e.json", None, n_classes=3)
    assert ans.labels == {3: 2} and ans.unknown == [(4, "7")] and ans.no_row == 1


def test_choices_with_surrounding_spaces_name_their_class(tmp_path: Path) -> None:
    """A labelling config edited by hand gave the choice 'Nine ' (a trailing space): it was
    reported as unknown, where the labels CSV reader strips the same cell."""
    doc = [
        {"id": 1, "data": {"labelwise_row": 3}, "annotations": [_annotation("Nine ")]},
        {"id": 2, "data": {"labelwise_row": 4}, "annotations": [_annotation(" Eight")]},
        {"id": 3, "data": {"labelwise_row": 5}, "annotations": [_annotation("Ten")]},
    ]
    (tmp_path / "e.json").write_text(json.dumps(doc))
    ans = read_label_studio_export(tmp_path / "e.json", ["Eight", "Nine"])
    assert ans.labels == {3: 1, 4: 0} and ans.unknown == [(5, "Ten")]


# ----------------------------------------------------------------------------- round trip


def test_round_trip_campaign_equals_hand_written_labels(
    pile: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    y = pile["y"]
    a = _campaign(pile, "a", capsys)
    b = _campaign(pile, "b", capsys)  # the same campaign (same seed), labelled by hand
    tasks = _export(a, capsys)
    (a / "export.json").write_text(json.dumps(_full_export(tasks, y)))
    code, out, err = run_cli(["import", a, a / "export.json", "--json"], capsys)
    assert code == 0, err
    via_ls = json.loads(out[out.index("{") :])
    rows = _to_label(b)
    with open(pile["dir"] / "hand.csv", "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["row", "label"])
        w.writerows([r, int(y[r])] for r in rows)
    code, out, err = run_cli(
        ["estimate", b, "--labels", pile["dir"] / "hand.csv", "--json"], capsys
    )
    assert code == 0, err
    assert via_ls == json.loads(out)
    assert via_ls["n_labelled"] == 30


def test_round_trip_selection_equals_hand_written_labels(
    pile: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    y = pile["y"]
    d = srs_selection(pile, capsys, budget=25, seed=2)
    (d / "export.json").write_text(json.dumps(_full_export(_export(d, capsys), y)))
    code, out, err = run_cli(["import", d, d / "export.json"], capsys)
    assert code == 0, err
    assert "every selected row is labelled" in out
    code, via_ls, err = run_cli(["estimate", d, "--labels", d / "labels.csv", "--json"], capsys)
    assert code == 0, err
    sel = json.loads((d / "selection.json").read_text())["selection"]["indices"]
    with open(pile["dir"] / "hand.csv", "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["row", "label"])
        w.writerows([r, int(y[r])] for r in reversed(sel))
    code, by_hand, err = run_cli(
        ["estimate", d, "--labels", pile["dir"] / "hand.csv", "--json"], capsys
    )
    assert code == 0, err
    assert json.loads(via_ls) == json.loads(by_hand)
    assert json.loads(by_hand)["n_labelled"] == 25


def test_import_never_changes_a_recorded_label(
    pile: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    d = _campaign(pile, "camp", capsys)
    y = pile["y"]
    tasks = _export(d, capsys)
    (d / "export.json").write_text(json.dumps(_full_export(tasks, y)))
    assert run_cli(["import", d, d / "export.json"], capsys)[0] == 0
    (d / "labels.csv").unlink()  # e.g. the first labels were given from another file
    before = (d / "campaign.state.json").read_bytes()
    r = tasks[0]["data"]["labelwise_row"]
    doc = _full_export(tasks[:1], y)
    doc[0]["annotations"] = [_annotation(NAMES[(y[r] + 1) % C])]
    (d / "again.json").write_text(json.dumps(doc))
    code, out, err = run_cli(["import", d, d / "again.json"], capsys)
    assert code == 2 and out == ""
    assert f"row {r}: {y[r]} -> {(y[r] + 1) % C}" in err and "nothing written" in err
    assert (d / "campaign.state.json").read_bytes() == before
    assert not (d / "labels.csv").exists()


def test_json_min_import_into_a_campaign_names_rows_missing_from_the_export(
    pile: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    d = _campaign(pile, "camp", capsys)
    tasks = _export(d, capsys)
    y = pile["y"]
    records = [
        {**t["data"], "id": i + 1, "label": NAMES[y[t["data"]["labelwise_row"]]],
         "annotator": 1, "annotation_id": i, "created_at": "2026-03-01T10:00:00Z",
         "updated_at": "2026-03-01T10:00:00Z", "lead_time": 1.0}
        for i, t in enumerate(tasks)
    ]  # fmt: skip
    gone = records.pop(5)[
        "labelwise_row"
    ]  # JSON-MIN leaves out a task whose annotation was cancelled
    (d / "min.json").write_text(json.dumps(records))
    code, out, err = run_cli(["import", d, d / "min.json"], capsys)
    assert code == 0, err
    assert "imported 29 labels from 29 Label Studio tasks (JSON-MIN export)" in out
    assert "1 row awaiting labels has no task in the export" in out and f": {gone}\n" in out
    assert "29 new labels; 29 labelled, 1 awaiting labels" in out


def test_a_ranking_selection_round_trips_and_points_at_rank(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An sds selection (the models' (M, N) classes, no class names) could not be exported
    ('no class names ... record --probs'), and an import that completed it said 'labelwise
    estimate', which refuses a ranking selection. Its choices are now the models' classes,
    and the import points at 'labelwise rank'."""
    gen = np.random.default_rng(4)
    y = gen.integers(3, size=90)
    preds = np.where(gen.random((3, 90)) < 0.7, y, (y + 1) % 3)
    np.save(tmp_path / "preds.npy", preds)
    d = tmp_path / "sds"
    argv = ["select", "--method", "sds", "--budget", 9, "--predictions", tmp_path / "preds.npy"]
    assert run_cli([*argv, "--out", d, "--seed", 0], capsys)[0] == 0
    tasks = _export(d, capsys)
    config = ET.fromstring((d / "label-studio-tasks.config.xml").read_text())
    assert [c.get("value") for c in config.iter("Choice")] == ["0", "1", "2"]
    records = [
        {"id": i, **t["data"], "label": str(y[t["data"]["labelwise_row"]])}
        for i, t in enumerate(tasks)
    ]
    (tmp_path / "export.json").write_text(json.dumps(records))
    code, out, err = run_cli(["import", d, tmp_path / "export.json"], capsys)
    assert code == 0, err
    assert f"labelwise rank {d} --labels" in out
    code, out, err = run_cli(["rank", d, "--labels", d / "labels.csv"], capsys)
    assert code == 0 and "3 models ranked on 9 labelled rows" in out, err


def test_a_rerun_keeps_an_edited_labeling_config(
    pile: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    """Re-running 'export' (after 'next') overwrote a label-studio-tasks.config.xml the user
    had edited (another choice, a layout): it is now kept and the new config written beside
    it, named; an unedited one is rewritten in place, and the tasks are always the rows
    waiting now."""
    d = _campaign(pile, "camp", capsys)
    _export(d, capsys)
    config = d / "label-studio-tasks.config.xml"
    made = config.read_text()
    # unedited: a re-run rewrites it in place, nothing beside it
    _export(d, capsys)
    assert config.read_text() == made and not (d / "label-studio-tasks.config.new.xml").exists()
    edited = made.replace('<Choice value="bird"/>', '<Choice value="bird"/><Choice value="?"/>')
    assert edited != made
    config.write_text(edited)
    assert run_cli(["next", d, "--batch", "10"], capsys)[0] == 0
    code, out, err = run_cli(["export", d], capsys)
    assert code == 0, err
    assert config.read_text() == edited
    new = d / "label-studio-tasks.config.new.xml"
    assert new.read_text() == made
    assert f"config: {new}" in out and f"kept:   {config}" in out
    tasks = json.loads((d / "label-studio-tasks.json").read_text())
    assert [t["data"]["labelwise_row"] for t in tasks] == _to_label(d)


def test_a_rerun_keeps_an_edited_task_file(
    pile: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    """Re-running 'export' (after 'next') overwrote a label-studio-tasks.json the user had
    edited (annotations added by hand, tasks removed): it is now kept as the edited config
    is, and the new tasks written beside it as label-studio-tasks.new.json, named; one as
    export wrote it is rewritten in place with the rows waiting now."""
    d = _campaign(pile, "camp", capsys)
    tasks_file = d / "label-studio-tasks.json"
    new = d / "label-studio-tasks.new.json"
    _export(d, capsys)
    # unedited: after 'next' a re-run rewrites it in place with the rows waiting now
    assert run_cli(["next", d, "--batch", "10"], capsys)[0] == 0
    tasks = _export(d, capsys)
    assert [t["data"]["labelwise_row"] for t in tasks] == _to_label(d)
    assert not new.exists()
    edited = [dict(t, annotations=[_annotation("cat")]) for t in tasks[:5]]
    tasks_file.write_text(json.dumps(edited))
    before = tasks_file.read_bytes()
    assert run_cli(["next", d, "--batch", "10"], capsys)[0] == 0
    code, out, err = run_cli(["export", d], capsys)
    assert code == 0, err
    assert tasks_file.read_bytes() == before
    assert [t["data"]["labelwise_row"] for t in json.loads(new.read_text())] == _to_label(d)
    assert f"tasks:  {new}" in out and f"kept:   {tasks_file}" in out
    # the config beside the kept tasks is unedited: rewritten in place, nothing new beside it
    assert f"config: {d / 'label-studio-tasks.config.xml'}" in out
    assert not (d / "label-studio-tasks.config.new.xml").exists()
    # the new one is export's own: the next re-run rewrites it, the edited one is still kept
    assert run_cli(["next", d, "--batch", "10"], capsys)[0] == 0
    code, out, err = run_cli(["export", d], capsys)
    assert code == 0, err
    assert tasks_file.read_bytes() == before
    assert [t["data"]["labelwise_row"] for t in json.loads(new.read_text())] == _to_label(d)
    assert not (d / "label-studio-tasks.new.new.json").exists()


def test_a_rerun_keeps_an_edited_new_task_file_too(
    pile: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    """The task file edited, export wrote label-studio-tasks.new.json beside it; the user then
    edited that one too (annotations added) and a re-run (after 'next') replaced it without a
    word: the edits were lost. Now export refuses, naming both files, and writes nothing."""
    d = _campaign(pile, "camp", capsys)
    tasks_file = d / "label-studio-tasks.json"
    new = d / "label-studio-tasks.new.json"
    tasks = _export(d, capsys)
    tasks_file.write_text(json.dumps([dict(t, annotations=[_annotation("cat")]) for t in tasks]))
    assert run_cli(["next", d, "--batch", "10"], capsys)[0] == 0
    assert run_cli(["export", d], capsys)[0] == 0
    made = json.loads(new.read_text())
    new.write_text(json.dumps([dict(t, annotations=[_annotation("dog")]) for t in made[:3]]))
    before, state = new.read_bytes(), (d / "export.state.json").read_bytes()
    assert run_cli(["next", d, "--batch", "10"], capsys)[0] == 0
    code, _out, err = run_cli(["export", d], capsys)
    assert code != 0 and "Traceback" not in err
    assert f"{tasks_file} and {new} both hold tasks" in err
    assert new.read_bytes() == before and (d / "export.state.json").read_bytes() == state
    # moved away: the next export writes beside the kept task file again
    new.rename(d / "mine.json")
    code, out, err = run_cli(["export", d], capsys)
    assert code == 0 and f"tasks:  {new}" in out, err
    assert [t["data"]["labelwise_row"] for t in json.loads(new.read_text())] == _to_label(d)


def test_a_rerun_in_a_moved_directory_rewrites_its_own_task_file(
    pile: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    """The campaign directory renamed after an export ('next' works there): the task file,
    untouched, was recorded under its old path, so a re-run kept it 'as after an edit' and
    wrote label-studio-tasks.new.json beside it. It is export's own (its sha256 recorded):
    rewritten in place with the rows waiting now."""
    d = _campaign(pile, "camp", capsys)
    _export(d, capsys)
    moved = d.with_name("camp moved")
    d.rename(moved)
    assert run_cli(["next", moved, "--batch", "10"], capsys)[0] == 0
    code, out, err = run_cli(["export", moved], capsys)
    assert code == 0 and "kept:" not in out, err
    assert not (moved / "label-studio-tasks.new.json").exists()
    tasks = json.loads((moved / "label-studio-tasks.json").read_text())
    assert [t["data"]["labelwise_row"] for t in tasks] == _to_label(moved)


def test_export_keeps_a_json_file_it_did_not_write(
    pile: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    """'--out' naming a .json file export did not write (the user's own) replaced it; it is
    now kept and the tasks written beside it. Re-exporting the same rows over export's own
    file, with no record of it (an earlier version's), rewrites it: nothing would be lost."""
    d = _campaign(pile, "camp", capsys)
    own = d / "mine.json"
    own.write_text('{"mine": 1}')
    code, out, err = run_cli(["export", d, "--out", own], capsys)
    assert code == 0, err
    assert own.read_text() == '{"mine": 1}' and f"kept:   {own}" in out
    assert len(json.loads((d / "mine.new.json").read_text())) == len(_to_label(d))
    _export(d, capsys)
    (d / "export.state.json").unlink()
    code, out, err = run_cli(["export", d], capsys)
    assert code == 0 and "kept:" not in out, err
    assert not (d / "label-studio-tasks.new.json").exists()


def test_a_rerun_keeps_an_edited_new_config_too(
    pile: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    """The config edited, export wrote label-studio-tasks.config.new.xml beside it; the user
    then edited that one too and a re-run (after 'next') replaced it without a word. Now both
    are kept, no config is written and one line says so; the tasks are the rows waiting now.
    Moved away, the next export writes the config beside the kept one again."""
    d = _campaign(pile, "camp", capsys)
    config = d / "label-studio-tasks.config.xml"
    new = d / "label-studio-tasks.config.new.xml"
    _export(d, capsys)
    made = config.read_text()
    config.write_text(made.replace("showInline", "showInLine"))
    edited = config.read_text()
    assert run_cli(["next", d, "--batch", "10"], capsys)[0] == 0
    _export(d, capsys)
    assert new.read_text() == made
    mine = made.replace('<Choice value="bird"/>', '<Choice value="bird"/><Choice value="?"/>')
    new.write_text(mine)
    assert run_cli(["next", d, "--batch", "10"], capsys)[0] == 0
    code, out, err = run_cli(["export", d], capsys)
    assert code == 0, err
    assert config.read_text() == edited and new.read_text() == mine
    kept = [line for line in out.splitlines() if line.startswith("  kept:")]
    assert kept == [
        f"  kept:   {config} and {new} (both edited since an export wrote them: neither "
        "replaced, no config written; move one away for the config of now)"
    ]
    assert "config:" not in out
    tasks = json.loads((d / "label-studio-tasks.json").read_text())
    assert [t["data"]["labelwise_row"] for t in tasks] == _to_label(d)
    new.rename(d / "mine.xml")
    code, out, err = run_cli(["export", d], capsys)
    assert code == 0 and f"config: {new}" in out, err
    assert new.read_text() == made and config.read_text() == edited


def test_a_config_an_earlier_export_wrote_is_rewritten_when_the_classes_change(
    pile: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    """The config is recorded like the tasks (its sha256 in export.state.json): after the
    class names changed, the config an earlier export wrote is export's own and rewritten in
    place with the new names, not kept 'as after an edit' with a .config.new.xml beside it."""
    d = _campaign(pile, "camp", capsys)
    _export(d, capsys)
    config = d / "label-studio-tasks.config.xml"
    (d / "classes.json").write_text(json.dumps(["Cat", "Dog", "Bird"]))
    code, out, err = run_cli(["export", d], capsys)
    assert code == 0 and "kept:" not in out, err
    names = [c.get("value") for c in ET.fromstring(config.read_text()).iter("Choice")]
    assert names == ["Cat", "Dog", "Bird"]
    assert not (d / "label-studio-tasks.config.new.xml").exists()


def test_an_export_whose_state_cannot_be_written_leaves_no_half_export(
    pile: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    """export.state.json a directory: export wrote the task file and the config, then failed
    on the state, leaving tasks that no state records (the next run kept them 'as after an
    edit'). Now nothing is written, and the error names the state file."""
    d = _campaign(pile, "camp", capsys)
    state = d / "export.state.json"
    state.mkdir()
    code, _out, err = run_cli(["export", d], capsys)
    assert code == 2 and "Traceback" not in err
    assert sorted(p.name for p in d.glob("label-studio-tasks*")) == []
    assert f"cannot export: {state} is not a file" in err and "nothing was written" in err
    # over an earlier export: its files stay as they were
    state.rmdir()
    tasks = _export(d, capsys)
    before = {p.name: p.read_bytes() for p in d.glob("label-studio-tasks*")}
    assert run_cli(["next", d, "--batch", "10"], capsys)[0] == 0
    state.unlink()
    state.mkdir()
    code, _out, err = run_cli(["export", d], capsys)
    assert code == 2 and "Traceback" not in err
    assert {p.name: p.read_bytes() for p in d.glob("label-studio-tasks*")} == before
    assert len(tasks) < len(_to_label(d))
    assert not [p for p in d.iterdir() if p.name.endswith(".tmp")]


def test_an_export_and_classes_saved_with_a_bom_and_windows_line_ends_are_read(
    pile: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    """A Label Studio export opened and saved again in Windows Notepad (a UTF-8 byte-order
    mark, CRLF line ends) was refused as 'not valid JSON, cut short?', and a classes.json
    saved so (the file export's error asks for) as 'not valid JSON'. Both are read now: the
    import gives the labels the file without them gives."""
    y = pile["y"]
    a, b = _campaign(pile, "a", capsys), _campaign(pile, "b", capsys)  # the same campaign
    names = json.dumps(NAMES, indent=1).replace("\n", "\r\n")
    (a / "classes.json").write_bytes(b"\xef\xbb\xbf" + names.encode())
    tasks = _export(a, capsys)
    config = ET.parse(a / "label-studio-tasks.config.xml")
    assert [c.get("value") for c in config.iter("Choice")] == NAMES
    export = json.dumps(_full_export(tasks, y), indent=1)
    (a / "export.json").write_text(export)
    (b / "export.json").write_bytes(b"\xef\xbb\xbf" + export.replace("\n", "\r\n").encode())
    for d in (a, b):
        code, _out, err = run_cli(["import", d, d / "export.json"], capsys)
        assert code == 0, err
    assert _labels_csv(a / "labels.csv") == _labels_csv(b / "labels.csv")
    assert len(_labels_csv(a / "labels.csv")) == 30


def test_export_out_must_name_a_json_file(
    pile: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    """'--out tasks/' (a folder meant) wrote a task file named 'tasks' and 'tasks.config.xml'
    beside it, '--out tasks.csv' JSON into a .csv; both are now errors saying what to give,
    and nothing is written."""
    d = _campaign(pile, "camp", capsys)
    before = sorted(p.name for p in pile["dir"].iterdir())
    code, _out, err = run_cli(["export", d, "--out", f"{pile['dir'] / 'tasks'}/"], capsys)
    assert code == 2 and "Traceback" not in err
    assert err.strip().endswith(
        f"is a directory; give the task file's name, e.g. "
        f"{pile['dir'] / 'tasks' / 'label-studio-tasks.json'}"
    ), err
    code, _out, err = run_cli(["export", d, "--out", pile["dir"] / "tasks.csv"], capsys)
    assert code == 2
    assert "Label Studio tasks are a JSON file; give a name ending in .json, e.g. " in err
    assert sorted(p.name for p in pile["dir"].iterdir()) == before
    code, out, err = run_cli(["export", d, "--out", pile["dir"] / "tasks.JSON"], capsys)
    assert code == 0 and f"config: {pile['dir'] / 'tasks.config.xml'}" in out, err


def test_importing_what_export_wrote_says_to_label_it_in_label_studio_first(
    pile: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    """'labelwise import DIR label-studio-tasks.json' (the tasks export wrote, no labels yet)
    said '10 tasks without an annotation ... Is it Label Studio's export of the tasks?', the
    config 'looks like a CSV or TSV export', a folder 'is not valid JSON ([Errno 21] ...)'.
    Now each says what the file is and what to import instead; nothing is written."""
    d = _campaign(pile, "camp", capsys)
    _export(d, capsys)
    tasks, config = d / "label-studio-tasks.json", d / "label-studio-tasks.config.xml"
    for path in (tasks, config):
        code, _out, err = run_cli(["import", d, path], capsys)
        assert code == 2 and "Traceback" not in err
        assert err.strip() == (
            f"labelwise: error: EXPORT {path} is a file 'labelwise export' wrote (the tasks or "
            "their labeling config, to load into Label Studio: no labels yet); label the tasks "
            "in Label Studio, export the project as JSON (Export > JSON) and import that file"
        )
    (d / "mine.xml").write_text(config.read_text() + "<!-- mine -->\n")
    code, _out, err = run_cli(["import", d, d / "mine.xml"], capsys)
    assert code == 2 and "is XML (a labeling config?), not an export" in err
    code, _out, err = run_cli(["import", d, pile["dir"]], capsys)
    assert code == 2 and "is a directory; give the JSON file Label Studio exported" in err
    assert not (d / "labels.csv").exists()


@contextlib.contextmanager
def _read_only(d: Path) -> Iterator[None]:
    """``d`` made read-only: chmod for a user; for root (who writes anyway) the immutable
    attribute (chattr +i, ext4 and the like); skipped where neither holds."""
    if os.geteuid() != 0:
        d.chmod(0o555)
        try:
            yield
        finally:
            d.chmod(0o755)
        return
    chattr = shutil.which("chattr")
    if chattr is None or subprocess.run([chattr, "+i", str(d)], capture_output=True).returncode:
        pytest.skip("root writes into read-only folders, and chattr +i is not available here")
    try:
        yield
    finally:
        subprocess.run([chattr, "-i", str(d)], check=True)


def test_an_export_into_a_read_only_directory_writes_no_task_file_elsewhere(
    pile: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    """DIR read-only and --out in another folder: the task file was written there before the
    state in DIR failed. Now neither is written and the error names the state file."""
    d = _campaign(pile, "camp", capsys)
    elsewhere = pile["dir"] / "elsewhere"
    elsewhere.mkdir()
    with _read_only(d):
        code, _out, err = run_cli(["export", d, "--out", elsewhere / "t.json"], capsys)
    assert code == 2 and "Traceback" not in err
    assert list(elsewhere.iterdir()) == []
    assert f"cannot write {d / 'export.state.json'}" in err and "nothing was written" in err


def test_import_summary_counts_one_label_and_one_task_in_the_singular() -> None:
    """'imported 1 labels from 1 Label Studio tasks' (user34): the summary now says '1 label
    from 1 Label Studio task', and plural counts stay plural."""
    from labelwise.cli.import_labels import summarize
    from labelwise.labelstudio import LabelStudioAnswers

    one = summarize(LabelStudioAnswers("JSON", 1, labels={4: 0}), 1, [], ("cat", "dog"))
    assert one[0] == "imported 1 label from 1 Label Studio task (JSON export)"
    two = summarize(LabelStudioAnswers("JSON", 2, labels={4: 0, 5: 1}), 2, [], ("cat", "dog"))
    assert two[0] == "imported 2 labels from 2 Label Studio tasks (JSON export)"

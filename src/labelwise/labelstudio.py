"""Label Studio round trip: tasks to label out, Label Studio's JSON export back in.

Out (:func:`label_studio_tasks`): one task per row to label, in Label Studio's JSON task
format (https://labelstud.io/guide/task_format)::

    {"data": {"image": "<url or path>", "labelwise_row": 17, "labelwise_id": "cat/3.png"},
     "meta": {"labelwise_row": 17, "labelwise_id": "cat/3.png"},
     "predictions": [{"model_version": "labelwise", "score": 0.91,
                      "result": [{"from_name": "label", "to_name": "image", "type": "choices",
                                  "value": {"choices": ["cat"]}}]}]}

``data`` holds the image (a pile of image files: ``prefix + id``, the id being the file's
path under the pile's image root) or, for an array or table pile, the row's values as text;
``predictions`` the model's class as a pre-annotation (Label Studio shows it, the labeller
corrects it). :func:`labeling_config` is the matching labeling config (``<Choices
name="label">`` with one ``<Choice>`` per class name). The row number also sits in ``data``
because Label Studio's JSON-MIN export keeps ``data`` but drops ``meta``.

Back (:func:`read_label_studio_export`): Label Studio's JSON export (every task with its
``annotations``, each with ``result[].value.choices`` and ``was_cancelled``) or its JSON-MIN
export (one flat record per annotation: the task's ``data`` fields, ``id`` and ``label``:
the choice, or ``{"choices": [...]}``). Several annotations of one task: the latest
(``updated_at``, else ``created_at``, compared as times: ISO 8601, a ``Z`` or an offset;
else the last listed) that was not cancelled counts.
Tasks without an annotation, with only cancelled ones, with a choice that is no class
(unknown) or with several choices are reported, never silently dropped.
"""

from __future__ import annotations

import datetime as _dt
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote
from xml.sax.saxutils import quoteattr

import numpy as np
from numpy.typing import NDArray

from ._rowview import RowView, browser_image
from .exceptions import LabelwiseError
from .io import read_json
from .workspace import Workspace

__all__ = [
    "LabelStudioAnswers",
    "label_studio_tasks",
    "labeling_config",
    "read_label_studio_export",
]

FROM_NAME = "label"  # the <Choices> control
ROW_KEY = "labelwise_row"
ID_KEY = "labelwise_id"


# ----------------------------------------------------------------------------- export


def class_names(ws: Workspace) -> tuple[str, ...]:
    """The class names: ``classes.json`` (the workspace's or the capture's), else the indices
    ``"0"``, ``"1"``, ... of the recorded probabilities' columns."""
    names = ws.classes()
    if names is not None:
        return names
    if ws.has_source("probs"):
        probs = ws.load_source("probs")
        if probs.ndim == 2:
            return tuple(str(c) for c in range(probs.shape[1]))
    if ws.kind == "selection" and (n := ws.models_classes()) is not None:  # models to rank
        return tuple(str(c) for c in range(n))
    raise LabelwiseError(
        f"no class names for {ws.path}: write them to {ws.path / 'classes.json'} (a JSON list, "
        "index = class) or record --probs with the selection or campaign"
    )


def labeling_config(names: Sequence[str], *, image: bool = True) -> str:
    """Label Studio's labeling config: the image (or text) and one choice per class name."""
    obj = (
        '  <Image name="image" value="$image"/>' if image else '  <Text name="text" value="$text"/>'
    )
    to = "image" if image else "text"
    choices = "\n".join(f"    <Choice value={quoteattr(n)}/>" for n in names)
    return (
        f"<View>\n{obj}\n"
        f'  <Choices name="{FROM_NAME}" toName="{to}" choice="single" showInline="true">\n'
        f"{choices}\n  </Choices>\n</View>\n"
    )


def label_studio_tasks(
    ws: Workspace,
    rows: Sequence[int] | NDArray[np.int64],
    *,
    image_url_prefix: str | None = None,
    model_version: str = "labelwise",
    notes: list[str] | None = None,
) -> tuple[list[dict[str, Any]], str]:
    """Label Studio tasks for ``rows`` and the matching labeling config.

    Image piles (the capture's ``"pile"`` entry has ``kind: images`` and a ``root``): the task's
    ``image`` is ``image_url_prefix`` + the URL-quoted id (the file's path under the root), or
    the file's absolute path when no prefix is given. A TIFF image, which browsers and so
    Label Studio's image view do not show, is converted: its ``image`` is the PNG as a
    ``data:image/png;base64,...`` URL (Label Studio shows these; a note says how many).
    For Label Studio's local file storage (``LOCAL_FILES_DOCUMENT_ROOT`` set to the image
    root) the prefix is ``/data/local-files/?d=``. Other piles: the task's ``text`` is the
    row's values.
    When the workspace recorded class probabilities, each task carries the model's class as
    a prediction with its probability as ``score``. A pile that moved since the capture is
    no error (see :mod:`labelwise._rowview`): the note saying so is appended to ``notes``.
    """
    names = class_names(ws)
    ids = ws.row_ids()
    view = _RowView(ws, ids)
    if notes is not None and view.note:
        notes.append(view.note)
    probs = ws.load_source("probs") if ws.has_source("probs") else None
    if probs is not None and (probs.ndim != 2 or probs.shape[1] != len(names)):
        raise LabelwiseError(
            f"the recorded probabilities have shape {probs.shape} but there are {len(names)} "
            "class names; classes.json must name every column"
        )
    to_name = "image" if view.image else "text"
    tasks: list[dict[str, Any]] = []
    for r in (int(x) for x in rows):
        row_id = ids[r] if ids is not None and r < len(ids) else str(r)
        data: dict[str, Any] = {ROW_KEY: r, ID_KEY: row_id}
        if view.image:
            data["image"] = view.image_url(r, row_id, image_url_prefix)
        else:
            data["text"] = view.text(r)
        task: dict[str, Any] = {"data": data, "meta": {ROW_KEY: r, ID_KEY: row_id}}
        if probs is not None:
            p = np.asarray(probs[r], dtype=np.float64)
            c = int(np.argmax(p))
            task["predictions"] = [
                {
                    "model_version": model_version,
                    "score": round(float(p[c]), 6),
                    "result": [
                        {
                            "from_name": FROM_NAME,
                            "to_name": to_name,
                            "type": "choices",
                            "value": {"choices": [names[c]]},
                        }
                    ],
                }
            ]
        tasks.append(task)
    if notes is not None and view.embedded:
        notes.append(
            f"{view.embedded} of the images are TIFF, which browsers (and so Label Studio) "
            "do not show: their tasks hold each as a PNG (a data: URL), not its path or URL"
        )
    return tasks, labeling_config(names, image=view.image)


class _RowView:
    """How a pile row goes into a task: an image path/URL or its text form
    (:class:`labelwise._rowview.RowView`)."""

    def __init__(self, ws: Workspace, ids: Sequence[str] | None) -> None:
        self.rows = RowView(ws, ids)
        self.embedded = 0  # TIFF images given as PNG data: URLs

    @property
    def image(self) -> bool:
        return self.rows.kind == "image"

    @property
    def note(self) -> str:
        return self.rows.note

    def image_url(self, row: int, row_id: str, prefix: str | None) -> str:
        path = self.rows.image_path(row)
        embedded = browser_image(path, "exporting TIFF images for Label Studio")
        if embedded is not None:  # TIFF: browsers, and so Label Studio, do not show it
            self.embedded += 1
            return embedded
        if prefix is None:
            return str(path)
        return prefix + quote(row_id, safe="/")

    def text(self, row: int) -> str:
        return self.rows.text(row)


# ----------------------------------------------------------------------------- import


@dataclass
class LabelStudioAnswers:
    """What a Label Studio export says, row by row, and what it could not use.

    ``labels`` maps a pile row to its class index. ``skipped`` lists ``(row, reason)`` for
    tasks without a usable annotation (``"no annotation"``, ``"cancelled"``, ``"no choice"``);
    ``unknown`` lists ``(row, choice)`` for choices that are no class; ``ambiguous`` lists
    ``(row, choices)`` for annotations with several choices; ``several`` lists the rows whose
    task had several usable annotations that disagree (the latest was taken); ``no_row``
    counts tasks without a labelwise row (not exported by labelwise); ``seen`` holds every
    row that has a task in the export; ``ids`` the ``labelwise_id`` its tasks carry (rows
    whose tasks carry none are absent).
    """

    format: str
    n_tasks: int
    labels: dict[int, int] = field(default_factory=dict)
    skipped: list[tuple[int, str]] = field(default_factory=list)
    unknown: list[tuple[int, str]] = field(default_factory=list)
    ambiguous: list[tuple[int, list[str]]] = field(default_factory=list)
    several: list[int] = field(default_factory=list)
    no_row: int = 0
    seen: set[int] = field(default_factory=set)
    ids: dict[int, set[str]] = field(default_factory=dict)


def read_label_studio_export(
    path: str | Path, names: Sequence[str] | None, *, n_classes: int | None = None
) -> LabelStudioAnswers:
    """Read Label Studio's JSON or JSON-MIN export; map choices to classes.

    A choice is the class whose name it equals (``names``), else an integer in
    ``[0, n_classes)`` (``n_classes`` defaults to ``len(names)``).
    """
    doc = _read_export(Path(path))
    if isinstance(doc, dict):
        doc = [doc]
    if not isinstance(doc, list) or not all(isinstance(t, dict) for t in doc):
        raise LabelwiseError(
            f"EXPORT {path} must be Label Studio's JSON or JSON-MIN export (a JSON list of "
            "tasks), got something else"
        )
    full = any(isinstance(t.get("annotations", t.get("completions")), list) for t in doc)
    lookup = {n: i for i, n in enumerate(names or ())}
    limit = n_classes if n_classes is not None else len(lookup) or None
    out = LabelStudioAnswers(format="JSON" if full else "JSON-MIN", n_tasks=len(doc))
    # row -> candidate answers (time, position, choices)
    answers: dict[int, list[tuple[_dt.datetime, int, list[str] | None]]] = {}
    cancelled: set[int] = set()
    for pos, task in enumerate(doc):
        row = _task_row(task)
        if row is None:
            out.no_row += 1
            continue
        answers.setdefault(row, [])
        out.seen.add(row)
        row_id = _task_id(task)
        if row_id is not None:
            out.ids.setdefault(row, set()).add(row_id)
        if full:
            anns = task.get("annotations", task.get("completions")) or []
            for k, ann in enumerate(anns):
                if not isinstance(ann, dict):
                    continue
                if ann.get("was_cancelled") or ann.get("skipped"):
                    cancelled.add(row)
                    continue
                answers[row].append((_when(ann), pos * 10_000 + k, _result_choices(ann)))
        elif FROM_NAME in task:
            answers[row].append((_when(task), pos, _min_choices(task[FROM_NAME])))
    for row, cands in answers.items():
        if not cands:
            out.skipped.append((row, "cancelled" if row in cancelled else "no annotation"))
            continue
        cands.sort(key=lambda c: (c[0], c[1]))
        choices = cands[-1][2]
        distinct = {tuple(c[2]) if c[2] is not None else None for c in cands}
        if len(distinct) > 1:
            out.several.append(row)
        if not choices:
            out.skipped.append((row, "no choice"))
        elif len(choices) > 1:
            out.ambiguous.append((row, list(choices)))
        else:
            cls = _class_of(choices[0], lookup, limit)
            if cls is None:
                out.unknown.append((row, choices[0]))
            else:
                out.labels[row] = cls
    return out


def _task_row(task: Mapping[str, Any]) -> int | None:
    """The task's labelwise row: an integer (or its text); None for anything else."""
    for where in (task.get("data"), task.get("meta"), task):
        if isinstance(where, Mapping) and ROW_KEY in where:
            value = where[ROW_KEY]
            if isinstance(value, bool):
                return None
            if isinstance(value, float):
                return int(value) if value.is_integer() else None
            try:
                return int(value)
            except (TypeError, ValueError, OverflowError):
                return None
    return None


def _read_export(path: Path) -> Any:
    """The export's JSON; a CSV/TSV export or a cut file is an error saying to export JSON."""
    if path.is_dir():
        raise LabelwiseError(
            f"EXPORT {path} is a directory; give the JSON file Label Studio exported (Export > "
            "JSON)"
        )
    if not path.is_file():
        return read_json(path, f"EXPORT {path}")  # the usual error for a missing file
    try:
        with open(path, encoding="utf-8-sig") as fh:
            text = fh.read()
    except UnicodeDecodeError:
        raise LabelwiseError(
            f"EXPORT {path} {_binary_kind(path)}, not a Label Studio JSON export: export the "
            "Label Studio project as JSON or JSON-MIN (Export > JSON) and import that file"
        ) from None
    except OSError as exc:
        raise LabelwiseError(f"EXPORT {path} cannot be read ({exc})") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        head = text.lstrip("\ufeff \t\r\n")[:1]
        what = (
            "is empty"
            if not head
            else "is XML (a labeling config?), not an export"
            if head == "<"
            else "looks like a CSV or TSV export"
            if head not in "[{"
            else f"is not valid JSON, cut short? ({exc})"
        )
        raise LabelwiseError(
            f"EXPORT {path} {what}: export the Label Studio project as JSON or JSON-MIN "
            "(Export > JSON) and import that file"
        ) from None


def _binary_kind(path: Path) -> str:
    """What a file that is no UTF-8 text looks like, from its first bytes: a NumPy array, a
    zip archive (.npz, a spreadsheet), else binary data."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(6)
    except OSError:
        head = b""
    if head == b"\x93NUMPY":
        return "is a NumPy array (.npy)"
    if head.startswith(b"PK"):
        return "is a zip archive (.npz, .xlsx, ...)"
    return "is not UTF-8 text (binary data?)"


def _task_id(task: Mapping[str, Any]) -> str | None:
    """The task's ``labelwise_id`` (as ``labelwise export`` wrote it), None if absent."""
    for where in (task.get("data"), task.get("meta"), task):
        if isinstance(where, Mapping) and ID_KEY in where:
            value = where[ID_KEY]
            return value if isinstance(value, str) else json.dumps(value)
    return None


_NO_TIME = _dt.datetime.min.replace(tzinfo=_dt.timezone.utc)


def _when(ann: Mapping[str, Any]) -> _dt.datetime:
    """``updated_at`` (else ``created_at``) as a time in UTC; without one (or unreadable) the
    earliest time, so that the order listed decides. A time without an offset counts as UTC."""
    for key in ("updated_at", "created_at"):
        text = ann.get(key)
        if not isinstance(text, str) or not text.strip():
            continue
        t = text.strip()
        if t[-1:] in ("Z", "z"):
            t = t[:-1] + "+00:00"
        try:
            when = _dt.datetime.fromisoformat(t)
            if when.tzinfo is None:
                when = when.replace(tzinfo=_dt.timezone.utc)
            return when.astimezone(_dt.timezone.utc)
        except (ValueError, OverflowError):  # not ISO 8601, or out of datetime's range
            continue
    return _NO_TIME


def _result_choices(ann: Mapping[str, Any]) -> list[str] | None:
    """The choices of an annotation's ``<Choices>`` results (``from_name`` label first)."""
    found: list[str] = []
    results = [r for r in ann.get("result") or [] if isinstance(r, Mapping)]
    ours = [r for r in results if r.get("from_name") == FROM_NAME] or results
    for r in ours:
        value = r.get("value")
        if r.get("type", "choices") == "choices" and isinstance(value, Mapping):
            found += [str(c) for c in value.get("choices") or []]
    return found


def _min_choices(value: Any) -> list[str]:
    """JSON-MIN's value of the choices control: "cat", {"choices": [...]} or a list of them."""
    if isinstance(value, str | int):
        return [str(value)]
    if isinstance(value, Mapping):
        return [str(c) for c in value.get("choices") or []]
    if isinstance(value, list):
        return [c for v in value for c in _min_choices(v)]
    return []


def _class_of(choice: str, lookup: Mapping[str, int], limit: int | None) -> int | None:
    """The class a choice names: its name (surrounding spaces ignored, as the labels CSV
    reader does: a choice 'Nine ' typed into a labelling config was refused), else an
    integer in ``[0, limit)``; None if neither."""
    for key in (choice, choice.strip()):
        if key in lookup:
            return lookup[key]
    try:
        c = int(choice.strip())
    except ValueError:
        return None
    if c < 0 or (limit is not None and c >= limit):
        return None
    return c

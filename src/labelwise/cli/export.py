"""``labelwise export``: the rows to label as Label Studio tasks, with the labeling config."""

from __future__ import annotations

import argparse
import hashlib
import os
import sys
from collections.abc import Collection
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from .._json import dumps
from ..exceptions import LabelwiseError
from ..io import file_digest, shell_arg, write_files
from ..labelstudio import label_studio_tasks
from ..workspace import Workspace, capture_hint, check_directory, check_output_file

EXPORTED = "export"  # DIR/export.state.json: the task files and configs written, path -> sha256


def add_parser(sub: Any) -> None:
    e = sub.add_parser(
        "export",
        help="write the rows to label as Label Studio tasks (and its labeling config)",
        description=(
            "Write the rows to label as a Label Studio task file: for a campaign the rows "
            "proposed and not yet labelled, for a selection the rows of DIR/to_label.csv, "
            "each without a label in DIR/labels.csv. "
            "Each task's data holds the image (image piles: a path or URL under the pile's "
            "image root) or the row's values as text, and the row number; its predictions "
            "hold the model's class as a pre-annotation. Beside the task file goes the "
            "matching labeling config (<stem>.config.xml: an Image or Text and a Choices "
            "control named 'label' with one choice per class name; one edited since an "
            "earlier export is kept, and the new one written as <stem>.config.new.xml, or "
            "not at all if that one was edited too). "
            "A re-run rewrites the task file it wrote (the rows waiting now); one edited "
            "since, or one export did not write, is kept and the new tasks written as "
            "<stem>.new.json (refused if that one was edited too). "
            "Import the tasks into a Label Studio project with that config, label, export as "
            "JSON (or JSON-MIN) and "
            "read the export back with 'labelwise import DIR EXPORT.json'."
        ),
        epilog=(
            "Label Studio's local file storage: start it with\n"
            "  LABEL_STUDIO_LOCAL_FILES_SERVING_ENABLED=true\n"
            "  LABEL_STUDIO_LOCAL_FILES_DOCUMENT_ROOT=<the pile's image root>\n"
            "and export with --image-url-prefix '/data/local-files/?d='."
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    e.add_argument("dir", type=Path, help="selection or campaign directory")
    e.add_argument(
        "--format",
        choices=["label-studio"],
        default="label-studio",
        help="task file format (default: label-studio)",
    )
    e.add_argument(
        "--out",
        help="task file to write, a .json file (default: DIR/label-studio-tasks.json)",
    )
    e.add_argument(
        "--image-url-prefix",
        metavar="PREFIX",
        help="image piles: the task's image is PREFIX + the image's path under the pile's "
        "root (default: the image file's absolute path)",
    )
    e.add_argument(
        "--model-version",
        default="labelwise",
        help="model_version of the pre-annotations (default: labelwise)",
    )
    e.set_defaults(func=cmd_export)


def rows_to_label(directory: Path) -> tuple[str, NDArray[np.int64]]:
    """``("campaign" | "selection", rows)``: the rows still to label, in labelling order."""
    check_directory(directory)
    held = Workspace(directory).holds()
    if held == "campaign":
        from .campaign import CampaignState

        return held, np.asarray(CampaignState.open(directory).camp.pending, dtype=np.int64)
    if held == "selection":
        _, sel = Workspace.open(directory)
        return held, np.asarray(sel.indices, dtype=np.int64)
    raise LabelwiseError(
        f"DIR {directory} holds no selection or campaign; make one with 'labelwise select' "
        f"or 'labelwise campaign'{capture_hint(directory)}"
    )


def open_workspace(directory: Path, held: str) -> Workspace:
    """The workspace with its recorded sources (a campaign's live in its state file)."""
    if held == "selection":
        return Workspace.open(directory)[0]
    from .campaign import CampaignState

    return CampaignState.open(directory).ws


def check_classification(ws: Workspace, held: str, directory: Path) -> None:
    """Label Studio tasks from labelwise ask for a class: a regression campaign is an error
    that says how to label it (export and import say the same)."""
    if held == "campaign" and not ws.has_source("probs"):
        raise LabelwiseError(
            f"DIR {directory} holds a regression campaign; Label Studio tasks from labelwise "
            "ask for a class (Choices), so label its rows in a CSV (row,target) instead and "
            f"give it to 'labelwise estimate {shell_arg(directory)} --labels FILE'"
        )


def _unlabelled(
    directory: Path, held: str, rows: NDArray[np.int64]
) -> tuple[NDArray[np.int64], int]:
    """The rows to label without a label in ``DIR/labels.csv`` (all of them when there is
    none, or it cannot be read: the estimate's errors say why), and how many were left out.
    Before, every selected row was exported: after 'select --extend DIR --budget 20' the 100
    labelled rows went to Label Studio again with the 20 new ones; a campaign's proposed rows
    labelled in labels.csv but not yet recorded (no 'estimate' since) went again likewise."""
    labels = directory / "labels.csv"
    if not labels.is_file():
        return rows, 0
    try:
        if held == "selection":
            ws, sel = Workspace.open(directory)
            have: Collection[int] = ws.selected_labels(labels, sel)[1]
        else:
            from .campaign import CampaignState

            st = CampaignState.open(directory)
            read = st.ws.read_label_file(labels, n_rows=st.camp.population_size)
            have = set(read[0].tolist())
    except LabelwiseError:
        return rows, 0
    keep = np.asarray([r for r in rows.tolist() if r not in have], dtype=np.int64)
    return keep, int(rows.size - keep.size)


def cmd_export(args: argparse.Namespace) -> int:
    held, rows = rows_to_label(args.dir)
    rows, done = _unlabelled(args.dir, held, rows)
    if rows.size == 0 and done:
        more = (
            f"'labelwise next {shell_arg(args.dir)}'"
            if held == "campaign"
            else f"'labelwise select --extend {shell_arg(args.dir)} --budget N'"
        )
        raise LabelwiseError(
            f"DIR {args.dir}: every {'proposed' if held == 'campaign' else 'selected'} row has "
            f"a label in {args.dir / 'labels.csv'}, nothing is left to export; its estimate: "
            f"'labelwise estimate {shell_arg(args.dir)} --labels "
            f"{shell_arg(args.dir / 'labels.csv')}'; more rows: {more}"
        )
    if rows.size == 0:
        if held == "campaign" and _every_row_proposed(args.dir):
            # 'run labelwise next' sent the user to a command that says nothing is left
            raise LabelwiseError(
                f"DIR {args.dir} has no rows waiting for labels: every row of its pile has been "
                "proposed and labelled, nothing is left to export; its estimate: 'labelwise "
                f"report {shell_arg(args.dir)}'"
            )
        hint = f"labelwise next {shell_arg(args.dir)}" if held == "campaign" else "labelwise select"
        raise LabelwiseError(f"DIR {args.dir} has no rows waiting for labels; run '{hint}'")
    ws = open_workspace(args.dir, held)
    check_classification(ws, held, args.dir)
    notes: list[str] = []
    tasks, config = label_studio_tasks(
        ws,
        rows,
        image_url_prefix=args.image_url_prefix,
        model_version=args.model_version,
        notes=notes,
    )
    for note in notes:
        print(f"labelwise export: note: {note}", file=sys.stderr)
    out = _task_file(args.out) if args.out is not None else args.dir / "label-studio-tasks.json"
    stem = out.stem
    check_output_file(out, args.dir, "--out", suffixes=(".json",))
    text = dumps(tasks, indent=2)
    # a task file or config the user edited (annotations added, tasks removed; more choices,
    # another layout) or that this command did not write is theirs: kept, and this run's
    # goes beside it; one exactly as an earlier export wrote it (its sha256 recorded) is
    # rewritten
    written = written_files(ws)
    tasks_path, kept_tasks = _place(out, f"{stem}.new.json", text, written)
    if tasks_path is None:  # the place beside it is theirs too
        raise LabelwiseError(
            f"{out} and {out.with_name(f'{stem}.new.json')} both hold tasks this command did "
            "not write there (edited since, as with annotations added): neither is replaced; "
            "move one of them away, or give --out another .json file, and export again"
        )
    check_output_file(tasks_path, args.dir, "--out", suffixes=(".json",))
    config_path, kept = _place(
        out.with_name(f"{stem}.config.xml"), f"{stem}.config.new.xml", config, written
    )
    if config_path is not None:
        check_output_file(config_path, args.dir, "--out", suffixes=(".xml",))
    # the task file, the config and the record of them are written as one (each to a
    # temporary file first, all renamed at the end): a state file that cannot be written
    # left tasks that the next run took for the user's
    state = ws.state_file(EXPORTED)
    if state.exists() and not state.is_file():
        raise LabelwiseError(
            f"cannot export: {state} is not a file (export records there the task files it "
            "wrote); move it away and export again; nothing was written"
        )
    files = [(tasks_path, text)] + ([] if config_path is None else [(config_path, config)])
    for path, content in files:
        written[str(path.resolve())] = hashlib.sha256(content.encode("utf-8")).hexdigest()
    write_files([*files, (state, dumps(written) + "\n")])
    what = "image" if "image" in tasks[0]["data"] else "text"
    pre = " with the model's class as a pre-annotation" if "predictions" in tasks[0] else ""
    print(f"wrote {len(tasks)} Label Studio tasks ({what}{pre}) for the {held} in {args.dir}")
    if done:
        what = "proposed" if held == "campaign" else "selected"
        print(f"  left out {done} {what} rows already labelled in {args.dir / 'labels.csv'}")
    print(f"  tasks:  {tasks_path}")
    if config_path is not None:
        print(f"  config: {config_path} (paste into the project's Labeling Interface, Code)")
    if kept_tasks is not None:
        print(
            f"  kept:   {kept_tasks} (not the tasks an earlier export wrote there, as after "
            "an edit: not replaced; compare the two)"
        )
    if kept is not None and config_path is not None:
        print(
            f"  kept:   {kept} (not the config an earlier export wrote there, as after an "
            "edit: not replaced; compare the two)"
        )
    elif kept is not None:
        print(
            f"  kept:   {kept} and {kept.with_name(f'{stem}.config.new.xml')} (both edited "
            "since an export wrote them: neither replaced, no config written; move one away "
            "for the config of now)"
        )
    then = f"labelwise import {shell_arg(args.dir)} EXPORT.json"
    print(f"  then:   {then}  (Label Studio's JSON export)")
    return 0


def _every_row_proposed(directory: Path) -> bool:
    """Whether the campaign in ``directory`` has proposed every row of its pile."""
    from .campaign import CampaignState

    camp = CampaignState.open(directory).camp
    return camp.n_proposed >= camp.population_size


def _task_file(given: str) -> Path:
    """``--out``: a .json file. A name ending in a path separator (a folder meant: argparse's
    Path dropped the separator and a file of that name was written) or in another suffix (a
    JSON task file named tasks.csv, its config tasks.config.xml) is an error that says what
    to give."""
    out = Path(given)
    if given.endswith(("/", os.sep)) or out.is_dir():
        raise LabelwiseError(
            f"--out {given} is a directory; give the task file's name, e.g. "
            f"{out / 'label-studio-tasks.json'}"
        )
    if out.suffix.lower() != ".json":
        raise LabelwiseError(
            f"--out {given}: Label Studio tasks are a JSON file; give a name ending in .json, "
            f"e.g. {out.with_suffix('.json')}"
        )
    return out


def written_files(ws: Workspace) -> dict[str, str]:
    """The task files and configs export wrote for ``ws``: resolved path -> sha256
    (``DIR/export.state.json``)."""
    try:
        doc = ws.read_state(EXPORTED)
    except LabelwiseError:
        return {}
    if not isinstance(doc, dict):
        return {}
    return {k: v for k, v in doc.items() if isinstance(k, str) and isinstance(v, str)}


def _place(
    path: Path, beside: str, text: str, written: dict[str, str]
) -> tuple[Path | None, Path | None]:
    """Where to write ``text`` meant for ``path``, and the file kept there: ``(path, None)``
    when ``path`` is free or export's own; ``(path's sibling named beside, path)`` when
    ``path`` is the user's (:func:`_edited`) and the sibling is not; ``(None, path)`` when
    both are the user's."""
    if not _edited(path, text, written):
        return path, None
    other = path.with_name(beside)
    return (None if _edited(other, text, written) else other), path


def _edited(path: Path, text: str, written: dict[str, str]) -> bool:
    """Whether ``path`` holds a file other than one export wrote (its sha256 among those
    in ``written``, under whatever path: the directory may have been moved or reached by
    another name since) and other than ``text``: edited since, or not export's."""
    if not path.is_file() or path.is_symlink():
        return False  # nothing there, or something check_output_file refuses anyway
    try:
        digest = file_digest(path)
        if digest in written.values():
            return False
        return path.read_text(encoding="utf-8") != text
    except (OSError, UnicodeDecodeError):
        return True

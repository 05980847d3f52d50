"""``labelwise export``: the rows to label as Label Studio tasks, with the labeling config."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from .._json import dumps
from ..exceptions import LabelwiseError
from ..io import atomic_write, file_digest
from ..labelstudio import label_studio_tasks
from ..workspace import Workspace, check_directory, check_output_file

EXPORTED = "export"  # DIR/export.state.json: the task files written, path -> sha256


def add_parser(sub: Any) -> None:
    e = sub.add_parser(
        "export",
        help="write the rows to label as Label Studio tasks (and its labeling config)",
        description=(
            "Write the rows to label as a Label Studio task file: for a campaign the rows "
            "proposed and not yet labelled, for a selection the rows of DIR/to_label.csv. "
            "Each task's data holds the image (image piles: a path or URL under the pile's "
            "image root) or the row's values as text, and the row number; its predictions "
            "hold the model's class as a pre-annotation. Beside the task file goes the "
            "matching labeling config (<stem>.config.xml: an Image or Text and a Choices "
            "control named 'label' with one choice per class name; one edited since an "
            "earlier export is kept, and the new one written as <stem>.config.new.xml). "
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
        type=Path,
        help="task file to write (default: DIR/label-studio-tasks.json)",
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
        "or 'labelwise campaign'"
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
            f"give it to 'labelwise estimate {directory} --labels FILE'"
        )


def cmd_export(args: argparse.Namespace) -> int:
    held, rows = rows_to_label(args.dir)
    if rows.size == 0:
        hint = f"labelwise next {args.dir}" if held == "campaign" else "labelwise select"
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
    out = args.out if args.out is not None else args.dir / "label-studio-tasks.json"
    stem = out.stem
    config_path = out.with_name(f"{stem}.config.xml")
    check_output_file(out, args.dir, "--out", suffixes=(".json",))
    text = dumps(tasks, indent=2)
    # a task file the user edited (annotations added, tasks removed) or that this command
    # did not write is theirs, as an edited config is: kept, and this run's tasks go beside
    # it; one exactly as an earlier export wrote it (its sha256 recorded) is rewritten
    written = _written(ws)
    kept_tasks = out if _tasks_edited(out, text, written) else None
    if kept_tasks is not None:
        out = out.with_name(f"{stem}.new.json")
        check_output_file(out, args.dir, "--out", suffixes=(".json",))
        if _tasks_edited(out, text, written):  # the place beside it is theirs too
            raise LabelwiseError(
                f"{kept_tasks} and {out} both hold tasks this command did not write there "
                "(edited since, as with annotations added): neither is replaced; move one "
                "of them away, or give --out another .json file, and export again"
            )
    # a config the user edited (more choices, another layout) is theirs: kept, and this
    # run's config goes beside it; one as an earlier export wrote it is simply rewritten
    kept = config_path if _differs(config_path, config) else None
    if kept is not None:
        config_path = config_path.with_name(f"{stem}.config.new.xml")
    check_output_file(config_path, args.dir, "--out", suffixes=(".xml",))
    atomic_write(out, lambda fh: fh.write(text))
    written[str(out.resolve())] = file_digest(out)
    ws.write_state(EXPORTED, written)
    atomic_write(config_path, lambda fh: fh.write(config))
    what = "image" if "image" in tasks[0]["data"] else "text"
    pre = " with the model's class as a pre-annotation" if "predictions" in tasks[0] else ""
    print(f"wrote {len(tasks)} Label Studio tasks ({what}{pre}) for the {held} in {args.dir}")
    print(f"  tasks:  {out}")
    print(f"  config: {config_path} (paste into the project's Labeling Interface, Code)")
    if kept_tasks is not None:
        print(
            f"  kept:   {kept_tasks} (not the tasks an earlier export wrote there, as after "
            "an edit: not replaced; compare the two)"
        )
    if kept is not None:
        print(
            f"  kept:   {kept} (it differs from the config written now, as after an edit: "
            f"not replaced; compare the two)"
        )
    print(f"  then:   labelwise import {args.dir} EXPORT.json  (Label Studio's JSON export)")
    return 0


def _written(ws: Workspace) -> dict[str, str]:
    """The task files export wrote for ``ws``: resolved path -> sha256
    (``DIR/export.state.json``)."""
    try:
        doc = ws.read_state(EXPORTED)
    except LabelwiseError:
        return {}
    if not isinstance(doc, dict):
        return {}
    return {k: v for k, v in doc.items() if isinstance(k, str) and isinstance(v, str)}


def _tasks_edited(path: Path, text: str, written: dict[str, str]) -> bool:
    """Whether ``path`` holds a task file other than one export wrote (its sha256 among those
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


def _differs(path: Path, config: str) -> bool:
    """Whether ``path`` holds a file other than ``config`` (an edited labeling config)."""
    if not path.is_file() or path.is_symlink():
        return False  # nothing there, or something check_output_file refuses anyway
    try:
        return path.read_text(encoding="utf-8") != config
    except (OSError, UnicodeDecodeError):
        return True

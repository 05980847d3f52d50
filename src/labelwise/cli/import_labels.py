"""``labelwise import``: Label Studio's JSON export back into the directory's labels."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import numpy as np

from .. import registry
from ..exceptions import LabelwiseError
from ..io import file_digest, id_key, shell_arg
from ..labelstudio import LabelStudioAnswers, class_names, read_label_studio_export
from ..workspace import LABELS, Workspace
from ._common import DefaultsHelpFormatter, check_confidence_flag
from ._labelling import LOCK_FILE, check_classes, lock_directory, unlock
from .export import check_classification, open_workspace, rows_to_label, written_files


def add_parser(sub: Any) -> None:
    i = sub.add_parser(
        "import",
        help="read Label Studio's JSON export into DIR/labels.csv (campaigns: record them)",
        description=(
            "Read Label Studio's JSON export (or its JSON-MIN export) of the tasks written by "
            "'labelwise export', map each choice to its class (by name, see classes.json, or "
            "as a class number) and add the labels to DIR/labels.csv (row,label,class). For a "
            "campaign the labels are then recorded and the estimate printed, as 'labelwise "
            "estimate DIR --labels DIR/labels.csv' does. A task with several annotations "
            "counts its latest one that was not cancelled. Tasks without an annotation, "
            "cancelled ones, choices that name no class and rows that are not in this "
            "selection or campaign are reported and not used; nothing usable is an error."
        ),
        formatter_class=DefaultsHelpFormatter,
    )
    i.add_argument("dir", type=Path, help="selection or campaign directory")
    i.add_argument("export", type=Path, help="Label Studio export, JSON or JSON-MIN")
    i.add_argument("--confidence", type=float, default=0.95, help="campaigns: confidence level")
    i.add_argument("--json", action="store_true", help="campaigns: print the estimate as JSON")
    i.set_defaults(func=cmd_import)


def _n(k: int, word: str, count: bool = True) -> str:
    """``"1 task"``, ``"3 tasks"`` (``count=False``: just the word)."""
    w = word if k == 1 else word + "s"
    return f"{k} {w}" if count else w


def _rows(pairs: list[Any]) -> str:
    shown = ", ".join(str(p) for p in pairs[:8])
    return shown + (", ..." if len(pairs) > 8 else "")


def summarize(
    ans: LabelStudioAnswers, used: int, outside: list[int], names: tuple[str, ...]
) -> list[str]:
    """The import's report: one summary line, then one line per kind of problem."""
    problems = len(ans.skipped) + len(ans.unknown) + len(ans.ambiguous) + len(outside) + ans.no_row
    lines = [
        f"imported {_n(used, 'label')} from {_n(ans.n_tasks, 'Label Studio task')} "
        f"({ans.format} export)" + (f"; {_n(problems, 'task')} not used" if problems else "")
    ]
    for reason in ("no annotation", "cancelled", "no choice"):
        rows = [r for r, why in ans.skipped if why == reason]
        if rows:
            what = {
                "no annotation": "without an annotation (skipped in Label Studio or not done)",
                "cancelled": "whose every annotation was cancelled (skipped)",
                "no choice": "whose latest annotation chose no class",
            }[reason]
            n = len(rows)
            lines.append(f"  {_n(n, 'task')} {what}: {_n(n, 'row', False)} {_rows(rows)}")
    if ans.unknown:
        shown = ", ".join(f"row {r}: {c!r}" for r, c in ans.unknown[:8])
        lines.append(
            f"  {_n(len(ans.unknown), 'unknown choice')}, not used ({shown}); the classes are "
            f"{', '.join(names[:20])}{', ...' if len(names) > 20 else ''}: fix the project's "
            "choices or classes.json"
        )
    if ans.ambiguous:
        shown = ", ".join(f"row {r}: {c}" for r, c in ans.ambiguous[:8])
        lines.append(
            f"  {_n(len(ans.ambiguous), 'annotation')} with several choices, not used: {shown}"
        )
    if ans.several:
        lines.append(
            f"  {_n(len(ans.several), 'task')} with several annotations that disagree; the latest "
            f"one not cancelled was taken: rows {_rows(ans.several)}"
        )
    if outside:
        lines.append(
            f"  {_n(len(outside), 'row')} not in this directory's selection or campaign, "
            f"not used: {_rows(outside)}"
        )
    if ans.no_row:
        lines.append(
            f"  {_n(ans.no_row, 'task')} {'carries' if ans.no_row == 1 else 'carry'} no "
            "labelwise_row (not exported by 'labelwise export'), not used"
        )
    return lines


def cmd_import(args: argparse.Namespace) -> int:
    check_confidence_flag(args.confidence)  # before anything is written
    held, waiting = rows_to_label(args.dir)
    ws = open_workspace(args.dir, held)
    check_classification(ws, held, args.dir)
    names = class_names(ws)
    if args.export.is_file() and file_digest(args.export) in written_files(ws).values():
        raise LabelwiseError(
            f"EXPORT {args.export} is a file 'labelwise export' wrote (the tasks or their "
            "labeling config, to load into Label Studio: no labels yet); label the tasks in "
            "Label Studio, export the project as JSON (Export > JSON) and import that file"
        )
    ans = read_label_studio_export(args.export, names)
    check_ids(ws, ans, args.export)
    fh = lock_directory(
        args.dir,
        f"DIR {args.dir} is being labelled on a 'labelwise label' page (it holds "
        f"{args.dir / LOCK_FILE}); stop that page, then import; nothing written",
    )
    try:
        return _import(args, held, waiting, ws, names, ans)
    finally:
        unlock(fh)


def check_ids(ws: Workspace, ans: LabelStudioAnswers, export: Path) -> None:
    """An error when the export's tasks carry ``labelwise_id``s other than the rows' ids
    (``ids.txt``; the row number when the pile has none): an export of another pile or
    capture, whose row numbers mean other rows."""
    ids = ws.row_ids()
    wrong = []
    for row, got in sorted(ans.ids.items()):
        want = ids[row] if ids is not None and 0 <= row < len(ids) else str(row)
        if {id_key(g) for g in got} != {id_key(want)}:
            wrong.append((row, sorted(got)[0], want))
    if wrong:
        r, got_id, want = wrong[0]
        verb = "carries" if len(wrong) == 1 else "carry"
        raise LabelwiseError(
            f"EXPORT {export}: {_n(len(wrong), 'task')} of {ans.n_tasks} {verb} a labelwise_id "
            f"other than their row's (e.g. row {r}: {got_id!r} in the export, {want!r} here): "
            f"it was exported from another pile, selection or capture; export this directory "
            f"again ('labelwise export {shell_arg(ws.path)}'); nothing written"
        )


def _import(
    args: argparse.Namespace,
    held: str,
    waiting: Any,
    ws: Workspace,
    names: tuple[str, ...],
    ans: LabelStudioAnswers,
) -> int:
    recorded: dict[int, Any] = {}
    if held == "campaign":
        from .campaign import CampaignState

        st = CampaignState.open(args.dir)
        allowed = set(st.camp.proposed.tolist())
        recorded = st.labels
    else:
        allowed = set(waiting.tolist())
    outside = sorted(r for r in ans.labels if r not in allowed)
    usable = {r: c for r, c in ans.labels.items() if r in allowed}
    lines = summarize(ans, len(usable), outside, names)
    absent = [int(r) for r in waiting if int(r) not in ans.seen]
    if absent and held == "campaign":
        lines.append(
            f"  {_n(len(absent), 'row')} awaiting labels {'has' if len(absent) == 1 else 'have'} "
            f"no task in the export (not exported yet, or left out: JSON-MIN drops cancelled "
            f"tasks): {_rows(absent)}"
        )
    if not usable:
        print("\n".join(lines), file=sys.stderr)
        raise LabelwiseError(
            f"no usable labels in {args.export} (see above); nothing written. Is it Label "
            f"Studio's export of the tasks 'labelwise export {shell_arg(args.dir)}' wrote?"
        )
    path = args.dir / LABELS
    merged = _merge(ws, path, usable, recorded, len(names))
    ws.write_labels(np.asarray(list(merged)), np.asarray(list(merged.values())), ids=ws.row_ids())
    # with --json, stdout holds the estimate's JSON only (to pipe into jq); the summary of
    # the import goes to stderr
    summary = sys.stderr if args.json else sys.stdout
    print("\n".join(lines), file=summary)
    print(f"  wrote {path} ({len(merged)} labels)", file=summary)
    if held == "campaign":
        from .campaign import estimate_campaign

        est_args = argparse.Namespace(
            dir=args.dir,
            labels=path,
            predictions=None,
            n_classes=None,
            confidence=args.confidence,
            until_halfwidth=None,
            json=args.json,
        )
        print(file=summary)
        return estimate_campaign(est_args)
    missing = len(allowed) - len(set(merged) & allowed)
    if missing:
        print(f"  {missing} selected rows still lack a label (see {ws.to_label})")
    else:
        method = Workspace.open(args.dir)[1].method
        then = (
            f"labelwise rank {shell_arg(args.dir)} --labels {shell_arg(path)}"
            if registry.get(method).purpose == "ranking"
            else f"labelwise estimate {shell_arg(args.dir)} --labels {shell_arg(path)}"
        )
        print(f"  every selected row is labelled: {then}")
    return 0


def _merge(
    ws: Workspace, path: Path, new: dict[int, int], recorded: dict[int, Any], n_classes: int
) -> dict[int, int]:
    """DIR/labels.csv's labels and the new ones; a row labelled differently is an error.

    ``recorded``: a campaign's recorded labels, which cannot change either (checked here so
    that nothing is written when they would).
    """
    old: dict[int, int] = {}
    if path.is_file():
        rows, kind, values = ws.read_label_file(path)
        if kind != "label":
            raise LabelwiseError(
                f"{path} holds a '{kind}' column; Label Studio choices are classes ('label')"
            )
        check_classes(path, rows, values, n_classes)
        old = dict(zip(rows.tolist(), values.tolist(), strict=True))
    clash = [(r, old[r], c) for r, c in new.items() if r in old and old[r] != c]
    if clash:
        shown = "; ".join(
            f"row {r}: {a} in {path.name}, {b} in the export" for r, a, b in clash[:5]
        )
        raise LabelwiseError(
            f"{_n(len(clash), 'row')} labelled differently in {path} and in the export: {shown}; "
            "a label cannot change (fix one of them)"
        )
    changed = [(r, recorded[r], c) for r, c in new.items() if r in recorded and recorded[r] != c]
    if changed:
        shown = "; ".join(f"row {r}: {a} -> {b}" for r, a, b in changed[:5])
        raise LabelwiseError(
            f"{_n(len(changed), 'row')} of the export recorded by the campaign with another "
            f"label: {shown}; a recorded label cannot change (start a new campaign to relabel); "
            "nothing written"
        )
    merged = {**old, **new}
    return dict(sorted(merged.items()))

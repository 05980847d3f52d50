"""``labelwise report``: one self-contained HTML page on a selection or campaign."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from ..io import atomic_write
from ..report import render, report_data
from ..workspace import check_directory, check_output_file
from ._common import DefaultsHelpFormatter, check_confidence_flag


def add_parser(sub: Any) -> None:
    r = sub.add_parser(
        "report",
        help="write one self-contained HTML report on a selection or campaign",
        description=(
            "Write one HTML file (plots embedded, no network needed) on the selection or "
            "campaign in DIR: the estimate and its interval, the labels used and their "
            "effective sample size, the estimate against the number of labels, per-class "
            "accuracy with Wilson intervals, the ranking with P(best) when DIR/ranking.json "
            "exists, the method and its parameters, and the source files with their sha256. "
            "The numbers are those of 'labelwise estimate DIR --json'."
        ),
        formatter_class=DefaultsHelpFormatter,
    )
    r.add_argument("dir", type=Path, help="selection or campaign directory")
    r.add_argument("--out", type=Path, help="HTML file to write (default: DIR/report.html)")
    r.add_argument(
        "--labels",
        type=Path,
        help="selections: CSV row,label | id,label | row,target | row,score, as for "
        "'labelwise estimate' (default: DIR/labels.csv)",
    )
    r.add_argument(
        "--predictions",
        type=Path,
        help="selections: model predictions over the pile, .npy or zarr, as for "
        "'labelwise estimate'",
    )
    r.add_argument("--confidence", type=float, default=0.95, help="confidence level")
    r.set_defaults(func=cmd_report)


def cmd_report(args: argparse.Namespace) -> int:
    check_confidence_flag(args.confidence)
    check_directory(args.dir)
    out = args.out if args.out is not None else args.dir / "report.html"
    # before the report is made; an older report may be replaced, nothing else
    check_output_file(out, args.dir, "--out", suffixes=(".html", ".htm"))
    data = report_data(
        args.dir, labels=args.labels, predictions=args.predictions, confidence=args.confidence
    )
    page = render(data)
    atomic_write(out, lambda fh: fh.write(page))
    print(f"wrote {out} ({len(page.encode('utf-8')) / 1024:,.0f} KiB)")
    if data.partial:
        print(f"  {data.partial}")
    return 0

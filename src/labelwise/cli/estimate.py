"""``labelwise estimate``: the model's accuracy (or 1-MSE) from a selection's labels."""

from __future__ import annotations

import argparse
import math
import warnings
from pathlib import Path
from typing import Any

import numpy as np

from .. import registry
from .._json import dumps
from .._results import Estimate, Selection
from .._scoring import selection_scores
from ..estimation import estimate
from ..exceptions import LabelwiseError
from ..workspace import Workspace
from ._common import DefaultsHelpFormatter, check_confidence_flag
from ._piles import CLASSES_HELP, store_classes


def add_parser(sub: Any) -> None:
    e = sub.add_parser(
        "estimate",
        help="estimate accuracy (or 1-MSE) from the labels of a selection or campaign",
        description=(
            "Estimate the model's accuracy on the whole pile from the labelled rows of a "
            "selection. LABELS is a CSV naming each row by 'row' (the pile row, as in "
            "to_label.csv) or 'id' (its id there: an image's path, a table's id) and giving one "
            "of 'label' (the true class: a number, or a name once the classes are known, "
            "--classes; accuracy), 'target' (regression target; 1-MSE, with MSE and RMSE) or "
            "'score' (per-row score H). Prints a table and writes DIR/estimate.json. When DIR "
            "holds a campaign ('labelwise campaign'), LABELS may hold any part of the proposed "
            "rows: they are recorded (a row labelled again must keep its label), and the estimate "
            "comes with its effective sample size; --until-halfwidth then says whether to stop."
        ),
        formatter_class=DefaultsHelpFormatter,
    )
    e.add_argument(
        "dir",
        type=Path,
        help="selection directory ('labelwise select') or campaign directory "
        "('labelwise campaign')",
    )
    e.add_argument(
        "--labels",
        type=Path,
        required=True,
        help="CSV: row,label | id,label (class numbers or names) | row,target | row,score",
    )
    e.add_argument(
        "--predictions",
        type=Path,
        help="model predictions over the pile, .npy or zarr store: (N,) classes or regression "
        "outputs, or (N, C) probabilities (default: the --probs used at selection, if any)",
    )
    e.add_argument("--n-classes", type=int, help="number of classes, to reject unknown labels")
    e.add_argument("--classes", type=Path, help=CLASSES_HELP + " (saved as DIR/classes.json)")
    e.add_argument("--confidence", type=float, default=0.95, help="confidence level")
    e.add_argument(
        "--until-halfwidth",
        type=float,
        metavar="H",
        help="campaigns only: say whether to stop labelling, i.e. whether the anytime-valid "
        "interval (a confidence sequence, valid however often you look) has half-width <= H",
    )
    e.add_argument(
        "--exact",
        action="store_true",
        help="with --until-halfwidth, on a stratified or model-assisted campaign: decide by the "
        "exact betting sequence (valid at any number of labels; on average 1.4-2.2x wider) "
        "instead of the asymptotic one, which is valid as the labels grow",
    )
    e.add_argument(
        "--json", action="store_true", help="print the estimate as JSON instead of a table"
    )
    e.set_defaults(func=cmd_estimate, memory_hint=MEMORY_HINT)


#: what the CLI says when estimate runs out of memory (instead of its generic question about a
#: number far too large: estimate takes none). A selection's estimate reads only the selected
#: rows; a campaign's holds its per-row arrays (dist, prior_error, strata: 20 bytes a row,
#: and model-assisted's 8 features: 64 more) in memory.
MEMORY_HINT = (
    "estimate holds a campaign's per-row arrays in memory (DIR/campaign-arrays.state.npz, up "
    "to 84 bytes a pile row) and reads only the labelled rows of --predictions (a .npy "
    "memory-mapped, a zarr store a chunk at a time: chunk it by rows): free memory or run it "
    "on a machine with more; a campaign on fewer rows (a sample of the pile) needs less. No "
    "label was recorded"
)


def cmd_estimate(args: argparse.Namespace) -> int:
    check_confidence_flag(args.confidence)
    if Workspace(args.dir).holds() == "campaign":
        from .campaign import estimate_campaign

        return estimate_campaign(args)
    if args.until_halfwidth is not None:
        raise LabelwiseError(
            "--until-halfwidth applies to campaigns ('labelwise campaign'), not to a selection"
        )
    if args.exact:
        raise LabelwiseError(
            "--exact applies to campaigns ('labelwise campaign') with --until-halfwidth, not to "
            "a selection"
        )
    ws, sel = Workspace.open(args.dir)
    probs = ws.load_source("probs") if ws.has_source("probs") else None
    store_classes(
        ws, args.classes, n_classes=None if probs is None or probs.ndim != 2 else probs.shape[1]
    )
    est, doc = selection_estimate(args, ws, sel)
    if args.json:
        shown = est.to_dict()
        if "regression" in doc:
            shown["regression"] = doc["regression"]
        print(dumps(shown, indent=2))
    else:
        print(format_estimate(est))
        if "by_class" in doc:
            print(format_by_class(doc["by_class"]))
    return 0


def selection_estimate(
    args: argparse.Namespace, ws: Workspace, sel: Selection
) -> tuple[Estimate, dict[str, Any]]:
    """Estimate from ``args.labels`` (every selected row labelled); writes DIR/estimate.json.

    What ``labelwise estimate DIR`` does on a selection (``labelwise label`` calls it too).
    """
    if registry.get(sel.method).estimator is None:
        raise LabelwiseError(registry.rank_instead(sel.method, ws.path, args.labels))
    kind, ordered = ws.read_labels(args.labels, sel, n_classes=_n_classes(args, ws))
    scores, metric = _scores(args, ws, sel, kind, ordered)
    est = estimate(sel, scores, confidence=args.confidence, metric=metric)
    doc: dict[str, Any] = {"estimate": est.to_dict(), "selection_method": sel.method}
    names = ws.classes() if kind == "label" and metric == "accuracy" else None
    if names is not None:
        doc["by_class"] = by_class(names, ordered, scores)
    if metric == "1-MSE":
        doc["regression"] = regression_summary(est)
        if est.value < 0:
            warnings.warn(
                f"1-MSE is {est.value:.4g} < 0: the mean squared error {1 - est.value:.4g} "
                "exceeds 1, so 1-MSE is hard to read; scale the targets (e.g. to [0, 1]) or "
                "read MSE and RMSE",
                UserWarning,
                stacklevel=1,
            )
    ws.write_estimate(doc)
    return est, doc


def by_class(
    names: tuple[str, ...], labels: np.ndarray, scores: np.ndarray
) -> list[dict[str, Any]]:
    """Per true class: its name, how many labelled rows have it and how many the model got
    right (counts on the labelled rows, not weighted to the pile)."""
    out = []
    for k, name in enumerate(names):
        mine = labels == k
        out.append(
            {
                "class": name,
                "index": k,
                "labelled": int(mine.sum()),
                "correct": int(np.round(scores[mine].sum())),
            }
        )
    return out


def format_by_class(rows: list[dict[str, Any]]) -> str:
    width = max(5, *(len(r["class"]) for r in rows))
    lines = [
        "",
        "  labelled rows by true class (counts, not weighted to the pile):",
        f"    {'class':<{width}}  {'labelled':>8}  {'correct':>7}",
    ]
    for r in rows:
        lines.append(f"    {r['class']:<{width}}  {r['labelled']:>8}  {r['correct']:>7}")
    return "\n".join(lines)


def regression_summary(est: Estimate) -> dict[str, Any]:
    """MSE = 1 - (1-MSE), its interval, and RMSE = sqrt(MSE) with its interval."""
    mse = 1.0 - est.value
    lo, hi = 1.0 - est.ci_high, 1.0 - est.ci_low
    return {
        "mse": mse,
        "mse_interval": [lo, hi],
        "rmse": math.sqrt(max(mse, 0.0)),
        "rmse_interval": [math.sqrt(max(lo, 0.0)), math.sqrt(hi) if hi >= 0 else 0.0],
    }


def _n_classes(args: argparse.Namespace, ws: Workspace) -> int | None:
    """The classes a label may be (--n-classes, else the recorded probabilities' columns), so
    that the labels file's reader names the line of a label outside them."""
    if args.n_classes is not None:
        return int(args.n_classes)
    if args.predictions is None and ws.has_source("probs"):
        probs = ws.load_source("probs")
        if probs.ndim == 2 and probs.shape[1] > 1:
            return int(probs.shape[1])
    return None


def _scores(
    args: argparse.Namespace, ws: Workspace, sel: Selection, kind: str, values: np.ndarray
) -> tuple[np.ndarray, str | None]:
    return selection_scores(
        ws, sel, kind, values, predictions=args.predictions, n_classes=args.n_classes
    )


def _num(x: float) -> str:
    return f"{x:.4f}" if math.isfinite(x) else "unknown"


def format_estimate(est: Estimate) -> str:
    pct = f"{est.confidence * 100:g}%"
    pile = "" if est.population_size is None else f" of a pile of {est.population_size:,}"
    if math.isfinite(est.ci_low) and math.isfinite(est.ci_high):
        interval = f"[{est.ci_low:.4f}, {est.ci_high:.4f}]  ({est.interval})"
    else:
        interval = "unbounded (too few labels to estimate the spread)"
    how = est.method.upper()
    if est.interval.endswith("of the difference estimator"):  # regression auto, switched
        how += " design, difference"
    lines = [
        f"{how} estimate from {est.n_labelled} labelled rows{pile}",
        "",
        f"  {'metric':<18}{est.metric}",
        f"  {'estimate':<18}{est.value:.4f}",
        f"  {'standard error':<18}{_num(est.std_error)}",
        f"  {pct + ' interval':<18}{interval}",
    ]
    if est.metric == "1-MSE":
        r = regression_summary(est)
        lo, hi = r["mse_interval"]
        mse_int = f"  [{lo:.4g}, {hi:.4g}]" if math.isfinite(lo) and math.isfinite(hi) else ""
        lines += [f"  {'MSE':<18}{r['mse']:.4g}{mse_int}", f"  {'RMSE':<18}{r['rmse']:.4g}"]
    return "\n".join(lines)

"""``labelwise estimate``: the model's accuracy (or 1-MSE) from a selection's labels."""

from __future__ import annotations

import argparse
import math
import warnings
from pathlib import Path
from typing import Any

import numpy as np

from .._json import dumps
from .._results import Estimate, Selection
from ..estimation import correctness, estimate, regression_scores
from ..exceptions import LabelwiseError
from ..io import load_array
from ..workspace import Workspace
from ._common import check_probabilities


def add_parser(sub: Any) -> None:
    e = sub.add_parser(
        "estimate",
        help="estimate accuracy (or 1-MSE) from the labels of a selection or campaign",
        description=(
            "Estimate the model's accuracy on the whole pile from the labelled rows of a "
            "selection. LABELS is a CSV with a 'row' column and one of 'label' (class index; "
            "accuracy), 'target' (regression target; 1-MSE, with MSE and RMSE) or 'score' "
            "(per-row score H). Prints a table and writes DIR/estimate.json. When DIR holds a "
            "campaign ('labelwise campaign'), LABELS may hold any part of the proposed rows: "
            "they are recorded (a row labelled again must keep its label), and the estimate "
            "comes with its effective sample size; --until-halfwidth then says whether to stop."
        ),
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    e.add_argument(
        "dir",
        type=Path,
        help="selection directory ('labelwise select') or campaign directory "
        "('labelwise campaign')",
    )
    e.add_argument(
        "--labels", type=Path, required=True, help="CSV: row,label | row,target | row,score"
    )
    e.add_argument(
        "--predictions",
        type=Path,
        help="model predictions over the pile, .npy: (N,) classes or regression outputs, or "
        "(N, C) probabilities (default: the --probs used at selection, if any)",
    )
    e.add_argument("--n-classes", type=int, help="number of classes, to reject unknown labels")
    e.add_argument("--confidence", type=float, default=0.95, help="confidence level")
    e.add_argument(
        "--until-halfwidth",
        type=float,
        metavar="H",
        help="campaigns only: say whether to stop labelling, i.e. whether the anytime-valid "
        "interval (a confidence sequence, valid however often you look) has half-width <= H",
    )
    e.add_argument(
        "--json", action="store_true", help="print the estimate as JSON instead of a table"
    )
    e.set_defaults(func=cmd_estimate)


def cmd_estimate(args: argparse.Namespace) -> int:
    if Workspace(args.dir).holds() == "campaign":
        from .campaign import estimate_campaign

        return estimate_campaign(args)
    if args.until_halfwidth is not None:
        raise LabelwiseError(
            "--until-halfwidth applies to campaigns ('labelwise campaign'), not to a selection"
        )
    ws, sel = Workspace.open(args.dir)
    est, doc = selection_estimate(args, ws, sel)
    if args.json:
        shown = est.to_dict()
        if "regression" in doc:
            shown["regression"] = doc["regression"]
        print(dumps(shown, indent=2))
    else:
        print(format_estimate(est))
    return 0


def selection_estimate(
    args: argparse.Namespace, ws: Workspace, sel: Selection
) -> tuple[Estimate, dict[str, Any]]:
    """Estimate from ``args.labels`` (every selected row labelled); writes DIR/estimate.json.

    What ``labelwise estimate DIR`` does on a selection (``labelwise label`` calls it too).
    """
    kind, ordered = ws.read_labels(args.labels, sel)
    scores, metric = _scores(args, ws, sel, kind, ordered)
    est = estimate(sel, scores, confidence=args.confidence, metric=metric)
    doc: dict[str, Any] = {"estimate": est.to_dict(), "selection_method": sel.method}
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


def _scores(
    args: argparse.Namespace, ws: Workspace, sel: Selection, kind: str, values: np.ndarray
) -> tuple[np.ndarray, str | None]:
    if kind == "score":
        return values.astype(np.float64), None
    if args.predictions is None:
        if not ws.has_source("probs"):
            raise LabelwiseError(
                "--predictions is required: the selection did not record model probabilities"
            )
        preds = ws.load_source("probs")
        flag = "the --probs recorded in selection.json"
    else:
        preds = load_array(args.predictions, "--predictions")
        flag = "--predictions"
    if preds.shape[0] != sel.population_size:
        raise LabelwiseError(
            f"--predictions must have one row per pile row ({sel.population_size}), "
            f"got {preds.shape[0]}"
        )
    picked = np.asarray(preds[np.sort(sel.indices)])[np.argsort(np.argsort(sel.indices))]
    if kind == "target":
        return regression_scores(picked, values), "1-MSE"
    if picked.ndim == 2:
        check_probabilities(picked, flag)
    n_classes = args.n_classes
    if picked.ndim == 1 and picked.dtype.kind == "f" and not np.all(picked == np.round(picked)):
        raise LabelwiseError(
            "--predictions holds non-integer values; for regression give a 'target' column"
        )
    if n_classes is None and picked.ndim == 2:
        n_classes = int(picked.shape[1])
    if n_classes is not None:
        bad = (values < 0) | (values >= n_classes)
        if bad.any():
            rows = sel.indices[bad][:10].tolist()
            raise LabelwiseError(
                f"--labels: labels must be classes in [0, {n_classes}), got "
                f"{values[bad][:10].tolist()} for rows {rows}"
            )
    return correctness(picked, values, n_classes=n_classes), "accuracy"


def _num(x: float) -> str:
    return f"{x:.4f}" if math.isfinite(x) else "unknown"


def format_estimate(est: Estimate) -> str:
    pct = f"{est.confidence * 100:g}%"
    pile = "" if est.population_size is None else f" of a pile of {est.population_size:,}"
    if math.isfinite(est.ci_low) and math.isfinite(est.ci_high):
        interval = f"[{est.ci_low:.4f}, {est.ci_high:.4f}]  ({est.interval})"
    else:
        interval = "unbounded (too few labels to estimate the spread)"
    lines = [
        f"{est.method.upper()} estimate from {est.n_labelled} labelled rows{pile}",
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

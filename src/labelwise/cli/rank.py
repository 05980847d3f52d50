"""``labelwise rank``: rank several models from the labels of a selection."""

from __future__ import annotations

import argparse
import warnings
from pathlib import Path
from typing import Any

import numpy as np

from .._results import Selection
from .._validation import check_model_names
from ..estimation import rank_models
from ..exceptions import LabelwiseError
from ..io import file_digest, load_array, read_json
from ..ranking import RankingCampaign
from ..workspace import CAPTURE, CAPTURE_PROBS, SELECTION, Workspace
from ._common import (
    DefaultsHelpFormatter,
    check_confidence_flag,
    check_model_stack,
    known_class_count,
)
from ._piles import CLASSES_HELP, store_classes


def add_parser(sub: Any) -> None:
    rk = sub.add_parser(
        "rank",
        help="rank several models from the labels of a selection",
        description=(
            "Rank M models by their accuracy on the labelled rows of a selection (made with "
            "--method sds, ddg, rdg or any other). Prints each model's estimated accuracy, "
            "its Wilson interval, its rank, the paired-bootstrap probability that it is the "
            "best model, P(best), and that it is truly better than the next model; writes "
            "DIR/ranking.json. For SDS, DDG and RDG the labelled rows are not a random sample "
            "of the pile: the accuracies speak to the order of the models, not to their "
            "accuracy on the whole pile. A cppi selection is ranked by labelwise."
            "RankingCampaign's consensus-PPI estimate instead: accuracy on the whole pile with "
            "a Gaussian-posterior interval, P(best), and a simultaneous rank set per model."
        ),
        formatter_class=DefaultsHelpFormatter,
    )
    rk.add_argument("dir", type=Path, help="selection directory written by 'labelwise select'")
    rk.add_argument(
        "--labels",
        type=Path,
        required=True,
        help="CSV: row,label or id,label (class numbers, or names with --classes)",
    )
    rk.add_argument(
        "--predictions",
        type=Path,
        help="(M, N) classes or (M, N, C) probabilities, .npy or zarr (default: the selection's)",
    )
    rk.add_argument("--classes", type=Path, help=CLASSES_HELP + " (saved as DIR/classes.json)")
    rk.add_argument(
        "--names",
        help="comma-separated model names (default: those the last rank in DIR was given, "
        "else M1, M2, ...)",
    )
    rk.add_argument("--confidence", type=float, default=0.95, help="confidence level")
    rk.add_argument(
        "--bootstrap", type=int, default=2000, help="bootstrap replicates (cppi: posterior draws)"
    )
    rk.add_argument(
        "--rank-level",
        type=float,
        default=0.9,
        help="simultaneous level of the rank sets (cppi selections)",
    )
    rk.add_argument("--seed", type=int, default=0, help="seed for the bootstrap")
    rk.set_defaults(func=cmd_rank)


def _not_a_capture(directory: Path) -> None:
    """An error for a capture directory given as DIR: the hint every command gives
    (``select --method ces``) chose rows for one model's accuracy, which rank refused in turn
    ('rank needs predictions of M models'); a ranking needs the predictions of several models
    and a ranking selection (sds, cppi)."""
    d = Path(directory)
    if not (d / CAPTURE).is_file() or (d / SELECTION).exists():
        return
    probs = str(d / CAPTURE_PROBS)
    try:
        rows = int(read_json(d / CAPTURE, CAPTURE).get("rows", 100))
    except (LabelwiseError, AttributeError, TypeError, ValueError):
        rows = 100
    budget = max(1, min(50, rows // 2))  # a budget the pile can meet
    raise LabelwiseError(
        f"DIR {d} is a capture ({CAPTURE}) of one model, not a selection; rank ranks several "
        "models on rows a ranking selection chose: capture each model over the same inputs, "
        f"stack their {CAPTURE_PROBS} into one (M models, N rows, C classes) array (Python: "
        f"np.save('preds.npy', np.stack([np.load(f) for f in [{probs!r}, ...]]))); then "
        "'labelwise select --method sds "
        f"--budget {budget} --predictions preds.npy --out sel' (or --method cppi, which also "
        "estimates each model's accuracy on the whole pile), label its rows ('labelwise label "
        "sel' saves sel/labels.csv) and run 'labelwise rank sel --labels sel/labels.csv'"
    )


def cmd_rank(args: argparse.Namespace) -> int:
    check_confidence_flag(args.confidence)
    check_confidence_flag(args.rank_level, "--rank-level")
    if args.bootstrap < 1:  # else 'n_bootstrap must be >= 1' (the Python argument's name)
        raise LabelwiseError(f"--bootstrap must be >= 1, got {args.bootstrap}")
    if Workspace(args.dir).holds() == "campaign":
        raise LabelwiseError(
            f"DIR {args.dir} holds a campaign (one model's accuracy); rank ranks several "
            "models from a selection: labelwise select --method sds|ddg|rdg|cppi --predictions"
        )
    _not_a_capture(args.dir)
    ws, sel = Workspace.open(args.dir)
    # the recorded predictions' shape, without reading them (--predictions may replace them)
    recorded = ws.sources.get("predictions") or {}
    shape = list(recorded.get("shape") or [])
    store_classes(ws, args.classes, n_classes=shape[2] if len(shape) == 3 else None)
    # with class names (or probabilities) the classes are known: a label past them is an
    # error naming its line (a label 10 of 10 named classes made every model wrong unsaid)
    n_classes = known_class_count(ws)
    kind, labels = ws.read_labels(args.labels, sel, n_classes=n_classes)
    if kind != "label":
        raise LabelwiseError(f"--labels: ranking needs a 'label' column (classes), got '{kind}'")
    if args.predictions is not None:
        preds = load_array(args.predictions, "--predictions")
    elif ws.has_source("predictions"):
        preds = ws.load_source("predictions")
    else:
        raise LabelwiseError("--predictions is required: the selection did not record them")
    check_model_stack(preds, "--predictions", sel.population_size, args.predictions)
    if args.predictions is not None and recorded and sel.method != "cppi":
        _same_predictions(args.predictions, preds, ws, sel)  # cppi checks its fingerprint
    _note_unpredicted_classes(labels, preds, ws, sel)
    # Ranking reads every model's prediction at every selected row (and cppi all rows):
    # the (M, N) predictions are loaded whole below (np.asarray), a zarr store included.
    names = None
    if args.names is not None:
        given = [n.strip() for n in args.names.split(",")]
        names = list(check_model_names(given, preds.shape[0], "--names"))
    elif args.predictions is None:  # the recorded models: the names a ranking gave them
        names = _earlier_names(ws, sel, labels, preds.shape[0])
    if not 0 < args.rank_level < 1:
        raise LabelwiseError(f"--rank-level must be in (0, 1), got {args.rank_level}")
    if sel.method == "cppi":
        if args.bootstrap < 100:
            raise LabelwiseError(f"--bootstrap must be >= 100 for cppi, got {args.bootstrap}")
        camp = RankingCampaign.from_selection(
            sel,
            np.asarray(preds),
            labels.astype(np.int64),
            rng=args.seed,
            n_draws=args.bootstrap,
            model_names=names,
        )
        ranking = camp.ranking(confidence=args.confidence, rank_level=args.rank_level)
    else:
        ranking = rank_models(
            np.asarray(preds),
            labels.astype(np.int64),
            rows=sel.indices,
            model_names=names,
            confidence=args.confidence,
            n_bootstrap=args.bootstrap,
            prob_best=True,
            rng=args.seed,
        )
    ws.write_ranking({"ranking": ranking.to_dict(), "method": sel.method}, sel, labels)
    print(format_ranking(ranking, sel))
    return 0


def _same_predictions(path: Path, preds: Any, ws: Workspace, sel: Selection) -> None:
    """``--predictions`` must predict the classes the selection's recorded predictions do
    (the same file, or one with the same predicted classes, e.g. the argmax of the recorded
    probabilities): other predictions, e.g. the pile's rows reordered, would be matched to
    the labels by row number and rank the models on the wrong rows without a word."""
    recorded = ws.sources["predictions"]
    if file_digest(path) == recorded.get("sha256"):
        return
    why = "they predict other classes"
    try:
        same = np.array_equal(
            _classes(np.asarray(preds)), _classes(np.asarray(ws.load_source("predictions")))
        )
    except LabelwiseError as exc:
        same, why = False, f"the recorded file cannot be compared: {exc}"
    if not same:
        raise LabelwiseError(
            f"--predictions {path} are not the predictions the {sel.method} selection was made "
            f"from ({recorded.get('path')}; {why}): the labels would be matched to other rows "
            "or models. Leave --predictions out to rank the recorded models, or select again "
            "with these predictions"
        )


def _note_unpredicted_classes(labels: Any, preds: Any, ws: Workspace, sel: Selection) -> None:
    """Warn when, with no class count known (class-index predictions, no class names), the
    labels hold classes that no model predicts on any row: labels numbered from 1, or of
    another class list, made every model 0 % accurate without a word."""
    if preds.ndim != 2 or ws.classes() is not None:
        return  # probabilities or class names: labels outside the classes are errors
    lab = np.asarray(labels, dtype=np.int64)
    unseen = np.setdiff1d(np.unique(lab), np.unique(np.asarray(preds)))
    if unseen.size:
        rows = sel.indices[np.isin(lab, unseen)]
        warnings.warn(
            f"--labels: classes {unseen[:10].tolist()} (e.g. rows {rows[:5].tolist()}) are "
            f"predicted by no model on any of the {preds.shape[1]} rows; are the labels "
            "numbered like the predictions (from 0)? Give the class names with --classes "
            "FILE to have such labels checked",
            UserWarning,
            stacklevel=2,
        )


def _classes(preds: Any) -> Any:
    """(M, N) predicted classes of (M, N) classes or (M, N, C) probabilities."""
    return preds.argmax(axis=2) if preds.ndim == 3 else preds


def _earlier_names(ws: Workspace, sel: Selection, labels: Any, n_models: int) -> list[str] | None:
    """The --names of the last 'rank' in DIR (ranking.json), so that ranking again after
    'select --extend' keeps them (it printed M1, M2, ... before); None if there are none."""
    earlier, _ = ws.ranking(sel, labels)
    names = None if earlier is None else earlier.get("model_names")
    if not isinstance(names, list) or len(names) != n_models:
        return None
    if names == [f"M{m + 1}" for m in range(n_models)]:
        return None
    return list(check_model_names([str(n) for n in names], n_models, "ranking.json"))


def format_ranking(ranking: Any, sel: Selection) -> str:
    how = (
        "consensus-PPI estimate of the pile accuracy"
        if ranking.method == "consensus-ppi"
        else "accuracy on the labelled rows"
    )
    head = (
        f"{len(ranking.model_names)} models ranked on {ranking.n_labelled} labelled rows "
        f"({sel.method} selection of {sel.population_size}; {how})"
    )
    return f"{head}\n\n{ranking.table()}"

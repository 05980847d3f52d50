"""``labelwise campaign``: start a sequential labelling campaign in a directory.

The campaign (:class:`labelwise.Campaign`) proposes rows batch by batch (``labelwise next``),
and ``labelwise estimate DIR --labels ...`` records the labels and estimates. Its state lives
in ``DIR/campaign.state.json`` (written atomically through
:class:`labelwise.workspace.Workspace`): the source files with their sha256, the campaign's
own state and the labels recorded so far. This module also holds what ``next`` and
``estimate`` share: loading and saving that state, and turning labels into scores.
"""

from __future__ import annotations

import argparse
import math
import sys
import textwrap
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from .. import __version__
from .._chunks import check_rows, pick_rows, raise_if_nonfinite
from .._json import dumps
from .._results import Estimate
from .._scoring import check_regression_magnitude
from .._validation import check_classes_in_range
from ..campaign import Campaign
from ..campaign.campaign import METHODS, UNUSED_STRATA_WARNING
from ..estimation import correctness, regression_scores
from ..exceptions import LabelwiseError
from ..io import file_digest, load_array, shell_arg
from ..registry import with_article
from ..workspace import CAMPAIGN, CAMPAIGN_ARRAYS, CAPTURE_RAW, Workspace, load_campaign
from ._common import check_confidence_flag, check_probs_beside, default_probs, fresh_seed
from ._piles import CLASSES_HELP, checked_classes, store_classes

STATE_FILE = f"{CAMPAIGN}.state.json"


def add_parser(sub: Any) -> None:
    c = sub.add_parser(
        "campaign",
        help="start a sequential labelling campaign (then: next, estimate)",
        description=textwrap.fill(
            "Start a sequential labelling campaign in DIR: 'labelwise next DIR' proposes the "
            "rows to label a batch at a time, 'labelwise estimate DIR --labels labels.csv' "
            "records the labels (in parts, any order) and estimates the accuracy with its "
            "interval and effective sample size, after every batch. Unlike 'select', the "
            "design learns from the labels: later batches go to the strata where the model's "
            "correctness is most uncertain. Records the source files with their sha256 and "
            "the campaign's state in DIR/campaign.state.json.",
            88,
        ),
        epilog=(
            "methods:\n"
            "  auto            classification: model-assisted (lowest mean E in the campaign\n"
            "                  study); regression: srs with a bootstrap-t interval\n"
            "  stratified      strata from the activations and probabilities, Neyman allocation\n"
            "  proportional    the same strata, proportional allocation\n"
            "  model-assisted  stratified + a surrogate of the score fitted on the labels\n"
            "  active          active sampling mixed with uniform, AIPW estimator (no anytime\n"
            "                  interval, so no --until-halfwidth)\n"
            "  srs             simple random sampling, one batch at a time\n"
            "\n"
            "typical session:\n"
            "  labelwise campaign camp --activations cap/activations.npy \\\n"
            "                          --probs cap/probabilities.npy --seed 0\n"
            "  labelwise next camp --batch 20      # label the rows with new = 1 in\n"
            "                                      # camp/to_label.csv, append to labels.csv\n"
            "  labelwise estimate camp --labels labels.csv --until-halfwidth 0.02\n"
            "  labelwise next camp --batch 20      # ... until it says stop"
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    c.add_argument("dir", type=Path, help="directory for the campaign (created if needed)")
    c.add_argument(
        "--activations",
        type=Path,
        required=True,
        help="(N, m) last-hidden-layer outputs on the pile, .npy or zarr store",
    )
    c.add_argument(
        "--probs",
        type=Path,
        help="(N, C) class probabilities, .npy or zarr store (classification; default: "
        "CAP/probabilities.npy when --activations is CAP/activations.npy of 'labelwise "
        "capture'); omit for a regression model",
    )
    c.add_argument(
        "--predictions",
        type=Path,
        help="(N,) or (N, k) regression outputs, .npy or zarr (regression only; may instead be "
        "given to 'estimate')",
    )
    c.add_argument(
        "--method",
        type=str.lower,  # CES, SRS as the papers write them
        choices=list(METHODS),
        default="auto",
        help="design and estimator (default: auto; see below)",
    )
    c.add_argument(
        "--n-strata",
        type=int,
        default=None,
        help="number of strata (default: one per predicted class plus 4 for the least "
        "confident rows; 10 for regression)",
    )
    c.add_argument(
        "--min-stratum-size",
        type=int,
        default=None,
        help="smallest stratum (default: max(10, N/100))",
    )
    c.add_argument(
        "--score-floor",
        type=float,
        default=None,
        help="regression: the lowest score any row can have, 1 - the largest squared error "
        "possible (targets and predictions in [0, 10]: 1 - 10^2 = -99). With it the "
        "interval is valid whatever the tail of the errors (wider the further the floor is "
        "below the scores); without it a rare huge error not yet labelled is missed "
        "(default: none)",
    )
    c.add_argument("--seed", type=int, default=None, help="random seed (default: fresh, recorded)")
    c.add_argument("--force", action="store_true", help="overwrite an existing campaign in DIR")
    c.add_argument("--classes", type=Path, help=CLASSES_HELP + " (saved as DIR/classes.json)")
    c.set_defaults(func=cmd_campaign)


def _refuse_raw_classifier(ws: Workspace) -> None:
    """No probabilities and a capture whose raw outputs have several columns ('capture --head
    raw' of a classifier): the campaign would be a regression one that refuses every class
    label and cannot score a one-column target against (N, k) outputs."""
    cap = ws.capture_dir()
    raw = None if cap is None else cap / CAPTURE_RAW
    if raw is None or not raw.is_file():
        return
    shape = load_array(raw, "outputs").shape
    if len(shape) == 2 and shape[1] > 1:
        raise LabelwiseError(
            f"no --probs, and the capture holds the model's raw outputs ({raw}: {shape[1]} "
            "columns, 'labelwise capture --head raw'), not probabilities: a classifier's "
            "campaign needs them: capture again without --head raw (softmax is the default), "
            "or give --probs; a regression campaign takes --predictions or --score-floor"
        )


def _refuse_class_predictions(path: Path, preds: Any) -> None:
    """--predictions CAP/predictions.npy of a classifier's capture (its predicted classes,
    integers, beside CAP/probabilities.npy): the campaign started as a regression campaign on
    the class numbers (1 - squared difference of classes), and later refused every class
    label. Refused, naming the probabilities to give instead."""
    probs = path.parent / "probabilities.npy"
    if np.dtype(preds.dtype).kind not in "iu" or not probs.is_file():
        return
    raise LabelwiseError(
        f"--predictions {path} holds a classifier's predicted classes (integers, beside "
        f"{probs}); a campaign on a classifier takes its probabilities: --probs "
        f"{shell_arg(probs)}. --predictions is a regression model's outputs "
        "('labelwise capture --head raw' writes them to outputs.npy)"
    )


def cmd_campaign(args: argparse.Namespace) -> int:
    ws = Workspace.create(args.dir, force=args.force, what="DIR", kind="campaign")
    ws.seed = args.seed if args.seed is not None else fresh_seed()
    acts = ws.add_source("activations", args.activations, "--activations")
    _check_streamed(acts, "--activations", ndim=2)
    n = acts.shape[0]
    probs = None
    given = args.probs
    if given is None and args.predictions is None and args.score_floor is None:
        given = default_probs(ws)  # a regression campaign gives --predictions or --score-floor
    if given is not None:
        probs = ws.add_source("probs", given, "--probs")
        if probs.ndim != 2:
            raise LabelwiseError(
                f"--probs must be (N, C) class probabilities for a campaign, got shape "
                f"{probs.shape}"
            )
        check_probs_beside(probs, acts)
        _same_rows(probs, n, "--probs")
    if probs is None and args.predictions is None:
        _refuse_raw_classifier(ws)
    if args.predictions is not None:
        if probs is not None:
            raise LabelwiseError(
                "--predictions is for regression campaigns (without --probs); a "
                "classification campaign predicts the argmax of --probs"
            )
        preds = ws.add_source("predictions", args.predictions, "--predictions")
        _refuse_class_predictions(Path(args.predictions), preds)
        _check_streamed(preds, "--predictions", ndim=(1, 2))
        _same_rows(preds, n, "--predictions")
    n_classes = None if probs is None else int(probs.shape[1])
    names = checked_classes(ws, args.classes, n_classes=n_classes, fresh=True)
    for flag, value in (
        ("--n-strata", args.n_strata),
        ("--min-stratum-size", args.min_stratum_size),
    ):
        if value is not None and value < 1:
            raise LabelwiseError(f"{flag} must be a positive integer, got {value}")
    # Campaign's messages named its Python arguments (score_floor, probabilities=None)
    if args.score_floor is not None and probs is not None:
        raise LabelwiseError(
            "--score-floor applies to regression campaigns (without --probs): accuracy "
            "scores are already in [0, 1]; drop it"
        )
    if args.score_floor is not None and not (
        math.isfinite(args.score_floor) and args.score_floor < 1
    ):
        raise LabelwiseError(
            "--score-floor must be a finite number below 1 (1 - the largest squared error), "
            f"got {args.score_floor:g}"
        )
    with warnings.catch_warnings():
        # Campaign's warning names its Python arguments; the note below names the flags
        warnings.filterwarnings("ignore", UNUSED_STRATA_WARNING, UserWarning)
        camp = Campaign(
            acts,
            probs,
            method=args.method,
            n_strata=args.n_strata,
            min_stratum_size=args.min_stratum_size,
            rng=ws.seed,
            score_floor=args.score_floor,
        )
    _note_unused_strata(args, camp.method)
    state = CampaignState(ws, camp)
    ws.write_state(CAMPAIGN_ARRAYS, camp.to_arrays())  # strata and features: computed once
    state.save()
    ws.write_to_label(np.zeros(0, dtype=np.int64))
    if names is not None:  # only now: a failed start leaves an older campaign's names
        ws.set_classes(names)
    if ws.set_aside is not None:
        print(f"the campaign it replaced, with its labels, is now in {ws.set_aside}")
    resolved = "" if camp.method == args.method else f" ({args.method})"
    strata = np.bincount(np.asarray(camp.strata))
    print(
        f"started {with_article(camp.method)}{resolved} {camp.task} campaign on a pile of "
        f"{n:,} rows "
        f"(seed {ws.seed}); "
        + (
            f"{strata.size} strata of {strata.min():,}..{strata.max():,} rows"
            if strata.size > 1
            else "one stratum (the whole pile)"
        )
    )
    print(f"  wrote {ws.path / STATE_FILE}")
    print(f"  next: labelwise next {shell_arg(ws.path)} --batch 20")
    return 0


def _note_unused_strata(args: argparse.Namespace, method: str) -> None:
    """A note on stderr when --n-strata or --min-stratum-size is given to a design without
    strata (srs, and active, which draws from the whole pile; auto is srs for regression):
    they were accepted and ignored without a word. A note, not an error: a script that
    passes them to every --method keeps working."""
    given = [
        f"{flag} {value}"
        for flag, value in (
            ("--n-strata", args.n_strata),
            ("--min-stratum-size", args.min_stratum_size),
        )
        if value is not None
    ]
    if not given or method not in ("srs", "active"):
        return
    how = f"--method {args.method}" + (
        f" ({method} for regression)" if args.method != method else ""
    )
    what = "draws from the whole pile" if method == "active" else "samples the whole pile"
    print(
        f"note: {' and '.join(given)} ignored: {how} {what}, one stratum; leave "
        f"{'them' if len(given) > 1 else 'it'} out, or choose a stratified --method "
        "(stratified, proportional, model-assisted)",
        file=sys.stderr,
    )


def _check_streamed(arr: Any, flag: str, *, ndim: int | tuple[int, ...]) -> None:
    """Rank, numeric dtype and rows from the metadata, then NaN/inf in one pass of row
    blocks: a memory-mapped .npy or a zarr array is never loaded whole."""
    raise_if_nonfinite(check_rows(arr, flag, ndim=ndim), flag)


def _same_rows(arr: Any, n: int, flag: str) -> None:
    if arr.shape[0] != n:
        raise LabelwiseError(
            f"{flag} must have one row per --activations row ({n}), got {arr.shape[0]}"
        )


# ----------------------------------------------------------------------------- the state


@dataclass
class CampaignState:
    """A campaign directory: the workspace, the campaign and the labels recorded so far.

    ``labels`` maps each recorded row to the value its labeller gave (a class, a target or a
    score, as ``kind`` says), so that a label given again can be checked against it.
    """

    ws: Workspace
    camp: Campaign
    kind: str | None = None
    labels: dict[int, float | int] = field(default_factory=dict)
    last_batch: int = 0

    @classmethod
    def open(cls, directory: Path) -> CampaignState:
        ws, camp, info = load_campaign(directory)
        return cls(ws, camp, info["kind"], info["labels"], info["last_batch"])

    def save(self) -> None:
        rows = sorted(self.labels)
        self.ws.write_state(
            CAMPAIGN,
            {
                "tool": f"labelwise {__version__}",
                "seed": self.ws.seed,
                "sources": self.ws.sources,
                "campaign": self.camp.to_dict(),
                "labels": {
                    "kind": self.kind,
                    "rows": rows,
                    "values": [self.labels[r] for r in rows],
                },
                "last_batch": self.last_batch,
            },
        )

    def summary(self) -> dict[str, Any]:
        return {
            "method": self.camp.method,
            "requested_method": self.camp.requested_method,
            "task": self.camp.task,
            "population_size": self.camp.population_size,
            "n_proposed": self.camp.n_proposed,
            "n_recorded": self.camp.n_recorded,
            "n_pending": int(self.camp.pending.size),
        }


# ----------------------------------------------------------------------------- estimate


def estimate_campaign(args: argparse.Namespace) -> int:
    """``labelwise estimate DIR`` when DIR holds a campaign: record the labels, estimate."""
    st = CampaignState.open(args.dir)
    check_estimate_args(args, st)
    store_classes(st.ws, getattr(args, "classes", None), n_classes=_n_probs(st))
    rows, kind, values = st.ws.read_label_file(
        args.labels,
        n_rows=st.camp.population_size,
        allowed=set(np.asarray(st.camp.proposed).tolist()),
        not_allowed="never proposed by this campaign",
        n_classes=_n_probs(st) if st.camp.task == "classification" else None,
    )
    est, doc = record_and_estimate(args, st, rows, kind, values)
    if args.json:
        print(dumps(doc, indent=2))
    else:
        print(format_campaign_estimate(est, doc, st))
    return 0


def check_estimate_args(args: argparse.Namespace, st: CampaignState) -> None:
    """``--until-halfwidth`` and ``--confidence`` for a campaign's estimate."""
    h = args.until_halfwidth
    if h is not None and not (0 < h < 1):
        raise LabelwiseError(f"--until-halfwidth must be in (0, 1), got {h}")
    if h is not None and st.camp.method == "active":
        raise LabelwiseError(
            "--until-halfwidth needs an anytime-valid interval, which method 'active' does not "
            "have; start the campaign with another --method"
        )
    check_confidence_flag(args.confidence)
    if getattr(args, "exact", False) and h is None:
        raise LabelwiseError(
            "--exact chooses the anytime sequence that --until-halfwidth decides by; give "
            "--until-halfwidth H too"
        )


def record_and_estimate(
    args: argparse.Namespace,
    st: CampaignState,
    rows: NDArray[np.int64],
    kind: str,
    values: NDArray[Any],
) -> tuple[Estimate, dict[str, Any]]:
    """Record the labels not recorded yet, estimate, save the state and DIR/estimate.json.

    What ``labelwise estimate DIR --labels FILE`` does with FILE's rows (``labelwise label``
    calls it too). ``args`` carries ``confidence``, ``until_halfwidth``, ``predictions``,
    ``n_classes`` and optionally ``exact``. Any error leaves the state as it was.
    """
    camp = st.camp
    h = args.until_halfwidth
    new_rows, new_values = _new_labels(st, rows, kind, values)
    scores = _scores(args, st, kind, new_rows, new_values)
    camp.record(new_rows, scores)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        est = camp.estimate(confidence=args.confidence)
        anytime = None
        if h is not None:
            # --exact: the exact betting sequence of the designs (Campaign.estimate)
            kind_cs: bool | str = "exact" if getattr(args, "exact", False) else True
            anytime = camp.estimate(anytime=kind_cs, confidence=args.confidence)
    # The estimate carries its notes and the table prints them: pass on only the others.
    for w in caught:
        if str(w.message) not in est.notes:
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    doc: dict[str, Any] = est.to_dict()
    if anytime is not None:
        half = (anytime.ci_high - anytime.ci_low) / 2
        # every row labelled: nothing is left to label ('next' would refuse), so stop
        whole = camp.n_recorded == camp.population_size
        doc["anytime"] = {
            "ci_low": anytime.ci_low,
            "ci_high": anytime.ci_high,
            "halfwidth": half,
            "until_halfwidth": h,
            "stop": bool(half <= h or whole),
            "whole_pile": bool(whole),
            "interval": anytime.interval,
        }
    if est.metric == "1-MSE":
        from .estimate import regression_summary

        doc["regression"] = regression_summary(est)
    st.kind = kind
    st.labels.update(zip(new_rows.tolist(), new_values.tolist(), strict=True))
    doc["campaign"] = {**st.summary(), "new_labels": int(new_rows.size)}
    names = st.ws.classes()
    if names is not None and st.kind == "label" and camp.task == "classification":
        from .estimate import by_class

        done = np.asarray(sorted(st.labels), dtype=np.int64)
        truth = np.asarray([st.labels[int(r)] for r in done], dtype=np.int64)
        predicted = pick_rows(st.ws.load_source("probs"), done).argmax(axis=1)
        doc["by_class"] = by_class(names, truth, (predicted == truth).astype(np.float64))
    st.save()  # only now: any error above leaves the state as it was
    st.ws.write_estimate(doc)
    return est, doc


def _n_probs(st: CampaignState) -> int | None:
    return int(st.ws.load_source("probs").shape[1]) if st.ws.has_source("probs") else None


def _new_labels(
    st: CampaignState, rows: NDArray[np.int64], kind: str, values: NDArray[Any]
) -> tuple[NDArray[np.int64], NDArray[Any]]:
    """The labelled rows not recorded yet (and their values); checks all of them."""
    n_pop = st.camp.population_size
    outside = rows[(rows < 0) | (rows >= n_pop)]
    if outside.size:
        raise LabelwiseError(f"--labels: rows must be in [0, {n_pop}), got {outside[:10].tolist()}")
    if st.kind is not None and kind != st.kind:
        raise LabelwiseError(
            f"--labels: the campaign recorded a '{st.kind}' column, this file has '{kind}'; "
            "every part must use the same column"
        )
    proposed = np.zeros(n_pop, dtype=bool)
    proposed[st.camp.proposed] = True
    never = rows[~proposed[rows]]
    if never.size:
        raise LabelwiseError(
            f"--labels: {never.size} labelled rows were never proposed by this campaign, e.g. "
            f"{never[:10].tolist()}; only proposed rows may be used (others would bias the "
            f"estimate; see {st.ws.to_label})"
        )
    known = np.asarray([int(r) in st.labels for r in rows], dtype=bool)
    changed = [
        (int(r), st.labels[int(r)], v)
        for r, v in zip(rows[known], values[known].tolist(), strict=True)
        if st.labels[int(r)] != v
    ]
    if changed:
        shown = "; ".join(f"row {r}: {old} -> {new}" for r, old, new in changed[:5])
        raise LabelwiseError(
            f"--labels: {len(changed)} row{'s' if len(changed) > 1 else ''} already recorded with "
            f"another {kind}: {shown}; a "
            "recorded label cannot change (start a new campaign to relabel)"
        )
    return rows[~known], values[~known]


def _scores(
    args: argparse.Namespace,
    st: CampaignState,
    kind: str,
    rows: NDArray[np.int64],
    values: NDArray[Any],
) -> NDArray[np.float64]:
    camp = st.camp
    if camp.task == "classification" and args.predictions is not None:
        raise LabelwiseError(
            "--predictions is not used by a classification campaign: it predicts the "
            "argmax of the --probs it started with"
        )
    if kind == "score":
        return values.astype(np.float64)
    if camp.task == "classification":
        if kind != "label":
            raise LabelwiseError(
                "--labels: a classification campaign needs a 'label' column (or 'score'), "
                f"got '{kind}'"
            )
        probs = st.ws.load_source("probs")
        n_classes = int(probs.shape[1])
        if args.n_classes is not None and args.n_classes != n_classes:
            raise LabelwiseError(
                f"--n-classes {args.n_classes} differs from the {n_classes} columns of --probs"
            )
        if rows.size == 0:
            return np.zeros(0)
        check_classes_in_range(
            values, n_classes, "--labels", rows=rows, why="the {n} columns of --probs"
        )
        picked = pick_rows(probs, rows)
        return correctness(picked, values, n_classes=n_classes)
    if kind != "target":
        raise LabelwiseError(
            f"--labels: a regression campaign needs a 'target' column (or 'score'), got '{kind}'"
        )
    preds = _regression_predictions(args, st)
    if rows.size == 0:
        return np.zeros(0)
    picked = pick_rows(preds, rows)
    check_regression_magnitude(rows, picked, values, "--predictions")
    return regression_scores(picked, values)


def _regression_predictions(args: argparse.Namespace, st: CampaignState) -> Any:
    """--predictions (recorded on first use) or the ones recorded before; never a changed one."""
    ws = st.ws
    if args.predictions is None:
        if not ws.has_source("predictions"):
            outputs = ws.capture_outputs()
            # as a selection's estimate says it: the capture's outputs, as a command to paste
            hint = (
                f": give --predictions {shell_arg(outputs)} (the model's outputs 'labelwise "
                "capture' wrote beside the activations; recorded on first use)"
                if outputs is not None
                else " (the model's outputs over the pile; recorded on first use)"
            )
            raise LabelwiseError(
                "--predictions is required: the campaign has no regression outputs recorded" + hint
            )
        return ws.load_source("predictions")
    if ws.has_source("predictions"):
        if file_digest(args.predictions) != ws.sources["predictions"]["sha256"]:
            raise LabelwiseError(
                f"--predictions {args.predictions} differs from the file recorded with the "
                "campaign (sha256); the scores would not be comparable"
            )
        return ws.load_source("predictions")
    preds = load_array(args.predictions, "--predictions")
    _check_streamed(preds, "--predictions", ndim=(1, 2))
    _same_rows(preds, st.camp.population_size, "--predictions")
    ws.add_source("predictions", args.predictions, "--predictions")
    return preds


def format_campaign_estimate(est: Estimate, doc: dict[str, Any], st: CampaignState) -> str:
    from .estimate import format_estimate

    c = doc["campaign"]
    lines = [format_estimate(est)]
    lines.append(f"  {'worth':<18}{worth_in_words(est)}")
    lines.append(
        f"  {'campaign':<18}{c['new_labels']} new labels; {c['n_recorded']} labelled, "
        f"{c['n_pending']} awaiting labels, {c['population_size'] - c['n_proposed']:,} "
        "never proposed"
    )
    for note in est.notes:
        lines.append(f"  {'note':<18}{note}")
    any_ = doc.get("anytime")
    if any_ is not None:
        pct = f"{est.confidence * 100:g}%"
        half, until = f"{any_['halfwidth']:.4f}", f"{any_['until_halfwidth']:g}"
        if any_.get("whole_pile"):
            verdict = "STOP: every row of the pile is labelled, nothing is left to label"
        elif any_["stop"]:
            verdict = f"STOP: the half-width {half} is at most {until}"
        else:
            verdict = (
                f"CONTINUE: the half-width {half} is above {until}; label more "
                f"(labelwise next {shell_arg(st.ws.path)})"
            )
        lines += [
            "",
            f"  anytime-valid {pct} interval [{any_['ci_low']:.4f}, {any_['ci_high']:.4f}] "
            f"({any_['interval']}):",
            "  a confidence sequence, valid however often you look and whenever you stop",
            "  (so --until-halfwidth uses it; it is wider than the interval above)",
            f"  {verdict}",
        ]
    if "by_class" in doc:
        from .estimate import format_by_class

        lines.append(format_by_class(doc["by_class"]))
    return "\n".join(lines)


def worth_in_words(est: Estimate) -> str:
    """The effective sample size as a sentence: how many random labels these are worth."""
    ess = est.effective_sample_size
    n = est.n_labelled
    these = "this label" if n == 1 else f"these {n} labels"
    if ess is None:
        return "no effective sample size for this interval"
    if not math.isfinite(ess):
        verb = "shows" if n == 1 else "show"
        return f"{these} {verb} no spread yet, so their worth in random labels is undefined"
    verb = "is" if n == 1 else "are"
    return f"{these} {verb} worth about {ess:,.0f} random ones (effective sample size)"

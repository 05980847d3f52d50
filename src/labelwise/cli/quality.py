"""``labelwise quality``: test-set quality in the model's feature space."""

from __future__ import annotations

import argparse
import math
from pathlib import Path
from typing import Any

from .._deps import install_hint
from .._validation import check_out_dir
from ..adapters._capture import logits_output_arg
from ..exceptions import LabelwiseError
from ..io import load_array, write_json
from ._common import DefaultsHelpFormatter, earlier_plots_note, remove_earlier_plots
from ._piles import CLASSES_HELP, read_all_labels, read_classes


def add_parser(sub: Any) -> None:
    hints = " and ".join(
        dict.fromkeys(install_hint(m, extra="torch") for m in ("sklearn", "torch"))
    )
    q = sub.add_parser(
        "quality",
        help="test-set quality in the model's feature space (per class)",
        description=(
            "How well a test set covers a model's feature space, per class: equivalence "
            "partitioning, share near the class centroid, share in the weak-confidence band "
            "(and per class pair), covariate shift between train and test features, and the "
            "classic adequacy metrics (NC, KMNC, NBC, SNAC, TKNC) for comparison. Give saved "
            "features and probabilities, or --model with --train-inputs and --test-inputs "
            "(features = the last hidden layer). Prints a table, writes OUT/quality.json (its "
            "fields: README, 'What dependability.json and quality.json hold') and "
            "OUT/quality.png (box plots per class). Needs scikit-learn, and torch with --model: "
            f"{hints}."
        ),
        formatter_class=DefaultsHelpFormatter,
    )
    q.add_argument(
        "--train-labels",
        type=Path,
        required=True,
        help="training classes: .npy, or CSV row,label (class names with --classes)",
    )
    q.add_argument(
        "--test-labels",
        type=Path,
        required=True,
        help="test classes: .npy, or CSV row,label (class names with --classes)",
    )
    q.add_argument("--classes", type=Path, help=CLASSES_HELP)
    q.add_argument("--train-features", type=Path, help="training features (N, d), .npy or zarr")
    q.add_argument("--test-features", type=Path, help="test features (M, d), .npy or zarr")
    q.add_argument("--test-probs", type=Path, help="test class probabilities (M, C), .npy or zarr")
    q.add_argument("--model", type=Path, help="TorchScript or pickled model (instead of features)")
    q.add_argument("--train-inputs", type=Path, help="training inputs, .npy or zarr (with --model)")
    q.add_argument("--test-inputs", type=Path, help="test inputs, .npy or zarr (with --model)")
    q.add_argument(
        "--logits-output",
        type=logits_output_arg,
        default=None,
        metavar="KEY|INDEX",
        help="with --model, a model with several outputs: the dict key or tuple index of the "
        "class scores (as for capture; default: a dict's 'logits' or its one (rows, classes) "
        "tensor)",
    )
    q.add_argument("--radius", type=float, default=1.0, help="centroid radius (class median = 1)")
    q.add_argument("--lo", type=float, default=0.0, help="weak-confidence band, lower end")
    q.add_argument("--hi", type=float, default=0.6, help="weak-confidence band, upper end")
    q.add_argument("--out", type=Path, required=True, help="output directory")
    q.set_defaults(func=cmd_quality)


def cmd_quality(args: argparse.Namespace) -> int:
    from ..quality.report import plot_quality, quality_report

    _check_flags(args)
    classes = None if args.classes is None else read_classes(args.classes)
    if args.logits_output is not None and args.model is None:
        raise LabelwiseError("--logits-output needs --model (it picks the model's output)")
    if args.model is not None:
        from ..adapters.torch import capture, load_model

        if args.train_inputs is None or args.test_inputs is None:
            raise LabelwiseError("--model needs --train-inputs and --test-inputs")
        train_x = load_array(args.train_inputs, "--train-inputs")
        test_x = load_array(args.test_inputs, "--test-inputs")
        # the labels are checked against the inputs' rows before the model runs
        train_y = read_all_labels(args.train_labels, "--train-labels", _rows(train_x), classes)
        test_y = read_all_labels(args.test_labels, "--test-labels", _rows(test_x), classes)
        model = load_model(args.model)
        # a classifier's probabilities (one output per row: a binary classifier's sigmoid
        # probability when in [0, 1] on every row of that pile, else its logit); this command
        # has no --head for capture's note on one-output models to name
        train = capture(model, train_x, head="softmax", logits_output=args.logits_output)
        test = capture(model, test_x, head="softmax", logits_output=args.logits_output)
        train_f, test_f, test_p = train.activations, test.activations, test.outputs
    else:
        missing = [
            flag
            for flag, v in (
                ("--train-features", args.train_features),
                ("--test-features", args.test_features),
                ("--test-probs", args.test_probs),
            )
            if v is None
        ]
        if missing:
            raise LabelwiseError(f"{', '.join(missing)} required (or give --model and inputs)")
        train_f = load_array(args.train_features, "--train-features", mmap=False)
        test_f = load_array(args.test_features, "--test-features", mmap=False)
        test_p = load_array(args.test_probs, "--test-probs", mmap=False)
        train_y = read_all_labels(args.train_labels, "--train-labels", _rows(train_f), classes)
        test_y = read_all_labels(args.test_labels, "--test-labels", _rows(test_f), classes)
        if _rows(test_p) != _rows(test_f):
            raise LabelwiseError(
                f"--test-probs {args.test_probs} has {_rows(test_p)} rows, --test-features "
                f"{args.test_features} {_rows(test_f)}: give both for the same test inputs, "
                "in the same order"
            )
    rep = quality_report(
        train_f, train_y, test_f, test_y, test_p, radius=args.radius, lo=args.lo, hi=args.hi
    )
    args.out.mkdir(parents=True, exist_ok=True)
    write_json(args.out / "quality.json", rep.to_dict())
    plot = plot_quality(rep, args.out / "quality.png")
    stale = remove_earlier_plots(args.out, ("quality.png",), ["quality.png"] if plot else [])
    print(f"test-set quality: {len(test_y)} test inputs, {len(train_y)} training inputs\n")
    print(rep.table())
    print(f"\nwrote quality.json{', quality.png' if plot else ''} to {args.out}")
    if stale:
        print(earlier_plots_note(stale))
    return 0


def _check_flags(args: argparse.Namespace) -> None:
    """--out, --radius, --lo and --hi, before anything is read or run: --out a file ended in
    'File exists' once the report was computed, and the others were refused naming the
    Python arguments (radius, lo, hi)."""
    check_out_dir(args.out, "--out")
    if not (math.isfinite(args.radius) and args.radius > 0):
        raise LabelwiseError(
            f"--radius must be a positive number (the class median distance is 1), got "
            f"{args.radius:g}"
        )
    for flag, value in (("--lo", args.lo), ("--hi", args.hi)):
        if not 0 <= value <= 1:  # NaN fails too
            raise LabelwiseError(f"{flag} must be a confidence in [0, 1], got {value:g}")
    if args.lo >= args.hi:
        raise LabelwiseError(
            f"--lo must be below --hi (the weak-confidence band), got --lo {args.lo:g} and "
            f"--hi {args.hi:g}"
        )


def _rows(array: Any) -> int | None:
    """The number of rows of an input or feature array (None for a 0-d one, which the
    report refuses with its own message)."""
    shape: tuple[int, ...] = tuple(getattr(array, "shape", ()))
    return int(shape[0]) if shape else None

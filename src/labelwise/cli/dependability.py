"""``labelwise dependability``: dependability metrics of a network (RICC)."""

from __future__ import annotations

import argparse
import math
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from .._deps import install_hint
from .._validation import check_out_dir
from ..adapters._capture import logits_output_arg
from ..exceptions import LabelwiseError
from ..io import load_array, new_folders, remove_empty, write_json
from ._common import DefaultsHelpFormatter, earlier_plots_note, remove_earlier_plots
from ._piles import CLASSES_HELP, read_all_labels, read_classes

# defaults of the options that belong to one metric (None in the parser: given or not)
_DEFAULTS: dict[str, float] = {"eps": 0.03, "window": 4, "stride": 2, "rho": 0.5}


def add_parser(sub: Any) -> None:
    dp = sub.add_parser(
        "dependability",
        help="dependability metrics of a network (coverage, robustness, interpretability)",
        description=(
            "Dependability metrics of a PyTorch classifier on a labelled input set (Cheng et "
            "al., RICC, Sec. II): accuracy, neuron 1- and k-activation coverage and activation "
            "patterns of one layer; with --scenarios, scenario k-projection coverage, accuracy "
            "per scenario, accuracy discounted by coverage and the next scenarios to collect; "
            "with --severity, weighted confusion; with --perturb, the confidence lost under "
            "perturbations and attacks; with --masks, occlusion-based interpretation precision "
            "and sensitivity. Prints a summary (every value in [0, 1]; the legend under it "
            "says which are better low), writes OUT/dependability.json (its fields: README, 'What "
            "dependability.json and quality.json hold') and PNG plots. "
            f"Needs: {install_hint('captum', extra='dependability')}, and "
            f"{install_hint('torchattacks')} for the attacks."
        ),
        formatter_class=DefaultsHelpFormatter,
    )
    dp.add_argument("--model", type=Path, required=True, help="TorchScript or pickled model")
    dp.add_argument(
        "--inputs", type=Path, required=True, help="inputs, .npy or zarr, first axis = rows"
    )
    dp.add_argument(
        "--labels",
        type=Path,
        required=True,
        help="true classes: .npy (N,) or CSV row,label (class numbers, or names with --classes)",
    )
    dp.add_argument("--classes", type=Path, help=CLASSES_HELP)
    dp.add_argument("--out", type=Path, required=True, help="output directory")
    dp.add_argument(
        "--layer", default=None, help="layer for the neuron metrics (default: last hidden)"
    )
    dp.add_argument(
        "--logits-output",
        type=logits_output_arg,
        default=None,
        metavar="KEY|INDEX",
        help="a model with several outputs: the dict key or tuple index of the class scores "
        "(as for capture; default: a dict's 'logits' or its one (rows, classes) tensor)",
    )
    dp.add_argument("--threshold", type=float, default=0.0, help="a neuron is on above this")
    dp.add_argument("--neuron-k", type=int, default=2, choices=[1, 2, 3], help="k for neurons")
    dp.add_argument("--scenarios", type=Path, help="CSV of operating conditions, one row per input")
    dp.add_argument("--spec", type=Path, help="JSON: each condition's possible values")
    dp.add_argument("--k", type=int, default=2, choices=[1, 2, 3], help="k for scenarios")
    dp.add_argument("--severity", help="severity matrix JSON, or paper-table1")
    dp.add_argument(
        "--perturb",
        default=None,
        help="comma list of fgsm, pgd (alpha eps/4, 10 steps), deepfool, noise (sigma eps), "
        "brightness (+eps), rotation (15 degrees), patch (2x2); inputs must be in [0, 1]",
    )
    dp.add_argument(
        "--eps",
        type=float,
        default=None,
        help=f"attack / perturbation strength, with --perturb (default: {_DEFAULTS['eps']:g})",
    )
    dp.add_argument("--masks", type=Path, help="ground-truth masks .npy (N, H, W) for occlusion")
    dp.add_argument(
        "--window",
        type=int,
        default=None,
        help=f"occlusion window side (pixels), with --masks (default: {_DEFAULTS['window']})",
    )
    dp.add_argument(
        "--stride",
        type=int,
        default=None,
        help=f"occlusion stride (pixels), with --masks (default: {_DEFAULTS['stride']})",
    )
    dp.add_argument(
        "--rho",
        type=float,
        default=None,
        help="hot: class probability below this when occluded, with --masks (default: "
        f"{_DEFAULTS['rho']:g})",
    )
    dp.add_argument(
        "--layout",
        choices=["chw", "hwc"],
        default=None,
        help="image inputs: channels first (N, C, H, W) or last (N, H, W, C), for rotation, "
        "patch and --masks (default: chw; inputs that look channels-last must say which)",
    )
    dp.add_argument("--seed", type=int, default=0, help="seed for random perturbations")
    dp.set_defaults(func=cmd_dependability)


def cmd_dependability(args: argparse.Namespace) -> int:
    from ..adapters.torch import capture, load_model
    from ..dependability.patterns import plot_activation_pattern
    from ..dependability.report import dependability_report

    # checked before the model runs: --out a file ended in 'File exists' after it, and
    # --threshold nan or --eps nan were refused naming the Python arguments (threshold, sigma)
    check_out_dir(args.out, "--out")
    if not math.isfinite(args.threshold):
        raise LabelwiseError(f"--threshold must be a finite number, got {args.threshold}")
    if args.eps is not None and not (math.isfinite(args.eps) and args.eps >= 0):
        raise LabelwiseError(f"--eps must be a finite number >= 0, got {args.eps}")
    if args.spec is not None and args.scenarios is None:
        # the spec only says which values each condition of --scenarios may take
        raise LabelwiseError("--spec needs --scenarios (the conditions of each input)")
    # options of a metric that was not asked for were ignored without a word
    for flag, needs in (
        ("eps", "perturb"),
        ("window", "masks"),
        ("stride", "masks"),
        ("rho", "masks"),
    ):
        if getattr(args, flag) is not None and not getattr(args, needs):
            raise LabelwiseError(f"--{flag} needs --{needs} (it sets that metric only)")
        if getattr(args, flag) is None:
            setattr(args, flag, _DEFAULTS[flag])
    if args.layout is not None and not (args.perturb or args.masks is not None):
        raise LabelwiseError("--layout needs --perturb or --masks (it sets how images are read)")
    if args.masks is not None and not 0 < args.rho < 1:
        # the occluded class probability is in [0, 1]: rho >= 1 makes every window hot
        raise LabelwiseError(f"--rho must be a class probability in (0, 1), got {args.rho:g}")
    scenarios, spec = _read_scenarios(args)
    inputs = load_array(args.inputs, "--inputs")
    if inputs.ndim == 0 or inputs.shape[0] == 0:
        raise LabelwiseError(f"--inputs: {args.inputs} has no rows (shape {inputs.shape})")
    n_conditions = len(next(iter(scenarios.values()))) if scenarios else None
    if n_conditions is not None and n_conditions != inputs.shape[0]:
        raise LabelwiseError(
            f"--scenarios {args.scenarios} has {n_conditions} rows of conditions, --inputs "
            f"{args.inputs} {inputs.shape[0]} inputs: give one row per input, in their order"
        )
    _check_layout(args, inputs.shape)
    classes = None if args.classes is None else read_classes(args.classes)
    labels = read_all_labels(args.labels, "--labels", inputs.shape[0], classes)
    model = load_model(args.model)
    # a classifier's probabilities (one output per row: a binary classifier's sigmoid
    # probability when in [0, 1] on every row, else its logit); this command has no --head
    # for capture's note on one-output models to name
    cap = capture(model, inputs, layer=args.layer, head="softmax", logits_output=args.logits_output)
    try:
        rep = dependability_report(
            labels=labels,
            probabilities=cap.outputs,
            activations=cap.activations,
            scenarios=scenarios,
            spec=spec,
            scenario_k=args.k,
            neuron_k=args.neuron_k,
            threshold=args.threshold,
            severity=args.severity,
            # the severity matrix's class names are matched to --classes by name: without
            # them its rows were taken in file order, whatever the classes were called
            classes=classes,
        )
    except LabelwiseError as exc:
        if classes is None or args.severity is None or "same classes as severity" not in str(exc):
            raise
        raise LabelwiseError(
            f"--severity {args.severity} and --classes {args.classes} name different "
            f'classes ({exc}); give a severity matrix whose "classes" are the names in '
            f"{args.classes}"
        ) from None
    # every file is made in a staging folder inside --out and moved into place only when all
    # are made: a perturbation or mask that fails (or Ctrl-C) used to leave this run's
    # patterns.png, or confidence_loss.png, beside no dependability.json or an earlier one
    folders = new_folders(args.out)
    args.out.mkdir(parents=True, exist_ok=True)
    try:
        stage = Path(tempfile.mkdtemp(prefix=".dependability-", dir=args.out))
    except OSError as exc:
        remove_empty(folders)
        raise LabelwiseError(
            f"--out: cannot write into {args.out} ({exc.strerror or exc}); nothing was written"
        ) from None
    try:
        written = []
        if plot_activation_pattern(rep.results["activation_pattern"], stage / "patterns.png"):
            written.append("patterns.png")
        written += _model_metrics(args, model, inputs, labels, rep, stage)
        write_json(stage / "dependability.json", {"layer": cap.layer, **rep.to_dict()})
        for name in [*written, "dependability.json"]:
            os.replace(stage / name, args.out / name)
    except BaseException:
        shutil.rmtree(stage, ignore_errors=True)
        remove_empty(folders)
        raise
    shutil.rmtree(stage, ignore_errors=True)
    # plots of an earlier run into --out that this run did not make would sit beside this
    # run's dependability.json as if they were its own (a confidence loss it did not compute)
    stale = remove_earlier_plots(args.out, _PLOTS, written)
    print(f"dependability of {args.model.name} on {labels.size} inputs (layer {cap.layer})\n")
    print(rep.table())
    print(f"\nwrote dependability.json{''.join(', ' + w for w in written)} to {args.out}")
    if stale:
        print(earlier_plots_note(stale))
    return 0


def _read_scenarios(
    args: argparse.Namespace,
) -> tuple[dict[str, list[str]] | None, dict[str, tuple[Any, ...]] | None]:
    """--scenarios and --spec read and checked before the model runs, naming the flags (the
    report read them later and said 'conditions: ...', 'spec[...]', 'k must be ...')."""
    from ..dependability.scenario import _read_csv, _read_spec

    scenarios = None if args.scenarios is None else _read_csv(args.scenarios, "--scenarios")
    if scenarios is not None and args.k > len(scenarios):
        raise LabelwiseError(
            f"--k must be at most the number of conditions (the {len(scenarios)} columns of "
            f"--scenarios {args.scenarios}), got {args.k}"
        )
    spec = None if args.spec is None else _read_spec(args.spec, "--spec")
    return scenarios, spec


_PLOTS = ("patterns.png", "confidence_loss.png", "interpretation.png")  # what a run may plot


def _model_metrics(
    args: argparse.Namespace,
    model: Any,
    inputs: np.ndarray,
    labels: np.ndarray,
    rep: Any,
    where: Path,
) -> list[str]:
    """The metrics that need the model itself; returns the plots written into ``where``."""
    from ..adapters.torch import scores_view

    written: list[str] = []
    # the perturbations and occlusion read model(x) as a tensor: a dict or tuple output is
    # read as capture read it
    model = scores_view(model, args.logits_output)
    if args.layout == "hwc":
        # the image perturbations and occlusion work on (N, C, H, W)
        from ..adapters.torch import channels_first_view

        model, inputs = channels_first_view(model), np.moveaxis(np.asarray(inputs), -1, 1)
    if args.perturb:
        from ..dependability import robustness as rb

        eps = args.eps
        if eps < 0:
            raise LabelwiseError(f"--eps must be >= 0, got {eps}")
        kinds = {
            "fgsm": lambda: rb.FGSM(eps),
            "pgd": lambda: rb.PGD(eps, alpha=eps / 4, steps=10),
            "deepfool": lambda: rb.DeepFool(),
            "noise": lambda: rb.GaussianNoise(eps),
            "brightness": lambda: rb.Brightness(eps),
            "rotation": lambda: rb.Rotation(15.0),
            "patch": lambda: rb.Patch(2),
        }
        names = [n.strip() for n in args.perturb.split(",") if n.strip()]
        unknown = sorted(set(names) - set(kinds))
        if unknown or not names:
            raise LabelwiseError(f"--perturb must list some of {sorted(kinds)}, got {unknown}")
        loss = rb.confidence_loss(
            model, inputs, labels, {n: kinds[n]() for n in names}, rng=args.seed
        )
        rep.add(
            "confidence loss: average",
            loss.mean,
            f"worst of {', '.join(names)} per input (II-D)",
        )
        rep.add(
            "confidence loss: top 10% mean",
            loss.top_mean,
            f"mean of the {loss.n_top} largest per-input losses; maximum {loss.maximum:.4f}",
        )
        rep.details["confidence_loss"] = loss.to_dict()
        if rb.plot_confidence_loss(loss, where / "confidence_loss.png"):
            written.append("confidence_loss.png")
    if args.masks is not None:
        from ..dependability import interpretation as ip

        masks = np.asarray(load_array(args.masks, "--masks", mmap=False))
        if masks.shape[0] != labels.size:
            raise LabelwiseError(f"--masks must hold one mask per input ({labels.size})")
        window, stride = (args.window, args.window), (args.stride, args.stride)
        maps = ip.occlusion_heatmaps(model, inputs, labels, window=window, stride=stride)
        res = ip.interpretation_metrics(
            maps.heatmaps, masks, rho=args.rho, window=window, stride=stride
        )
        rep.add(
            "interpretation precision",
            res.interpret,
            f"share of hot windows on the object, rho {args.rho:g}"
            f"{_counted_as_zero(res.per_image_interpret, res.n_hot, 'no hot window')} (II-F)",
        )
        rep.add(
            "occlusion sensitivity covering",
            res.occsen,
            "share of the object's windows that are hot"
            f"{_counted_as_zero(res.per_image_occsen, res.n_occluding, 'an empty mask')} (II-G)",
        )
        rep.details["interpretation"] = res.to_dict()
        curve = ip.sweep(
            maps.heatmaps, masks, np.linspace(0.05, 0.95, 19), window=window, stride=stride
        )
        if ip.plot_sweep(curve, where / "interpretation.png"):
            written.append("interpretation.png")
    return written


_IMAGE_PERTURBATIONS = ("rotation", "patch")


def _check_layout(args: argparse.Namespace, shape: tuple[int, ...]) -> None:
    """--layout hwc needs (N, H, W, C) inputs; without --layout, inputs that look channels-last
    (a last axis of 1, 3 or 4 after one that is not) are refused where the layout matters
    (rotation, patch, occlusion): read as (N, C, H, W), rotation turned (C=8, H=8, W=1) 'images'
    and reported another confidence loss without a word."""
    perturb = [n.strip() for n in (args.perturb or "").split(",")]
    uses = [f"--perturb {n}" for n in _IMAGE_PERTURBATIONS if n in perturb]
    uses += ["--masks"] if args.masks is not None else []
    if args.layout == "hwc" and len(shape) != 4:
        raise LabelwiseError(
            f"--layout hwc needs --inputs of shape (rows, height, width, channels), got {shape}"
        )
    looks_hwc = len(shape) == 4 and shape[-1] in (1, 3, 4) and shape[1] not in (1, 3, 4)
    if args.layout is None and looks_hwc and uses:
        raise LabelwiseError(
            f"--inputs of shape {shape} look channels-last (rows, height, width, channels), "
            f"and {' and '.join(uses)} must know where the channels are: pass --layout hwc "
            f"(or --layout chw if the {shape[1]} of axis 1 are channels)"
        )


def _counted_as_zero(per_image: np.ndarray, denominators: np.ndarray, why: str) -> str:
    """The detail for a mean over images in which 0/0 images count as 0: how many did, and
    the mean over the others (else the mean reads as a share it is not)."""
    undefined = denominators == 0
    n_zero = int(undefined.sum())
    if not n_zero:
        return f"; mean over {per_image.size} images"
    rest = (
        f"mean over the other {per_image.size - n_zero} {float(per_image[~undefined].mean()):.4f}"
        if n_zero < per_image.size
        else "no image defines it"
    )
    return f"; {n_zero} of {per_image.size} images have {why} and count as 0 ({rest})"

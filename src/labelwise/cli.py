"""Command-line interface: ``labelwise select | estimate | capture | demo``.

Thin: parses arguments, calls the public API, prints tables, writes files atomically.
"""

from __future__ import annotations

import argparse
import sys
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from . import __version__
from ._results import Estimate, Selection
from .estimation import correctness, estimate, rank_models, regression_scores
from .exceptions import LabelwiseError, MissingDependencyError
from .io import (
    file_digest,
    load_array,
    read_json,
    read_labels_csv,
    save_array,
    write_csv,
    write_json,
)
from .sampling import (
    CES_OBJECTIVES,
    ces_select,
    css_select,
    ddg_select,
    extend,
    rdg_select,
    sds_select,
    srs_select,
)

EPILOG = """\
typical session:
  labelwise capture --model model.pt --inputs pile.npy --out cap
  labelwise select --method ces --budget 100 --activations cap/activations.npy \\
                   --probs cap/probabilities.npy --out sel
  # label the rows listed in sel/to_label.csv, save them as labels.csv (row,label)
  labelwise estimate sel --labels labels.csv
  labelwise select --extend sel --budget 50      # 50 more labels, same method
"""


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "command", None):
        parser.print_help()
        return 2
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            code = int(args.func(args) or 0)
        except (LabelwiseError, MissingDependencyError) as exc:
            print(f"labelwise: error: {exc}", file=sys.stderr)
            code = 2
        finally:
            for message in dict.fromkeys(str(w.message) for w in caught):
                print(f"note: {message}", file=sys.stderr)
    return code


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="labelwise",
        description=(
            "Estimate a model's accuracy on a large unlabeled pile from a few labels: choose "
            "which inputs to label (SRS, CSS, CES), then estimate with a confidence interval."
        ),
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--version", action="version", version=f"labelwise {__version__}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")

    s = sub.add_parser(
        "select",
        help="choose which rows of the pile to label",
        description=(
            "Choose which rows to label. Writes OUT/to_label.csv (selection order, row index) "
            "and OUT/selection.json (everything needed to estimate and to extend)."
        ),
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    s.add_argument(
        "--method",
        choices=["srs", "css", "ces", "sds", "ddg", "rdg"],
        help="srs, css, ces: estimate one model's accuracy; sds, ddg, rdg: rank several "
        "models (--predictions). Not with --extend",
    )
    s.add_argument(
        "--budget", type=int, required=True, help="rows to label (with --extend: rows to add)"
    )
    s.add_argument("--activations", type=Path, help="(N, m) last-hidden-layer outputs, .npy (CES)")
    s.add_argument(
        "--probs", type=Path, help="(N, C) class probabilities or (N,) confidences, .npy (CSS)"
    )
    s.add_argument("--population-size", type=int, help="N, for SRS without any array")
    s.add_argument("--out", type=Path, help="output directory")
    s.add_argument(
        "--extend", type=Path, metavar="DIR", help="add --budget rows to the selection in DIR"
    )
    s.add_argument(
        "--seed", type=int, default=None, help="random seed (default: fresh entropy, recorded)"
    )
    s.add_argument("--force", action="store_true", help="overwrite an existing selection in --out")
    g = s.add_argument_group("CES (Li et al. 2019, Algorithm 1)")
    g.add_argument("--sections", type=int, default=20, help="K, sections per neuron")
    g.add_argument("--initial", type=int, default=30, help="p, initial random rows")
    g.add_argument("--group-size", type=int, default=5, help="q, rows added per step")
    g.add_argument("--groups", type=int, default=300, help="l, random groups tried per step")
    g.add_argument(
        "--objective",
        choices=sorted(CES_OBJECTIVES),
        default="kl",
        help="kl: KL(P_T||P_S) (unbiased in our studies); ce: the paper's Eq. 8; "
        "ce-common: Eq. 8 without sections rarer than 0.5/|T|",
    )
    g.add_argument("--epsilon", type=float, default=1e-10, help="floor for empty sections (ce*)")
    s.add_argument(
        "--predictions",
        type=Path,
        help="(M, N) predicted classes or (M, N, C) probabilities of M models, .npy "
        "(SDS, DDG, RDG; DeepGini needs probabilities)",
    )
    g = s.add_argument_group("SDS and DeepGini (Meng et al. 2021, Sec. III-B, IV-B)")
    g.add_argument("--top-fraction", type=float, default=0.27, help="SDS: top/bottom model share")
    g.add_argument(
        "--candidate-fraction", type=float, default=0.25, help="SDS, RDG: candidate input share"
    )
    g.add_argument(
        "--combine",
        choices=["max", "min", "mean"],
        default="max",
        help="DeepGini: how the models' impurities of an input are combined",
    )
    g = s.add_argument_group("CSS (Li et al. 2019, Sec. 3.1)")
    g.add_argument(
        "--strata", default="0.8,0.1,0.1", help="stratum shares, most to least confident"
    )
    g.add_argument(
        "--allocation",
        default="0.2,0.4,0.4",
        help="label shares per stratum, or proportional, neyman",
    )
    s.set_defaults(func=cmd_select)

    e = sub.add_parser(
        "estimate",
        help="estimate accuracy (or 1-MSE) from the labels of a selection",
        description=(
            "Estimate the model's accuracy on the whole pile from the labelled rows of a "
            "selection. LABELS is a CSV with a 'row' column and one of 'label' (class index; "
            "accuracy), 'target' (regression target; 1-MSE) or 'score' (per-row score H). "
            "Prints a table and writes DIR/estimate.json."
        ),
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    e.add_argument("dir", type=Path, help="selection directory written by 'labelwise select'")
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
        "--json", action="store_true", help="print the estimate as JSON instead of a table"
    )
    e.set_defaults(func=cmd_estimate)

    rk = sub.add_parser(
        "rank",
        help="rank several models from the labels of a selection",
        description=(
            "Rank M models by their accuracy on the labelled rows of a selection (made with "
            "--method sds, ddg, rdg or any other). Prints each model's estimated accuracy, "
            "its Wilson interval, its rank, and the paired-bootstrap probability that it is "
            "truly better than the next model; writes DIR/ranking.json. For SDS, DDG and RDG "
            "the labelled rows are not a random sample of the pile: the accuracies speak to "
            "the order of the models, not to their accuracy on the whole pile."
        ),
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    rk.add_argument("dir", type=Path, help="selection directory written by 'labelwise select'")
    rk.add_argument("--labels", type=Path, required=True, help="CSV: row,label")
    rk.add_argument(
        "--predictions",
        type=Path,
        help="(M, N) classes or (M, N, C) probabilities, .npy (default: the selection's)",
    )
    rk.add_argument("--names", help="comma-separated model names (default M1, M2, ...)")
    rk.add_argument("--confidence", type=float, default=0.95, help="confidence level")
    rk.add_argument("--bootstrap", type=int, default=2000, help="bootstrap replicates")
    rk.add_argument("--seed", type=int, default=0, help="seed for the bootstrap")
    rk.set_defaults(func=cmd_rank)

    c = sub.add_parser(
        "capture",
        help="run a PyTorch model over inputs and save activations and probabilities",
        description=(
            "One batched pass of a PyTorch model (TorchScript file or pickled nn.Module) over "
            "INPUTS (.npy). Writes OUT/activations.npy (float32, the last hidden layer: the "
            "input of the last Linear layer, or --layer's output), OUT/probabilities.npy "
            "(softmax; or OUT/outputs.npy with --head raw), OUT/predictions.npy and "
            "OUT/capture.json. Needs: pip install 'labelwise[torch]'."
        ),
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    c.add_argument("--model", type=Path, required=True, help="TorchScript or pickled model file")
    c.add_argument("--inputs", type=Path, required=True, help="inputs, .npy, first axis = rows")
    c.add_argument("--out", type=Path, required=True, help="output directory")
    c.add_argument("--layer", default=None, help="module name to capture (default: last hidden)")
    c.add_argument("--head", choices=["softmax", "raw"], default="softmax", help="output transform")
    c.add_argument("--batch-size", type=int, default=256, help="rows per forward pass")
    c.set_defaults(func=cmd_capture)

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
            "and sensitivity. Prints a summary, writes OUT/dependability.json and PNG plots. "
            "Needs: pip install 'labelwise[dependability]' and pip install --no-deps "
            "torchattacks for the attacks."
        ),
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    dp.add_argument("--model", type=Path, required=True, help="TorchScript or pickled model")
    dp.add_argument("--inputs", type=Path, required=True, help="inputs, .npy, first axis = rows")
    dp.add_argument(
        "--labels", type=Path, required=True, help="true classes: .npy (N,) or CSV row,label"
    )
    dp.add_argument("--out", type=Path, required=True, help="output directory")
    dp.add_argument(
        "--layer", default=None, help="layer for the neuron metrics (default: last hidden)"
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
    dp.add_argument("--eps", type=float, default=0.03, help="attack / perturbation strength")
    dp.add_argument("--masks", type=Path, help="ground-truth masks .npy (N, H, W) for occlusion")
    dp.add_argument("--window", type=int, default=4, help="occlusion window side (pixels)")
    dp.add_argument("--stride", type=int, default=2, help="occlusion stride (pixels)")
    dp.add_argument(
        "--rho", type=float, default=0.5, help="hot: class probability below this when occluded"
    )
    dp.add_argument("--seed", type=int, default=0, help="seed for random perturbations")
    dp.set_defaults(func=cmd_dependability)

    q = sub.add_parser(
        "quality",
        help="test-set quality in the model's feature space (per class)",
        description=(
            "How well a test set covers a model's feature space, per class: equivalence "
            "partitioning, share near the class centroid, share in the weak-confidence band "
            "(and per class pair), covariate shift between train and test features, and the "
            "classic adequacy metrics (NC, KMNC, NBC, SNAC, TKNC) for comparison. Give saved "
            "features and probabilities, or --model with --train-inputs and --test-inputs "
            "(features = the last hidden layer). Prints a table, writes OUT/quality.json and "
            "OUT/quality.png (box plots per class)."
        ),
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    q.add_argument("--train-labels", type=Path, required=True, help="training classes, .npy")
    q.add_argument("--test-labels", type=Path, required=True, help="test classes, .npy")
    q.add_argument("--train-features", type=Path, help="training features (N, d), .npy")
    q.add_argument("--test-features", type=Path, help="test features (M, d), .npy")
    q.add_argument("--test-probs", type=Path, help="test class probabilities (M, C), .npy")
    q.add_argument("--model", type=Path, help="TorchScript or pickled model (instead of features)")
    q.add_argument("--train-inputs", type=Path, help="training inputs, .npy (with --model)")
    q.add_argument("--test-inputs", type=Path, help="test inputs, .npy (with --model)")
    q.add_argument("--radius", type=float, default=1.0, help="centroid radius (class median = 1)")
    q.add_argument("--lo", type=float, default=0.0, help="weak-confidence band, lower end")
    q.add_argument("--hi", type=float, default=0.6, help="weak-confidence band, upper end")
    q.add_argument("--out", type=Path, required=True, help="output directory")
    q.set_defaults(func=cmd_quality)

    d = sub.add_parser(
        "demo",
        help="end-to-end demo on scikit-learn's digits with a shifted operational pile",
        description=(
            "Trains a small CNN on half of scikit-learn's digits, builds an operational pile "
            "from the other half with a shift, then runs SRS, CSS and CES at one budget and "
            "prints each estimate, its interval and the true accuracy, followed by a repeated "
            "comparison of their spread. Needs: pip install 'labelwise[torch]'."
        ),
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    d.add_argument("--shift", choices=["none", "patch", "light", "resolution"], default="patch")
    d.add_argument("--mutant", default=None, help="train on swapped labels, e.g. 8-0")
    d.add_argument("--budget", type=int, default=100, help="labels per method")
    d.add_argument("--repeats", type=int, default=50, help="repetitions for the spread comparison")
    d.add_argument("--seed", type=int, default=0, help="seed for data, model and sampling")
    d.add_argument("--out", type=Path, default=Path("labelwise-demo"), help="output directory")
    d.set_defaults(func=cmd_demo)

    st = sub.add_parser(
        "study",
        help="reproducible studies of the methods on models trained here",
        description="Reproducible studies that compare the methods on bundled data.",
    )
    st_sub = st.add_subparsers(dest="study", metavar="STUDY")
    op = st_sub.add_parser(
        "operational",
        help="the CES paper's Table 1 and 3 on MNIST-1D, digits and a regression model",
        description=(
            "Reproduces the evaluation of Li et al. 2019 (Sec. 4.2, Tables 1 and 3): trains "
            "models on MNIST-1D (clean and three label-swap mutants), digits (clean, patch, "
            "light, resolution) and a regression MLP (clean, patch, light), runs every method "
            "at sample sizes 35..180 with repeated draws, and prints the relative efficiency "
            "E = MSE(method) / MSE(SRS). Writes table.csv, table.json, small_piles.csv and "
            "PNG plots of the estimator's spread against sample size. Needs: pip install "
            "'labelwise[study]'."
        ),
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    op.add_argument("--quick", action="store_true", help="6 sizes, 20 repetitions, 10 small piles")
    op.add_argument("--out", type=Path, default=Path("study-out"), help="output directory")
    op.add_argument("--seed", type=int, default=0, help="seed for data, models and sampling")
    op.add_argument("--jobs", type=int, default=1, help="worker processes for the repetitions")
    op.set_defaults(func=cmd_study_operational)
    cp = st_sub.add_parser(
        "comparative",
        help="the SDS paper's Table II: ranking a zoo of models with few labels",
        description=(
            "Reproduces the evaluation of Meng et al. 2021 (Sec. IV-V, Table II, Fig. 4; Sec. "
            "VI): trains a zoo of 28 MNIST-1D classifiers of varied architecture, width, "
            "training length and seed, then for sample sizes 35..180 and repeated draws "
            "measures how well SDS, CES (best of n, an oracle), DDG, RDG and SRS rank the "
            "models (Spearman's rho, Jaccard of the top 10) with W/T/L of SDS against each; "
            "also the 4-model case and ranking by majority vote without labels. Writes "
            "ranking_*.csv, comparative.json and ranking.png. Needs: pip install "
            "'labelwise[study]'."
        ),
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    cp.add_argument("--quick", action="store_true", help="6 sizes and 20 repetitions")
    cp.add_argument("--out", type=Path, default=Path("study-out"), help="output directory")
    cp.add_argument("--seed", type=int, default=0, help="seed for data, models and sampling")
    cp.set_defaults(func=cmd_study_comparative)
    qs = st_sub.add_parser(
        "quality",
        help="test-set quality tables (Table 1, Table 2) on digits and MNIST-1D models",
        description=(
            "Trains models on digits (clean and patch-occluded test sets) and MNIST-1D, then "
            "prints the test-set quality of each (Table 1 layout: centroid, boundary, pair-wise "
            "boundary coverage, covariate shift, and NC/KMNC/NBC/SNAC/TKNC) and the accuracy "
            "of each model's head on generated centroid/boundary points (Table 2 layout). "
            "Writes quality_study.json. Needs: pip install 'labelwise[study]'."
        ),
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    qs.add_argument("--quick", action="store_true", help="generated sets of 100 and 300 only")
    qs.add_argument("--out", type=Path, default=Path("study-out"), help="output directory")
    qs.add_argument("--seed", type=int, default=0, help="seed for data, models and generation")
    qs.set_defaults(func=cmd_study_quality)
    st.set_defaults(func=lambda a: _missing_study(st))
    return p


def cmd_study_comparative(args: argparse.Namespace) -> int:
    from .experiments.comparative import (
        ComparativeConfig,
        format_table,
        run_comparative_study,
        write_outputs,
    )

    config = ComparativeConfig.quick(args.seed) if args.quick else ComparativeConfig(seed=args.seed)
    print(
        f"comparative study ({'quick' if args.quick else 'full'}): sizes "
        f"{config.sizes[0]}..{config.sizes[-1]}, {config.repetitions} repetitions, seed {args.seed}"
    )
    cs = run_comparative_study(config)
    n_models = len(cs.main.model_names)
    print(f"\nRanking {n_models} models (Table II layout; W/T/L of SDS against each baseline):")
    print(format_table(cs.main))
    print(f"\nFewer models: {len(cs.few.model_names)} (Sec. VI):")
    print(format_table(cs.few, k=1))
    for label, vote in (("zoo", cs.vote_main), ("4 models", cs.vote_few)):
        parts = ", ".join(f"{k} {v:.3f}" for k, v in vote.items())
        print(f"\nMajority vote as labels, no labelling at all ({label}): {parts}")
    written = write_outputs(cs, args.out)
    print(f"\nwrote {', '.join(written)} to {args.out} ({cs.seconds:.0f} s)")
    return 0


def cmd_study_quality(args: argparse.Namespace) -> int:
    from .experiments.quality_study import format_quality_table, run_quality_study

    sizes = (100, 300) if args.quick else (100, 300, 700, 1000)
    print(f"quality study ({'quick' if args.quick else 'full'}), seed {args.seed}")
    rows = run_quality_study(seed=args.seed, sizes=sizes)
    print("\nTest-set quality (Table 1 layout):")
    print(format_quality_table(rows))
    print("\nHead accuracy on generated points, centroid-boundary splits (Table 2 layout):")
    for r in rows:
        print(r.generation.format_table(dataset=r.dataset, model=r.model))
    args.out.mkdir(parents=True, exist_ok=True)
    write_json(
        args.out / "quality_study.json",
        {
            "seed": args.seed,
            "rows": [
                {
                    "dataset": r.dataset,
                    "model": r.model,
                    "accuracy": r.accuracy,
                    "quality": r.report.to_dict(),
                    "generation": {
                        "sizes": list(r.generation.sizes),
                        "splits": [list(sp) for sp in r.generation.splits],
                        "accuracy": np.asarray(r.generation.accuracy).tolist(),
                    },
                }
                for r in rows
            ],
        },
    )
    print(f"\nwrote quality_study.json to {args.out}")
    return 0


def _missing_study(parser: argparse.ArgumentParser) -> int:
    parser.print_help()
    return 2


def cmd_study_operational(args: argparse.Namespace) -> int:
    from .experiments.operational import (
        PAPER_TABLE1,
        StudyConfig,
        format_table,
        run_operational_study,
        write_outputs,
    )

    config = (StudyConfig.quick if args.quick else StudyConfig)(seed=args.seed, n_jobs=args.jobs)
    print(
        f"operational study ({'quick' if args.quick else 'full'}): sizes "
        f"{config.sizes[0]}..{config.sizes[-1]}, {config.repetitions} repetitions, seed {args.seed}"
    )
    study = run_operational_study(config)
    print()
    print(format_table(study))
    print()
    print(PAPER_TABLE1)
    written = write_outputs(study, args.out)
    print(f"\nwrote {', '.join(written)} to {args.out} ({study.seconds:.0f} s)")
    return 0


# ---------------------------------------------------------------------------------- select


def cmd_select(args: argparse.Namespace) -> int:
    if args.extend is not None:
        return _select_extend(args)
    if args.method is None:
        raise LabelwiseError("--method is required (or use --extend DIR)")
    if args.out is None:
        raise LabelwiseError("--out is required")
    _check_out(args.out, args.force)
    seed = args.seed if args.seed is not None else _fresh_seed()
    sources: dict[str, Any] = {}
    arrays: dict[str, np.ndarray] = {}
    for path, flag, key in (
        (args.activations, "--activations", "activations"),
        (args.probs, "--probs", "probs"),
    ):
        if path is not None:
            arrays[key] = _load_source(path, flag, key, sources)
    if args.predictions is not None:
        preds = _load_source(args.predictions, "--predictions", "predictions", sources)
        if preds.ndim not in (2, 3):
            raise LabelwiseError(
                f"--predictions must be (models, inputs) or (models, inputs, classes), "
                f"got shape {preds.shape}"
            )
        arrays["predictions"] = preds
    rows = {a.shape[1] if k == "predictions" else a.shape[0] for k, a in arrays.items()}
    if len(rows) > 1:
        raise LabelwiseError(
            f"the inputs must describe the same pile rows, got row counts {sorted(rows)}"
        )
    if args.method in ("sds", "ddg", "rdg"):
        sel = _select_models(args, _need(arrays, "predictions", "--predictions", args.method), seed)
    elif args.method == "ces":
        sel = ces_select(
            _need(arrays, "activations", "--activations", "CES"),
            args.budget,
            n_sections=args.sections,
            initial=args.initial,
            group_size=args.group_size,
            n_groups=args.groups,
            objective=args.objective,
            epsilon=args.epsilon,
            progress=True,
            rng=seed,
        )
    elif args.method == "css":
        sel = css_select(
            _need(arrays, "probs", "--probs", "CSS"),
            args.budget,
            strata=_floats(args.strata, "--strata"),
            allocation=_allocation(args.allocation),
            rng=seed,
        )
    else:
        if rows:
            n_pop = rows.pop()
        elif args.population_size is not None:
            n_pop = int(args.population_size)
        else:
            raise LabelwiseError(
                "SRS needs the pile size: --population-size N, --activations or --probs"
            )
        sel = srs_select(n_pop, args.budget, rng=seed)
    write_selection(args.out, sel, sources, seed)
    _print_selection(sel, args.out)
    return 0


def _select_models(args: argparse.Namespace, preds: np.ndarray, seed: int) -> Selection:
    if args.method == "sds":
        return sds_select(
            preds,
            args.budget,
            top_fraction=args.top_fraction,
            candidate_fraction=args.candidate_fraction,
            rng=seed,
        )
    if preds.ndim != 3:
        raise LabelwiseError(
            f"--predictions must hold probabilities (models, inputs, classes) for "
            f"{args.method.upper()}, got shape {preds.shape}"
        )
    if args.method == "ddg":
        return ddg_select(preds, args.budget, combine=args.combine, rng=seed)
    return rdg_select(
        preds,
        args.budget,
        combine=args.combine,
        candidate_fraction=args.candidate_fraction,
        rng=seed,
    )


def _select_extend(args: argparse.Namespace) -> int:
    directory = args.extend
    doc = read_json(directory / "selection.json", "--extend")
    sel = Selection.from_dict(doc.get("selection", {}))
    sources = doc.get("sources", {})
    if args.method is not None and args.method != sel.method:
        raise LabelwiseError(f"--method {args.method} differs from the selection's {sel.method}")
    data: Any = None
    if sel.method == "ces":
        data = _reload_source(sources, "activations")
    elif sel.method == "css":
        data = _reload_source(sources, "probs")
    elif sel.method in ("sds", "ddg", "rdg"):
        data = _reload_source(sources, "predictions")
    before = sel.budget
    new = extend(sel, data, args.budget)
    out = args.out or directory
    if out != directory:
        _check_out(out, args.force)
    write_selection(out, new, sources, doc.get("seed"))
    print(f"extended {sel.method} selection from {before} to {new.budget} rows")
    _print_selection(new, out)
    return 0


def _load_source(path: Path, flag: str, key: str, sources: dict[str, Any]) -> np.ndarray:
    arr = load_array(path, flag)
    sources[key] = {
        "path": str(path.resolve()),
        "sha256": file_digest(path),
        "shape": list(arr.shape),
    }
    return arr


def _need(arrays: dict[str, np.ndarray], key: str, flag: str, method: str) -> np.ndarray:
    if key not in arrays:
        raise LabelwiseError(f"{flag} is required for {method}")
    return arrays[key]


def _reload_source(sources: dict[str, Any], key: str) -> np.ndarray:
    info = sources.get(key)
    if not info:
        raise LabelwiseError(f"the selection does not record its {key} file")
    path = Path(info["path"])
    arr = load_array(path, f"{key} recorded in selection.json")
    if file_digest(path) != info.get("sha256"):
        raise LabelwiseError(
            f"{path} changed since the selection was made (sha256 differs); extending would "
            "not continue the same selection"
        )
    return arr


def _fresh_seed() -> int:
    """A random seed from the OS, recorded in selection.json so the run can be repeated."""
    return int(np.random.SeedSequence().generate_state(1, np.uint64)[0] >> 1)


def write_selection(out: Path, sel: Selection, sources: dict[str, Any], seed: Any) -> None:
    """Write OUT/to_label.csv and OUT/selection.json (atomically)."""
    doc = {
        "tool": f"labelwise {__version__}",
        "seed": seed,
        "sources": sources,
        "selection": sel.to_dict(),
    }
    out.mkdir(parents=True, exist_ok=True)
    rows = [[i + 1, int(r)] for i, r in enumerate(sel.indices)]
    write_csv(out / "to_label.csv", ["order", "row"], rows)
    write_json(out / "selection.json", doc)


def _print_selection(sel: Selection, out: Path) -> None:
    first = ", ".join(str(int(i)) for i in sel.indices[:10])
    more = ", ..." if sel.budget > 10 else ""
    print(f"{sel.method}: {sel.budget} of {sel.population_size} rows selected")
    if sel.stratum_sizes is not None and sel.strata is not None:
        per = np.bincount(sel.strata, minlength=len(sel.stratum_sizes))
        parts = [f"stratum {h}: {int(per[h])} of {n}" for h, n in enumerate(sel.stratum_sizes)]
        print("  " + "; ".join(parts))
    print(f"  rows to label first: {first}{more}")
    print(f"  wrote {out / 'to_label.csv'} and {out / 'selection.json'}")


def _check_out(out: Path, force: bool) -> None:
    if (out / "selection.json").exists() and not force:
        raise LabelwiseError(f"--out {out} already holds a selection; use --force to overwrite")
    if out.exists() and not out.is_dir():
        raise LabelwiseError(f"--out {out} exists and is not a directory")


def _floats(text: str, flag: str) -> tuple[float, ...]:
    try:
        return tuple(float(x) for x in text.split(","))
    except ValueError:
        raise LabelwiseError(f"{flag} must be comma-separated numbers, got {text!r}") from None


def _allocation(text: str) -> Any:
    return text if text in ("proportional", "neyman") else _floats(text, "--allocation")


# -------------------------------------------------------------------------------- estimate


def cmd_estimate(args: argparse.Namespace) -> int:
    doc, sel = _load_selection(args.dir)
    kind, ordered = labels_for_selection(args.labels, sel, args.dir)
    scores, metric = _scores(args, doc, sel, kind, ordered)
    est = estimate(sel, scores, confidence=args.confidence, metric=metric)
    write_json(
        args.dir / "estimate.json", {"estimate": est.to_dict(), "selection_method": sel.method}
    )
    if args.json:
        import json

        print(json.dumps(est.to_dict(), indent=2))
    else:
        print(format_estimate(est))
    return 0


def _load_selection(directory: Path) -> tuple[dict[str, Any], Selection]:
    doc = read_json(directory / "selection.json", "DIR")
    return doc, Selection.from_dict(doc.get("selection", {}))


def labels_for_selection(path: Path, sel: Selection, directory: Path) -> tuple[str, np.ndarray]:
    """The label column's kind and its values in selection order: exactly the selected rows.

    Rows outside the pile, labels for rows that were not selected (they would bias the
    estimate) and selected rows without a label are errors that name the rows.
    """
    rows, kind, values = read_labels_csv(path)
    n_pop = sel.population_size
    out_of_range = rows[(rows < 0) | (rows >= n_pop)]
    if out_of_range.size:
        raise LabelwiseError(
            f"--labels: rows must be in [0, {n_pop}), got {out_of_range[:10].tolist()}"
        )
    selected = set(sel.indices.tolist())
    extra = [int(r) for r in rows if int(r) not in selected]
    if extra:
        raise LabelwiseError(
            f"--labels: {len(extra)} labelled rows were not selected, e.g. {extra[:10]}; "
            "only the selected rows may be used (others would bias the estimate)"
        )
    have = dict(zip(rows.tolist(), values.tolist(), strict=True))
    missing = [int(r) for r in sel.indices if int(r) not in have]
    if missing:
        raise LabelwiseError(
            f"--labels: {len(missing)} selected rows have no label, e.g. {missing[:10]} "
            f"(see {directory / 'to_label.csv'})"
        )
    return kind, np.asarray([have[int(r)] for r in sel.indices])


def _scores(
    args: argparse.Namespace, doc: dict[str, Any], sel: Selection, kind: str, values: np.ndarray
) -> tuple[np.ndarray, str | None]:
    if kind == "score":
        return values.astype(np.float64), None
    pred_path = args.predictions
    if pred_path is None:
        probs = doc.get("sources", {}).get("probs")
        if probs is None:
            raise LabelwiseError(
                "--predictions is required: the selection did not record model probabilities"
            )
        preds = _reload_source(doc["sources"], "probs")
    else:
        preds = load_array(pred_path, "--predictions")
    if preds.shape[0] != sel.population_size:
        raise LabelwiseError(
            f"--predictions must have one row per pile row ({sel.population_size}), "
            f"got {preds.shape[0]}"
        )
    picked = np.asarray(preds[np.sort(sel.indices)])[np.argsort(np.argsort(sel.indices))]
    if kind == "target":
        return regression_scores(picked, values), "1-MSE"
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


def format_estimate(est: Estimate) -> str:
    pct = f"{est.confidence * 100:g}%"
    n_pop = "" if est.population_size is None else f" of {est.population_size}"
    lines = [
        f"{est.method.upper()} estimate from {est.n_labelled}{n_pop} labelled rows",
        "",
        f"  {'metric':<18}{est.metric}",
        f"  {'estimate':<18}{est.value:.4f}",
        f"  {'standard error':<18}{est.std_error:.4f}",
        f"  {pct + ' interval':<18}[{est.ci_low:.4f}, {est.ci_high:.4f}]  ({est.interval})",
    ]
    return "\n".join(lines)


# ------------------------------------------------------------------------------------ rank


def cmd_rank(args: argparse.Namespace) -> int:
    doc, sel = _load_selection(args.dir)
    kind, labels = labels_for_selection(args.labels, sel, args.dir)
    if kind != "label":
        raise LabelwiseError(f"--labels: ranking needs a 'label' column (classes), got '{kind}'")
    if args.predictions is not None:
        preds = load_array(args.predictions, "--predictions")
    elif "predictions" in doc.get("sources", {}):
        preds = _reload_source(doc["sources"], "predictions")
    else:
        raise LabelwiseError("--predictions is required: the selection did not record them")
    if preds.ndim not in (2, 3) or preds.shape[1] != sel.population_size:
        raise LabelwiseError(
            f"--predictions must be (models, {sel.population_size}) or (models, "
            f"{sel.population_size}, classes), got shape {preds.shape}"
        )
    names = None if args.names is None else [n.strip() for n in args.names.split(",")]
    if names is not None and len(names) != preds.shape[0]:
        raise LabelwiseError(f"--names must name all {preds.shape[0]} models, got {len(names)}")
    ranking = rank_models(
        np.asarray(preds),
        labels.astype(np.int64),
        rows=sel.indices,
        model_names=names,
        confidence=args.confidence,
        n_bootstrap=args.bootstrap,
        rng=args.seed,
    )
    write_json(args.dir / "ranking.json", {"ranking": ranking.to_dict(), "method": sel.method})
    print(format_ranking(ranking, sel))
    return 0


def format_ranking(ranking: Any, sel: Selection) -> str:
    pct = f"{ranking.confidence * 100:g}%"
    width = max(5, *(len(n) for n in ranking.model_names))
    lines = [
        f"{len(ranking.model_names)} models ranked on {ranking.n_labelled} labelled rows "
        f"({sel.method} selection of {sel.population_size})",
        "",
        f"  {'rank':>4}  {'model':<{width}}  {'accuracy':>8}  {pct + ' interval':<18}"
        "  P(better than next)",
    ]
    for pos, m in enumerate(ranking.order):
        nxt = f"{ranking.prob_better[pos]:.3f}" if pos < len(ranking.prob_better) else ""
        lines.append(
            f"  {int(ranking.rank[m]):>4}  {ranking.model_names[m]:<{width}}  "
            f"{ranking.accuracy[m]:>8.4f}  [{ranking.ci_low[m]:.4f}, {ranking.ci_high[m]:.4f}]"
            f"  {nxt:>19}"
        )
    return "\n".join(lines)


# --------------------------------------------------------------------------------- capture


def cmd_capture(args: argparse.Namespace) -> int:
    from .adapters.torch import capture, load_model

    inputs = load_array(args.inputs, "--inputs")
    model = load_model(args.model)
    cap = capture(model, inputs, layer=args.layer, head=args.head, batch_size=args.batch_size)
    args.out.mkdir(parents=True, exist_ok=True)
    save_array(args.out / "activations.npy", cap.activations)
    written = ["activations.npy"]
    if cap.head == "softmax":
        save_array(args.out / "probabilities.npy", cap.outputs)
        save_array(args.out / "predictions.npy", cap.outputs.argmax(axis=1).astype(np.int64))
        written += ["probabilities.npy", "predictions.npy"]
    else:
        outputs = cap.outputs[:, 0] if cap.outputs.shape[1] == 1 else cap.outputs
        save_array(args.out / "outputs.npy", outputs)
        save_array(args.out / "predictions.npy", outputs)
        written += ["outputs.npy", "predictions.npy"]
    write_json(
        args.out / "capture.json",
        {
            "model": str(args.model.resolve()),
            "inputs": str(args.inputs.resolve()),
            "layer": cap.layer,
            "head": cap.head,
            "rows": int(cap.activations.shape[0]),
            "neurons": int(cap.activations.shape[1]),
            "outputs": int(cap.outputs.shape[1]),
        },
    )
    print(
        f"captured {cap.activations.shape[0]} rows: layer {cap.layer}, "
        f"{cap.activations.shape[1]} neurons"
    )
    print(f"  wrote {', '.join(written)} and capture.json to {args.out}")
    return 0


# --------------------------------------------------------------------------- dependability


def cmd_dependability(args: argparse.Namespace) -> int:
    from .adapters.torch import capture, load_model
    from .dependability.patterns import plot_activation_pattern
    from .dependability.report import dependability_report

    inputs = load_array(args.inputs, "--inputs")
    labels = _all_labels(args.labels, inputs.shape[0])
    model = load_model(args.model)
    cap = capture(model, inputs, layer=args.layer)
    rep = dependability_report(
        labels=labels,
        probabilities=cap.outputs,
        activations=cap.activations,
        scenarios=None if args.scenarios is None else str(args.scenarios),
        spec=None if args.spec is None else str(args.spec),
        scenario_k=args.k,
        neuron_k=args.neuron_k,
        threshold=args.threshold,
        severity=args.severity,
    )
    args.out.mkdir(parents=True, exist_ok=True)
    written = []
    if plot_activation_pattern(rep.results["activation_pattern"], args.out / "patterns.png"):
        written.append("patterns.png")
    written += _model_metrics(args, model, inputs, labels, rep)
    write_json(args.out / "dependability.json", {"layer": cap.layer, **rep.to_dict()})
    print(f"dependability of {args.model.name} on {labels.size} inputs (layer {cap.layer})\n")
    print(rep.table())
    print(f"\nwrote dependability.json{''.join(', ' + w for w in written)} to {args.out}")
    return 0


def _model_metrics(
    args: argparse.Namespace, model: Any, inputs: np.ndarray, labels: np.ndarray, rep: Any
) -> list[str]:
    """The metrics that need the model itself; returns the plots written."""
    written: list[str] = []
    if args.perturb:
        from .dependability import robustness as rb

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
        rep.add("confidence loss: top 10% mean", loss.top_mean, f"maximum {loss.maximum:.4f}")
        rep.details["confidence_loss"] = loss.to_dict()
        if rb.plot_confidence_loss(loss, args.out / "confidence_loss.png"):
            written.append("confidence_loss.png")
    if args.masks is not None:
        from .dependability import interpretation as ip

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
            f"hot windows on the object, rho {args.rho:g} (II-F)",
        )
        rep.add("occlusion sensitivity covering", res.occsen, "object windows that are hot (II-G)")
        rep.details["interpretation"] = res.to_dict()
        curve = ip.sweep(
            maps.heatmaps, masks, np.linspace(0.05, 0.95, 19), window=window, stride=stride
        )
        if ip.plot_sweep(curve, args.out / "interpretation.png"):
            written.append("interpretation.png")
    return written


def _all_labels(path: Path, n_rows: int) -> np.ndarray:
    """Labels for every input: a .npy of classes or a CSV row,label covering all rows."""
    if path.suffix == ".npy":
        y = np.asarray(load_array(path, "--labels", mmap=False))
        if y.ndim != 1 or y.size != n_rows:
            raise LabelwiseError(f"--labels must hold {n_rows} classes, got shape {y.shape}")
        if y.dtype.kind not in "iu" and not (y.dtype.kind == "f" and np.all(y == np.round(y))):
            raise LabelwiseError("--labels must hold integer classes")
        return y.astype(np.int64)
    rows, kind, values = read_labels_csv(path)
    if kind != "label":
        raise LabelwiseError(f"--labels: needs a 'label' column, got '{kind}'")
    if rows.size != n_rows or set(rows.tolist()) != set(range(n_rows)):
        raise LabelwiseError(f"--labels must label every row 0..{n_rows - 1} exactly once")
    out = np.empty(n_rows, dtype=np.int64)
    out[rows] = values
    return out


# --------------------------------------------------------------------------------- quality


def cmd_quality(args: argparse.Namespace) -> int:
    from .quality.report import plot_quality, quality_report

    train_y = np.asarray(load_array(args.train_labels, "--train-labels", mmap=False))
    test_y = np.asarray(load_array(args.test_labels, "--test-labels", mmap=False))
    if args.model is not None:
        from .adapters.torch import capture, load_model

        if args.train_inputs is None or args.test_inputs is None:
            raise LabelwiseError("--model needs --train-inputs and --test-inputs")
        model = load_model(args.model)
        train = capture(model, load_array(args.train_inputs, "--train-inputs"))
        test = capture(model, load_array(args.test_inputs, "--test-inputs"))
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
    rep = quality_report(
        train_f, train_y, test_f, test_y, test_p, radius=args.radius, lo=args.lo, hi=args.hi
    )
    args.out.mkdir(parents=True, exist_ok=True)
    write_json(args.out / "quality.json", rep.to_dict())
    plot = plot_quality(rep, args.out / "quality.png")
    print(f"test-set quality: {len(test_y)} test inputs, {len(train_y)} training inputs\n")
    print(rep.table())
    print(f"\nwrote quality.json{', quality.png' if plot else ''} to {args.out}")
    return 0


# ------------------------------------------------------------------------------------ demo


def cmd_demo(args: argparse.Namespace) -> int:
    from .demo import run_demo

    return run_demo(
        shift=args.shift,
        mutant=args.mutant,
        budget=args.budget,
        repeats=args.repeats,
        seed=args.seed,
        out=args.out,
    )


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())

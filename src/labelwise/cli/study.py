"""``labelwise study``: reproducible studies of the methods."""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path
from typing import Any

import numpy as np

from .._deps import install_hint
from .._validation import check_int, check_out_dir
from ..exceptions import LabelwiseError
from ..io import write_json
from ..workspace import aside_directory
from ._common import DefaultsHelpFormatter

# the files each study writes into --out (glob patterns): an earlier run's are not replaced
# without --force, which moves them into --out/replaced-<time>/ (as 'select --force' does)
STUDY_FILES = {
    "operational": ("table.csv", "table.json", "small_piles.csv", "sd_*.png"),
    "comparative": ("ranking_*.csv", "comparative.json", "ranking.png"),
    "quality": ("quality_study.json",),
}
FORCE_HELP = "replace an earlier run's tables in --out (they are moved into --out/replaced-<time>/)"


def add_parser(sub: Any) -> None:
    hint = install_hint("mnist1d", extra="study")  # the studies need torch, sklearn, mnist1d
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
            "(SRS, CSS, CES, CES-Eq8, CES-common, Campaign) at sample sizes 35..180 with "
            "repeated draws, and prints the relative efficiency E = MSE(method) / MSE(SRS), then "
            "each method's 95% interval coverage and width w relative to SRS's. Writes "
            "table.csv, table.json, small_piles.csv and PNG plots of the estimator's spread "
            f"against sample size. Needs: {hint}."
        ),
        formatter_class=DefaultsHelpFormatter,
    )
    op.add_argument("--quick", action="store_true", help="6 sizes, 20 repetitions, 10 small piles")
    op.add_argument("--out", type=Path, default=Path("study-out"), help="output directory")
    op.add_argument("--force", action="store_true", help=FORCE_HELP)
    op.add_argument("--seed", type=int, default=0, help="seed for data, models and sampling")
    op.add_argument("--jobs", type=int, default=1, help="worker processes for the repetitions")
    op.add_argument(
        "--repetitions",
        type=int,
        default=None,
        help="draws per size and method (default: 50, or 20 with --quick); coverage of the "
        "95%% intervals is itself uncertain by about +-0.06 at 50 and +-0.02 at 500",
    )
    op.set_defaults(func=cmd_study_operational)
    cp = st_sub.add_parser(
        "comparative",
        help="the SDS paper's Table II: ranking a zoo of models with few labels",
        description=(
            "Reproduces the evaluation of Meng et al. 2021 (Sec. IV-V, Table II, Fig. 4; Sec. "
            "VI): trains a zoo of 28 MNIST-1D classifiers of varied architecture, width, "
            "training length and seed, then for sample sizes 35..180 and repeated draws "
            "measures how well SDS, CES (best of n, an oracle), DDG, RDG, SRS and CPPI (a "
            "RankingCampaign labelling 5 rows a round) rank the models (Spearman's rho, "
            "Jaccard of the top 10, best-model regret, labels until the first-ranked model is "
            "the best in 90% of repetitions) with W/T/L of SDS against each; also the 4-model "
            "case, ranking by majority vote without labels, and four synthetic regimes "
            "(strong and close, weak, spread, 6 models). Writes ranking_*.csv, "
            f"comparative.json and ranking.png. Needs: {hint}."
        ),
        formatter_class=DefaultsHelpFormatter,
    )
    cp.add_argument("--quick", action="store_true", help="6 sizes and 20 repetitions")
    cp.add_argument("--out", type=Path, default=Path("study-out"), help="output directory")
    cp.add_argument("--force", action="store_true", help=FORCE_HELP)
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
            f"Writes quality_study.json. Needs: {hint}."
        ),
        formatter_class=DefaultsHelpFormatter,
    )
    qs.add_argument("--quick", action="store_true", help="generated sets of 100 and 300 only")
    qs.add_argument("--out", type=Path, default=Path("study-out"), help="output directory")
    qs.add_argument("--force", action="store_true", help=FORCE_HELP)
    qs.add_argument("--seed", type=int, default=0, help="seed for data, models and generation")
    qs.set_defaults(func=cmd_study_quality)
    st.set_defaults(func=lambda a: _missing_study(st))


def cmd_study_comparative(args: argparse.Namespace) -> int:
    from ..experiments.comparative import (
        ComparativeConfig,
        format_table,
        run_comparative_study,
        write_outputs,
    )

    _check_out(args, "comparative")  # before the study runs, not when it writes
    config = ComparativeConfig.quick(args.seed) if args.quick else ComparativeConfig(seed=args.seed)
    print(
        f"comparative study ({'quick' if args.quick else 'full'}): sizes "
        f"{config.sizes[0]}..{config.sizes[-1]}, {config.repetitions} repetitions, seed {args.seed}"
    )
    cs = run_comparative_study(config)
    from ..experiments.comparative import run_regime_study
    from ..experiments.ranking_study import format_table as format_regimes

    cs.regimes = run_regime_study(quick=args.quick, seed=args.seed)
    n_models = len(cs.main.model_names)
    print(f"\nRanking {n_models} models (Table II layout; W/T/L of SDS against each baseline):")
    print(format_table(cs.main))
    print(f"\nFewer models: {len(cs.few.model_names)} (Sec. VI):")
    print(format_table(cs.few, k=1))
    for label, vote in (("zoo", cs.vote_main), ("4 models", cs.vote_few)):
        parts = ", ".join(f"{k} {v:.3f}" for k, v in vote.items())
        print(f"\nMajority vote as labels, no labelling at all ({label}): {parts}")
    print("\nSynthetic regimes (labelwise.experiments.ranking_study; 'campaign' is CPPI):")
    print(format_regimes(cs.regimes))
    aside = _set_aside(args.out, "comparative")
    written = write_outputs(cs, args.out)
    print(f"\nwrote {', '.join(written)} to {args.out} ({cs.seconds:.0f} s)")
    _note_aside(aside, "comparative")
    return 0


def cmd_study_quality(args: argparse.Namespace) -> int:
    from ..experiments.quality_study import format_quality_table, run_quality_study

    _check_out(args, "quality")  # before the study runs, not when it writes
    sizes = (100, 300) if args.quick else (100, 300, 700, 1000)
    print(f"quality study ({'quick' if args.quick else 'full'}), seed {args.seed}")
    rows = run_quality_study(seed=args.seed, sizes=sizes)
    print("\nTest-set quality (Table 1 layout):")
    print(format_quality_table(rows))
    print("\nHead accuracy on generated points, centroid-boundary splits (Table 2 layout):")
    for r in rows:
        print(r.generation.format_table(dataset=r.dataset, model=r.model))
    aside = _set_aside(args.out, "quality")
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
    _note_aside(aside, "quality")
    return 0


def _earlier(out: Path, study: str) -> list[Path]:
    """The files of an earlier ``study`` run in ``out`` (:data:`STUDY_FILES`)."""
    if not out.is_dir():
        return []
    found = {p for pattern in STUDY_FILES[study] for p in out.glob(pattern) if p.is_file()}
    return sorted(found)


def _check_out(args: argparse.Namespace, study: str) -> None:
    """Before the study runs: ``--out`` must be a directory, and one holding an earlier run's
    tables needs ``--force`` (a study takes minutes to hours; its tables were replaced
    without a word)."""
    check_out_dir(args.out, "--out")
    earlier = _earlier(args.out, study)
    if earlier and not args.force:
        raise LabelwiseError(
            f"--out {args.out} holds the tables of an earlier {study} study "
            f"({', '.join(p.name for p in earlier)}); give another --out, or --force to "
            f"move them into {args.out / 'replaced-<time>'} and write the new ones"
        )


def _set_aside(out: Path, study: str) -> Path | None:
    """After the run, before writing (``--force``): the earlier run's files moved into a new
    ``out/replaced-<time>/`` (returned; None when there were none)."""
    earlier = _earlier(out, study)
    if not earlier:
        return None
    aside = aside_directory(out)
    for p in earlier:
        p.replace(aside / p.name)
    return aside


def _note_aside(aside: Path | None, study: str) -> None:
    if aside is not None:
        print(f"  the earlier {study} study's tables are now in {aside}")


def _missing_study(parser: argparse.ArgumentParser) -> int:
    parser.print_help()
    return 2


def cmd_study_operational(args: argparse.Namespace) -> int:
    if args.repetitions is not None and args.repetitions < 2:
        raise LabelwiseError(f"--repetitions must be at least 2, got {args.repetitions}")
    check_int(args.jobs, "--jobs", minimum=1)
    _check_out(args, "operational")  # before the study runs, not when it writes
    from ..experiments.operational import (
        PAPER_TABLE1,
        StudyConfig,
        format_table,
        run_operational_study,
        write_outputs,
    )

    config = (StudyConfig.quick if args.quick else StudyConfig)(seed=args.seed, n_jobs=args.jobs)
    if args.repetitions is not None:
        config = dataclasses.replace(config, repetitions=args.repetitions)
    print(
        f"operational study ({'quick' if args.quick else 'full'}): sizes "
        f"{config.sizes[0]}..{config.sizes[-1]}, {config.repetitions} repetitions, seed {args.seed}"
    )
    study = run_operational_study(config)
    print()
    print(format_table(study))
    print()
    print(PAPER_TABLE1)
    aside = _set_aside(args.out, "operational")
    written = write_outputs(study, args.out)
    print(f"\nwrote {', '.join(written)} to {args.out} ({study.seconds:.0f} s)")
    _note_aside(aside, "operational")
    return 0

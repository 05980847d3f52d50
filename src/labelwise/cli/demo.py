"""``labelwise demo``: the end-to-end demo on scikit-learn's digits."""

from __future__ import annotations

import argparse
import re
from pathlib import Path
from typing import Any

from .._deps import install_hint
from ..exceptions import LabelwiseError
from ._common import DefaultsHelpFormatter


def add_parser(sub: Any) -> None:
    d = sub.add_parser(
        "demo",
        help="end-to-end demo on scikit-learn's digits with a shifted operational pile",
        description=(
            "Trains a small CNN on half of scikit-learn's digits, builds an operational pile "
            "from the other half with a shift, then runs SRS, CSS, CES, CES with the paper's "
            "Eq. 8 objective (CES-Eq8) and a sequential Campaign at one budget and prints each "
            "estimate, its interval and the true accuracy, followed by a repeated comparison "
            "of their spread (E vs SRS, coverage, interval width w). Writes --out: the pile's "
            "arrays, a selection directory per sampler (srs, css, ces, ces-eq8) with the "
            "labels of its rows, demo.json and spread.png, to try the other commands on. Needs: "
            f"{install_hint('torch', extra='torch')}."
        ),
        formatter_class=DefaultsHelpFormatter,
    )
    d.add_argument(
        "--shift",
        choices=["none", "patch", "light", "resolution"],
        default="patch",
        help="how the operational pile differs from the training digits: none, an occluding "
        "patch, brighter images, lower resolution",
    )
    d.add_argument("--mutant", default=None, help="train on swapped labels, e.g. 8-0")
    d.add_argument("--budget", type=int, default=100, help="labels per method")
    d.add_argument("--repeats", type=int, default=50, help="repetitions for the spread comparison")
    d.add_argument("--seed", type=int, default=0, help="seed for data, model and sampling")
    d.add_argument(
        "--out",
        type=Path,
        default=Path("labelwise-demo"),
        help="output directory: new, or one an earlier demo wrote, with nothing changed or "
        "added there since (a selection extended, a campaign started there: refused without "
        "--force)",
    )
    d.add_argument(
        "--force",
        action="store_true",
        help="move the work in --out that the demo did not write (an extended selection, a "
        "campaign, other files) into --out/replaced-<time>/ and run the demo there",
    )
    d.set_defaults(func=cmd_demo)


def cmd_demo(args: argparse.Namespace) -> int:
    from ..demo import run_demo

    if args.mutant is not None:
        _check_mutant(args.mutant)
    return run_demo(
        shift=args.shift,
        mutant=args.mutant,
        budget=args.budget,
        repeats=args.repeats,
        seed=args.seed,
        out=args.out,
        force=args.force,
    )


def _check_mutant(text: str) -> None:
    """--mutant: pairs of two different digit classes, each class in one pair at most (the
    library said 'mutant must look like ...' and 'each pair must hold ...', without the
    flag, and did not say the classes are the digits 0 to 9)."""
    seen: set[str] = set()
    for part in text.split(","):
        match = re.fullmatch(r"\s*(\d)\s*-\s*(\d)\s*", part)
        pair = None if match is None else match.groups()
        if pair is None or pair[0] == pair[1] or seen & set(pair):
            raise LabelwiseError(
                "--mutant must be pairs of two different digit classes (0 to 9) to swap, each "
                f"class in one pair at most, e.g. 8-0 or 8-0,7-1; got {text!r}"
            )
        seen.update(pair)

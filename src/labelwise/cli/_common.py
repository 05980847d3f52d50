"""Pieces shared by the subcommands: seeds, number lists, probability checks."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any, cast

import numpy as np

from .._validation import PROBS_TOLERANCE, check_probabilities
from ..exceptions import LabelwiseError

__all__ = [
    "PROBS_TOLERANCE",
    "DefaultsHelpFormatter",
    "check_probabilities",
    "check_seed",
    "fresh_seed",
]


class DefaultsHelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """Shows an option's default, but not None or False (an option not given, a flag off),
    which only repeat what the help says."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        if action.default is None or action.default is False:
            return action.help
        return super()._get_help_string(action)


def fresh_seed() -> int:
    """A random seed from the OS, recorded in selection.json so the run can be repeated."""
    return int(np.random.SeedSequence().generate_state(1, np.uint64)[0] >> 1)


def check_seed(args: Any) -> None:
    """Every command's ``--seed`` must be a non-negative integer (NumPy's rule), or absent;
    ``--n-classes``, where a command has it, at least 2."""
    seed = getattr(args, "seed", None)
    if seed is not None and seed < 0:
        raise LabelwiseError(f"--seed must be a non-negative integer, got {seed}")
    n_classes = getattr(args, "n_classes", None)
    if n_classes is not None and n_classes < 2:
        raise LabelwiseError(f"--n-classes must be at least 2, got {n_classes}")


def default_probs(ws: Any) -> Path | None:
    """``--probs`` left out: the capture's ``probabilities.npy`` beside the recorded sources
    (:meth:`labelwise.workspace.Workspace.capture_probabilities`), announced; else None.

    A selection or campaign made from ``--activations`` alone used to record no model output:
    ``estimate``, ``label`` and ``report`` then asked for ``--predictions``, and a campaign
    silently became a regression one that refused class labels.
    """
    found = ws.capture_probabilities()
    if found is not None:
        print(f"--probs not given: using {found} (the model's probabilities from the capture)")
    return cast(Path | None, found)

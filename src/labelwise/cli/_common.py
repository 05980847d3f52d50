"""Pieces shared by the subcommands: seeds, number lists, probability checks."""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..exceptions import LabelwiseError

PROBS_TOLERANCE = 1e-3  # float32 softmax rows sum to 1 within ~1e-6; CSV round trips less


def fresh_seed() -> int:
    """A random seed from the OS, recorded in selection.json so the run can be repeated."""
    return int(np.random.SeedSequence().generate_state(1, np.uint64)[0] >> 1)


def check_seed(args: Any) -> None:
    """Every command's ``--seed`` must be a non-negative integer (NumPy's rule), or absent."""
    seed = getattr(args, "seed", None)
    if seed is not None and seed < 0:
        raise LabelwiseError(f"--seed must be a non-negative integer, got {seed}")


def check_probabilities(arr: NDArray[Any], flag: str) -> None:
    """``arr`` must be (N, C) class probabilities or (N,) confidences.

    Each value in [0, 1] and, for (N, C), each row summing to 1 within
    :data:`PROBS_TOLERANCE`: logits and regression outputs are rejected with a hint.
    """
    a = np.asarray(arr)
    hint = (
        "; logits or regression outputs? Save softmax probabilities, e.g. with "
        "'labelwise capture --head softmax'"
    )
    if a.ndim not in (1, 2) or a.dtype.kind not in "fiub" or a.size == 0:
        raise LabelwiseError(
            f"{flag} must be (N, C) class probabilities or (N,) confidences, got shape "
            f"{a.shape} of {a.dtype}"
        )
    a = a.astype(np.float64, copy=False)
    lo, hi = float(np.nanmin(a)), float(np.nanmax(a))
    if not np.isfinite(a).all() or lo < 0.0 or hi > 1.0:
        raise LabelwiseError(
            f"{flag} must hold probabilities in [0, 1], got values in [{lo:.4g}, {hi:.4g}]{hint}"
        )
    if a.ndim == 2:
        off = np.abs(a.sum(axis=1) - 1.0)
        bad = int(np.argmax(off))
        if off[bad] > PROBS_TOLERANCE:
            raise LabelwiseError(
                f"{flag} must have rows summing to 1, got row {bad} summing to "
                f"{a[bad].sum():.4g}{hint}"
            )

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
    "check_model_stack",
    "check_probabilities",
    "check_probs_beside",
    "check_seed",
    "fresh_seed",
    "known_class_count",
    "remove_earlier_plots",
]


class DefaultsHelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """Shows an option's default, but not None or False (an option not given, a flag off),
    which only repeat what the help says."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        if action.default is None or action.default is False:
            return action.help
        return super()._get_help_string(action)


def check_model_stack(preds: Any, flag: str, n_rows: int | None = None, path: Any = None) -> None:
    """``preds`` must be M models' outputs over the pile: (M, N) classes or (M, N, C)
    probabilities (N = ``n_rows`` when known). One model's capture given instead (its
    predictions.npy, (N,), or probabilities.npy, (N, C) non-integer) is named as such, with
    how to stack several captures: the error said only which shapes it takes. More models
    than inputs (an (N, M) table) is named as transposed, with how to swap ``path``'s axes:
    the error was a budget out of range of a 6-row "pile"."""
    shape = tuple(preds.shape)
    n = "inputs" if n_rows is None else str(n_rows)
    head = f"{flag} must be (models, {n}) or (models, {n}, classes), got shape {shape}"
    sample = np.asarray(preds[:8]) if len(shape) == 2 else None
    finite = np.zeros((0, 0))
    if sample is not None and sample.dtype.kind == "f":
        finite = sample[np.isfinite(sample).all(axis=1)]
    fractions = finite[finite != np.round(finite)]
    # one model's (N, C) probabilities: rows in [0, 1] summing to 1 (rounded, as in a CSV);
    # other fractions, e.g. (3, 40) scores or confidences of 3 models, are not class labels
    # either, and were named as one model's probabilities
    one_probs = bool(fractions.size) and bool(
        np.all((finite >= 0) & (finite <= 1)) and np.all(np.abs(finite.sum(axis=1) - 1) <= 0.05)
    )
    if len(shape) == 1 or one_probs:
        what = "predictions (N,)" if len(shape) == 1 else "probabilities (N, C)"
        raise LabelwiseError(
            f"{head}: one model's {what}, as one capture writes them; stack the models' "
            'files, one per model in the same row order, into one: python -c "import numpy '
            "as np; np.save('preds.npy', np.stack([np.load(f) for f in ['a/predictions.npy', "
            "'b/predictions.npy']]))\" (numpy.stack of probabilities.npy files gives (M, N, C))"
        )
    if fractions.size:
        raise LabelwiseError(
            f"{head}: a 2-D array holds class labels, whole numbers, got {fractions[0]:.4g} "
            f"in the first rows; scores or confidences of {shape[0]} models? Give the models' "
            "predicted classes, (models, inputs) (np.argmax over each model's classes), or "
            "their probabilities, (models, inputs, classes)"
        )
    if len(shape) in (2, 3) and shape[0] > shape[1] and shape[0] == (n_rows or shape[0]):
        # (N, M) as pandas or a list of per-input rows gives it: more models than inputs
        axes = "(models, inputs)" if len(shape) == 2 else "(models, inputs, classes)"
        # a new file beside the given one: 'preds.npy' overwrote whatever the user had there
        # (often another predictions file of the same project) when the line was pasted
        target = (
            "preds_models_first.npy"
            if path is None
            else str(Path(path).with_name(f"{Path(path).stem}_models_first.npy"))
        )
        raise LabelwiseError(
            f"{head}: {shape[0]} models of {shape[1]} inputs each, more models than inputs; "
            f'is it transposed? save it as {axes}: python -c "import numpy as np; '
            f"np.save('{target}', np.swapaxes(np.load('{path or 'FILE'}'), 0, 1))\""
        )
    if len(shape) not in (2, 3) or (n_rows is not None and shape[1] != n_rows):
        raise LabelwiseError(head)


def check_probs_beside(probs: Any, activations: Any) -> None:
    """:func:`check_probabilities` of ``--probs``; when it fails and the ``--activations``
    rows are probabilities themselves (in [0, 1], summing to 1: the first 256 rows looked at),
    the message asks whether the two files were swapped instead (it said that --probs were
    logits, pointing at 'capture --head softmax')."""
    try:
        check_probabilities(probs, "--probs")
    except LabelwiseError as exc:
        head = None if activations is None else np.asarray(activations[:256], dtype=np.float64)
        if (
            head is not None
            and head.ndim == 2
            and head.shape[1] > 1
            and bool(np.all((head >= 0) & (head <= 1)))
            and bool(np.all(np.abs(head.sum(axis=1) - 1.0) <= PROBS_TOLERANCE))
        ):
            first = str(exc).split("; ")[0]  # without the hint about logits
            raise LabelwiseError(
                f"{first}, while the --activations rows are probabilities (each sums to 1): "
                "are --activations and --probs swapped?"
            ) from None
        raise


def known_class_count(ws: Any) -> int | None:
    """How many classes a ranking selection's labels may name: its class names' count, else
    C of its recorded (M, N, C) probabilities (read off the recorded shape); None for (M, N)
    classes without names (a label no model predicts is legal there, and only noted)."""
    names = ws.classes()
    if names is not None:
        return len(names)
    shape = list((ws.sources.get("predictions") or {}).get("shape") or [])
    return int(shape[2]) if len(shape) == 3 else None


def check_confidence_flag(value: float, flag: str = "--confidence") -> None:
    """``--confidence`` (or another level) in (0, 1); a percentage such as 95 is named as one.
    Checked before anything is read or written."""
    if not 0 < value < 1:
        hint = f" (a share: {value / 100:g} for {value:g} %)" if 50 <= value < 100 else ""
        raise LabelwiseError(f"{flag} must be in (0, 1){hint}, got {value:g}")


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


def remove_earlier_plots(out: Path, plots: tuple[str, ...], written: list[str]) -> list[str]:
    """Remove from ``out`` the files of ``plots`` this run did not write (``written``), and
    return their names: an earlier run's plot left beside this run's results would pass for
    one of its own (a confidence loss, a quality chart it did not compute)."""
    stale = [n for n in plots if n not in written and (out / n).is_file()]
    for name in stale:
        (out / name).unlink()
    return stale


def earlier_plots_note(stale: list[str]) -> str:
    """The line that names the plots :func:`remove_earlier_plots` removed."""
    return f"  removed {', '.join(stale)} of an earlier run (not made by this one)"

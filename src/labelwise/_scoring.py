"""Labels to per-row scores for a selection: what ``labelwise estimate`` and the report share.

A selection's labels (``row,label`` / ``row,target`` / ``row,score``) become per-row scores
(1/0 correct, 1 - squared error, or the score itself) against the model's predictions over
the pile: the ``--predictions`` file when given, else the probabilities recorded with the
selection.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ._chunks import pick_rows
from ._results import Selection
from ._validation import MAX_MAGNITUDE, check_classes_in_range, check_probabilities
from .estimation import correctness, regression_scores
from .exceptions import LabelwiseError
from .io import load_array, shell_arg
from .workspace import Workspace

__all__ = ["check_regression_magnitude", "selection_predictions", "selection_scores"]


def selection_predictions(
    ws: Workspace, sel: Selection, predictions: str | Path | None = None
) -> tuple[NDArray[Any], str]:
    """The model's predictions over the pile (``predictions`` or the recorded ``--probs``)
    at the selected rows, in selection order, and the flag that names where they came from."""
    if predictions is None:
        if not ws.has_source("probs"):
            outputs = ws.capture_outputs()
            hint = (
                f": give --predictions {shell_arg(outputs)} (the model's outputs "
                "'labelwise capture' wrote beside the activations)"
                if outputs is not None
                else ""
            )
            raise LabelwiseError(
                "--predictions is required: the selection did not record model probabilities" + hint
            )
        preds = ws.load_source("probs")
        flag = "the --probs recorded in selection.json"
    else:
        preds = load_array(predictions, "--predictions")
        flag = "--predictions"
    if preds.shape[0] != sel.population_size:
        raise LabelwiseError(
            f"--predictions must have one row per pile row ({sel.population_size}), "
            f"got {preds.shape[0]}"
        )
    picked = pick_rows(preds, sel.indices)  # only the selected rows are read
    return picked, flag


def check_regression_magnitude(
    rows: NDArray[Any], predictions: NDArray[Any], targets: NDArray[Any], flag: str
) -> None:
    """A target or prediction above :data:`MAX_MAGNITUDE` (its squared error overflows):
    an error naming the pile row. :func:`regression_scores` names only the position in the
    labelled rows ("got a larger value at position 0"), which no file shows."""
    for what, arr in (("--labels: target", targets), (f"{flag}: prediction", predictions)):
        values = np.asarray(arr, dtype=np.float64).reshape(len(rows), -1)
        big = np.flatnonzero((np.abs(values) > MAX_MAGNITUDE).any(axis=1))
        if big.size:
            i = int(big[0])
            value = float(values[i][np.abs(values[i]) > MAX_MAGNITUDE][0])
            raise LabelwiseError(
                f"{what} of row {int(rows[i])} is {value:g}, above "
                f"{MAX_MAGNITUDE:g} in magnitude (its squared error would not fit a float64); "
                "is it in other units? Rescale the targets and the model's outputs alike"
            )


def selection_scores(
    ws: Workspace,
    sel: Selection,
    kind: str,
    values: NDArray[Any],
    *,
    predictions: str | Path | None = None,
    n_classes: int | None = None,
) -> tuple[NDArray[np.float64], str | None]:
    """Per-row scores (selection order) and the metric (``"accuracy"``, ``"1-MSE"``, None).

    ``kind`` and ``values`` are what :meth:`Workspace.read_labels` returns. Labels outside
    ``[0, n_classes)`` (``n_classes`` defaults to the probabilities' columns) are errors.
    """
    if kind == "score":
        return values.astype(np.float64), None
    picked, flag = selection_predictions(ws, sel, predictions)
    if kind == "target":
        width = 1 if picked.ndim == 1 else int(np.prod(picked.shape[1:]))
        if width != (1 if values.ndim == 1 else int(np.prod(values.shape[1:]))):
            raise LabelwiseError(
                f"the labels file has a 'target' column (regression) but {flag} holds "
                f"{picked.shape[1:]} values per row (class probabilities?): for a classifier "
                "give a 'label' column with the true class; for regression give --predictions "
                "with the model's outputs"
            )
        check_regression_magnitude(sel.indices, picked, values, flag)
        return regression_scores(picked, values), "1-MSE"
    if picked.ndim == 2:
        check_probabilities(picked, flag)
    if picked.ndim == 1 and picked.dtype.kind == "f" and not np.all(picked == np.round(picked)):
        if predictions is None:  # the selection's --probs were (N,) confidences
            raise LabelwiseError(
                f"{flag} are (N,) confidences, which do not say which class the model "
                "predicted; give --predictions with the model's (N,) predicted classes or "
                "(N, C) probabilities"
            )
        raise LabelwiseError(
            "--predictions holds non-integer values; for regression give a 'target' column"
        )
    why = "--n-classes {n}" if n_classes is not None else f"the {{n}} columns of {flag}"
    if n_classes is None and picked.ndim == 2:
        n_classes = int(picked.shape[1])
    if n_classes is not None:
        check_classes_in_range(values, n_classes, "--labels", rows=sel.indices, why=why)
    return correctness(picked, values, n_classes=n_classes), "accuracy"

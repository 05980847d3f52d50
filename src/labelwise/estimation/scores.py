"""Per-sample scores H whose mean is the reported metric (Li et al. 2019, Sec. 2.3)."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .._validation import check_classes_in_range, check_finite_array, check_magnitude
from ..exceptions import LabelwiseError

__all__ = ["correctness", "regression_scores"]


def correctness(
    predictions: ArrayLike, labels: ArrayLike, *, n_classes: int | None = None
) -> NDArray[np.float64]:
    """H(x) = 1 if the prediction equals the label, else 0; its mean is the accuracy.

    ``predictions`` may be class indices (N,) or class probabilities (N, C) (argmax is
    used; then ``n_classes`` defaults to C). Labels outside ``[0, n_classes)`` are errors.
    """
    pred = check_finite_array(predictions, "predictions", ndim=(1, 2))
    lab = check_finite_array(labels, "labels", ndim=1)
    why = None if n_classes is not None else "the {n} columns of the probabilities"
    if pred.ndim == 2:
        n_classes = pred.shape[1] if n_classes is None else n_classes
        pred = pred.argmax(axis=1)
    if pred.shape[0] != lab.shape[0]:
        raise LabelwiseError(
            f"labels must have one entry per prediction ({pred.shape[0]}), got {lab.shape[0]}"
        )
    for arr, name in ((pred, "predictions"), (lab, "labels")):
        if arr.dtype.kind == "f" and not np.all(arr == np.round(arr)):
            raise LabelwiseError(f"{name} must be integer class indices")
    lab = lab.astype(np.int64)
    if n_classes is not None:
        check_classes_in_range(lab, n_classes, "labels", why=why)
    return (pred.astype(np.int64) == lab).astype(np.float64)


def regression_scores(predictions: ArrayLike, targets: ArrayLike) -> NDArray[np.float64]:
    """H(x) = 1 - (prediction - target)^2; its mean is the paper's 1-MSE (Table 1, note b)."""
    pred = np.asarray(check_finite_array(predictions, "predictions", ndim=(1, 2)), dtype=np.float64)
    tgt = np.asarray(check_finite_array(targets, "targets", ndim=(1, 2)), dtype=np.float64)
    pred = pred.reshape(pred.shape[0], -1)
    tgt = tgt.reshape(tgt.shape[0], -1)
    if pred.shape != tgt.shape:
        raise LabelwiseError(
            f"targets must have the predictions' shape {pred.shape}, got {tgt.shape}"
        )
    for arr, name in ((tgt, "targets"), (pred, "predictions")):  # else the square overflows
        check_magnitude(
            arr,
            name,
            why="their squared errors must fit a float64",
            fix="rescale the targets and the model's outputs",
            unit="position",
        )
    return 1.0 - ((pred - tgt) ** 2).mean(axis=1)

"""Weighted accuracy / confusion metric (Cheng et al. 2018, Sec. II-H, Table I).

Not every misclassification is equally bad: confusing a pedestrian for background is more
critical than the opposite. A *severity matrix* ``W`` (C x C) gives each kind of error a cost:

    ``W[i, j]`` = cost of predicting class ``j`` when the true class is ``i``
    (rows = truth, "A" in Table I; columns = prediction, "B": "A is classified to B").

``W`` is non-negative, finite, has a zero diagonal (a correct prediction costs nothing) and at
least one positive entry. The paper gives no formula, only the weights ("a technique standard in
performance evaluation"); labelwise reports, for confusion counts ``M[i, j]`` over ``N`` inputs:

* ``weighted = M * W`` (element-wise), the weighted confusion table;
* ``weighted_error = sum(M * W) / N``, the mean cost per input, in the units of ``W``;
* ``normalised_weighted_error = weighted_error / max(W)`` in [0, 1]: 0 when every prediction is
  correct, 1 when every input suffers the worst error in ``W``. The paper is silent on scaling;
  this normalisation is labelwise's choice, made so that values under different severity scales
  compare, and so that any ``W`` with all off-diagonal entries equal gives the plain error rate;
* ``weighted_accuracy = 1 - normalised_weighted_error`` (the paper's "weighted accuracy");
* ``per_class_weighted_error[i] = sum_j M[i, j] W[i, j] / sum_j M[i, j]``, the mean cost of an
  input whose true class is ``i`` (NaN, with a warning, for classes absent from ``labels``).

The paper's Table I ships as ``"paper-table1"`` (see :func:`load_severity`).
"""

from __future__ import annotations

import json
import os
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from types import MappingProxyType
from typing import Any, ClassVar

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .._contract import Result, _readonly
from .._validation import MAX_MAGNITUDE
from ..exceptions import DegenerateDataWarning, LabelwiseError, user_stacklevel
from ..io import read_json

__all__ = [
    "SEVERITY_NAMES",
    "SeverityMatrix",
    "WeightedConfusion",
    "load_severity",
    "weighted_confusion",
]

#: Severity matrices shipped with labelwise, by name -> file in ``labelwise/dependability/data``.
SEVERITY_NAMES: Mapping[str, str] = {"paper-table1": "severity_table1.json"}

_JSON_KEYS = frozenset({"classes", "severity", "description", "source"})

ClassName = str | int


@dataclass(frozen=True, eq=False)
class SeverityMatrix:
    """A validated severity matrix with its class names.

    Attributes
    ----------
    weights:
        (C, C) float64, read-only. ``weights[i, j]`` is the cost of predicting class ``j`` when
        the true class is ``i`` (rows = truth, columns = prediction). Non-negative, finite, zero
        diagonal, at least one positive entry.
    classes:
        C distinct class names (str or int); ``(0, 1, ..., C-1)`` when none were given.
    description:
        Free text, e.g. where the weights come from.
    """

    weights: NDArray[np.float64]
    classes: tuple[ClassName, ...] = ()
    description: str = ""

    def __post_init__(self) -> None:
        w = _check_weights(self.weights, "severity")
        names = tuple(range(w.shape[0])) if not self.classes else _check_classes(self.classes)
        if len(names) != w.shape[0]:
            raise LabelwiseError(
                f"classes must name every row of the {w.shape[0]} x {w.shape[0]} severity "
                f"matrix, got {len(names)} names"
            )
        object.__setattr__(self, "weights", _readonly(w))
        object.__setattr__(self, "classes", names)

    @property
    def n_classes(self) -> int:
        return int(self.weights.shape[0])

    @property
    def max_weight(self) -> float:
        return float(self.weights.max())

    def reordered(self, classes: Sequence[ClassName]) -> SeverityMatrix:
        """The same weights with rows and columns in the order of ``classes`` (same names)."""
        names = _check_classes(classes)
        if set(names) != set(self.classes) or len(names) != len(self.classes):
            raise LabelwiseError(
                f"classes must name the same classes as severity {list(self.classes)}, "
                f"got {list(names)}"
            )
        pos = {c: k for k, c in enumerate(self.classes)}
        order = np.array([pos[c] for c in names], dtype=np.int64)
        return SeverityMatrix(self.weights[np.ix_(order, order)], names, self.description)

    def to_dict(self) -> dict[str, Any]:
        """The JSON config format read by :func:`load_severity`."""
        out: dict[str, Any] = {
            "classes": list(self.classes),
            "severity": [[_num(v) for v in row] for row in self.weights.tolist()],
        }
        if self.description:
            out["description"] = self.description
        return out


def load_severity(path_or_name: str | os.PathLike[str]) -> SeverityMatrix:
    """A severity matrix from a JSON file, or a shipped one by name.

    Names: ``"paper-table1"`` is Table I of Cheng et al. 2018 (classes pedestrian, vehicle,
    background). The paper's weights are qualitative (a number of "+" signs); the shipped file
    uses the number of "+" signs as the weight, so only ratios carry meaning (the normalised
    weighted error does not depend on the scale). A registered name takes precedence over a file
    of the same name in the working directory (write ``./paper-table1`` to read such a file).

    File format::

        {"classes": ["pedestrian", "vehicle", "background"],
         "severity": [[0, 4, 8], [2, 0, 6], [2, 2, 0]],
         "description": "optional free text"}

    ``severity[i][j]`` is the cost of predicting ``classes[j]`` when the truth is ``classes[i]``.
    ``classes`` is optional (default ``0 .. C-1``).
    """
    if isinstance(path_or_name, str) and path_or_name in SEVERITY_NAMES:
        resource = (
            resources.files("labelwise") / "dependability" / "data" / SEVERITY_NAMES[path_or_name]
        )
        try:
            obj = json.loads(resource.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as exc:  # pragma: no cover - broken install
            raise LabelwiseError(
                f"severity {path_or_name!r}: the shipped file cannot be read ({exc}); "
                "reinstall labelwise"
            ) from None
        return _severity_from_json(obj, f"severity {path_or_name!r}")
    if not isinstance(path_or_name, str | os.PathLike):
        raise LabelwiseError(
            f"path_or_name must be a file path or one of {sorted(SEVERITY_NAMES)}, "
            f"got {path_or_name!r}"
        )
    path = Path(path_or_name)
    if not path.exists() and not path.suffix and str(path_or_name) == path.name:
        raise LabelwiseError(
            f"path_or_name {str(path_or_name)!r} is neither a file nor a shipped severity "
            f"matrix (names: {sorted(SEVERITY_NAMES)})"
        )
    return _severity_from_json(read_json(path, "severity"), f"severity file {path}")


@dataclass(frozen=True, eq=False)
class WeightedConfusion(Result):
    """Confusion counts weighted by a severity matrix (Sec. II-H); arrays are read-only.

    Attributes
    ----------
    classes:
        The C class names, in the order of the rows and columns below.
    severity:
        (C, C) ``W``: ``W[i, j]`` = cost of predicting class ``j`` when the truth is ``i``.
    counts:
        (C, C) int64 confusion matrix: ``counts[i, j]`` = inputs of true class ``i``
        predicted as ``j`` (rows = truth, columns = prediction, like ``W``).
    weighted:
        (C, C) ``counts * severity``, the weighted confusion table.
    n:
        N, the number of inputs.
    error_rate:
        Plain (unweighted) share of misclassified inputs.
    weighted_error:
        ``weighted.sum() / N``: mean cost per input, in the units of ``W``.
    normalised_weighted_error:
        ``weighted_error / max(W)`` in [0, 1] (labelwise's normalisation, see module docs).
    weighted_accuracy:
        ``1 - normalised_weighted_error``; the headline ``value`` (higher is better).
    class_counts:
        (C,) inputs per true class.
    per_class_weighted_error:
        (C,) mean cost of the inputs of each true class; NaN for classes absent from the labels.
    notes:
        What was noticed about the data (e.g. absent classes).
    """

    higher_is_better: ClassVar[bool | None] = True
    _json_head: ClassVar[Mapping[str, Any]] = MappingProxyType({"metric": "weighted_confusion"})

    classes: tuple[ClassName, ...]
    severity: NDArray[np.float64]
    counts: NDArray[np.int64]
    weighted: NDArray[np.float64]
    n: int
    error_rate: float
    weighted_error: float
    normalised_weighted_error: float
    weighted_accuracy: float
    class_counts: NDArray[np.int64]
    per_class_weighted_error: NDArray[np.float64]
    notes: tuple[str, ...] = ()

    @property
    def value(self) -> float:
        """``weighted_accuracy``."""
        return self.weighted_accuracy

    def table(self) -> str:
        """The confusion counts and the weighted table as aligned plain text."""
        names = [str(c) for c in self.classes]
        head = "true \\ predicted"
        first = max(len(head), *(len(s) for s in names))

        def block(title: str, cells: list[list[str]], last: str) -> list[str]:
            cols = [*names, last]
            width = [max(len(cols[k]), *(len(r[k]) for r in cells)) for k in range(len(cols))]

            def line(first_cell: str, row: list[str]) -> str:
                right = (v.rjust(w) for v, w in zip(row, width, strict=True))
                return "  ".join([first_cell.ljust(first), *right])

            return [title, line(head, cols)] + [
                line(nm, row) for nm, row in zip(names, cells, strict=True)
            ]

        count_cells = [
            [*(str(int(v)) for v in row), str(int(total))]
            for row, total in zip(self.counts, self.class_counts, strict=True)
        ]
        weighted_cells = [
            [*(_fmt(v) for v in row), "n/a" if np.isnan(e) else _fmt(e)]
            for row, e in zip(self.weighted, self.per_class_weighted_error, strict=True)
        ]
        lines = block("counts (rows: true class, columns: predicted class)", count_cells, "n")
        lines.append("")
        lines += block("weighted = counts x severity", weighted_cells, "mean cost")
        lines += [
            "",
            f"inputs: {self.n}   error rate: {self.error_rate:.4f}",
            f"weighted error (mean cost per input): {self.weighted_error:.4f}",
            f"normalised weighted error (/ max severity {_fmt(float(self.severity.max()))}): "
            f"{self.normalised_weighted_error:.4f}   weighted accuracy: "
            f"{self.weighted_accuracy:.4f}",
        ]
        return "\n".join(lines)


def weighted_confusion(
    labels: ArrayLike,
    predictions: ArrayLike,
    severity: SeverityMatrix | ArrayLike | str | os.PathLike[str],
    *,
    classes: Sequence[ClassName] | None = None,
) -> WeightedConfusion:
    """Weighted confusion of a classifier (Cheng et al. 2018, Sec. II-H).

    Parameters
    ----------
    labels:
        (N,) true classes: class names from ``classes`` (or from the severity file), or integer
        indices 0..C-1 (indices are used when the class names are strings and the labels are
        integers).
    predictions:
        (N,) predicted classes, like ``labels``, or (N, C) class scores/probabilities whose
        argmax per row is the predicted index.
    severity:
        ``W`` with ``W[i, j]`` = cost of predicting ``j`` when the truth is ``i``: a
        :class:`SeverityMatrix`, a (C, C) array or nested list, a JSON file path, or a shipped
        name such as ``"paper-table1"`` (see :func:`load_severity`).
    classes:
        The C class names in the order of ``W``'s rows. When ``severity`` names its classes
        too, both must name the same set; ``W`` is then reordered to ``classes``.

    Returns
    -------
    WeightedConfusion
        Counts, weighted table, (normalised) weighted error and per-class mean costs.
    """
    sev = _as_severity(severity, classes)
    c = sev.n_classes
    y = _encode(labels, "labels", sev.classes, c, allow_scores=False)
    p = _encode(predictions, "predictions", sev.classes, c, allow_scores=True)
    if y.size != p.size:
        raise LabelwiseError(f"predictions must have one entry per label ({y.size}), got {p.size}")
    n = int(y.size)
    counts = np.bincount(y * c + p, minlength=c * c).reshape(c, c).astype(np.int64)
    w = sev.weights
    weighted = counts * w
    class_counts = counts.sum(axis=1)
    notes: list[str] = []
    with np.errstate(invalid="ignore", divide="ignore"):
        per_class = np.where(class_counts > 0, weighted.sum(axis=1) / class_counts, np.nan)
    absent = [sev.classes[k] for k in np.flatnonzero(class_counts == 0)]
    if absent:
        msg = f"classes {absent} do not occur in labels; their per-class weighted error is NaN"
        warnings.warn(msg, DegenerateDataWarning, stacklevel=user_stacklevel())
        notes.append(msg)
    werr = float(weighted.sum()) / n
    nerr = werr / sev.max_weight
    return WeightedConfusion(
        classes=sev.classes,
        severity=w,
        counts=counts,
        weighted=weighted,
        n=n,
        error_rate=float(n - np.trace(counts)) / n,
        weighted_error=werr,
        normalised_weighted_error=nerr,
        weighted_accuracy=1.0 - nerr,
        class_counts=class_counts,
        per_class_weighted_error=per_class,
        notes=tuple(notes),
    )


# --- helpers -------------------------------------------------------------------------------


def _as_severity(severity: Any, classes: Sequence[ClassName] | None) -> SeverityMatrix:
    if isinstance(severity, str | os.PathLike):
        severity = load_severity(severity)
    elif isinstance(severity, Mapping):
        severity = _severity_from_json(severity, "severity")
    if isinstance(severity, SeverityMatrix):
        if classes is None:
            return severity
        if severity.classes != tuple(range(severity.n_classes)):
            return severity.reordered(classes)  # named classes: match by name
        weights = severity.weights  # unnamed (0..C-1): ``classes`` names the rows in order
    else:
        weights = _check_weights(severity, "severity")
    if classes is None:
        return SeverityMatrix(weights)
    names = _check_classes(classes)
    if len(names) != weights.shape[0]:
        raise LabelwiseError(
            f"classes must have one name per row of the {weights.shape[0]} x "
            f"{weights.shape[0]} severity matrix, got {len(names)}"
        )
    return SeverityMatrix(weights, names)


def _severity_from_json(obj: Any, what: str) -> SeverityMatrix:
    if not isinstance(obj, Mapping):
        raise LabelwiseError(
            f'{what} must be a JSON object {{"classes": [...], "severity": [[...]]}}, '
            f"got {type(obj).__name__}"
        )
    unknown = sorted(set(obj) - _JSON_KEYS)
    if unknown:
        raise LabelwiseError(f"{what} has unknown keys {unknown}; allowed: {sorted(_JSON_KEYS)}")
    if "severity" not in obj:
        raise LabelwiseError(f'{what} needs a "severity" key holding the C x C matrix')
    rows = obj["severity"]
    if not isinstance(rows, list) or not all(isinstance(r, list) for r in rows):
        raise LabelwiseError(f'{what}: "severity" must be a list of rows (a C x C matrix)')
    for i, row in enumerate(rows):
        for j, v in enumerate(row):
            if isinstance(v, bool) or not isinstance(v, int | float):
                raise LabelwiseError(f'{what}: "severity"[{i}][{j}] must be a number, got {v!r}')
    raw_classes = obj.get("classes")
    if raw_classes is not None and not isinstance(raw_classes, list):
        raise LabelwiseError(f'{what}: "classes" must be a list of class names')
    description = obj.get("description", "")
    if not isinstance(description, str):
        raise LabelwiseError(f'{what}: "description" must be a string')
    try:
        return SeverityMatrix(
            _check_weights(rows, "severity"), tuple(raw_classes or ()), description
        )
    except LabelwiseError as exc:
        raise LabelwiseError(f"{what}: {exc}") from None


def _check_weights(w: Any, name: str) -> NDArray[np.float64]:
    try:
        arr = np.asarray(w)
    except (TypeError, ValueError):
        raise LabelwiseError(
            f"{name} must be a square C x C matrix; its rows have different lengths"
        ) from None
    if arr.dtype == object:
        raise LabelwiseError(
            f"{name} must be a square C x C matrix of numbers; its rows have different lengths "
            "or hold non-numbers"
        )
    if arr.dtype.kind not in "iuf":
        raise LabelwiseError(f"{name} must hold numbers, got dtype {arr.dtype}")
    if arr.ndim != 2 or arr.shape[0] != arr.shape[1]:
        raise LabelwiseError(f"{name} must be a square C x C matrix, got shape {arr.shape}")
    if arr.shape[0] < 2:
        raise LabelwiseError(f"{name} must cover at least 2 classes, got shape {arr.shape}")
    arr = arr.astype(np.float64)
    bad = np.argwhere(~np.isfinite(arr))
    if bad.size:
        i, j = bad[0]
        raise LabelwiseError(f"{name} must be finite, found {arr[i, j]} at [{i}, {j}]")
    bad = np.argwhere(arr < 0)
    if bad.size:
        i, j = bad[0]
        raise LabelwiseError(f"{name} must be non-negative, found {_fmt(arr[i, j])} at [{i}, {j}]")
    diag = np.flatnonzero(np.diag(arr) != 0)
    if diag.size:
        k = int(diag[0])
        raise LabelwiseError(
            f"{name} must have a zero diagonal (a correct prediction costs nothing), "
            f"found {_fmt(arr[k, k])} at [{k}, {k}]"
        )
    if not (arr > 0).any():
        raise LabelwiseError(f"{name} must have at least one positive weight, got all zeros")
    if arr.max() > MAX_MAGNITUDE:  # weights x counts overflow to inf (1e308: error inf)
        i, j = np.unravel_index(int(np.argmax(arr)), arr.shape)
        raise LabelwiseError(
            f"{name} weights must be at most {MAX_MAGNITUDE:g}, found {_fmt(arr[i, j])} at "
            f"[{i}, {j}]: rescale them (the normalised weighted error depends only on their "
            "ratios)"
        )
    return arr


def _check_classes(classes: Any) -> tuple[ClassName, ...]:
    if isinstance(classes, str) or not isinstance(classes, Sequence | np.ndarray):
        raise LabelwiseError(f"classes must be a sequence of class names, got {classes!r}")
    names: list[ClassName] = []
    for c in classes:
        item = c.item() if isinstance(c, np.generic) else c
        if isinstance(item, bool) or not isinstance(item, str | int):
            raise LabelwiseError(f"classes must be strings or integers, got {c!r}")
        names.append(item)
    if len(set(names)) != len(names):
        dup = sorted({str(c) for c in names if names.count(c) > 1})
        raise LabelwiseError(f"classes must be distinct, got duplicates {dup}")
    return tuple(names)


def _encode(
    values: Any, name: str, classes: tuple[ClassName, ...], c: int, *, allow_scores: bool
) -> NDArray[np.int64]:
    """Class indices 0..C-1 of ``values`` (names, indices, or (N, C) scores)."""
    try:
        arr = np.asarray(values)
    except (TypeError, ValueError) as exc:
        raise LabelwiseError(f"{name} must be a 1-D array of classes: {exc}") from None
    if allow_scores and arr.ndim == 2:
        if arr.dtype.kind not in "iuf":
            raise LabelwiseError(f"{name} as (N, C) scores must be numbers, got {arr.dtype}")
        if arr.shape[1] != c:
            raise LabelwiseError(
                f"{name} as (N, C) scores must have one column per class ({c}), "
                f"got shape {arr.shape}"
            )
        if arr.shape[0] == 0:
            raise LabelwiseError(f"{name} must hold at least one input")
        if arr.dtype.kind == "f" and not np.isfinite(arr).all():
            raise LabelwiseError(f"{name} must be finite, found NaN or infinity")
        return arr.argmax(axis=1).astype(np.int64)
    if arr.ndim != 1:
        want = "(N,) classes or (N, C) scores" if allow_scores else "(N,) classes"
        raise LabelwiseError(f"{name} must be {want}, got shape {arr.shape}")
    if arr.size == 0:
        raise LabelwiseError(f"{name} must hold at least one input")
    # Numbers are indices 0..C-1 unless the classes have (non-default) integer names.
    default = classes == tuple(range(c))
    if arr.dtype.kind in "biuf" and (default or all(isinstance(k, str) for k in classes)):
        if arr.dtype.kind == "f":
            if not np.isfinite(arr).all():
                raise LabelwiseError(f"{name} must be finite class indices, found NaN or infinity")
            if not np.all(arr == np.round(arr)):
                raise LabelwiseError(f"{name} must be integer class indices, got fractions")
        idx = arr.astype(np.int64)
        outside = np.unique(idx[(idx < 0) | (idx >= c)])
        if outside.size:
            raise LabelwiseError(
                f"{name} must be class indices in [0, {c}) for the {c} classes of severity, "
                f"got {outside[:10].tolist()}"
            )
        return idx
    lookup = {k: i for i, k in enumerate(classes)}
    uniq, inverse = _unique(arr)
    codes = np.empty(len(uniq), dtype=np.int64)
    missing = []
    for u, value in enumerate(uniq):
        key = value.item() if isinstance(value, np.generic) else value
        try:
            codes[u] = lookup[key]
        except (KeyError, TypeError):
            missing.append(key)
    if missing:
        raise LabelwiseError(
            f"{name} must only hold the classes {list(classes)}, got {missing[:10]}"
        )
    return codes[inverse]


def _unique(arr: NDArray[Any]) -> tuple[list[Any], NDArray[np.int64]]:
    try:
        uniq, inverse = np.unique(arr, return_inverse=True)
        return list(uniq), inverse.reshape(-1).astype(np.int64)
    except TypeError:  # unorderable mixed objects: group by first appearance
        seen: dict[Any, int] = {}
        inv = np.empty(arr.size, dtype=np.int64)
        for k, v in enumerate(arr.tolist()):
            inv[k] = seen.setdefault(v, len(seen))
        return list(seen), inv


def _num(v: float) -> int | float:
    return int(v) if float(v).is_integer() else float(v)


def _fmt(v: float) -> str:
    return f"{v:.6g}"

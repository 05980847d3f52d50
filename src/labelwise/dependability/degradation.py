"""Scenario-based performance degradation (Cheng et al. 2018, Sec. II-E).

The paper names two analyses of a performance figure such as accuracy: "considering each
scenario", and "discounting the value due to missing input scenarios (the discount factor can be
taken from the computed scenario coverage metric)". It omits the details; labelwise reads them
as follows.

Per scenario
    Each input belongs to one scenario (any hashable value, or one row of a table of operating
    conditions such as ``(weather, road, orientation)``). For every scenario s with n_s inputs,
    c_s of them correct: accuracy c_s / n_s with a Wilson score interval
    (:func:`labelwise.wilson_interval`), and its degradation = overall accuracy - accuracy
    (positive when the model does worse in s than overall).

Discount by coverage
    ``coverage`` (in [0, 1], e.g. the 2-projection scenario coverage of Sec. II-A) is read as the
    share of the operating space that the test inputs represent. On the uncovered share,
    1 - coverage, nothing is known about the model, so the only claim the data supports without
    further assumptions is the worst case, accuracy 0 there:

        discounted accuracy = coverage x overall accuracy,

    a lower bound on the accuracy over the whole operating space (the best case would be
    coverage x accuracy + 1 - coverage). Its interval is coverage times the Wilson interval of the
    overall accuracy, the coverage being taken as known (it is computed, not estimated). The
    overall accuracy is pooled over all inputs, so it weighs scenarios by how often they occur in
    the test data.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, cast

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .._contract import Result
from .._json import jsonable
from .._validation import check_classes_in_range, check_confidence
from ..estimation.estimators import wilson_interval
from ..exceptions import DegenerateDataWarning, LabelwiseError, user_stacklevel

__all__ = ["ScenarioPerformance", "scenario_performance"]


@dataclass(frozen=True, eq=False)
class ScenarioPerformance(Result):
    """Accuracy per scenario, overall and discounted by scenario coverage (Sec. II-E).

    Per-scenario arrays are aligned with ``scenarios`` and read-only.

    Attributes
    ----------
    scenarios:
        The distinct scenarios, sorted when their values can be ordered, else in order of first
        appearance. Condition-table rows are tuples.
    conditions:
        Names of the condition columns when ``scenarios`` was a table with named columns.
    n:
        (S,) inputs per scenario.
    n_correct:
        (S,) correctly predicted inputs per scenario.
    accuracy:
        (S,) ``n_correct / n``.
    ci_low, ci_high:
        (S,) Wilson ``confidence`` interval of each scenario's accuracy.
    degradation:
        (S,) ``overall_accuracy - accuracy``: how much worse than overall the model does there.
    overall_accuracy, overall_ci_low, overall_ci_high:
        Accuracy over all inputs and its Wilson interval; ``overall_accuracy`` is the headline
        ``value`` (higher is better).
    n_total:
        N, the number of inputs.
    confidence:
        Level of the intervals.
    coverage:
        The scenario coverage given, or None.
    discounted_accuracy, discounted_ci_low, discounted_ci_high:
        ``coverage * overall_accuracy`` and ``coverage`` times the overall interval (None
        without ``coverage``): a worst-case lower bound crediting the uncovered scenarios with
        accuracy 0 (see the module docs).
    notes:
        Degenerate data noticed (e.g. scenarios with a single input).
    """

    higher_is_better: ClassVar[bool | None] = True

    scenarios: tuple[Hashable, ...]
    conditions: tuple[str, ...] | None
    n: NDArray[np.int64]
    n_correct: NDArray[np.int64]
    accuracy: NDArray[np.float64]
    ci_low: NDArray[np.float64]
    ci_high: NDArray[np.float64]
    degradation: NDArray[np.float64]
    overall_accuracy: float
    overall_ci_low: float
    overall_ci_high: float
    n_total: int
    confidence: float
    coverage: float | None = None
    discounted_accuracy: float | None = None
    discounted_ci_low: float | None = None
    discounted_ci_high: float | None = None
    notes: tuple[str, ...] = ()

    @property
    def value(self) -> float:
        """``overall_accuracy``."""
        return self.overall_accuracy

    def __len__(self) -> int:
        return len(self.scenarios)

    def scenario(self, key: Hashable | list[Any]) -> dict[str, Any]:
        """One scenario's figures (a list key is read as the tuple of a condition row)."""
        if isinstance(key, list):
            key = tuple(key)
        try:
            k = self.scenarios.index(key)
        except ValueError:
            raise LabelwiseError(
                f"scenario {key!r} is not among the {len(self)} scenarios"
            ) from None
        return self._row(k)

    def _row(self, k: int) -> dict[str, Any]:
        return {
            "scenario": self.scenarios[k],
            "n": int(self.n[k]),
            "n_correct": int(self.n_correct[k]),
            "accuracy": float(self.accuracy[k]),
            "ci_low": float(self.ci_low[k]),
            "ci_high": float(self.ci_high[k]),
            "degradation": float(self.degradation[k]),
        }

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (tuple scenarios become lists, other objects strings; NaN and
        infinities ``None``). Its own shape: per-scenario rows and nested overall figures."""
        return jsonable(
            {
                "metric": "scenario_performance",
                "conditions": None if self.conditions is None else list(self.conditions),
                "confidence": self.confidence,
                "n_total": self.n_total,
                "overall": {
                    "accuracy": self.overall_accuracy,
                    "ci_low": self.overall_ci_low,
                    "ci_high": self.overall_ci_high,
                },
                "scenarios": [
                    {**self._row(k), "scenario": _jsonable(s)} for k, s in enumerate(self.scenarios)
                ],
                "coverage": self.coverage,
                "discounted": None
                if self.coverage is None
                else {
                    "accuracy": self.discounted_accuracy,
                    "ci_low": self.discounted_ci_low,
                    "ci_high": self.discounted_ci_high,
                },
                "notes": list(self.notes),
            }
        )

    def table(self) -> str:
        """Per-scenario accuracy as aligned plain text, with the overall and discounted lines."""
        pct = f"{self.confidence:.0%}"
        head = [
            "scenario" if self.conditions is None else " / ".join(self.conditions),
            "n",
            "correct",
            "accuracy",
            f"{pct} interval",
            "acc - overall",
        ]
        rows = [
            [
                " / ".join(map(str, s)) if isinstance(s, tuple) else str(s),
                str(int(n)),
                str(int(c)),
                f"{a:.4f}",
                f"[{lo:.4f}, {hi:.4f}]",
                f"{a - self.overall_accuracy:+.4f}",
            ]
            for s, n, c, a, lo, hi in zip(
                self.scenarios,
                self.n,
                self.n_correct,
                self.accuracy,
                self.ci_low,
                self.ci_high,
                strict=True,
            )
        ]
        rows.append(
            [
                "overall",
                str(self.n_total),
                str(int(self.n_correct.sum())),
                f"{self.overall_accuracy:.4f}",
                f"[{self.overall_ci_low:.4f}, {self.overall_ci_high:.4f}]",
                "",
            ]
        )
        width = [max(len(r[k]) for r in [head, *rows]) for k in range(len(head))]

        def line(r: list[str]) -> str:
            cells = [
                r[0].ljust(width[0]),
                *(v.rjust(w) for v, w in zip(r[1:], width[1:], strict=True)),
            ]
            return "  ".join(cells).rstrip()

        out = [line(head), *(line(r) for r in rows[:-1]), "-" * len(line(head)), line(rows[-1])]
        if self.coverage is not None:
            out.append(
                f"discounted by scenario coverage {self.coverage:.4f}: "
                f"{self.discounted_accuracy:.4f} "
                f"[{self.discounted_ci_low:.4f}, {self.discounted_ci_high:.4f}] "
                "(worst case: uncovered scenarios count as failures)"
            )
        return "\n".join(out)


def scenario_performance(
    labels: ArrayLike,
    predictions: ArrayLike,
    scenarios: Any,
    *,
    confidence: float = 0.95,
    coverage: float | None = None,
) -> ScenarioPerformance:
    """Accuracy per scenario and discounted by coverage (Cheng et al. 2018, Sec. II-E).

    Parameters
    ----------
    labels:
        (N,) true classes (integers or names).
    predictions:
        (N,) predicted classes, of the same kind as ``labels``, or (N, C) class scores whose
        argmax per row is the predicted class index (``labels`` then hold indices).
    scenarios:
        The scenario of each input: a length-N sequence of hashable values (``"rain"``, 3,
        ``("rainy", "mud")``), an (N, k) array or list of rows of a condition table (each row
        one scenario), or a mapping ``{condition name: N values}`` (a pandas DataFrame works
        too); named columns are kept in ``conditions``.
    confidence:
        Level of the Wilson intervals, in (0, 1).
    coverage:
        Optional scenario coverage in [0, 1] (e.g. Sec. II-A's 2-projection coverage); gives
        ``discounted_accuracy = coverage * overall accuracy``, a worst-case lower bound on the
        accuracy over the whole operating space (see the module docs).

    Scenarios with a single input raise a :class:`DegenerateDataWarning`; they are still
    reported (their Wilson interval is wide, as it should be).
    """
    conf = check_confidence(confidence)
    cov = _check_coverage(coverage)
    correct = _correctness(labels, predictions)
    n_total = int(correct.size)
    keys, conditions = _scenario_keys(scenarios, n_total)

    codes: dict[Hashable, int] = {}
    inverse = np.empty(n_total, dtype=np.int64)
    for i, key in enumerate(keys):
        inverse[i] = codes.setdefault(key, len(codes))
    first_seen = list(codes)
    order = _sorted_order(first_seen)
    uniq = [first_seen[k] for k in order]
    remap = np.empty(len(order), dtype=np.int64)
    remap[order] = np.arange(len(order))
    inverse = remap[inverse]

    n = np.bincount(inverse, minlength=len(uniq)).astype(np.int64)
    n_correct = np.bincount(inverse, weights=correct, minlength=len(uniq)).round().astype(np.int64)
    accuracy = n_correct / n
    bounds = np.array(
        [wilson_interval(float(c), int(m), conf) for c, m in zip(n_correct, n, strict=True)]
    )
    total_correct = int(correct.sum())
    overall = total_correct / n_total
    lo, hi = wilson_interval(float(total_correct), n_total, conf)

    notes: list[str] = []
    single = [uniq[k] for k in np.flatnonzero(n == 1)]
    if single:
        shown = ", ".join(repr(s) for s in single[:5]) + (" ..." if len(single) > 5 else "")
        msg = (
            f"{len(single)} scenario(s) have a single input ({shown}); their accuracy is 0 or 1 "
            "and their Wilson interval is wide"
        )
        warnings.warn(msg, DegenerateDataWarning, stacklevel=user_stacklevel())
        notes.append(msg)

    return ScenarioPerformance(
        scenarios=tuple(uniq),
        conditions=conditions,
        n=n,
        n_correct=n_correct,
        accuracy=accuracy,
        ci_low=bounds[:, 0],
        ci_high=bounds[:, 1],
        degradation=overall - accuracy,
        overall_accuracy=overall,
        overall_ci_low=lo,
        overall_ci_high=hi,
        n_total=n_total,
        confidence=conf,
        coverage=cov,
        discounted_accuracy=None if cov is None else cov * overall,
        discounted_ci_low=None if cov is None else cov * lo,
        discounted_ci_high=None if cov is None else cov * hi,
        notes=tuple(notes),
    )


# --- helpers -------------------------------------------------------------------------------


def _check_coverage(coverage: Any) -> float | None:
    if coverage is None:
        return None
    if isinstance(coverage, bool):
        raise LabelwiseError(f"coverage must be a number in [0, 1], got {coverage!r}")
    try:
        v = float(coverage)
    except (TypeError, ValueError):
        raise LabelwiseError(f"coverage must be a number in [0, 1], got {coverage!r}") from None
    if not 0.0 <= v <= 1.0:  # also rejects NaN
        raise LabelwiseError(f"coverage must be in [0, 1], got {coverage!r}")
    return v


def _correctness(labels: Any, predictions: Any) -> NDArray[np.float64]:
    """1.0 where the prediction equals the label, else 0.0."""
    y = _as_1d(labels, "labels")
    try:
        p = np.asarray(predictions)
    except (TypeError, ValueError) as exc:
        raise LabelwiseError(f"predictions must be an array: {exc}") from None
    if p.ndim == 2:
        if p.dtype.kind not in "biuf":
            raise LabelwiseError(f"predictions as (N, C) scores must be numbers, got {p.dtype}")
        if p.dtype.kind == "f" and not np.isfinite(p).all():
            raise LabelwiseError("predictions must be finite, found NaN or infinity")
        integral = y.dtype.kind in "biu" or (
            y.dtype.kind == "f" and bool(np.all(np.isfinite(y) & (y == np.round(y))))
        )  # integer-valued floats are classes, as everywhere labels are read
        if not integral:
            raise LabelwiseError(
                "labels must be integer class indices when predictions are (N, C) scores, "
                f"got dtype {y.dtype}"
            )
        y = y.astype(np.int64)
        if p.shape[1] == 0:
            raise LabelwiseError(f"predictions as (N, C) scores need C >= 1, got {p.shape}")
        check_classes_in_range(y, int(p.shape[1]), "labels", why="the {n} score columns")
        p = p.argmax(axis=1)
    p = _as_1d(p, "predictions")
    if p.size != y.size:
        raise LabelwiseError(f"predictions must have one entry per label ({y.size}), got {p.size}")
    numeric_y, numeric_p = y.dtype.kind in "biuf", p.dtype.kind in "biuf"
    if numeric_y != numeric_p:
        raise LabelwiseError(
            f"labels and predictions must be the same kind of class (both numbers or both "
            f"names), got dtypes {y.dtype} and {p.dtype}"
        )
    return np.asarray(y == p, dtype=np.float64)


def _as_1d(values: Any, name: str) -> NDArray[Any]:
    try:
        arr = np.asarray(values)
    except (TypeError, ValueError) as exc:
        raise LabelwiseError(f"{name} must be a 1-D array: {exc}") from None
    if arr.ndim != 1:
        raise LabelwiseError(f"{name} must be 1-D (one class per input), got shape {arr.shape}")
    if arr.size == 0:
        raise LabelwiseError(f"{name} must hold at least one input")
    if arr.dtype.kind == "f" and not np.isfinite(arr).all():
        raise LabelwiseError(f"{name} must be finite, found NaN or infinity")
    return arr


def _scenario_keys(scenarios: Any, n: int) -> tuple[list[Hashable], tuple[str, ...] | None]:
    """One hashable key per input, and the condition names if the table had named columns."""
    conditions: tuple[str, ...] | None = None
    if isinstance(scenarios, str | bytes):
        raise LabelwiseError("scenarios must give one scenario per input, got a single string")
    if isinstance(scenarios, Mapping):
        conditions = tuple(str(c) for c in scenarios)
        if not conditions:
            raise LabelwiseError("scenarios must have at least one condition column")
        columns = []
        for name, col in scenarios.items():
            if isinstance(col, str | bytes):
                raise LabelwiseError(f"scenarios column {name!r} must hold one value per input")
            try:
                vals = list(col)
            except TypeError:
                raise LabelwiseError(
                    f"scenarios column {name!r} must hold one value per input"
                ) from None
            if len(vals) != n:
                raise LabelwiseError(
                    f"scenarios column {name!r} must have one value per input ({n}), "
                    f"got {len(vals)}"
                )
            columns.append(vals)
        rows: list[Any] = [tuple(r) for r in zip(*columns, strict=True)]
    elif hasattr(scenarios, "columns") and hasattr(scenarios, "to_numpy"):  # DataFrame-like
        conditions = tuple(str(c) for c in scenarios.columns)
        rows = [tuple(r) for r in scenarios.to_numpy(dtype=object).tolist()]
    elif isinstance(scenarios, np.ndarray):
        if scenarios.ndim == 1:
            rows = scenarios.tolist()
        elif scenarios.ndim == 2:
            rows = [tuple(r) for r in scenarios.tolist()]
        else:
            raise LabelwiseError(
                f"scenarios must be (N,) values or an (N, k) condition table, got shape "
                f"{scenarios.shape}"
            )
    elif isinstance(scenarios, Sequence):
        rows = [tuple(r) if isinstance(r, list | np.ndarray) else r for r in scenarios]
    else:
        try:
            rows = list(scenarios)
        except TypeError:
            raise LabelwiseError(
                f"scenarios must be a sequence with one scenario per input, got "
                f"{type(scenarios).__name__}"
            ) from None
    if len(rows) != n:
        raise LabelwiseError(f"scenarios must have one entry per input ({n}), got {len(rows)}")
    keys: list[Hashable] = []
    for i, r in enumerate(rows):
        key = _plain(r)
        if _has_nan(key):
            raise LabelwiseError(f"scenarios must not contain NaN (input {i}: {r!r})")
        try:
            hash(key)
        except TypeError:
            raise LabelwiseError(
                f"scenarios must be hashable values or rows of a condition table, input {i} "
                f"is {type(r).__name__}"
            ) from None
        keys.append(key)
    return keys, conditions


def _plain(v: Any) -> Any:
    """NumPy scalars as Python scalars, rows as tuples, so equal scenarios hash equally."""
    if isinstance(v, np.generic):
        return v.item()
    if isinstance(v, tuple):
        return tuple(_plain(x) for x in v)
    if isinstance(v, np.ndarray):
        return tuple(_plain(x) for x in v.tolist())
    return v


def _has_nan(v: Any) -> bool:
    if isinstance(v, float):
        return math.isnan(v)
    if isinstance(v, tuple):
        return any(_has_nan(x) for x in v)
    return False


def _sorted_order(keys: list[Hashable]) -> list[int]:
    """Indices that sort ``keys``; first-appearance order when they cannot be compared."""
    try:
        return sorted(range(len(keys)), key=lambda k: cast(Any, keys[k]))
    except TypeError:
        return list(range(len(keys)))


def _jsonable(v: Any) -> Any:
    if v is None or isinstance(v, str | int | float | bool):
        return v
    if isinstance(v, tuple):
        return [_jsonable(x) for x in v]
    return str(v)

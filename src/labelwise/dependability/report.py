"""One summary of a network's dependability metrics (RICC Sec. II), from arrays.

:func:`dependability_report` composes the NumPy-core metrics; the ``labelwise
dependability`` command adds the ones that need the model itself (confidence loss under
perturbations, occlusion-based interpretation) when they are asked for.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, cast

import numpy as np
from numpy.typing import ArrayLike

from .._validation import check_classes_in_range, check_finite_array, check_int
from ..estimation.estimators import wilson_interval
from ..exceptions import DegenerateDataWarning, LabelwiseError, user_stacklevel
from .confusion import weighted_confusion
from .degradation import scenario_performance
from .neuron import k_activation_coverage
from .patterns import activation_pattern
from .scenario import next_scenarios, scenario_coverage

__all__ = ["DependabilityReport", "dependability_report"]


#: What each summary row's value is, by the start of its name: range and direction.
_MEANINGS: tuple[tuple[str, str], ...] = (
    ("accuracy discounted", "share in [0, 1], higher is better"),
    ("accuracy", "share of inputs classified correctly, in [0, 1]"),
    ("worst scenario accuracy", "share in [0, 1], higher is better"),
    ("neuron", "share of cells in [0, 1], higher is better"),
    ("scenario", "share of cells in [0, 1], higher is better"),
    ("activation pattern", "share of inputs in [0, 1], lower is better"),
    ("weighted error", "in [0, 1], lower is better; 1 - it is the weighted accuracy"),
    (
        "confidence loss",
        "drop of the true class's probability, in [0, 1] (0 = no harm), lower is better",
    ),
    ("interpretation precision", "share of hot windows in [0, 1], higher is better"),
    ("occlusion sensitivity", "share of the object's windows in [0, 1], lower is better"),
)


#: Rows where a smaller value is better (by the start of their name).
_LOWER_IS_BETTER = (
    "activation pattern",
    "weighted error",
    "confidence loss",
    "occlusion sensitivity",
)


def _meaning(name: str) -> str:
    return next((m for start, m in _MEANINGS if name.startswith(start)), "")


@dataclass
class DependabilityReport:
    """Summary rows (metric, value, detail) and each metric's full result as a dict.

    Every value is a share or a probability in [0, 1]: :meth:`legend` says so under the table,
    with which rows are better lower; the JSON gives each row a one-line ``meaning``.
    """

    rows: list[tuple[str, float, str]] = field(default_factory=list)
    details: dict[str, Any] = field(default_factory=dict)
    results: dict[str, Any] = field(default_factory=dict)

    def add(self, name: str, value: float, detail: str = "") -> None:
        self.rows.append((name, float(value), detail))

    def legend(self) -> list[str]:
        """Footer lines: the values' range, which direction is better, and the one unit that
        is not a share (printed under the table; the JSON gives each row its ``meaning``)."""
        if not self.rows:
            return []
        names = [n for n, _, _ in self.rows]
        lower = list(
            dict.fromkeys(s for s in _LOWER_IS_BETTER if any(n.startswith(s) for n in names))
        )
        lines = [
            "value: a share or probability in [0, 1]; lower is better for "
            + (", ".join(lower) if lower else "none of these")
            + ", higher for the others"
        ]
        if any(n.startswith("confidence loss") for n in names):
            lines.append(
                "confidence loss: per input, the largest drop of the true class's probability "
                "over the perturbations (0 = no harm)"
            )
        return lines

    def table(self) -> str:
        width = max(len(r[0]) for r in self.rows) if self.rows else 10
        lines = [f"  {'metric':<{width}}  {'value':>8}  detail"]
        lines += [f"  {n:<{width}}  {v:>8.4f}  {d}" for n, v, d in self.rows]
        lines += [f"  {line}" for line in self.legend()]
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        return {
            "summary": [
                {"metric": n, "value": v, "detail": d, "meaning": _meaning(n)}
                for n, v, d in self.rows
            ],
            "details": self.details,
        }


def dependability_report(
    *,
    labels: ArrayLike,
    probabilities: ArrayLike,
    activations: ArrayLike,
    scenarios: Any = None,
    spec: Any = None,
    scenario_k: int = 2,
    neuron_k: int = 2,
    threshold: float = 0.0,
    severity: Any = None,
    classes: Sequence[str] | None = None,
    confidence: float = 0.95,
) -> DependabilityReport:
    """Accuracy, neuron k-activation coverage, activation patterns per class, and (when a
    scenario table is given) scenario coverage, accuracy per scenario and the next scenarios
    to collect, and (when a severity matrix is given) weighted confusion.

    ``classes`` names the label indices 0..C-1 (the model's outputs); a severity matrix that
    names its classes is then matched to them by name (reordered, or refused when the names
    differ), as :func:`~labelwise.dependability.confusion.weighted_confusion` does."""
    probs = check_finite_array(probabilities, "probabilities", ndim=2)
    raw = np.asarray(check_finite_array(labels, "labels", ndim=1))
    if raw.dtype.kind == "f" and not np.all(raw == np.round(raw)):
        raise LabelwiseError("labels must be integer class labels, got fractional values")
    y = raw.astype(np.int64)
    if y.size != probs.shape[0]:
        raise LabelwiseError(
            f"labels must have one entry per input ({probs.shape[0]}), got {y.size}"
        )
    check_classes_in_range(y, int(probs.shape[1]), "labels")
    neuron_k = check_int(neuron_k, "neuron_k", minimum=1)
    pred = probs.argmax(axis=1)
    rep = DependabilityReport()
    correct = int((pred == y).sum())
    lo, hi = wilson_interval(correct, y.size, confidence)
    rep.add(
        "accuracy",
        correct / y.size,
        f"{correct}/{y.size}, {confidence:.0%} CI [{lo:.4f}, {hi:.4f}]",
    )
    rep.details["accuracy"] = {"value": correct / y.size, "ci": [lo, hi], "n": int(y.size)}

    for k in sorted({1, neuron_k}):
        cov = k_activation_coverage(activations, k=k, threshold=threshold)
        rep.add(
            f"neuron {k}-activation coverage",
            cov.value,
            f"{cov.covered:,}/{cov.total:,} cells, threshold {threshold:g} (II-B)",
        )
        rep.details[f"neuron_{k}_activation"] = cov.to_dict()
    pat = activation_pattern(activations, y, threshold=threshold)
    rep.add(
        "activation pattern: outside share",
        pat.value,
        f"inputs whose active-neuron count is outside their class's most common of {pat.gamma} "
        "count bins and its two neighbours (II-C)",
    )
    rep.details["activation_pattern"] = pat.to_dict()
    rep.results["activation_pattern"] = pat

    if scenarios is not None:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", DegenerateDataWarning)
            sc = scenario_coverage(scenarios, spec, k=scenario_k)
        for w in caught:
            warnings.warn(str(w.message), DegenerateDataWarning, stacklevel=user_stacklevel())
        rep.add(
            f"scenario {scenario_k}-projection coverage",
            sc.value,
            f"{sc.n_occupied}/{sc.n_cells} cells; {len(sc.missing)} missing (II-A)",
        )
        rep.details["scenario_coverage"] = sc.to_dict()
        # named columns, so the per-scenario results (and the JSON) say which value is which
        columns = _columns(scenarios, list(sc.conditions))
        perf = scenario_performance(y, pred, columns, confidence=confidence, coverage=sc.value)
        worst = int(np.argmin(perf.accuracy))
        values = cast(tuple[Any, ...], perf.scenarios[worst])  # one value per condition
        named = ", ".join(f"{c}={v}" for c, v in zip(sc.conditions, values, strict=True))
        rep.add(
            "worst scenario accuracy",
            float(perf.accuracy[worst]),
            f"{named} (n={int(perf.n[worst])}) (II-E)",
        )
        if perf.discounted_accuracy is not None:
            rep.add(
                "accuracy discounted by coverage",
                perf.discounted_accuracy,
                "coverage x accuracy: untested scenarios count as failures (II-E)",
            )
        rep.details["scenario_performance"] = perf.to_dict()
        rep.details["next_scenarios"] = next_scenarios(scenarios, spec, k=scenario_k).to_dict()
        rep.results["scenario_performance"] = perf

    if severity is not None:
        wc = weighted_confusion(y, pred, severity, classes=classes)
        rep.add(
            "weighted error (normalised)",
            wc.normalised_weighted_error,
            f"mean severity per input / largest severity {wc.severity.max():g}; plain error "
            f"rate {wc.error_rate:.4f} (II-H)",
        )
        rep.details["weighted_confusion"] = wc.to_dict()
        rep.results["weighted_confusion"] = wc
    return rep


def _columns(scenarios: Any, keys: list[str]) -> dict[str, Any]:
    """The condition columns in ``keys`` (one value per input each), by name."""
    from .scenario import _read_table  # the scenario module's own table reader

    table = _read_table(scenarios)
    return {k: table[k] for k in keys}

"""Frozen result types shared by every sampler and estimator."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from .exceptions import LabelwiseError

__all__ = ["Estimate", "Ranking", "Selection"]

SELECTION_FORMAT = 1


def _readonly(a: Any, dtype: Any = None) -> NDArray[Any]:
    """A read-only copy of ``a`` (for the arrays of frozen result types)."""
    out = np.array(a, dtype=dtype, copy=True)
    out.setflags(write=False)
    return out


@dataclass(frozen=True, eq=False)
class Selection:
    """Which rows of the operational pile to label, in selection order.

    Attributes
    ----------
    indices:
        Row indices into the pile (int64, read-only), in the order they were selected.
        For sequential methods (SRS, CES) every prefix is itself a valid selection.
    method:
        ``"srs"``, ``"css"``, ``"ces"``, ...
    population_size:
        N, the number of rows in the pile.
    params:
        The method's parameters, as passed (JSON-serialisable).
    strata:
        For stratified methods, the stratum of each selected row (aligned with ``indices``).
    stratum_sizes:
        For stratified methods, N_h for every stratum h.
    rng_state:
        The random generator's state after selection, so :func:`labelwise.extend` continues
        the same random stream (reproducible extension).
    diagnostics:
        Method-specific numbers worth keeping (e.g. CES objective values after each step).
    """

    indices: NDArray[np.int64]
    method: str
    population_size: int
    params: Mapping[str, Any] = field(default_factory=dict)
    strata: NDArray[np.int64] | None = None
    stratum_sizes: tuple[int, ...] | None = None
    rng_state: Mapping[str, Any] | None = None
    diagnostics: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        idx = np.asarray(self.indices)
        if idx.ndim != 1 or idx.dtype.kind not in "iu":
            raise LabelwiseError(f"indices must be a 1-D integer array, got shape {idx.shape}")
        object.__setattr__(self, "indices", _readonly(idx.astype(np.int64)))
        if self.strata is not None:
            st = np.asarray(self.strata, dtype=np.int64)
            if st.shape != idx.shape:
                raise LabelwiseError("strata must align with indices")
            object.__setattr__(self, "strata", _readonly(st))
        if self.stratum_sizes is not None:
            object.__setattr__(self, "stratum_sizes", tuple(int(s) for s in self.stratum_sizes))

    def __len__(self) -> int:
        return int(self.indices.size)

    @property
    def budget(self) -> int:
        return int(self.indices.size)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serialisable dict holding everything needed to estimate and to extend."""
        return {
            "format": SELECTION_FORMAT,
            "method": self.method,
            "population_size": self.population_size,
            "budget": self.budget,
            "params": dict(self.params),
            "indices": self.indices.tolist(),
            "strata": None if self.strata is None else self.strata.tolist(),
            "stratum_sizes": None if self.stratum_sizes is None else list(self.stratum_sizes),
            "rng_state": None if self.rng_state is None else _jsonable(self.rng_state),
            "diagnostics": _jsonable(self.diagnostics),
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Selection:
        try:
            if d.get("format") != SELECTION_FORMAT:
                raise LabelwiseError(
                    f"selection format must be {SELECTION_FORMAT}, got {d.get('format')!r}"
                )
            return cls(
                indices=np.asarray(d["indices"], dtype=np.int64),
                method=str(d["method"]),
                population_size=int(d["population_size"]),
                params=dict(d.get("params") or {}),
                strata=None if d.get("strata") is None else np.asarray(d["strata"], dtype=np.int64),
                stratum_sizes=None if d.get("stratum_sizes") is None else tuple(d["stratum_sizes"]),
                rng_state=d.get("rng_state"),
                diagnostics=dict(d.get("diagnostics") or {}),
            )
        except (KeyError, TypeError) as exc:
            raise LabelwiseError(f"selection is missing or has a malformed field: {exc}") from None


@dataclass(frozen=True)
class Estimate:
    """A point estimate with its uncertainty.

    ``value`` is the model's accuracy (classification) or 1-MSE (regression) on the whole pile,
    estimated from ``n_labelled`` labels; ``[ci_low, ci_high]`` is a ``confidence`` interval.
    """

    value: float
    std_error: float
    ci_low: float
    ci_high: float
    confidence: float
    n_labelled: int
    method: str
    metric: str = "accuracy"
    interval: str = ""
    population_size: int | None = None
    notes: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "value": self.value,
            "std_error": self.std_error,
            "ci_low": self.ci_low,
            "ci_high": self.ci_high,
            "confidence": self.confidence,
            "n_labelled": self.n_labelled,
            "method": self.method,
            "metric": self.metric,
            "interval": self.interval,
            "population_size": self.population_size,
            "notes": list(self.notes),
        }


@dataclass(frozen=True, eq=False)
class Ranking:
    """Models ranked by their accuracy on the labelled inputs (arrays are read-only).

    Attributes
    ----------
    model_names:
        One name per model (default ``"M1"``, ``"M2"``, ...).
    accuracy:
        (n_models,) share of the labelled inputs each model predicts correctly.
    n_correct:
        (n_models,) number of labelled inputs each model predicts correctly.
    ci_low, ci_high:
        (n_models,) Wilson ``confidence`` interval of each accuracy.
    rank:
        (n_models,) estimated rank, 1 = best; tied models share the smallest rank of the tie
        (1, 2, 2, 4).
    order:
        (n_models,) model indices from best to worst; ties by model index.
    prob_better:
        (n_models - 1,) bootstrap probability that model ``order[r]`` truly has a higher
        accuracy than ``order[r + 1]`` (ties in a bootstrap replicate count as half).
    n_labelled:
        Number of labelled inputs.
    confidence:
        Level of the intervals.
    n_bootstrap:
        Bootstrap replicates (or posterior draws) behind ``prob_better``.
    prob_best:
        (n_models,) probability that each model (model order) has the highest accuracy, or
        None when not computed (:func:`labelwise.rank_models` leaves it None).
    prob_beats:
        (n_models, n_models) probability that model ``i`` has a higher accuracy than model
        ``j`` (ties half), or None.
    rank_low, rank_high:
        (n_models,) rank set of every model (1 = best) at level ``rank_level``, or None.
    rank_level:
        Simultaneous level of the rank sets (0 when there are none).
    method:
        How the accuracies were obtained: ``"labelled"`` (accuracy on the labelled inputs)
        or the estimator of a :class:`labelwise.RankingCampaign`.
    """

    model_names: tuple[str, ...]
    accuracy: NDArray[np.float64]
    n_correct: NDArray[np.int64]
    ci_low: NDArray[np.float64]
    ci_high: NDArray[np.float64]
    rank: NDArray[np.int64]
    order: NDArray[np.int64]
    prob_better: NDArray[np.float64]
    n_labelled: int
    confidence: float
    n_bootstrap: int
    prob_best: NDArray[np.float64] | None = None
    prob_beats: NDArray[np.float64] | None = None
    rank_low: NDArray[np.int64] | None = None
    rank_high: NDArray[np.int64] | None = None
    rank_level: float = 0.0
    method: str = "labelled"

    def __post_init__(self) -> None:
        object.__setattr__(self, "model_names", tuple(str(n) for n in self.model_names))
        for name in ("accuracy", "n_correct", "ci_low", "ci_high", "rank", "order", "prob_better"):
            object.__setattr__(self, name, _readonly(np.asarray(getattr(self, name))))
        for name in ("prob_best", "prob_beats", "rank_low", "rank_high"):
            if getattr(self, name) is not None:
                object.__setattr__(self, name, _readonly(np.asarray(getattr(self, name))))

    def __len__(self) -> int:
        return len(self.model_names)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serialisable dict."""
        return {
            "model_names": list(self.model_names),
            "accuracy": self.accuracy.tolist(),
            "n_correct": self.n_correct.tolist(),
            "ci_low": self.ci_low.tolist(),
            "ci_high": self.ci_high.tolist(),
            "rank": self.rank.tolist(),
            "order": self.order.tolist(),
            "prob_better": self.prob_better.tolist(),
            "n_labelled": self.n_labelled,
            "confidence": self.confidence,
            "n_bootstrap": self.n_bootstrap,
            "prob_best": None if self.prob_best is None else self.prob_best.tolist(),
            "prob_beats": None if self.prob_beats is None else self.prob_beats.tolist(),
            "rank_low": None if self.rank_low is None else self.rank_low.tolist(),
            "rank_high": None if self.rank_high is None else self.rank_high.tolist(),
            "rank_level": self.rank_level,
            "method": self.method,
        }


def _jsonable(obj: Any) -> Any:
    """Convert NumPy scalars/arrays inside nested containers to plain Python for JSON."""
    return json.loads(json.dumps(obj, default=_default))


def _default(o: Any) -> Any:
    if isinstance(o, np.integer):
        return int(o)
    if isinstance(o, np.floating):
        return float(o)
    if isinstance(o, np.ndarray):
        return o.tolist()
    raise TypeError(f"not JSON-serialisable: {type(o).__name__}")

"""Frozen result types shared by every sampler and estimator."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, ClassVar

import numpy as np
from numpy.typing import NDArray

from ._contract import Result, _readonly
from .exceptions import LabelwiseError

__all__ = ["Estimate", "Ranking", "Result", "Selection"]

SELECTION_FORMAT = 1


@dataclass(frozen=True, eq=False)
class Selection(Result):
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
        For every method, the random generator's state *after* the selection's last draw
        (None for deterministic methods such as DDG): the stream :func:`labelwise.extend`
        continues. Methods whose whole order is fixed by one random key per row (SRS, SDS,
        RDG) also keep the state the keys were drawn from in ``diagnostics["key_state"]``;
        extend replays those keys, so selecting n and extending by m equals selecting n + m
        with the same seed.
    diagnostics:
        Method-specific numbers worth keeping (e.g. CES objective values after each step).

    ``to_dict`` adds ``"format"`` (the file format version) and ``"budget"``.
    """

    value_missing_reason: ClassVar[str] = "a selection is a set of rows, not a measurement"
    _json_head: ClassVar[Mapping[str, Any]] = MappingProxyType({"format": SELECTION_FORMAT})
    _json_properties: ClassVar[tuple[str, ...]] = ("budget",)

    indices: NDArray[np.int64]
    method: str
    population_size: int
    params: Mapping[str, Any] = field(default_factory=dict)
    strata: NDArray[np.int64] | None = None
    stratum_sizes: tuple[int, ...] | None = None
    # not in repr: the generator state and the method's bookkeeping drowned the rows in a
    # notebook (to_dict and the attributes keep them)
    rng_state: Mapping[str, Any] | None = field(default=None, repr=False)
    diagnostics: Mapping[str, Any] = field(default_factory=dict, repr=False)

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
        super().__post_init__()

    def __len__(self) -> int:
        return int(self.indices.size)

    @property
    def budget(self) -> int:
        return int(self.indices.size)

    @property
    def value(self) -> None:
        """None: a selection has no headline number (``value_missing_reason``)."""
        return None

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Selection:
        if not isinstance(d, Mapping):
            raise LabelwiseError(f"selection must be a JSON object, got {type(d).__name__}")
        try:
            if d.get("format") != SELECTION_FORMAT:
                raise LabelwiseError(
                    f"selection format must be {SELECTION_FORMAT}, got {d.get('format')!r}"
                )
            raw = np.asarray(d["indices"])
            size = d["population_size"]
            if isinstance(size, bool) or not isinstance(size, int | np.integer) or size < 1:
                raise LabelwiseError(
                    f"selection population_size must be a positive integer, got {size!r}"
                )
            n = int(size)
            if raw.size and (raw.dtype.kind not in "iuf" or np.any(raw != np.round(raw))):
                raise LabelwiseError(
                    f"selection indices must be integer rows, got {raw.ravel()[:5].tolist()}"
                )
            indices = raw.astype(np.int64)
            bad = indices[(indices < 0) | (indices >= n)] if indices.ndim == 1 else indices
            if indices.ndim != 1 or bad.size:
                raise LabelwiseError(
                    f"selection indices must be a list of rows in [0, {n}), got "
                    f"{bad.ravel()[:5].tolist()}"
                )
            uniq, counts = np.unique(indices, return_counts=True)
            if uniq.size != indices.size:
                raise LabelwiseError(
                    f"selection indices must be distinct rows, got {uniq[counts > 1][:5].tolist()} "
                    "more than once"
                )
            return cls(
                indices=indices,
                method=str(d["method"]),
                population_size=n,
                params=dict(d.get("params") or {}),
                strata=None if d.get("strata") is None else np.asarray(d["strata"], dtype=np.int64),
                stratum_sizes=None if d.get("stratum_sizes") is None else tuple(d["stratum_sizes"]),
                rng_state=d.get("rng_state"),
                diagnostics=dict(d.get("diagnostics") or {}),
            )
        except LabelwiseError:
            raise
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise LabelwiseError(f"selection is missing or has a malformed field: {exc}") from None


@dataclass(frozen=True)
class Estimate(Result):
    """A point estimate with its uncertainty.

    ``value`` is the model's accuracy (classification) or 1-MSE (regression) on the whole pile,
    estimated from ``n_labelled`` labels; ``[ci_low, ci_high]`` is a ``confidence`` interval.
    ``effective_sample_size`` (designed campaigns only): how many simple-random-sample labels
    these labels are worth: the m (in [1, N]) whose simple-random-sample interval is as narrow
    as the interval reported, Wilson's with the finite-population factor for accuracy (as
    :func:`labelwise.srs_estimate` reports it), z sqrt(S² (1/m - 1/N)) for 1-MSE with S²
    estimated from the labels (``campaign._estimators.srs_worth``), so the saving it states
    is the one the interval shows.
    """

    higher_is_better: ClassVar[bool | None] = True

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
    effective_sample_size: float | None = None


@dataclass(frozen=True, eq=False)
class Ranking(Result):
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
        None when not computed (:func:`labelwise.rank_models` computes it with
        ``prob_best=True``).
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
    design_accuracy, design_std_error:
        (n_models,) the design-based estimate of each accuracy from the same labels and
        its standard error, or None: for ``"consensus-ppi"`` the unpooled prediction-powered
        estimate (each model's own consensus bias, unbiased under the known inclusion
        probabilities) that ``accuracy`` shrinks; compare the two to see what the pooling
        did (the intervals already contain the design-based ones).

    ``value`` is None: a ranking orders models (see ``accuracy`` and ``rank``).
    """

    value_missing_reason: ClassVar[str] = "a ranking orders models; see accuracy and rank"

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
    design_accuracy: NDArray[np.float64] | None = None
    design_std_error: NDArray[np.float64] | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "model_names", tuple(str(n) for n in self.model_names))
        for name in ("accuracy", "n_correct", "ci_low", "ci_high", "rank", "order", "prob_better"):
            object.__setattr__(self, name, np.asarray(getattr(self, name)))
        optional = ("prob_best", "prob_beats", "rank_low", "rank_high")
        for name in (*optional, "design_accuracy", "design_std_error"):
            if getattr(self, name) is not None:
                object.__setattr__(self, name, np.asarray(getattr(self, name)))
        super().__post_init__()

    def __len__(self) -> int:
        return len(self.model_names)

    @property
    def value(self) -> None:
        """None: a ranking has no headline number (``value_missing_reason``)."""
        return None

    def table(self) -> str:
        """The models best first: rank, name, accuracy, interval, P(best), rank set (when
        there are rank sets) and P(better than the next model); what ``labelwise rank``
        prints (``print(ranking.table())`` in a notebook; the repr lists the arrays)."""
        pct = f"{self.confidence * 100:g}%"
        width = max(5, *(len(n) for n in self.model_names))
        sets = self.rank_low is not None and self.rank_high is not None
        lines = [
            f"  {'rank':>4}  {'model':<{width}}  {'accuracy':>8}  {pct + ' interval':<18}"
            f"  {'P(best)':>7}"
            + (f"  {f'{self.rank_level * 100:g}% rank set':>14}" if sets else "")
            + "  P(better than next)"
        ]
        for pos, m in enumerate(self.order):
            nxt = f"{self.prob_better[pos]:.3f}" if pos < len(self.prob_better) else ""
            best = "" if self.prob_best is None else f"{self.prob_best[m]:.3f}"
            rset = ""
            if self.rank_low is not None and self.rank_high is not None:
                lo, hi = int(self.rank_low[m]), int(self.rank_high[m])
                rset = f"  {str(lo) if lo == hi else f'{lo}-{hi}':>14}"
            lines.append(
                f"  {int(self.rank[m]):>4}  {self.model_names[m]:<{width}}  "
                f"{self.accuracy[m]:>8.4f}  [{self.ci_low[m]:.4f}, {self.ci_high[m]:.4f}]"
                f"  {best:>7}{rset}  {nxt:>19}".rstrip()
            )
        return "\n".join(lines)

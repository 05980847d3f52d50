"""Classic DNN test-adequacy coverage: NC, KMNC, NBC, SNAC and TKNC (DeepXplore, DeepGauge).

Every metric is the share of "cells" that at least one test input realises. Activations are
given per input: one layer as an (N, ...) array, or several layers as a list of (N, ...)
arrays (each flattened per input; the neurons of all layers are then concatenated, as in
dnn-tip). Write ``a`` for the value of neuron j on test input x, ``c`` for the number of
neurons, and ``lo_j``, ``hi_j``, ``sd_j`` for the minimum, maximum and (population, ddof=0)
standard deviation of neuron j over the *training* activations (an :class:`ActivationProfile`).

NC, neuron coverage (DeepXplore; dnn-tip ``NAC``)
    cells: the c neurons; neuron j is covered when ``a > threshold`` for some test input.
KMNC, k-multisection neuron coverage (DeepGauge Sec. 3.1; dnn-tip ``KMNC``)
    cells: c * k sections. With ``step_j = (hi_j - lo_j) / k`` and ``t_ji = lo_j + step_j * i``
    (i = 0..k), section i of neuron j is covered when ``t_ji <= a < t_j(i+1)``. Sections are
    half-open, so a value equal to the training maximum lies in no section, and a neuron
    constant in training (``hi_j == lo_j``) can never be covered; its k sections still count in
    the total (a :class:`~labelwise.exceptions.DegenerateDataWarning` says how many).
NBC, neuron boundary coverage (DeepGauge Sec. 3.2; dnn-tip ``NBC``)
    cells: 2c corner regions, ``a < lo_j - s * sd_j`` (lower) and ``a > hi_j + s * sd_j`` (upper),
    with s = ``scaler`` (0 is DeepGauge's definition; s > 0 is dnn-tip's widened boundary).
SNAC, strong neuron activation coverage (DeepGauge Sec. 3.2; dnn-tip ``SNAC``)
    cells: the c upper corner regions ``a > hi_j + s * sd_j``.
TKNC, top-k neuron coverage (DeepGauge Sec. 3.3; dnn-tip ``TKNC``)
    cells: the c neurons; neuron j is covered when it is among the k largest values of *its
    layer* for some test input (all neurons of a layer narrower than k are covered). Ties are
    broken toward the higher neuron index (a stable sort), so the result is deterministic.

Differences from dnn-tip 0.1.1 (``dnn_tip.neuron_coverage``): dnn-tip returns per-input
profiles; the coverage of a set, computed here, is the share of cells set in any input's
profile (``profiles.any(axis=0).mean()``). dnn-tip compares the NBC/SNAC boundaries inclusively
(``a <= lower``, ``a >= upper``), so with s = 0 the training set itself covers every corner;
the default here is DeepGauge's strict comparison, and ``inclusive=True`` reproduces dnn-tip
exactly. dnn-tip's TKNC breaks ties by NumPy's default (unstable) sort. Values agree whenever
no test value ties a boundary.

All computations are in float64. Coverage is monotone in the inputs, so every accumulator keeps
only a boolean "covered" table: ``update(batch)`` ORs a batch in, ``merge(other)`` ORs another
accumulator's table in (exact for chunked or distributed runs), ``reset()`` empties it and
``result()`` counts (the :class:`labelwise._accumulate.Accumulator` protocol). NC's table is
the k = 1 state of :class:`labelwise.dependability.NeuronKCoverage`, the one neuron-coverage
core. The profile keeps per-neuron count, min, max, mean and sum of squared deviations, merged
exactly (min/max) or with Chan et al.'s pairwise update (mean/variance); its ``result()`` is an
:class:`ActivationStatistics`.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from itertools import pairwise
from math import isfinite, prod
from typing import Any, ClassVar

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .._chunks import accumulate_like, check_per_input
from .._contract import Result, _readonly
from .._validation import check_int, check_magnitude, check_per_input_rows
from ..dependability.neuron import NeuronKCoverage
from ..exceptions import DegenerateDataWarning, LabelwiseError, user_stacklevel

__all__ = [
    "DEFAULT_KMNC_SECTIONS",
    "ActivationProfile",
    "ActivationStatistics",
    "AdequacyCoverage",
    "KMultisectionCoverage",
    "NeuronBoundaryCoverage",
    "NeuronCoverage",
    "StrongNeuronActivationCoverage",
    "TopKNeuronCoverage",
    "kmnc",
    "nbc",
    "neuron_coverage",
    "snac",
    "tknc",
]

#: DeepGauge's k for KMNC (dnn-tip has no default; pass ``k`` to match a study).
DEFAULT_KMNC_SECTIONS = 1000

Layers = ArrayLike | Sequence[ArrayLike]

# --------------------------------------------------------------------------- result


@dataclass(frozen=True)
class AdequacyCoverage(Result):
    """Coverage of a test set under one adequacy criterion.

    The headline ``value`` is the covered share of the cells (higher is better).

    Attributes
    ----------
    value:
        ``covered / total`` in [0, 1] (0 when no input was seen).
    covered:
        Cells realised by at least one test input.
    total:
        All cells (c for NC, SNAC and TKNC; c * k for KMNC; 2c for NBC).
    metric:
        ``"nc"``, ``"kmnc"``, ``"nbc"``, ``"snac"`` or ``"tknc"``.
    n_inputs:
        Test inputs seen.
    n_neurons:
        c, over all layers.
    covered_by_layer, total_by_layer:
        The same counts for each layer, in the order given.
    params:
        The criterion's parameters (``threshold``, ``k``, ``scaler``, ``inclusive``).
    covered_lower, covered_upper:
        NBC only: lower and upper corner regions covered (their sum is ``covered``).
    """

    higher_is_better: ClassVar[bool | None] = True

    value: float
    covered: int
    total: int
    metric: str
    n_inputs: int
    n_neurons: int
    covered_by_layer: tuple[int, ...]
    total_by_layer: tuple[int, ...]
    params: Mapping[str, Any] = field(default_factory=dict)
    covered_lower: int | None = None
    covered_upper: int | None = None

    @property
    def value_by_layer(self) -> tuple[float, ...]:
        """Coverage of each layer."""
        return tuple(
            c / t if t else 0.0
            for c, t in zip(self.covered_by_layer, self.total_by_layer, strict=True)
        )


@dataclass(frozen=True, eq=False)
class ActivationStatistics(Result):
    """Per-neuron statistics of the training activations (an :class:`ActivationProfile`'s
    ``result()``; arrays are read-only, NaN where no input was seen).

    Attributes
    ----------
    min, max, mean, std:
        (c,) per-neuron minimum, maximum, mean and population standard deviation (ddof=0).
    n_inputs:
        Training inputs seen.
    layer_widths:
        Neurons per layer (empty before the first batch).

    ``value`` is None: the profile defines the cells of KMNC, NBC and SNAC, it measures nothing.
    """

    value_missing_reason: ClassVar[str] = (
        "per-neuron training statistics define coverage cells; they have no headline number"
    )

    min: NDArray[np.float64]
    max: NDArray[np.float64]
    mean: NDArray[np.float64]
    std: NDArray[np.float64]
    n_inputs: int
    layer_widths: tuple[int, ...]

    @property
    def value(self) -> None:
        """None (see the class docstring)."""
        return None


# --------------------------------------------------------------------------- input checks


def _as_layers(activations: Any, name: str, *, min_rows: int) -> list[NDArray[np.float64]]:
    """One (N, ...) array or a list of them -> list of finite float64 (N, c_l) arrays."""
    if isinstance(activations, list | tuple):
        if not activations:
            raise LabelwiseError(f"{name} must hold at least one layer, got an empty list")
        raw = list(activations)
        labels = [f"{name}[{i}]" for i in range(len(raw))]
    else:
        raw = [activations]
        labels = [name]
    layers: list[NDArray[np.float64]] = []
    for x, label in zip(raw, labels, strict=True):
        arr = check_per_input_rows(x, label, what="activations", min_rows=min_rows)
        check_magnitude(arr, label)
        if arr.shape[1] == 0:
            raise LabelwiseError(f"{label} must have at least one neuron, got shape {arr.shape}")
        layers.append(np.asarray(arr, dtype=np.float64))
    rows = {a.shape[0] for a in layers}
    if len(rows) > 1:
        raise LabelwiseError(
            f"{name} must give every layer the same inputs, got row counts "
            f"{[a.shape[0] for a in layers]}"
        )
    return layers


def _check_widths(
    layers: list[NDArray[np.float64]], widths: tuple[int, ...], name: str
) -> NDArray[np.float64]:
    """The layers' widths must equal ``widths``; returns the (N, c) concatenation."""
    got = tuple(int(a.shape[1]) for a in layers)
    if got != widths:
        raise LabelwiseError(
            f"{name} must have layer widths {list(widths)} (neurons per input, per layer), "
            f"got {list(got)}"
        )
    return layers[0] if len(layers) == 1 else np.concatenate(layers, axis=1)


def _check_real(value: Any, name: str, *, minimum: float | None = None) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float | np.integer | np.floating):
        raise LabelwiseError(f"{name} must be a real number, got {value!r}")
    v = float(value)
    if not isfinite(v):
        raise LabelwiseError(f"{name} must be finite, got {value!r}")
    if minimum is not None and v < minimum:
        raise LabelwiseError(f"{name} must be >= {minimum}, got {value!r}")
    return v


def _check_layer_widths(widths: Any) -> tuple[int, ...] | None:
    if widths is None:
        return None
    if isinstance(widths, int | np.integer) and not isinstance(widths, bool):
        widths = (widths,)
    try:
        out = tuple(check_int(w, "layer_widths entries", minimum=1) for w in widths)
    except TypeError:
        raise LabelwiseError(
            f"layer_widths must be a positive integer or a sequence of them, got {widths!r}"
        ) from None
    if not out:
        raise LabelwiseError("layer_widths must name at least one layer, got an empty sequence")
    return out


# --------------------------------------------------------------------------- profile


class ActivationProfile:
    """Per-neuron statistics of the training activations (min, max, mean, std), mergeable.

    ``update(batch)`` adds training inputs (one (N, ...) array, or a list of layers),
    ``merge(other)`` folds in a profile built elsewhere (same layer widths). Min and max merge
    exactly; mean and the sum of squared deviations use Chan et al.'s pairwise formulas.
    ``std`` is the population standard deviation (ddof=0, as ``numpy.std``).

    Example
    -------
    >>> profile = ActivationProfile()
    >>> for batch in train_batches:
    ...     profile.update(batch)
    >>> kmnc(profile, test_acts, k=10).value
    """

    def __init__(self, layer_widths: int | Sequence[int] | None = None) -> None:
        self.layer_widths = _check_layer_widths(layer_widths)
        self.n_inputs = 0
        self._min: NDArray[np.float64] | None = None
        self._max: NDArray[np.float64] | None = None
        self._mean: NDArray[np.float64] | None = None
        self._m2: NDArray[np.float64] | None = None

    @classmethod
    def from_activations(cls, activations: Layers) -> ActivationProfile:
        """A profile of one pass over ``activations`` (one array is read in row blocks)."""
        return _accumulate(cls(), activations, "activations")

    def __repr__(self) -> str:
        return f"ActivationProfile(layer_widths={self.layer_widths}, n_inputs={self.n_inputs})"

    @property
    def n_neurons(self) -> int:
        return 0 if self.layer_widths is None else sum(self.layer_widths)

    def update(self, activations: Layers) -> ActivationProfile:
        """Add a batch of training activations."""
        layers = _as_layers(activations, "activations", min_rows=0)
        widths = tuple(int(a.shape[1]) for a in layers)
        if self.layer_widths is None:
            self.layer_widths = widths
        x = _check_widths(layers, self.layer_widths, "activations")
        n = int(x.shape[0])
        if n == 0:
            return self
        mean = x.mean(axis=0)
        m2 = np.square(x - mean).sum(axis=0)
        self._fold(n, x.min(axis=0), x.max(axis=0), mean, m2)
        return self

    def _fold(
        self,
        n: int,
        lo: NDArray[np.float64],
        hi: NDArray[np.float64],
        mean: NDArray[np.float64],
        m2: NDArray[np.float64],
    ) -> None:
        if self._min is None or self._max is None or self._mean is None or self._m2 is None:
            self._min, self._max = lo.copy(), hi.copy()
            self._mean, self._m2 = mean.copy(), m2.copy()
            self.n_inputs = n
            return
        na = self.n_inputs
        total = na + n
        delta = mean - self._mean
        self._mean = self._mean + delta * (n / total)
        self._m2 = self._m2 + m2 + np.square(delta) * (na * n / total)
        np.minimum(self._min, lo, out=self._min)
        np.maximum(self._max, hi, out=self._max)
        self.n_inputs = total

    def merge(self, other: ActivationProfile) -> ActivationProfile:
        """Fold in ``other`` (profiles of disjoint parts of the training set)."""
        if not isinstance(other, ActivationProfile):
            raise LabelwiseError(f"can only merge an ActivationProfile, got {type(other).__name__}")
        if (
            self.layer_widths is not None
            and other.layer_widths is not None
            and other.layer_widths != self.layer_widths
        ):
            raise LabelwiseError(
                f"profiles must have the same layer widths, got {self.layer_widths} and "
                f"{other.layer_widths}"
            )
        if other.n_inputs == 0:
            if self.layer_widths is None:
                self.layer_widths = other.layer_widths
            return self
        self.layer_widths = other.layer_widths
        assert other._min is not None and other._max is not None
        assert other._mean is not None and other._m2 is not None
        self._fold(other.n_inputs, other._min, other._max, other._mean, other._m2)
        return self

    def reset(self) -> ActivationProfile:
        """Forget all inputs (the layer widths stay)."""
        self.n_inputs = 0
        self._min = self._max = self._mean = self._m2 = None
        return self

    def result(self) -> ActivationStatistics:
        """The statistics so far (NaN arrays of width c before any input)."""
        widths = self.layer_widths or ()
        if self.n_inputs == 0:
            nan = np.full(sum(widths), np.nan)
            return ActivationStatistics(nan, nan, nan, nan, 0, widths)
        return ActivationStatistics(self.min, self.max, self.mean, self.std, self.n_inputs, widths)

    def _require(self) -> None:
        if self.n_inputs == 0:
            raise LabelwiseError(
                "the activation profile must have seen at least one training input"
            )

    def _seen(self, stat: NDArray[np.float64] | None) -> NDArray[np.float64]:
        """``stat`` (one of the running arrays) once an input was seen, else the error."""
        self._require()
        assert stat is not None
        return stat

    @property
    def min(self) -> NDArray[np.float64]:
        """(c,) per-neuron minimum over the training inputs (read-only copy)."""
        return _readonly(self._seen(self._min))

    @property
    def max(self) -> NDArray[np.float64]:
        """(c,) per-neuron maximum over the training inputs (read-only copy)."""
        return _readonly(self._seen(self._max))

    @property
    def mean(self) -> NDArray[np.float64]:
        """(c,) per-neuron mean over the training inputs (read-only copy)."""
        return _readonly(self._seen(self._mean))

    @property
    def std(self) -> NDArray[np.float64]:
        """(c,) per-neuron population standard deviation (ddof=0, read-only copy)."""
        m2 = self._seen(self._m2)
        return _readonly(np.sqrt(np.maximum(m2, 0.0) / self.n_inputs))


def _as_profile(train: ActivationProfile | Layers) -> ActivationProfile:
    if isinstance(train, ActivationProfile):
        train._require()
        return train
    if isinstance(train, list | tuple):
        return ActivationProfile().update(_as_layers(train, "train_activations", min_rows=1))
    return _accumulate(ActivationProfile(), train, "train_activations")


def _accumulate(template: Any, activations: Layers, name: str) -> Any:
    """``template`` (empty) updated with ``activations``: a list of layers in memory, one
    (N, ...) array in row blocks (out-of-core piles; a dask array's blocks as Dask tasks, see
    :mod:`labelwise._chunks`), the blocks' accumulators merged."""
    if isinstance(activations, list | tuple):
        return template.update(_as_layers(activations, name, min_rows=1))
    arr = check_per_input(activations, name, noun="activations")
    if prod(arr.shape[1:]) == 0:
        raise LabelwiseError(f"{name} must have at least one neuron, got shape {arr.shape}")
    return accumulate_like(template, arr, name=name)


# --------------------------------------------------------------------------- accumulators


class _Coverage:
    """Shared update/merge/result over a boolean table of cells (neurons x cells per neuron)."""

    metric = ""
    cells_per_neuron = 1

    def __init__(self, layer_widths: tuple[int, ...] | None) -> None:
        self.layer_widths = layer_widths
        self.n_inputs = 0
        self._covered: NDArray[np.bool_] | None = None
        if layer_widths is not None:
            self._allocate()

    def _allocate(self) -> None:
        assert self.layer_widths is not None
        self._covered = np.zeros((sum(self.layer_widths), self.cells_per_neuron), dtype=bool)

    def _table(self) -> NDArray[np.bool_]:
        """The (c, cells_per_neuron) covered table."""
        assert self._covered is not None
        return self._covered

    def _merge_table(self, other: Any) -> None:
        assert self._covered is not None and other._covered is not None
        self._covered |= other._covered

    def reset(self) -> Any:
        """Forget all inputs (the setup and the layer widths stay)."""
        if self.layer_widths is not None:
            self._allocate()
        self.n_inputs = 0
        return self

    def _params(self) -> dict[str, Any]:
        raise NotImplementedError

    def _same_setup(self, other: _Coverage) -> bool:
        return self._params() == other._params()

    def _mark(self, layers: list[NDArray[np.float64]], x: NDArray[np.float64]) -> None:
        raise NotImplementedError

    def __repr__(self) -> str:
        params = ", ".join(f"{k}={v!r}" for k, v in self._params().items())
        return (
            f"{type(self).__name__}({params}, layer_widths={self.layer_widths}, "
            f"n_inputs={self.n_inputs})"
        )

    def update(self, activations: Layers) -> Any:
        """Add a batch of test activations: one (N, ...) array or a list of layers."""
        layers = _as_layers(activations, "activations", min_rows=0)
        if self.layer_widths is None:
            self.layer_widths = tuple(int(a.shape[1]) for a in layers)
            self._allocate()
        x = _check_widths(layers, self.layer_widths, "activations")
        if x.shape[0]:
            self._mark(layers, x)
        self.n_inputs += int(x.shape[0])
        return self

    def merge(self, other: Any) -> Any:
        """Fold in an accumulator of the same kind and setup (exact: a union of cells)."""
        if type(other) is not type(self):
            raise LabelwiseError(
                f"can only merge a {type(self).__name__}, got {type(other).__name__}"
            )
        if not self._same_setup(other):
            raise LabelwiseError(
                f"can only merge accumulators with the same setup, got {self._params()} and "
                f"{other._params()}"
            )
        if other.layer_widths is not None:
            if self.layer_widths is None:
                self.layer_widths = other.layer_widths
                self._allocate()
            elif self.layer_widths != other.layer_widths:
                raise LabelwiseError(
                    f"can only merge accumulators with the same layer widths, got "
                    f"{self.layer_widths} and {other.layer_widths}"
                )
            self._merge_table(other)
        self.n_inputs += other.n_inputs
        return self

    def result(self) -> AdequacyCoverage:
        """The coverage of every input seen so far."""
        if self.layer_widths is None:
            raise LabelwiseError(
                f"{type(self).__name__} has no layer widths yet: update it with activations "
                "(or pass layer_widths) before asking for a result"
            )
        table = self._table()
        per_neuron = table.sum(axis=1)
        bounds = np.cumsum((0, *self.layer_widths))
        by_layer = tuple(int(per_neuron[a:b].sum()) for a, b in pairwise(bounds.tolist()))
        total_by_layer = tuple(w * self.cells_per_neuron for w in self.layer_widths)
        covered, total = sum(by_layer), sum(total_by_layer)
        extra: dict[str, Any] = {}
        if self.metric == "nbc":
            extra = {
                "covered_lower": int(table[:, 0].sum()),
                "covered_upper": int(table[:, 1].sum()),
            }
        return AdequacyCoverage(
            value=covered / total if self.n_inputs else 0.0,
            covered=covered,
            total=total,
            metric=self.metric,
            n_inputs=self.n_inputs,
            n_neurons=sum(self.layer_widths),
            covered_by_layer=by_layer,
            total_by_layer=total_by_layer,
            params=self._params(),
            **extra,
        )


class NeuronCoverage(_Coverage):
    """Mergeable neuron coverage NC: share of neurons with ``a > threshold`` for some input.

    ``layer_widths`` is taken from the first batch when not given. The counting is done by
    :class:`labelwise.dependability.NeuronKCoverage` with k = 1 (one neuron-coverage core):
    NC is the "on" half of its 1-activation cells.
    """

    metric = "nc"

    def __init__(
        self, threshold: float = 0.0, *, layer_widths: int | Sequence[int] | None = None
    ) -> None:
        self.threshold = _check_real(threshold, "threshold")
        self._core: NeuronKCoverage | None = None
        super().__init__(_check_layer_widths(layer_widths))

    def _allocate(self) -> None:
        assert self.layer_widths is not None
        self._core = NeuronKCoverage(sum(self.layer_widths), k=1, threshold=self.threshold)

    def _table(self) -> NDArray[np.bool_]:
        assert self._core is not None
        return self._core.ever_on_mask()[:, None]

    def _merge_table(self, other: Any) -> None:
        assert self._core is not None and other._core is not None
        self._core.merge(other._core)

    def _params(self) -> dict[str, Any]:
        return {"threshold": self.threshold}

    def _mark(self, layers: list[NDArray[np.float64]], x: NDArray[np.float64]) -> None:
        assert self._core is not None
        self._core.update(x)


class TopKNeuronCoverage(_Coverage):
    """Mergeable top-k neuron coverage TKNC: share of neurons among the k largest of their
    layer for some input (ties toward the higher neuron index)."""

    metric = "tknc"

    def __init__(self, k: int = 1, *, layer_widths: int | Sequence[int] | None = None) -> None:
        self.k = check_int(k, "k", minimum=1)
        super().__init__(_check_layer_widths(layer_widths))

    def _params(self) -> dict[str, Any]:
        return {"k": self.k}

    def _mark(self, layers: list[NDArray[np.float64]], x: NDArray[np.float64]) -> None:
        assert self._covered is not None
        offset = 0
        for layer in layers:
            width = layer.shape[1]
            kk = min(self.k, width)
            if kk == width:
                self._covered[offset : offset + width, 0] = True
            else:
                top = np.argsort(layer, axis=1, kind="stable")[:, width - kk :]
                self._covered[offset + np.unique(top), 0] = True
            offset += width


class _ProfileCoverage(_Coverage):
    """Coverage whose cells are defined by a snapshot of a training profile."""

    def _boundaries(self) -> tuple[NDArray[np.float64], ...]:
        raise NotImplementedError

    def _same_setup(self, other: _Coverage) -> bool:
        assert isinstance(other, _ProfileCoverage)
        return (
            self._params() == other._params()
            and self.layer_widths == other.layer_widths
            and all(
                np.array_equal(a, b)
                for a, b in zip(self._boundaries(), other._boundaries(), strict=True)
            )
        )


class KMultisectionCoverage(_ProfileCoverage):
    """Mergeable k-multisection neuron coverage KMNC (see the module docstring).

    The section bounds are fixed from ``profile`` when the accumulator is built (later
    updates of the profile do not change them).
    """

    metric = "kmnc"

    def __init__(self, profile: ActivationProfile, k: int = DEFAULT_KMNC_SECTIONS) -> None:
        self.k = check_int(k, "k", minimum=1)
        if not isinstance(profile, ActivationProfile):
            raise LabelwiseError(
                f"profile must be an ActivationProfile, got {type(profile).__name__}"
            )
        self._lo = profile.min
        self._step = _readonly((profile.max - profile.min) / self.k)
        self.cells_per_neuron = self.k
        constant = int(np.count_nonzero(self._step <= 0))
        if constant:
            warnings.warn(
                f"{constant} of {self._lo.size} neurons are constant over the training "
                "activations: their KMNC sections can never be covered but count in the total "
                "(as in DeepGauge and dnn-tip)",
                DegenerateDataWarning,
                stacklevel=user_stacklevel(),
            )
        super().__init__(profile.layer_widths)

    def _params(self) -> dict[str, Any]:
        return {"k": self.k}

    def _boundaries(self) -> tuple[NDArray[np.float64], ...]:
        return (self._lo, self._step)

    def _mark(self, layers: list[NDArray[np.float64]], x: NDArray[np.float64]) -> None:
        assert self._covered is not None
        lo, step, k = self._lo, self._step, self.k
        live = step > 0
        safe = np.where(live, step, 1.0)
        with np.errstate(over="ignore", invalid="ignore"):
            est = np.floor((x - lo) / safe)
        idx = np.clip(np.nan_to_num(est, nan=0.0), -1, k).astype(np.int64)
        # Correct the estimate against the exact bounds t_i = lo + step * i (dnn-tip's
        # floating-point expression), so membership is decided exactly as there.
        for _ in range(4):
            below = (x < lo + step * idx) & (idx > -1)
            above = (x >= lo + step * (idx + 1)) & (idx < k)
            if not (below.any() or above.any()):
                break
            idx = idx - below + above
        inside = (
            live & (idx >= 0) & (idx < k) & (lo + step * idx <= x) & (x < lo + step * (idx + 1))
        )
        rows, cols = np.nonzero(inside)
        self._covered[cols, idx[rows, cols]] = True


class NeuronBoundaryCoverage(_ProfileCoverage):
    """Mergeable neuron boundary coverage NBC: lower and upper corner regions, 2 per neuron.

    Boundaries ``min - scaler * std`` and ``max + scaler * std`` from ``profile``; strict
    comparisons (DeepGauge) unless ``inclusive=True`` (dnn-tip's ``<=`` / ``>=``).
    """

    metric = "nbc"
    cells_per_neuron = 2

    def __init__(
        self, profile: ActivationProfile, *, scaler: float = 0.0, inclusive: bool = False
    ) -> None:
        if not isinstance(profile, ActivationProfile):
            raise LabelwiseError(
                f"profile must be an ActivationProfile, got {type(profile).__name__}"
            )
        self.scaler = _check_real(scaler, "scaler", minimum=0.0)
        self.inclusive = bool(inclusive)
        std = profile.std
        self._lower = _readonly(profile.min - self.scaler * std)
        self._upper = _readonly(profile.max + self.scaler * std)
        super().__init__(profile.layer_widths)

    def _params(self) -> dict[str, Any]:
        return {"scaler": self.scaler, "inclusive": self.inclusive}

    def _boundaries(self) -> tuple[NDArray[np.float64], ...]:
        return (self._lower, self._upper)

    def _mark(self, layers: list[NDArray[np.float64]], x: NDArray[np.float64]) -> None:
        assert self._covered is not None
        if self.inclusive:
            low, high = x <= self._lower, x >= self._upper
        else:
            low, high = x < self._lower, x > self._upper
        self._covered[:, 0] |= low.any(axis=0)
        self._covered[:, 1] |= high.any(axis=0)


class StrongNeuronActivationCoverage(_ProfileCoverage):
    """Mergeable strong neuron activation coverage SNAC: upper corner regions, 1 per neuron.

    Boundary ``max + scaler * std`` from ``profile``; strict comparison (DeepGauge) unless
    ``inclusive=True`` (dnn-tip's ``>=``).
    """

    metric = "snac"

    def __init__(
        self, profile: ActivationProfile, *, scaler: float = 0.0, inclusive: bool = False
    ) -> None:
        if not isinstance(profile, ActivationProfile):
            raise LabelwiseError(
                f"profile must be an ActivationProfile, got {type(profile).__name__}"
            )
        self.scaler = _check_real(scaler, "scaler", minimum=0.0)
        self.inclusive = bool(inclusive)
        self._upper = _readonly(profile.max + self.scaler * profile.std)
        super().__init__(profile.layer_widths)

    def _params(self) -> dict[str, Any]:
        return {"scaler": self.scaler, "inclusive": self.inclusive}

    def _boundaries(self) -> tuple[NDArray[np.float64], ...]:
        return (self._upper,)

    def _mark(self, layers: list[NDArray[np.float64]], x: NDArray[np.float64]) -> None:
        assert self._covered is not None
        high = x >= self._upper if self.inclusive else x > self._upper
        self._covered[:, 0] |= high.any(axis=0)


# --------------------------------------------------------------------------- one-shot


def neuron_coverage(activations: Layers, threshold: float = 0.0) -> AdequacyCoverage:
    """Neuron coverage NC (DeepXplore): share of neurons with a value ``> threshold`` on some
    test input (dnn-tip ``NAC``; no per-layer rescaling).

    ``activations``: one (N, ...) array or a list of per-layer (N, ...) arrays.
    """
    return _accumulate(NeuronCoverage(threshold), activations, "activations").result()


def kmnc(
    train_activations: ActivationProfile | Layers,
    test_activations: Layers,
    k: int = DEFAULT_KMNC_SECTIONS,
) -> AdequacyCoverage:
    """k-multisection neuron coverage KMNC (DeepGauge): share of the c * k sections
    ``[lo + step * i, lo + step * (i + 1))``, ``step = (max - min) / k`` of the training range,
    hit by some test input (see the module docstring).

    ``train_activations`` is an :class:`ActivationProfile` or the training activations.
    """
    k = check_int(k, "k", minimum=1)
    acc = KMultisectionCoverage(_as_profile(train_activations), k)
    return _accumulate(acc, test_activations, "test_activations").result()


def nbc(
    train_activations: ActivationProfile | Layers,
    test_activations: Layers,
    *,
    scaler: float = 0.0,
    inclusive: bool = False,
) -> AdequacyCoverage:
    """Neuron boundary coverage NBC (DeepGauge): share of the 2c corner regions
    ``a < min - scaler * std`` and ``a > max + scaler * std`` hit by some test input.
    ``inclusive=True`` uses ``<=`` / ``>=`` as dnn-tip does.
    """
    acc = NeuronBoundaryCoverage(_as_profile(train_activations), scaler=scaler, inclusive=inclusive)
    return _accumulate(acc, test_activations, "test_activations").result()


def snac(
    train_activations: ActivationProfile | Layers,
    test_activations: Layers,
    *,
    scaler: float = 0.0,
    inclusive: bool = False,
) -> AdequacyCoverage:
    """Strong neuron activation coverage SNAC (DeepGauge): share of neurons with
    ``a > max + scaler * std`` on some test input. ``inclusive=True`` uses ``>=`` (dnn-tip).
    """
    acc = StrongNeuronActivationCoverage(
        _as_profile(train_activations), scaler=scaler, inclusive=inclusive
    )
    return _accumulate(acc, test_activations, "test_activations").result()


def tknc(test_activations: Layers, k: int = 1) -> AdequacyCoverage:
    """Top-k neuron coverage TKNC (DeepGauge): share of neurons that are among the k largest
    of their layer on some test input. Pass a list of layers: a single array is one layer.
    """
    return _accumulate(TopKNeuronCoverage(k), test_activations, "test_activations").result()

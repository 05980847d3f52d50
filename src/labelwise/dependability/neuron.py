"""Neuron k-activation coverage (Cheng et al. 2018, "Towards Dependability Metrics for Neural
Networks", Sec. II-B, Eq. 2).

A neuron of the analysed layer is *on* for an input when its value is ``> threshold`` (the
paper's ReLU reading: default 0) and *off* otherwise. For a fixed k, a *cell* is a pair
(k-subset of the layer's c neurons, on/off pattern of those k neurons); there are
``C(c, k) * 2**k`` cells. An input *covers* the k-subsets' cells it realises (one per subset).
The metric is

    M_neu-k-act = (# cells covered by at least one input) / (C(c, k) * 2**k).

Each unordered subset counts once (neurons i < j < l); k = 1 is the layer's on/off coverage
(its "on" half is the usual neuron activation coverage, NAC).

Implementation. The state is one byte per k-subset whose bit p says "pattern p was seen"
(p = sum of on_m << (k - 1 - m) over the subset's neurons in increasing order: for a pair,
p = 2 * on_i + on_j). Merging two states is a bitwise OR, so chunked or distributed runs are
exact. An update packs the batch's on/off matrix into 64-bit words per neuron (inputs along the
bits), counts co-activations with AND + popcount (s_i, s_ij and, for k = 3, t_ijl =
#inputs with i, j and l on), and derives every pattern's count by inclusion-exclusion, e.g.
n_100 = s_i - s_ij - s_il + t_ijl. Only the "all on" counts are computed, so k = 3 over c neurons
and n inputs costs about C(c, 3) * n / 64 word operations (c = 256, n = 10,000: under a second
on two cores); subsets whose 2**k patterns are all seen are skipped in later batches.
The state for orders 1..k is kept, so the result also reports the coverage for every k' <= k.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import comb, isfinite, prod
from typing import Any, ClassVar

import numba as nb
import numpy as np
from numpy.typing import ArrayLike, NDArray

from .._chunks import accumulate_like, check_per_input
from .._contract import Result
from .._numba import threads_for
from .._validation import check_int, check_per_input_rows
from ..exceptions import LabelwiseError

__all__ = [
    "KActivationCoverage",
    "NeuronKCoverage",
    "UncoveredCells",
    "k_activation_coverage",
]

MAX_K = 3
#: Largest number of k-subsets (one state byte each) an accumulator may hold.
MAX_SUBSETS = 1 << 31
#: Rows per packed block inside ``update`` (bounded memory; exact because states are ORed).
ROW_BLOCK = 1 << 16
#: Below this many word operations the kernels run on one thread (start-up costs more).
PARALLEL_WORK = 4_000_000

_POP8 = np.array([bin(v).count("1") for v in range(256)], dtype=np.int64)


# --------------------------------------------------------------------------- results


@dataclass(frozen=True)
class KActivationCoverage(Result):
    """Neuron k-activation coverage of one layer (Sec. II-B, Eq. 2).

    The headline ``value`` is the covered share of the order-k cells (higher is better).

    Attributes
    ----------
    value:
        ``covered / total``, in [0, 1] (0 when no input was seen).
    covered:
        Cells (k-subset of neurons, on/off pattern) realised by at least one input.
    total:
        ``C(n_neurons, k) * 2**k``.
    k:
        Subset size (1, 2 or 3).
    threshold:
        A neuron is on when its value is ``> threshold``.
    n_inputs:
        Inputs seen.
    n_neurons:
        Width c of the layer (activations flattened per input).
    covered_by_order, total_by_order:
        The same counts for every order k' = 1..k (index k' - 1); the last entries equal
        ``covered`` and ``total``.
    covered_by_pattern:
        For order k, the number of k-subsets on which each pattern p was seen (2**k entries;
        bit k - 1 - m of p is the state of the subset's m-th neuron, neurons in increasing
        order: for k = 2, p = 0 off/off, 1 off/on, 2 on/off, 3 on/on).
    ever_on:
        Neurons on for at least one input (NAC numerator); ``active_share`` divides by c.
    """

    higher_is_better: ClassVar[bool | None] = True

    value: float
    covered: int
    total: int
    k: int
    threshold: float
    n_inputs: int
    n_neurons: int
    covered_by_order: tuple[int, ...]
    total_by_order: tuple[int, ...]
    covered_by_pattern: tuple[int, ...]
    ever_on: int

    @property
    def value_by_order(self) -> tuple[float, ...]:
        """Coverage for every order k' = 1..k."""
        return tuple(c / t for c, t in zip(self.covered_by_order, self.total_by_order, strict=True))

    @property
    def active_share(self) -> float:
        """Share of neurons on for at least one input (neuron activation coverage, NAC)."""
        return self.ever_on / self.n_neurons


@dataclass(frozen=True, eq=False)
class UncoveredCells(Result):
    """Cells not yet covered (what new inputs would have to realise to raise the metric).

    Attributes
    ----------
    neurons:
        (m, k) int64 neuron indices of each listed cell, increasing along a row.
    patterns:
        (m, k) bool, True where the cell wants the neuron on.
    n_uncovered:
        All uncovered cells (``m`` may be smaller when the listing was capped); also the
        headline ``value`` (lower is better).
    """

    higher_is_better: ClassVar[bool | None] = False

    neurons: NDArray[np.int64]
    patterns: NDArray[np.bool_]
    n_uncovered: int

    @property
    def value(self) -> float:
        """``n_uncovered`` as a float."""
        return float(self.n_uncovered)

    def __len__(self) -> int:
        return int(self.neurons.shape[0])


# --------------------------------------------------------------------------- kernels


@nb.njit(inline="always")
def _popcount(x: Any) -> Any:
    x = x - ((x >> np.uint64(1)) & np.uint64(0x5555555555555555))
    x = (x & np.uint64(0x3333333333333333)) + ((x >> np.uint64(2)) & np.uint64(0x3333333333333333))
    x = (x + (x >> np.uint64(4))) & np.uint64(0x0F0F0F0F0F0F0F0F)
    return (x * np.uint64(0x0101010101010101)) >> np.uint64(56)


def _co_counts_impl(packed: Any, n_tasks: int) -> Any:
    """S[i, j] = #inputs with neurons i and j on (i <= j; S[i, i] = #inputs with i on)."""
    c, words = packed.shape
    out = np.zeros((c, c), dtype=np.int64)
    for t in nb.prange(n_tasks):
        for i in range(t, c, n_tasks):
            for j in range(i, c):
                s = np.uint64(0)
                for w in range(words):
                    s += _popcount(packed[i, w] & packed[j, w])
                out[i, j] = s
    return out


@nb.njit(cache=True, nogil=True)
def _update_pairs(co: Any, n: int, seen: Any) -> None:
    """OR the pair patterns present among ``n`` inputs into ``seen`` (one byte per pair)."""
    c = co.shape[0]
    q = 0
    for i in range(c):
        si = co[i, i]
        for j in range(i + 1, c):
            sj = co[j, j]
            n11 = co[i, j]
            bits = 0
            if n - si - sj + n11 > 0:
                bits |= 1
            if sj - n11 > 0:
                bits |= 2
            if si - n11 > 0:
                bits |= 4
            if n11 > 0:
                bits |= 8
            seen[q] = seen[q] | np.uint8(bits)
            q += 1


def _update_triples_impl(
    packed: Any, co: Any, n: int, seen: Any, pair_i: Any, pair_j: Any, base: Any, n_tasks: int
) -> None:
    """OR the triple patterns present among ``n`` inputs into ``seen`` (one byte per triple).

    Pairs (i, j) are dealt to tasks round-robin, which balances the triangular work; a task
    writes only its own pairs' triples (base[p] .. base[p] + c - j - 2), so there are no races.
    """
    c, words = packed.shape
    n_pairs = pair_i.shape[0]
    for t in nb.prange(n_tasks):
        both = np.empty(words, dtype=np.uint64)
        for p in range(t, n_pairs, n_tasks):
            i = pair_i[p]
            j = pair_j[p]
            sij = co[i, j]
            si = co[i, i]
            sj = co[j, j]
            built = False
            for ll in range(j + 1, c):
                idx = base[p] + ll - j - 1
                if seen[idx] == 255:
                    continue
                t3 = np.int64(0)
                if sij > 0:
                    if not built:
                        for w in range(words):
                            both[w] = packed[i, w] & packed[j, w]
                        built = True
                    acc = np.uint64(0)
                    for w in range(words):
                        acc += _popcount(both[w] & packed[ll, w])
                    t3 = np.int64(acc)
                sl = co[ll, ll]
                sil = co[i, ll]
                sjl = co[j, ll]
                bits = 0
                if n - si - sj - sl + sij + sil + sjl - t3 > 0:
                    bits |= 1  # 000
                if sl - sil - sjl + t3 > 0:
                    bits |= 2  # 001
                if sj - sij - sjl + t3 > 0:
                    bits |= 4  # 010
                if sjl - t3 > 0:
                    bits |= 8  # 011
                if si - sij - sil + t3 > 0:
                    bits |= 16  # 100
                if sil - t3 > 0:
                    bits |= 32  # 101
                if sij - t3 > 0:
                    bits |= 64  # 110
                if t3 > 0:
                    bits |= 128  # 111
                seen[idx] = seen[idx] | np.uint8(bits)


# One parallel dispatcher per function (numba's cache key ignores ``parallel``).
_co_counts = nb.njit(parallel=True, cache=True, nogil=True)(_co_counts_impl)
_update_triples = nb.njit(parallel=True, cache=True, nogil=True)(_update_triples_impl)


def _tasks_for(work: int) -> Any:
    return threads_for(work, PARALLEL_WORK, tasks_per_thread=8)


def _pack(on: NDArray[np.bool_]) -> NDArray[np.uint64]:
    """(n, c) on/off -> (c, ceil(n / 64)) uint64, inputs along the bits (zero padding)."""
    by = np.packbits(on.T, axis=1, bitorder="little")
    pad = (-by.shape[1]) % 8
    if pad:
        by = np.pad(by, ((0, 0), (0, pad)))
    return np.ascontiguousarray(by).view(np.uint64)


# --------------------------------------------------------------------------- accumulator


def _check_threshold(threshold: Any) -> float:
    if isinstance(threshold, bool) or not isinstance(
        threshold, int | float | np.integer | np.floating
    ):
        raise LabelwiseError(f"threshold must be a real number, got {threshold!r}")
    value = float(threshold)
    if not isfinite(value):
        raise LabelwiseError(f"threshold must be finite, got {threshold!r}")
    return value


def _check_k_args(n_neurons: Any, k: Any, threshold: Any) -> tuple[int, int, float]:
    n_neurons = check_int(n_neurons, "n_neurons", minimum=1)
    k = check_int(k, "k", minimum=1, maximum=MAX_K)
    if k > n_neurons:
        raise LabelwiseError(f"k must be <= n_neurons ({n_neurons}), got {k}")
    if comb(n_neurons, k) > MAX_SUBSETS:
        raise LabelwiseError(
            f"k={k} over n_neurons={n_neurons} needs {comb(n_neurons, k):,} subsets "
            f"(one byte each), above the limit of {MAX_SUBSETS:,}: use a smaller k or fewer "
            "neurons"
        )
    return n_neurons, k, _check_threshold(threshold)


class NeuronKCoverage:
    """Mergeable neuron k-activation coverage of one layer (Sec. II-B).

    ``update(batch)`` adds inputs, ``merge(other)`` folds in an accumulator built elsewhere
    (same ``n_neurons``, ``k`` and ``threshold``), ``result()`` returns the
    :class:`KActivationCoverage`. Both return ``self``. Memory: ``C(n_neurons, k)`` bytes
    (k = 3 over 256 neurons: 2.8 MB), plus the lower orders.

    Example
    -------
    >>> acc = NeuronKCoverage(256, k=3)
    >>> for batch in batches:          # (n, 256) activations of the layer
    ...     acc.update(batch)
    >>> acc.result().value
    """

    def __init__(self, n_neurons: int, k: int = 2, threshold: float = 0.0) -> None:
        self.n_neurons, self.k, self.threshold = _check_k_args(n_neurons, k, threshold)
        self.n_inputs = 0
        # _seen[o - 1]: one byte per o-subset, bit p = pattern p seen.
        self._seen: list[NDArray[np.uint8]] = [
            np.zeros(comb(self.n_neurons, o), dtype=np.uint8) for o in range(1, self.k + 1)
        ]
        self._pairs: tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.int64]] | None = None

    def __repr__(self) -> str:
        return (
            f"NeuronKCoverage(n_neurons={self.n_neurons}, k={self.k}, "
            f"threshold={self.threshold}, n_inputs={self.n_inputs})"
        )

    # ---- state

    def _pair_index(self) -> tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.int64]]:
        """Pairs i < j in lexicographic order and the index of triple (i, j, j + 1)."""
        if self._pairs is None:
            pi, pj = np.triu_indices(self.n_neurons, k=1)
            pi = pi.astype(np.int64)
            pj = pj.astype(np.int64)
            per_pair = self.n_neurons - 1 - pj
            base = np.zeros(pi.shape[0], dtype=np.int64)
            np.cumsum(per_pair[:-1], out=base[1:])
            self._pairs = (pi, pj, base)
        return self._pairs

    def update(self, activations: ArrayLike) -> NeuronKCoverage:
        """Add a batch of (N, n_neurons) activations (higher ranks are flattened per input)."""
        x = check_per_input_rows(activations, "activations", min_rows=0)
        if x.shape[1] != self.n_neurons:
            raise LabelwiseError(
                f"activations must have n_neurons={self.n_neurons} values per input, got "
                f"{x.shape[1]} (shape {np.shape(activations)})"
            )
        thr = np.float64(self.threshold)  # compare exactly, whatever the array's dtype
        for start in range(0, x.shape[0], ROW_BLOCK):
            on = x[start : start + ROW_BLOCK] > thr
            self._update_block(on)
        self.n_inputs += int(x.shape[0])
        return self

    def _update_block(self, on: NDArray[np.bool_]) -> None:
        n = int(on.shape[0])
        n_on = on.sum(axis=0)
        self._seen[0] |= ((n_on < n).astype(np.uint8)) | ((n_on > 0).astype(np.uint8) << 1)
        if self.k == 1:
            return
        packed = _pack(on)
        c, words = packed.shape
        with _tasks_for(c * c * words // 2) as tasks:
            co = _co_counts(packed, tasks)
        _update_pairs(co, n, self._seen[1])
        if self.k == 3:
            pi, pj, base = self._pair_index()
            with _tasks_for(self._seen[2].shape[0] * words) as tasks:
                _update_triples(packed, co, n, self._seen[2], pi, pj, base, tasks)

    def merge(self, other: NeuronKCoverage) -> NeuronKCoverage:
        """Fold in ``other`` (exact: the covered cells are the union)."""
        if not isinstance(other, NeuronKCoverage):
            raise LabelwiseError(f"can only merge a NeuronKCoverage, got {type(other).__name__}")
        mine = (self.n_neurons, self.k, self.threshold)
        theirs = (other.n_neurons, other.k, other.threshold)
        if mine != theirs:
            raise LabelwiseError(
                f"merge needs the same (n_neurons, k, threshold), got {mine} and {theirs}"
            )
        for a, b in zip(self._seen, other._seen, strict=True):
            a |= b
        self.n_inputs += other.n_inputs
        return self

    def reset(self) -> NeuronKCoverage:
        """Forget all inputs."""
        for s in self._seen:
            s.fill(0)
        self.n_inputs = 0
        return self

    def ever_on_mask(self) -> NDArray[np.bool_]:
        """(n_neurons,) True for the neurons on (``> threshold``) for at least one input.

        This is the neuron coverage NC of :mod:`labelwise.quality.adequacy` (one core).
        """
        return (self._seen[0] & np.uint8(2)) != 0

    def result(self) -> KActivationCoverage:
        """The coverage so far."""
        covered = tuple(int(_POP8[s].sum()) for s in self._seen)
        totals = tuple(comb(self.n_neurons, o) * 2**o for o in range(1, self.k + 1))
        top = self._seen[-1]
        by_pattern = tuple(int(np.count_nonzero(top & np.uint8(1 << p))) for p in range(2**self.k))
        return KActivationCoverage(
            value=covered[-1] / totals[-1],
            covered=covered[-1],
            total=totals[-1],
            k=self.k,
            threshold=self.threshold,
            n_inputs=self.n_inputs,
            n_neurons=self.n_neurons,
            covered_by_order=covered,
            total_by_order=totals,
            covered_by_pattern=by_pattern,
            ever_on=int(np.count_nonzero(self.ever_on_mask())),
        )

    def uncovered(self, max_cells: int | None = 1000) -> UncoveredCells:
        """Cells of order k not covered yet, by subset then pattern (at most ``max_cells``)."""
        if max_cells is not None:
            max_cells = check_int(max_cells, "max_cells", minimum=0)
        seen = self._seen[-1]
        full = np.uint8(2**2**self.k - 1)
        missing = seen != full
        n_uncovered = int(np.count_nonzero(missing)) * 2**self.k - int(_POP8[seen[missing]].sum())
        subsets = np.flatnonzero(missing)
        if max_cells is not None:
            subsets = subsets[:max_cells]  # each holds at least one missing cell
        n_patterns = 2**self.k
        absent = (seen[subsets, None] >> np.arange(n_patterns, dtype=np.uint8)) & 1 == 0
        row, pat = np.nonzero(absent)  # by subset, then pattern
        idx = subsets[row].astype(np.int64)
        pat = pat.astype(np.int64)
        if max_cells is not None:
            idx, pat = idx[:max_cells], pat[:max_cells]
        neurons = self._unrank(idx)
        shifts = np.arange(self.k - 1, -1, -1)
        patterns = ((pat[:, None] >> shifts[None, :]) & 1).astype(bool)
        return UncoveredCells(neurons=neurons, patterns=patterns, n_uncovered=n_uncovered)

    def _unrank(self, idx: NDArray[np.int64]) -> NDArray[np.int64]:
        """Subset indices (lexicographic order) -> (m, k) neuron indices."""
        if self.k == 1:
            return idx[:, None].copy()
        pi, pj, base = self._pair_index()
        if self.k == 2:
            return np.stack([pi[idx], pj[idx]], axis=1)
        p = np.searchsorted(base, idx, side="right") - 1
        return np.stack([pi[p], pj[p], pj[p] + 1 + idx - base[p]], axis=1)


def k_activation_coverage(
    activations: ArrayLike, *, k: int = 2, threshold: float = 0.0
) -> KActivationCoverage:
    """Neuron k-activation coverage of one layer (Cheng et al. 2018, Sec. II-B, Eq. 2).

    ``activations`` is (N, c) (or (N, ...), flattened per input); a neuron is on when its
    value is ``> threshold``. Returns the share of the ``C(c, k) * 2**k`` cells (k-subset of
    neurons, on/off pattern) that at least one input realises. For data in chunks use
    :class:`NeuronKCoverage`. Out-of-core piles (memmap, zarr, a chunk directory) are read
    in row blocks and a ``dask.array``'s blocks run as Dask tasks (:mod:`labelwise._chunks`).
    """
    x = check_per_input(activations, "activations")
    template = NeuronKCoverage(prod(x.shape[1:]), k=k, threshold=threshold)
    return accumulate_like(template, x).result()

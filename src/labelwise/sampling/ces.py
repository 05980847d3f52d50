"""Cross-entropy-based sampling over the last hidden layer (Li et al. 2019, Sec. 3.2).

Notation (paper Sec. 3.2). The pile S has N rows; the last hidden layer has m neurons.
Each neuron's range [lo_j, hi_j], observed on S, is cut into K equal sections (the last one
closed, so every value falls in exactly one section). For a set of rows T,
P_T^j(k) = |{x in T : section_j(x) = k}| / |T|. Algorithm 1 grows T from ``initial`` random
rows by ``group_size`` rows at a time, each time keeping the best of ``n_groups`` random
candidate groups under one of these objectives (each averaged over the m neurons):

- ``"ce"`` (Eq. 8):   -sum_k P_S^j(k) log max(P_T^j(k), epsilon)
- ``"ce-common"``:    Eq. 8 over only the sections with P_S^j(k) >= 0.5 / |T|, as in one
                      of the authors' scripts (rare sections cannot be matched by a small T)
- ``"kl"`` (Sec. 4.3.4): KL(P_T^j || P_S^j) = sum_k P_T^j(k) log(P_T^j(k) / P_S^j(k))

The estimator is the sample mean (Eq. 10); see :func:`labelwise.ces_estimate`.

Implementation: two streaming passes over the pile, each one read (the sections need the
global range): per-column bounds with the NaN/infinity check, then the section histogram
(numba, threads over row ranges with task-local accumulators). A NumPy array or memory-mapped
``.npy`` is read in place; zarr, dask and other sliceable arrays block by block
(``np.asarray(x[a:b])``). T's per-neuron section counts are kept incrementally; each step
reads the distinct candidate rows once, computes the section codes of the l q (group, row)
pairs, neuron by neuron, tabulates the count-dependent cell terms, and scores a group by the
change of only the (neuron, section) cells it touches, so a step costs O(l q m), independent
of N and K, and allocates nothing proportional to N (free rows are mapped from positions
through the sorted chosen rows). No pass or step keeps codes of the whole pile, so a
memory-mapped pile needs memory only for its blocks and the (K, m) tables.
"""

from __future__ import annotations

import hashlib
import warnings
from collections.abc import Iterator
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .._chunks import known_shape
from .._params import Interval, Options, Param, validate_params
from .._progress import progress_bar
from .._results import Selection
from .._validation import (
    RNGLike,
    check_budget,
    check_numeric_array,
    check_rng,
)
from ..exceptions import DegenerateDataWarning, LabelwiseError, user_stacklevel
from . import _ces_kernels as kern
from ._common import (
    check_additional,
    check_same_population,
    generator_for_extension,
    generator_state,
)

__all__ = ["CES_OBJECTIVES", "ces_objective", "ces_select"]

CES_OBJECTIVES = {"ce": kern.OBJ_CE, "ce-common": kern.OBJ_CE_COMMON, "kl": kern.OBJ_KL}

#: CES's tuning parameters (defaults: the signature of :func:`ces_select`).
CES_PARAMS = {
    "n_sections": Param(Interval(int, 1, 255), "K, sections per neuron", flag="--sections"),
    "initial": Param(Interval(int, 1, None), "p, initial random rows"),
    "group_size": Param(Interval(int, 1, None), "q, rows added per step"),
    "n_groups": Param(Interval(int, 1, None), "l, random groups tried per step", flag="--groups"),
    "objective": Param(
        Options(tuple(sorted(CES_OBJECTIVES))),
        "kl: KL(P_T||P_S) (unbiased in our studies); ce: the paper's Eq. 8; "
        "ce-common: Eq. 8 without sections rarer than 0.5/|T|",
    ),
    "epsilon": Param(Interval(float, 0.0, 1.0, closed="neither"), "floor for empty sections (ce*)"),
}


@validate_params(CES_PARAMS)
def ces_select(
    activations: ArrayLike,
    budget: int,
    *,
    n_sections: int = 20,
    initial: int = 30,
    group_size: int = 5,
    n_groups: int = 300,
    objective: str = "kl",
    epsilon: float = 1e-10,
    progress: bool = False,
    rng: RNGLike = None,
) -> Selection:
    """Cross-entropy sampling (CES), Algorithm 1 of Li et al. 2019 (Sec. 3.2, 4.1).

    Picks ``budget`` rows whose per-neuron section histogram over the last hidden layer
    matches that of the whole pile: ``initial`` (p) random rows, then groups of
    ``group_size`` (q) rows, each the best of ``n_groups`` (l) random groups of rows not yet
    chosen under ``objective`` (module docstring has the formulas). K=20, p=30, q=5, l=300
    are the paper's (Sec. 4.1). With ``budget <= initial`` the selection is a simple random
    sample. The indices are in selection order: every prefix after the initial rows and a
    whole number of groups is itself a CES selection, and :func:`labelwise.extend`
    continues the same run.

    **Default objective: KL(P_T || P_S)**, not the paper's printed Eq. 8 (``"ce"``). With
    Eq. 8 every population section that T has not hit costs about -P_S log(epsilon), so the
    search chases rare, extreme activations and the sample mean becomes biased: in
    ``tests/test_statistics.py`` Eq. 8 was biased by -1.3 accuracy points (5.8 Monte-Carlo
    standard errors) where KL was unbiased, and over the 11 contexts of
    ``labelwise study operational`` Eq. 8 averaged E(CES/SRS) = 1.22 (worse than random
    sampling; worst case 3.36) against 0.80 for KL (worst 1.39; in an earlier run with other
    random streams 1.33 against 0.89). KL is also what the paper uses for small
    piles (Sec. 4.3.4) and what the authors' scripts minimise. Eq. 8 stays available as
    ``objective="ce"``.

    Parameters
    ----------
    activations:
        (N, m) last-hidden-layer outputs of the pile (float32 is fine and fastest; higher
        rank inputs are flattened per row).
    budget:
        Number of rows to label, in [1, N].
    n_sections, initial, group_size, n_groups:
        K, p, q and l of Algorithm 1.
    objective:
        ``"kl"`` (default), ``"ce"`` (the paper's Eq. 8) or ``"ce-common"``.
    epsilon:
        Floor for P_T in the logarithm of the cross-entropy objectives (empty sections).
    progress:
        Show a progress bar over the steps.
    rng:
        Seed or ``numpy.random.Generator``.

    Notes
    -----
    Neurons that are constant on the pile fall in one section for every row; they cannot
    change the objective's ranking of groups, so they are dropped with a warning.
    """
    params = _params(n_sections, initial, group_size, n_groups, objective, epsilon)
    state = CESState(
        activations, n_sections=params["n_sections"], objective=objective, epsilon=params["epsilon"]
    )
    budget = check_budget(budget, state.n_rows)
    gen = check_rng(rng)
    indices, trace = _run(state, np.empty(0, dtype=np.int64), budget, params, gen, progress)
    return Selection(
        indices=indices,
        method="ces",
        population_size=state.n_rows,
        params=params,
        rng_state=generator_state(gen),
        diagnostics={
            "objective_trace": trace,
            "ignored_constant_neurons": state.n_constant,
            "pile_sections": state.fingerprint(indices),
        },
    )


@validate_params({k: CES_PARAMS[k] for k in ("n_sections", "objective", "epsilon")})
def ces_objective(
    activations: ArrayLike,
    rows: ArrayLike,
    *,
    n_sections: int = 20,
    objective: str = "kl",
    epsilon: float = 1e-10,
) -> float:
    """The objective of Algorithm 1 for the set of ``rows`` (sections from the whole pile)."""
    state = CESState(
        activations, n_sections=int(n_sections), objective=objective, epsilon=float(epsilon)
    )
    r = np.unique(np.asarray(rows, dtype=np.int64))
    if r.size == 0 or r.min() < 0 or r.max() >= state.n_rows:
        raise LabelwiseError(f"rows must be non-empty indices in [0, {state.n_rows}), got {rows!r}")
    state.add(r)
    return state.objective()


class _Pile:
    """Row blocks and row gathers of an (N, m) pile without reading it whole.

    A NumPy array (a memory-mapped ``.npy`` included) in float32 or float64 and C order is
    passed to the kernels as it is, one block for the whole pile (memory-mapped pages are
    read by the kernels' threads, never copied). Anything else with ``shape``, ``dtype``
    and slicing (a zarr or dask array, an HDF5 dataset, a non-contiguous or integer array)
    is read in blocks of about :data:`BLOCK_BYTES` with ``np.asarray(x[a:b])`` and, for the
    candidate rows of the steps, by one sorted gather per step. Integer and boolean values
    are converted to float64 block by block.
    """

    def __init__(self, activations: Any, name: str = "activations"):
        if isinstance(activations, np.ndarray) or not _is_array_like(activations):
            x = check_numeric_array(activations, name, ndim=(2, 3, 4, 5), min_rows=1)
            shape, dtype = x.shape, x.dtype
        else:
            x = activations
            shape, dtype = known_shape(x, name), np.dtype(x.dtype)
            if len(shape) not in (2, 3, 4, 5):
                raise LabelwiseError(f"{name} must be 2-D or 3-D or 4-D or 5-D, got shape {shape}")
            if dtype.kind not in "biuf":
                raise LabelwiseError(f"{name} must hold numbers, got dtype {dtype}")
            if shape[0] < 1:
                raise LabelwiseError(f"{name} must have at least 1 row(s), got 0")
        self.n_rows = int(shape[0])
        self.n_cols = int(np.prod(shape[1:], dtype=np.int64))
        self.dtype = np.dtype(dtype) if dtype in (np.float32, np.float64) else np.dtype(np.float64)
        self.whole: NDArray[Any] | None = None
        if isinstance(x, np.ndarray) and x.dtype == self.dtype and x.flags.c_contiguous:
            self.whole = x.reshape(self.n_rows, self.n_cols)
        self.source = x
        row_bytes = max(1, self.n_cols * self.dtype.itemsize)
        self.block_rows = max(1, BLOCK_BYTES // row_bytes)
        chunks = getattr(x, "chunks", None)
        if not isinstance(x, np.ndarray) and chunks:
            first = chunks[0][0] if isinstance(chunks[0], tuple) else chunks[0]
            if isinstance(first, int | np.integer) and first > 0:
                self.block_rows = max(1, self.block_rows // int(first)) * int(first)

    def _as_rows(self, block: Any) -> NDArray[Any]:
        arr = np.asarray(block)
        return np.ascontiguousarray(arr.reshape(arr.shape[0], self.n_cols), dtype=self.dtype)

    def blocks(self) -> Iterator[tuple[int, NDArray[Any]]]:
        """(first row, block) pairs covering the pile in order."""
        if self.whole is not None:
            yield 0, self.whole
            return
        for start in range(0, self.n_rows, self.block_rows):
            yield start, self._as_rows(self.source[start : start + self.block_rows])

    def take(self, rows: NDArray[np.int64]) -> tuple[NDArray[Any], NDArray[np.int64]]:
        """An array holding the given rows (sorted, distinct) and their positions in it."""
        if self.whole is not None:
            return self.whole, rows
        oindex = getattr(self.source, "oindex", None)
        got = oindex[rows] if oindex is not None else self.source[rows]
        return self._as_rows(got), np.arange(rows.size, dtype=np.int64)


def _is_array_like(x: Any) -> bool:
    return all(hasattr(x, a) for a in ("shape", "dtype", "__getitem__")) and not isinstance(
        x, list | tuple
    )


#: Bytes per block when a pile is read block by block (zarr, dask, non-contiguous arrays).
BLOCK_BYTES = 1 << 25


class CESState:
    """Section bounds and P_S of a pile, and the section counts of a growing set T.

    Built from two streaming passes over the pile (the sections need the global range):
    the range pass also finds the first row holding NaN or infinity, block by block, so a bad
    value in a late block is reported with its row before any section is counted.
    """

    def __init__(self, activations: ArrayLike, *, n_sections: int, objective: str, epsilon: float):
        pile = _Pile(activations)
        self.pile = pile
        self.n_rows, m = pile.n_rows, pile.n_cols
        if m == 0:
            raise LabelwiseError("activations must have at least one neuron (column)")
        lo, hi = _range(pile)
        # the range in halves (hi - lo overflows past float64's max); a range too small to
        # divide into sections (subnormal) counts as constant
        with np.errstate(over="ignore", divide="ignore"):
            width = 2.0 * (hi / 2 - lo / 2)
            scale_all = n_sections / width
        varying = (hi > lo) & np.isfinite(scale_all) & np.isfinite(width)
        self.n_constant = int(m - varying.sum())
        if not varying.any():
            raise LabelwiseError(
                "activations must vary: every neuron is constant on the pile, so CES has nothing "
                "to condition on (use srs_select; CLI: --method srs)"
            )
        if self.n_constant:
            warnings.warn(
                f"{self.n_constant} of {m} neurons are constant on the pile and carry no "
                "information; CES ignores them",
                DegenerateDataWarning,
                stacklevel=user_stacklevel(),
            )
        self.cols = np.flatnonzero(varying).astype(np.int64)
        self.lo = lo[self.cols]
        self.scale = scale_all[self.cols]
        # Full-width bounds for the kernels: a constant neuron has scale 0 (section 0).
        self._lo_all = lo
        self._scale_all = np.zeros(m, dtype=np.float64)
        self._scale_all[self.cols] = self.scale
        self.n_sections = n_sections
        self.objective_id = CES_OBJECTIVES[objective]
        self.epsilon = epsilon
        hist = _histogram(pile, self._lo_all, self._scale_all, n_sections)[:, self.cols]
        hist = np.ascontiguousarray(hist.T)
        self.p_s = hist / self.n_rows
        with np.errstate(divide="ignore"):
            self.log_p_s = np.where(hist > 0, np.log(np.maximum(self.p_s, 1e-300)), 0.0)
        self.counts = np.zeros_like(hist)
        self.size = 0

    @property
    def n_neurons(self) -> int:
        return int(self.cols.size)

    def fingerprint(self, rows: NDArray[np.int64]) -> str:
        """sha256 of the pile's neurons, section bounds and section counts (P_S) and of the
        sections of ``rows`` (the selection): what an extension must see again to continue
        the same selection (the rows' sections tell a reordered pile)."""
        h = hashlib.sha256(np.asarray([self.n_rows, self._lo_all.size], np.int64).tobytes())
        for part in (self._lo_all, self._scale_all, self.p_s):
            h.update(np.ascontiguousarray(part, dtype=np.float64).tobytes())
        r = np.asarray(rows, dtype=np.int64)
        h.update(np.ascontiguousarray(self._candidate_codes(r)[:, : r.size]).tobytes())
        return h.hexdigest()

    def _candidate_codes(self, rows: NDArray[np.int64]) -> NDArray[np.uint8]:
        """Codes (n_neurons, >= len(rows)) of the given rows (any order, repeats allowed),
        neuron by neuron (padded, see :func:`_ces_kernels.row_codes`); the pile is read
        once per distinct row."""
        if self.pile.whole is not None:
            source, at = self.pile.whole, np.ascontiguousarray(rows, dtype=np.int64)
        else:
            uniq, inverse = np.unique(rows, return_inverse=True)
            source, at = self.pile.take(uniq)
            at = np.ascontiguousarray(at[inverse.reshape(-1)])
        return kern.row_codes(source, at, self.cols, self._lo_all, self._scale_all, self.n_sections)

    def codes(self, rows: NDArray[np.int64]) -> NDArray[np.uint8]:
        """Section codes (len(rows), m) of the given rows over the non-constant neurons."""
        rows = np.asarray(rows, dtype=np.int64).reshape(-1)
        return np.ascontiguousarray(self._candidate_codes(rows)[:, : rows.size].T)

    def add(self, rows: NDArray[np.int64]) -> None:
        rows = np.asarray(rows, dtype=np.int64)
        at = np.arange(rows.size, dtype=np.int64)
        kern.count_rows(self._candidate_codes(rows), at, self.counts)
        self.size += len(rows)

    def _tables(self, size: int) -> tuple[NDArray[np.float64], ...]:
        c = np.arange(size + 1, dtype=np.float64)
        p = c / size
        with np.errstate(divide="ignore", invalid="ignore"):
            tab_log = np.log(np.maximum(p, self.epsilon))
            tab_plogp = np.where(c > 0, p * np.log(np.where(c > 0, p, 1.0)), 0.0)
        return tab_log, tab_plogp, p

    def _cells(self, counts: NDArray[np.int64], size: int) -> NDArray[np.float64]:
        """Per-(neuron, section) terms of the summed objective for counts of a T of ``size``."""
        tab_log, tab_plogp, tab_p = self._tables(size)
        if self.objective_id == kern.OBJ_KL:
            return np.where(counts > 0, tab_plogp[counts] - tab_p[counts] * self.log_p_s, 0.0)
        cells = -self.p_s * tab_log[counts]
        if self.objective_id == kern.OBJ_CE_COMMON:
            cells = np.where(self.p_s >= 0.5 / size, cells, 0.0)
        return np.asarray(cells)

    def _cell_sum(self, counts: NDArray[np.int64], size: int) -> float:
        return float(self._cells(counts, size).sum())

    def objective(self) -> float:
        """The objective of the current T, averaged over neurons."""
        if self.size == 0:
            raise LabelwiseError("the objective of an empty set is undefined")
        return self._cell_sum(self.counts, self.size) / self.n_neurons

    def score_groups(self, groups: NDArray[np.int64]) -> NDArray[np.float64]:
        """Objective of T ∪ Q for every candidate group Q (rows of ``groups``).

        The candidate rows are read once (one sorted gather), the codes of every (group,
        row) pair computed neuron by neuron, and the cell terms phi(c + d) tabulated once
        per step; the working set is O(l q m + m K q), independent of N. The scores are the
        same floats whatever the number of threads (see ``_ces_kernels._score_codes``).
        """
        q = groups.shape[1]
        size = self.size + q
        tab_log, tab_plogp, tab_p = self._tables(size)
        # Row r of group g at r l + g: one row's codes of all groups are contiguous.
        codes = self._candidate_codes(np.ascontiguousarray(groups.T).reshape(-1))
        phi, cells = kern.phi_table(
            self.counts,
            self.p_s,
            self.log_p_s,
            self.objective_id,
            tab_log,
            tab_plogp,
            tab_p,
            0.5 / size,
            q,
        )
        base = float(cells.sum())  # = self._cell_sum(self.counts, size), the same floats
        delta = kern.score_codes(codes, groups.shape[0], q, phi)
        return (base + delta) / self.n_neurons


def _range(pile: _Pile) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Per-column minimum and maximum (float64) in one streaming pass; raises at the first
    row holding NaN or infinity, naming its row in the whole pile."""
    tasks = kern.n_tasks(pile.n_rows, pile.n_cols)
    lo = np.full((tasks, pile.n_cols), np.inf, dtype=pile.dtype)
    hi = np.full((tasks, pile.n_cols), -np.inf, dtype=pile.dtype)
    flag = np.zeros((tasks, pile.n_cols), dtype=pile.dtype)
    for start, block in pile.blocks():
        kern.range_pass(block, lo, hi, flag)
        if np.isnan(flag).any():
            bad = np.flatnonzero(~np.isfinite(block).all(axis=1))
            row = start + int(bad[0]) if bad.size else start
            raise LabelwiseError(
                f"activations must be finite, found NaN or infinity at row {row} "
                "(drop or impute those rows first)"
            )
    return lo.min(axis=0).astype(np.float64), hi.max(axis=0).astype(np.float64)


def _histogram(
    pile: _Pile, lo: NDArray[np.float64], scale: NDArray[np.float64], n_sections: int
) -> NDArray[np.int64]:
    """(K, m) counts of rows per (section, column) in one streaming pass."""
    tasks = kern.n_tasks(pile.n_rows, pile.n_cols)
    dtype = np.int32 if pile.n_rows < np.iinfo(np.int32).max else np.int64
    part = np.zeros((tasks, n_sections, pile.n_cols), dtype=dtype)
    for _, block in pile.blocks():
        kern.histogram_pass(block, lo, scale, n_sections, part)
    return np.asarray(part.sum(axis=0, dtype=np.int64))


def _run(
    state: CESState,
    start: NDArray[np.int64],
    target: int,
    params: dict[str, Any],
    gen: np.random.Generator,
    progress: bool,
) -> tuple[NDArray[np.int64], list[float]]:
    chosen = [np.asarray(start, dtype=np.int64)]
    if start.size:
        free = _FreeRows(state.n_rows, start)
        state.add(start)
    else:
        first = gen.choice(state.n_rows, size=min(params["initial"], target), replace=False)
        first = np.asarray(first, dtype=np.int64)
        free = _FreeRows(state.n_rows, first)
        state.add(first)
        chosen.append(first)
    trace = [state.objective()]
    n_steps = -(-(target - state.size) // params["group_size"])
    bar = _progress(n_steps, progress)
    try:
        while state.size < target:
            size = min(params["group_size"], target - state.size)
            groups = _draw_groups(gen, free, params["n_groups"], size)
            scores = state.score_groups(groups)
            best = int(np.argmin(scores))
            rows = groups[best]
            free.take(rows)
            state.add(rows)
            chosen.append(rows)
            trace.append(float(scores[best]))
            if bar is not None:
                bar.update(1)
    finally:
        if bar is not None:
            bar.close()
    return np.concatenate(chosen), trace


class _FreeRows:
    """The rows not yet chosen, in increasing order, without an array of N entries.

    With the chosen rows sorted, t_0 < t_1 < ..., there are u_i = t_i - i free rows before
    t_i, so the free row at position p is p + |{i : u_i <= p}|.
    """

    def __init__(self, n_rows: int, taken: NDArray[np.int64]):
        self.n_rows = n_rows
        self._taken = np.sort(np.asarray(taken, dtype=np.int64))
        self._update()

    def _update(self) -> None:
        self._before = self._taken - np.arange(self._taken.size, dtype=np.int64)
        self.size = self.n_rows - self._taken.size

    def take(self, rows: NDArray[np.int64]) -> None:
        self._taken = np.sort(np.concatenate([self._taken, np.asarray(rows, dtype=np.int64)]))
        self._update()

    def __getitem__(self, positions: NDArray[np.int64]) -> NDArray[np.int64]:
        p = np.asarray(positions, dtype=np.int64)
        return p + np.searchsorted(self._before, p, side="right")


def _ces_extend(selection: Selection, data: Any, additional: int, rng: RNGLike) -> Selection:
    if data is None:
        raise LabelwiseError("activations must be given to extend a CES selection")
    p = dict(selection.params)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DegenerateDataWarning)  # already said at selection
        state = CESState(
            data, n_sections=p["n_sections"], objective=p["objective"], epsilon=p["epsilon"]
        )
    check_same_population(selection, state.n_rows)
    recorded = selection.diagnostics.get("pile_sections")  # absent: made by an older version
    if recorded is not None and recorded != state.fingerprint(selection.indices):
        raise LabelwiseError(
            "activations must be the ones the selection was made from (their neurons, ranges "
            "or section counts differ)"
        )
    additional = check_additional(selection, additional)
    gen = generator_for_extension(selection.rng_state, rng)
    indices, trace = _run(
        state, np.asarray(selection.indices), selection.budget + additional, p, gen, progress=False
    )
    old = list(selection.diagnostics.get("objective_trace", []))
    return Selection(
        indices=indices,
        method="ces",
        population_size=state.n_rows,
        params=p,
        rng_state=generator_state(gen),
        diagnostics={
            "objective_trace": old + trace[1:],
            "ignored_constant_neurons": state.n_constant,
            "pile_sections": state.fingerprint(indices),
        },
    )


def _draw_groups(
    gen: np.random.Generator, pool: _FreeRows, n_groups: int, size: int
) -> NDArray[np.int64]:
    """``n_groups`` random groups of ``size`` distinct rows of ``pool`` (groups may overlap).

    Positions in the pool are drawn, then mapped to rows, so the draws depend only on the
    pool size and the generator."""
    n_pool = pool.size
    if n_pool >= 20 * size:
        idx = gen.integers(0, n_pool, size=(n_groups, size))
        while size > 1:
            srt = np.sort(idx, axis=1)
            dup = (srt[:, 1:] == srt[:, :-1]).any(axis=1)
            if not dup.any():
                break
            idx[dup] = gen.integers(0, n_pool, size=(int(dup.sum()), size))
    else:
        idx = np.argsort(gen.random((n_groups, n_pool)), axis=1)[:, :size]
    return pool[idx]


def _params(
    n_sections: Any, initial: Any, group_size: Any, n_groups: Any, objective: Any, epsilon: Any
) -> dict[str, Any]:
    """The parameters as plain Python values, for ``Selection.params`` (already checked against
    :data:`CES_PARAMS` by ``@validate_params``)."""
    return {
        "n_sections": int(n_sections),
        "initial": int(initial),
        "group_size": int(group_size),
        "n_groups": int(n_groups),
        "objective": str(objective),
        "epsilon": float(epsilon),
    }


def _progress(total: int, enabled: bool) -> Any:
    if not enabled or total <= 0:
        return None
    return progress_bar(total, desc="CES", unit="step")

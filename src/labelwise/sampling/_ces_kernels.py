"""Compiled kernels for CES (numba). Pure functions of arrays; see ``ces.py`` for the maths.

Section code of value x for neuron j (K equal sections over [lo_j, hi_j], last one closed):
    code = min(floor((x - lo_j) * K / (hi_j - lo_j)), K - 1)
computed in float64 whatever the input dtype. A neuron that is constant on the pile gets
``scale = 0``, so every value is in section 0 and the passes need no column index.

The pile passes take one C-contiguous block of rows at a time (the whole array when it is in
memory or memory-mapped) and add into per-task accumulators, so a pile read block by block
gives the same result as one call on the whole array:

- :func:`range_pass`: per-column minimum and maximum in the input dtype (exact), and a
  per-column NaN/infinity flag (``v - v`` is 0 for finite values and NaN otherwise). No
  branch depends on the data, so the loop is vectorised; the first bad row is located only
  when a flag is set.
- :func:`histogram_pass`: the codes of one row are computed into a small buffer (vectorised),
  then counted into a per-task (K, m) int32 table (a ReLU layer's zeros share section 0, so
  the counters of one row are mostly contiguous).
"""

from __future__ import annotations

from typing import Any

import numba as nb
import numpy as np

from .._numba import threads_for

OBJ_CE = 0  # Eq. 8: -sum P_S log max(P_T, eps)
OBJ_CE_COMMON = 1  # Eq. 8 restricted to sections with P_S >= 0.5 / |T|
OBJ_KL = 2  # KL(P_T || P_S) (Sec. 4.3.4)

#: Neurons per block of the scoring kernel: their tables (K x (q + 1) float64 each) stay in
#: the core's cache while every candidate group of a task is scored over them.
SCORE_BLOCK = 64


@nb.njit(inline="always")
def _code(x: float, lo: float, scale: float, n_sections: int) -> int:
    k = np.int32((np.float64(x) - lo) * scale)
    if k >= n_sections:
        return n_sections - 1
    if k < 0:
        return 0
    return k


def _bounds(n_rows: int, n_tasks: int, task: int) -> tuple[int, int]:
    step = (n_rows + n_tasks - 1) // n_tasks
    start = min(n_rows, task * step)
    return start, min(n_rows, start + step)


_bounds_jit = nb.njit(inline="always")(_bounds)


def _range_block(x: Any, lo: Any, hi: Any, flag: Any) -> None:
    n_rows, m = x.shape
    n_tasks = lo.shape[0]
    for t in nb.prange(n_tasks):
        start, stop = _bounds_jit(n_rows, n_tasks, t)
        lo_t = lo[t]
        hi_t = hi[t]
        flag_t = flag[t]
        for i in range(start, stop):
            row = x[i]
            for j in range(m):
                v = row[j]
                a = lo_t[j]
                lo_t[j] = v if v < a else a
                b = hi_t[j]
                hi_t[j] = v if v > b else b
                flag_t[j] += v - v


def _histogram_block(x: Any, lo: Any, scale: Any, n_sections: int, part: Any) -> None:
    n_rows, m = x.shape
    n_tasks = part.shape[0]
    for t in nb.prange(n_tasks):
        start, stop = _bounds_jit(n_rows, n_tasks, t)
        codes = np.empty(m, dtype=np.int32)
        part_t = part[t]
        for i in range(start, stop):
            row = x[i]
            for j in range(m):
                codes[j] = _code(row[j], lo[j], scale[j], n_sections)
            for j in range(m):
                part_t[codes[j], j] += 1


def _row_codes(x: Any, rows: Any, lo: Any, scale: Any, n_sections: int, out: Any) -> None:
    m = x.shape[1]
    for r in nb.prange(rows.shape[0]):
        row = x[rows[r]]
        for j in range(m):
            out[r, j] = _code(row[j], lo[j], scale[j], n_sections)


@nb.njit(inline="always")
def _phi(
    objective: int,
    c: int,
    p_s: float,
    log_p_s: float,
    tab_log: Any,
    tab_plogp: Any,
    tab_p: Any,
    threshold: float,
) -> float:
    # Per-cell contribution of one (neuron, section) with count c in T (|T| fixed per step).
    if objective == OBJ_KL:
        if c == 0:
            return 0.0
        return tab_plogp[c] - tab_p[c] * log_p_s
    if objective == OBJ_CE_COMMON and p_s < threshold:
        return 0.0
    return -p_s * tab_log[c]


def _phi_table(
    counts: Any,
    p_s: Any,
    log_p_s: Any,
    objective: int,
    tab_log: Any,
    tab_plogp: Any,
    tab_p: Any,
    threshold: float,
    q: int,
) -> Any:
    m, n_sections = counts.shape
    out = np.empty((m, n_sections, q + 1), dtype=np.float64)
    for jj in nb.prange(m):
        for k in range(n_sections):
            c = counts[jj, k]
            ps = p_s[jj, k]
            lps = log_p_s[jj, k]
            for d in range(q + 1):
                v = _phi(objective, c + d, ps, lps, tab_log, tab_plogp, tab_p, threshold)
                out[jj, k, d] = v
    return out


def _score_codes(codes: Any, pos: Any, cols: Any, phi: Any, block: int, n_tasks: int) -> Any:
    """Change in the summed objective when each candidate group is added to T.

    ``codes`` holds the section codes of the candidate rows (all columns), ``pos`` (l, q) the
    groups as row positions in ``codes``; ``phi[jj, k, d]`` is the cell term of neuron
    ``cols[jj]``, section k, with d more rows in T. Only the cells a group touches change,
    so a group costs O(q m) whatever N and K: a cell reached by one row of the group adds
    phi(c + 1) - phi(c), one reached by d > 1 rows adds phi(c + d) and subtracts phi(c).
    The sum runs over neurons in order for each group (tasks split the groups; neurons are
    taken in cache-sized blocks), so it does not depend on the number of threads.
    """
    n_groups, q = pos.shape
    m = cols.shape[0]
    out = np.zeros(n_groups, dtype=np.float64)
    for t in nb.prange(n_tasks):
        g0, g1 = _bounds_jit(n_groups, n_tasks, t)
        ks = np.empty(q, dtype=np.int32)
        for b0 in range(0, m, block):
            b1 = min(m, b0 + block)
            for g in range(g0, g1):
                total = out[g]
                for jj in range(b0, b1):
                    j = cols[jj]
                    for r in range(q):
                        ks[r] = codes[pos[g, r], j]
                    for r in range(q):
                        k = ks[r]
                        first = True
                        for r2 in range(r):
                            if ks[r2] == k:
                                first = False
                                break
                        if not first:
                            continue
                        d = 1
                        for r2 in range(r + 1, q):
                            if ks[r2] == k:
                                d += 1
                        if d == 1:
                            total += phi[jj, k, 1] - phi[jj, k, 0]
                        else:
                            total += phi[jj, k, d]
                            total -= phi[jj, k, 0]
                out[g] = total
    return out


# One compiled dispatcher per kernel, parallel; small inputs run it on one thread, as thread
# start-up costs more than the work (and stalls when the machine is busy). Never compile
# one Python function twice with cache=True (numba's disk cache key ignores ``parallel``).
PARALLEL_WORK = 2_000_000
_range = nb.njit(parallel=True, cache=True, nogil=True)(_range_block)
_hist = nb.njit(parallel=True, cache=True, nogil=True)(_histogram_block)
_codes = nb.njit(parallel=True, cache=True, nogil=True)(_row_codes)
_phis = nb.njit(parallel=True, cache=True, nogil=True)(_phi_table)
_score = nb.njit(parallel=True, cache=True, nogil=True)(_score_codes)


def _threads_for(work: int) -> Any:
    return threads_for(work, PARALLEL_WORK, tasks_per_thread=4)


def n_tasks(n_rows: int, n_cols: int) -> int:
    """How many row ranges a pass over a pile of this shape is split into."""
    with _threads_for(n_rows * n_cols) as tasks:
        return max(1, min(n_rows, tasks))


def range_pass(x: Any, lo: Any, hi: Any, flag: Any) -> None:
    """Add one block of rows to the per-task minima, maxima and non-finite flags.

    ``lo``, ``hi`` and ``flag`` are (tasks, m) arrays of ``x.dtype``, started at +inf, -inf
    and 0; a flag becomes NaN once its column has held NaN or infinity.
    """
    with _threads_for(x.size):
        _range(x, lo, hi, flag)


def histogram_pass(x: Any, lo: Any, scale: Any, n_sections: int, part: Any) -> None:
    """Add the section counts of one block of rows to ``part`` ((tasks, K, m) int32)."""
    with _threads_for(x.size):
        _hist(x, lo, scale, n_sections, part)


def row_codes(x: Any, rows: Any, lo: Any, scale: Any, n_sections: int) -> Any:
    """Section codes of the given rows of ``x`` over all its columns: (len(rows), m) uint8."""
    out = np.empty((rows.shape[0], x.shape[1]), dtype=np.uint8)
    with _threads_for(out.size):
        _codes(x, rows, lo, scale, n_sections, out)
    return out


def phi_table(counts: Any, *args: Any) -> Any:
    """Cell terms phi(c + d) for d in 0..q per (neuron, section): (m, K, q + 1)."""
    with _threads_for(counts.size * 8):
        return _phis(counts, *args)


def score_codes(codes: Any, pos: Any, cols: Any, phi: Any) -> Any:
    """Change in the summed objective for each candidate group; see ``_score_codes``."""
    with _threads_for(pos.size * cols.shape[0]) as tasks:
        return _score(codes, pos, cols, phi, SCORE_BLOCK, max(1, min(pos.shape[0], tasks)))

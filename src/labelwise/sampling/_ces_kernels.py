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
def _code(x: float, lo: float, scale: float, n_sections: int) -> Any:
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
            # Two loops over the row, each without a data-dependent branch, so both are
            # vectorised (one fused loop is not).
            for j in range(m):
                lo_t[j] = np.minimum(lo_t[j], row[j])
                hi_t[j] = np.maximum(hi_t[j], row[j])
            for j in range(m):
                flag_t[j] += row[j] - row[j]


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
    """What a cell adds and then subtracts when d rows of a group fall in it.

    ``out[jj, k, d, 0]`` is phi(c + 1) - phi(c) for d = 1 and phi(c + d) for d > 1;
    ``out[jj, k, d, 1]`` is 0 for d = 1 and phi(c) for d > 1 (c the count of T). Row K of
    every neuron is zero: the scoring kernel sends the second and later rows of a group that
    share a section there, so every row costs the same two additions and no branch.
    """
    m, n_sections = counts.shape
    out = np.zeros((m, n_sections + 1, q + 1, 2), dtype=np.float64)
    for jj in nb.prange(m):
        for k in range(n_sections):
            c = counts[jj, k]
            ps = p_s[jj, k]
            lps = log_p_s[jj, k]
            p0 = _phi(objective, c, ps, lps, tab_log, tab_plogp, tab_p, threshold)
            for d in range(1, q + 1):
                pd = _phi(objective, c + d, ps, lps, tab_log, tab_plogp, tab_p, threshold)
                if d == 1:
                    out[jj, k, d, 0] = pd - p0
                else:
                    out[jj, k, d, 0] = pd
                    out[jj, k, d, 1] = p0
    return out


@nb.njit(inline="always")
def _cell(total: float, k: Any, d: Any, first: bool, ab: Any, n_sections: int) -> float:
    kk = k if first else n_sections
    total += ab[kk, d, 0]
    total -= ab[kk, d, 1]
    return total


@nb.njit(inline="always")
def _cell5(total: float, c0: Any, c1: Any, c2: Any, c3: Any, c4: Any, j: int, ab: Any) -> float:
    n_sections = ab.shape[0] - 1
    k0 = np.int64(c0[j])
    k1 = np.int64(c1[j])
    k2 = np.int64(c2[j])
    k3 = np.int64(c3[j])
    k4 = np.int64(c4[j])
    e01 = k0 == k1
    e02 = k0 == k2
    e03 = k0 == k3
    e04 = k0 == k4
    e12 = k1 == k2
    e13 = k1 == k3
    e14 = k1 == k4
    e23 = k2 == k3
    e24 = k2 == k4
    e34 = k3 == k4
    total = _cell(total, k0, 1 + e01 + e02 + e03 + e04, True, ab, n_sections)
    total = _cell(total, k1, 1 + e01 + e12 + e13 + e14, not e01, ab, n_sections)
    total = _cell(total, k2, 1 + e02 + e12 + e23 + e24, not (e02 or e12), ab, n_sections)
    total = _cell(total, k3, 1 + e03 + e13 + e23 + e34, not (e03 or e13 or e23), ab, n_sections)
    first4 = not (e04 or e14 or e24 or e34)
    return _cell(total, k4, 1 + e04 + e14 + e24 + e34, first4, ab, n_sections)


def _score_codes(codes: Any, pos: Any, cols: Any, phi: Any, block: int, n_tasks: int) -> Any:
    """Change in the summed objective when each candidate group is added to T.

    ``codes`` holds the section codes of the candidate rows (all columns), ``pos`` (l, q) the
    groups as row positions in ``codes``; ``phi`` is :func:`_phi_table`'s. Only the cells a
    group touches change, so a group costs O(q m) whatever N and K: a cell reached by one
    row of the group adds phi(c + 1) - phi(c), one reached by d > 1 rows adds phi(c + d) and
    subtracts phi(c).

    Each group's sum runs over neurons in order and, per neuron, over its rows in order,
    whatever the number of threads (tasks split the groups). Neurons are taken in blocks of
    ``block`` so that their tables and the candidates' codes stay in the core's cache while
    every group of the task is scored over them; q = 5 (the paper's) is written out.
    """
    n_groups, q = pos.shape
    m = cols.shape[0]
    n_sections = phi.shape[1] - 1
    out = np.zeros(n_groups, dtype=np.float64)
    for t in nb.prange(n_tasks):
        g0, g1 = _bounds_jit(n_groups, n_tasks, t)
        ks = np.empty(q, dtype=np.int64)
        for b0 in range(0, m, block):
            b1 = min(m, b0 + block)
            for g in range(g0, g1):
                total = out[g]
                if q == 5:
                    c0 = codes[pos[g, 0]]
                    c1 = codes[pos[g, 1]]
                    c2 = codes[pos[g, 2]]
                    c3 = codes[pos[g, 3]]
                    c4 = codes[pos[g, 4]]
                    for jj in range(b0, b1):
                        total = _cell5(total, c0, c1, c2, c3, c4, cols[jj], phi[jj])
                else:
                    for jj in range(b0, b1):
                        j = cols[jj]
                        ab = phi[jj]
                        for r in range(q):
                            ks[r] = codes[pos[g, r], j]
                        for r in range(q):
                            k = ks[r]
                            d = 0
                            for r2 in range(q):
                                d += ks[r2] == k
                            first = True
                            for r2 in range(r):
                                first &= ks[r2] != k
                            total = _cell(total, k, d, first, ab, n_sections)
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
    """Per-step cell tables for the scoring kernel: (m, K + 1, q + 1, 2); see ``_phi_table``."""
    with _threads_for(counts.size * 8):
        return _phis(counts, *args)


def score_codes(codes: Any, pos: Any, cols: Any, phi: Any) -> Any:
    """Change in the summed objective for each candidate group; see ``_score_codes``."""
    with _threads_for(pos.size * cols.shape[0]) as tasks:
        return _score(codes, pos, cols, phi, SCORE_BLOCK, max(1, min(pos.shape[0], tasks)))

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
- :func:`histogram_pass`: the codes of four rows are computed into a small buffer
  (vectorised), then counted one-hot into per-task uint8 counters, K compare-and-add passes
  along the rows, flushed into a per-task (K, m) int32 table every 252 rows (K <= 32; a
  larger K increments one counter per value).

Each step of Algorithm 1 then needs only the codes of its l q candidate rows
(:func:`row_codes`, stored neuron by neuron), a per-step table of cell terms
(:func:`phi_table`) and the scoring kernel (:func:`score_codes`), which adds the terms of
every group in a fixed order, so the scores do not depend on the number of threads.
"""

from __future__ import annotations

from typing import Any

import numba as nb
import numpy as np

from .._numba import threads_for

OBJ_CE = 0  # Eq. 8: -sum P_S log max(P_T, eps)
OBJ_CE_COMMON = 1  # Eq. 8 restricted to sections with P_S >= 0.5 / |T|
OBJ_KL = 2  # KL(P_T || P_S) (Sec. 4.3.4)

#: Side of the tiles (rows x neurons) in which :func:`_row_codes` transposes the codes.
CODE_BLOCK = 64

#: Largest K counted one-hot by the histogram pass (K compare-and-add passes over a row of
#: uint8 codes); above it each value's counter is incremented on its own.
ONE_HOT_SECTIONS = 32


@nb.njit(inline="always")
def _code(x: float, lo: float, scale: float, n_sections: int) -> Any:
    # The position is capped at K - 1 before the conversion to an integer: the same code as
    # capping after it, but without converting huge values (undefined in LLVM), and the
    # capped loop is vectorised (min, then truncation, in float64 lanes). A NaN position
    # (0 * inf, for a range too narrow for float64) fails the comparison and ends at 0.
    v = (np.float64(x) - lo) * scale
    if v > n_sections - 1:
        v = np.float64(n_sections - 1)
    k = np.int32(v)
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
        codes = np.empty(m, dtype=np.uint8)
        part_t = part[t]
        if n_sections > ONE_HOT_SECTIONS:
            for i in range(start, stop):
                row = x[i]
                for j in range(m):
                    codes[j] = _code(row[j], lo[j], scale[j], n_sections)
                for j in range(m):
                    part_t[codes[j], j] += 1
            continue
        # One-hot counting in uint8 lanes: the codes of four rows at a time, then for every
        # section k, acc[k] += (codes0 == k) + ... + (codes3 == k) along the row
        # (vectorised, 32 columns per instruction; four rows per load and store of acc),
        # flushed into the int32 table every 252 rows before a counter can wrap. Missing
        # rows of the last four are code 255, which no section has.
        acc = np.zeros((n_sections, m), dtype=np.uint8)
        quad = np.empty((4, m), dtype=np.uint8)
        c0, c1, c2, c3 = quad[0], quad[1], quad[2], quad[3]
        for r0 in range(start, stop, 252):
            r1 = min(stop, r0 + 252)
            for i in range(r0, r1, 4):
                for u in range(4):
                    cu = quad[u]
                    if i + u < r1:
                        row = x[i + u]
                        for j in range(m):
                            cu[j] = _code(row[j], lo[j], scale[j], n_sections)
                    else:
                        cu[:] = 255
                for k in range(n_sections):
                    acc_k = acc[k]
                    kk = np.uint8(k)
                    for j in range(m):
                        acc_k[j] += (c0[j] == kk) + (c1[j] == kk) + (c2[j] == kk) + (c3[j] == kk)
            for k in range(n_sections):
                acc_k = acc[k]
                part_k = part_t[k]
                for j in range(m):
                    part_k[j] += acc_k[j]
                    acc_k[j] = 0


@nb.njit(inline="always")
def _swap(a: Any, b: Any, shift: Any, mask: Any) -> tuple[Any, Any]:
    # Exchange the bytes of a selected by mask << shift with the bytes of b selected by mask.
    t = ((a >> shift) ^ b) & mask
    return a ^ (t << shift), b ^ t


def _row_codes(
    x: Any, rows: Any, cols: Any, lo: Any, scale: Any, n_sections: int, out: Any
) -> None:
    # out (len(cols), >= len(rows), a multiple of 8): one neuron's codes of all the rows
    # are contiguous, as the scoring kernel reads them. Tasks take tiles of CODE_BLOCK rows;
    # a tile's codes are computed row by row (each row read in order, vectorised) into a
    # buffer, then transposed 8 x 8 bytes at a time in 64-bit words (three rounds of masked
    # exchanges), CODE_BLOCK neurons at a time, so every 64-byte line of ``out`` is
    # written whole.
    n_used = cols.shape[0]
    n = rows.shape[0]
    dense = n_used == x.shape[1]
    out64 = out.view(np.uint64)
    m4 = np.uint64(0x00000000FFFFFFFF)
    m2 = np.uint64(0x0000FFFF0000FFFF)
    m1 = np.uint64(0x00FF00FF00FF00FF)
    s4 = np.uint64(32)
    s2 = np.uint64(16)
    s1 = np.uint64(8)
    n_tiles = (n + CODE_BLOCK - 1) // CODE_BLOCK
    width = -(-n_used // 8) * 8
    for t in nb.prange(n_tiles):
        r0 = t * CODE_BLOCK
        r1 = min(n, r0 + CODE_BLOCK)
        buf = np.zeros((CODE_BLOCK, width), dtype=np.uint8)  # rows past r1 stay 0
        buf64 = buf.view(np.uint64)
        for r in range(r0, r1):
            row = x[rows[r]]
            dst = buf[r - r0]
            if dense:  # no constant neuron: contiguous, so vectorised
                for jj in range(n_used):
                    dst[jj] = _code(row[jj], lo[jj], scale[jj], n_sections)
            else:
                for jj in range(n_used):
                    j = cols[jj]
                    dst[jj] = _code(row[j], lo[j], scale[j], n_sections)
        for b0 in range(0, n_used, CODE_BLOCK):
            b1 = min(n_used, b0 + CODE_BLOCK)
            for rb in range((r1 - r0 + 7) // 8):
                w = r0 // 8 + rb
                for cb in range(b0 // 8, (b1 + 7) // 8):
                    a0 = buf64[rb * 8, cb]
                    a1 = buf64[rb * 8 + 1, cb]
                    a2 = buf64[rb * 8 + 2, cb]
                    a3 = buf64[rb * 8 + 3, cb]
                    a4 = buf64[rb * 8 + 4, cb]
                    a5 = buf64[rb * 8 + 5, cb]
                    a6 = buf64[rb * 8 + 6, cb]
                    a7 = buf64[rb * 8 + 7, cb]
                    a0, a4 = _swap(a0, a4, s4, m4)
                    a1, a5 = _swap(a1, a5, s4, m4)
                    a2, a6 = _swap(a2, a6, s4, m4)
                    a3, a7 = _swap(a3, a7, s4, m4)
                    a0, a2 = _swap(a0, a2, s2, m2)
                    a1, a3 = _swap(a1, a3, s2, m2)
                    a4, a6 = _swap(a4, a6, s2, m2)
                    a5, a7 = _swap(a5, a7, s2, m2)
                    a0, a1 = _swap(a0, a1, s1, m1)
                    a2, a3 = _swap(a2, a3, s1, m1)
                    a4, a5 = _swap(a4, a5, s1, m1)
                    a6, a7 = _swap(a6, a7, s1, m1)
                    jj = cb * 8
                    if jj + 8 <= b1:
                        out64[jj, w] = a0
                        out64[jj + 1, w] = a1
                        out64[jj + 2, w] = a2
                        out64[jj + 3, w] = a3
                        out64[jj + 4, w] = a4
                        out64[jj + 5, w] = a5
                        out64[jj + 6, w] = a6
                        out64[jj + 7, w] = a7
                        continue
                    words = (a0, a1, a2, a3, a4, a5, a6, a7)
                    for k in range(b1 - jj):
                        out64[jj + k, w] = words[k]


def _count_rows(codes: Any, at: Any, counts: Any) -> None:
    # counts[jj, codes[jj, at[i]]] += 1 for every listed row (codes as from _row_codes).
    for jj in range(codes.shape[0]):
        c = codes[jj]
        cnt = counts[jj]
        for i in range(at.shape[0]):
            cnt[c[at[i]]] += 1


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
    cells: Any,
) -> Any:
    """What a cell adds and then subtracts when d rows of a group fall in it.

    ``out[jj, k, d, 0]`` is phi(c + 1) - phi(c) for d = 1 and phi(c + d) for d > 1;
    ``out[jj, k, d, 1]`` is 0 for d = 1 and phi(c) for d > 1 (c the count of T). Row K of
    every neuron is zero: the scoring kernel sends the second and later rows of a group that
    share a section there, so every row costs the same two additions and no branch.
    ``cells[jj, k]`` receives phi(c) itself (the same floats as ``CESState._cells``).
    """
    m, n_sections = counts.shape
    # Written entry by entry (no zero-filling pass over the whole table first).
    out = np.empty((m, n_sections + 1, q + 1, 2), dtype=np.float64)
    for jj in nb.prange(m):
        o = out[jj]
        for k in range(n_sections):
            c = counts[jj, k]
            ps = p_s[jj, k]
            lps = log_p_s[jj, k]
            p0 = _phi(objective, c, ps, lps, tab_log, tab_plogp, tab_p, threshold)
            cells[jj, k] = p0
            o[k, 0, 0] = 0.0
            o[k, 0, 1] = 0.0
            pd = _phi(objective, c + 1, ps, lps, tab_log, tab_plogp, tab_p, threshold)
            o[k, 1, 0] = pd - p0
            o[k, 1, 1] = 0.0
            for d in range(2, q + 1):
                o[k, d, 0] = _phi(objective, c + d, ps, lps, tab_log, tab_plogp, tab_p, threshold)
                o[k, d, 1] = p0
        for d in range(q + 1):
            o[n_sections, d, 0] = 0.0
            o[n_sections, d, 1] = 0.0
    return out


@nb.njit(inline="always")
def _add4(t0: float, t1: float, t2: float, t3: float, x: Any, gl: int, ab: Any) -> Any:
    # One row's two table entries added to the sums of groups gl .. gl + 3.
    i0, i1, i2, i3 = x[gl], x[gl + 1], x[gl + 2], x[gl + 3]
    t0 += ab[i0]
    t1 += ab[i1]
    t2 += ab[i2]
    t3 += ab[i3]
    t0 -= ab[i0 + 1]
    t1 -= ab[i1 + 1]
    t2 -= ab[i2 + 1]
    t3 -= ab[i3 + 1]
    return t0, t1, t2, t3


def _score_codes(codes: Any, n_groups: int, q: int, phi: Any, n_tasks: int) -> Any:
    """Change in the summed objective when each candidate group is added to T.

    ``codes`` (n, >= q l) holds the section codes of the candidates for the n non-constant
    neurons (:func:`_row_codes`), row r of group g at column r l + g; ``phi`` is
    :func:`_phi_table`'s. Only the cells a group touches change, so a group costs O(q n)
    whatever N and K: a cell reached by one row of the group adds phi(c + 1) - phi(c), one
    reached by d > 1 rows adds phi(c + d) and subtracts phi(c).

    Each group's sum runs over neurons in order and, per neuron, over its rows in order,
    whatever the number of threads (tasks split the groups), always adding the table's two
    entries (zero where nothing changes), so the sums are the same bit for bit on any
    machine. The neurons are the outer loop, one neuron at a time for all the task's
    groups: first the table index of every (group, row) (no branch; vectorised over the
    groups, whose codes are contiguous), then the sums, which are independent from group
    to group so the processor overlaps them. q = 5 (the paper's) is written out.
    """
    m = codes.shape[0]
    n_sections = phi.shape[1] - 1
    width = (q + 1) * 2
    kk = np.int32(n_sections)
    kf = np.float32(n_sections)
    one, two, six = np.float32(1), np.float32(2), np.float32(6)
    flat = phi.reshape((m, (n_sections + 1) * width))
    out = np.zeros(n_groups, dtype=np.float64)
    for t in nb.prange(n_tasks):
        g0, g1 = _bounds_jit(n_groups, n_tasks, t)
        ng = g1 - g0
        idx = np.empty((q, max(ng, 1)), dtype=np.int32)
        acc = out[g0:g1]
        for jj in range(m):
            c = codes[jj]
            ab = flat[jj]
            if q == 5:
                c0 = c[g0:g1]
                c1 = c[n_groups + g0 : n_groups + g1]
                c2 = c[2 * n_groups + g0 : 2 * n_groups + g1]
                c3 = c[3 * n_groups + g0 : 3 * n_groups + g1]
                c4 = c[4 * n_groups + g0 : 4 * n_groups + g1]
                x0, x1, x2, x3, x4 = idx[0], idx[1], idx[2], idx[3], idx[4]
                for gl in range(ng):
                    # Row r's entry: its section, or K (the zero row) when an earlier row
                    # of the group shares it; then d, the rows of the group sharing it.
                    # In float32 (small integers, exact) as numba widens integer
                    # arithmetic to int64: 8 groups per vector instruction instead of 4.
                    k0 = np.float32(c0[gl])
                    k1 = np.float32(c1[gl])
                    k2 = np.float32(c2[gl])
                    k3 = np.float32(c3[gl])
                    k4 = np.float32(c4[gl])
                    e01 = np.float32(k0 == k1)
                    e02 = np.float32(k0 == k2)
                    e03 = np.float32(k0 == k3)
                    e04 = np.float32(k0 == k4)
                    e12 = np.float32(k1 == k2)
                    e13 = np.float32(k1 == k3)
                    e14 = np.float32(k1 == k4)
                    e23 = np.float32(k2 == k3)
                    e24 = np.float32(k2 == k4)
                    e34 = np.float32(k3 == k4)
                    s1 = kf if e01 > 0 else k1
                    s2 = kf if e02 + e12 > 0 else k2
                    s3 = kf if e03 + e13 + e23 > 0 else k3
                    s4 = kf if e04 + e14 + e24 + e34 > 0 else k4
                    x0[gl] = np.int32((k0 * six + (one + e01 + e02 + e03 + e04)) * two)
                    x1[gl] = np.int32((s1 * six + (one + e01 + e12 + e13 + e14)) * two)
                    x2[gl] = np.int32((s2 * six + (one + e02 + e12 + e23 + e24)) * two)
                    x3[gl] = np.int32((s3 * six + (one + e03 + e13 + e23 + e34)) * two)
                    x4[gl] = np.int32((s4 * six + (one + e04 + e14 + e24 + e34)) * two)
                # Four groups at a time, their additions interleaved, so that four
                # independent sums are in flight (each in its own order, as above).
                n4 = ng - ng % 4
                for gl in range(0, n4, 4):
                    t0, t1, t2, t3 = acc[gl], acc[gl + 1], acc[gl + 2], acc[gl + 3]
                    t0, t1, t2, t3 = _add4(t0, t1, t2, t3, x0, gl, ab)
                    t0, t1, t2, t3 = _add4(t0, t1, t2, t3, x1, gl, ab)
                    t0, t1, t2, t3 = _add4(t0, t1, t2, t3, x2, gl, ab)
                    t0, t1, t2, t3 = _add4(t0, t1, t2, t3, x3, gl, ab)
                    t0, t1, t2, t3 = _add4(t0, t1, t2, t3, x4, gl, ab)
                    acc[gl], acc[gl + 1], acc[gl + 2], acc[gl + 3] = t0, t1, t2, t3
                for gl in range(n4, ng):
                    total = acc[gl]
                    for x in (x0, x1, x2, x3, x4):
                        i = x[gl]
                        total += ab[i]
                        total -= ab[i + 1]
                    acc[gl] = total
                continue
            for gl in range(ng):
                g = g0 + gl
                for r in range(q):
                    k = np.int32(c[r * n_groups + g])
                    d = np.int32(0)
                    first = np.int32(1)
                    for r2 in range(q):
                        same = np.int32(c[r2 * n_groups + g] == k)
                        d += same
                        if r2 < r:
                            first *= 1 - same
                    idx[r, gl] = (k * first + kk * (1 - first)) * width + d * 2
            for gl in range(ng):
                total = acc[gl]
                for r in range(q):
                    i = idx[r, gl]
                    total += ab[i]
                    total -= ab[i + 1]
                acc[gl] = total
    return out


# One compiled dispatcher per kernel, parallel; small inputs run it on one thread, as thread
# start-up costs more than the work (and stalls when the machine is busy). Never compile
# one Python function twice with cache=True (numba's disk cache key ignores ``parallel``).
PARALLEL_WORK = 2_000_000
_range = nb.njit(parallel=True, cache=True, nogil=True)(_range_block)
_hist = nb.njit(parallel=True, cache=True, nogil=True)(_histogram_block)
_codes = nb.njit(parallel=True, cache=True, nogil=True)(_row_codes)
_count = nb.njit(cache=True, nogil=True)(_count_rows)
_phis = nb.njit(parallel=True, cache=True, nogil=True)(_phi_table)
_score = nb.njit(parallel=True, cache=True, nogil=True)(_score_codes)


TASKS_PER_THREAD = 4


def _threads_for(work: int) -> Any:
    return threads_for(work, PARALLEL_WORK, tasks_per_thread=TASKS_PER_THREAD)


def n_tasks(n_rows: int, n_cols: int) -> int:
    """How many row ranges a pass over a pile of this shape is split into."""
    with _threads_for(n_rows * n_cols) as tasks:
        return max(1, min(n_rows, tasks))


def _readonly(x: Any) -> Any:
    """``x`` as a read-only view (no copy): the kernels only read the pile, and numba compiles
    one machine-code version per array type, read-only (memory-mapped piles) and writable
    alike; one type halves the compilation of a fresh install (about 20 s of the test suite)."""
    if isinstance(x, np.ndarray) and x.flags.writeable:
        x = x.view(np.ndarray)
        x.flags.writeable = False
    return x


def range_pass(x: Any, lo: Any, hi: Any, flag: Any) -> None:
    """Add one block of rows to the per-task minima, maxima and non-finite flags.

    ``lo``, ``hi`` and ``flag`` are (tasks, m) arrays of ``x.dtype``, started at +inf, -inf
    and 0; a flag becomes NaN once its column has held NaN or infinity.
    """
    with _threads_for(x.size):
        _range(_readonly(x), lo, hi, flag)


def histogram_pass(x: Any, lo: Any, scale: Any, n_sections: int, part: Any) -> None:
    """Add the section counts of one block of rows to ``part`` ((tasks, K, m) int32)."""
    with _threads_for(x.size):
        _hist(_readonly(x), lo, scale, n_sections, part)


def row_codes(x: Any, rows: Any, cols: Any, lo: Any, scale: Any, n_sections: int) -> Any:
    """Section codes of the given rows of ``x`` over the columns ``cols``, neuron by neuron:
    (len(cols), len(rows) rounded up to a multiple of 8) uint8, C order, the padding
    columns undefined (``lo`` and ``scale`` over all columns of ``x``)."""
    n = rows.shape[0]
    out = np.empty((cols.shape[0], -(-n // 8) * 8), dtype=np.uint8)
    with _threads_for(out.size):
        _codes(_readonly(x), rows, cols, lo, scale, n_sections, out)
    return out


def count_rows(codes: Any, at: Any, counts: Any) -> None:
    """Add the rows at positions ``at`` of ``codes`` (as from :func:`row_codes`) to the
    (n, K) int64 ``counts``."""
    _count(codes, at, counts)


def phi_table(counts: Any, *args: Any) -> tuple[Any, Any]:
    """Per-step cell tables for the scoring kernel, (m, K + 1, q + 1, 2), and the (m, K)
    cell terms phi(c) of T's counts; see ``_phi_table``."""
    cells = np.empty(counts.shape, dtype=np.float64)
    call = (counts, *args, cells)
    with _threads_for(counts.size * 8):
        return _phis(*call), cells


def score_codes(codes: Any, n_groups: int, q: int, phi: Any) -> Any:
    """Change in the summed objective for each candidate group; see ``_score_codes``.

    One task per thread: every task reads every neuron's table once."""
    with _threads_for(codes.size) as tasks:
        threads = max(1, tasks // TASKS_PER_THREAD)
        return _score(codes, n_groups, q, phi, max(1, min(n_groups, threads)))

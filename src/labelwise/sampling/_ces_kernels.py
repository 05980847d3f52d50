"""Compiled kernels for CES (numba). Pure functions of arrays; see ``ces.py`` for the maths.

Section code of value x for neuron j (K equal sections over [lo_j, hi_j], last one closed):
    code = min(floor((x - lo_j) * K / (hi_j - lo_j)), K - 1)
"""

from __future__ import annotations

from typing import Any

import numba as nb
import numpy as np

from .._numba import threads_for

OBJ_CE = 0  # Eq. 8: -sum P_S log max(P_T, eps)
OBJ_CE_COMMON = 1  # Eq. 8 restricted to sections with P_S >= 0.5 / |T|
OBJ_KL = 2  # KL(P_T || P_S) (Sec. 4.3.4)


@nb.njit(inline="always")
def _code(x: float, lo: float, scale: float, n_sections: int) -> int:
    k = int((x - lo) * scale)
    if k >= n_sections:
        return n_sections - 1
    if k < 0:
        return 0
    return k


def _section_histogram(
    x: Any, cols: Any, lo: Any, scale: Any, n_sections: int, n_chunks: int
) -> Any:
    n_rows = x.shape[0]
    m = cols.shape[0]
    # (section, neuron) layout: most values of a ReLU layer share section 0, so the counters
    # touched by one row are mostly contiguous; int32 halves the cache footprint.
    partial = np.zeros((n_chunks, n_sections, m), dtype=np.int32)
    step = (n_rows + n_chunks - 1) // n_chunks
    for c in nb.prange(n_chunks):
        start = c * step
        stop = min(n_rows, start + step)
        for i in range(start, stop):
            for jj in range(m):
                j = cols[jj]
                partial[c, _code(x[i, j], lo[jj], scale[jj], n_sections), jj] += 1
    out = np.zeros((m, n_sections), dtype=np.int64)
    for c in range(n_chunks):
        for k in range(n_sections):
            for jj in range(m):
                out[jj, k] += partial[c, k, jj]
    return out


def _column_range(x: Any, n_chunks: int) -> Any:
    n_rows, m = x.shape
    lo = np.empty((n_chunks, m), dtype=np.float64)
    hi = np.empty((n_chunks, m), dtype=np.float64)
    bad = np.full(n_chunks, n_rows, dtype=np.int64)
    step = (n_rows + n_chunks - 1) // n_chunks
    for c in nb.prange(n_chunks):
        start = c * step
        stop = min(n_rows, start + step)
        for j in range(m):
            lo[c, j] = np.inf
            hi[c, j] = -np.inf
        for i in range(start, stop):
            for j in range(m):
                v = x[i, j]
                if v - v != 0.0 and i < bad[c]:  # NaN or infinity
                    bad[c] = i
                if v < lo[c, j]:
                    lo[c, j] = v
                if v > hi[c, j]:
                    hi[c, j] = v
    out_lo = lo[0].copy()
    out_hi = hi[0].copy()
    for c in range(1, n_chunks):
        for j in range(m):
            out_lo[j] = min(out_lo[j], lo[c, j])
            out_hi[j] = max(out_hi[j], hi[c, j])
    return out_lo, out_hi, bad.min()


@nb.njit(cache=True, nogil=True)
def row_codes(x: Any, rows: Any, cols: Any, lo: Any, scale: Any, n_sections: int) -> Any:
    """Section codes of the given rows: shape (len(rows), len(cols)), uint8."""
    out = np.empty((rows.shape[0], cols.shape[0]), dtype=np.uint8)
    for r in range(rows.shape[0]):
        i = rows[r]
        for jj in range(cols.shape[0]):
            out[r, jj] = _code(x[i, cols[jj]], lo[jj], scale[jj], n_sections)
    return out


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


def _score_groups(
    x: Any,
    groups: Any,
    cols: Any,
    lo: Any,
    scale: Any,
    n_sections: int,
    counts: Any,
    p_s: Any,
    log_p_s: Any,
    objective: int,
    tab_log: Any,
    tab_plogp: Any,
    tab_p: Any,
    threshold: float,
    step1: Any,
) -> Any:
    """Change in the summed objective when each candidate group is added to T.

    ``groups`` is (l, q) row indices; ``counts`` the (m, K) section counts of T. Only the
    cells a group touches change, so a group costs O(q m) instead of O(K m). Most touched
    cells gain one row: ``step1[k, j]`` = phi(c + 1) - phi(c) is precomputed per step in a
    (section, neuron) layout, so those cost one contiguous read.
    """
    n_groups, q = groups.shape
    m = cols.shape[0]
    out = np.empty(n_groups, dtype=np.float64)
    for g in nb.prange(n_groups):
        codes = np.empty((q, m), dtype=np.uint8)
        for r in range(q):
            i = groups[g, r]
            for jj in range(m):
                codes[r, jj] = _code(x[i, cols[jj]], lo[jj], scale[jj], n_sections)
        total = 0.0
        for jj in range(m):
            for r in range(q):
                k = codes[r, jj]
                first = True
                for r2 in range(r):
                    if codes[r2, jj] == k:
                        first = False
                        break
                if not first:
                    continue
                d = 1
                for r2 in range(r + 1, q):
                    if codes[r2, jj] == k:
                        d += 1
                if d == 1:
                    total += step1[k, jj]
                    continue
                c = counts[jj, k]
                ps = p_s[jj, k]
                lps = log_p_s[jj, k]
                total += _phi(objective, c + d, ps, lps, tab_log, tab_plogp, tab_p, threshold)
                total -= _phi(objective, c, ps, lps, tab_log, tab_plogp, tab_p, threshold)
        out[g] = total
    return out


# One compiled (parallel) dispatcher per kernel. Two dispatchers of one Python function must
# not both use cache=True: numba's on-disk cache key ignores the ``parallel`` flag, so one
# would silently load the other's machine code. Small inputs run on one thread instead, as
# thread start-up costs more than the work (and stalls when the machine is busy).
PARALLEL_WORK = 2_000_000
_hist = nb.njit(parallel=True, cache=True, nogil=True)(_section_histogram)
_range = nb.njit(parallel=True, cache=True, nogil=True)(_column_range)
_score = nb.njit(parallel=True, cache=True, nogil=True)(_score_groups)


def _threads_for(work: int) -> Any:
    return threads_for(work, PARALLEL_WORK, tasks_per_thread=4)


def column_range(x: Any) -> tuple[Any, Any, int]:
    """Per-column minimum and maximum in one pass, and the first row holding NaN or
    infinity (``x.shape[0]`` when every value is finite)."""
    with _threads_for(x.size) as chunks:
        return _range(x, max(1, min(x.shape[0], chunks)))


def section_histogram(x: Any, cols: Any, lo: Any, scale: Any, n_sections: int) -> Any:
    """Counts of rows per (neuron, section) for the neurons in ``cols``: shape (len(cols), K)."""
    with _threads_for(x.shape[0] * cols.shape[0]) as chunks:
        return _hist(x, cols, lo, scale, n_sections, max(1, min(x.shape[0], chunks)))


def score_groups(x: Any, groups: Any, cols: Any, *args: Any) -> Any:
    """Change in the summed objective for each candidate group; see ``_score_groups``."""
    with _threads_for(groups.size * cols.shape[0]):
        return _score(x, groups, cols, *args)

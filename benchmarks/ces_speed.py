"""CES speed beside the time of one plain read of the same array, part by part.

Run: ``python benchmarks/ces_speed.py`` (``make bench``): 100 of 50,000 x 4,096 float32 in
memory. ``--rows N --cols M --memmap PATH`` writes the pile to a ``.npy`` file at PATH (made
in chunks, so a 10 GB pile needs little memory), reads it memory-mapped and deletes the file
afterwards (``--keep`` keeps it; an existing file of the right shape is reused).

Each part is the best of ``--repeat`` runs, timed in the same process right after one plain
read of the same array (a copy into a reusable 32 MB buffer, block by block), so the ratios
hold on a busy machine. Parts: the range pass (per-column bounds and the NaN check), the
section/histogram pass, the steps (initial rows and the groups), and the whole
``ces_select``. Targets (issue 15): 100 of 50,000 x 4,096 in <= 0.5 s on 2 cores and within
3x of one read; 10,000,000 x 256 on disk within 3x of one read with peak anonymous memory
< 1 GB (printed from /proc/self/status: VmHWM minus the file-backed resident pages).
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numba
import numpy as np

from labelwise import ces_select
from labelwise.sampling import ces as ces_mod


def relu_activations(n: int, m: int, seed: int, out: Any = None) -> Any:
    """ReLU-like activations in float32 with correlated neurons, made in chunks."""
    rng = np.random.default_rng(seed)
    mix = rng.standard_normal((16, m)).astype(np.float32)
    if out is None:
        out = np.empty((n, m), dtype=np.float32)
    for s in range(0, n, 5000):
        z = rng.standard_normal((min(5000, n - s), 16)).astype(np.float32)
        block = z @ mix + rng.standard_normal((z.shape[0], m), dtype=np.float32)
        out[s : s + z.shape[0]] = np.maximum(block - 0.5, 0.0)
    return out


def memmap_pile(path: Path, n: int, m: int) -> np.ndarray:
    if path.exists():
        x = np.load(path, mmap_mode="r")
        if x.shape == (n, m) and x.dtype == np.float32:
            return x
    out = np.lib.format.open_memmap(path, mode="w+", dtype=np.float32, shape=(n, m))
    relu_activations(n, m, 0, out)
    out.flush()
    del out
    return np.load(path, mmap_mode="r")


def plain_read(x: np.ndarray, buf: np.ndarray) -> None:
    """One read of every byte: a copy into a reusable buffer, block by block."""
    rows = buf.shape[0]
    for s in range(0, x.shape[0], rows):
        b = x[s : s + rows]
        buf[: b.shape[0]] = b


def best(f: Callable[[], Any], repeat: int, read: Callable[[], Any]) -> tuple[float, float]:
    """Best of ``repeat`` (part, plain read) times, each read timed right before the part."""
    t_part, t_read = [], []
    for _ in range(repeat):
        t0 = time.perf_counter()
        read()
        t1 = time.perf_counter()
        f()
        t2 = time.perf_counter()
        t_read.append(t1 - t0)
        t_part.append(t2 - t1)
    return min(t_part), min(t_read)


def anon_peak_gb() -> float:
    """Peak resident memory minus file-backed resident pages now (memory-mapped pile), in GB."""
    fields = {}
    for line in Path("/proc/self/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if value.strip().endswith("kB"):
            fields[key] = int(value.split()[0])
    return (fields.get("VmHWM", 0) - fields.get("RssFile", 0)) / 1e6


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--rows", type=int, default=50_000)
    ap.add_argument("--cols", "--neurons", type=int, default=4_096, dest="cols")
    ap.add_argument("--budget", type=int, default=100)
    ap.add_argument("--memmap", type=Path, default=None, help="write and memory-map the pile here")
    ap.add_argument("--keep", action="store_true", help="keep the --memmap file")
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()

    t0 = time.perf_counter()
    ces_select(relu_activations(200, 8, 1), 40, rng=0)  # JIT compile (or load the disk cache)
    t_jit = time.perf_counter() - t0

    if args.memmap is not None:
        x = memmap_pile(args.memmap, args.rows, args.cols)
        where = f"memory-mapped {args.memmap}"
    else:
        x = relu_activations(args.rows, args.cols, 0)
        where = "in memory"
    buf = np.empty((max(1, (1 << 25) // (4 * args.cols)), args.cols), dtype=np.float32)

    def read() -> None:
        plain_read(x, buf)

    read()  # warm the page cache
    params = {"n_sections": 20, "initial": 30, "group_size": 5, "n_groups": 300}
    state = ces_mod.CESState(x, n_sections=20, objective="kl", epsilon=1e-10)
    rows: list[tuple[str, float, float]] = []
    if hasattr(ces_mod, "_range"):  # the streaming passes (issue 15)
        pile = state.pile
        rows.append(
            (
                "range pass (bounds, NaN check)",
                *best(lambda: ces_mod._range(pile), args.repeat, read),
            )
        )
        lo, sc = state._lo_all, state._scale_all
        rows.append(
            (
                "section/histogram pass",
                *best(lambda: ces_mod._histogram(pile, lo, sc, 20), args.repeat, read),
            )
        )
    else:
        rows.append(
            (
                "both passes (bounds, sections, P_S)",
                *best(
                    lambda: ces_mod.CESState(x, n_sections=20, objective="kl", epsilon=1e-10),
                    args.repeat,
                    read,
                ),
            )
        )

    def steps() -> None:
        state.counts[:] = 0
        state.size = 0
        ces_mod._run(
            state, np.empty(0, dtype=np.int64), args.budget, params, np.random.default_rng(0), False
        )

    n_steps = -(-(args.budget - 30) // 5)
    rows.append((f"initial rows + {n_steps} steps of 300 groups", *best(steps, args.repeat, read)))
    sel: list[Any] = []
    rows.append(
        (
            "whole ces_select",
            *best(lambda: sel.append(ces_select(x, args.budget, rng=0)), args.repeat, read),
        )
    )

    print(f"CES select {args.budget} of {args.rows:,} x {args.cols:,} float32 {where}")
    print(
        f"  numba threads {numba.get_num_threads()}; one-off JIT compile / cache load {t_jit:.3f} s"
    )
    print(f"  {'part':40s} {'seconds':>8s} {'plain read':>11s} {'ratio':>7s}")
    for name, t, r in rows:
        print(f"  {name:40s} {t:8.3f} {r:11.3f} {t / r:6.2f}x")
    last = sel[-1]
    print(f"  selected {len(last)} rows, objective {last.diagnostics['objective_trace'][-1]:.4f}")
    print(f"  peak anonymous memory {anon_peak_gb():.2f} GB")
    if args.memmap is not None and not args.keep:
        del x, state
        args.memmap.unlink()


if __name__ == "__main__":
    main()

"""CES speed: 100 of 50,000 rows with m=4,096 neurons, against the plain-loop reference.

Run: ``python benchmarks/ces_speed.py`` (``make bench``). Prints seconds per part and the
speed ratio to the plain-loop reference of Algorithm 1 measured on a small case in the same
process. Target: <= 1 s for the large case on 2 cores (after the one-off JIT compilation,
which is cached on disk and timed separately).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

import ces_reference
from labelwise import ces_select
from labelwise.sampling.ces import CESState, _run


def relu_activations(n: int, m: int, seed: int) -> np.ndarray:
    """ReLU-like activations in float32 with correlated neurons, made in chunks."""
    rng = np.random.default_rng(seed)
    mix = rng.standard_normal((16, m)).astype(np.float32)
    out = np.empty((n, m), dtype=np.float32)
    for s in range(0, n, 5000):
        z = rng.standard_normal((min(5000, n - s), 16)).astype(np.float32)
        block = z @ mix + rng.standard_normal((z.shape[0], m), dtype=np.float32)
        out[s : s + z.shape[0]] = np.maximum(block - 0.5, 0.0)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--rows", type=int, default=50_000)
    ap.add_argument("--neurons", type=int, default=4_096)
    ap.add_argument("--budget", type=int, default=100)
    args = ap.parse_args()

    t0 = time.perf_counter()
    ces_select(relu_activations(200, 8, 1), 40, rng=0)  # JIT compile (or load the disk cache)
    t_jit = time.perf_counter() - t0

    x = relu_activations(args.rows, args.neurons, 0)
    params = {"n_sections": 20, "initial": 30, "group_size": 5, "n_groups": 300}
    t0 = time.perf_counter()
    state = CESState(x, n_sections=20, objective="kl", epsilon=1e-10)
    t_prep = time.perf_counter() - t0
    t0 = time.perf_counter()
    _run(state, np.empty(0, dtype=np.int64), args.budget, params, np.random.default_rng(0), False)
    t_steps = time.perf_counter() - t0
    t0 = time.perf_counter()
    sel = ces_select(x, args.budget, rng=0)
    t_large = time.perf_counter() - t0
    del state

    # Small case: the same algorithm, package vs plain-loop reference, same process.
    small = relu_activations(300, 16, 2)
    n_small, l_small = 40, 20
    t0 = time.perf_counter()
    for seed in range(5):
        ces_select(small, n_small, n_groups=l_small, rng=seed)
    t_pkg_small = (time.perf_counter() - t0) / 5
    t0 = time.perf_counter()
    ces_reference.select(small, n_small, n_groups=l_small, seed=0)
    t_ref_small = time.perf_counter() - t0

    print(f"CES select {args.budget} of {args.rows:,} x {args.neurons:,} (K=20, p=30, q=5, l=300)")
    print(f"  one-off JIT compile / cache load : {t_jit:8.3f} s")
    print(f"  bounds, sections and P_S (2 passes over the pile): {t_prep:6.3f} s")
    print(f"  initial rows + 14 steps of 300 candidate groups   : {t_steps:6.3f} s")
    print(f"  whole ces_select (the same work, timed again)     : {t_large:6.3f} s   target <= 1 s")
    print(f"  selected {len(sel)} rows, objective {sel.diagnostics['objective_trace'][-1]:.4f}")
    print(f"small case {n_small} of 300 x 16, l={l_small}:")
    print(f"  package  : {t_pkg_small * 1e3:10.2f} ms")
    print(f"  reference: {t_ref_small * 1e3:10.2f} ms")
    print(f"  ratio reference/package: {t_ref_small / t_pkg_small:,.0f}x")


if __name__ == "__main__":
    main()

"""Neuron k-activation coverage speed: k = 3 over c = 256 neurons and 10,000 inputs.

Run: ``python benchmarks/neuron_coverage_speed.py``. Prints seconds for the one-off JIT
compilation (cached on disk), for the large case in one pass and in 10 chunks, and the speed
ratio to a brute-force loop (the paper's table, marked input by input) timed on a small case
(c = 24) in the same process, both directly on that case and extrapolated per
(input x cell) to the large case. Target: seconds, not minutes, on 2 cores.
"""

from __future__ import annotations

import argparse
import itertools
import time
from math import comb

import numpy as np

from labelwise.dependability.neuron import NeuronKCoverage, k_activation_coverage


def relu_activations(n: int, m: int, seed: int, factors: int = 8) -> np.ndarray:
    """ReLU-like float32 activations with neurons correlated through a few latent factors."""
    rng = np.random.default_rng(seed)
    mix = rng.standard_normal((factors, m)).astype(np.float32)
    z = rng.standard_normal((n, factors)).astype(np.float32)
    noise = rng.standard_normal((n, m), dtype=np.float32)
    return np.maximum(z @ mix + 0.3 * noise - 3.0, 0.0)


def brute_force(x: np.ndarray, k: int, threshold: float = 0.0) -> int:
    """Covered cells by the definition: a table per k-subset, marked input by input."""
    on = (x > threshold).tolist()
    subsets = list(itertools.combinations(range(x.shape[1]), k))
    table = [bytearray(2**k) for _ in subsets]
    for row in on:
        for cell, sub in zip(table, subsets, strict=True):
            p = 0
            for neuron in sub:
                p = 2 * p + row[neuron]
            cell[p] = 1
    return sum(sum(cell) for cell in table)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--inputs", type=int, default=10_000)
    ap.add_argument("--neurons", type=int, default=256)
    ap.add_argument("--k", type=int, default=3)
    ap.add_argument("--small-neurons", type=int, default=24)
    ap.add_argument("--small-inputs", type=int, default=500)
    args = ap.parse_args()

    t0 = time.perf_counter()
    k_activation_coverage(relu_activations(100, 8, 1), k=3)  # JIT compile or load the cache
    t_jit = time.perf_counter() - t0

    x = relu_activations(args.inputs, args.neurons, 0)
    t0 = time.perf_counter()
    res = k_activation_coverage(x, k=args.k)
    t_one = time.perf_counter() - t0

    t0 = time.perf_counter()
    acc = NeuronKCoverage(args.neurons, k=args.k)
    for part in np.array_split(x, 10):
        acc.update(part)
    chunked = acc.result()
    t_chunks = time.perf_counter() - t0
    assert chunked == res, "chunked and one-pass results differ"

    small = relu_activations(args.small_inputs, args.small_neurons, 2)
    t0 = time.perf_counter()
    want = brute_force(small, args.k)
    t_brute = time.perf_counter() - t0
    t0 = time.perf_counter()
    got = k_activation_coverage(small, k=args.k)
    t_small = time.perf_counter() - t0
    assert got.covered == want, f"brute force {want} != {got.covered}"

    per_cell = t_brute / (args.small_inputs * comb(args.small_neurons, args.k))
    brute_large = per_cell * args.inputs * comb(args.neurons, args.k)
    print(f"neuron k-activation coverage, k={args.k}, c={args.neurons}, n={args.inputs}")
    print(f"  cells: {res.total:,}  covered: {res.covered:,}  value: {res.value:.6f}")
    print(f"  coverage by order 1..k: {', '.join(f'{v:.6f}' for v in res.value_by_order)}")
    print(f"  JIT (first call, incl. compile or cache load): {t_jit:.3f} s")
    print(f"  one pass:  {t_one:.3f} s")
    print(f"  10 chunks: {t_chunks:.3f} s (same result)")
    print(
        f"  brute force c={args.small_neurons}, n={args.small_inputs}: {t_brute:.3f} s "
        f"vs {t_small:.4f} s here (ratio {t_brute / t_small:,.0f}x)"
    )
    print(
        f"  brute force extrapolated to the large case: {brute_large:,.0f} s "
        f"(ratio {brute_large / t_one:,.0f}x)"
    )


if __name__ == "__main__":
    main()

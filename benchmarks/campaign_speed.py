"""Time Campaign.propose on 1,000,000 rows x 512 neurons (target: <= 1 s per batch after the
first), and resuming a saved campaign (what every CLI command does) with and without the
arrays it computed at its start (:meth:`labelwise.Campaign.to_arrays`).

Run: python benchmarks/campaign_speed.py [N] [D]."""

from __future__ import annotations

import sys
import time

import numpy as np

import labelwise as lw


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000
    d = int(sys.argv[2]) if len(sys.argv) > 2 else 512
    g = np.random.default_rng(0)
    acts = g.standard_normal((n, d), dtype=np.float32)
    logits = g.standard_normal((n, 10)).astype(np.float32) * 3
    probs = np.exp(logits - logits.max(axis=1, keepdims=True))
    probs /= probs.sum(axis=1, keepdims=True)
    y = (g.random(n) < probs.max(axis=1)).astype(float)
    print(f"pile: {n:,} x {d} (float32)")
    t, c = time.perf_counter(), time.process_time()
    camp = lw.Campaign(acts, probs, method="auto", rng=0)
    print(f"set-up: {time.perf_counter() - t:.2f} s ({time.process_time() - c:.2f} s of CPU)")
    worst = 0.0
    for b in range(5):
        t = time.perf_counter()
        rows = camp.propose(20)
        tp = time.perf_counter() - t
        worst = max(worst, tp) if b else worst
        camp.record(rows, y[rows])
        t = time.perf_counter()
        camp.estimate()
        print(f"batch {b}: propose {tp:.3f} s, estimate {time.perf_counter() - t:.3f} s")
    print(f"propose after the first batch: at most {worst:.3f} s (target <= 1 s)")
    state, arrays = camp.to_dict(), camp.to_arrays()
    t, c = time.perf_counter(), time.process_time()
    lw.Campaign.from_dict(state, activations=acts, probabilities=probs)
    t_full, c_full = time.perf_counter() - t, time.process_time() - c
    t, c = time.perf_counter(), time.process_time()
    again = lw.Campaign.from_dict(state, activations=acts, probabilities=probs, arrays=arrays)
    t_cached, c_cached = time.perf_counter() - t, time.process_time() - c
    t = time.perf_counter()
    again.propose(20)
    print(
        f"resume: {t_full:.2f} s ({c_full:.2f} s CPU) recomputing, {t_cached:.2f} s "
        f"({c_cached:.2f} s CPU) from to_arrays(); "
        f"then propose {time.perf_counter() - t:.3f} s"
    )


if __name__ == "__main__":
    main()

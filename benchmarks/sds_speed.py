"""SDS speed: 80 models x 10,000 inputs, against the plain-loop reading of Algorithm 1.

Run: ``python benchmarks/sds_speed.py``. Prints the median seconds of one ``sds_select`` on
the large case (target < 1 s) and, in the same process, the package and the plain-Python
reference (``tests/sds_reference.py``) on a small case, with their ratio.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
from scipy.stats import norm

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

import sds_reference
from labelwise import sds_discrimination, sds_select


def synthetic_predictions(n_models: int, n: int, seed: int, n_classes: int = 10) -> np.ndarray:
    """(n_models, n) predicted labels; accuracies 0.7-0.98, errors correlated across models.

    Each input has a difficulty shared by all models and a "confusing" class that most wrong
    models predict, so models tend to fail on the same inputs in the same way.
    """
    rng = np.random.default_rng(seed)
    truth = rng.integers(0, n_classes, n)
    confusing = (truth + rng.integers(1, n_classes, n)) % n_classes
    difficulty = rng.standard_normal(n)
    accuracy = rng.uniform(0.7, 0.98, n_models)
    z = 0.8 * difficulty[None, :] + 0.6 * rng.standard_normal((n_models, n))
    wrong = z > norm.ppf(accuracy)[:, None]
    random_other = (truth[None, :] + rng.integers(1, n_classes, (n_models, n))) % n_classes
    wrong_label = np.where(rng.random((n_models, n)) < 0.7, confusing[None, :], random_other)
    return np.where(wrong, wrong_label, truth[None, :])


def median_seconds(fn: Callable[[int], object], repeats: int) -> float:
    times = []
    for r in range(repeats):
        t0 = time.perf_counter()
        fn(r)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--models", type=int, default=80)
    ap.add_argument("--inputs", type=int, default=10_000)
    ap.add_argument("--budget", type=int, default=180)
    ap.add_argument("--repeats", type=int, default=7)
    args = ap.parse_args()

    large = synthetic_predictions(args.models, args.inputs, seed=0)
    sds_select(large, args.budget, rng=0)  # warm-up
    t_large = median_seconds(lambda r: sds_select(large, args.budget, rng=r), args.repeats)
    acc = (large == sds_discrimination(large).votes[None, :]).mean(axis=1)

    small = synthetic_predictions(20, 1_000, seed=1)
    n_small = 50
    t_pkg = median_seconds(lambda r: sds_select(small, n_small, rng=r), args.repeats)
    rows = small.tolist()
    t_ref = median_seconds(lambda r: sds_reference.select(rows, n_small, seed=r), 3)
    same = np.allclose(
        sds_discrimination(small).discrimination, sds_reference.discrimination(rows)[4]
    )

    print(f"SDS select {args.budget} of {args.inputs:,} inputs, {args.models} models, 10 classes")
    print(f"  agreement with the vote per model: {acc.min():.3f} .. {acc.max():.3f}")
    print(f"  package, median of {args.repeats}: {t_large:8.4f} s   target < 1 s")
    print(f"small case {n_small} of 1,000 inputs, 20 models:")
    print(f"  package  : {t_pkg * 1e3:10.3f} ms")
    print(f"  reference: {t_ref * 1e3:10.3f} ms   (plain Python loops, median of 3)")
    print(f"  ratio reference/package: {t_ref / t_pkg:,.0f}x   discrimination equal: {same}")


if __name__ == "__main__":
    main()

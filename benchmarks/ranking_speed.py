"""Time RankingCampaign.propose on 80 models x 100,000 inputs (target: <= 1 s per call).

Run: ``python benchmarks/ranking_speed.py``. Prints the construction time, the first proposal
(no labels) and a proposal after 200 recorded labels.
"""

from __future__ import annotations

import time

import numpy as np

from labelwise import RankingCampaign
from labelwise.ranking import synthetic_zoo


def main() -> None:
    gen = np.random.default_rng(0)
    zoo = synthetic_zoo(gen.uniform(0.6, 0.95, 80), 100_000, correlation=0.5, rng=gen)
    t0 = time.perf_counter()
    camp = RankingCampaign(zoo.predictions, rng=1)
    t1 = time.perf_counter()
    rows = camp.propose(10)
    t2 = time.perf_counter()
    print(
        f"80 models x 100,000 inputs: construct {t1 - t0:.3f} s, first propose(10) {t2 - t1:.3f} s"
    )
    camp.record(rows, zoo.labels[rows])
    while camp.n_labelled < 200:
        rows = camp.propose(10)
        camp.record(rows, zoo.labels[rows])
    t3 = time.perf_counter()
    rows = camp.propose(10)
    t4 = time.perf_counter()
    r = camp.ranking()
    t5 = time.perf_counter()
    print(f"propose(10) after 200 labels {t4 - t3:.3f} s; ranking() {t5 - t4:.3f} s")
    print(f"P(best) of the top model {r.prob_best.max():.2f}")


if __name__ == "__main__":
    main()

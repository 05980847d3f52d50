"""Ranking study: SRS, SDS, the majority vote and :class:`labelwise.RankingCampaign` on zoos.

For every regime and repetition a fresh seeded synthetic zoo is drawn
(:func:`labelwise.ranking.synthetic_zoo`: latent item difficulty, correlated errors), every
method labels up to the largest size, and at each size the estimated accuracies are compared
with the true ones on the whole pile: Spearman's rho, Jaccard of the top quarter (k =
max(1, round(M / 4))), the best-model regret (true accuracy of the true best minus that of the
model ranked first) and whether the first model is the true best. "Labels to 90 %" is the
smallest size at which the first-ranked model is the true best in at least 90 % of the
repetitions (and at every larger size). SRS and SDS rank by accuracy on the labelled rows (a
prefix of one draw, as in Meng et al. 2021); the vote ranks by agreement with the majority
vote and uses no label; "campaign" is ``RankingCampaign(method="auto")`` proposing 5 rows a
round.

Run ``python -m labelwise.experiments.ranking_study --quick`` for the table.
"""

from __future__ import annotations

import argparse
import time
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

from ..estimation.comparison import jaccard_top_k, spearman
from ..exceptions import DegenerateDataWarning
from ..ranking.campaign import RankingCampaign
from ..ranking.synthetic import REGIMES, regime_zoo
from ..sampling import sds_select, srs_select
from ..sampling.sds import majority_vote

__all__ = ["RankingStudyResult", "format_table", "run_ranking_study"]

METHODS = ("SRS", "SDS", "vote", "campaign")
SIZES = tuple(range(35, 181, 5))
REPORT_SIZES = (35, 60, 90, 120, 150, 180)
METRICS = ("spearman", "jaccard", "regret", "best")


@dataclass
class RankingStudyResult:
    """``values[regime][method][metric]``: (repetitions, sizes) arrays."""

    sizes: tuple[int, ...]
    repetitions: int
    n_inputs: int
    values: dict[str, dict[str, dict[str, NDArray[np.float64]]]] = field(default_factory=dict)
    seconds: float = 0.0

    def mean(self, regime: str, method: str, metric: str) -> NDArray[np.float64]:
        return np.asarray(self.values[regime][method][metric].mean(axis=0))

    def labels_to_best(self, regime: str, method: str, target: float = 0.9) -> int | None:
        """Smallest size from which P(first-ranked model is the true best) >= target."""
        ok = self.mean(regime, method, "best") >= target
        for j in range(len(self.sizes)):
            if ok[j:].all():
                return self.sizes[j]
        return None


def _quality(
    est: NDArray[np.float64], true: NDArray[np.float64], k: int
) -> tuple[float, float, float, float]:
    first = int(np.argmax(est))
    best = float(true.max())
    return (
        spearman(est, true),
        jaccard_top_k(est, true, k),
        best - float(true[first]),
        float(true[first] == best),
    )


def run_ranking_study(
    *,
    regimes: Sequence[str] = REGIMES,
    repetitions: int = 30,
    n_inputs: int = 5000,
    sizes: Sequence[int] = SIZES,
    batch: int = 5,
    seed: int = 0,
) -> RankingStudyResult:
    """Run every method on fresh synthetic zoos of every regime (see the module docstring)."""
    sizes = tuple(sorted(int(s) for s in sizes))
    res = RankingStudyResult(sizes, repetitions, n_inputs)
    t0 = time.perf_counter()
    top = sizes[-1]
    for regime in regimes:
        vals = {m: {q: np.empty((repetitions, len(sizes))) for q in METRICS} for m in METHODS}
        for r in range(repetitions):
            ss = np.random.SeedSequence([seed, REGIMES.index(regime), r]).spawn(4)
            zoo = regime_zoo(regime, n_inputs, rng=np.random.default_rng(ss[1]))
            pred, y, true = zoo.predictions, zoo.labels, zoo.true_accuracy
            k = max(1, round(true.size / 4))
            correct = pred == y[None, :]
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", DegenerateDataWarning)
                orders = {
                    "SRS": srs_select(y.size, top, rng=np.random.default_rng(ss[2])).indices,
                    "SDS": sds_select(pred, top, rng=np.random.default_rng(ss[2])).indices,
                }
            for m, order in orders.items():
                csum = np.cumsum(correct[:, order], axis=1)
                for j, n in enumerate(sizes):
                    q = _quality(csum[:, n - 1] / n, true, k)
                    for name, v in zip(METRICS, q, strict=True):
                        vals[m][name][r, j] = v
            vote_est = (pred == majority_vote(pred)[None, :]).mean(axis=1)
            q = _quality(vote_est, true, k)
            for name, v in zip(METRICS, q, strict=True):
                vals["vote"][name][r, :] = v
            camp = RankingCampaign(pred, rng=np.random.default_rng(ss[3]), n_draws=500)
            j = 0
            while camp.n_labelled < top:
                rows = camp.propose(min(batch, top - camp.n_labelled))
                camp.record(rows, y[rows])
                while j < len(sizes) and camp.n_labelled >= sizes[j]:
                    if camp.n_labelled == sizes[j]:
                        q = _quality(camp.estimate()[0], true, k)
                        for name, v in zip(METRICS, q, strict=True):
                            vals["campaign"][name][r, j] = v
                    j += 1
        res.values[regime] = vals
    res.seconds = time.perf_counter() - t0
    return res


def format_table(res: RankingStudyResult, report_sizes: Sequence[int] = REPORT_SIZES) -> str:
    """Markdown table: mean over sizes and repetitions of each metric, per regime and method."""
    idx = [res.sizes.index(s) for s in report_sizes if s in res.sizes]
    lines = [
        f"{res.repetitions} repetitions, N = {res.n_inputs}, sizes {res.sizes[0]}..{res.sizes[-1]}"
        f" (mean over all sizes; min over the report sizes in brackets)",
        "",
        "| regime | method | Spearman | Jaccard@k | regret | P(best) | labels to 90 % best |",
        "|---|---|---|---|---|---|---|",
    ]
    for regime, vals in res.values.items():
        for m in vals:
            sp = res.mean(regime, m, "spearman")
            ja = res.mean(regime, m, "jaccard")
            need = res.labels_to_best(regime, m)
            lines.append(
                f"| {regime} | {m} | {sp.mean():.3f} [{sp[idx].min():.3f}] | "
                f"{ja.mean():.3f} [{ja[idx].min():.3f}] | "
                f"{res.mean(regime, m, 'regret').mean():.4f} | "
                f"{res.mean(regime, m, 'best').mean():.2f} | "
                f"{'-' if need is None else need} |"
            )
    lines.append(f"\n{res.seconds:.1f} s")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="10 repetitions, N = 3000")
    parser.add_argument("--repetitions", type=int, default=30)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    if args.quick:
        res = run_ranking_study(repetitions=10, n_inputs=3000, seed=args.seed)
    else:
        res = run_ranking_study(repetitions=args.repetitions, seed=args.seed)
    print(format_table(res))


if __name__ == "__main__":
    main()

"""``labelwise study comparative``: ranking many models with one small labelling budget
(Meng et al., ICSE 2021, Sec. IV-V: Table II, Fig. 4; Sec. VI: fewer models, majority vote).

For each method and repetition one selection of the largest size is drawn, by the method's
entry in :mod:`labelwise.registry`; every smaller size is its prefix (SDS, RDG and SRS draw
uniformly at random in selection order, DDG is a deterministic ranking, CES is sequential).
At each size the models' accuracies on the labelled prefix are compared with their true
accuracies on the whole pile by Spearman's rho, the Jaccard similarity of the top-k sets, the
best-model regret (true accuracy of the true best minus that of the model ranked first) and
whether the first-ranked model is the true best. The CES baseline is the paper's: CES run on
every model's last hidden layer, keeping, per repetition, the selection whose ranking is best
(mean Spearman + Jaccard@10 over the sizes), an oracle choice no tester could make.

CPPI is registry method ``"cppi"`` run as it is meant to be: a
:class:`labelwise.RankingCampaign` that proposes 5 rows a round, records their labels, and
ranks by its consensus-PPI estimate of the pile accuracies (not by the labelled prefix).
:func:`run_regime_study` adds the synthetic regimes of
:mod:`labelwise.experiments.ranking_study` (strong and close, weak, spread, 6 models).
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from .. import registry
from .._plotting import pyplot, save_figure
from .._progress import progress_bar
from ..estimation.comparison import jaccard_top_k, spearman, wtl
from ..exceptions import DegenerateDataWarning
from ..io import write_csv, write_json
from ..ranking.campaign import RankingCampaign
from ..sampling.sds import majority_vote
from .study import PAPER_SIZES

__all__ = [
    "ComparativeConfig",
    "RankingStudy",
    "run_comparative_study",
    "run_ranking_study",
    "run_regime_study",
]

REPORT_SIZES = (35, 60, 90, 120, 150, 180)
#: Methods whose selection is drawn once (their seeds keep the positions they always had).
PREFIX_METHODS = ("SDS", "CES", "DDG", "RDG", "SRS")
METHODS = (*PREFIX_METHODS, "CPPI")
#: Registry name of every column.
REGISTRY_NAMES = {m: m.lower() for m in METHODS}
CAMPAIGN_BATCH = 5


@dataclass(frozen=True)
class ComparativeConfig:
    sizes: tuple[int, ...] = PAPER_SIZES
    repetitions: int = 50
    seed: int = 0
    ks: tuple[int, ...] = (1, 3, 5, 10)

    @classmethod
    def quick(cls, seed: int = 0) -> ComparativeConfig:
        return cls(sizes=REPORT_SIZES, repetitions=20, seed=seed)


@dataclass
class RankingStudy:
    """Per method: Spearman and Jaccard@k arrays of shape (repetitions, sizes)."""

    name: str
    model_names: list[str]
    true_accuracy: NDArray[np.float64]
    sizes: tuple[int, ...]
    spearman: dict[str, NDArray[np.float64]] = field(default_factory=dict)
    jaccard: dict[str, dict[int, NDArray[np.float64]]] = field(default_factory=dict)
    regret: dict[str, NDArray[np.float64]] = field(default_factory=dict)
    best: dict[str, NDArray[np.float64]] = field(default_factory=dict)

    def labels_to_best(self, method: str, target: float = 0.9) -> int | None:
        """Smallest size from which P(first-ranked model is the true best) >= target."""
        ok = self.best[method].mean(axis=0) >= target
        for j in range(len(self.sizes)):
            if ok[j:].all():
                return self.sizes[j]
        return None

    def top_k(self, k: int = 10) -> int:
        """The largest Jaccard cut-off computed that is at most ``k``."""
        ks = sorted(next(iter(self.jaccard.values())))
        return max([c for c in ks if c <= k] or ks[:1])

    def mean(self, metric: str, method: str, k: int = 10) -> NDArray[np.float64]:
        k = self.top_k(k)
        data = self.spearman[method] if metric == "spearman" else self.jaccard[method][k]
        return np.asarray(data.mean(axis=0))

    def wtl(self, metric: str, baseline: str, sizes: Sequence[int], k: int = 10) -> str:
        """W/T/L of SDS against ``baseline`` over ``sizes`` (paper Sec. IV-D)."""
        k = self.top_k(k)
        counts = {"W": 0, "T": 0, "L": 0}
        for n in sizes:
            j = self.sizes.index(n)
            ours = (
                self.spearman["SDS"][:, j] if metric == "spearman" else self.jaccard["SDS"][k][:, j]
            )
            base = (
                self.spearman[baseline][:, j]
                if metric == "spearman"
                else self.jaccard[baseline][k][:, j]
            )
            counts[wtl(ours, base)] += 1
        return f"{counts['W']}/{counts['T']}/{counts['L']}"


def ranking_quality(
    correct: NDArray[np.bool_],
    true_acc: NDArray[np.float64],
    order: NDArray[np.int64],
    sizes: Sequence[int],
    ks: Sequence[int],
) -> tuple[NDArray[np.float64], dict[int, NDArray[np.float64]]]:
    """Spearman and Jaccard@k of the accuracies estimated on each prefix of ``order``."""
    q = estimate_quality(prefix_estimates(correct, order, sizes), true_acc, ks)
    return q["spearman"], q["jaccard"]


def zoo_selection(
    method: str,
    predictions: NDArray[np.int64],
    probabilities: NDArray[np.float32],
    size: int,
    gen: np.random.Generator,
) -> Any:
    """One selection of ``size`` rows of a zoo's pile by the registry's ``method`` (SDS, DDG,
    RDG, SRS): the (M, N) predicted classes where the method takes them, else the (M, N, C)
    probabilities (DDG and RDG need them), else just N (SRS)."""
    spec = registry.get(REGISTRY_NAMES[method])
    data = {None: predictions.shape[1], "predictions": probabilities, "probs": probabilities}
    arr = predictions if 2 in spec.data_ndim else data[spec.data]
    return spec.run(arr, size, rng=gen)


def prefix_estimates(
    correct: NDArray[np.bool_], order: NDArray[np.int64], sizes: Sequence[int]
) -> NDArray[np.float64]:
    """(sizes, models) accuracy of every model on each prefix of ``order``."""
    csum = np.cumsum(correct[:, order], axis=1, dtype=np.float64)
    return np.stack([csum[:, n - 1] / n for n in sizes])


def estimate_quality(
    estimates: NDArray[np.float64], true_acc: NDArray[np.float64], ks: Sequence[int]
) -> dict[str, Any]:
    """Spearman, Jaccard@k, regret and first-is-best of (sizes, models) estimates."""
    n = estimates.shape[0]
    out: dict[str, Any] = {
        "spearman": np.empty(n),
        "jaccard": {k: np.empty(n) for k in ks},
        "regret": np.empty(n),
        "best": np.empty(n),
    }
    top = float(true_acc.max())
    for i, est in enumerate(estimates):
        out["spearman"][i] = spearman(est, true_acc)
        for k in ks:
            out["jaccard"][k][i] = jaccard_top_k(est, true_acc, min(k, true_acc.size))
        first = float(true_acc[int(np.argmax(est))])
        out["regret"][i] = top - first
        out["best"][i] = float(first == top)
    return out


def campaign_estimates(
    predictions: NDArray[np.int64],
    labels: NDArray[np.int64],
    sizes: Sequence[int],
    rng: np.random.Generator,
    *,
    batch: int = CAMPAIGN_BATCH,
) -> NDArray[np.float64]:
    """(sizes, models) consensus-PPI estimates of a RankingCampaign labelling ``batch`` a round."""
    params = registry.get(REGISTRY_NAMES["CPPI"]).defaults()
    camp = RankingCampaign(predictions, rng=rng, n_draws=500, **params)
    out = np.empty((len(sizes), predictions.shape[0]))
    top, j = max(sizes), 0
    while camp.n_labelled < top:
        step = min(batch, top - camp.n_labelled)
        nxt = [s - camp.n_labelled for s in sizes[j:] if s > camp.n_labelled]
        rows = camp.propose(min([step, *nxt]))
        camp.record(rows, labels[rows])
        while j < len(sizes) and camp.n_labelled >= sizes[j]:
            out[j] = camp.estimate()[0]
            j += 1
    return out


def run_ranking_study(
    name: str,
    model_names: list[str],
    labels: NDArray[np.int64],
    predictions: NDArray[np.int64],
    probabilities: NDArray[np.float32],
    activations: Sequence[NDArray[np.float32] | None],
    config: ComparativeConfig,
    *,
    progress: bool = True,
) -> RankingStudy:
    correct = predictions == labels[None, :]
    true_acc = correct.mean(axis=1)
    sizes, top = config.sizes, max(config.sizes)
    ks = tuple(k for k in config.ks if k <= len(model_names)) or (1,)
    res = RankingStudy(name, model_names, true_acc, sizes)
    usable = [a for a in activations if a is not None]
    for method in METHODS:
        res.spearman[method] = np.empty((config.repetitions, len(sizes)))
        res.jaccard[method] = {k: np.empty((config.repetitions, len(sizes))) for k in ks}
        res.regret[method] = np.empty((config.repetitions, len(sizes)))
        res.best[method] = np.empty((config.repetitions, len(sizes)))
    bar = progress_bar(config.repetitions, desc=name, unit="rep", enabled=progress)
    n_pre = len(PREFIX_METHODS)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DegenerateDataWarning)
        for r in range(config.repetitions):
            seeds = np.random.SeedSequence([config.seed, r]).spawn(n_pre + len(usable) + 1)
            for m, method in enumerate(METHODS):
                if method == "CES":
                    order = _best_ces(
                        usable, seeds[n_pre : n_pre + len(usable)], correct, true_acc, sizes, ks
                    )
                    est = prefix_estimates(correct, order, sizes)
                elif method == "CPPI":
                    gen = np.random.default_rng(seeds[-1])
                    est = campaign_estimates(predictions, labels, sizes, gen)
                else:
                    gen = np.random.default_rng(seeds[m])
                    sel = zoo_selection(method, predictions, probabilities, top, gen)
                    est = prefix_estimates(correct, sel.indices, sizes)
                q = estimate_quality(est, true_acc, ks)
                res.spearman[method][r] = q["spearman"]
                res.regret[method][r] = q["regret"]
                res.best[method][r] = q["best"]
                for k in ks:
                    res.jaccard[method][k][r] = q["jaccard"][k]
            bar.update(1)
    bar.close()
    return res


def _best_ces(
    activations: Sequence[NDArray[np.float32]],
    seeds: Sequence[np.random.SeedSequence],
    correct: NDArray[np.bool_],
    true_acc: NDArray[np.float64],
    sizes: Sequence[int],
    ks: Sequence[int],
) -> NDArray[np.int64]:
    """The order of the per-model CES selection whose ranking is best (the oracle)."""
    ces = registry.get(REGISTRY_NAMES["CES"])
    best: tuple[float, Any] = (-np.inf, None)
    k_ref = max(ks)
    for act, seed in zip(activations, seeds, strict=True):
        order = ces.run(act, max(sizes), rng=np.random.default_rng(seed)).indices
        rho, jac = ranking_quality(correct, true_acc, order, sizes, ks)
        score = float(np.mean(rho) + np.mean(jac[k_ref]))
        if score > best[0]:
            best = (score, order)
    return np.asarray(best[1])


def majority_vote_ranking(
    labels: NDArray[np.int64], predictions: NDArray[np.int64], ks: Sequence[int]
) -> dict[str, float]:
    """Rank by agreement with the majority vote on the whole pile: no labels at all (VI-E)."""
    true_acc = (predictions == labels[None, :]).mean(axis=1)
    votes = majority_vote(predictions)
    est = (predictions == votes[None, :]).mean(axis=1)
    out = {"spearman": spearman(est, true_acc)}
    for k in ks:
        if k <= true_acc.size:
            out[f"jaccard@{k}"] = jaccard_top_k(est, true_acc, k)
    return out


@dataclass
class ComparativeStudy:
    config: ComparativeConfig
    main: RankingStudy
    few: RankingStudy
    vote_main: dict[str, float]
    vote_few: dict[str, float]
    seconds: float = 0.0
    regimes: Any = None  # ranking_study.RankingStudyResult of the synthetic regimes


def run_comparative_study(
    config: ComparativeConfig, *, progress: bool = True, log: Callable[[str], None] = print
) -> ComparativeStudy:
    from .zoo import default_zoo, small_zoo, train_zoo

    t0 = time.perf_counter()
    full = train_zoo(default_zoo(), seed=config.seed, progress=progress)
    acc = full.accuracies
    log(
        f"  trained {full.n_models} models in {time.perf_counter() - t0:.0f} s; "
        f"true accuracies {acc.min():.3f}-{acc.max():.3f}"
    )
    out = []
    four = full.select([s.name for s in small_zoo(4)])  # members of the zoo: no retraining
    for zoo, label in ((full, "zoo"), (four, "4 models")):
        t = time.perf_counter()
        study = run_ranking_study(
            label,
            list(zoo.names),
            zoo.labels,
            zoo.predictions,
            zoo.probabilities,
            zoo.activations,
            config,
            progress=progress,
        )
        log(
            f"  ranked {label} with {len(METHODS)} methods x {config.repetitions} repetitions "
            f"({time.perf_counter() - t:.0f} s)"
        )
        out.append((study, majority_vote_ranking(zoo.labels, zoo.predictions, config.ks)))
    return ComparativeStudy(
        config, out[0][0], out[1][0], out[0][1], out[1][1], time.perf_counter() - t0
    )


def format_table(study: RankingStudy, *, k: int = 10, sizes: Sequence[int] = REPORT_SIZES) -> str:
    """The paper's Table II layout: rows of sizes, columns of methods, Average and W/T/L."""
    k = study.top_k(k)
    sizes = [n for n in sizes if n in study.sizes]
    lines = [f"{'':<10}{'n':>5}" + "".join(f"{m:>9}" for m in METHODS)]
    for metric, title in (("spearman", "Spearman"), ("jaccard", f"Jaccard@{k}")):
        means = {m: study.mean(metric, m, k) for m in METHODS}
        for i, n in enumerate(sizes):
            j = study.sizes.index(n)
            lines.append(
                f"{title if i == 0 else '':<10}{n:>5}"
                + "".join(f"{means[m][j]:>9.3f}" for m in METHODS)
            )
        idx = [study.sizes.index(n) for n in sizes]
        lines.append(
            f"{'':<10}{'Avg':>5}" + "".join(f"{means[m][idx].mean():>9.3f}" for m in METHODS)
        )
        lines.append(
            f"{'':<10}{'W/T/L':>5}{'/':>9}"
            + "".join(f"{study.wtl(metric, m, sizes, k):>9}" for m in METHODS[1:])
        )
    if study.regret:
        idx = [study.sizes.index(n) for n in sizes]
        lines.append(
            f"{'Regret':<10}{'Avg':>5}"
            + "".join(f"{study.regret[m].mean(axis=0)[idx].mean():>9.4f}" for m in METHODS)
        )
        lines.append(
            f"{'P(best)':<10}{'Avg':>5}"
            + "".join(f"{study.best[m].mean(axis=0)[idx].mean():>9.2f}" for m in METHODS)
        )
        need = {m: study.labels_to_best(m) for m in METHODS}
        lines.append(
            f"{'To 90%':<10}{'n':>5}"
            + "".join(f"{'-' if need[m] is None else need[m]:>9}" for m in METHODS)
        )
    return "\n".join(lines)


def run_regime_study(*, quick: bool = False, seed: int = 0) -> Any:
    """The synthetic regimes (:func:`labelwise.experiments.ranking_study.run_ranking_study`).

    Quick: 10 repetitions on piles of 3,000; else 30 on 5,000. Returns its
    ``RankingStudyResult`` (format it with ``ranking_study.format_table``).
    """
    from .ranking_study import run_ranking_study as run_regimes

    if quick:
        return run_regimes(repetitions=10, n_inputs=3000, seed=seed)
    return run_regimes(repetitions=30, n_inputs=5000, seed=seed)


def write_outputs(cs: ComparativeStudy, out: Path) -> list[str]:
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for study, tag in ((cs.main, "zoo"), (cs.few, "four_models")):
        k = study.top_k(10)
        rows = []
        for j, n in enumerate(study.sizes):
            for m in METHODS:
                rows.append(
                    [
                        n,
                        m,
                        float(study.spearman[m][:, j].mean()),
                        float(study.jaccard[m][k][:, j].mean()),
                        float(study.regret[m][:, j].mean()),
                        float(study.best[m][:, j].mean()),
                    ]
                )
        write_csv(
            out / f"ranking_{tag}.csv",
            ["size", "method", "spearman", f"jaccard@{k}", "regret", "p_first_is_best"],
            rows,
        )
        written.append(f"ranking_{tag}.csv")
    regimes: dict[str, Any] = {}
    if cs.regimes is not None:
        res = cs.regimes
        rows = []
        for regime, vals in res.values.items():
            regimes[regime] = {m: res.labels_to_best(regime, m) for m in vals}
            for m in vals:
                for j, n in enumerate(res.sizes):
                    rows.append(
                        [regime, m, n]
                        + [float(vals[m][q][:, j].mean()) for q in ("spearman", "jaccard")]
                        + [float(vals[m][q][:, j].mean()) for q in ("regret", "best")]
                    )
        write_csv(
            out / "ranking_regimes.csv",
            ["regime", "method", "size", "spearman", "jaccard", "regret", "p_first_is_best"],
            rows,
        )
        written.append("ranking_regimes.csv")
    write_json(
        out / "comparative.json",
        {
            "config": {
                "sizes": list(cs.config.sizes),
                "repetitions": cs.config.repetitions,
                "seed": cs.config.seed,
            },
            "seconds": cs.seconds,
            "models": {
                n: float(a) for n, a in zip(cs.main.model_names, cs.main.true_accuracy, strict=True)
            },
            "majority_vote": {"zoo": cs.vote_main, "four_models": cs.vote_few},
            "labels_to_90_best": {
                "zoo": {m: cs.main.labels_to_best(m) for m in METHODS},
                "four_models": {m: cs.few.labels_to_best(m) for m in METHODS},
                **({"regimes": regimes} if regimes else {}),
            },
            "wtl": {
                metric: {
                    m: cs.main.wtl(metric, m, [n for n in REPORT_SIZES if n in cs.main.sizes])
                    for m in METHODS[1:]
                }
                for metric in ("spearman", "jaccard")
            },
        },
    )
    written.append("comparative.json")
    plt = pyplot()
    if plt is not None:
        fig, axes = plt.subplots(1, 2, figsize=(9, 3.4), dpi=110)
        k = cs.main.top_k(10)
        for ax, metric, title in (
            (axes[0], "spearman", "Spearman"),
            (axes[1], "jaccard", f"Jaccard@{k}"),
        ):
            for m in METHODS:
                ax.plot(cs.main.sizes, cs.main.mean(metric, m, k), marker=".", label=m)
            ax.set_xlabel("labelled inputs")
            ax.set_title(title)
            ax.grid(alpha=0.3)
        axes[1].legend(fontsize=8)
        fig.suptitle(f"Ranking {len(cs.main.model_names)} models (cf. Fig. 4)", fontsize=10)
        fig.tight_layout()
        save_figure(fig, out / "ranking.png")
        written.append("ranking.png")
    return written

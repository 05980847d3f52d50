"""``labelwise study operational``: the CES paper's evaluation (Li et al. 2019, Sec. 4.2,
Tables 1 and 3, Figures 3, 4 and 7) on models and shifts built here from bundled data.

Contexts (each model trains in seconds on 2 CPU cores):

- MNIST-1D (generated locally) with a small 1D CNN: the clean model and three training-label
  mutants swapping 8<->0, 7<->1, 9<->3 (the paper's Mutant1-3, Table 1 rows 4-6).
- scikit-learn digits with a LeNet-style CNN: clean, "patch" (occluding rectangles),
  "light" (brightness/contrast) and "resolution" (down- then up-sampled) operational piles
  (rows 9-16's shifts).
- A regression MLP (Driving analogue; accuracy is 1-MSE, CSS does not apply): clean, patch
  and light (rows 7-12).
- A sequential :class:`labelwise.Campaign` (method ``auto``) as one more method, beside the
  paper's: its E, and for every method the coverage of its 95 % interval and
  w = mean reported half-width / SRS's.
- Small piles (Sec. 4.3.4, Table 3): 100 -> 30 and 300 -> 50 labels from random piles of the
  MNIST-1D Mutant 8-0 and regression-patch contexts, CES with the KL objective and p = 5.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .._plotting import pyplot, save_figure
from ..io import write_csv, write_json
from ._context import ClassifierContext
from .study import (
    PAPER_SIZES,
    CampaignSpec,
    MethodSpec,
    Population,
    StudyResult,
    default_methods,
    run_study,
)

__all__ = [
    "OperationalStudy",
    "StudyConfig",
    "build_populations",
    "operational_methods",
    "run_operational_study",
]


@dataclass(frozen=True)
class StudyConfig:
    sizes: tuple[int, ...] = PAPER_SIZES
    repetitions: int = 50
    small_piles: int = 30
    small_repetitions: int = 50
    seed: int = 0
    n_jobs: int = 1

    @classmethod
    def quick(cls, seed: int = 0, n_jobs: int = 1) -> StudyConfig:
        """Fewer sizes and repetitions: the same table in well under two minutes."""
        return cls(
            sizes=(35, 60, 90, 120, 150, 180),
            repetitions=20,
            small_piles=10,
            small_repetitions=20,
            seed=seed,
            n_jobs=n_jobs,
        )


# (context, model, operational set) -> builder of a Population
Builder = Callable[[int], Population]


def _classified(ctx: ClassifierContext, dataset: str, model: str, operational: str) -> Population:
    """A classifier's pile: 1/0 correctness, activations, top probability as confidence."""
    return Population(
        dataset,
        model,
        operational,
        ctx.scores(),
        ctx.activations,
        ctx.probabilities.max(axis=1),
        probabilities=ctx.probabilities,
    )


def _digits(shift: str) -> Builder:
    def build(seed: int) -> Population:
        from .digits import digits_context

        ctx = digits_context(shift, seed=seed)
        return _classified(ctx, "Digits", "LeNet (CNN)", "digits" if shift == "none" else shift)

    return build


def _mnist1d(mutant: str | None) -> Builder:
    def build(seed: int) -> Population:
        from .mnist1d import mnist1d_context

        ctx = mnist1d_context(mutant, seed=seed)
        model = "CNN-1D" if mutant is None else f"Mutant {mutant.replace('-', '<->')}"
        return _classified(ctx, "MNIST-1D", model, "MNIST-1D")

    return build


def _regression(shift: str) -> Builder:
    def build(seed: int) -> Population:
        from .regression import regression_context

        ctx = regression_context(shift, seed=seed)
        return Population(
            "Friedman (regression)",
            "MLP",
            "clean" if shift == "none" else shift,
            ctx.scores(),
            ctx.activations,
            None,
            metric="1-MSE",
        )

    return build


CONTEXTS: tuple[Builder, ...] = (
    _mnist1d(None),
    _mnist1d("8-0"),
    _mnist1d("7-1"),
    _mnist1d("9-3"),
    _regression("none"),
    _regression("patch"),
    _regression("light"),
    _digits("none"),
    _digits("patch"),
    _digits("light"),
    _digits("resolution"),
)
SMALL_PILE_CONTEXTS: tuple[Builder, ...] = (_mnist1d("8-0"), _regression("patch"))
SMALL_PILE_CASES: tuple[tuple[int, int], ...] = ((100, 30), (300, 50))


def build_populations(seed: int = 0) -> list[Population]:
    return [b(seed) for b in CONTEXTS]


def operational_methods() -> list[MethodSpec]:
    """The paper's methods (:func:`.study.default_methods`), then a sequential Campaign.

    The campaign comes last, so the paper's methods keep their seeds (and their numbers).
    """
    return [*default_methods(), CampaignSpec("Campaign", "auto")]


@dataclass
class OperationalStudy:
    config: StudyConfig
    results: list[StudyResult] = field(default_factory=list)
    small: list[dict[str, Any]] = field(default_factory=list)
    seconds: float = 0.0

    def table_rows(self) -> list[dict[str, Any]]:
        rows = []
        for i, r in enumerate(self.results, start=1):
            p = r.population
            eff = {m: r.efficiency(m) for m in r.estimates if m != "SRS"}
            cov = {m: float(r.coverage(m).mean()) for m in r.estimates}
            wid = {m: r.width_ratio(m) for m in r.estimates if m != "SRS"}
            rows.append(
                {
                    "no": i,
                    "context": p.name,
                    "model": p.model,
                    "operational": p.operational,
                    "metric": p.metric,
                    "actual": p.truth,
                    **{f"E({m}/SRS)": v for m, v in eff.items()},
                    **{f"cov({m})": v for m, v in cov.items()},
                    **{f"w({m})": v for m, v in wid.items()},
                }
            )
        return rows


def run_operational_study(
    config: StudyConfig,
    *,
    methods: Sequence[MethodSpec] | None = None,
    contexts: Sequence[Builder] = CONTEXTS,
    small_contexts: Sequence[Builder] = SMALL_PILE_CONTEXTS,
    progress: bool = True,
    log: Callable[[str], None] = print,
) -> OperationalStudy:
    """Build every context, run every method at every size, and the small-pile cases."""
    t0 = time.perf_counter()
    methods = list(operational_methods() if methods is None else methods)
    study = OperationalStudy(config=config)
    for build in contexts:
        t = time.perf_counter()
        pop = build(config.seed)
        res = run_study(
            pop,
            methods,
            sizes=config.sizes,
            repetitions=config.repetitions,
            seed=config.seed,
            n_jobs=config.n_jobs,
            progress=progress,
        )
        study.results.append(res)
        summary = ", ".join(f"{m} {res.efficiency(m):.3f}" for m in res.estimates if m != "SRS")
        log(
            f"  {pop.name} / {pop.model} / {pop.operational}: {pop.metric} {pop.truth:.3f}; "
            f"E: {summary} ({time.perf_counter() - t:.1f} s)"
        )
    small_methods = [
        MethodSpec("SRS", "srs"),
        MethodSpec("CES-KL(p=5)", "ces", {"objective": "kl", "initial": 5}),
    ]
    for build in small_contexts:
        pop = build(config.seed)
        for pile, budget in SMALL_PILE_CASES:
            t = time.perf_counter()
            effs = []
            for k in range(config.small_piles):
                rng = np.random.default_rng(np.random.SeedSequence([config.seed, pile, k]))
                rows = rng.choice(pop.size, size=pile, replace=False)
                sub = Population(
                    pop.name,
                    pop.model,
                    f"{pop.operational}-{pile}",
                    pop.scores[rows],
                    None if pop.activations is None else np.asarray(pop.activations)[rows],
                    None,
                    metric=pop.metric,
                )
                res = run_study(
                    sub,
                    small_methods,
                    sizes=(budget,),
                    repetitions=config.small_repetitions,
                    seed=config.seed + k,
                    progress=False,
                )
                if np.all(res.mse("SRS") > 0):
                    effs.append(res.efficiency("CES-KL(p=5)"))
            e = np.asarray(effs)
            study.small.append(
                {
                    "context": pop.name,
                    "model": pop.model,
                    "operational": f"{pop.operational}-{pile}",
                    "pile": pile,
                    "labels": budget,
                    "piles": int(e.size),
                    "E_mean": float(e.mean()),
                    "E_sd": float(e.std(ddof=1)) if e.size > 1 else 0.0,
                    "E_max": float(e.max()),
                }
            )
            log(
                f"  small piles {pop.name} {pile}->{budget}: E mean {e.mean():.3f} "
                f"({time.perf_counter() - t:.1f} s)"
            )
    study.seconds = time.perf_counter() - t0
    return study


PAPER_TABLE1 = """\
Paper (Li et al. 2019, Table 1; E = MSE ratio, lower is better; CSS from Sec. 4.3.1):
  MNIST LeNet-1/4/5, clean           acc 93.1-98.7   E(CES/SRS) 0.588-0.708  E(CSS/SRS) 0.198-0.379
  MNIST Mutant1-3 (label swaps)      acc 77.3-79.5   E(CES/SRS) 0.380-0.499  E(CSS/SRS) 2.919-3.836
  Driving Dave, clean/patch/light    1-MSE 83.5-91.8 E(CES/SRS) 0.375-0.592  (CSS n/a)
  ImageNet VGG/ResNet, clean/low-res acc 63.3-75.9   E(CES/SRS) 0.436-0.567
  Small piles 100->30, 300->50       E(CES/SRS) mean 0.375-0.594 (Table 3)"""


def format_table(study: OperationalStudy) -> str:
    rows = study.table_rows()
    extra = [k for k in rows[0] if k.startswith("E(")] if rows else []
    head = f"{'No.':>3}  {'Context':<22}{'Model':<16}{'Operational':<13}{'Actual':>8}"
    head += "".join(f"{k:>{_w(k)}}" for k in extra)
    lines = [head, "-" * len(head)]
    for r in rows:
        actual = f"{100 * r['actual']:.1f}" + ("*" if r["metric"] != "accuracy" else "")
        cells = "".join(f"{r[k]:>{_w(k)}.3f}" if k in r else f"{'n/a':>{_w(k)}}" for k in extra)
        lines.append(
            f"{r['no']:>3}  {r['context']:<22}{r['model']:<16}{r['operational']:<13}"
            f"{actual:>8}{cells}"
        )
    lines.append(
        "* 1-MSE in % (regression), as in the paper's note b. E averaged over sizes "
        f"{study.config.sizes[0]}..{study.config.sizes[-1]}, "
        f"{study.config.repetitions} repetitions each."
    )
    lines += ["", *_interval_table(study, rows)]
    if study.small:
        lines += [
            "",
            "Small operational piles (Table 3 layout), CES with KL objective and p = 5:",
            f"  {'Context':<22}{'Model':<16}{'Pile->labels':<14}{'Average E':>10}"
            f"{'SD':>8}{'Maximum':>9}",
        ]
        for s in study.small:
            case = f"{s['pile']}->{s['labels']}"
            lines.append(
                f"  {s['context']:<22}{s['model']:<16}{case:<14}"
                f"{s['E_mean']:>10.3f}{s['E_sd']:>8.3f}{s['E_max']:>9.3f}"
            )
    return "\n".join(lines)


def _interval_table(study: OperationalStudy, rows: list[dict[str, Any]]) -> list[str]:
    """Per context and method: coverage of the 95 % interval and w (half-width / SRS's)."""
    methods = list(dict.fromkeys(k[4:-1] for r in rows for k in r if k.startswith("cov(")))
    if not methods:
        return []
    width = max(13, *(len(m) + 2 for m in methods))
    head = f"{'No.':>3}  {'Context / operational':<36}" + "".join(f"{m:>{width}}" for m in methods)
    out = [
        "Intervals: coverage of the reported 95% interval (nominal 0.95) / w = mean half-width "
        "relative to SRS's",
        head,
        "-" * len(head),
    ]

    def cell(r: dict[str, Any], m: str) -> str:
        if f"cov({m})" not in r:
            return f"{'n/a':>{width}}"
        w = r.get(f"w({m})", 1.0)
        return f"{r[f'cov({m})']:.2f} / {w:.2f}".rjust(width)

    for r in rows:
        name = f"{r['context']} / {r['model']} / {r['operational']}"[:35]
        out.append(f"{r['no']:>3}  {name:<36}" + "".join(cell(r, m) for m in methods))
    means = []
    for m in methods:
        have = [r for r in rows if f"cov({m})" in r]
        cov = np.mean([r[f"cov({m})"] for r in have])
        w = np.mean([r.get(f"w({m})", 1.0) for r in have])
        means.append(f"{cov:.2f} / {w:.2f}".rjust(width))
    out.append(f"{'':>3}  {'mean':<36}" + "".join(means))
    return out


def _w(header: str) -> int:
    return max(12, len(header) + 2)


def write_outputs(study: OperationalStudy, out: Path) -> list[str]:
    """table.csv, table.json, small_piles.csv and one RMSE-vs-size PNG per context family."""
    out.mkdir(parents=True, exist_ok=True)
    rows = study.table_rows()
    keys = list(dict.fromkeys(k for r in rows for k in r))
    write_csv(out / "table.csv", keys, [[r.get(k, "") for k in keys] for r in rows])
    if study.small:
        skeys = list(study.small[0])
        write_csv(out / "small_piles.csv", skeys, [[s[k] for k in skeys] for s in study.small])
    write_json(
        out / "table.json",
        {
            "config": {
                "sizes": list(study.config.sizes),
                "repetitions": study.config.repetitions,
                "small_piles": study.config.small_piles,
                "small_repetitions": study.config.small_repetitions,
                "seed": study.config.seed,
            },
            "seconds": study.seconds,
            "rows": rows,
            "small_piles": study.small,
            "details": [r.to_dict() for r in study.results],
        },
    )
    written = ["table.csv", "table.json"] + (["small_piles.csv"] if study.small else [])
    return written + _plot_families(study, out)


def _plot_families(study: OperationalStudy, out: Path) -> list[str]:
    plt = pyplot()
    if plt is None:
        return []
    families: dict[str, list[StudyResult]] = {}
    for r in study.results:
        families.setdefault(r.population.name, []).append(r)
    names = []
    for family, results in families.items():
        cols = len(results)
        fig, axes = plt.subplots(1, cols, figsize=(3.2 * cols, 3.0), dpi=110, squeeze=False)
        for ax, r in zip(axes[0], results, strict=True):
            for m in r.estimates:
                ax.plot(r.sizes, r.sd(m), marker=".", label=m)
            ax.set_title(f"{r.population.model}, {r.population.operational}", fontsize=9)
            ax.set_xlabel("labelled inputs")
            ax.grid(alpha=0.3)
        axes[0][0].set_ylabel(f"sd of estimated {results[0].population.metric}")
        axes[0][-1].legend(fontsize=7)
        fig.suptitle(f"{family}: estimator spread vs sample size", fontsize=10)
        fig.tight_layout()
        fname = (
            "sd_" + "".join(c if c.isalnum() else "_" for c in family.lower()).strip("_") + ".png"
        )
        save_figure(fig, out / fname)
        names.append(fname)
    return names

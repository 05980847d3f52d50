"""How much a labelling campaign saves, measured: E, coverage and interval width per context.

For each population (scores, activations, probabilities or None) and method, a
:class:`labelwise.Campaign` is run ``repetitions`` times (seeded): it proposes ``first`` rows,
then ``step`` at a time up to the largest size, recording the true scores as it goes, and
estimates after every batch. The baseline is simple random sampling as users get it:
:func:`labelwise.srs_select` with :func:`labelwise.srs_estimate`. Reported per context:

* ``E`` = mean over sizes of MSE_method(n) / MSE_SRS(n) (Li et al. 2019, Sec. 4.2), with
  MSE_SRS(n) = (1 - n/N) S² / n, the exact variance of the SRS mean without replacement (S²
  the pile's variance with divisor N - 1), so only the method's side is Monte-Carlo noise (the
  SRS row's E is the simulated SRS against this exact value: a check, about 1);
* ``coverage`` of the ``confidence`` interval (mean over sizes, and the smallest);
* the Monte-Carlo standard errors of E and of the mean coverage (``E_se``, ``coverage_se``,
  "+-" in the table), over repetitions: the sizes of one repetition are nested prefixes of
  one campaign, far from independent, so the spread of the per-repetition means is what
  tells noise from a difference (E 1.04 +- 0.05 is not "above SRS");
* ``w`` = mean over sizes of (mean half-width) / (SRS's mean half-width);
* ``ess`` = mean reported effective sample size / n.

``python -m labelwise.experiments.campaign_study --quick`` prints the table on cached contexts
(``/tmp/lw-contexts/*.npz``, built once with the torch contexts when missing).
"""

from __future__ import annotations

import argparse
import os
import time
import warnings
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from .._results import Estimate
from ..campaign import Campaign
from ..estimation.estimators import srs_estimate
from ..exceptions import DegenerateDataWarning
from ..sampling.srs import srs_select

__all__ = ["CampaignStudy", "Population", "load_populations", "run_campaign_study"]

CACHE = "/tmp/lw-contexts"


@dataclass(frozen=True, eq=False)
class Population:
    """An operational pile with the true score of every row."""

    name: str
    scores: NDArray[np.float64]
    activations: NDArray[np.floating]
    probabilities: NDArray[np.floating] | None = None

    @property
    def truth(self) -> float:
        return float(np.mean(self.scores))


@dataclass(frozen=True)
class CampaignStudy:
    """Per (population, method): E, coverage and w over ``sizes``; ``per_size`` has detail."""

    sizes: tuple[int, ...]
    repetitions: int
    confidence: float
    rows: tuple[dict[str, Any], ...]
    per_size: dict[str, dict[str, list[float]]] = field(default_factory=dict)

    def table(self) -> str:
        head = (
            f"{'context':<22}{'method':<16}{'E':>6}{'+-':>6}{'E max':>7}{'cov':>7}{'+-':>7}"
            f"{'cov min':>8}{'w':>6}{'ess/n':>7}"
        )
        lines = [head, "-" * len(head)]
        for r in self.rows:
            lines.append(
                f"{r['population']:<22}{r['method']:<16}{r['E']:>6.2f}{r['E_se']:>6.2f}"
                f"{r['E_max']:>7.2f}{r['coverage']:>7.3f}{r['coverage_se']:>7.3f}"
                f"{r['coverage_min']:>8.3f}{r['w']:>6.2f}{r['ess_ratio']:>7.2f}"
            )
        by_m: dict[str, list[dict[str, Any]]] = {}
        for r in self.rows:
            by_m.setdefault(r["method"], []).append(r)
        for m, rs in by_m.items():
            lines.append(
                f"{'MEAN':<22}{m:<16}{np.mean([r['E'] for r in rs]):>6.2f}{'':>6}"
                f"{max(r['E'] for r in rs):>7.2f}{np.mean([r['coverage'] for r in rs]):>7.3f}"
                f"{'':>7}{min(r['coverage_min'] for r in rs):>8.3f}"
                f"{np.mean([r['w'] for r in rs]):>6.2f}"
                f"{np.mean([r['ess_ratio'] for r in rs]):>7.2f}"
            )
        return "\n".join(lines)


def _run_srs(pop: Population, sizes: Sequence[int], reps: int, seed: int, conf: float) -> Any:
    n_s = len(sizes)
    err = np.empty((reps, n_s))
    half = np.empty((reps, n_s))
    cover = np.empty((reps, n_s), dtype=bool)
    n_pop = pop.scores.size
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DegenerateDataWarning)
        for r in range(reps):
            sel = srs_select(n_pop, max(sizes), rng=np.random.default_rng([seed, r, 1]))
            y = pop.scores[sel.indices]
            for j, n in enumerate(sizes):
                e = srs_estimate(y[:n], population_size=n_pop, confidence=conf)
                err[r, j] = e.value - pop.truth
                half[r, j] = (e.ci_high - e.ci_low) / 2
                cover[r, j] = e.ci_low <= pop.truth <= e.ci_high
    return err, half, cover


def _run_campaign(
    pop: Population,
    method: str,
    sizes: Sequence[int],
    reps: int,
    seed: int,
    conf: float,
    anytime: bool,
    options: Mapping[str, Any],
) -> Any:
    n_s = len(sizes)
    err = np.empty((reps, n_s))
    half = np.empty((reps, n_s))
    cover = np.empty((reps, n_s), dtype=bool)
    ess = np.empty((reps, n_s))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DegenerateDataWarning)
        for r in range(reps):
            camp = Campaign(
                pop.activations,
                pop.probabilities,
                method=method,
                confidence=conf,
                rng=np.random.default_rng([seed, r, 2]),
                **options,
            )
            done = 0
            for j, n in enumerate(sizes):
                rows = camp.propose(n - done)
                camp.record(rows, pop.scores[rows])
                done = n
                e: Estimate = camp.estimate(anytime=anytime)
                err[r, j] = e.value - pop.truth
                half[r, j] = (e.ci_high - e.ci_low) / 2
                cover[r, j] = e.ci_low <= pop.truth <= e.ci_high
                ess[r, j] = (e.effective_sample_size or n) / n
    return err, half, cover, ess


def run_campaign_study(
    populations: Iterable[Population],
    *,
    methods: Sequence[str] = ("auto",),
    sizes: Sequence[int] = tuple(range(35, 185, 5)),
    repetitions: int = 500,
    confidence: float = 0.95,
    anytime: bool = False,
    seed: int = 0,
    options: Mapping[str, Any] | None = None,
    progress: bool = False,
) -> CampaignStudy:
    """Run every method on every population (see the module docstring for the measures)."""
    sizes = tuple(int(s) for s in sizes)
    rows: list[dict[str, Any]] = []
    per_size: dict[str, dict[str, list[float]]] = {}
    for pop in populations:
        t0 = time.perf_counter()
        s_err, s_half, s_cov = _run_srs(pop, sizes, repetitions, seed, confidence)
        n_pop = pop.scores.size
        n_s = np.asarray(sizes, dtype=np.float64)
        mse_srs = float(np.var(pop.scores, ddof=1)) * (1 - n_s / n_pop) / n_s
        rows.append(_summary(pop.name, "srs", s_err, s_half, s_cov, None, mse_srs, s_half))
        for m in methods:
            err, half, cov, ess = _run_campaign(
                pop, m, sizes, repetitions, seed, confidence, anytime, options or {}
            )
            rows.append(_summary(pop.name, m, err, half, cov, ess, mse_srs, s_half))
            per_size[f"{pop.name}/{m}"] = {
                "E": (np.mean(err**2, axis=0) / mse_srs).tolist(),
                "coverage": cov.mean(axis=0).tolist(),
                "w": (half.mean(axis=0) / s_half.mean(axis=0)).tolist(),
                "bias": err.mean(axis=0).tolist(),
            }
        if progress:
            print(f"  {pop.name}: {time.perf_counter() - t0:.1f} s", flush=True)
    return CampaignStudy(sizes, repetitions, confidence, tuple(rows), per_size)


def _summary(
    pop: str,
    method: str,
    err: NDArray[np.float64],
    half: NDArray[np.float64],
    cov: NDArray[np.bool_],
    ess: NDArray[np.float64] | None,
    mse_srs: NDArray[np.float64],
    s_half: NDArray[np.float64],
) -> dict[str, Any]:
    e_n = np.mean(err**2, axis=0) / mse_srs
    c_n = cov.mean(axis=0)
    # Monte-Carlo standard errors of the means over sizes: a repetition's sizes are nested
    # prefixes of one campaign, so they are not independent draws; the repetitions are, and
    # E = mean_r e_r with e_r = mean_j err_rj² / MSE_SRS(n_j) (same for the coverage)
    reps = err.shape[0]
    e_r = np.mean(err**2 / mse_srs[None, :], axis=1)
    c_r = cov.mean(axis=1)
    return {
        "population": pop,
        "method": method,
        "E": float(e_n.mean()),
        "E_se": float(e_r.std(ddof=1) / np.sqrt(reps)) if reps > 1 else float("nan"),
        "E_max": float(e_n.max()),
        "coverage": float(c_n.mean()),
        "coverage_se": float(c_r.std(ddof=1) / np.sqrt(reps)) if reps > 1 else float("nan"),
        "coverage_min": float(c_n.min()),
        "w": float(np.mean(half.mean(axis=0) / s_half.mean(axis=0))),
        "ess_ratio": float(np.mean(ess)) if ess is not None else 1.0,
        "bias": float(np.mean(err)),
    }


CONTEXTS = (
    [f"digits-{s}" for s in ("none", "patch", "light", "resolution")]
    + [f"mnist1d-{m}" for m in ("none", "8-0", "7-1", "9-3")]
    + [f"regression-{s}" for s in ("none", "patch", "light")]
)


def _build(name: str) -> Population:
    kind, _, shift = name.partition("-")
    if kind == "digits":
        from .digits import digits_context

        c = digits_context(shift, seed=0)
        return Population(name, c.scores(), c.activations, c.probabilities)
    if kind == "mnist1d":
        from .mnist1d import mnist1d_context

        m = mnist1d_context(None if shift == "none" else shift, seed=0)
        return Population(name, m.scores(), m.activations, m.probabilities)
    from .regression import regression_context

    g = regression_context(shift, seed=0)
    return Population(name, g.scores(), g.activations, None)


def load_populations(
    names: Sequence[str] = CONTEXTS, *, cache: str | None = CACHE
) -> list[Population]:
    """The study's contexts as populations, from ``cache`` (npz) when there, built otherwise."""
    out = []
    for name in names:
        path = None if cache is None else os.path.join(cache, f"{name}.npz")
        if path is not None and os.path.exists(path):
            with np.load(path) as z:
                probs = z["probabilities"] if "probabilities" in z.files else None
                out.append(Population(name, z["scores"], z["activations"], probs))
            continue
        pop = _build(name)
        if path is not None:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            arrays: dict[str, Any] = {"scores": pop.scores, "activations": pop.activations}
            if pop.probabilities is not None:
                arrays["probabilities"] = pop.probabilities
            np.savez(path, **arrays)
        out.append(pop)
    return out


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m labelwise.experiments.campaign_study")
    ap.add_argument("--quick", action="store_true", help="50 repetitions, sizes 35..180 by 29")
    ap.add_argument("--repetitions", type=int, default=500)
    ap.add_argument("--methods", default="auto")
    ap.add_argument("--contexts", default=",".join(CONTEXTS))
    ap.add_argument("--anytime", action="store_true")
    args = ap.parse_args(argv)
    reps = 50 if args.quick else args.repetitions
    sizes = (35, 64, 93, 122, 151, 180) if args.quick else tuple(range(35, 185, 5))
    names = args.contexts.split(",")
    unknown = [c for c in names if c not in CONTEXTS]
    if unknown:
        ap.error(f"--contexts must be among {', '.join(CONTEXTS)}; got {', '.join(unknown)}")
    if reps < 2:
        ap.error(f"--repetitions must be >= 2, got {reps}")
    pops = load_populations(names)
    study = run_campaign_study(
        pops,
        methods=args.methods.split(","),
        sizes=sizes,
        repetitions=reps,
        anytime=args.anytime,
        progress=True,
    )
    print(study.table())


if __name__ == "__main__":
    main()

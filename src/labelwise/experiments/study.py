"""Repeatable sampling studies: estimates over many repetitions, MSE, relative efficiency.

The design is Li et al. 2019, Sec. 4.2: each method estimates the pile's mean score at
sample sizes 35, 40, ..., 180, repeated 50 times; MSE(n) = mean over repetitions of
(estimate - truth)^2, and the relative efficiency E = MSE_method / MSE_SRS, averaged over
the sizes (Table 1). A sequential method (SRS, CES) gives every size from the prefixes of
one run, as in the authors' scripts; CSS is drawn afresh at every size. Every selection
comes from the registered select function (:mod:`labelwise.registry`) and every estimate
from :func:`labelwise.estimate`; the demo uses the same harness. A :class:`CampaignSpec`
runs a sequential :class:`labelwise.Campaign` instead: it proposes up to each size in turn,
records the true scores and reports its own estimate and interval.

NumPy core: a :class:`Population` holds per-row scores and what the methods need.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from .. import registry
from .._progress import progress_bar
from .._results import Selection
from .._validation import check_finite_array, check_int
from ..estimation import estimate
from ..exceptions import LabelwiseError

__all__ = [
    "PAPER_SIZES",
    "CampaignSpec",
    "MethodSpec",
    "Population",
    "StudyResult",
    "default_methods",
    "prefix",
    "run_study",
]

PAPER_SIZES: tuple[int, ...] = tuple(range(35, 181, 5))


@dataclass(frozen=True, eq=False)
class Population:
    """An operational pile with every score known (so the truth is known).

    ``scores`` is H per row (1/0 correctness, or 1 - squared error); ``activations`` the last
    hidden layer (for CES); ``confidences`` the top softmax probability or (N, C) probabilities
    (for CSS; None for regression, where CSS does not apply); ``probabilities`` the (N, C)
    class probabilities, for a :class:`CampaignSpec` (default: ``confidences`` as columns).
    """

    name: str
    model: str
    operational: str
    scores: NDArray[np.float64]
    activations: NDArray[Any] | None = None
    confidences: NDArray[Any] | None = None
    metric: str = "accuracy"
    probabilities: NDArray[Any] | None = None

    def __post_init__(self) -> None:
        s = np.asarray(check_finite_array(self.scores, "scores", ndim=1), dtype=np.float64)
        object.__setattr__(self, "scores", s)
        for name in ("activations", "confidences", "probabilities"):
            arr = getattr(self, name)
            if arr is not None and np.shape(arr)[0] != s.size:
                raise LabelwiseError(f"{name} must have one row per score ({s.size})")

    @property
    def truth(self) -> float:
        return float(self.scores.mean())

    @property
    def size(self) -> int:
        return int(self.scores.size)


@dataclass(frozen=True)
class MethodSpec:
    """A named sampling method and its parameters (picklable, so it can run in workers).

    ``kind`` is a method of :mod:`labelwise.registry` (``"srs"``, ``"css"``, ``"ces"``, ...);
    ``params`` go to its select function. Rows come from the registered select function and
    every estimate from :func:`labelwise.estimate`, exactly as a user would get them.
    """

    name: str
    kind: str
    params: dict[str, Any] = field(default_factory=dict)

    @property
    def method(self) -> registry.Method:
        return registry.get(self.kind)

    def applies_to(self, pop: Population) -> bool:
        m = self.method
        return m.purpose == "accuracy" and (m.data is None or _data(pop, m.data) is not None)

    def selections(
        self, pop: Population, sizes: Sequence[int], gen: np.random.Generator
    ) -> list[Selection]:
        """One selection per size (one repetition).

        A method whose prefixes are selections (SRS, CES) is run once at the largest size and
        every smaller size is its prefix, as in the authors' scripts (for SRS the prefix is
        exactly ``srs_select(..., n)`` with the same seed); others run afresh at every size.
        """
        m = self.method
        data = pop.size if m.data is None else _need(_data(pop, m.data), m.data)
        if m.prefixes:
            sel = m.run(data, max(sizes), rng=gen, **self.params)
            return [prefix(sel, n) for n in sizes]
        return [m.run(data, n, rng=gen, **self.params) for n in sizes]

    def estimates(
        self, pop: Population, sizes: Sequence[int], gen: np.random.Generator
    ) -> NDArray[np.float64]:
        """(len(sizes), 3): estimate, interval low and high at each size (one repetition)."""
        out = np.empty((len(sizes), 3))
        for i, sel in enumerate(self.selections(pop, sizes, gen)):
            est = estimate(sel, pop.scores[sel.indices], metric=pop.metric)
            out[i] = est.value, est.ci_low, est.ci_high
        return out


@dataclass(frozen=True)
class CampaignSpec(MethodSpec):
    """A sequential :class:`labelwise.Campaign`: ``kind`` is its method (``"auto"``, ...).

    ``params`` go to the Campaign (``n_strata``, ``min_stratum_size``). One repetition is one
    campaign: it proposes up to the first size, records the true scores, estimates, then
    proposes up to the next size, and so on (so the sizes share their rows, as for CES).
    """

    @property
    def method(self) -> registry.Method:
        raise LabelwiseError(f"a campaign ({self.kind!r}) is not a registry method")

    def applies_to(self, pop: Population) -> bool:
        return pop.activations is not None

    def selections(
        self, pop: Population, sizes: Sequence[int], gen: np.random.Generator
    ) -> list[Selection]:
        raise LabelwiseError("a campaign makes no Selection; use estimates()")

    def estimates(
        self, pop: Population, sizes: Sequence[int], gen: np.random.Generator
    ) -> NDArray[np.float64]:
        from ..campaign import Campaign

        camp = Campaign(
            _need(pop.activations, "activations"),
            _campaign_probabilities(pop),
            method=self.kind,
            rng=gen,
            **self.params,
        )
        out = np.empty((len(sizes), 3))
        for i, n in enumerate(sizes):
            rows = camp.propose(n - camp.n_proposed)
            camp.record(rows, pop.scores[rows])
            est = camp.estimate()
            out[i] = est.value, est.ci_low, est.ci_high
        return out


def _campaign_probabilities(pop: Population) -> NDArray[Any] | None:
    """(N, C) probabilities for a campaign: ``probabilities``, else ``confidences`` as columns
    (a 1-D top-class confidence c becomes the two columns (c, 1 - c), the top class and the
    rest: a campaign takes class probabilities, at least 2 per row, summing to 1); None for
    regression."""
    if pop.probabilities is not None:
        return pop.probabilities
    if pop.confidences is None or pop.metric != "accuracy":
        return None
    conf = np.asarray(pop.confidences, dtype=np.float64)
    return conf if conf.ndim == 2 else np.column_stack([conf, 1.0 - conf])


def prefix(selection: Selection, n: int) -> Selection:
    """The first ``n`` rows of a selection whose every prefix is a selection (SRS, CES)."""
    if n == selection.budget:
        return selection
    return Selection(
        indices=selection.indices[:n],
        method=selection.method,
        population_size=selection.population_size,
        params=dict(selection.params),
    )


def _data(pop: Population, key: str) -> NDArray[Any] | None:
    return {"activations": pop.activations, "probs": pop.confidences}.get(key)


def default_methods() -> list[MethodSpec]:
    """SRS, CSS (paper's 80/10/10 strata, 20/40/40 allocation) and CES with each objective.

    ``CES`` is labelwise's default (KL objective); ``CES-Eq8`` the paper's printed Eq. 8;
    ``CES-common`` Eq. 8 without sections rarer than 0.5/|T|. All use K=20, p=30, q=5, l=300.
    """
    return [
        MethodSpec("SRS", "srs"),
        MethodSpec("CSS", "css"),
        MethodSpec("CES", "ces", {"objective": "kl"}),
        MethodSpec("CES-Eq8", "ces", {"objective": "ce"}),
        MethodSpec("CES-common", "ces", {"objective": "ce-common"}),
    ]


@dataclass(frozen=True, eq=False)
class StudyResult:
    """Estimates (method -> (repetitions, sizes)) for one population, and summaries.

    ``ci_low`` and ``ci_high`` hold each estimate's interval (same shapes).
    """

    population: Population
    sizes: tuple[int, ...]
    estimates: dict[str, NDArray[np.float64]]
    ci_low: dict[str, NDArray[np.float64]] = field(default_factory=dict)
    ci_high: dict[str, NDArray[np.float64]] = field(default_factory=dict)

    def coverage(self, method: str) -> NDArray[np.float64]:
        """Share of repetitions whose interval covers the truth, at every size."""
        t = self.population.truth
        hit = (self.ci_low[method] <= t) & (t <= self.ci_high[method])
        return np.asarray(hit.mean(axis=0))

    def mse(self, method: str) -> NDArray[np.float64]:
        """MSE at every size: mean over repetitions of (estimate - truth)^2."""
        return np.asarray(np.mean((self.estimates[method] - self.population.truth) ** 2, axis=0))

    def sd(self, method: str) -> NDArray[np.float64]:
        """Root MSE at every size (the paper's plotted standard deviation, Figs. 3, 4, 7)."""
        return np.sqrt(self.mse(method))

    def halfwidth(self, method: str) -> NDArray[np.float64]:
        """Mean reported interval half-width over repetitions, at every size."""
        return np.asarray(np.mean((self.ci_high[method] - self.ci_low[method]) / 2, axis=0))

    def width_ratio(self, method: str, baseline: str = "SRS") -> float:
        """w = mean half-width / the baseline's mean half-width per size, averaged over sizes.

        Below 1: the method reports narrower intervals than SRS (read it with coverage).
        """
        return float(np.mean(self.halfwidth(method) / self.halfwidth(baseline)))

    def mean_estimate(self, method: str) -> NDArray[np.float64]:
        return np.asarray(self.estimates[method].mean(axis=0))

    def efficiency(self, method: str, baseline: str = "SRS") -> float:
        """E = MSE_method / MSE_baseline per size, averaged over sizes (Table 1)."""
        base = self.mse(baseline)
        if np.any(base == 0):
            raise LabelwiseError(f"{baseline} has zero MSE at some size; E is undefined")
        return float(np.mean(self.mse(method) / base))

    def to_dict(self) -> dict[str, Any]:
        methods = list(self.estimates)
        return {
            "context": self.population.name,
            "model": self.population.model,
            "operational": self.population.operational,
            "metric": self.population.metric,
            "truth": self.population.truth,
            "population_size": self.population.size,
            "sizes": list(self.sizes),
            "repetitions": int(next(iter(self.estimates.values())).shape[0]),
            "efficiency": {m: self.efficiency(m) for m in methods if "SRS" in self.estimates},
            "coverage": {m: self.coverage(m).tolist() for m in methods if m in self.ci_low},
            "width_ratio": {
                m: self.width_ratio(m) for m in methods if "SRS" in self.ci_low and m in self.ci_low
            },
            "rmse": {m: self.sd(m).tolist() for m in methods},
            "mean_estimate": {m: self.mean_estimate(m).tolist() for m in methods},
        }


def run_study(
    population: Population,
    methods: Sequence[MethodSpec] | None = None,
    *,
    sizes: Sequence[int] = PAPER_SIZES,
    repetitions: int = 50,
    seed: int = 0,
    n_jobs: int = 1,
    progress: bool = True,
) -> StudyResult:
    """Run every applicable method ``repetitions`` times at every size.

    Repetition r of method k uses ``SeedSequence([seed, k, r])``, so results do not depend
    on ``n_jobs`` (worker processes, started with ``spawn`` so that numba's threads are never
    forked).
    """
    methods = list(default_methods() if methods is None else methods)
    sizes = tuple(sorted({check_int(n, "sizes", minimum=1) for n in sizes}))
    if not sizes:
        raise LabelwiseError("sizes must not be empty")
    if sizes[-1] > population.size:
        raise LabelwiseError(
            f"sizes must not exceed the pile ({population.size} rows), got {sizes[-1]}"
        )
    repetitions = check_int(repetitions, "repetitions", minimum=2)
    n_jobs = check_int(n_jobs, "n_jobs", minimum=1)
    active = [m for m in methods if m.applies_to(population)]
    if len({m.name for m in active}) != len(active):
        raise LabelwiseError("methods must have distinct names")
    tasks = [(k, r) for k in range(len(active)) for r in range(repetitions)]
    out = {m.name: np.empty((repetitions, len(sizes), 3)) for m in active}
    bar = progress_bar(len(tasks), desc=population.name, unit="run", enabled=progress)
    try:
        if n_jobs == 1:
            _init_worker(population, active, sizes, seed)
            for k, r in tasks:
                out[active[k].name][r] = _run_task((k, r))
                bar.update(1)
        else:
            import multiprocessing as mp

            with ProcessPoolExecutor(
                max_workers=min(n_jobs, os.cpu_count() or 1),
                mp_context=mp.get_context("spawn"),
                initializer=_init_worker,
                initargs=(population, active, sizes, seed),
            ) as pool:
                for (k, r), est in zip(tasks, pool.map(_run_task, tasks, chunksize=8), strict=True):
                    out[active[k].name][r] = est
                    bar.update(1)
    finally:
        bar.close()
        _WORK.clear()
    return StudyResult(
        population=population,
        sizes=sizes,
        estimates={k: v[..., 0] for k, v in out.items()},
        ci_low={k: v[..., 1] for k, v in out.items()},
        ci_high={k: v[..., 2] for k, v in out.items()},
    )


_WORK: dict[str, Any] = {}


def _init_worker(
    pop: Population, methods: list[MethodSpec], sizes: tuple[int, ...], seed: int
) -> None:
    _WORK.update(pop=pop, methods=methods, sizes=sizes, seed=seed)


def _run_task(task: tuple[int, int]) -> NDArray[np.float64]:
    import warnings

    from ..exceptions import DegenerateDataWarning

    k, r = task
    gen = np.random.default_rng(np.random.SeedSequence([_WORK["seed"], k, r]))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DegenerateDataWarning)
        return _WORK["methods"][k].estimates(_WORK["pop"], _WORK["sizes"], gen)


def _need(arr: NDArray[Any] | None, name: str) -> NDArray[Any]:
    if arr is None:
        raise LabelwiseError(f"this method needs the population's {name}")
    return arr

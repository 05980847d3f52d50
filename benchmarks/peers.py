"""The maintained peers beside labelwise's Campaign, on the campaign study's own piles.

Issue 11 quotes ppi_py, ssepy and GLIDE only as measured on held-back cases. This runs them
on the 8 classification contexts of :mod:`labelwise.experiments.campaign_study`, the same
piles as the Campaign's table in README.md, with the study's measures:

* ``E`` = mean over sizes of MSE(n) / ((1 - n/N) S² / n), the exact variance of the SRS mean
  (S² with divisor N - 1), with the study's Monte-Carlo standard error over repetitions;
* ``coverage`` of the 95 % interval (mean over sizes, and the smallest);
* ``w`` = mean over sizes of (mean half-width) / (SRS's mean half-width as users get it:
  ``srs_select`` + ``srs_estimate``, Wilson with the finite-population factor, simulated by
  the study's own ``_run_srs``, same seeds, in the ``dump`` half).

Two halves in two environments, so that no peer becomes a dependency of labelwise:

``dump DIR``  (the project venv: ``PYTHONPATH=src .venv/bin/python benchmarks/peers.py dump
DIR``) writes ``DIR/<context>.npz`` with the pile (scores, probabilities, activations) and
SRS's mean half-width at the sizes asked for.

``run DIR``  (``benchmarks/.venv-peers``, built by ``make peers``: numpy, scipy,
scikit-learn, ppi-python, ssepy; no labelwise, no torch) runs per context, size and
repetition, each a fresh one-shot design as the peers' docs use them:

* ``ppi``: PPI mean (Angelopoulos et al. 2023, Science), ``ppi_mean_ci(lam=1)``, rows drawn
  uniformly without replacement, the model's confidence (largest probability) as the
  prediction of correctness, the rows not drawn as the unlabelled set;
* ``ppi++``: the same with ``lam=None`` (power tuning, Angelopoulos, Duchi & Zrnic 2023);
* ``cross-ppi``: ``crossppi_mean_ci`` (Zrnic & Candès 2024, PNAS) with a learned proxy: the
  labelled rows split in K = 5 folds (as ppi_py's cross-PPI example), on each fold's
  complement a logistic regression of correctness on the confidence and the first 10
  principal components of the activations (computed on the whole pile, no labels); a fold
  whose training labels are all one class predicts their mean;
* ``ssepy``: ssepy's ``ModelPerformanceEvaluator`` as its README: 5 strata by
  ``KMeans(n_clusters=5, random_state=0, n_init="auto")`` on the confidence, Neyman
  allocation (its default variances, mean(1 - mean) of the confidence, floored at 0.05),
  stratified sampling, the Horvitz-Thompson (stratified) estimator and its variance; the
  interval is estimate +- z sqrt(variance);
* ``ssepy-df``: the same sample, ssepy's power-tuned difference estimator
  (``estimator="df", tune_power=True``);
* ``glide-ppi`` and ``glide-ppi++``: GLIDE's ``PPIMeanEstimator`` (``power_tuning=False``
  and its default ``True``) on the same uniform draws as ``ppi``, the confidence as
  ``y_proxy``, ``NaN`` in ``y_true`` for the rows not drawn;
* ``glide-strat``: GLIDE's stratified PPI++ (``StratifiedPPIMeanEstimator``, Fisch et al.
  2024: a power-tuned PPI++ per stratum, combined with weights N_k / N) on 5 strata by the
  quintiles of the confidence (a stratum whose confidence is constant, which GLIDE refuses,
  would be merged into the one below; none is on these piles), labels drawn by GLIDE's
  ``StratifiedSampler`` with ``strategy="proportional"``: its default ``"neyman"``
  allocates by the spread of the *proxy* in each stratum, gives the confident strata fewer
  than 2 labels and refuses at every size on these piles;
* ``glide-asi``: GLIDE's active sampling and active statistical inference (Zrnic & Candès
  2024): ``ActiveSampler`` with uncertainty sqrt(c (1 - c)) (the standard deviation of a
  correct/incorrect label whose probability of being correct is the confidence c), floored
  at 1/999 of its largest value (GLIDE requires it > 0 and warns at a ratio above 1e3),
  then ``ASIMeanEstimator(y_true, y_proxy=c, pi)``; the sampler draws each row
  independently and cuts off at the budget, so it labels at most n rows (``n dev``); where
  some pi would exceed 1 GLIDE solves min sum u²/pi (sum pi = n, pi <= 1) with scipy's
  ``trust-constr`` (more than 400 s for one call on the 899-row clean digits pile under
  this machine's load; within 3e-4 of the exact solution where it finished), so that
  solution is computed in closed form instead (:func:`capped_proportional`);
* ``glide-asi-mix``: the same with half of the budget spread uniformly, the uniform mixture
  Zrnic & Candès use to keep the weights bounded (uncertainty u / mean(u) + 1, so that pi is
  half active, half uniform).

GLIDE refuses (``ValueError``) when every drawn label is equal (no error seen: 55 % of
35-label draws on clean digits), where ppi_py and ssepy return an interval. Those cells are
scored with GLIDE's own formulas without that check (``glide.engines.ppi_core``; PPI++
gives lambda = 0 and a zero-width interval there, as ppi_py's does), and counted in the
``refused`` column, so that every peer is scored on the same draws.

``campaign DIR`` (the project venv) runs the study's ``auto`` Campaign at the dumped sizes,
for a row at exactly the peers' sizes.

GLIDE (``glide-py`` 0.11.0) declares Python >= 3.12 and scipy >= 1.18.1; it uses only
``scipy.stats.norm`` and ``scipy.optimize.minimize``, and ``make peers`` installs it with
``--no-deps --ignore-requires-python`` into the 3.11 venv (``_versions`` prints the scipy it
runs against). DeepSample is Java, not on PyPI: ``benchmarks/deepsample_peer.py`` runs it from a
checkout (``make deepsample-peer``). ``make peers`` builds the venv and runs all three
commands.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import time
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

SIZES = (35, 60, 100, 140, 180)
CONFIDENCE = 0.95
SRS_REPETITIONS = 500
GLIDE_METHODS = ("glide-ppi", "glide-ppi++", "glide-strat", "glide-asi", "glide-asi-mix")
METHODS = ("ppi", "ppi++", "cross-ppi", "ssepy", "ssepy-df", *GLIDE_METHODS)
GLIDE_STRATA = 5
GLIDE_NOTE = (
    "glide-py declares Python >= 3.12 and scipy >= 1.18.1; installed with --no-deps "
    "--ignore-requires-python (see _versions for the scipy it runs against)."
)


def summary(
    err: NDArray[np.float64],
    half: NDArray[np.float64],
    cover: NDArray[np.bool_],
    mse_srs: NDArray[np.float64],
    srs_half: NDArray[np.float64],
) -> dict[str, float]:
    """The campaign study's ``_summary`` measures (E, its Monte-Carlo se, coverage, w).

    ``err``, ``half``, ``cover``: (repetitions, sizes); ``mse_srs`` and ``srs_half`` (the
    mean SRS half-width at each size): (sizes,). Same formulas as
    ``labelwise.experiments.campaign_study._summary`` (a test checks they agree).
    """
    e_n = np.mean(err**2, axis=0) / mse_srs
    c_n = cover.mean(axis=0)
    reps = err.shape[0]
    e_r = np.mean(err**2 / mse_srs[None, :], axis=1)
    c_r = cover.mean(axis=1)
    return {
        "E": float(e_n.mean()),
        "E_se": float(e_r.std(ddof=1) / np.sqrt(reps)) if reps > 1 else float("nan"),
        "E_max": float(e_n.max()),
        "coverage": float(c_n.mean()),
        "coverage_se": float(c_r.std(ddof=1) / np.sqrt(reps)) if reps > 1 else float("nan"),
        "coverage_min": float(c_n.min()),
        "w": float(np.mean(half.mean(axis=0) / srs_half)),
        "bias": float(np.mean(err)),
    }


def srs_mse(scores: NDArray[np.float64], sizes: Sequence[int]) -> NDArray[np.float64]:
    """Exact variance of the SRS mean without replacement, (1 - n/N) S² / n."""
    n = np.asarray(sizes, dtype=np.float64)
    return np.asarray(float(np.var(scores, ddof=1)) * (1 - n / scores.size) / n)


# --------------------------------------------------------------------------- dump


def dump(
    out_dir: str,
    *,
    sizes: Sequence[int] = SIZES,
    srs_repetitions: int = SRS_REPETITIONS,
    seed: int = 0,
) -> list[str]:
    """Write the study's 8 classification contexts, one npz each; returns the paths."""
    from labelwise.experiments.campaign_study import CONTEXTS, load_populations

    names = [c for c in CONTEXTS if not c.startswith("regression")]
    return dump_populations(
        out_dir, load_populations(names), sizes=sizes, srs_repetitions=srs_repetitions, seed=seed
    )


def dump_populations(
    out_dir: str,
    populations: Sequence[Any],
    *,
    sizes: Sequence[int] = SIZES,
    srs_repetitions: int = SRS_REPETITIONS,
    seed: int = 0,
) -> list[str]:
    """One npz per classification population (campaign_study.Population) in ``out_dir``.

    Holds the pile (scores, probabilities, activations), ``sizes`` and ``srs_half``: SRS's
    mean half-width at each size over ``srs_repetitions`` runs of the study's ``_run_srs``
    (same seeds as the study), the denominator of w.
    """
    from labelwise.experiments.campaign_study import _run_srs

    os.makedirs(out_dir, exist_ok=True)
    paths = []
    for pop in populations:
        if pop.probabilities is None:
            raise ValueError(f"{pop.name}: a classification pile needs probabilities")
        _, s_half, _ = _run_srs(pop, sizes, srs_repetitions, seed, CONFIDENCE)
        path = os.path.join(out_dir, f"{pop.name}.npz")
        np.savez(
            path,
            scores=np.asarray(pop.scores, dtype=np.float64),
            probabilities=np.asarray(pop.probabilities),
            activations=np.asarray(pop.activations),
            sizes=np.asarray(sizes, dtype=np.int64),
            srs_half=s_half.mean(axis=0),
            srs_repetitions=np.int64(srs_repetitions),
            seed=np.int64(seed),
        )
        paths.append(path)
    return paths


def _dumped(in_dir: str) -> list[str]:
    files = sorted(os.listdir(in_dir)) if os.path.isdir(in_dir) else []
    files = [f for f in files if f.endswith(".npz")]
    if not files:
        raise SystemExit(f"no .npz in {in_dir}: run `peers.py dump {in_dir}` first")
    return files


def load_context(path: str) -> dict[str, Any]:
    """What ``dump`` wrote, as plain arrays (no labelwise needed)."""
    with np.load(path) as z:
        out = {k: z[k] for k in z.files}
    out["name"] = os.path.splitext(os.path.basename(path))[0]
    return out


def campaign(in_dir: str, *, repetitions: int = 500, seed: int = 0) -> str:
    """The study's ``auto`` Campaign on the dumped contexts at the dumped sizes: its table."""
    from labelwise.experiments.campaign_study import load_populations, run_campaign_study

    files = _dumped(in_dir)
    names = [os.path.splitext(f)[0] for f in files]
    sizes = [int(s) for s in load_context(os.path.join(in_dir, files[0]))["sizes"]]
    study = run_campaign_study(
        load_populations(names), sizes=sizes, repetitions=repetitions, seed=seed
    )
    return f"sizes {sizes}, {repetitions} repetitions\n{study.table()}"


# --------------------------------------------------------------------------- run


def _pca(x: NDArray[np.floating], k: int) -> NDArray[np.float64]:
    x = np.asarray(x, dtype=np.float64)
    x = x - x.mean(axis=0)
    _, _, vt = np.linalg.svd(x, full_matrices=False)
    z = x @ vt[:k].T
    return np.asarray(z / (z.std(axis=0) + 1e-12))


def _crossppi_predictions(
    feats: NDArray[np.float64], lab: NDArray[np.int64], y: NDArray[np.float64], k: int
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Out-of-fold predictions for the labelled rows, (N - n, K) for the unlabelled ones."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import KFold

    unl = np.ones(feats.shape[0], dtype=bool)
    unl[lab] = False
    f_unl = feats[unl]
    yhat = np.empty(lab.size)
    yhat_unl = np.empty((f_unl.shape[0], k))
    for i, (tr, te) in enumerate(KFold(n_splits=k).split(lab)):
        y_tr = y[lab[tr]]
        if np.unique(y_tr).size < 2:
            yhat[te] = y_tr.mean()
            yhat_unl[:, i] = y_tr.mean()
            continue
        model = LogisticRegression(C=1.0, max_iter=1000).fit(feats[lab[tr]], y_tr)
        yhat[te] = model.predict_proba(feats[lab[te]])[:, 1]
        yhat_unl[:, i] = model.predict_proba(f_unl)[:, 1]
    return yhat, yhat_unl


def confidence_strata(conf: NDArray[np.float64], k: int = GLIDE_STRATA) -> NDArray[np.int64]:
    """Strata 0..k'-1 by the k quantiles of the confidence; constant ones merged downwards.

    GLIDE's stratified estimators refuse a stratum whose proxy is constant; such a stratum
    (the top one when many rows have confidence 1.0) joins the stratum below it.
    """
    edges = np.quantile(conf, np.arange(1, k) / k)
    g = np.searchsorted(edges, conf, side="right")
    ids = [int(i) for i in np.unique(g)]
    for i in ids[::-1]:
        rows = g == i
        if rows.any() and np.ptp(conf[rows]) == 0 and i != ids[0]:
            g[rows] = max(j for j in np.unique(g) if j < i)
    return np.asarray(np.unique(g, return_inverse=True)[1], dtype=np.int64)


def asi_uncertainty(
    conf: NDArray[np.float64], *, uniform_share: float = 0.0
) -> NDArray[np.float64]:
    """sqrt(c (1 - c)) floored at 1/999 of its maximum; optionally mixed with the uniform.

    With ``uniform_share`` s the uncertainty is (1 - s) u / mean(u) + s, so that GLIDE's
    pi = n u / sum(u) (before its cap at 1) is (1 - s) active + s uniform.
    """
    u = np.sqrt(np.clip(conf * (1 - conf), 0.0, None))
    u = np.maximum(u, u.max() / 999)  # GLIDE warns where max / min > 1e3
    if uniform_share:
        u = (1 - uniform_share) * u / u.mean() + uniform_share
    return np.asarray(u)


def _glide_ppi(
    y_true: NDArray[np.float64], conf: NDArray[np.float64], *, power_tuning: bool
) -> tuple[float, float, float, bool]:
    """GLIDE's PPIMeanEstimator; (estimate, low, high, refused)."""
    from glide.engines.ppi_core import (
        _compute_mean_estimate,
        _compute_std_estimate,
        _compute_tuning_parameter,
    )
    from glide.estimators import PPIMeanEstimator

    try:
        res = PPIMeanEstimator().estimate(y_true, conf, power_tuning=power_tuning)
        ci = res.confidence_interval
        return float(ci.mean), float(ci.lower_bound), float(ci.upper_bound), False
    except ValueError:
        lab = ~np.isnan(y_true)
        yl, fl, fu = y_true[lab], conf[lab], conf[~lab]
        if np.ptp(yl) != 0:
            raise
        lam = _compute_tuning_parameter(yl, fl, fu, power_tuning)
        m = float(_compute_mean_estimate(yl, fl, fu, lam))
        sd = float(_compute_std_estimate(yl, fl, fu, lam))
        z = _z()
        return m, m - z * sd, m + z * sd, True


def _glide_strat(
    y_true: NDArray[np.float64], conf: NDArray[np.float64], groups: NDArray[np.int64]
) -> tuple[float, float, float, bool]:
    """GLIDE's StratifiedPPIMeanEstimator (stratified PPI++); (estimate, low, high, refused)."""
    from glide.engines.ppi_core import (
        _compute_mean_estimate,
        _compute_std_estimate,
        _compute_tuning_parameter,
    )
    from glide.estimators import StratifiedPPIMeanEstimator

    try:
        res = StratifiedPPIMeanEstimator().estimate(y_true, conf, groups)
        ci = res.confidence_interval
        return float(ci.mean), float(ci.lower_bound), float(ci.upper_bound), False
    except ValueError:
        lab = ~np.isnan(y_true)
        if np.ptp(y_true[lab]) != 0:
            raise
        mean = var = 0.0
        for k in np.unique(groups):
            rows = groups == k
            yl, fl, fu = y_true[rows & lab], conf[rows & lab], conf[rows & ~lab]
            lam = _compute_tuning_parameter(yl, fl, fu, True)
            w = rows.sum() / y_true.size
            mean += w * float(_compute_mean_estimate(yl, fl, fu, lam))
            var += w**2 * float(_compute_std_estimate(yl, fl, fu, lam)) ** 2
        half = _z() * float(np.sqrt(var))
        return mean, mean - half, mean + half, True


def _seed(*key: int) -> int:
    """A seed of GLIDE's own for each cell, so that its draws do not depend on --methods."""
    return int(np.random.default_rng(list(key)).integers(2**31))


def _z() -> float:
    from scipy.stats import norm

    return float(norm.ppf(1 - (1 - CONFIDENCE) / 2))


def capped_proportional(u: NDArray[np.float64], n: int) -> NDArray[np.float64]:
    """The minimiser of sum u_i² / pi_i subject to sum pi_i = n, 0 < pi_i <= 1.

    KKT: pi_i = min(1, c u_i), c such that the sum is n (the k largest capped at 1, the
    rest n - k in proportion to u). GLIDE's ``ActiveSampler`` returns n u / sum(u) when no
    entry exceeds 1 (then this is the same) and otherwise solves this problem numerically
    (scipy ``trust-constr``, 100 iterations), which took over 400 s per call on the
    899-row clean digits pile at 140 labels on this (shared) machine.
    """
    order = np.argsort(-u)
    us = u[order]
    tail = np.cumsum(us[::-1])[::-1]  # tail[k] = sum of all but the k largest
    c = n / tail[0]
    for k in range(n):
        c = (n - k) / tail[k]
        if us[k] * c <= 1:
            break
    return np.asarray(np.minimum(1.0, c * u))


def _cached_active_sampler() -> Any:
    """GLIDE's ActiveSampler, its pi memoised by (u, n) and solved in closed form when capped.

    Where GLIDE's naive pi = n u / sum(u) stays <= 1 it is GLIDE's own code; otherwise
    :func:`capped_proportional` gives the exact solution of the problem GLIDE's optimiser
    solves. The draw (permutation, Bernoulli, cut-off at n) is GLIDE's ``sample``.
    """
    from glide.samplers import ActiveSampler

    class _Cached(ActiveSampler):  # type: ignore[misc]
        def __init__(self) -> None:
            self._memo: dict[tuple[bytes, int], NDArray[np.float64]] = {}

        def _compute_probabilities(self, uncertainties: Any, n_samples: int) -> Any:
            key = (uncertainties.tobytes(), int(n_samples))
            if key not in self._memo:
                naive = n_samples * uncertainties / uncertainties.sum()
                if np.max(naive) <= 1.0:
                    self._memo[key] = super()._compute_probabilities(uncertainties, n_samples)
                else:
                    self._memo[key] = capped_proportional(uncertainties, int(n_samples))
            return self._memo[key].copy()

    return _Cached()


def run_context(
    ctx: dict[str, Any],
    *,
    repetitions: int,
    methods: Sequence[str] = METHODS,
    seed: int = 0,
    folds: int = 5,
) -> dict[str, dict[str, float]]:
    """Every method on one dumped context; returns {method: summary}."""
    from ppi_py import crossppi_mean_ci, ppi_mean_ci
    from scipy.stats import norm
    from sklearn.cluster import KMeans
    from ssepy import ModelPerformanceEvaluator

    y = np.asarray(ctx["scores"], dtype=np.float64)
    probs = np.asarray(ctx["probabilities"], dtype=np.float64)
    conf = probs.max(axis=1)
    sizes = [int(s) for s in ctx["sizes"]]
    n_pop = y.size
    truth = float(y.mean())
    alpha = 1 - CONFIDENCE
    z = float(norm.ppf(1 - alpha / 2))
    feats = np.column_stack([conf, _pca(ctx["activations"], 10)])
    # ssepy's stratification depends on the confidence only (KMeans with random_state=0):
    # computed once per context, as stratify_data would for every budget
    strat = ModelPerformanceEvaluator(Yh=conf, budget=sizes[0])
    strat.stratify_data(KMeans(n_clusters=5, random_state=0, n_init="auto"), X=conf)
    strata = strat.strata_labels

    shape = (repetitions, len(sizes))
    res = {m: (np.empty(shape), np.empty(shape), np.empty(shape, dtype=bool)) for m in methods}
    n_used: dict[str, list[int]] = {m: [] for m in methods}
    refused: dict[str, int] = {m: 0 for m in methods}
    groups = confidence_strata(conf)
    active = _cached_active_sampler() if any(m.startswith("glide-asi") for m in methods) else None
    uncert = {
        "glide-asi": asi_uncertainty(conf),
        "glide-asi-mix": asi_uncertainty(conf, uniform_share=0.5),
    }

    def put(m: str, r: int, j: int, lo: float, hi: float, value: float | None = None) -> None:
        err, half, cov = res[m]
        v = (lo + hi) / 2 if value is None else value
        err[r, j] = v - truth
        half[r, j] = (hi - lo) / 2
        cov[r, j] = lo <= truth <= hi

    for r in range(repetitions):
        for j, n in enumerate(sizes):
            g = np.random.default_rng([seed, r, j, 3])
            lab = g.choice(n_pop, size=n, replace=False)
            unl = np.ones(n_pop, dtype=bool)
            unl[lab] = False
            yl = y[lab]
            for m, lam in (("ppi", 1.0), ("ppi++", None)):
                if m in methods:
                    lo, hi = ppi_mean_ci(yl, conf[lab], conf[unl], alpha=alpha, lam=lam)
                    put(m, r, j, float(np.squeeze(lo)), float(np.squeeze(hi)))
                    n_used[m].append(n)
            if "cross-ppi" in methods:
                yhat, yhat_unl = _crossppi_predictions(feats, lab, y, folds)
                lo, hi = crossppi_mean_ci(yl, yhat, yhat_unl, alpha=alpha)
                put("cross-ppi", r, j, float(np.squeeze(lo)), float(np.squeeze(hi)))
                n_used["cross-ppi"].append(n)
            if "ssepy" in methods or "ssepy-df" in methods:
                s = int(g.integers(2**31))
                random.seed(s)
                np.random.seed(s)  # noqa: NPY002 - ssepy draws from the global generators
                ev = ModelPerformanceEvaluator(Yh=conf, budget=n)
                ev.sampler.strata_labels = strata
                ev.allocate_budget(allocation_type="neyman")
                idx = ev.sample(sampling_method="ssrs")
                for m, est in (("ssepy", "ht"), ("ssepy-df", "df")):
                    if m not in methods:
                        continue
                    v, var = ev.compute_estimate(y[idx], estimator=est, tune_power=est == "df")
                    v, se = float(np.squeeze(v)), float(np.sqrt(np.squeeze(var)))
                    put(m, r, j, v - z * se, v + z * se, v)
                    n_used[m].append(int(idx.size))
            y_nan = np.where(unl, np.nan, y)
            for m, tune in (("glide-ppi", False), ("glide-ppi++", True)):
                if m in methods:
                    v, lo, hi, bad = _glide_ppi(y_nan, conf, power_tuning=tune)
                    put(m, r, j, lo, hi, v)
                    n_used[m].append(n)
                    refused[m] += bad
            if "glide-strat" in methods:
                from glide.samplers import StratifiedSampler

                xi = StratifiedSampler().sample(
                    conf, groups, n, strategy="proportional", random_seed=_seed(seed, r, j, 5)
                )
                v, lo, hi, bad = _glide_strat(np.where(xi == 1, y, np.nan), conf, groups)
                put("glide-strat", r, j, lo, hi, v)
                n_used["glide-strat"].append(int(xi.sum()))
                refused["glide-strat"] += bad
            for m, stream in (("glide-asi", 6), ("glide-asi-mix", 7)):
                if m in methods:
                    from glide.estimators import ASIMeanEstimator

                    pi, xi_a = active.sample(uncert[m], n, random_seed=_seed(seed, r, j, stream))
                    est = ASIMeanEstimator().estimate(np.where(xi_a == 1, y, np.nan), conf, pi)
                    ci = est.confidence_interval
                    put(m, r, j, float(ci.lower_bound), float(ci.upper_bound), float(ci.mean))
                    n_used[m].append(int(np.nansum(xi_a)))
    mse = srs_mse(y, sizes)
    out = {}
    for m in methods:
        out[m] = summary(*res[m], mse, np.asarray(ctx["srs_half"], dtype=np.float64))
        used = np.asarray(n_used[m]).reshape(repetitions, len(sizes))
        out[m]["n_dev"] = float(np.max(np.abs(used - np.asarray(sizes)[None, :])))
        out[m]["n_mean"] = float(np.mean(used / np.asarray(sizes)[None, :]))
        out[m]["refused"] = refused[m] / used.size
    return out


def _versions() -> str:
    from importlib.metadata import PackageNotFoundError, version

    parts = [f"python {sys.version.split()[0]}"]
    for p in ("numpy", "scipy", "scikit-learn", "ppi-python", "ssepy", "glide-py"):
        try:
            parts.append(f"{p} {version(p)}")
        except PackageNotFoundError:
            parts.append(f"{p} missing")
    return ", ".join(parts)


def table(results: dict[str, dict[str, dict[str, float]]]) -> str:
    head = f"{'context':<20}{'method':<14}{'E':>6}{'+-':>6}{'E max':>7}{'cov':>7}"
    head += f"{'cov min':>8}{'w':>6}{'n dev':>6}{'n/size':>7}{'refused':>8}"
    lines = [head, "-" * len(head)]
    methods: list[str] = []
    for ctx, rows in results.items():
        for m, s in rows.items():
            if m not in methods:
                methods.append(m)
            lines.append(
                f"{ctx:<20}{m:<14}{s['E']:>6.2f}{s['E_se']:>6.2f}{s['E_max']:>7.2f}"
                f"{s['coverage']:>7.3f}{s['coverage_min']:>8.3f}{s['w']:>6.2f}{s['n_dev']:>6.0f}"
                f"{s.get('n_mean', 1.0):>7.3f}{s.get('refused', 0.0):>8.3f}"
            )
    for m in methods:
        rs = [rows[m] for rows in results.values() if m in rows]
        lines.append(
            f"{'MEAN':<20}{m:<14}{np.mean([s['E'] for s in rs]):>6.2f}{'':>6}"
            f"{max(s['E'] for s in rs):>7.2f}{np.mean([s['coverage'] for s in rs]):>7.3f}"
            f"{min(s['coverage_min'] for s in rs):>8.3f}{np.mean([s['w'] for s in rs]):>6.2f}"
        )
    return "\n".join(lines)


def run(
    in_dir: str,
    *,
    repetitions: int,
    methods: Sequence[str] = METHODS,
    seed: int = 0,
    jobs: int = 1,
    progress: Callable[[str], None] | None = print,
) -> dict[str, dict[str, dict[str, float]]]:
    files = _dumped(in_dir)
    tasks = [(os.path.join(in_dir, f), repetitions, tuple(methods), seed) for f in files]
    if jobs > 1:
        from multiprocessing import Pool

        with Pool(jobs) as pool:
            done = pool.map(_one, tasks, chunksize=1)
    else:
        done = [_one(t) for t in tasks]
    results = {}
    for name, res, secs in done:
        results[name] = res
        if progress is not None:
            progress(f"  {name}: {secs:.0f} s")
    return results


def _one(task: tuple[str, int, tuple[str, ...], int]) -> tuple[str, Any, float]:
    path, repetitions, methods, seed = task
    t0 = time.perf_counter()
    ctx = load_context(path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = run_context(ctx, repetitions=repetitions, methods=methods, seed=seed)
    return ctx["name"], res, time.perf_counter() - t0


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="benchmarks/peers.py", description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    d = sub.add_parser("dump", help="write the contexts (project venv)")
    d.add_argument("dir")
    d.add_argument("--sizes", default=",".join(map(str, SIZES)))
    d.add_argument("--srs-repetitions", type=int, default=SRS_REPETITIONS)
    r = sub.add_parser("run", help="run the peers (benchmarks/.venv-peers)")
    r.add_argument("dir")
    r.add_argument("--repetitions", type=int, default=200)
    r.add_argument("--methods", default=",".join(METHODS))
    r.add_argument("--jobs", type=int, default=1, help="contexts run in parallel")
    c = sub.add_parser("campaign", help="the Campaign at the dumped sizes (project venv)")
    c.add_argument("dir")
    c.add_argument("--repetitions", type=int, default=500)
    args = ap.parse_args(argv)
    if args.cmd == "dump":
        sizes = [int(s) for s in args.sizes.split(",")]
        for p in dump(args.dir, sizes=sizes, srs_repetitions=args.srs_repetitions):
            print(f"wrote {p}")
        return
    if args.cmd == "campaign":
        print(campaign(args.dir, repetitions=args.repetitions))
        return
    methods = args.methods.split(",")
    bad = [m for m in methods if m not in METHODS]
    if bad:
        ap.error(f"--methods must be among {', '.join(METHODS)}; got {', '.join(bad)}")
    print(_versions())
    print(GLIDE_NOTE)
    results = run(args.dir, repetitions=args.repetitions, methods=methods, jobs=args.jobs)
    print(f"{args.repetitions} repetitions per size; sizes from the dump; 95 % intervals")
    print(table(results))


if __name__ == "__main__":
    main()

"""Regression piles whose squared errors the activations predict, and what ``auto`` saves there
(docs/estimation-notes.md, "Regression piles whose errors are predictable (rg33)").

Four seeded piles of 5,000 operational rows, each from a scikit-learn MLP (64 -> 32 ReLU)
trained in seconds on 2,000 rows; the activations are its last hidden layer, the score
1 - squared error on targets standardised with the training mean and sd (as
:mod:`labelwise.experiments.regression`):

* ``shift``: Friedman #1 (noise 1); 30 % of the operational rows have features 0 and 1 in
  [1, 1.6], outside the training range (the model extrapolates);
* ``hetero``: y = 2 sin(3 x1) + x2² + x3 - 0.5 x4 plus noise of sd 0.1 + 1.4 x1³ (the noise
  grows where the model's own input x1 is large);
* ``subpop``: 12 % of the operational rows have x2 in [1.2, 1.8], never in training;
* ``heavy5``: ``hetero`` with Student-t(5) noise (a heavy right tail of squared errors);
  ``heavy``: Student-t(2.5) (the squared error has no variance: no interval covers).

For each campaign (seeds ``[0, r, 2]``, as ``labelwise.experiments.campaign_study``) the
``auto`` campaign proposes 35 rows and then 5 at a time up to 180, estimating after each
batch; ``srs_estimate`` on the same rows is the baseline. Printed: E (MSE / SRS's exact MSE,
mean over sizes), coverage (mean, worst size) for both, w (mean half-width / SRS's on the same
rows) and how often the difference estimator was used.

Run: python benchmarks/predictable_regression.py [REPS] [PILE ...]  (about 1 s a campaign)
"""

from __future__ import annotations

import sys
import warnings

import numpy as np
from sklearn.datasets import make_friedman1
from sklearn.neural_network import MLPRegressor

import labelwise as lw
from labelwise.exceptions import DegenerateDataWarning

N_TRAIN, N_OP = 2000, 5000
SIZES = tuple(range(35, 185, 5))


def _pile(x_tr, y_tr, x_op, y_op, seed):
    mu, sd = y_tr.mean(), y_tr.std()
    m = MLPRegressor(hidden_layer_sizes=(64, 32), max_iter=300, random_state=seed)
    m.set_params(learning_rate_init=3e-3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # ConvergenceWarning: 300 epochs are enough here
        m.fit(x_tr, (y_tr - mu) / sd)
    h = x_op
    for w, b in zip(m.coefs_[:-1], m.intercepts_[:-1], strict=True):
        h = np.maximum(h @ w + b, 0)
    scores = 1 - (m.predict(x_op) - (y_op - mu) / sd) ** 2
    return h.astype(np.float32), scores


def shift(seed=0):
    g = np.random.default_rng(seed)
    x, y = make_friedman1(N_TRAIN + N_OP, noise=1.0, random_state=seed)
    k = g.random(N_OP) < 0.3
    xo = x[N_TRAIN:].copy()
    xo[k, :2] = 1 + 0.6 * g.random((k.sum(), 2))
    yo = (
        10 * np.sin(np.pi * xo[:, 0] * xo[:, 1])
        + 20 * (xo[:, 2] - 0.5) ** 2
        + 10 * xo[:, 3]
        + 5 * xo[:, 4]
        + g.normal(0, 1, N_OP)
    )
    return _pile(x[:N_TRAIN], y[:N_TRAIN], xo, yo, seed)


def hetero(seed=0, df=None):
    g = np.random.default_rng(seed + 100)
    n = N_TRAIN + N_OP
    x = g.random((n, 8))
    f = 2 * np.sin(3 * x[:, 1]) + x[:, 2] ** 2 + x[:, 3] - 0.5 * x[:, 4]
    e = g.normal(size=n) if df is None else g.standard_t(df, n) / np.sqrt(df / (df - 2))
    y = f + (0.1 + 1.4 * x[:, 1] ** 3) * e
    return _pile(x[:N_TRAIN], y[:N_TRAIN], x[N_TRAIN:], y[N_TRAIN:], seed)


def subpop(seed=0):
    g = np.random.default_rng(seed + 200)
    n = N_TRAIN + N_OP
    x = g.random((n, 8))
    sub = np.zeros(n, dtype=bool)
    sub[N_TRAIN:] = g.random(N_OP) < 0.12
    x[sub, 2] = 1.2 + 0.6 * g.random(sub.sum())
    y = 2 * np.sin(3 * x[:, 1]) + x[:, 2] ** 2 - x[:, 3] + 0.3 * g.normal(size=n)
    return _pile(x[:N_TRAIN], y[:N_TRAIN], x[N_TRAIN:], y[N_TRAIN:], seed)


PILES = {
    "shift": shift,
    "hetero": hetero,
    "subpop": subpop,
    "heavy5": lambda seed=0: hetero(seed, 5.0),
    "heavy": lambda seed=0: hetero(seed, 2.5),
}


def measure(acts, scores, reps, first=0):
    truth = float(scores.mean())
    n_pop = scores.size
    out = np.zeros((reps, len(SIZES), 6))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DegenerateDataWarning)
        for r in range(reps):
            camp = lw.Campaign(acts, None, rng=np.random.default_rng([0, first + r, 2]))
            done = 0
            for j, n in enumerate(SIZES):
                rows = camp.propose(n - done)
                camp.record(rows, scores[rows])
                done = n
                e = camp.estimate()
                s = lw.srs_estimate(scores[camp.proposed], population_size=n_pop)
                used = e.interval == "bootstrap-t of the difference estimator"
                out[r, j] = (e.value, e.ci_low, e.ci_high, used, s.ci_low, min(s.ci_high, 1.0))
    n = np.asarray(SIZES, dtype=np.float64)
    mse_srs = np.var(scores, ddof=1) * (1 - n / n_pop) / n
    v, lo, hi, used, slo, shi = np.moveaxis(out, 2, 0)
    cov = (lo <= truth) & (truth <= hi)
    cov_s = (slo <= truth) & (truth <= shi)
    return {
        "E": float(np.mean(((v - truth) ** 2).mean(0) / mse_srs)),
        "coverage": float(cov.mean()),
        "coverage_min": float(cov.mean(0).min()),
        "srs_coverage": float(cov_s.mean()),
        "srs_coverage_min": float(cov_s.mean(0).min()),
        "w": float(np.mean((hi - lo).mean(0) / (shi - slo).mean(0))),
        "switched": float(used.mean()),
    }


def main() -> None:
    reps = int(sys.argv[1]) if len(sys.argv) > 1 else 100
    names = sys.argv[2:] or list(PILES)
    print(
        f"{'pile':<8}{'E':>6}{'cov':>7}{'min':>7}{'srs cov':>9}{'min':>7}{'w':>6}{'switched':>10}"
    )
    for name in names:
        acts, scores = PILES[name]()
        m = measure(acts, scores, reps)
        print(
            f"{name:<8}{m['E']:>6.2f}{m['coverage']:>7.3f}{m['coverage_min']:>7.3f}"
            f"{m['srs_coverage']:>9.3f}{m['srs_coverage_min']:>7.3f}{m['w']:>6.2f}"
            f"{m['switched']:>10.2f}",
            flush=True,
        )


if __name__ == "__main__":
    main()

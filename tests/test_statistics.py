"""Repeated-sampling checks: bias and interval coverage of each sampler + estimator.

Fixed seeds, so the numbers are reproducible; run with ``-s`` to see them. Tolerances:
with R repetitions a 95% interval's coverage has a standard error of about
sqrt(0.95 * 0.05 / R) (0.007 for R = 1000), and the mean estimate's Monte-Carlo standard
error is sd / sqrt(R).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pytest

import labelwise as lw

pytestmark = pytest.mark.slow

N = 5000
R = 1000
BUDGET = 100


@dataclass(frozen=True)
class Summary:
    truth: float
    mean: float
    sd: float
    mean_se: float
    coverage: float
    reps: int

    @property
    def bias(self) -> float:
        return self.mean - self.truth

    @property
    def mc_se(self) -> float:
        """Monte-Carlo standard error of ``mean``."""
        return self.sd / math.sqrt(self.reps)

    def line(self, name: str) -> str:
        return (
            f"{name}: truth={self.truth:.4f} bias={self.bias:+.5f} "
            f"(|bias|/MC-SE={abs(self.bias) / self.mc_se:.2f}) sd={self.sd:.5f} "
            f"mean reported SE={self.mean_se:.5f} coverage={self.coverage:.3f} (R={self.reps})"
        )


def _simulate(truth: float, one: Callable[[int], lw.Estimate], reps: int) -> Summary:
    values, ses, hits = np.empty(reps), np.empty(reps), 0
    for r in range(reps):
        e = one(r)
        assert e.n_labelled == BUDGET
        assert math.isfinite(e.value)
        assert math.isfinite(e.std_error)
        values[r], ses[r] = e.value, e.std_error
        hits += e.ci_low <= truth <= e.ci_high
    return Summary(
        truth, float(values.mean()), float(values.std(ddof=1)), float(ses.mean()), hits / reps, reps
    )


def _report(name: str, s: Summary) -> None:
    print("\n" + s.line(name))


@pytest.fixture(scope="module")
def miscalibrated() -> tuple[np.ndarray, np.ndarray]:
    """Confidences and correctness of a model that is over-confident (P(correct) = c^1.5)."""
    rng = np.random.default_rng(1)
    conf = rng.beta(8, 1.2, N)
    correct = (rng.random(N) < conf**1.5).astype(np.float64)
    return conf, correct


def test_srs_is_unbiased_and_covers(miscalibrated: tuple[np.ndarray, np.ndarray]) -> None:
    _, correct = miscalibrated

    def one(r: int) -> lw.Estimate:
        sel = lw.srs_select(N, BUDGET, rng=10_000 + r)
        return lw.estimate(sel, correct[sel.indices])

    s = _simulate(float(correct.mean()), one, R)
    _report("SRS accuracy n=100", s)
    assert abs(s.bias) < 3 * s.mc_se
    assert 0.93 <= s.coverage <= 0.97
    # The reported SE is the true sampling SD on average (within 10%).
    assert s.mean_se == pytest.approx(s.sd, rel=0.1)


def test_css_is_unbiased_and_covers(miscalibrated: tuple[np.ndarray, np.ndarray]) -> None:
    conf, correct = miscalibrated

    def one(r: int) -> lw.Estimate:
        sel = lw.css_select(conf, BUDGET, rng=20_000 + r)  # paper defaults: 80/10/10, 20/40/40
        return lw.estimate(sel, correct[sel.indices])

    s = _simulate(float(correct.mean()), one, R)
    _report("CSS accuracy n=100 (80/10/10, 20/40/40)", s)
    assert abs(s.bias) < 3 * s.mc_se
    assert 0.93 <= s.coverage <= 0.97
    assert s.mean_se == pytest.approx(s.sd, rel=0.15)


def test_srs_covers_a_non_binary_score() -> None:
    # Regression-like scores H = 1 - err^2 with a skewed error distribution.
    rng = np.random.default_rng(2)
    err = 0.3 * rng.standard_normal(N) + 0.1 * rng.standard_exponential(N)
    score = 1.0 - err**2

    def one(r: int) -> lw.Estimate:
        sel = lw.srs_select(N, BUDGET, rng=30_000 + r)
        e = lw.estimate(sel, score[sel.indices])
        assert e.interval == "bootstrap-t"
        return e

    s = _simulate(float(score.mean()), one, R)
    _report("SRS 1-squared-error n=100", s)
    assert abs(s.bias) < 3 * s.mc_se
    # Squared errors are skewed; the Student-t interval undercovered here (0.925, Monte-Carlo
    # SE 0.007), the bootstrap-t that srs_estimate reports for non-0/1 scores covers 0.950.
    # The README states this.
    assert 0.93 <= s.coverage <= 0.97


@pytest.fixture(scope="module")
def representation() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Activations (N, 16) of a latent z; correctness is a logistic function of z.

    Returns the activations, the 0/1 correctness and the true P(correct) of every row.
    """
    rng = np.random.default_rng(3)
    z = rng.standard_normal((N, 4))
    weights = rng.standard_normal((4, 16))
    act = np.maximum(z @ weights + 0.3 * rng.standard_normal((N, 16)), 0.0).astype(np.float32)
    p_correct = 1.0 / (1.0 + np.exp(-(1.5 + 1.5 * z[:, 0] - 1.0 * z[:, 1])))
    correct = (rng.random(N) < p_correct).astype(np.float64)
    return act, correct, p_correct


CES_REPS = 300


@pytest.fixture(scope="module")
def srs_on_representation(representation: tuple[np.ndarray, np.ndarray, np.ndarray]) -> Summary:
    _, correct, _ = representation

    def one(r: int) -> lw.Estimate:
        sel = lw.srs_select(N, BUDGET, rng=40_000 + r)
        return lw.estimate(sel, correct[sel.indices])

    return _simulate(float(correct.mean()), one, R)


_CE_BIAS = (
    "method limitation, not a code error (score_groups matches ces_reference): with Eq. 8 "
    "and epsilon = 1e-10 (objective='ce'), the CES sample mean is biased on "
    "this population: bias -0.0127 = 5.8 Monte-Carlo SE over 300 runs; the selected rows' "
    "mean true P(correct) is off by -0.0118 (z = -12). KL (the default) passes. See findings.md"
)


@pytest.mark.parametrize(
    "objective",
    [pytest.param("ce", marks=pytest.mark.xfail(strict=True, reason=_CE_BIAS)), "kl"],
)
def test_ces_bias_and_coverage(
    objective: str,
    representation: tuple[np.ndarray, np.ndarray, np.ndarray],
    srs_on_representation: Summary,
) -> None:
    act, correct, p_correct = representation
    selected_p = np.empty(CES_REPS)  # mean true P(correct) of the selected rows, per run

    def one(r: int) -> lw.Estimate:
        sel = lw.ces_select(act, BUDGET, objective=objective, rng=50_000 + r)  # paper K,p,q,l
        selected_p[r] = p_correct[sel.indices].mean()
        return lw.estimate(sel, correct[sel.indices])

    s = _simulate(float(correct.mean()), one, CES_REPS)
    srs = srs_on_representation
    sel_bias = selected_p.mean() - p_correct.mean()
    sel_z = sel_bias / (selected_p.std(ddof=1) / math.sqrt(CES_REPS))
    _report(f"CES ({objective}) accuracy n=100", s)
    _report("SRS on the same population", srs)
    print(
        f"CES ({objective}) selection bias in true P(correct): {sel_bias:+.5f} (z={sel_z:+.1f}); "
        f"relative efficiency Var(CES) / Var(SRS) = {s.sd**2 / srs.sd**2:.3f}; "
        f"MSE ratio = {(s.sd**2 + s.bias**2) / (srs.sd**2 + srs.bias**2):.3f}"
    )
    # CES has no design-based variance; the SRS interval is used. Loose checks only.
    assert s.coverage >= 0.85
    assert abs(s.bias) < 4 * s.mc_se

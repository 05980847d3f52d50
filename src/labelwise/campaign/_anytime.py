"""Anytime-valid confidence sequences for a bounded mean, sampling without replacement.

Betting confidence sequences (Waudby-Smith & Ramdas 2024, JRSS-B, "Estimating means of
bounded random variables by betting", Sec. 6, without replacement; the hedged capital of
Sec. 4.2 with the predictable plug-in bets of Sec. 5.1).
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import NDArray

__all__ = ["betting_cs_wor"]

_GRID = np.linspace(0.0, 1.0, 1001)


def betting_cs_wor(
    x: NDArray[np.float64], population_size: int, alpha: float, *, c: float = 0.5
) -> tuple[float, float]:
    """A (1 - alpha) confidence sequence for the mean of N values in [0, 1], at time t = x.size.

    ``x`` are the first t draws of a uniformly random permutation of the N values, in order.
    For a candidate mean m the remaining values have mean
        μ_i(m) = (N m - Σ_{j<i} x_j) / (N - i + 1),
    and the hedged capital K_t(m) = max(½ Π (1 + λ⁺_i (x_i - μ_i)), ½ Π (1 - λ⁻_i (x_i - μ_i)))
    is a nonnegative martingale when m is the truth (Sec. 6, Thm. 4). The set is
    {m : max_{s<=t} K_s(m) < 1/alpha} (running intersection, so the sequence only shrinks),
    on a grid of 1001 candidates, widened to the next grid point. Bets:
    λ_i = sqrt(2 log(2/alpha) / (σ̂²_{i-1} i log(1 + i))), truncated at c/μ_i and c/(1-μ_i).
    Candidates for which some μ_i leaves [0, 1] are impossible and are dropped.
    """
    t = x.size
    if t == 0:
        return 0.0, 1.0
    n = population_size
    i = np.arange(1, t + 1, dtype=np.float64)
    csum = np.concatenate([[0.0], np.cumsum(x)[:-1]])  # Σ_{j<i} x_j
    mu_hat = (0.5 + np.concatenate([[0.0], np.cumsum(x)]))[:-1] / i  # predictable mean
    dev = np.concatenate([[0.0], np.cumsum((x - np.concatenate([[0.5], mu_hat[1:]])) ** 2)])
    sig2 = (0.25 + dev[:-1]) / i
    lam = np.sqrt(2 * math.log(2 / alpha) / (sig2 * i * np.log1p(i)))
    denom = np.maximum(n - i + 1, 1.0)
    mu = (n * _GRID[None, :] - csum[:, None]) / denom[:, None]  # (t, G)
    possible = np.all((mu >= -1e-12) & (mu <= 1 + 1e-12), axis=0)
    mu = np.clip(mu, 1e-9, 1 - 1e-9)
    lp = np.minimum(lam[:, None], c / mu)
    lm = np.minimum(lam[:, None], c / (1 - mu))
    d = x[:, None] - mu
    log_kp = np.cumsum(np.log1p(lp * d), axis=0)
    log_km = np.cumsum(np.log1p(-lm * d), axis=0)
    log_k = np.logaddexp(log_kp, log_km) - math.log(2)
    keep = possible & (log_k.max(axis=0) < math.log(1 / alpha))
    if not keep.any():  # numerically everything rejected: report the point closest to the mean
        m = float(np.mean(x))
        return m, m
    idx = np.flatnonzero(keep)
    step = _GRID[1] - _GRID[0]
    return max(0.0, float(_GRID[idx[0]] - step)), min(1.0, float(_GRID[idx[-1]] + step))

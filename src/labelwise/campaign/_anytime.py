"""Anytime-valid confidence sequences for a bounded mean, sampling without replacement.

Betting confidence sequences (Waudby-Smith & Ramdas 2024, JRSS-B, "Estimating means of
bounded random variables by betting", Sec. 6, without replacement; the hedged capital of
Sec. 4.2 with the predictable plug-in bets of Sec. 5.1).
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import NDArray

__all__ = ["BettingCS", "betting_cs_wor"]

_GRID = np.linspace(0.0, 1.0, 1001)


class BettingCS:
    """The betting confidence sequence of :func:`betting_cs_wor`, kept incrementally.

    :meth:`update` feeds the next draws in order; :meth:`interval` is the set at the current
    time. The capital of every grid candidate is carried from one update to the next, so a
    campaign that asks for the interval after every batch pays O(new draws x grid) per call
    instead of re-betting its whole history.
    """

    def __init__(self, population_size: int, alpha: float, *, c: float = 0.5) -> None:
        self.n = int(population_size)
        self.alpha = float(alpha)
        self.c = float(c)
        self.t = 0
        self._sum = 0.0  # Σ x_j so far
        self._dev = 0.0  # Σ (x_j - μ̂_{j-1})² so far
        self._log_kp = np.zeros(_GRID.size)
        self._log_km = np.zeros(_GRID.size)
        self._max_log_k = np.full(_GRID.size, -np.inf)
        self._possible = np.ones(_GRID.size, dtype=bool)

    def update(self, x: NDArray[np.float64]) -> None:
        """Bet on the next draws ``x`` (values in [0, 1], in draw order)."""
        x = np.asarray(x, dtype=np.float64)
        if x.size == 0:
            return
        t0 = self.t
        i = np.arange(t0 + 1, t0 + x.size + 1, dtype=np.float64)
        csum_all = self._sum + np.concatenate([[0.0], np.cumsum(x)])
        csum = csum_all[:-1]  # Σ_{j<i} x_j
        mu_hat = (0.5 + csum) / i  # predictable mean after i - 1 draws
        prev = np.where(i == 1, 0.5, mu_hat)  # reference for draw i's squared deviation
        dev_all = self._dev + np.concatenate([[0.0], np.cumsum((x - prev) ** 2)])
        sig2 = (0.25 + dev_all[:-1]) / i
        lam = np.sqrt(2 * math.log(2 / self.alpha) / (sig2 * i * np.log1p(i)))
        denom = np.maximum(self.n - i + 1, 1.0)
        mu = (self.n * _GRID[None, :] - csum[:, None]) / denom[:, None]
        self._possible &= np.all((mu >= -1e-12) & (mu <= 1 + 1e-12), axis=0)
        mu = np.clip(mu, 1e-9, 1 - 1e-9)
        lp = np.minimum(lam[:, None], self.c / mu)
        lm = np.minimum(lam[:, None], self.c / (1 - mu))
        d = x[:, None] - mu
        log_kp = self._log_kp + np.cumsum(np.log1p(lp * d), axis=0)
        log_km = self._log_km + np.cumsum(np.log1p(-lm * d), axis=0)
        log_k = np.logaddexp(log_kp, log_km) - math.log(2)
        self._max_log_k = np.maximum(self._max_log_k, log_k.max(axis=0))
        self._log_kp, self._log_km = log_kp[-1], log_km[-1]
        self._sum = float(csum_all[-1])
        self._dev = float(dev_all[-1])
        self.t += x.size

    def interval(self) -> tuple[float, float]:
        """The running-intersection set at the current time, widened to the next grid point."""
        if self.t == 0:
            return 0.0, 1.0
        keep = self._possible & (self._max_log_k < math.log(1 / self.alpha))
        if not keep.any():  # numerically everything rejected: the point closest to the mean
            m = self._sum / self.t
            return m, m
        idx = np.flatnonzero(keep)
        step = _GRID[1] - _GRID[0]
        return max(0.0, float(_GRID[idx[0]] - step)), min(1.0, float(_GRID[idx[-1]] + step))


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
    cs = BettingCS(population_size, alpha, c=c)
    cs.update(np.asarray(x, dtype=np.float64))
    return cs.interval()

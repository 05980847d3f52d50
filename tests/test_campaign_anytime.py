"""Campaign: anytime validity under optional stopping, by simulation (its own file so that
the test suite's two workers share the campaign's simulations)."""

from __future__ import annotations

import pytest

import labelwise as lw
from test_campaign import _pile


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore::labelwise.exceptions.DegenerateDataWarning")
def test_anytime_optional_stopping() -> None:
    y, acts, probs = _pile(400, seed=6)
    truth = y.mean()
    # srs: exact betting sequence; stratified/auto: the asymptotic sequence, also stopped at a
    # demanding width (the user's --until-halfwidth) where an invalid interval would show
    for method, reps, width in (("srs", 1000, 0.3), ("stratified", 200, 0.3), ("auto", 200, 0.16)):
        miss = 0
        for r in range(reps):
            c = lw.Campaign(acts, probs, method=method, rng=r)
            for _ in range(36):
                rows = c.propose(5)
                c.record(rows, y[rows])
                e = c.estimate(anytime=True)
                if e.ci_high - e.ci_low < width:
                    break
            miss += not (e.ci_low <= truth <= e.ci_high)
        assert miss / reps <= 0.05, (method, miss / reps)

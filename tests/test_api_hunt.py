"""The public API called as a stranger would (api33 hunt): plausible but unusual inputs and
call orders. Each test failed before its fix: a raw numpy exception, an argument ignored
without a word, or a message that misread the input."""

from __future__ import annotations

import numpy as np
import pytest

import labelwise as lw


def _pile(n: int = 120, c: int = 3, seed: int = 0):
    g = np.random.default_rng(seed)
    return g.normal(size=(n, 4)), g.dirichlet(np.ones(c), size=n)


@pytest.mark.parametrize("scores", [["yes", "no", "yes"], [object(), 1, 0]])
def test_campaign_record_of_text_scores_is_refused_and_changes_nothing(scores) -> None:
    """A labeller's 'yes'/'no' went to float() inside record: a raw ValueError."""
    acts, probs = _pile()
    c = lw.Campaign(acts, probs, rng=0)
    rows = c.propose(3)
    with pytest.raises(lw.LabelwiseError, match="scores must be numbers"):
        c.record(rows, scores)
    assert c.n_recorded == 0
    c.record(rows, ["1", "0", "1"])  # numbers written as text are numbers
    assert c.n_recorded == 3

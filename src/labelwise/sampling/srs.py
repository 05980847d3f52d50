"""Simple random sampling without replacement (Li et al. 2019, Sec. 2.3)."""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from .._results import Selection
from .._validation import RNGLike, check_budget, check_rng
from ._common import (
    check_additional,
    check_same_population,
    draw,
    generator_for_extension,
    generator_state,
    population_size,
    remaining,
)

__all__ = ["srs_select"]


def srs_select(data: ArrayLike | int, budget: int, *, rng: RNGLike = None) -> Selection:
    """Simple random sampling (SRS) without replacement.

    Every set of ``budget`` rows is equally likely; the estimator is the sample mean
    (Li et al. 2019, Sec. 2.3, Eq. 1). The indices are in random order, so every prefix is
    itself a simple random sample and :func:`labelwise.extend` continues the same draw.

    Parameters
    ----------
    data:
        The operational pile (any array whose first axis is the rows) or its size N.
    budget:
        Number of rows to label, in ``[1, N]``.
    rng:
        Seed or ``numpy.random.Generator``.
    """
    n_pop = population_size(data)
    budget = check_budget(budget, n_pop)
    gen = check_rng(rng)
    idx = draw(gen, np.arange(n_pop, dtype=np.int64), budget)
    return Selection(
        indices=idx, method="srs", population_size=n_pop, rng_state=generator_state(gen)
    )


def _srs_extend(selection: Selection, data: Any, additional: int, rng: RNGLike) -> Selection:
    n_pop = selection.population_size
    if data is not None:
        check_same_population(selection, population_size(data))
    additional = check_additional(selection, additional)
    gen = generator_for_extension(selection.rng_state, rng)
    new = draw(gen, remaining(n_pop, selection.indices), additional)
    return Selection(
        indices=np.concatenate([selection.indices, new]),
        method="srs",
        population_size=n_pop,
        params=dict(selection.params),
        rng_state=generator_state(gen),
    )

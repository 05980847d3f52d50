"""Simple random sampling without replacement (Li et al. 2019, Sec. 2.3)."""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .._results import Selection
from .._validation import RNGLike, check_budget, check_rng
from ._common import (
    check_additional,
    check_same_population,
    generator_for_extension,
    generator_state,
    key_state_of,
    population_size,
)

__all__ = ["srs_select"]


def srs_select(data: ArrayLike | int, budget: int, *, rng: RNGLike = None) -> Selection:
    """Simple random sampling (SRS) without replacement.

    Every set of ``budget`` rows is equally likely; the estimator is the sample mean
    (Li et al. 2019, Sec. 2.3, Eq. 1). Each row gets an independent uniform key and the
    selection is the ``budget`` rows with the smallest keys, in key order: every prefix is
    itself a simple random sample, and :func:`labelwise.extend` takes the next keys, so
    selecting n and extending by m equals selecting n + m with the same seed.

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
    key_state = generator_state(gen)
    keys = _keys(gen, n_pop)
    return Selection(
        indices=_smallest_keys(keys, budget, None),
        method="srs",
        population_size=n_pop,
        rng_state=generator_state(gen),
        diagnostics={"key_state": key_state},
    )


def _srs_extend(selection: Selection, data: Any, additional: int, rng: RNGLike) -> Selection:
    n_pop = selection.population_size
    if data is not None:
        check_same_population(selection, population_size(data))
    additional = check_additional(selection, additional)
    if rng is None:  # replay the stored keys: the same as one draw of the larger size
        key_state = key_state_of(selection)
        keys = _keys(generator_for_extension(key_state, None), n_pop)
        state = selection.rng_state
    else:
        gen = generator_for_extension(None, rng)
        key_state = generator_state(gen)
        keys = _keys(gen, n_pop)
        state = generator_state(gen)
    new = _smallest_keys(keys, additional, selection.indices)
    return Selection(
        indices=np.concatenate([selection.indices, new]),
        method="srs",
        population_size=n_pop,
        params=dict(selection.params),
        rng_state=state,
        diagnostics={**selection.diagnostics, "key_state": key_state},
    )


def _keys(gen: np.random.Generator, n_pop: int) -> NDArray[np.float64]:
    """One uniform key per row; SRS takes the rows with the smallest keys, in key order."""
    return gen.random(n_pop)


def _smallest_keys(
    keys: NDArray[np.float64], count: int, exclude: NDArray[np.int64] | None
) -> NDArray[np.int64]:
    if exclude is not None and exclude.size:
        keys = keys.copy()
        keys[exclude] = np.inf
    part = np.argpartition(keys, count - 1)[:count] if count < keys.size else np.arange(keys.size)
    return np.asarray(part[np.argsort(keys[part], kind="stable")], dtype=np.int64)

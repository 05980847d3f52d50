"""Pieces shared by the samplers: population size, random draws, generator state."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .._validation import check_budget, check_rng
from ..exceptions import LabelwiseError


def population_size(data: ArrayLike | int, name: str = "data") -> int:
    """N from an int or from the first axis of an array."""
    if isinstance(data, int | np.integer) and not isinstance(data, bool):
        if data < 1:
            raise LabelwiseError(f"{name} must be a positive population size, got {data}")
        return int(data)
    shape = np.shape(data)
    if len(shape) == 0:
        raise LabelwiseError(
            f"{name} must be an array with one row per input or an int, got {data!r}"
        )
    if shape[0] < 1:
        raise LabelwiseError(f"{name} must not be empty")
    return int(shape[0])


def draw(gen: np.random.Generator, pool: NDArray[np.int64], size: int) -> NDArray[np.int64]:
    """``size`` distinct elements of ``pool`` in random (selection) order."""
    if size == 0:
        return np.empty(0, dtype=np.int64)
    return np.asarray(gen.choice(pool, size=size, replace=False, shuffle=True), dtype=np.int64)


def generator_for_extension(state: Mapping[str, Any] | None, rng: Any) -> np.random.Generator:
    """The generator to continue a selection with: ``rng`` if given, else the stored state."""
    if rng is not None or state is None:
        return check_rng(rng)
    try:
        bitgen_cls = getattr(np.random, state["bit_generator"])
        gen = np.random.Generator(bitgen_cls())
        gen.bit_generator.state = dict(state)
    except (KeyError, TypeError, ValueError, AttributeError, OverflowError) as exc:
        raise LabelwiseError(f"selection has an unusable rng_state: {exc}") from None
    return gen


def generator_state(gen: np.random.Generator) -> dict[str, Any]:
    return dict(gen.bit_generator.state)


def key_state_of(selection: Any) -> Mapping[str, Any] | None:
    """The state the random keys of SRS, SDS or RDG were drawn from (replayed by extend).

    Stored in ``diagnostics["key_state"]``; selections written before labelwise stored it
    kept it in ``rng_state``.
    """
    state = selection.diagnostics.get("key_state")
    return selection.rng_state if state is None else state


def allocate(
    budget: int,
    weights: NDArray[np.float64],
    capacities: NDArray[np.int64],
    minimum: NDArray[np.int64],
) -> NDArray[np.int64]:
    """Integer allocation of ``budget`` over strata, closest to ``budget * weights``.

    Each stratum gets at least ``minimum[h]`` and at most ``capacities[h]``. Start from
    the largest-remainder rounding of the ideal shares, clip to the bounds, then move single
    units to (or from) the strata furthest below (above) their ideal share; ties go to the
    lower stratum index. With no binding bounds this is exactly largest-remainder rounding.
    """
    w = np.asarray(weights, dtype=np.float64)
    cap = np.asarray(capacities, dtype=np.int64)
    lo = np.minimum(np.asarray(minimum, dtype=np.int64), cap)
    if lo.sum() > budget:
        raise LabelwiseError(
            f"budget must be at least {int(lo.sum())} to give every stratum its minimum, "
            f"got {budget}"
        )
    if cap.sum() < budget:
        raise LabelwiseError(f"budget must be at most {int(cap.sum())}, got {budget}")
    ideal = budget * w / w.sum() if w.sum() > 0 else np.full(w.shape, budget / w.size)
    n = np.floor(ideal).astype(np.int64)
    order = np.argsort(-(ideal - n), kind="stable")
    n[order[: budget - int(n.sum())]] += 1
    n = np.clip(n, lo, cap)
    while n.sum() < budget:
        gap = np.where(n < cap, ideal - n, -np.inf)
        n[int(np.argmax(gap))] += 1
    while n.sum() > budget:
        gap = np.where(n > lo, ideal - n, np.inf)
        n[int(np.argmin(gap))] -= 1
    return n


def check_same_population(selection: Any, n_rows: int) -> None:
    if n_rows != selection.population_size:
        raise LabelwiseError(
            f"data must have the selection's {selection.population_size} rows, got {n_rows}"
        )


def check_additional(selection: Any, additional: Any) -> int:
    """The number of labels to add: in ``[1, rows not yet selected]``."""
    left = selection.population_size - selection.budget
    if left == 0:
        raise LabelwiseError("additional budget cannot be met: every row is already selected")
    return check_budget(
        additional,
        left,
        name="additional budget",
        context=f"the population has {selection.population_size} rows, {left} of them not yet "
        "selected",
    )

"""DeepGini prioritisation as selection baselines (Feng et al. 2020; Meng et al. 2021, Sec. IV-B).

DeepGini scores an input by the Gini impurity of a model's class probabilities,
xi(x) = 1 - sum_c p_c(x)^2: 0 for a one-hot output, 1 - 1/C for the uniform one. Inputs with
high impurity are the ones the model is unsure about, i.e. likely misclassified. The
comparative-testing paper uses it two ways:

- DDG (deterministic DeepGini): label the ``budget`` inputs with the highest impurity.
- RDG (random DeepGini): draw the budget at random among the top 25% by impurity, like SDS
  Step 5 (the same candidate, fill and warning rules, :mod:`labelwise.sampling._candidates`).

With several models the per-input impurities are combined by ``combine``: ``"max"`` (the
default: an input at least one model is most unsure about), ``"min"`` (one every model is
unsure about) or ``"mean"``. The authors' code takes the max or the min per input.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .._chunks import check_rows, concat_rows, map_rows
from .._params import Interval, Options, Param, validate_params
from .._results import Selection
from .._validation import RNGLike, check_budget, check_rng
from ..exceptions import LabelwiseError
from ._candidates import check_fraction, draw_candidates, extend_candidates
from ._common import check_additional, check_same_population, generator_state

__all__ = ["GINI_COMBINE", "ddg_select", "deepgini_impurity", "rdg_select"]

GINI_COMBINE = ("max", "min", "mean")

_COMBINE = Param(
    Options(GINI_COMBINE), "DeepGini: how the models' impurities of an input are combined"
)
#: DDG's and RDG's tuning parameters (defaults: the signatures).
DDG_PARAMS = {"combine": _COMBINE}
RDG_PARAMS = {
    "combine": _COMBINE,
    "candidate_fraction": Param(
        Interval(float, 0.0, 1.0, closed="right"), "SDS, RDG: candidate input share"
    ),
}

# Class probabilities must sum to 1 within this (float32 softmax outputs do).
_SUM_TOLERANCE = 1e-3


def deepgini_impurity(probabilities: ArrayLike, *, combine: str = "max") -> NDArray[np.float64]:
    """DeepGini impurity xi = 1 - sum_c p_c^2 of every input, shape (N,).

    Parameters
    ----------
    probabilities:
        (N, C) class probabilities of one model or (n_models, N, C) of several; finite,
        non-negative, each row summing to 1 within 1e-3 (softmax outputs, not logits).
    combine:
        How several models' impurities of one input are combined: ``"max"`` (default),
        ``"min"`` or ``"mean"``. Ignored for one model.
    """
    arr = _check_probabilities(probabilities)
    how = _check_combine(combine)
    axis = arr.ndim - 2  # the inputs' axis: 0 for (N, C), 1 for (n_models, N, C)
    parts = map_rows(functools.partial(_impurity_block, how), arr, name="probabilities", axis=axis)
    return concat_rows(parts)


def _impurity_block(how: str, block: NDArray[Any], start: int) -> NDArray[np.float64]:
    """Impurity of one block of inputs: (n_models, n, C) or (n, C) -> (n,), checked first."""
    probs = np.ascontiguousarray(block[None] if block.ndim == 2 else block, dtype=np.float64)
    if (probs < 0).any():
        m, i, c = np.argwhere(probs < 0)[0]
        raise LabelwiseError(
            f"probabilities must be non-negative, got {probs[m, i, c]:g} for model {m}, "
            f"input {start + i}, class {c}"
        )
    sums = probs.sum(axis=2)
    bad = np.abs(sums - 1.0) > _SUM_TOLERANCE
    if bad.any():
        m, i = np.argwhere(bad)[0]
        raise LabelwiseError(
            f"probabilities must sum to 1 over the classes (within {_SUM_TOLERANCE:g}); "
            f"model {m}, input {start + i} sums to {sums[m, i]:.6g} (pass softmax outputs, "
            "not logits)"
        )
    xi = 1.0 - np.einsum("mnc,mnc->mn", probs, probs)
    if how == "max":
        return np.asarray(xi.max(axis=0), dtype=np.float64)
    if how == "min":
        return np.asarray(xi.min(axis=0), dtype=np.float64)
    return np.asarray(xi.mean(axis=0), dtype=np.float64)


@validate_params(DDG_PARAMS)
def ddg_select(
    probabilities: ArrayLike, budget: int, *, combine: str = "max", rng: RNGLike = None
) -> Selection:
    """Deterministic DeepGini (DDG): the ``budget`` inputs with the highest impurity.

    Indices are in decreasing impurity, ties by row index; :func:`labelwise.extend` takes
    the next ones. ``rng`` is checked and otherwise unused (DDG has no randomness); it is
    there so every sampler has the same signature.

    Parameters
    ----------
    probabilities:
        (N, C) or (n_models, N, C) class probabilities (see :func:`deepgini_impurity`).
    budget:
        Number of inputs to label, in [1, N].
    combine:
        ``"max"``, ``"min"`` or ``"mean"`` over models.
    rng:
        Accepted for the common signature; not used.
    """
    xi = deepgini_impurity(probabilities, combine=combine)
    budget = check_budget(budget, xi.size)
    check_rng(rng)
    return Selection(
        indices=_by_impurity(xi)[:budget],
        method="ddg",
        population_size=xi.size,
        params={"combine": combine},
    )


@validate_params(RDG_PARAMS)
def rdg_select(
    probabilities: ArrayLike,
    budget: int,
    *,
    combine: str = "max",
    candidate_fraction: float = 0.25,
    rng: RNGLike = None,
) -> Selection:
    """Random DeepGini (RDG): a random draw among the top inputs by impurity.

    The candidates are the ``ceil(candidate_fraction * N)`` inputs with the highest
    impurity (rows tied at the cut admitted at random); the selection is a uniformly random
    draw of ``budget`` distinct candidates in selection order. A budget above the candidates
    takes them all and then the next-highest impurity, with a
    :class:`~labelwise.DegenerateDataWarning` (as :func:`labelwise.sds_select`).

    Parameters
    ----------
    probabilities:
        (N, C) or (n_models, N, C) class probabilities (see :func:`deepgini_impurity`).
    budget:
        Number of inputs to label, in [1, N].
    combine:
        ``"max"``, ``"min"`` or ``"mean"`` over models.
    candidate_fraction:
        Share of inputs, by impurity, to draw from (paper: 25%), in (0, 1].
    rng:
        Seed or ``numpy.random.Generator``.
    """
    xi = deepgini_impurity(probabilities, combine=combine)
    frac = check_fraction(candidate_fraction, "candidate_fraction")
    budget = check_budget(budget, xi.size)
    gen = check_rng(rng)
    key_state = generator_state(gen)
    idx, n_cand = draw_candidates(xi, budget, frac, gen, what="DeepGini impurity", method="RDG")
    return Selection(
        indices=idx,
        method="rdg",
        population_size=xi.size,
        params={"combine": combine, "candidate_fraction": frac},
        rng_state=generator_state(gen),
        diagnostics={"n_candidates": n_cand, "key_state": key_state},
    )


def _by_impurity(xi: NDArray[np.float64]) -> NDArray[np.int64]:
    return np.argsort(-xi, kind="stable").astype(np.int64)


def _ddg_extend(selection: Selection, data: Any, additional: int, rng: RNGLike) -> Selection:
    if data is None:
        raise LabelwiseError("probabilities must be given to extend a DDG selection")
    xi = deepgini_impurity(data, combine=selection.params["combine"])
    check_same_population(selection, xi.size)
    additional = check_additional(selection, additional)
    check_rng(rng)
    order = _by_impurity(xi)
    if not np.array_equal(order[: selection.budget], selection.indices):
        raise LabelwiseError(
            "probabilities must be the ones the selection was made from (the selected rows "
            "are not the ones with the highest impurity)"
        )
    return Selection(
        indices=order[: selection.budget + additional],
        method="ddg",
        population_size=selection.population_size,
        params=dict(selection.params),
    )


def _rdg_extend(selection: Selection, data: Any, additional: int, rng: RNGLike) -> Selection:
    if data is None:
        raise LabelwiseError("probabilities must be given to extend an RDG selection")
    xi = deepgini_impurity(data, combine=selection.params["combine"])
    check_same_population(selection, xi.size)
    indices = extend_candidates(
        selection,
        xi,
        additional,
        rng,
        what="DeepGini impurity",
        data_name="probabilities",
        method="RDG",
    )
    return Selection(
        indices=indices,
        method="rdg",
        population_size=selection.population_size,
        params=dict(selection.params),
        rng_state=selection.rng_state,
        diagnostics=dict(selection.diagnostics),
    )


def _check_combine(combine: Any) -> str:
    if not isinstance(combine, str) or combine not in GINI_COMBINE:
        raise LabelwiseError(f"combine must be one of {GINI_COMBINE}, got {combine!r}")
    return combine


def _check_probabilities(probabilities: ArrayLike) -> Any:
    """(N, C) or (n_models, N, C) probabilities, opened (not read: the pass checks values)."""
    arr = check_rows(probabilities, "probabilities", ndim=(2, 3))
    shape = (1, *arr.shape) if arr.ndim == 2 else tuple(arr.shape)
    _, n_rows, n_classes = shape
    if n_rows < 1 or n_classes < 2:
        raise LabelwiseError(
            "probabilities must be (N, C) or (n_models, N, C) with N >= 1 inputs and C >= 2 "
            f"classes, got shape {tuple(arr.shape)}"
        )
    return arr

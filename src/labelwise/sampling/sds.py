"""Sample discrimination based selection (Meng et al. 2021, Sec. III-B, Algorithm 1).

SDS picks inputs to label so that several models can be *ranked*, not so that one model's
accuracy can be estimated. Without labels it

1. takes the majority vote of the models as each input's estimated label (Step 2);
2. scores each model by how many inputs it agrees with the vote on, and puts the best
   ``top_fraction`` of models in the top group and the worst ``top_fraction`` in the
   bottom group (Step 3; the paper's 27% follows item analysis, Ebel 1954);
3. gives every input the discrimination (#top models agreeing with the vote - #bottom
   models agreeing) / |top| (Step 4);
4. draws the budget at random among the ``candidate_fraction`` (25%) of inputs with the
   highest discrimination (Step 5).

Rules at the edges (the paper leaves them open; where the authors' code decides, it says so):

- Vote ties go to the smallest class label, as ``scipy.stats.mode`` in the authors' code.
- Models are sorted by score descending, ties by model index (a stable sort): among models
  tied at a group boundary the lower index counts as better.
- Both groups have k = max(1, floor(top_fraction * n_models)) models. The authors' code takes
  ``rank[:int(0.27 n)]`` and ``rank[int(0.73 n):]``, so its groups can differ in size (6 and 7
  of 25 models) and its top group is empty below 4 models; the symmetric rule keeps the
  difference of two equal groups that the paper's Step 4 describes and reproduces Fig. 3
  (1 and 1 of 4 models). With ``top_fraction <= 0.5`` the groups never overlap.
- At least 2 models are needed (one model cannot be ranked against anything).
- Candidates and the random draw: see :mod:`labelwise.sampling._candidates` (ties at the
  cut in random order; a budget above the candidates takes them all, then the next-highest
  discrimination, with a :class:`~labelwise.DegenerateDataWarning`).
- A selection never repeats an input (the authors' rounds could).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .._chunks import check_rows, concat_rows, map_rows
from .._contract import Result
from .._params import Interval, Param, validate_params
from .._results import Selection
from .._validation import (
    RNGLike,
    check_budget,
    check_model_predictions,
    check_rng,
    too_few_models,
    warn_if_transposed,
)
from ..exceptions import LabelwiseError
from ._candidates import candidate_count, check_fraction, draw_candidates, extend_candidates
from ._common import check_same_population, generator_state

__all__ = ["SDSDiscrimination", "sds_discrimination", "sds_select"]

# Above this many (input, class) count cells the labels are first recoded to 0..K-1.
_MAX_COUNT_CELLS = 1 << 26


@dataclass(frozen=True, eq=False)
class SDSDiscrimination(Result):
    """Steps 2-4 of Algorithm 1 (arrays are read-only; per-input scores, so ``value`` is None).

    Attributes
    ----------
    votes:
        (N,) majority-vote label of every input (ties: the smallest label).
    model_scores:
        (n_models,) number of inputs on which each model agrees with the vote.
    top, bottom:
        Model indices of the top and bottom groups, each in rank order (best first).
    discrimination:
        (N,) (#top models agreeing with the vote - #bottom models agreeing) / |top|, in
        [-1, 1].
    """

    value_missing_reason: ClassVar[str] = (
        "per-input discrimination and model groups, not one measurement"
    )

    votes: NDArray[np.int64]
    model_scores: NDArray[np.int64]
    top: NDArray[np.int64]
    bottom: NDArray[np.int64]
    discrimination: NDArray[np.float64]

    @property
    def value(self) -> None:
        """None (see the class docstring)."""
        return None


#: SDS's tuning parameters (defaults: the signature of :func:`sds_select`).
SDS_PARAMS = {
    "top_fraction": Param(Interval(float, 0.0, 0.5, closed="right"), "SDS: top/bottom model share"),
    "candidate_fraction": Param(
        Interval(float, 0.0, 1.0, closed="right"), "SDS, RDG: candidate input share"
    ),
}


def sds_discrimination(predictions: ArrayLike, *, top_fraction: float = 0.27) -> SDSDiscrimination:
    """Majority votes, model scores, top/bottom groups and input discrimination (Steps 2-4).

    Parameters
    ----------
    predictions:
        (n_models, N) non-negative integer class labels, or (n_models, N, C) class
        probabilities or scores (argmax per input). At least 2 models.
    top_fraction:
        Share of models in each of the top and bottom groups, in (0, 0.5]; each group has
        max(1, floor(top_fraction * n_models)) models (module docstring).
    """
    arr = _check_predictions(predictions)
    frac = check_fraction(top_fraction, "top_fraction", high=0.5)
    n_models = arr.shape[0]
    # pass 1: votes and each model's agreement count; pass 2: discrimination of every input
    first = map_rows(_votes_block, arr, name="predictions", axis=1)
    votes = concat_rows([v for v, _ in first])
    scores = np.asarray(np.sum([s for _, s in first], axis=0, dtype=np.int64), dtype=np.int64)
    ranked = np.argsort(-scores, kind="stable").astype(np.int64)
    k = group_size(frac, n_models)
    top, bottom = ranked[:k], ranked[n_models - k :]
    diff = concat_rows(
        map_rows(functools.partial(_diff_block, top, bottom), arr, name="predictions", axis=1)
    )
    return SDSDiscrimination(
        votes=votes,
        model_scores=scores,
        top=top,
        bottom=bottom,
        discrimination=diff / k,
    )


def _check_predictions(predictions: ArrayLike) -> Any:
    """(n_models, N) labels or (n_models, N, C) probabilities, opened but not read.

    A list with one array per model is checked and stacked in memory
    (:func:`labelwise._validation.check_model_predictions`); out-of-core piles are passed as
    one array whose second axis is the inputs.
    """
    if isinstance(predictions, list | tuple):
        return check_model_predictions(predictions, min_models=2)[0]
    arr = check_rows(predictions, "predictions", ndim=(2, 3), min_rows=0)
    if 0 in arr.shape:
        raise LabelwiseError(
            f"predictions must hold at least one model and one input, got shape {arr.shape}"
        )
    if arr.shape[0] < 2:
        raise too_few_models("predictions", arr.shape[0], 2)
    warn_if_transposed(tuple(arr.shape))
    return arr


def _block_labels(block: NDArray[Any], start: int) -> NDArray[np.int64]:
    """(n_models, n) int64 labels of one block of inputs (argmax of probabilities)."""
    if block.ndim == 3:
        return block.argmax(axis=2).astype(np.int64)
    if block.dtype.kind == "f" and not np.all(block == np.round(block)):
        raise LabelwiseError(
            "predictions must be integer class labels when 2-D (pass (n_models, N, C) for "
            "probabilities)"
        )
    labels = block.astype(np.int64)
    if labels.size and labels.min() < 0:
        raise LabelwiseError(f"predictions must be non-negative class labels, got {labels.min()}")
    return labels


def _votes_block(block: NDArray[Any], start: int) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    labels = _block_labels(block, start)
    votes = majority_vote(labels)
    return votes, (labels == votes[None, :]).sum(axis=1, dtype=np.int64)


def _diff_block(
    top: NDArray[np.int64], bottom: NDArray[np.int64], block: NDArray[Any], start: int
) -> NDArray[np.int64]:
    labels = _block_labels(block, start)
    agree = labels == majority_vote(labels)[None, :]
    return np.asarray(
        agree[top].sum(axis=0, dtype=np.int64) - agree[bottom].sum(axis=0, dtype=np.int64)
    )


@validate_params(SDS_PARAMS)
def sds_select(
    predictions: ArrayLike,
    budget: int,
    *,
    top_fraction: float = 0.27,
    candidate_fraction: float = 0.25,
    rng: RNGLike = None,
) -> Selection:
    """Sample discrimination based selection (SDS), Meng et al. 2021, Algorithm 1.

    Picks ``budget`` inputs whose right/wrong pattern should separate good models from bad
    ones, to rank the models (see :func:`labelwise.rank_models`). The candidates are the
    ``ceil(candidate_fraction * N)`` inputs with the highest discrimination
    (:func:`sds_discrimination`), rows tied at the cut admitted at random; the selection is
    a uniformly random draw of ``budget`` distinct candidates, in selection order (every
    prefix is itself such a draw).

    If ``budget`` exceeds the candidates, all candidates are taken (in random order) and the
    rest are the inputs with the next-highest discrimination (ties at random); a
    :class:`~labelwise.DegenerateDataWarning` says so. If every input has the same
    discrimination (e.g. all models agree everywhere) the draw is a simple random sample,
    also with a warning.

    :func:`labelwise.extend` continues the same draw (selecting n and extending by m equals
    selecting n + m with the same seed); it needs the same predictions.

    Parameters
    ----------
    predictions:
        (n_models, N) class labels or (n_models, N, C) probabilities of at least 2 models
        on the same N unlabelled inputs.
    budget:
        Number of inputs to label, in [1, N].
    top_fraction:
        Share of models in each of the top and bottom groups (paper: 27%), in (0, 0.5].
    candidate_fraction:
        Share of inputs, by discrimination, to draw from (paper: 25%), in (0, 1].
    rng:
        Seed or ``numpy.random.Generator``.

    Returns
    -------
    Selection
        ``method="sds"``; ``params`` hold the two fractions; ``diagnostics`` the number of
        models, the top and bottom model indices and the candidate count.
    """
    disc = sds_discrimination(predictions, top_fraction=top_fraction)
    cand_frac = check_fraction(candidate_fraction, "candidate_fraction")
    n_rows = disc.votes.size
    budget = check_budget(budget, n_rows)
    gen = check_rng(rng)
    key_state = generator_state(gen)
    idx, n_cand = draw_candidates(
        disc.discrimination,
        budget,
        cand_frac,
        gen,
        what="discrimination",
        method="SDS",
    )
    return Selection(
        indices=idx,
        method="sds",
        population_size=n_rows,
        params={"top_fraction": float(top_fraction), "candidate_fraction": cand_frac},
        rng_state=generator_state(gen),
        diagnostics={**_diagnostics(disc, n_cand), "key_state": key_state},
    )


def majority_vote(
    labels: NDArray[np.int64], weights: NDArray[np.float64] | None = None
) -> NDArray[np.int64]:
    """Most frequent label in every column of (n_models, N) labels; ties: smallest label.

    ``weights``: model ``m`` counts ``weights[m]`` (the sums rounded to 9 decimals before
    they are compared, so that 1/3 + 1/3 + 1/3 ties with 1); None: once each.
    One ``np.bincount`` over (input, class) cells; labels are recoded to 0..K-1 first when
    the largest label would make that table too big.
    """
    n_models, n_rows = labels.shape
    classes: NDArray[np.int64] | None = None
    codes = labels
    if n_rows * (int(labels.max()) + 1) > _MAX_COUNT_CELLS:
        classes, inverse = np.unique(labels.ravel(), return_inverse=True)
        codes = inverse.reshape(labels.shape).astype(np.int64)
    n_classes = int(codes.max()) + 1
    cells = codes + n_classes * np.arange(n_rows, dtype=np.int64)[None, :]
    w = None if weights is None else np.broadcast_to(weights[:, None], (n_models, n_rows)).ravel()
    counts = np.bincount(cells.ravel(), weights=w, minlength=n_rows * n_classes)
    counts = counts.reshape(n_rows, n_classes)
    if weights is not None:
        counts = np.round(counts, 9)
    vote = counts.argmax(axis=1).astype(np.int64)  # argmax: first maximum = smallest label
    return vote if classes is None else classes[vote]


def group_size(top_fraction: float, n_models: int) -> int:
    """max(1, floor(top_fraction * n_models)) (rounded to 9 decimals first: 0.29 * 100 is 29)."""
    return max(1, math.floor(round(top_fraction * n_models, 9)))


def _diagnostics(disc: SDSDiscrimination, n_cand: int) -> dict[str, Any]:
    return {
        "n_models": int(disc.model_scores.size),
        "top_models": disc.top.tolist(),
        "bottom_models": disc.bottom.tolist(),
        "n_candidates": n_cand,
    }


def _sds_extend(selection: Selection, data: Any, additional: int, rng: RNGLike) -> Selection:
    if data is None:
        raise LabelwiseError("predictions must be given to extend an SDS selection")
    params = dict(selection.params)
    disc = sds_discrimination(data, top_fraction=params["top_fraction"])
    check_same_population(selection, disc.votes.size)
    old = selection.diagnostics
    if (
        old.get("n_models") != disc.model_scores.size
        or list(old.get("top_models", [])) != disc.top.tolist()
        or list(old.get("bottom_models", [])) != disc.bottom.tolist()
    ):
        raise LabelwiseError(
            f"predictions must come from the selection's {old.get('n_models')} models in the "
            f"same order (got {disc.model_scores.size} models, or other top/bottom groups)"
        )
    indices = extend_candidates(
        selection,
        disc.discrimination,
        additional,
        rng,
        what="discrimination",
        data_name="predictions",
        method="SDS",
    )
    n_cand = candidate_count(params["candidate_fraction"], selection.population_size)
    return Selection(
        indices=indices,
        method="sds",
        population_size=selection.population_size,
        params=params,
        rng_state=selection.rng_state,
        diagnostics={**selection.diagnostics, **_diagnostics(disc, n_cand)},
    )

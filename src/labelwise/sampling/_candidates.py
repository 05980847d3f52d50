"""Random draws among the inputs with the highest score: SDS Step 5 and RDG.

Both methods rank the pile by a score (SDS: discrimination; RDG: DeepGini impurity), take
the top ``candidate_fraction`` as candidates and draw the budget uniformly at random among
them (Meng et al. 2021, Algorithm 1 lines 35-38 and Sec. IV-B). The rules at the edges:

- The candidate set has ``ceil(candidate_fraction * N)`` rows (at least 1). Rows tied in
  score at the cut are admitted in a random order (one uniform key per row).
- The draw order among candidates is a second uniform key per row, so the selection is a
  uniformly random ordered draw without replacement and every prefix is one too.
- A budget above the candidate set takes every candidate (in draw order), then the rows
  with the next-highest scores (score descending, ties in the same random order as at the
  cut), and warns with :class:`DegenerateDataWarning`.

The whole sequence is a function of the scores and the generator state the selection
started from (stored in ``Selection.diagnostics["key_state"]``), so :func:`labelwise.extend`
replays it:
selecting n and extending by m equals selecting n + m with the same seed. Extending with
another ``rng`` keeps the candidate set (it belongs to the selection) and draws the
remaining candidates in a new random order.
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np
from numpy.typing import NDArray

from .._results import Selection
from .._validation import RNGLike, check_rng
from ..exceptions import DegenerateDataWarning, LabelwiseError, user_stacklevel
from ._common import check_additional, generator_for_extension, key_state_of


def candidate_count(fraction: float, n_rows: int) -> int:
    """``ceil(fraction * n_rows)``, at least 1 (rounded to 9 decimals first, so 0.07 * 100 is 7)."""
    return max(1, min(n_rows, math.ceil(round(fraction * n_rows, 9))))


def check_fraction(value: Any, name: str, *, high: float = 1.0) -> float:
    """A number in (0, high]."""
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise LabelwiseError(f"{name} must be a number in (0, {high:g}], got {value!r}") from None
    if isinstance(value, bool) or not (0.0 < v <= high):
        raise LabelwiseError(f"{name} must be in (0, {high:g}], got {value!r}")
    return v


def _sequence(
    scores: NDArray[np.float64],
    n_cand: int,
    tie_keys: NDArray[np.float64],
    draw_keys: NDArray[np.float64],
) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """(rows by score descending with random ties, full selection sequence)."""
    order = np.lexsort((tie_keys, -scores)).astype(np.int64)
    cand = order[:n_cand]
    cand = cand[np.argsort(draw_keys[cand], kind="stable")]
    return order, np.concatenate([cand, order[n_cand:]])


def _warn_fill(
    n_cand: int, total: int, n_rows: int, fraction: float, what: str, method: str
) -> None:
    warnings.warn(
        f"{total} rows asked for but {method} has only {n_cand} candidates (the top "
        f"{fraction * 100:.4g}% of {n_rows} rows by {what}): every candidate is taken, then the "
        f"{total - n_cand} rows with the next-highest {what} (ties in random order)",
        DegenerateDataWarning,
        stacklevel=user_stacklevel(),
    )


def draw_candidates(
    scores: NDArray[np.float64],
    budget: int,
    fraction: float,
    gen: np.random.Generator,
    *,
    what: str,
    method: str,
) -> tuple[NDArray[np.int64], int]:
    """The first ``budget`` rows of the selection sequence, and the candidate count."""
    n_rows = scores.size
    n_cand = candidate_count(fraction, n_rows)
    tie_keys = gen.random(n_rows)
    draw_keys = gen.random(n_rows)
    _, seq = _sequence(scores, n_cand, tie_keys, draw_keys)
    if n_cand < n_rows and np.ptp(scores) == 0:
        warnings.warn(
            f"every row has the same {what}, so the {method} candidates are a random "
            f"{n_cand} of the {n_rows} rows: the selection is a simple random sample",
            DegenerateDataWarning,
            stacklevel=user_stacklevel(),
        )
    if budget > n_cand:
        _warn_fill(n_cand, budget, n_rows, fraction, what, method)
    return seq[:budget], n_cand


def extend_candidates(
    selection: Selection,
    scores: NDArray[np.float64],
    additional: int,
    rng: RNGLike,
    *,
    what: str,
    data_name: str,
    method: str,
) -> NDArray[np.int64]:
    """``selection.indices`` followed by ``additional`` more rows of the same sequence."""
    additional = check_additional(selection, additional)
    key_state = key_state_of(selection)
    if key_state is None:
        raise LabelwiseError(
            f"selection has no rng_state, so its {method} candidate set cannot be rebuilt"
        )
    n_rows = scores.size
    fraction = check_fraction(selection.params.get("candidate_fraction"), "candidate_fraction")
    n_cand = candidate_count(fraction, n_rows)
    gen0 = generator_for_extension(key_state, None)
    tie_keys = gen0.random(n_rows)
    draw_keys = gen0.random(n_rows) if rng is None else check_rng(rng).random(n_rows)
    order, seq = _sequence(scores, n_cand, tie_keys, draw_keys)
    taken = np.asarray(selection.indices)
    allowed = order[: max(n_cand, taken.size)]
    if not np.isin(taken, allowed).all():
        raise LabelwiseError(
            f"{data_name} must be the ones the selection was made from (the selected rows "
            f"are not the {method} candidates they give)"
        )
    new = seq[~np.isin(seq, taken)][:additional]
    total = taken.size + additional
    if total > n_cand:
        _warn_fill(n_cand, total, n_rows, fraction, what, method)
    return np.concatenate([taken, new])

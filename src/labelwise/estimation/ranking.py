"""Rank several models by their accuracy on the labelled inputs (Meng et al. 2021, Sec. III-A).

Comparative testing labels a few inputs and ranks the models by Acc(M_i, C_r), their accuracy
on the labelled subset C_r, as an estimate of the ranking by accuracy on the whole pile C_t.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import stats

from .._results import Ranking, Selection
from .._validation import (
    RNGLike,
    check_classes_in_range,
    check_confidence,
    check_finite_array,
    check_int,
    check_model_names,
    check_model_predictions,
    check_rng,
)
from ..exceptions import LabelwiseError
from .estimators import wilson_interval

__all__ = ["rank_models"]


def rank_models(
    predictions: ArrayLike,
    labels: ArrayLike,
    *,
    rows: ArrayLike | Selection | None = None,
    model_names: Sequence[str] | None = None,
    confidence: float = 0.95,
    n_bootstrap: int = 2000,
    prob_best: bool = False,
    rng: RNGLike = None,
) -> Ranking:
    """Accuracy, interval, estimated rank and pairwise bootstrap confidence of every model.

    Parameters
    ----------
    predictions:
        (n_models, N) class labels or (n_models, N, C) class probabilities (argmax) of the
        models on the whole pile.
    labels:
        True class labels of the labelled inputs: of ``rows`` in that order when ``rows`` is
        given, else of all N inputs. Non-negative integers, below C when probabilities are
        given.
    rows:
        Pile rows that were labelled (e.g. ``selection.indices``, or the Selection itself),
        distinct and in [0, N).
    model_names:
        One name per model; default ``"M1"``, ``"M2"``, ...
    confidence:
        Level of the Wilson intervals.
    n_bootstrap:
        Bootstrap replicates for ``prob_better`` (and ``prob_best``).
    prob_best:
        Also estimate every model's probability of being the best (``Ranking.prob_best``):
        the share of paired bootstrap replicates of the labelled inputs in which it has the
        highest accuracy, a tie of k models counting 1/k each. Drawn after ``prob_better``,
        which it leaves unchanged; default off (None).
    rng:
        Seed or ``numpy.random.Generator`` for the bootstrap.

    Returns
    -------
    Ranking
        Ranks are 1 = best; tied models share the smallest rank of the tie and are ordered
        by model index in ``order``. ``prob_better[r]`` is the share of paired bootstrap
        replicates of the labelled inputs in which model ``order[r]`` has a higher accuracy
        than ``order[r + 1]``, ties counting half (so two models with identical right/wrong
        patterns get 0.5). Each replicate resamples the labelled inputs with replacement;
        since a pair's accuracy difference only depends on how many resampled inputs the
        first model gets right and the second wrong and vice versa, those two counts are drawn
        directly from their multinomial distribution, which is exactly the distribution that
        resampling rows gives, at a cost independent of the number of labels.

    Notes
    -----
    The intervals and ``prob_better`` treat the labelled inputs as a random sample from the
    population they are meant to describe. Inputs chosen by SDS, DDG or RDG are not a random
    sample of the pile (they are chosen to separate the models, or for being hard), so their
    accuracies are biased for the pile's accuracies: read them as evidence about the order
    of the models, not about the pile's accuracy values. For accuracy estimates use a
    probability sample (SRS, CSS) and :func:`labelwise.estimate`.
    """
    pred, n_classes = check_model_predictions(predictions, min_models=2)
    n_models, n_pop = pred.shape
    lab = _check_labels(labels, n_classes)
    if rows is None:
        if lab.size != n_pop:
            raise LabelwiseError(
                f"labels must cover all {n_pop} inputs when rows is not given, got "
                f"{lab.size} (pass rows=the labelled pile rows)"
            )
        sub = pred
    else:
        r = _check_rows(rows, n_pop)
        if r.size != lab.size:
            whole = (
                ": one per pile row? Pass labels[rows] (the labels of the rows, in their "
                "order), or leave rows out when every row is labelled"
                if lab.size == n_pop
                else ""
            )
            raise LabelwiseError(
                f"labels must have one entry per labelled row ({r.size} rows), got {lab.size}"
                f"{whole}"
            )
        sub = pred[:, r]
    names = _check_names(model_names, n_models)
    conf = check_confidence(confidence)
    n_boot = check_int(n_bootstrap, "n_bootstrap", minimum=1)
    gen = check_rng(rng)

    correct = sub == lab[None, :]
    n = lab.size
    n_correct = correct.sum(axis=1, dtype=np.int64)
    intervals = np.array([wilson_interval(float(c), n, conf) for c in n_correct])
    order = np.argsort(-n_correct, kind="stable").astype(np.int64)
    rank = stats.rankdata(-n_correct, method="min").astype(np.int64)
    prob = np.array(
        [_prob_better(correct[a], correct[b], n_boot, gen) for a, b in itertools.pairwise(order)],
        dtype=np.float64,
    )
    return Ranking(
        model_names=names,
        accuracy=n_correct / n,
        n_correct=n_correct,
        ci_low=intervals[:, 0],
        ci_high=intervals[:, 1],
        rank=rank,
        order=order,
        prob_better=prob,
        n_labelled=n,
        confidence=conf,
        n_bootstrap=n_boot,
        prob_best=_prob_best(correct, n_boot, gen) if prob_best else None,
    )


def _prob_best(
    correct: NDArray[np.bool_], n_boot: int, gen: np.random.Generator
) -> NDArray[np.float64]:
    """Paired bootstrap P(model has the highest accuracy), a k-way tie counting 1/k."""
    n_models, n = correct.shape
    out = np.zeros(n_models)
    chunk = max(1, 2_000_000 // max(n, 1))
    done = 0
    while done < n_boot:
        b = min(chunk, n_boot - done)
        counts = gen.multinomial(n, np.full(n, 1.0 / n), size=b)  # (b, n) resampling counts
        hits = counts @ correct.T.astype(np.int64)  # (b, M) correct answers per replicate
        top = hits == hits.max(axis=1, keepdims=True)
        out += (top / top.sum(axis=1, keepdims=True)).sum(axis=0)
        done += b
    return out / n_boot


def _prob_better(
    a: NDArray[np.bool_], b: NDArray[np.bool_], n_boot: int, gen: np.random.Generator
) -> float:
    """Paired bootstrap P(acc*(a) > acc*(b)), ties counting half."""
    n = a.size
    a_only = int(np.count_nonzero(a & ~b))
    b_only = int(np.count_nonzero(b & ~a))
    if a_only == 0 and b_only == 0:
        return 0.5
    pvals = [a_only / n, b_only / n, (n - a_only - b_only) / n]
    counts = gen.multinomial(n, pvals, size=n_boot)
    diff = counts[:, 0] - counts[:, 1]
    return float((np.count_nonzero(diff > 0) + 0.5 * np.count_nonzero(diff == 0)) / n_boot)


def _check_labels(labels: ArrayLike, n_classes: int | None) -> NDArray[np.int64]:
    lab = check_finite_array(labels, "labels", ndim=1)
    if lab.dtype.kind == "f" and not np.all(lab == np.round(lab)):
        raise LabelwiseError("labels must be integer class labels")
    lab = lab.astype(np.int64)
    if n_classes is not None:
        check_classes_in_range(
            lab, n_classes, "labels", why="the {n} columns of the predicted probabilities"
        )
        return lab
    bad = lab < 0
    if bad.any():
        raise LabelwiseError(
            f"labels must be classes >= 0, got {lab[bad][:10].tolist()} at positions "
            f"{np.flatnonzero(bad)[:10].tolist()}; are the labels of another model?"
        )
    return lab


def _check_rows(rows: Any, n_pop: int) -> NDArray[np.int64]:
    if isinstance(rows, Selection):
        if rows.population_size != n_pop:
            raise LabelwiseError(
                f"rows (a Selection of {rows.population_size} rows) must come from the "
                f"predictions' pile of {n_pop} inputs"
            )
        return np.asarray(rows.indices, dtype=np.int64)
    r = np.asarray(rows)
    if r.ndim != 1 or r.size == 0 or r.dtype.kind not in "iu":
        raise LabelwiseError(
            f"rows must be a non-empty 1-D array of integer row indices, got "
            f"shape {r.shape} dtype {r.dtype}"
        )
    r = r.astype(np.int64)
    if r.min() < 0 or r.max() >= n_pop:
        raise LabelwiseError(f"rows must be in [0, {n_pop}), got {r.min()}..{r.max()}")
    if np.unique(r).size != r.size:
        raise LabelwiseError("rows must be distinct (a labelled input counts once)")
    return r


def _check_names(model_names: Sequence[str] | None, n_models: int) -> tuple[str, ...]:
    if model_names is None:
        return tuple(f"M{i + 1}" for i in range(n_models))
    return check_model_names(model_names, n_models)

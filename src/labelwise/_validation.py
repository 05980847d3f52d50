"""Shared input checks: one place, one message style (``<argument> must ..., got ...``)."""

from __future__ import annotations

import difflib
import warnings
from collections.abc import Sequence
from math import prod
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from . import _chunks
from .exceptions import LabelwiseError, user_stacklevel

RNGLike = int | np.random.Generator | np.random.SeedSequence | None


def close_name(word: str, names: Sequence[str]) -> str | None:
    """The name in ``names`` that ``word`` most likely meant: the same name in another case
    ('ID' for 'id'), else the closest spelling in any case (:func:`difflib.get_close_matches`);
    None when none is close."""
    same = [n for n in names if n.casefold() == word.casefold()]
    if same:
        return same[0]
    folded = {n.casefold(): n for n in reversed(names)}
    close = difflib.get_close_matches(word.casefold(), list(folded), n=1)
    return folded[close[0]] if close else None


def did_you_mean(word: str, names: Sequence[str]) -> str:
    """`` (did you mean 'x'?)`` for the name :func:`close_name` finds for a mistyped ``word``
    (a flag's column, key or output name), or "" when none is close."""
    close = close_name(word, names)
    return f" (did you mean {close!r}?)" if close is not None else ""


def check_rng(rng: Any) -> np.random.Generator:
    """A ``numpy.random.Generator`` from a seed, a Generator or None (fresh entropy)."""
    if isinstance(rng, np.random.RandomState):
        raise LabelwiseError(
            "rng must be an int seed or numpy.random.Generator, got a legacy RandomState"
        )
    if isinstance(rng, bool) or not (
        rng is None
        or isinstance(rng, int | np.integer | np.random.Generator | np.random.SeedSequence)
    ):
        raise LabelwiseError(f"rng must be an int seed or numpy.random.Generator, got {rng!r}")
    if isinstance(rng, int | np.integer) and rng < 0:
        raise LabelwiseError(f"rng must be a non-negative int seed, got {rng}")
    return np.random.default_rng(rng)


def check_budget(
    budget: Any,
    population_size: int,
    *,
    name: str = "budget",
    minimum: int = 1,
    context: str | None = None,
) -> int:
    """An integer in ``[minimum, population_size]``; ``context`` replaces the error's
    "the population has N rows" (e.g. how many of them are left)."""
    if isinstance(budget, bool) or not isinstance(budget, int | np.integer):
        raise LabelwiseError(f"{name} must be an integer, got {budget!r}")
    budget = int(budget)
    if budget < minimum or budget > population_size:
        why = context or f"the population has {population_size} rows"
        raise LabelwiseError(
            f"{name} must be in [{minimum}, {population_size}] ({why}), got {budget}"
        )
    return budget


def check_model_names(
    names: Sequence[Any], n_models: int, name: str = "model_names"
) -> tuple[str, ...]:
    """One distinct, non-empty name per model (a ranking names its models by them)."""
    out = tuple(str(n) for n in names)
    if len(out) != n_models:
        raise LabelwiseError(f"{name} must name all {n_models} models, got {len(out)}")
    if not all(n.strip() for n in out) or len(set(out)) != len(out):
        raise LabelwiseError(
            f"{name} must be {n_models} distinct, non-empty names, got {', '.join(out)!r}"
        )
    return out


def check_int(value: Any, name: str, *, minimum: int = 1, maximum: int | None = None) -> int:
    """An integer (not a bool) in ``[minimum, maximum]`` (``maximum=None``: unbounded)."""
    if isinstance(value, bool) or not isinstance(value, int | np.integer):
        raise LabelwiseError(f"{name} must be an integer, got {value!r}")
    if value < minimum or (maximum is not None and value > maximum):
        bounds = f">= {minimum}" if maximum is None else f"in [{minimum}, {maximum}]"
        raise LabelwiseError(f"{name} must be {bounds}, got {value}")
    return int(value)


def check_batch_size(value: Any, name: str, *, left: int, total: int) -> int:
    """The size of a batch of new rows to propose: an integer in ``[1, left]``, ``left`` the
    rows of the ``total`` never proposed; a pile with none left says so."""
    v = check_int(value, name, minimum=1)
    if left == 0:
        raise LabelwiseError(
            f"every row of the pile ({total}) has been proposed: there is nothing left to propose"
        )
    if v > left:
        raise LabelwiseError(
            f"{name} must be at most the {left} rows never proposed (of {total}), got {v}"
        )
    return v


def check_probability(value: Any, name: str, *, open_low: bool = True) -> float:
    """A float in (0, 1) (or [0, 1) when ``open_low`` is False)."""
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise LabelwiseError(f"{name} must be a number in (0, 1), got {value!r}") from None
    low_ok = v > 0 if open_low else v >= 0
    if not (low_ok and v < 1):
        raise LabelwiseError(f"{name} must be in (0, 1), got {value!r}")
    return v


def _text_hint(arr: NDArray[Any]) -> str:
    """For an array of text (labels read from a CSV as strings, class names): a few of its
    values and how to make numbers of them; else nothing."""
    flat = arr.reshape(-1)[:3]
    if arr.dtype.kind not in "USO" or not all(isinstance(v, str | bytes) for v in flat):
        return ""
    shown = ", ".join(repr(v) for v in flat.tolist())
    return (
        f" (text: {shown}, ...); numbers written as text: np.asarray(x, dtype=int) or "
        "float; class names: their indices, e.g. [classes.index(name) for name in x]"
    )


def check_numeric_array(
    x: ArrayLike, name: str, *, ndim: int | Sequence[int], min_rows: int = 1
) -> NDArray[Any]:
    """A numeric array of the given rank (no copy for arrays, memmaps included)."""
    _chunks.check_not_container(x, name)
    try:
        arr = np.asarray(x)
    except (TypeError, ValueError) as exc:
        raise LabelwiseError(f"{name} must be a numeric array: {exc}") from None
    ndims = (ndim,) if isinstance(ndim, int) else tuple(ndim)
    if arr.ndim not in ndims:
        want = " or ".join(f"{d}-D" for d in ndims)
        raise LabelwiseError(f"{name} must be {want}, got shape {arr.shape}")
    if arr.dtype.kind not in "biuf":
        raise LabelwiseError(f"{name} must hold numbers, got dtype {arr.dtype}{_text_hint(arr)}")
    if arr.shape[0] < min_rows:
        raise LabelwiseError(f"{name} must have at least {min_rows} row(s), got {arr.shape[0]}")
    return arr


def check_finite_array(
    x: ArrayLike, name: str, *, ndim: int | Sequence[int], min_rows: int = 1
) -> NDArray[Any]:
    """A numeric array of the given rank with no NaN or infinity."""
    arr = check_numeric_array(x, name, ndim=ndim, min_rows=min_rows)
    if arr.dtype.kind == "f" and arr.size:
        raise_if_nonfinite(arr, name)
    return arr


def check_per_input_rows(
    x: ArrayLike, name: str, *, what: str = "arrays", min_rows: int = 1
) -> NDArray[Any]:
    """(N, ...) per-input values as a finite (N, c) array, each row flattened (a view where
    NumPy can); the rank error says ``(N, n_neurons) or (N, ...) per-input <what>``."""
    try:
        arr = np.asarray(x)
    except (TypeError, ValueError) as exc:
        raise LabelwiseError(f"{name} must be a numeric array: {exc}") from None
    if arr.ndim < 2:
        raise LabelwiseError(
            f"{name} must be (N, n_neurons) or (N, ...) per-input {what}, got shape {arr.shape}"
        )
    flat = arr.reshape(arr.shape[0], prod(arr.shape[1:]))
    return check_finite_array(flat, name, ndim=2, min_rows=min_rows)


#: Largest magnitude of a score, activation or feature: variances and distances square
#: them, and float64 overflows past about 1e154 (NaN or zero-width intervals, NaN
#: statistics, silent zeros), not an error.
MAX_MAGNITUDE = 1e150


def check_magnitude(
    arr: NDArray[Any],
    name: str,
    *,
    why: str = "distances square them",
    fix: str = "rescale the features",
    unit: str = "row",
) -> None:
    """An error naming the first ``unit`` whose values exceed :data:`MAX_MAGNITUDE`."""
    limit = MAX_MAGNITUDE
    if not arr.size or arr.dtype.kind not in "f" or float(np.finfo(arr.dtype).max) <= limit:
        return  # integers and float16/32 cannot exceed it
    big = np.abs(np.asarray(arr).reshape(arr.shape[0], -1)) > limit
    rows = np.flatnonzero(big.any(axis=1))
    if rows.size:
        raise LabelwiseError(
            f"{name} must be at most {limit:g} in magnitude ({why}), got a larger value at "
            f"{unit} {int(rows[0])}; {fix}"
        )


def raise_if_nonfinite(arr: NDArray[Any], name: str) -> None:
    """Raise naming the first row with NaN or infinity (one chunked pass, :mod:`._chunks`)."""
    _chunks.raise_if_nonfinite(arr, name)


def check_band(lo: Any, hi: Any) -> tuple[float, float]:
    """A confidence band ``[lo, hi]`` with ``0 <= lo < hi <= 1``: the one rule for every band.

    A band must have width: with ``lo == hi`` it would hold only inputs whose confidence is
    exactly that number (and generated boundary points could never land in it).
    """
    vals = []
    for name, value in (("lo", lo), ("hi", hi)):
        try:
            v = float(value)
        except (TypeError, ValueError):
            raise LabelwiseError(f"{name} must be a number in [0, 1], got {value!r}") from None
        if isinstance(value, bool) or not (0.0 <= v <= 1.0):  # NaN fails too
            raise LabelwiseError(f"{name} must be in [0, 1], got {value!r}")
        vals.append(v)
    if vals[0] >= vals[1]:
        raise LabelwiseError(f"lo must be below hi, got lo={vals[0]:g} and hi={vals[1]:g}")
    return vals[0], vals[1]


def check_confidence(confidence: Any) -> float:
    return check_probability(confidence, "confidence")


def check_scores(scores: ArrayLike, name: str = "scores") -> NDArray[np.float64]:
    """Per-sample scores H as a 1-D float64 array with at least one element, |H| <= 1e150."""
    y = np.asarray(check_finite_array(scores, name, ndim=1, min_rows=1), dtype=np.float64)
    check_score_magnitude(y, name)
    return y


def check_score_magnitude(scores: NDArray[Any], name: str = "scores") -> None:
    """Scores whose variance fits a float64 (:func:`check_magnitude`)."""
    check_magnitude(
        scores,
        name,
        why="their variance must fit a float64",
        fix="rescale the targets",
        unit="position",
    )


def is_binary(scores: NDArray[Any]) -> bool:
    """True when every score is 0 or 1 (a classification correctness indicator)."""
    return bool(np.all((scores == 0) | (scores == 1)))


def too_few_models(name: str, n_models: int, min_models: int) -> LabelwiseError:
    """The error for fewer models than a ranking or comparison needs."""
    return LabelwiseError(
        f"{name} must come from at least {min_models} models to rank or compare them, got "
        f"{n_models} (one model's accuracy: labelwise.estimate, `labelwise estimate`)"
    )


def check_model_predictions(
    predictions: Any, name: str = "predictions", *, min_models: int = 1
) -> tuple[NDArray[np.int64], int | None]:
    """Predicted class labels of several models on the same inputs.

    ``predictions`` is (n_models, N) non-negative integer class labels, or
    (n_models, N, C) class probabilities or scores (the argmax per input is the label; ties go
    to the lower class, as ``numpy.argmax``). A list with one entry per model is accepted;
    every model must cover the same inputs. Returns the (n_models, N) int64 labels and C
    (None when labels were given).
    """
    if isinstance(predictions, list | tuple) and len(predictions) > 1:
        try:
            shapes = [np.shape(p) for p in predictions]
        except ValueError:
            shapes = []
        if len(set(shapes)) > 1:
            raise LabelwiseError(
                f"{name} must give every model the same inputs, got per-model shapes "
                f"{sorted(set(shapes))}"
            )
    try:
        arr = np.asarray(predictions)
    except (TypeError, ValueError) as exc:
        raise LabelwiseError(
            f"{name} must be an (n_models, N) or (n_models, N, C) array with every model "
            f"predicting the same inputs: {exc}"
        ) from None
    if arr.ndim not in (2, 3):
        raise LabelwiseError(
            f"{name} must be (n_models, N) class labels or (n_models, N, C) probabilities, "
            f"got shape {arr.shape}"
        )
    if arr.size == 0:
        raise LabelwiseError(
            f"{name} must hold at least one model and one input, got shape {arr.shape}"
        )
    if arr.shape[0] < min_models:
        raise too_few_models(name, arr.shape[0], min_models)
    arr = check_finite_array(arr, name, ndim=(2, 3))
    if arr.ndim == 3:
        warn_if_transposed(arr.shape, name)  # once the input is known good: not before an error
        return arr.argmax(axis=2).astype(np.int64), int(arr.shape[2])
    if arr.dtype.kind == "f" and not np.all(arr == np.round(arr)):
        raise LabelwiseError(
            f"{name} must be integer class labels when 2-D (pass (n_models, N, C) for "
            "probabilities)"
        )
    labels = arr.astype(np.int64)
    if labels.min() < 0:
        raise LabelwiseError(f"{name} must be non-negative class labels, got {labels.min()}")
    warn_if_transposed(arr.shape, name)
    return labels, None


#: From this many models on, more models than inputs is read as a transposed table.
MANY_MODELS = 50


def warn_if_transposed(shape: tuple[int, ...], name: str = "predictions") -> None:
    """A warning when several models' predictions of ``shape`` (n_models, N[, C]) hold more
    models than inputs: an (N, n_models) table (a DataFrame, a list of per-input rows) was
    taken as N models of n_models inputs, and rows were proposed among the models without a
    word (the CLI refuses it, :func:`labelwise.cli._common.check_model_stack`). Only from
    :data:`MANY_MODELS` models on: hand-made cases (2-10 models of 1-5 inputs) are legal, and
    a table of that few inputs is no pile to label. A warning, not an error: a tiny pile may
    have fewer inputs than models."""
    if len(shape) in (2, 3) and shape[0] > shape[1] and shape[0] >= MANY_MODELS:
        axes = "(n_models, N)" if len(shape) == 2 else "(n_models, N, C)"
        warnings.warn(
            f"{name} hold {shape[0]} models of {shape[1]} inputs each, more models than "
            f"inputs; if their rows are inputs and their columns models (a table, a DataFrame), "
            f"give it as {axes}: np.swapaxes({name}, 0, 1)",
            UserWarning,
            stacklevel=user_stacklevel(),
        )


PROBS_TOLERANCE = 1e-3  # float32 softmax rows sum to 1 within ~1e-6; CSV round trips less


def check_probabilities(arr: Any, flag: str) -> None:
    """``arr`` must be (N, C) class probabilities or (N,) confidences.

    Each value in [0, 1] and, for (N, C), each row summing to 1 within
    :data:`PROBS_TOLERANCE`: logits and regression outputs are rejected with a hint.

    Read in one pass of row blocks (:func:`labelwise._chunks.iter_blocks`), so a memory-mapped
    .npy or a zarr array is checked without loading it whole.
    """
    a = arr if hasattr(arr, "shape") and hasattr(arr, "dtype") else np.asarray(arr)
    shape, dtype = _chunks.known_shape(a, flag), np.dtype(a.dtype)
    hint = (
        "; logits or regression outputs? Save softmax probabilities, e.g. with "
        "scipy.special.softmax(logits, axis=1) (CLI: 'labelwise capture --head softmax')"
    )
    if len(shape) not in (1, 2) or dtype.kind not in "fiub" or 0 in shape:
        raise LabelwiseError(
            f"{flag} must be (N, C) class probabilities or (N,) confidences, got shape "
            f"{shape} of {dtype}"
        )
    lo, hi, seen = np.inf, -np.inf, False
    worst, worst_row, worst_sum = -1.0, 0, 1.0
    for start, block in _chunks.iter_blocks(a):
        b = block.astype(np.float64, copy=False)
        ok = np.isfinite(b)
        if not ok.all():
            _chunks._check_block(b, start, 0, flag)  # names the first row holding it
        values = b[~np.isnan(b)]
        if values.size:
            seen = True
            lo, hi = min(lo, float(values.min())), max(hi, float(values.max()))
        if b.ndim == 2:
            sums = b.sum(axis=1)
            off = np.abs(sums - 1.0)
            i = int(np.argmax(off))
            if off[i] > worst:  # NaN rows never win; they fail the range check above
                worst, worst_row, worst_sum = float(off[i]), start + i, float(sums[i])
    if not seen:
        lo = hi = float("nan")
    if lo < 0.0 or hi > 1.0:
        raise LabelwiseError(
            f"{flag} must hold probabilities in [0, 1], got values in [{lo:.4g}, {hi:.4g}]{hint}"
        )
    if len(shape) == 2 and worst > PROBS_TOLERANCE:
        if shape[1] == 1:  # a binary model's P(class 1) alone
            hint = (
                "; one column of P(class 1) from a binary model? Give both classes: "
                "np.column_stack([1 - p, p])"
            )
        elif worst <= 0.05:  # probabilities, rounded (a CSV at 2-3 decimals): not logits
            hint = (
                "; rounded probabilities? Divide each row by its sum "
                "(p / p.sum(axis=1, keepdims=True)) and save them again"
            )
        raise LabelwiseError(
            f"{flag} must have rows summing to 1 (within {PROBS_TOLERANCE:g}), got row "
            f"{worst_row} summing to {worst_sum:.4g}{hint}"
        )


def check_classes_in_range(
    labels: NDArray[Any],
    n_classes: int,
    name: str,
    *,
    rows: ArrayLike | None = None,
    why: str | None = "the model has {n} output columns",
    hint: str = "are the labels of another model or numbered from 1?",
) -> None:
    """Every label a class in ``[0, n_classes)``; otherwise an error naming the first bad
    values and their rows (``rows[i]`` is the pile row of ``labels[i]``; without ``rows``,
    their positions in ``labels``), where the range comes from (``why``, ``{n}`` for
    ``n_classes``; None: not said) and what to check (``hint``). The one check and message
    of every "labels out of range" in labelwise:

    ``labels must be classes in [0, 3) (the model has 3 output columns), got [5, -1] at rows
    [12, 40]; are the labels of another model or numbered from 1?``
    """
    labels = np.asarray(labels)
    bad = (labels < 0) | (labels >= n_classes)
    if not bad.any():
        return
    if rows is None:
        where = f"positions {np.flatnonzero(bad)[:10].tolist()}"
    else:
        where = f"rows {np.asarray(rows)[bad][:10].tolist()}"
    about = "" if why is None else f" ({why.format(n=n_classes)})"
    raise LabelwiseError(
        f"{name} must be classes in [0, {n_classes}){about}, got {labels[bad][:10].tolist()} "
        f"at {where}; {hint}"
    )


def check_out_dir(out: Any, name: str) -> None:
    """An error if the output directory ``out`` is a file or lies under one: checked before a
    long run (training, a study) rather than when its results are written."""
    p = Path(out)
    for up in (p, *p.parents):
        if up.exists() and not up.is_dir():
            where = "" if up == p else f": {up}"
            raise LabelwiseError(f"{name} {p}{where} is a file, not a directory")

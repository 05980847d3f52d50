"""Guided generation of extra test points in feature space (Algorithm 1, Sec. 4.3 and 5.4).

The paper (dataset-characterization-coverage, Algorithm 1) perturbs existing test points in the
model's feature space so that new points lie either in a class's centroid region or near a
classification boundary, then measures the model's accuracy on the generated sets with the
class the point was generated from as the oracle (Table 2). Its formulas are lost; the precise
procedure implemented here is:

* **Centroid points.** A seed test point ``x`` of class ``s`` is moved toward its class centroid,
  ``x + t (c_s - x)`` with ``t ~ Uniform(centroid_t)`` (default ``[0.5, 1]``: at least halfway).
* **Boundary points.** A seed ``x`` of class ``s`` is moved toward the centroid of a target class
  ``k != s`` along ``x + t (c_k - x)``, ``t`` in ``[0, 1]``. The target is, by default, the
  head's second most likely class at ``x`` (the nearest boundary under the head;
  ``target="random"`` draws a uniformly random other class instead, to spread points over all
  class pairs). ``t`` is found by bisection on the predicate "the head predicts ``s`` with
  confidence above ``hi``", which holds at ``t = 0`` for a confidently classified seed and fails
  at ``t = 1``; bisection stops as soon as the head's confidence (its top class probability,
  the same quantity as in boundary conditioning) lies in the weak band ``[lo, hi]``, and after
  ``max_iter`` halvings takes the first point past the edge of the confident region. A point
  whose confidence is not in the band at the end is kept but flagged (``reached`` is False):
  the band can be missed when the seed is not confidently classified as ``s``, when the target
  centroid is still confidently ``s``, or when the head jumps straight from confident ``s`` to
  another class (e.g. a narrow band under a steep head).

Source classes are spread evenly over the classes present in ``labels`` (counts differ by at
most one; which classes get the extra point is random), and seeds are drawn uniformly, with
replacement, among the test points of each class.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .._contract import Result, _readonly
from .._validation import check_band, check_finite_array, check_int, check_rng
from ..exceptions import DegenerateDataWarning, LabelwiseError, user_stacklevel

__all__ = [
    "GeneratedSet",
    "GenerationTable",
    "LinearHead",
    "generate",
    "generation_table",
    "linear_head",
]

Head = Callable[[NDArray[np.float64]], ArrayLike]
DEFAULT_SPLITS: tuple[tuple[int, int], ...] = ((0, 100), (30, 70), (50, 50), (70, 30), (100, 0))
DEFAULT_SIZES: tuple[int, ...] = (100, 300, 700, 1000)
_PROB_TOL = 1e-6


# --------------------------------------------------------------------------- heads


@dataclass(frozen=True, eq=False)
class LinearHead:
    """A softmax linear layer: ``softmax(features @ W + b)``, W (d, C), b (C,)."""

    weights: NDArray[np.float64]
    bias: NDArray[np.float64]

    def __call__(self, features: ArrayLike) -> NDArray[np.float64]:
        x = np.asarray(features, dtype=np.float64)
        if x.ndim != 2 or x.shape[1] != self.weights.shape[0]:
            raise LabelwiseError(
                f"features must be 2-D with {self.weights.shape[0]} columns, got shape {x.shape}"
            )
        z = x @ self.weights + self.bias
        z -= z.max(axis=1, keepdims=True)
        e = np.exp(z)
        out: NDArray[np.float64] = e / e.sum(axis=1, keepdims=True)
        return out

    @property
    def n_classes(self) -> int:
        return int(self.weights.shape[1])


def linear_head(weights: ArrayLike, bias: ArrayLike) -> LinearHead:
    """A softmax linear head from weights W (d, C) and bias b (C,).

    For scikit-learn's ``LogisticRegression`` (multinomial, C >= 3) use
    ``linear_head(clf.coef_.T, clf.intercept_)``.
    """
    w = np.asarray(check_finite_array(weights, "weights", ndim=2), dtype=np.float64)
    b = np.asarray(check_finite_array(np.ravel(bias), "bias", ndim=1), dtype=np.float64)
    if w.shape[1] < 2:
        raise LabelwiseError(f"weights must have at least 2 columns (classes), got {w.shape[1]}")
    if b.shape[0] != w.shape[1]:
        raise LabelwiseError(
            f"bias must have one entry per class ({w.shape[1]}), got {b.shape[0]} entries"
        )
    return LinearHead(_readonly(w), _readonly(b))


# --------------------------------------------------------------------------- results


@dataclass(frozen=True, eq=False)
class GeneratedSet(Result):
    """Generated test points and the head's verdict on them.

    Attributes
    ----------
    points:
        (n, d) generated feature vectors; the first ``n_centroid`` rows are centroid points,
        the rest boundary points.
    source:
        Class each point was generated from, the oracle label (int64, (n,)).
    kind:
        ``"centroid"`` or ``"boundary"`` per point.
    target:
        Class whose centroid a boundary point was moved toward; -1 for centroid points.
    seed_index:
        Row of ``features`` each point was perturbed from.
    t:
        Interpolation coefficient: ``point = x + t (centroid - x)``.
    reached:
        True for a boundary point whose confidence lies in ``[lo, hi]``; False for boundary
        points that missed the band and for every centroid point (not applicable).
    predictions, confidence:
        The head's predicted class and top class probability per point.
    accuracy, accuracy_centroid, accuracy_boundary:
        Share of points predicted as their source class, overall and per kind (None when that
        kind has no points); ``accuracy`` is the headline ``value`` (higher is better).
    params:
        The generation parameters, as passed.
    """

    higher_is_better: ClassVar[bool | None] = True

    points: NDArray[np.float64]
    source: NDArray[np.int64]
    kind: NDArray[np.str_]
    target: NDArray[np.int64]
    seed_index: NDArray[np.int64]
    t: NDArray[np.float64]
    reached: NDArray[np.bool_]
    predictions: NDArray[np.int64]
    confidence: NDArray[np.float64]
    accuracy: float
    accuracy_centroid: float | None
    accuracy_boundary: float | None
    params: dict[str, Any] = field(default_factory=dict)

    def __len__(self) -> int:
        return int(self.points.shape[0])

    @property
    def value(self) -> float:
        """``accuracy``."""
        return self.accuracy

    @property
    def n_centroid(self) -> int:
        return int(np.count_nonzero(self.kind == "centroid"))

    @property
    def n_boundary(self) -> int:
        return int(np.count_nonzero(self.kind == "boundary"))

    @property
    def n_unreached(self) -> int:
        """Boundary points whose confidence is not in the band."""
        return self.n_boundary - int(np.count_nonzero(self.reached))


@dataclass(frozen=True, eq=False)
class GenerationTable(Result):
    """The head's accuracy on generated sets, laid out like the paper's Table 2.

    ``accuracy[i, j]`` is the mean accuracy in percent (over ``repeats`` generated sets) for
    size ``sizes[i]`` and centroid-boundary split ``splits[j]``; ``std`` is its standard
    deviation over the repeats (0 when ``repeats == 1``); ``n_unreached[i, j]`` counts boundary
    points that missed the band, summed over repeats. ``test_accuracy`` is the head's accuracy
    in percent on the original test features (Table 2's "Accuracy" column).

    ``value`` is None: the table has one accuracy per size and split.
    """

    value_missing_reason: ClassVar[str] = "one accuracy per size and split (see accuracy)"

    sizes: tuple[int, ...]
    splits: tuple[tuple[int, int], ...]
    accuracy: NDArray[np.float64]
    std: NDArray[np.float64]
    n_unreached: NDArray[np.int64]
    test_accuracy: float
    repeats: int
    lo: float
    hi: float

    @property
    def value(self) -> None:
        """None (see the class docstring)."""
        return None

    def format_table(self, *, dataset: str | None = None, model: str | None = None) -> str:
        """Rows per size: [Dataset] [Model] Accuracy #samples, then one column per split."""
        lead = [h for h, v in (("Dataset", dataset), ("Model", model)) if v is not None]
        header = [*lead, "Accuracy", "#samples", *(f"{c}-{b} split" for c, b in self.splits)]
        rows = []
        for i, size in enumerate(self.sizes):
            first = [v for v in (dataset, model) if v is not None] if i == 0 else [""] * len(lead)
            rows.append(
                [
                    *first,
                    f"{self.test_accuracy:.2f}",
                    str(size),
                    *(f"{a:.2f}" for a in self.accuracy[i]),
                ]
            )
        widths = [max(len(r[k]) for r in [header, *rows]) for k in range(len(header))]
        lines = ["  ".join(s.rjust(w) for s, w in zip(r, widths, strict=True)) for r in rows]
        lines.insert(0, "  ".join(s.rjust(w) for s, w in zip(header, widths, strict=True)))
        notes = [
            f"generated-set accuracy (%) with the source class as oracle; band [{self.lo:g}, "
            f"{self.hi:g}]; mean of {self.repeats} set(s) per cell"
        ]
        missed = int(self.n_unreached.sum())
        if missed:
            notes.append(f"{missed} boundary point(s) did not reach the band (kept, flagged)")
        return "\n".join([*lines, *notes])

    def __str__(self) -> str:
        return self.format_table()


# --------------------------------------------------------------------------- checks


_check_band = check_band  # one rule for every band: 0 <= lo < hi <= 1


def _check_share(value: Any) -> float:
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise LabelwiseError(f"centroid_share must be a number in [0, 1], got {value!r}") from None
    if not 0.0 <= v <= 1.0:
        raise LabelwiseError(f"centroid_share must be in [0, 1], got {value!r}")
    return v


def _check_data(
    features: ArrayLike, labels: ArrayLike, centroids: ArrayLike
) -> tuple[NDArray[np.float64], NDArray[np.int64], NDArray[np.float64]]:
    x = np.asarray(check_finite_array(features, "features", ndim=2), dtype=np.float64)
    y_raw = np.asarray(labels)
    if y_raw.ndim != 1 or y_raw.dtype.kind not in "iu":
        raise LabelwiseError(
            f"labels must be a 1-D integer array, got shape {y_raw.shape} dtype {y_raw.dtype}"
        )
    if y_raw.shape[0] != x.shape[0]:
        raise LabelwiseError(
            f"features and labels must have the same length, got {x.shape[0]} and {y_raw.shape[0]}"
        )
    c = np.asarray(check_finite_array(centroids, "centroids", ndim=2), dtype=np.float64)
    if c.shape[1] != x.shape[1]:
        raise LabelwiseError(
            f"centroids must have {x.shape[1]} columns like features, got shape {c.shape}"
        )
    y = y_raw.astype(np.int64)
    bad = y[(y < 0) | (y >= c.shape[0])]
    if bad.size:
        raise LabelwiseError(
            f"labels contain class {int(bad[0])}, which has no centroid (centroids has "
            f"{c.shape[0]} rows, one per class 0..{c.shape[0] - 1}; was the class absent from "
            "the training features?)"
        )
    return x, y, c


def _probs(head: Head, x: NDArray[np.float64], n_classes: int) -> NDArray[np.float64]:
    try:
        p = np.asarray(head(x), dtype=np.float64)
    except LabelwiseError:
        raise
    except Exception as exc:  # the caller's head: report what went wrong, where
        raise LabelwiseError(f"head failed on features of shape {x.shape}: {exc}") from exc
    if p.shape != (x.shape[0], n_classes):
        raise LabelwiseError(
            f"head must return class probabilities of shape {(x.shape[0], n_classes)} "
            f"(one column per centroid), got {p.shape}"
        )
    if not np.all(np.isfinite(p)) or p.min() < -_PROB_TOL or p.max() > 1 + _PROB_TOL:
        raise LabelwiseError("head must return probabilities in [0, 1] (apply softmax)")
    return p


def _split_counts(n: int, classes: NDArray[np.int64], rng: np.random.Generator) -> NDArray[Any]:
    """Source class per point: classes spread evenly, the remainder to random classes."""
    reps, extra = divmod(n, classes.size)
    src = np.concatenate([np.repeat(classes, reps), rng.choice(classes, extra, replace=False)])
    return np.sort(src)


# --------------------------------------------------------------------------- core


def generate(
    features: ArrayLike,
    labels: ArrayLike,
    centroids: ArrayLike,
    head: Head,
    *,
    n: int,
    centroid_share: float,
    lo: float,
    hi: float,
    centroid_t: tuple[float, float] = (0.5, 1.0),
    target: Literal["second", "random"] = "second",
    max_iter: int = 50,
    rng: Any = None,
) -> GeneratedSet:
    """Guided generation of ``n`` test points in feature space (Algorithm 1, Sec. 4.3).

    Exactly ``round(n * centroid_share)`` centroid points (Python's ``round``) and the rest
    boundary points; see the module docstring for the procedure.

    Parameters
    ----------
    features, labels:
        Test features (N, d) in the head's input space and their integer classes (N,).
    centroids:
        (C, d) class centroids from the training features; row k is class k.
    head:
        Callable mapping (m, d) features to (m, C) class probabilities, e.g.
        :func:`linear_head`. A torch head can be wrapped by the caller.
    n:
        Number of points to generate (>= 1).
    centroid_share:
        Share of centroid points, in [0, 1].
    lo, hi:
        The weak-confidence band for boundary points, ``0 <= lo < hi <= 1`` and ``hi >= 1/C``.
    centroid_t:
        Range of the interpolation coefficient toward the class centroid, within [0, 1].
    target:
        ``"second"`` (the head's second most likely class at the seed) or ``"random"``.
    max_iter:
        Cap on bisection halvings per boundary point.
    rng:
        Seed or ``numpy.random.Generator``.
    """
    x, y, c = _check_data(features, labels, centroids)
    n = check_int(n, "n", minimum=1)
    share = _check_share(centroid_share)
    lo, hi = _check_band(lo, hi)
    max_iter = check_int(max_iter, "max_iter", minimum=1)
    try:
        t_min, t_max = (float(v) for v in centroid_t)
    except (TypeError, ValueError):
        raise LabelwiseError(f"centroid_t must be a pair of numbers, got {centroid_t!r}") from None
    if not 0.0 <= t_min <= t_max <= 1.0:
        raise LabelwiseError(f"centroid_t must satisfy 0 <= low <= high <= 1, got {centroid_t!r}")
    if target not in ("second", "random"):
        raise LabelwiseError(f"target must be 'second' or 'random', got {target!r}")
    if not callable(head):
        raise LabelwiseError(f"head must be callable (features -> probabilities), got {head!r}")
    gen = check_rng(rng)
    n_classes = c.shape[0]
    n_centroid = round(n * share)
    n_boundary = n - n_centroid
    if n_boundary and n_classes < 2:
        raise LabelwiseError("boundary points need at least 2 classes (centroids has 1 row)")
    if n_boundary and hi < 1.0 / n_classes:
        raise LabelwiseError(
            f"hi must be >= 1/C = {1.0 / n_classes:.4g} (the top probability never falls "
            f"below it), got {hi:g}"
        )

    classes = np.unique(y)
    by_class = {int(k): np.flatnonzero(y == k) for k in classes}

    def draw(m: int) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
        if m == 0:
            return np.empty(0, np.int64), np.empty(0, np.int64)
        src = _split_counts(m, classes, gen).astype(np.int64)
        seeds = np.empty(m, np.int64)
        for k in np.unique(src):
            pos = np.flatnonzero(src == k)
            seeds[pos] = gen.choice(by_class[int(k)], pos.size, replace=True)
        return src, seeds

    # centroid points
    src_c, seed_c = draw(n_centroid)
    t_c = gen.uniform(t_min, t_max, n_centroid)
    pts_c = x[seed_c] + t_c[:, None] * (c[src_c] - x[seed_c])

    # boundary points
    src_b, seed_b = draw(n_boundary)
    x_b = x[seed_b]
    tgt_b = np.empty(n_boundary, np.int64)
    if n_boundary:
        p0 = _probs(head, x_b, n_classes)
        if target == "second":
            masked = p0.copy()
            masked[np.arange(n_boundary), src_b] = -np.inf
            tgt_b[:] = masked.argmax(axis=1)
        else:
            offset = gen.integers(1, n_classes, n_boundary)  # uniform over the other classes
            tgt_b[:] = (src_b + offset) % n_classes
    t_b = _bisect(head, x_b, c[tgt_b], src_b, n_classes, lo, hi, max_iter)
    pts_b = x_b + t_b[:, None] * (c[tgt_b] - x_b)

    points = np.concatenate([pts_c, pts_b]).reshape(n, x.shape[1])
    source = np.concatenate([src_c, src_b])
    probs = _probs(head, points, n_classes)
    pred = probs.argmax(axis=1).astype(np.int64)
    conf = probs.max(axis=1)
    is_b = np.arange(n) >= n_centroid
    reached = is_b & (conf >= lo - _PROB_TOL) & (conf <= hi + _PROB_TOL)
    if n_boundary and not reached.any():
        warnings.warn(
            f"none of the {n_boundary} boundary points reached the confidence band "
            f"[{lo:g}, {hi:g}]; they are kept and flagged (reached=False)",
            DegenerateDataWarning,
            stacklevel=user_stacklevel(),
        )
    correct = pred == source

    def acc(mask: NDArray[np.bool_]) -> float | None:
        return float(correct[mask].mean()) if mask.any() else None

    return GeneratedSet(
        points=_readonly(points, np.float64),
        source=_readonly(source, np.int64),
        kind=_readonly(np.where(is_b, "boundary", "centroid")),
        target=_readonly(np.concatenate([np.full(n_centroid, -1), tgt_b]), np.int64),
        seed_index=_readonly(np.concatenate([seed_c, seed_b]), np.int64),
        t=_readonly(np.concatenate([t_c, t_b]), np.float64),
        reached=_readonly(reached, np.bool_),
        predictions=_readonly(pred, np.int64),
        confidence=_readonly(conf, np.float64),
        accuracy=float(correct.mean()),
        accuracy_centroid=acc(~is_b),
        accuracy_boundary=acc(is_b),
        params={
            "n": n,
            "centroid_share": share,
            "lo": lo,
            "hi": hi,
            "centroid_t": (t_min, t_max),
            "target": target,
            "max_iter": max_iter,
        },
    )


def _bisect(
    head: Head,
    x: NDArray[np.float64],
    goal: NDArray[np.float64],
    src: NDArray[np.int64],
    n_classes: int,
    lo: float,
    hi: float,
    max_iter: int,
) -> NDArray[np.float64]:
    """Per row, t in [0, 1] with the head's confidence at x + t (goal - x) in [lo, hi].

    Vectorised bisection on "the head predicts src with confidence > hi" (one head call per
    halving for all rows); returns t for rows that reach the band, otherwise the end point
    described in the module docstring.
    """
    m = x.shape[0]
    if m == 0:
        return np.empty(0, np.float64)
    rows = np.arange(m)

    def evaluate(t: NDArray[np.float64], idx: NDArray[np.intp]) -> tuple[NDArray[Any], ...]:
        p = _probs(head, x[idx] + t[:, None] * (goal[idx] - x[idx]), n_classes)
        conf = p.max(axis=1)
        in_band = (conf >= lo) & (conf <= hi)
        confident_src = (p.argmax(axis=1) == src[idx]) & (conf > hi)
        return in_band, confident_src

    t_out = np.zeros(m)
    band0, conf0 = evaluate(np.zeros(m), rows)
    band1, conf1 = evaluate(np.ones(m), rows)
    done = band0.copy()
    # no bracket: seed not confidently src (stay at t=0) or target centroid still src (t=1)
    t_out[~done & ~conf0 & band1] = 1.0
    t_out[~done & conf0 & conf1] = 1.0
    active = np.flatnonzero(~done & conf0 & ~conf1)
    a = np.zeros(active.size)
    b = np.ones(active.size)
    for _ in range(max_iter):
        if active.size == 0:
            break
        mid = 0.5 * (a + b)
        in_band, confident = evaluate(mid, active)
        t_out[active[in_band]] = mid[in_band]
        a = np.where(confident, mid, a)
        b = np.where(confident, b, mid)
        keep = ~in_band
        active, a, b = active[keep], a[keep], b[keep]
    t_out[active] = b  # first point past the confident region
    return t_out


# --------------------------------------------------------------------------- table


def generation_table(
    features: ArrayLike,
    labels: ArrayLike,
    centroids: ArrayLike,
    head: Head,
    *,
    splits: Sequence[tuple[int, int]] = DEFAULT_SPLITS,
    sizes: Sequence[int] = DEFAULT_SIZES,
    lo: float,
    hi: float,
    repeats: int = 1,
    centroid_t: tuple[float, float] = (0.5, 1.0),
    target: Literal["second", "random"] = "second",
    max_iter: int = 50,
    rng: Any = None,
) -> GenerationTable:
    """The head's accuracy on generated sets, per size and centroid-boundary split (Table 2).

    ``splits`` are (centroid %, boundary %) pairs summing to 100, e.g. ``(30, 70)``; each cell
    is the mean accuracy (%) over ``repeats`` independently generated sets (the paper used 20)
    with the source class as the oracle. Sets are generated by :func:`generate` with one shared
    random stream, so a seed reproduces the whole table.
    """
    x, y, c = _check_data(features, labels, centroids)
    lo, hi = _check_band(lo, hi)
    repeats = check_int(repeats, "repeats", minimum=1)
    size_t = tuple(check_int(s, "sizes entry", minimum=1) for s in sizes)
    if not size_t:
        raise LabelwiseError("sizes must not be empty")
    split_t: list[tuple[int, int]] = []
    for sp in splits:
        pair = tuple(sp) if isinstance(sp, Sequence) else ()
        if len(pair) != 2:
            raise LabelwiseError(f"splits must be (centroid %, boundary %) pairs, got {sp!r}")
        cs = check_int(pair[0], "split centroid %", minimum=0, maximum=100)
        bs = check_int(pair[1], "split boundary %", minimum=0, maximum=100)
        if cs + bs != 100:
            raise LabelwiseError(f"each split must sum to 100, got {sp!r}")
        split_t.append((cs, bs))
    if not split_t:
        raise LabelwiseError("splits must not be empty")
    gen = check_rng(rng)
    test_acc = 100.0 * float(np.mean(_probs(head, x, c.shape[0]).argmax(axis=1) == y))

    acc = np.empty((len(size_t), len(split_t), repeats))
    missed = np.zeros((len(size_t), len(split_t)), np.int64)
    for i, size in enumerate(size_t):
        for j, (cs, _) in enumerate(split_t):
            for r in range(repeats):
                res = generate(
                    x,
                    y,
                    c,
                    head,
                    n=size,
                    centroid_share=cs / 100.0,
                    lo=lo,
                    hi=hi,
                    centroid_t=centroid_t,
                    target=target,
                    max_iter=max_iter,
                    rng=gen,
                )
                acc[i, j, r] = 100.0 * res.accuracy
                missed[i, j] += res.n_unreached
    return GenerationTable(
        sizes=size_t,
        splits=tuple(split_t),
        accuracy=_readonly(acc.mean(axis=2), np.float64),
        std=_readonly(acc.std(axis=2, ddof=1) if repeats > 1 else np.zeros(acc.shape[:2])),
        n_unreached=_readonly(missed, np.int64),
        test_accuracy=test_acc,
        repeats=repeats,
        lo=lo,
        hi=hi,
    )

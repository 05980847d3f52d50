"""A labelling campaign: propose rows to label batch by batch, record scores, estimate.

See :class:`Campaign`.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import math
import os
import warnings
import zipfile
from collections.abc import Mapping
from statistics import NormalDist
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import stats

from .._chunks import check_rows, take_rows
from .._json import jsonable
from .._results import Estimate
from .._validation import (
    RNGLike,
    check_batch_size,
    check_int,
    check_probabilities,
    check_probability,
    check_rng,
    check_score_magnitude,
)
from ..estimation._bootstrap import score_lower_miss
from ..estimation.estimators import (
    SCORE_LABELS,
    exact_estimate,
    looks_like_class_labels,
    srs_estimate,
)
from ..exceptions import DegenerateDataWarning, LabelwiseError, user_stacklevel
from ..io import atomic_write, write_json
from ._anytime import StratifiedBettingCS
from ._design import allocate, build_strata, prior_error
from ._estimators import (
    DesignEstimate,
    _wilson,
    active_estimate,
    bootstrap_t_interval,
    fit_surrogate,
    grouped_wilson,
    kish_size,
    knn_cross_fit,
    knn_predict,
    srs_worth,
    stratified_difference,
    surrogate_min_labels,
    t_interval,
)
from ._features import (
    ProbabilitySummary,
    outlyingness,
    probability_summary,
    surrogate_features,
)

__all__ = ["METHODS", "Campaign"]

METHODS = ("auto", "srs", "stratified", "proportional", "model-assisted", "active")
FORMAT = 1
_N_FOLDS = 5
_ACTIVE_UNIFORM = 0.5  # share of uniform sampling in the active design
# below this mass of q on the unproposed rows, the active design draws the expected number of
# draws per call (above it: one call per shortfall, as always: the same draws for the same seed)
_ACTIVE_CHUNKED_BELOW = 0.25
# prior degrees of freedom of the shrunk stratum variances. 4 -> 12 (with the Jeffreys floor
# scale 0.5 -> 0.1, _estimators._JEFFREYS_SCALE), 200 repetitions, sizes 35..170: coverage min
# on digits-patch 0.895 -> 0.920 (a confident class stratum whose 4-5 labels were all correct
# no longer claims almost no variance), w on digits-none 0.89 -> 0.78, MNIST-1D 0.78 -> 0.76
_NU0 = 12.0
# share of each batch allocated proportionally (Hesterberg's defensive mixture: variance at most
# 2x proportional allocation's). 0.25 -> 0.5 in the study: digits-patch E 0.89 -> 0.77 and
# coverage min 0.84 -> 0.91 (a confident stratum the model under-rates is no longer starved)
_DEFENSIVE = 0.5
# errors a group's labels must show before its strata's Neyman S_h lose the Laplace floor
# (_neyman_sds). Always kept before: study (500 repetitions) mutants E 0.18 / 0.23 / 0.22 ->
# 0.15 / 0.19 / 0.17, w 0.44-0.49 -> 0.39-0.43, clean and shifted digits and MNIST-1D
# unchanged; 3 raised clean digits' w 0.957 -> 0.964, 1 MNIST-1D's E 0.63 -> 0.67 (100 reps)
_LAPLACE_UNTIL_ERRORS = 6
# labels every stratum gets before Neyman's allocation (allocate's floor)
_FLOOR = 2
# anytime: the asymptotic sequence is at least the fixed-n interval at level 1 - alpha / this
_CS_GUARD = 20.0
# the degenerate-data warning of an interval of zero width (all labelled scores equal)
_ZERO_WIDTH = "the interval has zero width"
#: Below this many labels the asymptotic sequence is hulled with the exact one (``estimate``).
_EXACT_BELOW = 20
# active: errors seen among the draws up to which the lower limit allows for unseen ones
_ACTIVE_FEW_ERRORS = 2
#: ``"auto"`` for regression: the cross-validated R² of the surrogate on the recorded labels
#: from which the estimate is the difference estimator (:meth:`Campaign._assisted_design`)
ASSIST_R2 = 0.1
# ... once every cross-fitting fold's training set holds this many labels per coefficient
_ASSIST_PER_COEF = 10
# ... and the surrogate is the ridge or, when its cross-validated R² is higher, the mean score of
# the _ASSIST_KNN nearest labelled rows in the same features (rg34: on a pile whose error the
# features predict nonlinearly, 300 campaigns, E 0.815 -> 0.736); its pile mean is taken over
# at most _KNN_PILE_ROWS rows (a fixed uniform subsample on a larger pile)
_ASSIST_KNN = 10
_KNN_PILE_ROWS = 20000


class Campaign:
    """Which rows to label next, and what the labels so far say about the whole pile.

    Parameters
    ----------
    activations:
        (N, d) activations of the model's last hidden layer on the unlabeled pile.
    probabilities:
        (N, C) class probabilities, or None for a regression model (score = 1 - squared error).
    method:
        ``"auto"`` (default), ``"srs"``, ``"stratified"`` (Neyman allocation, plain stratified
        estimator), ``"proportional"`` (proportional allocation, plain stratified estimator),
        ``"model-assisted"`` (Neyman allocation, stratified difference estimator with a
        cross-fitted, power-tuned surrogate) or ``"active"`` (active sampling mixed with
        uniform, AIPW estimator).

        ``"auto"`` resolves to ``"model-assisted"`` with one stratum per predicted class (plus
        3 low-confidence strata) and a defensive half of every batch allocated proportionally.
        Its power tuning falls back to the plain stratified estimator when the surrogate is
        useless, and the surrogate is fitted only from about 57 labels on (5 per coefficient
        in every cross-fitting fold, :func:`._estimators.fit_surrogate`). For regression
        ``"auto"`` proposes as ``"srs"`` does, row for row (stratifying on activation
        outlyingness measured no gain over SRS on the study's regression contexts, see
        :func:`_resolve`), and estimates as SRS does until the labels show that the
        activations predict the score: from 10 labels per surrogate coefficient in every
        cross-fitting fold (about 75), once the cross-fitted surrogate's (a ridge, or the
        10 nearest labelled rows' mean score where that cross-validates better) R² on
        the recorded labels reaches ``ASSIST_R2`` (0.1), the estimate is the difference
        estimator on the same rows (:meth:`_assisted_design`; its notes say so).
    confidence:
        Level of the intervals from :meth:`estimate`.
    n_strata, min_stratum_size:
        Size of the partition: at most ``n_strata`` strata of at least ``min_stratum_size`` rows
        (defaults: 3 low-confidence strata plus one per predicted class for classification,
        10 for regression; max(10, N/100) rows). Only the stratified designs use them:
        given to ``"srs"``, ``"active"`` or a regression ``"auto"`` (one stratum) they give a
        ``UserWarning`` naming them, and the design is the same.
    rng:
        Seed or Generator; the design is reproducible from it.
    score_floor:
        Regression only: the lowest score any row can have, 1 - the largest squared error
        possible (targets and predictions in [0, 10]: 1 - 100 = -99). Without it no interval
        from n labels is valid for every pile (a rare huge error may not have been drawn yet;
        Bahadur & Savage 1956), and the anytime sequence takes the lowest score seen as the
        bound. With it the anytime sequence is the betting sequence on [score_floor, 1] (exact,
        no warning) and the fixed-n interval also holds that sequence's interval, so it is
        valid at every n whatever the tail (wider when the floor is far below the scores). A
        recorded score below it is an error. Not for ``"active"``.

    Design: strata from unlabeled signals only (:func:`._design.build_strata`), rows within a
    stratum drawn without replacement in a random order fixed at the start, batches allocated
    toward Neyman's n_h ∝ N_h S_h with S_h re-estimated from the labels recorded so far
    (shrunk toward the model's own calibrated error sqrt(e_h (1 - e_h)) early on), with a
    floor of 2 labels per stratum. A batch too small to give every stratum its floor (many
    predicted classes) is allocated over coarser strata, spread uniformly within them
    (:meth:`_proposal_level`), and estimates use the finest strata whose floors were met
    (:meth:`_estimate_level`). Estimates use the rows *recorded*; rows proposed but not
    yet recorded are pending and ignored (valid when which proposed rows get labelled first
    does not depend on their scores). Intervals: for accuracy, a score (Wilson-type) interval
    in which the low-confidence and the predicted-class groups of strata each keep their own
    effective sample size (:func:`._estimators.grouped_wilson`: errors not yet seen in a
    confident group widen the lower side; a group with none seen gets no design-effect
    credit); for the active design, the bootstrap-t of its AIPW terms; for regression
    (1 - squared error, a long lower tail) the (stratified) bootstrap-t
    (:func:`labelwise.estimation._bootstrap.bootstrap_t_interval`; SRS campaigns report
    :func:`labelwise.srs_estimate`'s, which is the same) with its lower limit at the pivot's
    0.995 quantile (:func:`labelwise.estimation._bootstrap.score_lower_miss`: the misses of
    the symmetric one were intervals above the truth), seeded so the same labels give the
    same interval.

    Resuming: :meth:`to_dict` is the JSON state; :meth:`to_arrays` holds what was computed
    from the pile at the start (strata, per-row signals, surrogate features), so that
    ``from_dict(..., arrays=...)`` does not pass over the activations again.
    """

    def __init__(
        self,
        activations: ArrayLike,
        probabilities: ArrayLike | None = None,
        *,
        method: str = "auto",
        confidence: float = 0.95,
        n_strata: int | None = None,
        min_stratum_size: int | None = None,
        rng: RNGLike = None,
        score_floor: float | None = None,
    ) -> None:
        acts = check_rows(activations, "activations", ndim=2)
        if acts.shape[1] == 0:  # was 'must be small enough to standardise ... overflows'
            raise LabelwiseError(
                f"activations must have at least one neuron (column), got shape {acts.shape}"
            )
        n = acts.shape[0]
        probs = None
        if probabilities is not None:
            probs = _check_class_probabilities(probabilities)
            if probs.shape[0] != n:
                raise LabelwiseError(
                    f"probabilities must have one row per activation row ({n}), "
                    f"got {probs.shape[0]}"
                )
        if method not in METHODS:
            raise LabelwiseError(f"method must be one of {METHODS}, got {method!r}")
        self.confidence = check_probability(confidence, "confidence")
        summary = None if probs is None else probability_summary(probs)
        given = (n_strata, min_stratum_size)  # as passed (None: left out), for the warning
        if n_strata is None:
            # every predicted class its own stratum (+ the low-confidence strata); 10 bins for
            # regression. Folding a class into "other classes" hides a swapped class (study:
            # E 1.05 on mnist1d-9-3 with 10 strata, 0.21 with one stratum per class)
            n_strata = 10 if summary is None else 4 + int(np.unique(summary.pred).size)
        self.n_strata = check_int(n_strata, "n_strata", minimum=1)
        self.min_stratum_size = (
            max(10, n // 100)
            if min_stratum_size is None
            else check_int(min_stratum_size, "min_stratum_size", minimum=1)
        )
        self.requested_method = method
        self.method = _resolve(method, probs is None)
        self.task = "regression" if probs is None else "classification"
        self._assist = _assists(method, self.task)
        self.score_floor = _check_floor(score_floor, self.task, self.method)
        self.population_size = n
        gen = check_rng(rng)
        # once every argument is checked: n_strata=0 is an error, not 'ignored'
        _warn_unused_strata(method, self.method, *given)
        self._seed = int(gen.integers(2**62))
        self._pile = _pile_fingerprint(acts, probs)
        self._setup(acts, probs, summary)
        self._proposed = np.zeros(0, dtype=np.int64)
        self._is_proposed = np.zeros(n, dtype=bool)
        self._scores = np.full(n, np.nan)
        self._draws: dict[str, list[float]] = {"row": [], "nq": [], "f": [], "fbar": []}
        self._n_batches = 0
        # rows proposed after each batch (None: a state saved before they were recorded)
        self._batch_ends: list[int] | None = []

    # ---------------------------------------------------------------- set-up
    def _setup(
        self,
        acts: Any,
        probs: Any | None,
        summary: ProbabilitySummary | None,
        cached: Mapping[str, NDArray[Any]] | None = None,
    ) -> None:
        """Strata, orders and features from chunked passes over the pile (:mod:`._features`):
        ``acts`` and ``probs`` may be out of core (memmap, zarr, chunk directory, dask).
        ``cached`` (:meth:`to_arrays` of the same campaign) skips the passes."""
        n = self.population_size
        key_gen = np.random.default_rng(self._seed)
        if cached is not None:
            self._dist, self._prior_e = cached["dist"], cached["prior_error"]
            self._strata, self._groups = cached["strata"], cached["groups"]
        else:
            self._dist = outlyingness(acts)
            self._prior_e = prior_error(None if summary is None else summary.conf, n)
            if self.method in ("srs", "active"):
                self._strata = np.zeros(n, dtype=np.int64)
                self._groups = np.zeros(1, dtype=np.int64)
            else:
                self._strata, self._groups = build_strata(
                    self._dist,
                    None if summary is None else (summary.conf, summary.pred),
                    n_strata=self.n_strata,
                    min_size=self.min_stratum_size,
                )
        self._sizes = np.bincount(self._strata).astype(np.int64)
        keys = np.asarray(key_gen.random(size=n), dtype=np.float64)
        self._order = np.lexsort((keys, self._strata))
        del keys  # 8N bytes less for the rest of the set-up
        self._starts: NDArray[np.int64] = np.concatenate([[0], np.cumsum(self._sizes)[:-1]])
        # one byte per row (the fold ids are < 5): N bytes, not 8N, for a pile of 10^7 rows
        self._folds = key_gen.integers(_N_FOLDS, size=n).astype(np.int8)
        self._features: NDArray[np.float64] | None = None
        self._knn_rows: NDArray[np.int64] | None = None  # :meth:`_knn_pile_rows`, lazily
        if cached is not None:
            self._features = cached.get("features")
        # "auto" for regression: a state saved before it used a surrogate has no features
        if self._features is None and (
            self._assist or (cached is None and self.method in ("model-assisted", "active"))
        ):
            self._features = surrogate_features(
                acts, probs, self._dist, n_components=3, gen=key_gen
            )
        self._e_h = np.bincount(self._strata, weights=self._prior_e) / self._sizes
        self._active_gen = np.random.default_rng(key_gen.integers(2**62))
        # the betting sequence per (alpha, bounds), carried between anytime estimates
        self._cs_cache: dict[tuple[float, float, float], StratifiedBettingCS] = {}
        # the residual bet's surrogate per batch, (coefficients, slope), fixed at first use
        self._side_fits: dict[int, tuple[NDArray[np.float64], float] | None] = {}

    def __repr__(self) -> str:
        auto = f" ({self.requested_method})" if self.requested_method != self.method else ""
        return (
            f"Campaign(method={self.method!r}{auto}, {self.task}, {self.population_size} rows, "
            f"{self.n_proposed} proposed, {self.n_recorded} labelled)"
        )

    # ---------------------------------------------------------------- state views
    @property
    def n_proposed(self) -> int:
        return int(self._proposed.size)

    @property
    def n_recorded(self) -> int:
        return int(np.count_nonzero(~np.isnan(self._scores)))

    @property
    def n_labelled(self) -> int:
        """The same as :attr:`n_recorded` (the name :class:`labelwise.RankingCampaign` uses)."""
        return self.n_recorded

    @property
    def proposed(self) -> NDArray[np.int64]:
        """Every row proposed so far, in proposal order (a read-only view)."""
        v = self._proposed.view()
        v.flags.writeable = False
        return v

    @property
    def pending(self) -> NDArray[np.int64]:
        """Rows proposed but not yet recorded, in proposal order."""
        return self._proposed[np.isnan(self._scores[self._proposed])]

    @property
    def strata(self) -> NDArray[np.int64]:
        """The stratum of every row (read-only view)."""
        v = self._strata.view()
        v.setflags(write=False)
        return v

    # ---------------------------------------------------------------- propose
    def propose(self, n: int) -> NDArray[np.int64]:
        """``n`` new rows to label (int64), never proposed before, in the design's order."""
        left = self.population_size - self.n_proposed
        n = check_batch_size(n, "n", left=left, total=self.population_size)
        rows = self._propose_active(n) if self.method == "active" else self._propose_strata(n)
        self._proposed = np.concatenate([self._proposed, rows])
        self._is_proposed[rows] = True
        self._n_batches += 1
        if self._batch_ends is not None:
            self._batch_ends.append(int(self._proposed.size))
        return rows.copy()

    def _propose_strata(self, n: int) -> NDArray[np.int64]:
        h = self._sizes.size
        have = np.bincount(self._strata[self._proposed], minlength=h)
        cap = self._sizes - have
        # regression: proportional too. Its Neyman S_h came from the *other* strata's labels
        # (no per-stratum prior variance), so a stratum of outlying activations whose squared
        # errors spread 5x more got the smallest share: E 1.9-2.1 against SRS on such a pile
        # (proportional: 1.0-1.1; the study's regression piles: E 0.95 / 1.01 / 0.83 stratified,
        # 0.94 / 0.94 / 0.81 proportional, coverage 0.97-0.99)
        proportional = self.method in ("proportional", "srs") or self.task == "regression"
        sds = np.ones(h) if proportional else self._neyman_sds()
        rep = self._proposal_level(n, have)
        if rep is None:  # every stratum gets its floor in this batch: the design's strata
            take = allocate(
                n,
                self._sizes.astype(np.float64),
                sds,
                have,
                cap,
                floor=_FLOOR,
                defensive=_DEFENSIVE,
            )
        else:  # a coarser design until a batch can give every stratum its floor
            take = self._coarse_take(n, rep, sds, have, cap, proportional)
        parts = [
            self._order[self._starts[h] + have[h] : self._starts[h] + have[h] + take[h]]
            for h in np.flatnonzero(take)
        ]
        rows = np.concatenate(parts).astype(np.int64)
        if self.method == "srs":
            return rows
        return rows[self._active_gen.permutation(rows.size)]

    def _levels(self) -> list[NDArray[np.int64]]:
        """Coarsenings of the strata, finest first, each as a map from a stratum to the
        smallest stratum id of its coarser stratum: the least-confident strata kept and the
        predicted-class strata as one (classification), then the whole pile."""
        h = self._sizes.size
        out = []
        cls = np.flatnonzero(self._groups == 1)
        if self.task == "classification" and 1 < cls.size < h:
            rep = np.arange(h)
            rep[cls] = cls.min()
            out.append(rep)
        if h > 1:
            out.append(np.zeros(h, dtype=np.int64))
        return out

    def _floor_need(self, rep: NDArray[np.int64], have: NDArray[np.int64]) -> int:
        """Labels still needed to give every stratum of the coarsening ``rep`` its floor."""
        h = self._sizes.size
        size_l = np.bincount(rep, weights=self._sizes, minlength=h)
        have_l = np.bincount(rep, weights=have, minlength=h)
        return int(np.maximum(np.minimum(_FLOOR, size_l) - have_l, 0).sum())

    def _proposal_level(self, n: int, have: NDArray[np.int64]) -> NDArray[np.int64] | None:
        """None (the design's strata) when this batch of ``n`` can give every stratum its
        floor of labels; else the finest coarsening whose floors it can give (the whole pile
        last). Without it a pile of many predicted classes (29 strata, floors of 58 labels)
        left strata without labels, merged into a neighbour at estimation: biased (100
        classes, 35 / 60 labels: E 3.9 / 2.9 against SRS, coverage 0.92 at 60)."""
        if self._floor_need(np.arange(self._sizes.size), have) <= n:
            return None
        levels = self._levels()
        for rep in levels[:-1]:
            if self._floor_need(rep, have) <= n:
                return rep
        return levels[-1] if levels else None

    def _estimate_level(self) -> NDArray[np.int64] | None:
        """The finest stratification whose every stratum was proposed its floor of rows: the
        level a batch of 0 could serve (:meth:`_proposal_level`). Rows drawn while the design
        was coarser are, within each of its strata, a uniform sample (multivariate
        hypergeometric counts, then each stratum's random order), so every finer stratum's
        sample is uniform given its size, and the finest level with its floors met estimates
        without bias."""
        return self._proposal_level(
            0, np.bincount(self._strata[self._proposed], minlength=self._sizes.size)
        )

    def _coarse_take(
        self,
        n: int,
        rep: NDArray[np.int64],
        sds: NDArray[np.float64],
        have: NDArray[np.int64],
        cap: NDArray[np.int64],
        proportional: bool,
    ) -> NDArray[np.int64]:
        """Allocate ``n`` rows over the coarse strata ``rep`` (Neyman with the defensive
        share, S_G^2 = sum_h W_h (S_h^2 + (m_h - m_G)^2) / W_G from the strata's S_h and
        expected scores m_h), then spread each coarse stratum's rows over its strata by a
        multivariate hypergeometric draw on their unproposed rows: a uniform sample of the
        coarse stratum's unproposed rows."""
        h = self._sizes.size
        size = self._sizes.astype(np.float64)
        size_l = np.bincount(rep, weights=size, minlength=h).astype(np.float64)
        have_l = np.bincount(rep, weights=have, minlength=h).astype(np.int64)
        cap_l = np.bincount(rep, weights=cap, minlength=h).astype(np.int64)
        if proportional:
            sds_l = np.ones(h)
        else:
            m_h = 1.0 - self._calibrated_error() if self.task == "classification" else np.zeros(h)
            w = size / np.maximum(size_l[rep], 1.0)
            m_l = np.bincount(rep, weights=w * m_h, minlength=h)
            var_l = np.bincount(rep, weights=w * (sds**2 + (m_h - m_l[rep]) ** 2), minlength=h)
            sds_l = np.sqrt(np.where(size_l > 0, var_l, 1.0))
        take_l = allocate(n, size_l, sds_l, have_l, cap_l, floor=_FLOOR, defensive=_DEFENSIVE)
        take = np.zeros(h, dtype=np.int64)
        for r in np.flatnonzero(take_l):
            members = np.flatnonzero(rep == r)
            take[members] = self._active_gen.multivariate_hypergeometric(
                cap[members], int(take_l[r])
            )
        return take

    def _calibrated_error(self) -> NDArray[np.float64]:
        """The model's error per stratum, e_h, scaled by the labels' observed/expected ratio.

        r = (Σ w_i (1 - y_i) / N + 1/n) / (Σ w_i e_i / N + 1/n) over the recorded rows an
        allocation may read (:meth:`_allocation_rows`), with design
        weights w_i = N_h / n_h (one pseudo-row of agreement keeps r near 1 with few labels);
        e_h is the stratum's mean of 1 - max-probability. Regression has no such prior (0.5).
        """
        if self.task == "regression":
            return np.full(self._sizes.size, 0.5)
        rec = self._allocation_rows()
        if rec.size == 0:
            return np.clip(self._e_h, 0, 0.5)
        st = self._strata[rec]
        n_h = np.bincount(st, minlength=self._sizes.size)
        w = self._sizes[st] / n_h[st]
        n_pop = self.population_size
        obs = float(np.sum(w * (1 - self._scores[rec]))) / n_pop
        exp = float(np.sum(w * self._prior_e[rec])) / n_pop
        r = (obs + 1 / rec.size) / (exp + 1 / rec.size)
        return np.clip(r * self._e_h, 1e-4, 0.5)

    def _neyman_sds(self) -> NDArray[np.float64]:
        """S_h for Neyman's allocation, never from stratum h's own labels.

        S_h² = min(1/4, r_{g,-h} v_h) for 0/1 scores (r_{g,-h} v_h for regression): v_h is the
        prior variance (the model's mean error e_h (1 - e_h) in the stratum; 1 for regression)
        and r_{g,-h} calibrates it with the labels of the *other* strata of h's group,
            r_{g,-h} = (Σ_{k∈g,k≠h} (n_k-1) s_k² + ν₀ v̄_g) / (Σ_{k∈g,k≠h} (n_k-1) v_k + ν₀ v̄_g),
        shrunk toward 1 with ν₀ prior degrees of freedom (v̄_g the group's mean prior). Leaving
        the stratum's own labels out keeps its sample size independent of its sample, so its
        mean stays unbiased under the sequential allocation (with the stratum's own labels,
        a stratum whose first labels were all correct is starved and its error is
        under-estimated: +0.01 bias on digits-patch at n = 80..180 in our study).
        """
        rec = self._allocation_rows()
        h = self._sizes.size
        binary = self.task == "classification"
        prior = np.clip(self._e_h * (1 - self._e_h), 1e-6, None) if binary else np.ones(h)
        if rec.size < 2:
            return np.sqrt(prior)
        st = self._strata[rec]
        y = self._scores[rec]
        n_h = np.bincount(st, minlength=h)
        mean = np.bincount(st, weights=y, minlength=h) / np.maximum(n_h, 1)
        ss = np.bincount(st, weights=(y - mean[st]) ** 2, minlength=h)
        dfh = np.maximum(n_h - 1, 0).astype(np.float64)
        out = np.empty(h)
        for g in np.unique(self._groups):
            m = self._groups == g
            vbar = float(prior[m].mean())
            num = ss[m].sum() - ss[m] + _NU0 * vbar
            den = (dfh[m] * prior[m]).sum() - dfh[m] * prior[m] + _NU0 * vbar
            out[m] = num / den * prior[m]
        if binary:
            # Laplace's rule of succession per group: a group whose labels show no error yet
            # is still allocated as if its error rate were 1 / (n_g + 2), since the interval
            # (:func:`._estimators.grouped_wilson`) must allow for the errors not yet seen.
            # Once the group's labels show _LAPLACE_UNTIL_ERRORS errors its variance is
            # estimated from them and the floor is dropped: a swapped class's stratum, every
            # label wrong, shows errors but no spread, and the floor held every class stratum
            # at its share where Neyman sends the labels to the least confident strata
            g_len = int(self._groups.max()) + 1
            n_g = np.bincount(self._groups, weights=n_h, minlength=g_len)
            e_g = np.bincount(
                self._groups, weights=np.bincount(st, weights=1 - y, minlength=h), minlength=g_len
            )
            q = 1 / (n_g[self._groups] + 2)
            few = e_g[self._groups] < _LAPLACE_UNTIL_ERRORS
            out = np.where(few, np.maximum(out, q * (1 - q)), out)
            out = np.minimum(out, 0.25)
        return np.sqrt(out)

    def _propose_active(self, n: int) -> NDArray[np.int64]:
        """Active sampling (Zrnic & Candès 2024, Sec. 3) mixed with uniform.

        Draws i.i.d. rows with q_i = (1 - η) u_i / Σ u + η / N, η = 0.5, so weights
        1 / (N q_i) stay below 2; u_i = sqrt(ê_i (1 - ê_i)) with ê_i the calibrated model error
        (classification) or the outlyingness of the row's activations (regression). A draw of a
        row proposed before costs no new label and still counts as a draw; drawing continues
        until ``n`` new rows are found. The surrogate f_t (the calibrated confidence, or the
        mean of the labels so far for regression) is fixed before the batch.
        """
        nn = self.population_size
        if self.task == "classification":
            e = np.clip(
                self._calibrated_error()[0] / max(self._e_h[0], 1e-12) * self._prior_e, 1e-4, 0.5
            )
            u = np.sqrt(e * (1 - e))
            f = 1 - e
        else:
            u = self._dist
            rec = self._recorded_rows()
            f = np.full(nn, float(self._scores[rec].mean()) if rec.size else 0.0)
        total = float(u.sum())
        if total > 0 and math.isfinite(total):
            q = (1 - _ACTIVE_UNIFORM) * u / total + _ACTIVE_UNIFORM / nn
        else:  # no row stands out (constant activations, a pile of one row): uniform
            q = np.full(nn, 1.0 / nn)
        fbar = float(f.mean())
        new: list[int] = []
        taken = self._is_proposed.copy()  # proposed before or found in this batch
        left_mass = float(q[~taken].sum())
        while len(new) < n:
            need = n - len(new)
            # i.i.d. draws from q, read in order until `need` new rows are found; near the
            # pile's exhaustion most draws hit proposed rows, so draw the expected number at
            # once (one O(N) call, not one per wasted draw); the draws past the stopping
            # point are dropped, which leaves the design's law unchanged
            size = need
            if left_mass < _ACTIVE_CHUNKED_BELOW:
                size = int(min(need / max(left_mass, 1e-12) * 1.25 + 16, 2**24))
            draws = self._active_gen.choice(nn, size=size, p=q)
            fresh = ~taken[draws]
            first = np.zeros(size, dtype=bool)
            _, at = np.unique(draws, return_index=True)
            first[at] = True
            hits = np.flatnonzero(fresh & first)[:need]
            stop = size if hits.size < need else int(hits[-1]) + 1
            used = draws[:stop]
            self._draws["row"].extend(used.tolist())
            self._draws["nq"].extend((nn * q[used]).tolist())
            self._draws["f"].extend(np.asarray(f[used], dtype=np.float64).tolist())
            self._draws["fbar"].extend([fbar] * stop)
            found = draws[hits]
            new.extend(found.tolist())
            taken[found] = True
            left_mass -= float(q[found].sum())
        return np.asarray(new, dtype=np.int64)

    # ---------------------------------------------------------------- record
    def record(self, rows: ArrayLike, scores: ArrayLike) -> None:
        """Record the scores of proposed rows (any order, in parts).

        ``scores``: 1/0 correct (or any value in [0, 1]) for classification; 1 - squared error
        (at most 1) for regression. Raises :class:`LabelwiseError`, leaving the campaign
        unchanged, for a row recorded twice, a row never proposed, or a bad score.
        """
        r = np.asarray(rows)
        if r.ndim == 0:
            r = r.reshape(1)
        if r.ndim != 1 or (r.size and r.dtype.kind not in "iu"):
            raise LabelwiseError(f"rows must be a 1-D array of row indices, got {r!r}")
        r = r.astype(np.int64)
        try:
            s = np.asarray(scores, dtype=np.float64).reshape(-1) if np.size(scores) else np.zeros(0)
        except (TypeError, ValueError):  # 'yes', 'cat': float() of text or objects failed
            raw = np.asarray(scores, dtype=object).reshape(-1)
            raise LabelwiseError(
                f"scores must be numbers (1 = correct, 0 = wrong; regression: 1 - squared "
                f"error), got {raw[:3].tolist()!r}; if they are class labels, {SCORE_LABELS}"
            ) from None
        if s.shape != r.shape:
            raise LabelwiseError(f"scores must have one value per row ({r.size}), got {s.size}")
        if r.size == 0:
            return
        outside = r[(r < 0) | (r >= self.population_size)]
        if outside.size:
            raise LabelwiseError(
                f"rows must be in [0, {self.population_size}), got {outside[:5].tolist()}"
            )
        if np.unique(r).size != r.size:
            raise LabelwiseError("rows must not repeat within one record call")
        never = r[~self._is_proposed[r]]
        if never.size:
            raise LabelwiseError(f"rows must have been proposed; never proposed: {never[:5]}")
        twice = r[~np.isnan(self._scores[r])]
        if twice.size:
            raise LabelwiseError(f"rows must be recorded once; already recorded: {twice[:5]}")
        self._check_scores(s)
        self._scores[r] = s

    def _check_scores(self, s: NDArray[np.float64]) -> None:
        """Scores a campaign can hold: finite, in [0, 1] for accuracy, <= 1 for 1-MSE."""
        if not np.all(np.isfinite(s)):
            raise LabelwiseError("scores must be finite numbers, got NaN or inf")
        if s.size == 0:
            return
        if self.task == "classification" and (s.min() < 0 or s.max() > 1):
            labels = f"; if they are class labels, {SCORE_LABELS}"
            raise LabelwiseError(
                f"scores must be in [0, 1] for accuracy (1 = correct, 0 = wrong), got "
                f"{s.min():g}..{s.max():g}{labels if looks_like_class_labels(s) else ''}"
            )
        if self.task == "regression" and s.max() > 1:
            raise LabelwiseError(f"scores must be 1 - squared error (<= 1), got {s.max():g}")
        if self.score_floor is not None and s.min() < self.score_floor:
            raise LabelwiseError(
                f"scores must be at least the campaign's score_floor {self.score_floor:g}, got "
                f"{s.min():g} (a squared error larger than the floor allows)"
            )
        check_score_magnitude(s)

    def _recorded_rows(self) -> NDArray[np.int64]:
        return self._proposed[~np.isnan(self._scores[self._proposed])]

    def _allocation_rows(self) -> NDArray[np.int64]:
        """The recorded rows an allocation may read: those in the recorded prefix of their
        stratum's design order (in proposal order, as :meth:`_recorded_rows`).

        The exact sequence (:class:`StratifiedBettingCS`) bets on each stratum's draws in
        design order and needs the stratum of every draw chosen from the draws before it. A
        row recorded while an earlier row of its stratum is still pending comes later in that
        order; had the next allocation read its label, no order of the draws would make the
        allocation predictable. With batches recorded in order (the study, a labeller
        finishing each batch) these are all the recorded rows, so nothing changes there.
        """
        rec = self._recorded_rows()
        if self.method == "active" or rec.size == 0:
            return rec
        keep = np.zeros(self.population_size, dtype=bool)
        keep[np.concatenate(self._recorded_prefixes())] = True
        return rec[keep[rec]]

    def _recorded_prefixes(self) -> list[NDArray[np.int64]]:
        """Each stratum's recorded prefix of its design order: its rows up to the first one
        not recorded. Proposals take each stratum's rows in that order, so only its first
        ``have`` rows (those proposed) can be recorded."""
        have = np.bincount(self._strata[self._proposed], minlength=self._sizes.size)
        out = []
        for j in range(self._sizes.size):
            seq = self._order[self._starts[j] : self._starts[j] + have[j]]
            miss = np.flatnonzero(np.isnan(self._scores[seq]))
            out.append(seq[: miss[0] if miss.size else seq.size])
        return out

    def recorded_prefix(self, n: int) -> Campaign:
        """A copy that has recorded only the first ``n`` recorded rows (in proposal order).

        For the estimate against the number of labels (``labelwise report``): the
        copy's :meth:`estimate` is what the campaign said when only those rows were
        recorded (the state does not keep the order labels arrived in; proposal order is the
        order they were asked for). The copy has proposed only the batches up to the one
        holding its last row: with every later batch proposed, strata a small first batch
        could not fill were estimated at the finer level the next batch reached (10 labels:
        0.331 where the campaign had said 0.458). Not for ``"active"``, whose estimate reads
        its draws; nor for states saved before the batches were recorded. The copy shares the
        design with this campaign; do not propose or record with it.
        """
        rec = self._recorded_rows()
        n = check_int(n, "n", minimum=1, maximum=max(int(rec.size), 1))
        out = copy.copy(self)
        out._scores = np.full(self.population_size, np.nan)
        out._scores[rec[:n]] = self._scores[rec[:n]]
        out._cs_cache = {}
        out._side_fits = {}
        if self._batch_ends and self.method != "active" and rec.size:
            last = int(np.flatnonzero(self._proposed == rec[n - 1])[0])
            end = next(e for e in self._batch_ends if e > last)
            out._proposed = self._proposed[:end]
            out._is_proposed = np.zeros(self.population_size, dtype=bool)
            out._is_proposed[out._proposed] = True
        return out

    # ---------------------------------------------------------------- estimate
    def estimate(self, *, anytime: bool | str = False, confidence: float | None = None) -> Estimate:
        """Estimate of the pile's accuracy (or 1-MSE) from the rows recorded so far.

        With a ``score_floor`` (regression) the fixed-n interval is the hull of the design's
        (bootstrap-t) interval and the betting sequence's on [score_floor, 1], so it covers at
        least as often as the latter, which is exact at any n.

        ``anytime=True`` returns a confidence sequence (valid at any stopping time, e.g.
        "stop as soon as the interval is narrower than 0.05"): a betting confidence sequence
        without replacement (Waudby-Smith & Ramdas 2024, Sec. 6) for ``"srs"`` (exact, for any
        number of labels); for the stratified and model-assisted designs of a classifier, the
        asymptotic confidence sequence of Waudby-Smith, Arnold, Wu, Wang & Ramdas 2024
        ("Time-uniform central limit theory and asymptotic confidence sequences", Ann. Statist.,
        Thm. 2.2, Robbins' normal mixture) around the design's estimate with its own standard
        error: valid at any stopping time as the labels grow; its optional-stopping coverage
        is checked by simulation in tests/test_campaign_anytime.py. It is never narrower than
        the fixed-n interval at level 1 - alpha / 20, nor, below 20 labels, than the exact
        sequence below (the first looks, where a stratum of one label stands for its weight).
        Regression scores are not bounded below: their betting sequence takes the observed
        range as the bound, with a warning, unless the campaign has a ``score_floor``.
        Not available for ``"active"``.

        ``anytime="exact"``: the exact stratified betting sequence for every design
        (:class:`._anytime.StratifiedBettingCS`: the strata's betting capitals multiplied, no
        alpha split, the infimum over the strata means of a candidate accuracy bounded by
        Lagrangian duality), which the regression designs (and ``score_floor``) use anyway;
        the same as ``True`` for ``"srs"`` and regression. Valid for any pile at any n, but
        wider than the asymptotic sequence: mean half-width over the study's 8 classification
        contexts at 35 / 60 / 100 / 180 labels (40 campaigns each) 0.208 / 0.156 / 0.134 /
        0.117 against 0.148 / 0.108 / 0.078 / 0.053, as wide on the clean piles (0.93-1.07x
        on digits-none) but 2.3-4.0x on MNIST-1D's shifted ones, whose strata of a confidently
        wrong class give the infimum room; still 2.3-2.8x narrower than one betting sequence
        per stratum with alpha split by a union bound (0.488 / 0.441 / 0.374 / 0.285), which
        it replaces. With a surrogate (``"model-assisted"``) it also bets on the residual of
        a surrogate fitted on earlier batches only (:meth:`_side_fit`), mixed half and half
        with the plain bet: 0.208 / 0.156 / 0.132 / 0.112 on the same campaigns.
        """
        conf = (
            self.confidence if confidence is None else check_probability(confidence, "confidence")
        )
        if anytime not in (False, True, "exact"):
            raise LabelwiseError(f"anytime must be False, True or 'exact', got {anytime!r}")
        rec = self._recorded_rows()
        metric = "accuracy" if self.task == "classification" else "1-MSE"
        if rec.size == 0:
            raise LabelwiseError("record must be called with at least one score before estimate")
        notes: list[str] = []
        pend = self.n_proposed - rec.size
        if pend:
            rows_are = "row is" if pend == 1 else "rows are"
            notes.append(f"{pend} proposed {rows_are} not yet recorded; estimated from {rec.size}")
        if rec.size == self.population_size:
            # every row labelled: the pile's mean is known, whatever the design weighted (the
            # stratified estimate reported a zero standard error inside a wide interval)
            return exact_estimate(
                float(np.mean(self._scores)),
                self.population_size,
                conf,
                method=self.method,
                metric=metric,
                notes=tuple(notes),
                effective_sample_size=float(self.population_size),
            )
        if anytime:
            if self.method == "active":
                raise LabelwiseError("anytime must be False for method 'active' (not available)")
            if self.method == "srs" or self.task == "regression" or anytime == "exact":
                return self._anytime(rec, conf, metric, notes)
            design = self._stratified_design(rec, notes)
            cs = _asymptotic_cs(
                self._stratified_estimate(rec, conf, metric, notes, design), rec.size
            )
            # the sequence is asymptotic: with few labels per stratum it is never narrower than
            # the fixed-n interval at level 1 - alpha / 20. Monitored every 5 labels from 10 to
            # 200 (200 campaigns), a pile with a confidently wrong predicted class was missed at
            # some look by 9.0 % of the campaigns (5 % allowed), now 4.5 %, at 3-7 % more width;
            # a pile without a wrong class 5.0 % -> 1.0 % at 6-13 % more width
            _y, st, sizes, d, _f = design
            lo, hi = grouped_wilson(
                d,
                sizes,
                np.bincount(st, minlength=sizes.size),
                self._groups,
                1 - (1 - conf) / _CS_GUARD,
            )
            lo, hi = min(cs.ci_low, lo), max(cs.ci_high, hi)
            if rec.size < _EXACT_BELOW:
                # nor, below _EXACT_BELOW labels, narrower than the exact sequence: at the
                # first looks a stratum of one label stands for its whole weight (monitored
                # every 5 labels from 10 to 200, 300 campaigns on a pile whose confident rows
                # are the wrong ones, the sequence missed at some look in 8.7 % of them, 20
                # of the 26 at the first look of 10 labels; now 1.3 %)
                exact = self._anytime(rec, conf, metric, [])
                lo, hi = min(lo, exact.ci_low), max(hi, exact.ci_high)
            return dataclasses.replace(cs, ci_low=lo, ci_high=hi)
        if self.score_floor is None:
            return self._fixed_n_estimate(rec, conf, metric, notes)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            est = self._fixed_n_estimate(rec, conf, metric, notes)
        # valid whatever the tail: never narrower than the betting interval on the known range
        cs = self._anytime(rec, conf, metric, [])
        lo, hi = min(est.ci_low, cs.ci_low), max(est.ci_high, cs.ci_high)
        widened = (lo, hi) != (est.ci_low, est.ci_high)
        for c in caught:
            # all scores equal: the design's interval had zero width, the widened one has not
            # (the warning said it 'understates the uncertainty' of [-0.48, 0.776])
            if not (widened and _ZERO_WIDTH in str(c.message)):
                warnings.warn(str(c.message), c.category, stacklevel=user_stacklevel())
        if not widened:
            return est
        return dataclasses.replace(
            est,
            ci_low=lo,
            ci_high=hi,
            interval=f"{est.interval}, widened to betting on [{self.score_floor:g}, 1]",
            notes=tuple(n for n in est.notes if _ZERO_WIDTH not in n),
        )

    def _fixed_n_estimate(
        self, rec: NDArray[np.int64], conf: float, metric: str, notes: list[str]
    ) -> Estimate:
        """The design's fixed-n estimate from the recorded rows ``rec`` (not anytime)."""
        assisted = self._assisted_design(rec, notes) if self._assist else None
        if assisted is not None:
            est = self._stratified_estimate(rec, conf, metric, notes, assisted)
            # the surrogate's coefficients and lambda were fitted on these labels: the
            # residual spread understates the estimator's by about (n - q) / n, q of them
            k = math.sqrt(rec.size / (rec.size - assisted[5]))
            if assisted[6] > 0 and est.std_error > 0:
                k *= math.sqrt(1 + assisted[6] / est.std_error**2)
            lo, hi = self._clip(
                est.value - k * (est.value - est.ci_low), est.value + k * (est.ci_high - est.value)
            )
            est = dataclasses.replace(
                est,
                ci_low=lo,
                ci_high=hi,
                interval="bootstrap-t of the difference estimator",
                effective_sample_size=self._worth_against_srs(rec, conf, (hi - lo) / 2),
            )
        elif self.method == "srs":
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                est = srs_estimate(
                    self._scores[rec], population_size=self.population_size, confidence=conf
                )
            for c in caught:
                warnings.warn(str(c.message), DegenerateDataWarning, stacklevel=user_stacklevel())
            # the core's interval (bootstrap-t for regression scores), never above 1
            lo, hi = self._clip(est.ci_low, est.ci_high)
            est = Estimate(
                value=est.value,
                std_error=est.std_error,
                ci_low=lo,
                ci_high=hi,
                confidence=conf,
                n_labelled=int(rec.size),
                method="srs",
                metric=metric,
                interval=est.interval,
                population_size=self.population_size,
                notes=tuple(notes) + est.notes,
                effective_sample_size=float(rec.size),
            )
        elif self.method == "active":
            est = self._active_estimate(conf, metric, notes)
        else:
            est = self._stratified_estimate(rec, conf, metric, notes)
        return est

    def _worth_against_srs(self, rec: NDArray[np.int64], conf: float, half: float) -> float:
        """The switched regression estimate's effective sample size: n (h_SRS / h)², h_SRS the
        half-width of the interval SRS reports on the same labels (:func:`labelwise.
        srs_estimate`'s bootstrap-t, clipped as :meth:`_fixed_n_estimate` clips it), in
        [1, N]. The SRS estimate itself reports n, so the two read alike; the normal-theory
        :func:`._estimators.srs_worth` compared the bootstrap-t (whose lower limit follows the
        scores' long left tail) with a symmetric interval and called a narrower interval than
        SRS's worth fewer labels than it has (150 labels "worth 136" where SRS's own interval
        on them was 1.19 times as wide)."""
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the SRS estimate's own warnings are not reported
            srs = srs_estimate(
                self._scores[rec], population_size=self.population_size, confidence=conf
            )
        lo, hi = self._clip(srs.ci_low, srs.ci_high)
        h_srs = (hi - lo) / 2
        if not (math.isfinite(h_srs) and math.isfinite(half)) or half <= 0:
            return float(rec.size)
        return float(min(max(rec.size * (h_srs / half) ** 2, 1.0), self.population_size))

    def _merged_strata(
        self, rec: NDArray[np.int64], notes: list[str]
    ) -> tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.int64] | None]:
        """Stratum per recorded row, stratum sizes and the map from the design's strata to
        these (None: the design's own). While the design is coarser
        (:meth:`_estimate_level`) its strata are used; strata without recorded labels are
        merged into the nearest stratum (by id) that has some (with a warning:
        post-stratified, not design)."""
        h = self._sizes.size
        rep = self._estimate_level()
        if rep is None:
            st, sizes = self._strata[rec], self._sizes
        else:
            st = rep[self._strata[rec]]
            sizes = np.bincount(rep, weights=self._sizes, minlength=h).astype(np.int64)
        n_h = np.bincount(st, minlength=h)
        live = sizes > 0
        if (n_h[live] > 0).all():
            return st, sizes, rep
        have = np.flatnonzero(n_h > 0)
        target = have[np.abs(np.arange(h)[:, None] - have[None, :]).argmin(axis=1)]
        merged = np.bincount(target, weights=sizes, minlength=h).astype(np.int64)
        hint = (
            "record the pending rows to restore the design"
            if self.pending.size
            else f"a batch of at least {2 * h} labels gives every stratum its 2"
        )
        msg = (
            f"strata {np.flatnonzero(live & (n_h == 0)).tolist()} have no recorded label yet; "
            f"merged into their neighbours ({hint})"
        )
        warnings.warn(msg, DegenerateDataWarning, stacklevel=user_stacklevel())
        notes.append(msg)
        fmap = target if rep is None else target[rep]
        return target[st], merged, fmap

    def _stratified_design(
        self, rec: NDArray[np.int64], notes: list[str]
    ) -> tuple[
        NDArray[np.float64],
        NDArray[np.int64],
        NDArray[np.int64],
        DesignEstimate,
        NDArray[np.float64] | None,
    ]:
        """The recorded scores, their strata and the strata sizes, the design estimate and
        the surrogate on the recorded rows (None: plain stratified)."""
        y = self._scores[rec]
        st, sizes, fmap = self._merged_strata(rec, notes)
        h = sizes.size
        binary = self.task == "classification"
        f_lab = f_pop = None
        lam_note = ""
        if self.method == "model-assisted" and self._features is not None:
            fit = fit_surrogate(self._features[rec], y, self._folds[rec], _N_FOLDS)
            if fit is not None:
                f_lab, coef = fit
                pred = coef[0] + self._features @ coef[1:]
                row_st = self._strata if fmap is None else fmap[self._strata]
                f_pop = np.bincount(row_st, weights=pred, minlength=h) / np.maximum(sizes, 1)
            elif np.ptp(y) == 0:
                lam_note = (
                    "every recorded score is the same: no surrogate to fit (plain stratified)"
                )
            else:
                need = surrogate_min_labels(self._features.shape[1], _N_FOLDS)
                lam_note = (
                    f"too few labels for the surrogate (about {need}: 5 per coefficient in "
                    "every cross-fitting fold): plain stratified estimator"
                )
        # no floor from the model's calibrated error under the stratum variances any more: a
        # group whose labels show no error is covered by grouped_wilson's n_g* <= n_g, and the
        # floor, inflated by the labelled errors of other strata, overstated the variance of
        # strata that really hold none (500 repetitions, 8 classification contexts: worst
        # coverage 0.948 -> 0.946, mean coverage 0.975 -> 0.967, w 0.789 -> 0.763)
        d = stratified_difference(
            y,
            st,
            sizes,
            f_lab=f_lab,
            f_pop_mean=f_pop,
            groups=self._groups,
            binary=binary,
            nu0=_NU0,
        )
        if lam_note:
            notes.append(lam_note)
        elif self.method == "model-assisted":
            notes.append(f"surrogate power-tuning lambda = {d.lam:.3f}")
        return y, st, sizes, d, f_lab

    def _assisted_design(self, rec: NDArray[np.int64], notes: list[str]) -> tuple[Any, ...] | None:
        """``"auto"`` for regression: the difference estimator under the SRS design, or None
        (the plain SRS estimate) unless the labels show a surrogate worth it.

        The surrogate is :func:`._estimators.fit_surrogate`'s cross-fitted ridge of the score
        on the campaign's features (outlyingness, its square and 3 principal components of
        the activations), fitted on the recorded labels only, or, when its cross-validated R²
        is higher, the mean score of the 10 nearest labelled rows outside row i's fold in the
        same standardised features (:func:`._estimators.knn_cross_fit`; Zrnic & Candès 2024,
        Sec. 2: any cross-fitted predictor keeps the estimate unbiased), whose pile mean F̄ is
        the 5 fold models' mean over the pile (a fixed uniform subsample of
        :data:`_KNN_PILE_ROWS` rows on a larger pile, whose variance λ² S_f² (1/m - 1/N) is
        added to the interval's). The surrogate's cross-validated
        R² = 1 - Σ (y_i - f_-k(i)(x_i))² / Σ (y_i - ȳ)², every f_-k(i) fitted without row i's
        fold, must reach :data:`ASSIST_R2` (0.1), and the power tuning must keep some of it
        (λ > 0); then the estimate is the difference (PPI++) estimator
        ȳ - λ f̄_lab + λ F̄ (Angelopoulos et al. 2023, "PPI++", Sec. 2-3; Särndal et al. 1992,
        Sec. 6.3) with the bootstrap-t of y - λ f and its 0.995 lower quantile, as the other
        designs' regression estimates, widened about the estimate by sqrt(n / (n - q)) for
        the q = p + 2 parameters fitted on the same labels (the surrogate's p + 1
        coefficients and λ; the residual degrees of freedom of the GREG variance, Särndal et
        al. 1992, Sec. 6.6). The rule reads only the labels so far and the
        unlabelled pile, so it is decided afresh at every estimate; the design (which rows
        are proposed) stays SRS's, row for row.
        """
        if self._features is None:
            return None
        folds = self._folds[rec]
        per_fold = np.bincount(folds, minlength=_N_FOLDS)
        if rec.size - per_fold.max() < _ASSIST_PER_COEF * (self._features.shape[1] + 1):
            return None
        y = self._scores[rec]
        fit = fit_surrogate(self._features[rec], y, folds, _N_FOLDS)
        if fit is None:
            return None
        f_lab, coef = fit
        ss = float(np.sum((y - y.mean()) ** 2))
        r2 = 1.0 - float(np.sum((y - f_lab) ** 2)) / ss
        x_lab = self._features[rec]
        knn = None
        if _ASSIST_KNN:
            oof = knn_cross_fit(x_lab, y, folds, _N_FOLDS, _ASSIST_KNN)
            r2_knn = 1.0 - float(np.sum((y - oof) ** 2)) / ss
            if r2_knn > r2:
                knn, r2, f_lab = oof, r2_knn, oof
        if not r2 >= ASSIST_R2:
            return None
        st = np.zeros(rec.size, dtype=np.int64)
        extra = 0.0  # variance of the subsampled pile mean of the kNN surrogate
        if knn is None:
            f_pop = np.array([coef[0] + float(np.mean(self._features @ coef[1:]))])
        else:
            pile = self._features[self._knn_pile_rows()]
            pred = np.mean(
                [
                    knn_predict(x_lab[folds != f], y[folds != f], pile, _ASSIST_KNN)
                    for f in range(_N_FOLDS)
                ],
                axis=0,
            )
            f_pop = np.array([float(pred.mean())])
            m = pred.size
            if m < self.population_size:
                extra = float(np.var(pred, ddof=1)) * (1 / m - 1 / self.population_size)
        d = stratified_difference(
            y, st, self._sizes, f_lab=f_lab, f_pop_mean=f_pop, binary=False, nu0=_NU0
        )
        if d.lam == 0:
            return None
        kind = "ridge" if knn is None else f"{_ASSIST_KNN}-nearest-neighbour"
        notes.append(
            f"{kind} surrogate cross-validated R² {r2:.3f} >= {ASSIST_R2:g}: difference "
            f"estimator, power-tuning lambda = {d.lam:.3f}"
        )
        # parameters fitted on the labels: the surrogate's coefficients and lambda (the
        # same count for the kNN surrogate, whose predictions are all out of fold); and the
        # variance the subsampled pile mean adds, lambda² S_f² (1/m - 1/N)
        return y, st, self._sizes, d, f_lab, coef.size + 1, d.lam**2 * extra

    def _knn_pile_rows(self) -> NDArray[np.int64] | slice:
        """Rows over which the kNN surrogate's pile mean is taken: every row, or on a pile of
        more than :data:`_KNN_PILE_ROWS` rows a fixed uniform subsample of that many (drawn
        from the campaign's seed, so the same at every estimate and after :meth:`load`)."""
        n = self.population_size
        if n <= _KNN_PILE_ROWS:
            return slice(None)
        rows = getattr(self, "_knn_rows", None)  # None in a campaign pickled before rg34
        if rows is None:
            gen = np.random.default_rng([self._seed, 34])
            rows = np.sort(gen.choice(n, size=_KNN_PILE_ROWS, replace=False))
            self._knn_rows = rows
        return rows

    def _stratified_estimate(
        self,
        rec: NDArray[np.int64],
        conf: float,
        metric: str,
        notes: list[str],
        design: tuple[Any, ...] | None = None,
    ) -> Estimate:
        """The design estimate (``design``: :meth:`_stratified_design`'s, else computed) with
        its interval at level ``conf``."""
        y, st, sizes, d, f_lab = (design or self._stratified_design(rec, notes))[:5]
        h = sizes.size
        binary = self.task == "classification"
        if binary:
            n_h = np.bincount(st, minlength=h)
            lo, hi = grouped_wilson(d, sizes, n_h, self._groups, conf)
            interval = "grouped score (wilson)"
        else:
            lo, hi = self._clip(*t_interval(d.value, d.std_error, d.df, conf))
            interval = "stratified-t"
            r = y if f_lab is None or d.lam == 0 else y - d.lam * f_lab
            boot = bootstrap_t_interval(
                r,
                st,
                sizes,
                conf,
                gen=self._boot_gen(rec.size),
                lower_miss=score_lower_miss(conf),
            )
            if boot is not None:
                shift = d.value - _strat_mean(r, st, sizes)
                lo, hi = self._clip(boot[0] + shift, boot[1] + shift)
                interval = "stratified bootstrap-t"
        # worth: the simple random sample whose interval z sqrt(Var_SRS(n) n / m) would be as
        # narrow as the one reported (not just n Var_SRS / SE²: the saving the user sees)
        se = d.std_error
        if not binary and not math.isfinite(se):
            # no stratum has 2 labels (one label in all): no variance estimate, as srs says
            se, lo, hi = math.inf, -math.inf, 1.0
            self._warn_degenerate(y, se, lo, hi, notes)
            ess = float(rec.size)
        else:
            if not binary:
                self._warn_degenerate(y, se, lo, hi, notes)
            ess = srs_worth(
                d.value,
                (hi - lo) / 2,
                d.score_variance,
                rec.size,
                self.population_size,
                conf,
                binary=binary,
            )
        return Estimate(
            value=d.value,
            std_error=se,
            ci_low=lo,
            ci_high=hi,
            confidence=conf,
            n_labelled=int(rec.size),
            method=self.method,
            metric=metric,
            interval=interval,
            population_size=self.population_size,
            notes=tuple(notes),
            effective_sample_size=float(ess),
        )

    def _warn_degenerate(
        self, y: NDArray[np.float64], se: float, lo: float, hi: float, notes: list[str]
    ) -> None:
        """srs's DegenerateDataWarning for regression scores (:func:`labelwise.srs_estimate`):
        no variance estimate (an unbounded interval), or all scores equal (zero width)."""
        if not math.isfinite(se):
            msg = (
                "one label gives no variance estimate; the interval is unbounded"
                if y.size == 1
                else f"no stratum has 2 of the {y.size} labels, which gives no variance "
                "estimate; the interval is unbounded"
            )
        elif y.size < self.population_size and hi - lo == 0 and np.ptp(y) == 0:
            msg = (
                f"all {y.size} labelled scores are equal; the interval has zero width and "
                "understates the uncertainty"
            )
        else:
            return
        warnings.warn(msg, DegenerateDataWarning, stacklevel=user_stacklevel())
        notes.append(msg)

    def _boot_gen(self, n: int) -> np.random.Generator:
        """The bootstrap's generator: a function of the seed and n, so estimates repeat."""
        return np.random.default_rng([self._seed, n, 11])

    def _clip(self, lo: float, hi: float) -> tuple[float, float]:
        """The interval cut to the metric's range: at most 1 (and at least 0 for accuracy),
        each end inside it, so that lo <= hi (a bound beyond the range meets its end)."""
        hi = min(hi, 1.0)
        lo = min(lo, 1.0)
        if self.task == "classification":
            lo = max(lo, 0.0)
            hi = max(hi, 0.0)
        return lo, hi

    def _active_draws(self) -> NDArray[np.float64]:
        """Per-draw AIPW terms for the prefix of draws whose rows are all recorded."""
        rows = np.asarray(self._draws["row"], dtype=np.int64)
        y = self._scores[rows]
        missing = np.flatnonzero(np.isnan(y))
        t = int(missing[0]) if missing.size else rows.size
        nq = np.asarray(self._draws["nq"][:t])
        f = np.asarray(self._draws["f"][:t])
        fbar = np.asarray(self._draws["fbar"][:t])
        return fbar + (y[:t] - f) / nq

    def _active_estimate(self, conf: float, metric: str, notes: list[str]) -> Estimate:
        z = self._active_draws()
        if z.size == 0:
            raise LabelwiseError("record the first proposed rows before estimate (active)")
        value, se = active_estimate(z)
        zc = float(stats.norm.ppf(0.5 + conf / 2))
        lo, hi = self._clip(value - zc * se, value + zc * se)
        interval = "martingale-clt"
        # the draws are i.i.d. given the past, so the bootstrap-t of their mean follows the
        # skew a Wald interval misses (AIPW terms of 0/1 scores: their spread falls as the
        # mean rises; Wald covered 0.91-0.94 at 60 draws in tests/test_campaign.py)
        one = np.zeros(z.size, dtype=np.int64)
        boot = bootstrap_t_interval(
            z,
            one,
            np.array([self.population_size]),
            conf,
            gen=self._boot_gen(z.size),
            with_replacement=True,
        )
        if boot is not None:
            lo, hi = self._clip(*boot)
            interval = "martingale bootstrap-t"
        notes.append(f"AIPW over the first {z.size} draws (the prefix whose rows are recorded)")
        if self.task == "regression":
            if not math.isfinite(se):
                lo, hi = -math.inf, 1.0
            self._warn_degenerate(
                self._scores[np.asarray(self._draws["row"][: z.size], dtype=np.int64)],
                se,
                lo,
                hi,
                notes,
            )
        # the AIPW mean of a 0/1 score can leave [0, 1] (every labelled row right, weights
        # 1 / (N q) above 1): report it inside the metric's range and the interval around it
        top = 1.0
        bottom = 0.0 if self.task == "classification" else -math.inf
        if not bottom <= value <= top:
            clipped = min(max(value, bottom), top)
            notes.append(
                f"the AIPW mean {value:.4g} is outside [{bottom:g}, 1]; reported as {clipped:g}"
            )
            value = clipped
        lo, hi = min(lo, value), max(hi, value)
        rows = np.asarray(self._draws["row"][: z.size])
        y = self._scores[rows]
        # the draws' weights 1 / (N q) and the weighted mean of their scores
        wt = 1 / np.asarray(self._draws["nq"][: z.size])
        mean_w = float(np.sum(wt * y) / wt.sum())
        if self.task == "classification":
            # errors not seen yet: with none or few errors among the draws the AIPW terms are
            # almost constant and the bootstrap-t has almost no width (accuracy 0.994, 12
            # errors in 2,000 rows, no error in 60 draws: interval (0.9967, 1.0); coverage
            # 0.33-0.78 over 35..180 draws). Then the lower limit is at most Wilson's for the
            # weighted share of errors at the draws' Kish effective size (Kish 1965,
            # Sec. 11.7), as SRS's and grouped_wilson's intervals allow for unseen errors
            seen = int(np.count_nonzero(self._scores[np.unique(rows)] == 0))
            w_lo = _wilson(mean_w, kish_size(wt), zc)[0]
            # a few errors among the draws: their AIPW terms lie far below the others (0.2-0.4
            # against 0.97-1.02), so a resample that misses all e of them (probability
            # (1 - e/T)^T: 0.36 for one error in 30 draws, 0.13 for two) is almost constant,
            # its standard error near 0 and its t huge. When that probability reaches alpha/2
            # the upper quantile of T* comes from those resamples and the bootstrap-t's lower
            # limit runs to 0 (accuracy 0.98, 30 draws: (0, 1) at 4 of 51 seeds). Then the
            # lower limit is Wilson's at the Kish size alone (the upper one stays the
            # bootstrap's: resamples with more errors have a wider spread, not a smaller one)
            e_draws = int(np.count_nonzero(y == 0))
            if e_draws > 0 and (1 - e_draws / z.size) ** z.size >= (1 - conf) / 2:
                lo = min(w_lo, value)
                interval += " (Wilson lower limit: bootstrap-t degenerate with few errors)"
            elif seen <= _ACTIVE_FEW_ERRORS and w_lo < lo:
                lo = w_lo
                interval += " (Wilson lower limit: few errors seen)"
        # the pile's variance from the draws, weighted 1 / (N q) (the active draws over-sample
        # uncertain rows, so their plain variance overstates it: "40 labels worth 262"), and
        # the worth from the reported interval, as for the stratified designs
        s2 = float(np.sum(wt * (y - mean_w) ** 2) / wt.sum()) * z.size / max(z.size - 1, 1)
        ess = srs_worth(
            value,
            (hi - lo) / 2,
            s2,
            int(np.unique(rows).size),
            self.population_size,
            conf,
            binary=self.task == "classification",
        )
        return Estimate(
            value=value,
            std_error=se,
            ci_low=lo,
            ci_high=hi,
            confidence=conf,
            n_labelled=int(np.unique(rows).size),
            method="active",
            metric=metric,
            interval=interval,
            population_size=self.population_size,
            notes=tuple(notes),
            effective_sample_size=float(ess),
        )

    def _anytime(
        self, rec: NDArray[np.int64], conf: float, metric: str, notes: list[str]
    ) -> Estimate:
        """The exact betting sequence on [lo_b, hi_b] (:class:`._anytime.StratifiedBettingCS`)
        over the design's strata, from each stratum's recorded prefix of its design order
        (a row recorded after a pending one waits), looked at once per call; with one stratum
        (SRS) the running maximum runs over every draw."""
        alpha = 1 - conf
        lo_b, hi_b = 0.0, 1.0
        if self.score_floor is not None:
            lo_b = self.score_floor
        elif self.task == "regression":
            lo_b = float(np.min(self._scores[rec]))
            msg = (
                f"regression scores are unbounded below; the anytime interval takes the observed "
                f"minimum {lo_b:.4g} as the bound (valid only if no row scores lower)"
            )
            warnings.warn(msg, DegenerateDataWarning, stacklevel=user_stacklevel())
            notes.append(msg)
            if hi_b - lo_b <= 0:
                lo_b = hi_b - 1.0
        w = self._sizes / self.population_size
        prefix = [(self._scores[rows] - lo_b) / (hi_b - lo_b) for rows in self._recorded_prefixes()]
        # the residual bet where there is a surrogate and the batches are known
        residual = self._features is not None and bool(self._batch_ends)
        key = (alpha, lo_b, hi_b)
        t = np.array([x.size for x in prefix])
        cs = self._cs_cache.get(key)
        if cs is None or np.any(cs.t > t):
            cs = StratifiedBettingCS(self._sizes, alpha, residual=residual)
        for j, have in enumerate(cs.t):
            side = self._side_info(j, int(have), int(t[j]), hi_b - lo_b) if residual else None
            cs.update(j, prefix[j][have:], side)
        cs.look()
        self._cs_cache[key] = cs
        lo_u, hi_u = cs.interval()
        means = np.array([x.mean() if x.size else 0.5 for x in prefix])
        value = lo_b + (hi_b - lo_b) * float(np.sum(w * means))
        lo = lo_b + (hi_b - lo_b) * lo_u
        hi = lo_b + (hi_b - lo_b) * hi_u
        z = NormalDist().inv_cdf(0.5 + conf / 2)
        return Estimate(
            value=value,
            std_error=(hi - lo) / (2 * z),
            ci_low=lo,
            ci_high=hi,
            confidence=conf,
            n_labelled=int(rec.size),
            method=self.method,
            metric=metric,
            interval="betting-cs (anytime)",
            population_size=self.population_size,
            notes=tuple(notes),
        )

    def _side_fit(self, b: int) -> tuple[NDArray[np.float64], float] | None:
        """The residual bet's surrogate for batch ``b``: (coefficients c, slope β) with
        g(x) = β (c_0 + c_1: · features(x)), fitted only on the labels of earlier batches (in
        their strata's recorded prefixes), once, at the first look that bets on batch ``b``
        (so it is fixed before any of its labels is bet on). The campaign's cross-fitted
        surrogate (:func:`._estimators.fit_surrogate`) once it exists, the first feature (1 -
        confidence for a classifier) before; β the pooled within-stratum least-squares slope
        of the score on its out-of-fold prediction (only the within-stratum part of g
        matters to the bet). None (no residual bet) below 10 such labels or without spread."""
        if b in self._side_fits:
            return self._side_fits[b]
        assert self._features is not None and self._batch_ends
        start = 0 if b == 0 else self._batch_ends[b - 1]
        prior = self._proposed[:start]
        keep = np.zeros(self.population_size, dtype=bool)
        keep[self._allocation_rows()] = True
        rows = prior[keep[prior]]
        out: tuple[NDArray[np.float64], float] | None = None
        if rows.size >= 10:
            y = self._scores[rows]
            fit = fit_surrogate(self._features[rows], y, self._folds[rows], _N_FOLDS)
            if fit is not None:
                f_lab, coef = fit
            else:
                coef = np.zeros(self._features.shape[1] + 1)
                coef[1] = 1.0
                f_lab = self._features[rows, 0]
            st = self._strata[rows]
            cnt = np.maximum(np.bincount(st, minlength=self._sizes.size), 1)

            def centred(v: NDArray[np.float64]) -> NDArray[np.float64]:  # within its stratum
                return v - (np.bincount(st, weights=v, minlength=cnt.size) / cnt)[st]

            fc, yc = centred(f_lab), centred(y)
            sxx = float(fc @ fc)
            if sxx > 1e-12:
                out = (coef, float(fc @ yc) / sxx)
        self._side_fits[b] = out
        return out

    def _side_info(
        self, j: int, k0: int, k1: int, scale: float
    ) -> tuple[NDArray[np.float64], ...] | None:
        """For stratum ``j``'s draws at design positions k0..k1-1: the residual bet's g at
        each drawn row and its mean, minimum and maximum over the stratum's rows from that
        position on (those not drawn before it), in units of the score's range ``scale``
        (:meth:`._anytime.BettingCS.update`); None when no draw has a surrogate."""
        if k1 <= k0:
            return None
        assert self._features is not None and self._batch_ends
        seq = self._order[self._starts[j] : self._starts[j] + self._sizes[j]]
        # each batch takes the next rows of the stratum in design order: the batch of its k-th
        # row is the batch of its k-th proposed row
        where = np.flatnonzero(self._strata[self._proposed] == j)[k0:k1]
        batch = np.searchsorted(np.asarray(self._batch_ends), where, side="right")
        out = np.zeros((4, k1 - k0))
        for b in np.unique(batch):
            fit = self._side_fit(int(b))
            if fit is None:
                continue
            coef, beta = fit
            g = beta * (coef[0] + self._features[seq[k0:]] @ coef[1:]) / scale
            n_left = np.arange(g.size, 0, -1)
            mean = np.cumsum(g[::-1])[::-1] / n_left
            lo = np.minimum.accumulate(g[::-1])[::-1]
            hi = np.maximum.accumulate(g[::-1])[::-1]
            k = np.flatnonzero(batch == b)
            out[:, k] = np.vstack([g[k], mean[k], lo[k], hi[k]])
        return tuple(out) if np.any(out) else None

    # ---------------------------------------------------------------- persistence
    def to_dict(self) -> dict[str, Any]:
        """JSON-able state; :meth:`from_dict` with the same arrays resumes the campaign."""
        rec = self._recorded_rows()
        return jsonable(
            {
                "format": FORMAT,
                "method": self.requested_method,
                "task": self.task,
                "confidence": self.confidence,
                "n_strata": self.n_strata,
                "min_stratum_size": self.min_stratum_size,
                "seed": self._seed,
                "population_size": self.population_size,
                "pile": self._pile,
                "stratum_sizes": self._sizes.tolist(),
                "proposed": self._proposed.tolist(),
                "recorded_rows": rec.tolist(),
                "recorded_scores": self._scores[rec].tolist(),
                "draws": self._draws,
                "n_batches": self._n_batches,
                "batch_ends": self._batch_ends,
                "active_rng": self._active_gen.bit_generator.state,
                "score_floor": self.score_floor,
            }
        )

    def to_arrays(self) -> dict[str, NDArray[Any]]:
        """What the campaign computed from the pile at its start (strata, per-row signals,
        surrogate features): pass it to :meth:`from_dict` as ``arrays`` so resuming skips
        the passes over the activations (seconds on a pile of a million rows). A dict of
        arrays, for ``np.savez`` (e.g. :meth:`labelwise.workspace.Workspace.write_state`)."""
        out: dict[str, NDArray[Any]] = {
            "dist": self._dist,
            "prior_error": self._prior_e,
            "strata": self._strata.astype(np.int32 if self._sizes.size < 2**31 else np.int64),
            "groups": self._groups,
        }
        if self._features is not None:
            out["features"] = self._features
        return out

    @classmethod
    def from_dict(
        cls,
        d: Mapping[str, Any],
        *,
        activations: ArrayLike,
        probabilities: ArrayLike | None,
        arrays: Mapping[str, ArrayLike] | None = None,
    ) -> Campaign:
        """Resume a campaign saved by :meth:`to_dict` on the same activations/probabilities.

        ``arrays``: the campaign's :meth:`to_arrays`, saved beside the state; when given, the
        strata and features are taken from it instead of recomputed from the activations
        (they are checked against the saved stratum sizes)."""
        if not isinstance(d, Mapping):
            raise LabelwiseError(f"campaign state must be a JSON object, got {type(d).__name__}")
        try:
            if d.get("format") != FORMAT:
                raise LabelwiseError(f"campaign format must be {FORMAT}, got {d.get('format')!r}")
            self = cls.__new__(cls)
            acts = check_rows(activations, "activations", ndim=2)
            # the strata come from the probabilities unless the arrays are given
            probs = (
                None
                if probabilities is None
                else (
                    check_rows(probabilities, "probabilities", ndim=2)
                    if arrays is not None
                    else _check_class_probabilities(probabilities)
                )
            )
            if acts.shape[0] != int(d["population_size"]):
                raise LabelwiseError(
                    f"activations must have {d['population_size']} rows, got {acts.shape[0]}"
                )
            self.confidence = check_probability(d["confidence"], "confidence")
            self.n_strata = check_int(d["n_strata"], "n_strata", minimum=1)
            self.min_stratum_size = check_int(d["min_stratum_size"], "min_stratum_size", minimum=1)
            if d["method"] not in METHODS:
                raise LabelwiseError(f"method must be one of {METHODS}, got {d['method']!r}")
            self.requested_method = str(d["method"])
            self.method = _resolve(self.requested_method, probs is None)
            self.task = "regression" if probs is None else "classification"
            self._assist = _assists(self.requested_method, self.task)
            self.score_floor = _check_floor(d.get("score_floor"), self.task, self.method)
            saved_task = d.get("task")  # states saved before it was recorded: as given
            if saved_task is not None and saved_task != self.task:
                given = "probabilities=None" if probs is None else "probabilities"
                raise LabelwiseError(
                    f"the campaign was saved as a {saved_task} campaign, got {given} (a "
                    f"{self.task} campaign): pass "
                    + (
                        "the class probabilities it started with"
                        if saved_task == "classification"
                        else "probabilities=None"
                    )
                )
            self.population_size = acts.shape[0]
            self._seed = int(d["seed"])
            # older states have no fingerprint. With the cached arrays the set-up reads no
            # activations, but the fingerprint does (64 rows): a regression campaign has no
            # probabilities, and its pile reordered was resumed against other rows
            self._pile = _pile_fingerprint(acts, probs)
            if "pile" in d and not _same_pile(d["pile"], self._pile):
                raise LabelwiseError(
                    "activations and probabilities must be the ones the campaign started with, "
                    "in the same row order (their rows differ)"
                )
            cached = None if arrays is None else self._check_arrays(arrays, d)
            summary = None if probs is None or cached is not None else probability_summary(probs)
            self._setup(acts, probs, summary, cached)
            if self._sizes.tolist() != list(d["stratum_sizes"]):
                raise LabelwiseError(
                    "activations and probabilities must be the ones the campaign started with "
                    "(the strata differ)"
                )
            self._proposed = _rows_in(d["proposed"], self.population_size, "proposed")
            self._is_proposed = np.zeros(self.population_size, dtype=bool)
            self._is_proposed[self._proposed] = True
            recorded = _rows_in(d["recorded_rows"], self.population_size, "recorded_rows")
            scores = np.asarray(d["recorded_scores"], dtype=np.float64)
            if scores.shape != recorded.shape:
                raise LabelwiseError(
                    f"recorded_scores must have one score per recorded row ({recorded.size}), "
                    f"got shape {scores.shape}"
                )
            self._check_scores(scores)
            if np.unique(recorded).size != recorded.size or not np.all(self._is_proposed[recorded]):
                raise LabelwiseError("recorded_rows must be distinct rows that were proposed")
            self._scores = np.full(self.population_size, np.nan)
            self._scores[recorded] = scores
            self._draws = {k: list(v) for k, v in d["draws"].items()}
            self._n_batches = int(d["n_batches"])
            self._batch_ends = _batch_ends(d.get("batch_ends"), self._n_batches, self.n_proposed)
            self._active_gen.bit_generator.state = d["active_rng"]
            return self
        except LabelwiseError:
            raise
        except (KeyError, TypeError, ValueError, AttributeError, IndexError) as exc:
            raise LabelwiseError(
                f"campaign state is missing or has a malformed field: {exc}"
            ) from None

    def _check_arrays(
        self, arrays: Mapping[str, ArrayLike], d: Mapping[str, Any]
    ) -> dict[str, NDArray[Any]]:
        n = self.population_size
        h = len(d["stratum_sizes"])
        try:
            out: dict[str, NDArray[Any]] = {
                "dist": np.asarray(arrays["dist"], dtype=np.float64),
                "prior_error": np.asarray(arrays["prior_error"], dtype=np.float64),
                "strata": np.asarray(arrays["strata"]).astype(np.int64),
                "groups": np.asarray(arrays["groups"]).astype(np.int64),
            }
            if "features" in arrays:
                out["features"] = np.asarray(arrays["features"], dtype=np.float64)
        except (KeyError, TypeError, ValueError) as exc:
            raise LabelwiseError(f"arrays must be the campaign's to_arrays(): {exc}") from None
        ok = (
            out["dist"].shape == (n,)
            and out["prior_error"].shape == (n,)
            and out["strata"].shape == (n,)
            and out["groups"].shape == (h,)
            and ("features" not in out or out["features"].shape[0] == n)
            and (n == 0 or (out["strata"].min() >= 0 and out["strata"].max() < h))
        )
        if self.method == "model-assisted" and "features" not in out:
            ok = False
        if not ok:
            raise LabelwiseError(
                "arrays must be the to_arrays() of this campaign (shapes, strata or features "
                "differ)"
            )
        return out

    def save(self, directory: str | os.PathLike[str]) -> None:
        """Write ``campaign.json`` and ``campaign.arrays.npz`` (:meth:`to_arrays`), each
        atomically, into ``directory`` (created if needed)."""
        if os.path.exists(directory) and not os.path.isdir(directory):
            raise LabelwiseError(f"directory must be a directory, got the file {directory}")
        os.makedirs(directory, exist_ok=True)
        arrays: dict[str, Any] = dict(self.to_arrays())

        def _write(fh: Any) -> None:
            np.savez(fh, **arrays)

        atomic_write(os.path.join(directory, "campaign.arrays.npz"), _write, binary=True)
        write_json(os.path.join(directory, "campaign.json"), self.to_dict())

    @classmethod
    def load(
        cls,
        directory: str | os.PathLike[str],
        *,
        activations: ArrayLike,
        probabilities: ArrayLike | None,
    ) -> Campaign:
        state = os.path.join(directory, "campaign.json")
        if not os.path.isfile(state):
            what = "is no directory" if not os.path.isdir(directory) else "holds no campaign.json"
            raise LabelwiseError(
                f"{os.fspath(directory)!r} {what}: give the directory a campaign was saved to "
                "(Campaign.save)"
            )
        try:
            with open(state, encoding="utf-8") as fh:
                d = json.load(fh)
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise LabelwiseError(f"cannot read the campaign state {state}: {exc}") from None
        if not isinstance(d, dict):
            raise LabelwiseError(f"{state} holds no campaign state (a JSON object)")
        path = os.path.join(directory, "campaign.arrays.npz")
        if not os.path.isfile(path):
            return cls.from_dict(d, activations=activations, probabilities=probabilities)
        try:
            with np.load(path, allow_pickle=False) as z:
                arrays = {k: z[k] for k in z.files}
        except (OSError, ValueError, zipfile.BadZipFile) as exc:
            raise LabelwiseError(f"cannot read the campaign arrays {path}: {exc}") from None
        return cls.from_dict(d, activations=activations, probabilities=probabilities, arrays=arrays)


_FINGERPRINT_ROWS = 64


#: The start of :func:`_warn_unused_strata`'s message, as a ``warnings.filterwarnings``
#: pattern (the CLI prints its own note, naming its flags).
UNUSED_STRATA_WARNING = r"(n_strata|min_stratum_size)=.* ignored: method="


def _warn_unused_strata(requested: str, method: str, n_strata: Any, min_stratum_size: Any) -> None:
    """A warning when ``n_strata`` or ``min_stratum_size`` is given to a design without
    strata (``"srs"``; ``"active"``, which draws from the whole pile; ``"auto"`` for
    regression, which is ``"srs"``): they were accepted and ignored without a word (the CLI
    printed a note for its flags; this is the same note for the Python arguments). A
    warning, not an error: a script that passes them to every method keeps working."""
    given = [
        f"{name}={value!r}"
        for name, value in (("n_strata", n_strata), ("min_stratum_size", min_stratum_size))
        if value is not None
    ]
    if not given or method not in ("srs", "active"):
        return
    how = f"method={requested!r}" + (f" ({method} for regression)" if requested != method else "")
    what = "draws from the whole pile" if method == "active" else "samples the whole pile"
    warnings.warn(
        f"{' and '.join(given)} ignored: {how} {what}, one stratum; leave "
        f"{'them' if len(given) > 1 else 'it'} out, or choose a stratified method "
        "('stratified', 'proportional', 'model-assisted')",
        UserWarning,
        stacklevel=user_stacklevel(),
    )


def _check_floor(floor: Any, task: str, method: str) -> float | None:
    """``score_floor``: None, or a finite number below 1 for a regression campaign."""
    if floor is None:
        return None
    if task != "regression":
        raise LabelwiseError(
            "score_floor applies to regression campaigns (probabilities=None): accuracy scores "
            "are already in [0, 1]"
        )
    if method == "active":
        raise LabelwiseError("score_floor is not available for method 'active'")
    if isinstance(floor, bool) or not isinstance(floor, (int, float, np.integer, np.floating)):
        raise LabelwiseError(f"score_floor must be a number, got {floor!r}")
    value = float(floor)
    if not math.isfinite(value) or value >= 1:
        raise LabelwiseError(
            f"score_floor must be a finite number below 1 (1 - the largest squared error), got "
            f"{floor!r}"
        )
    return value


def _pile_fingerprint(acts: Any | None, probs: Any | None) -> dict[str, list[float]]:
    """Sums of 64 evenly spaced rows of the activations (and of the probabilities times their
    column number): what a resumed campaign must see again at the same row numbers (another
    pile, or the same reordered, has the same shape and often the same strata sizes). Reads 64
    rows, not the pile; compared with a relative tolerance of 1e-4 (:func:`_same_pile`), so a
    recapture that differs in the last bits still resumes. A part given as None is left out."""
    given = {k: a for k, a in (("activations", acts), ("probabilities", probs)) if a is not None}
    out: dict[str, list[float]] = {}
    if not given:
        return out
    n = int(next(iter(given.values())).shape[0])
    rows = np.unique(np.linspace(0, n - 1, min(n, _FINGERPRINT_ROWS)).astype(np.int64))
    for part, arr in given.items():
        block = np.asarray(take_rows(arr, rows), dtype=np.float64)
        if part == "probabilities":  # the class each row leans to, not only its total of 1
            block = block * np.arange(1, block.shape[1] + 1, dtype=np.float64)
        out[part] = [float(x) for x in block.sum(axis=1)]
    return out


def _same_pile(saved: Any, now: dict[str, list[float]]) -> bool:
    """Whether the saved fingerprint agrees with ``now`` on the parts ``now`` holds."""
    if not isinstance(saved, Mapping):
        return False
    for part in now:
        if part not in saved:
            continue
        try:
            old = np.asarray(saved[part], dtype=np.float64)
        except (TypeError, ValueError):
            return False
        new = np.asarray(now[part])
        if old.shape != new.shape or not np.allclose(old, new, rtol=1e-4, atol=1e-6):
            return False
    return True


def _resolve(method: str, regression: bool) -> str:
    """What ``"auto"`` means: model-assisted for classification, SRS for regression (whose
    estimator :class:`Campaign` may switch to the difference estimator, see below).

    Regression strata on activation outlyingness brought no measurable gain on the study's
    contexts (300 repetitions, sizes 35..180: E 1.16, 1.09, 0.94 on regression
    none/patch/light, coverage min 0.87); the Campaign's own SRS, run the same way, measured
    E 1.16, 1.08, 0.95 and coverage min 0.88 (heavy-tailed squared errors: 300 repetitions
    cannot separate the two). ``auto`` keeps the simpler design with the known interval.
    Nor can a surrogate of the squared error help there: fitted on 3,000 labelled rows of each
    regression context and checked on the other 2,000, ridge on the activations or on the
    campaign's features, a quadratic in 5 principal components and k-nearest neighbours
    (k = 20..200) all explained at most 5 % of its variance (R² -0.04..0.05), so a design
    stratified on the predicted error, or a difference estimator, can save at most ~5 %.
    ``method="model-assisted"`` remains available for regression piles whose errors are
    predictable; its power tuning falls back to the plain estimator when they are not. For
    regression, ``stratified`` and ``model-assisted`` allocate proportionally (see
    :meth:`Campaign._propose_strata`).

    On piles whose squared errors the activations *do* predict (covariate shift the model
    extrapolates over, noise that grows in a region the activations identify, a
    sub-population never trained on) SRS wasted the saving, so regression ``"auto"`` keeps
    SRS's design and switches its *estimator*: once the labels so far show a surrogate worth
    it (:meth:`Campaign._assisted_design`: cross-validated R² >= ``ASSIST_R2`` from 10
    labels per coefficient in every fold) the estimate is the cross-fitted difference
    estimator on the same rows. Measured (1,000 campaigns, sizes 35..180, rg33 in
    docs/estimation-notes.md, ``benchmarks/predictable_regression.py``): E 0.82, 0.96, 0.88
    against SRS on the same rows (w 0.79, 0.92, 0.90) on piles of covariate shift,
    heteroscedastic noise and an unseen sub-population, coverage 0.957-0.964 (worst size
    0.921, SRS's own at 35 labels, before the rule can switch; 0.940 where it does); on the
    study's three regression piles it switched at 0.07-0.25 % of the estimates. Since rg34
    the surrogate is the ridge or the 10 nearest labelled rows' mean score, whichever
    cross-validates better: covariate shift E 0.82 -> 0.76 (0.67 from 80 labels), w 0.79 ->
    0.78, coverage 0.956 (1,000 campaigns; docs/estimation-notes.md, rg34).
    ``"model-assisted"`` itself (10 outlyingness strata, surrogate from about 38 labels)
    saved as much on the shift pile (E 0.76) but covered 0.90 at 45 labels, and
    ``"stratified"`` saved less (E 0.90).
    """
    if method != "auto":
        return method
    return "srs" if regression else "model-assisted"


def _assists(requested: str, task: str) -> bool:
    """Whether the campaign may switch to the difference estimator (:meth:`Campaign.
    _assisted_design`): ``"auto"`` for regression."""
    return requested == "auto" and task == "regression"


def _strat_mean(x: NDArray[np.float64], st: NDArray[np.int64], sizes: NDArray[np.int64]) -> float:
    n_h = np.bincount(st, minlength=sizes.size)
    means = np.bincount(st, weights=x, minlength=sizes.size) / np.maximum(n_h, 1)
    return float(np.sum(sizes / sizes.sum() * means))


def _asymptotic_cs(est: Estimate, t: int, *, t_opt: int = 100) -> Estimate:
    """Asymptotic confidence sequence around a design estimate (Waudby-Smith et al. 2024,
    Ann. Statist., Thm. 2.2 with Robbins' normal mixture).

    With sigma_t = sqrt(t) SE_t the per-label spread of the estimator after t labels,

        half_t = sigma_t sqrt(2 (t rho^2 + 1) / (t^2 rho^2) log(sqrt(t rho^2 + 1) / alpha)),

    rho^2 = (-2 log alpha + log(-2 log alpha + 1)) / t_opt, which makes the sequence
    tightest near ``t_opt`` labels (about 1.5 x the fixed-n half-width there).
    """
    alpha = 1 - est.confidence
    la = -2 * math.log(alpha)
    rho2 = (la + math.log(la + 1)) / t_opt
    # SE_t at least the fixed-n interval's half-width / z: for accuracy that interval is the
    # grouped score interval, which allows for errors not yet seen where the plug-in SE of a
    # few labels, all correct, does not (optional stopping at 5-10 labels missed 6.5 %)
    z = NormalDist().inv_cdf(0.5 + est.confidence / 2)
    se = max(est.std_error, (est.ci_high - est.ci_low) / (2 * z))
    sigma = math.sqrt(t) * se
    half = sigma * math.sqrt(
        2 * (t * rho2 + 1) / (t * t * rho2) * math.log(math.sqrt(t * rho2 + 1) / alpha)
    )
    lo, hi = est.value - half, est.value + half
    if est.metric == "accuracy":
        lo, hi = max(lo, 0.0), min(hi, 1.0)
    return dataclasses.replace(est, ci_low=lo, ci_high=hi, interval="asymptotic-cs (anytime)")


def _check_class_probabilities(probabilities: ArrayLike) -> Any:
    """(N, C) class probabilities, C >= 2: values in [0, 1], rows summing to 1 (the CLI's
    check, :func:`labelwise._validation.check_probabilities`, with its hint for logits)."""
    probs = check_rows(probabilities, "probabilities", ndim=2)
    check_probabilities(probs, "probabilities")  # names the row of a NaN
    if probs.shape[1] < 2:
        raise LabelwiseError(
            f"probabilities must have a column per class (at least 2), got shape "
            f"{tuple(probs.shape)}; for a regression model pass probabilities=None"
        )
    return probs


def _batch_ends(value: Any, n_batches: int, n_proposed: int) -> list[int] | None:
    """The saved rows proposed after each batch (None for states saved before they were
    recorded): ``n_batches`` increasing counts ending at ``n_proposed``."""
    if value is None:
        return None
    ends = [check_int(e, "batch_ends", minimum=1, maximum=n_proposed) for e in value]
    if len(ends) != n_batches or (ends and ends[-1] != n_proposed) or ends != sorted(set(ends)):
        raise LabelwiseError(
            f"batch_ends must be {n_batches} increasing row counts ending at the {n_proposed} "
            f"rows proposed, got {value!r}"
        )
    return ends


def _rows_in(value: Any, n: int, what: str) -> NDArray[np.int64]:
    """``value`` as a 1-D array of rows in ``[0, n)``; an error naming ``what`` otherwise."""
    rows = np.asarray(value, dtype=np.int64)
    if rows.ndim != 1:
        raise LabelwiseError(f"{what} must be a list of rows, got shape {rows.shape}")
    bad = rows[(rows < 0) | (rows >= n)]
    if bad.size:
        raise LabelwiseError(f"{what} must hold rows in [0, {n}), got {bad[:5].tolist()}")
    return rows

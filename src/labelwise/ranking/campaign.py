"""Rank many models with few labels: consensus estimates corrected by actively chosen labels.

The estimator ("consensus-PPI with shrinkage")
----------------------------------------------
Let ``s_mi`` be a label-free surrogate of "model m is right on input i": the share of the
models that agree with model m on input i (the soft vote; with probabilities, the mean
probability the models give to model m's class). Its pile mean ``sbar_m`` ranks the models
without any label (a consensus ranking, like the majority vote and LaF). Labels measure its
bias: on the labelled inputs ``t`` (drawn with known probabilities, weights ``w_t``)

    delta_hat_m = sum_t w_t (c_mt - s_mt) / sum_t w_t,          c_mt = 1[model m right on t]

is a prediction-powered (PPI, Angelopoulos et al. 2023) estimate of the mean bias
``delta_m = mean_i (c_mi - s_mi)``, with sandwich covariance ``Sigma`` raised to a floor that keeps
the structure of the biases (a common level; contrasts in proportion to how often two models
disagree, ``kappa / (n + 2)``). The spread of the biases across models decides how far the
consensus can be trusted. Hierarchical Bayes (:func:`_tau_mixture`): ``delta = mu 1 + eta``,
``eta ~ N(0, tau^2 K)`` with ``K`` one of three shapes built from the unlabelled predictions
(``Var(delta_a - delta_b)`` proportional to the disagreement ``D_ab``, to ``D_ab^2``, or
independent biases; :func:`_bias_kernels`), ``tau`` uniform on [tau0, 2] on a grid, ``mu``
the plain mean of ``delta_hat``. The main axis of the models' disagreement (the leading
eigenvector of a shaped ``K``: a family of models against the rest) may have a spread of its
own, ``tau^2 + t1^2`` instead of ``tau^2`` (prior probability 1/2, ``t1`` on a grid; for 3-4
models ``tau`` has a uniform shrinkage prior at the scale of the smaller of the label noise and
a quarter of the vote's own spread, mixed with a share of the flat prior where no axis stands
out, and the axis its eigengap, kept only where the gap stands out; there ``P(best)`` needs no
``prob_guard``): a family
that shares one error (a herd wrong on a whole class) gets a bias apart from the others'
without the family's own small contrasts pulling it back to the consensus. The posterior is
the mixture over ``(tau, t1, K)`` of the Gaussian posteriors of the contrasts, weighted by
their restricted likelihood, and

    acc_m = (sum_L c_mi + sum_U s_mi) / N + (N - n) / N * delta_post_m.

With no labels it is the consensus ranking; when the biases differ a lot (weak models,
majority often wrong) the likelihood puts the weight on large ``tau`` and the labels
dominate; with every input labelled it is the exact accuracy. ``P(model is best)``,
``P(A beats B)`` and rank sets come from draws of the posterior mixture, the last two with
``tau^2`` floored at a multiple of the sampling noise (``prob_guard``, ``tau_noise``), and the
first two, where pooling pulled the best-estimated models far below their design-based
estimates, with the contrasts' prior spread floored at a share of how often two models
disagree (``contrast_floor``: a herd-led real zoo's vote order among its leaders is not
to be believed; gated like the limited translation below, so not where a rising trend in
the vote share explains the pull). For 3-4 distinct models whose labels go against the vote
(the design-based accuracies fall with the vote share relative to the pooled ones, and the
vote is less accurate than the best model on the labelled rows) the pooled estimate is moved
toward the design-based one first (:func:`_vote_reversal_share`).

Limited translation where the check fails. The same check (:func:`_leader_shrinkage_gate`,
``g`` in [0, 1]: how many design sd pooling pulled the five leaders) also limits the estimate:
each contender's reported accuracy (the five leaders and the models whose design interval
reaches them) is held within ``1 / g`` design sd of its PPI estimate (Efron & Morris 1972;
:func:`_limited_translation`), the posterior translated with it and, where the
limit binds, its covariance raised to at least the design's, so ``P(best)`` and ``P(A beats
B)`` are drawn around the reported estimate. ``g = 0`` (the synthetic strong-close, weak and
6-model zoos almost always; where it is > 0 there it is small and the limit never bound in the
ranking study) leaves the pooled estimate. On the herd-led real zoos, whose best models agree
*less* with the vote than the herd behind them, pooling had reported the top three 0.03-0.04
low and followed the vote's order: the model ranked first was the best in 0.02 / 0.00 / 0.15 of
the MNIST-1D campaigns at 40 / 90 / 180 labels, now 0.32 / 0.33 / 0.47 (ranking notes). The
spread zoo's leaders fail the same check with the vote's order right: there the pull rises
linearly with the vote share (pooling under-credits every model in proportion to its agreement
with the vote), and limiting it only swapped the leaders by their PPI noise (first-ranked model
the best 0.88 -> 0.77, regret 0.0007 -> 0.0021). Where the pull is large (``T >= 1.5``) and a
rising linear trend in the vote share explains it (the leaders' residual pull <= 0.5 design sd;
:func:`_translation_gate`) the pooled estimate stands: the spread zoo's regret 0.0021 -> 0.0011
at seed 0 (ranking notes), the real zoos and the synthetic strong-close, weak and 6-model zoos
unchanged. The proposals use the pooled posterior. Where the limit applies, ``P(best)`` and
``P(A beats B)`` are drawn with the five leaders spread about the reported estimate by
``sqrt(1 + l n0 / n_s)`` (``l`` the limit's gate, ``n_s`` the labelled rows where the five
leaders do not all agree, ``n0`` = ``prob_temper``; :func:`_tempered_draws`): the leaders'
contrasts rest on those rows only. The first-ranked model of the MNIST-1D zoo claimed 0.49 /
0.54 / 0.56 at 40 / 90 / 180 labels for 0.28 / 0.30 / 0.48 observed, now 0.32 / 0.37 / 0.43
(docs/ranking-notes.md).

Honest uncertainty. Integrating ``tau`` out (rather than plugging in a method-of-moments
estimate) and not weighting the level by an inverse covariance estimated from few labels
took the standardised errors of the 6-model zoo from sd 1.5-1.6 to 1.0-1.1. The reported
accuracy interval is the hull of the posterior interval and the design-based PPI interval
``acc_ppi +- z sd_ppi`` (``delta_hat`` unshrunk), so it covers at least as often as PPI,
whatever the shrinkage does to a model far from the others; with no labels it is [0, 1].
It also holds the design-based interval post-stratified on the rows where every model
agrees (:meth:`RankingCampaign._stratified_intervals`: those rows are labelled only through
the uniform share, and the consensus errors among them count for every model) and on the
contested rows the proposals have barely reached (a group of models outvotes another there:
the vote's errors among them are bounded by Clopper-Pearson, not assumed away).
Rank sets are the hull of those of the (guarded) posterior and of the PPI Gaussian.

Active selection
----------------
Rows are drawn with probability ``p_i = (1 - eta) u_i^r / sum u^r + eta / N`` (uniform share
``eta`` = 0.3 by default, so weights ``1 / (N p_i) <= 1 / eta``; ``r`` = ``power``, 2 by
default), by successive sampling without replacement among the unlabelled rows.
``u_i = 2 sum_{a<b} g_a g_b 1[pred_a,i != pred_b,i]``: inputs on which the models whose
position is uncertain disagree, where ``g_m`` is the mean over ``b`` of
``4 P(m beats b) P(b beats m)`` plus ``P(m is best)``. Only such inputs can change the order
of two models (where both agree both are right or both wrong). ``r = 2`` puts the labels on
the inputs where several uncertain models disagree at once rather than spreading them over
inputs where one uncertain model differs from the rest; the larger uniform share keeps
labelling the rest, where a consensus wrong on a whole class is found out. In the ranking
study (:mod:`labelwise.experiments.ranking_study`, 3 x 30 repetitions, means over 35..180
labels) ``(eta, r) = (0.3, 2)`` instead of ``(0.2, 1)`` moved the Spearman / Jaccard@k of
the strong-close zoo from 0.937 / 0.805 to 0.947 / 0.838 (the vote: 0.922 / 0.815), of the
weak zoo from 0.839 / 0.614 to 0.854 / 0.635, of the spread zoo from 0.993 / 0.949 to
0.993 / 0.951 and of the 6-model zoo from 0.897 / 0.823 to 0.892 / 0.816. ``r = 2`` alone
starves the inputs outside the focus (a herd of models wrong on one class kept P(best) up to
0.49 after 80 labels), ``r = 3`` the weak zoo (Spearman 0.80), ``eta = 0.3`` alone made
P(best) underconfident (a reliability gap of 0.18 in the 5-model calibration test).
Compare CODA (Kay et al. 2025), which picks inputs by expected information about the best
model, and Model Selector (Okanovic et al. 2025).
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import linalg, special, stats

from .._params import Interval, Param, validate_params
from .._results import Ranking, Selection
from .._validation import (
    RNGLike,
    _text_hint,
    check_batch_size,
    check_budget,
    check_classes_in_range,
    check_confidence,
    check_int,
    check_model_names,
    check_model_predictions,
    check_probabilities,
    check_probability,
    check_rng,
)
from ..campaign._estimators import kish_size, wilson_effective
from ..exceptions import LabelwiseError
from ..sampling._common import (
    check_additional,
    check_same_population,
    generator_for_extension,
    generator_state,
)
from ..sampling.sds import majority_vote, sds_select

__all__ = ["METHODS", "RankingCampaign", "cppi_select"]

METHODS = ("auto", "active", "srs", "sds")
SURROGATES = ("soft", "vote", "weighted", "mixed")
_MAX_CELLS = 50_000_000


class RankingCampaign:
    """Label inputs in rounds and rank ``n_models`` models by accuracy on the whole pile.

    ``method="auto"`` (= ``"active"``) uses the consensus-corrected estimator and active
    selection of the module docstring; ``"srs"`` proposes uniformly random rows and ``"sds"``
    the rows of one SDS draw (Meng et al. 2021, Algorithm 1) in its order; both rank by
    accuracy on the labelled rows (as :func:`labelwise.rank_models`).

    Parameters
    ----------
    predictions:
        (n_models, N) class labels or (n_models, N, C) class probabilities, n_models >= 2;
        or a mapping {model name: that model's (N,) labels or (N, C) probabilities}, whose
        keys become ``model_names``. Models with the same predicted class on every row
        (one checkpoint registered twice, a model and its export) count once: the campaign
        proposes, estimates and ranks the distinct models (the first of each set of copies,
        with its probabilities) and reports each copy with its original's accuracy,
        interval, rank and rank set, P(best) shared equally among them (docs/ranking-notes.md,
        "Copies of a model"). Near-copies (models apart on at most 1 % of the rows) stay
        models of their own but count ``1 / k`` in the vote, ``k`` such models
        (:func:`_near_copy_weights`).
    probabilities:
        Optional (n_models, N, C) probabilities (the soft consensus then averages them), or
        a mapping with the same keys as ``predictions``.
    method:
        One of ``"auto"``, ``"active"``, ``"srs"``, ``"sds"``.
    n_classes:
        Number of classes; default C of the probabilities, else the largest predicted
        label + 1. Recorded labels must be in [0, n_classes).
    uniform_share:
        ``eta``: share of each proposal probability that is uniform, in (0, 1].
    power:
        ``r`` > 0: the active part of a proposal is proportional to ``u_i^r`` (module
        docstring).
    power_tuning:
        ``n0``, in labels: the PPI++ power ``lambda`` that scales the vote surrogate is the
        labels' estimate ``lambda_hat`` shrunk towards 1 (trust the vote) as ``(n lambda_hat
        + n0') / (n + n0')``, ``n0' = n0 clip(lambda_hat / 0.5, 0.25, 1)`` for 7 or more
        distinct models, ``n0`` for fewer (:meth:`_power`).
        Where the labels find the vote worthless or reversed, ``n0`` = 20 alone kept
        ``lambda`` near 1/3 at 40 labels and the estimate part of the vote's order; a quarter
        of it there (same labels, 30 zoos of 9 disjoint experts, 40 rows of one cppi batch):
        mean Spearman 0.42 / 0.47 / 0.39 -> 0.52 / 0.53 / 0.45 on three seed sets. Full
        campaigns: docs/ranking-notes.md ("Weak many-model zoos"); ``n0`` = 5 everywhere did
        as well there but moved the states of the spread and near-copy zoos and the 5-model
        calibration (bin 0.5-0.7: 0.60 predicted, 0.75 observed).
    tau0:
        Smallest prior spread of the models' consensus biases (accuracy units), the lower
        end of the ``tau`` grid. 0.002 (was 0.005) lets the posterior follow the consensus
        more closely where the labels find its biases all but equal (strong and spread
        zoos): in the ranking study (3 x 30 repetitions, means over 35..180 labels) the sizes
        at which the campaign's mean Spearman or Jaccard@k fell below the best of SRS, SDS
        and the vote went from 21 to 9 of 240, the 6-model zoo's Spearman / Jaccard@k from
        0.892 / 0.816 to 0.903 / 0.830, the others within 0.004 (weak Jaccard@k +0.015);
        the calibration tests still pass.
    tau_noise:
        Guard of the rank sets against an underestimated prior spread: they are drawn from
        the posterior whose ``tau^2`` is at least ``tau_noise`` times the mean sampling
        variance of the centred bias estimates (same point estimate, wider spread); 0 turns
        it off. The estimate and the active selection use the plain posterior. The rank sets
        are also widened to contain the design-based PPI ones.
    prob_guard:
        The same guard, weaker, for ``prob_best``, ``prob_beats`` and ``prob_better``: they
        are drawn from the posterior whose ``tau^2`` is at least ``prob_guard`` times that
        noise, so pooling leaves a contrast at least about ``prob_guard / (1 + prob_guard)``
        of its design variance (0.13 at 0.15), in the spirit of limited translation (Efron &
        Morris 1972, "Limiting the risk of Bayes and empirical Bayes estimators - Part II",
        JASA 67(337): bound what pooling may claim for one component). The restricted
        likelihood learns the prior's spread from the bulk of the zoo; where the best models
        are a regime of their own (the real 28-model MNIST-1D zoo of ``labelwise study
        comparative``: top three 0.965 / 0.962 / 0.961, their vote agreements in the wrong
        order) the plain posterior claimed P(best) 0.73 / 0.68 / 0.59 at 40 / 90 / 180 labels
        for a first-ranked model that was the best in 0 % / 10 % / 27 % of 30 campaigns.
        Measured on the same campaign states, Brier score of P(best) (summed over models)
        with ``prob_guard`` 0 / 0.15 / 0.25: that zoo 1.39 / 1.04 / 0.98 at 40 labels,
        1.16 / 1.07 / 1.03 at 90, 0.83 / 0.82 / 0.82 at 180; the synthetic regimes
        (strong-close, weak, spread, 6-model and 5-model zoos, 60-120 zoos each, 2-3 sizes)
        5.03 / 5.01 / 5.02 summed. The price is on zoos where P(best) was already
        underconfident: the 5-model zoo of the calibration test, bin 0.5-0.7, 0.59 predicted
        / 0.72 observed -> 0.60 / 0.74 (0.25: bin 0.7-0.9 0.80 / 0.98, outside the test's
        0.15). A floor, not a fix: on the real zoo P(best) stayed overconfident (ranking notes).
        The estimate, the accuracy intervals, the rank sets and the proposals do not
        change; 0 turns it off. Not applied to 3-4 distinct models, whose prior already
        keeps the spread (:func:`_tau_mixture`): there the guard made P(best)
        underconfident (eight 3-4 model zoos, close, weak and vote-wrong, 320 campaigns at
        35 and 100 labels: bin 0.5-0.7 0.60 predicted, 0.80 observed, Brier 0.090; without
        it 0.60 / 0.60, Brier 0.069 and 0.081 on two seed sets, largest gap of a bin 0.12 /
        0.07; before that prior, with the guard: Brier 0.108 / 0.110, largest gap 0.13).
    contrast_floor:
        ``c``: a second floor for ``prob_best``, ``prob_beats`` and ``prob_better``, on the
        prior spread of the bias contrasts in units of how often two models disagree:
        ``Var(delta_a - delta_b) >= (c g D_ab)^2`` (the ``K_2`` shape of
        :func:`_bias_kernels` added to every component's prior; the components' means and
        weights are kept, so the estimate, intervals, rank sets and proposals do not
        change). ``g`` in [0, 1] (:func:`_leader_shrinkage_gate`) is how far pooling pulled
        the leaders: ``clip(T - 0.5, 0, 1)``, ``T`` the mean over the five best-estimated
        models of (design-based PPI estimate - posterior) / design sd. Why: on real zoos
        whose best models agree *less* with the vote than a herd behind them (the 28-model
        MNIST-1D CNN zoo, the scikit-learn digits zoo) the restricted likelihood, fitted to
        the bulk of the zoo, finds the biases' spread small, pulls the leaders 1.5-2.6 of
        their sd below their design-based estimates (``T``) and believes the vote's order
        among them, though two leaders' biases may differ by a good share of how often they
        disagree (there 0.1-0.4 of ``D_ab``); its P(best) was 0.60-0.85 for a first-ranked
        model that was the best in 0-15 % of campaigns (40-180 labels; digits at 180 labels
        0.85 for 0.45). The marginal
        likelihood cannot learn ``c`` (it prefers ``c = 0`` by 5-17 log units on those
        zoos too: the leaders' contrasts are few among hundreds), hence the gate. Measured
        on the same campaign states (60 campaigns of 10-label rounds, Brier score of P(best)
        summed over models, 40 / 90 / 180 labels), ``c`` 0 / 0.25 / 0.5: MNIST-1D zoo
        1.32 / 0.99 / 0.96, 1.37 / 0.96 / 0.92, 1.22 / 0.90 / 0.87; digits 1.77 / 1.49 /
        1.34, 1.63 / 1.31 / 1.21, 0.65 / 0.55 / 0.54. In full campaigns
        (:mod:`labelwise.experiments.ranking_calibration`) at 0.25 the first-ranked model's
        P(best) went from 0.60 / 0.64 / 0.65 to 0.27 / 0.30 / 0.38 on the MNIST-1D zoo (it
        is the best in 0.02 / 0.00 / 0.15 of them) and from 0.85 / 0.81 / 0.85 to 0.66 /
        0.65 / 0.71 on digits (0.00 / 0.13 / 0.45): less overconfident, not calibrated.
        ``T`` of the synthetic strong-close, weak, 6-model and 5-model zoos is 0.03-0.4
        (90th percentile <= 0.7), so their P(best) does not move (the gate is 0 in all
        150 campaigns of the 5-model calibration test; both calibration tests' bins and
        the ranking study identical), but the spread zoo
        (24 models 0.45-0.95) has ``T`` 1.7-2.0 with the vote's order right: its P(best)
        became underconfident (40 zoos, 40 and 90 labels: first-ranked P(best) 0.87 / 0.68
        / 0.62 for 0.80 observed, Brier per campaign 0.273 / 0.311 / 0.345): the price,
        smaller at 0.25 than at 0.5. The floor is gated by the limited translation's gate
        ``l`` (:func:`_translation_gate`: ``g``, or 0 where a rising trend in the vote share
        explains the leaders' pull), not by ``g``: where the trend explains it the vote's
        order is right and neither the limit nor the floor applies. Spread zoo, 40 zoos at
        40 / 90 labels (the trend drops the limit in 37 of the 80 campaign states): the
        first-ranked model's P(best) 0.64 / 0.68 -> 0.74 / 0.74 for 0.70 / 0.78 observed,
        Brier per campaign 0.419 / 0.357 -> 0.369 / 0.346; the MNIST-1D zoo, where the
        trend drops the limit in 5 of 180 states (60 campaigns at 40 / 90 / 180 labels;
        the model ranked first is the best in none of them), 0.916 / 0.879 -> 0.938 / 0.887
        at 40 / 90 labels; digits, the strong-close, weak, 5-, 6-, 3-4-model and binary
        zoos: no state changes (the trend never drops the limit there). Not applied to 3-4
        distinct models. 0 turns it off.
    prob_temper:
        ``n0``, in labelled rows where the five leaders split: where the limited translation
        applies (its gate ``l`` > 0, :func:`_translation_gate`; the herd-led real zoos),
        ``prob_best``, ``prob_beats`` and ``prob_better`` come from draws whose five leaders
        are spread about the reported estimate by ``sqrt(1 + l n0 / n_s)``
        (:func:`_tempered_draws`; ``n_s`` >= 1 the labelled rows where the five models of
        largest estimate do not all predict the same class, :meth:`_leaders_split`): as if
        those rows were worth ``n_s / (1 + l n0 / n_s)``. Why: with the contrast floor and
        the limited translation the first-ranked model of the MNIST-1D zoo still claimed
        P(best) 0.49 / 0.54 / 0.56 at 40 / 90 / 180 labels for 0.28 / 0.30 / 0.48 observed,
        digits 0.57 / 0.63 / 0.75 for 0.30 / 0.47 / 0.62 (60 campaigns of 10-label rounds):
        the leaders differ by 0.001-0.003 and their contrasts rest on the few labelled rows
        where they disagree. The discount was first ``l 300 / n`` (``n`` all labels), which
        tempered as much where the leaders split on most rows, their contrasts well
        measured: the spread zoo (leaders split on 30 % of the pile) and the scikit-learn
        MNIST-1D zoo (68 %) were underconfident, the first-ranked model claiming 0.62 / 0.43
        at 35 labels for 0.85 / 0.77 observed. On the real zoos the leaders split on 0.27-0.33
        of the labelled rows (digits 0.24-0.27, MNIST-1D 0.29-0.33 at 35-180 labels), so
        ``n0`` = 100 (about 300 x 0.3) is the same tempering there (Brier of P(best) summed
        over models, 40 campaigns of 5-label rounds at 35 / 60 / 100 / 180 labels: MNIST-1D
        0.898 -> 0.896, digits 0.656 -> 0.656) and less where the labels measure the
        leaders' contrasts (spread 0.297 -> 0.276, scikit-learn MNIST-1D 0.327 -> 0.293;
        docs/ranking-notes.md, "P(best) reliability across regimes (rk33)"). 0 turns it off.
    n_draws:
        Posterior draws behind ``prob_best``, ``prob_beats`` and the rank sets.
    model_names:
        One name per model.
    rng:
        Seed or ``numpy.random.Generator``.
    """

    # what a campaign pickled by an earlier release lacks: its P(best) untempered and its
    # intervals without the unexplored contested rows, as that release reported them
    _reach: NDArray[np.float64] | None = None
    _contested: NDArray[np.bool_] | None = None
    _prob_temper: float = 0.0
    # ... and its ranking's own stream (_ranking_generator: keyed by the generator's state now)
    _ranking_entropy: int | None = None
    # ... and prob_temper per labelled row where the leaders split (f493f47): before, its
    # prob_temper (300 by default) discounted all n labels, l n0 / n, and still does
    _temper_by_split: bool = False
    # ... and a zoo's exact copies folded into one model (None: every model distinct, or a
    # campaign pickled before, whose copies are tied as _reps / _group tie them)
    _all_pred: NDArray[np.int64] | None = None
    _all_group: NDArray[np.int64] | None = None
    # ... and near-copies counted as models in the vote (_near_copy_weights, pb34)
    _vote_weights: NDArray[np.float64] | None = None

    def __init__(
        self,
        predictions: ArrayLike | Mapping[str, ArrayLike],
        probabilities: ArrayLike | Mapping[str, ArrayLike] | None = None,
        *,
        method: str = "auto",
        rng: RNGLike = None,
        n_classes: int | None = None,
        uniform_share: float = 0.3,
        power: float = 2.0,
        tau0: float = 0.002,
        surrogate: str = "vote",
        power_tuning: float = 20.0,
        tau_noise: float = 0.5,
        prob_guard: float = 0.15,
        contrast_floor: float = 0.25,
        prob_temper: float = 100.0,
        n_draws: int = 4000,
        model_names: Sequence[str] | None = None,
    ) -> None:
        if isinstance(predictions, Mapping):  # {model name: its predictions}
            if model_names is None:
                model_names = [str(k) for k in predictions]
            if isinstance(probabilities, Mapping):
                missing = [k for k in predictions if k not in probabilities]
                if missing or len(probabilities) != len(predictions):
                    raise LabelwiseError(
                        "probabilities must have the same models (keys) as predictions"
                        + (f": missing {missing[:3]}" if missing else "")
                    )
                probabilities = [np.asarray(probabilities[k]) for k in predictions]
            predictions = [np.asarray(v) for v in predictions.values()]
        pred, c_pred = check_model_predictions(predictions, min_models=2)
        self._pred = pred
        m, n = pred.shape
        probs = None
        if probabilities is not None:
            try:
                probs = np.asarray(probabilities, dtype=np.float64)
            except (TypeError, ValueError) as exc:
                why = (
                    "it holds non-numbers"
                    if isinstance(exc, TypeError) or "convert" in str(exc)
                    else "the models' shapes differ"
                )
                raise LabelwiseError(
                    f"probabilities must be a numeric ({m}, {n}, C) array like the predictions "
                    f"(every model the same rows and classes); {why}"
                ) from None
            if probs.ndim != 3 or probs.shape[:2] != (m, n):
                raise LabelwiseError(
                    f"probabilities must be ({m}, {n}, C) like the predictions, got "
                    f"shape {probs.shape}"
                )
            check_probabilities(probs.reshape(-1, probs.shape[2]), "probabilities")
        elif c_pred is not None:
            probs = np.asarray(predictions, dtype=np.float64)
            if surrogate != "vote":  # the soft consensus averages them: they must be probabilities
                check_probabilities(
                    probs.reshape(-1, probs.shape[2]),
                    f"predictions (probabilities for surrogate={surrogate!r})",
                )
        c_known = probs.shape[2] if probs is not None else c_pred
        if n_classes is not None:
            c_known = check_int(n_classes, "n_classes", minimum=int(pred.max()) + 1)
        self.n_classes = int(c_known) if c_known is not None else int(pred.max()) + 1
        if method not in METHODS:
            raise LabelwiseError(f"method must be one of {list(METHODS)}, got {method!r}")
        self.method = "active" if method == "auto" else method
        self._eta = _real(uniform_share, "uniform_share", "in (0, 1]", lambda v: 0 < v <= 1)
        self._pow = _real(power, "power", "> 0", lambda v: v > 0)
        self._tau0 = _real(tau0, "tau0", "> 0", lambda v: v > 0)
        if surrogate not in SURROGATES:
            raise LabelwiseError(f"surrogate must be one of {list(SURROGATES)}, got {surrogate!r}")
        self._surrogate_kind = surrogate
        self._weighted = surrogate in ("weighted", "mixed")
        self._n0 = _real(power_tuning, "power_tuning", ">= 0", lambda v: v >= 0)
        self._tau_noise = _real(tau_noise, "tau_noise", ">= 0", lambda v: v >= 0)
        self._prob_guard = _real(prob_guard, "prob_guard", ">= 0", lambda v: v >= 0)
        self._contrast_floor = _real(contrast_floor, "contrast_floor", ">= 0", lambda v: v >= 0)
        self._prob_temper = _real(prob_temper, "prob_temper", ">= 0", lambda v: v >= 0)
        self._temper_by_split = True
        self._n_draws = check_int(n_draws, "n_draws", minimum=100)
        if model_names is None:
            self.model_names = tuple(f"M{i + 1}" for i in range(m))
        else:
            self.model_names = check_model_names(model_names, m)
        self._gen = check_rng(rng)
        # ranking()'s Monte-Carlo draws come from their own stream, keyed by the generator's
        # state here and the labels recorded: looking at the ranking between rounds neither
        # moves the rows proposed next nor changes on a second look (_ranking_generator)
        self._ranking_entropy = _state_entropy(self._gen)
        # exact copies (one checkpoint registered twice, a model and its export) are one
        # model: the campaign runs on the distinct models (a copy is no second vote, leader
        # or contrast) and reports every copy with its original's values (_expand)
        reps, group = _copies(pred)
        if 1 < reps.size < m:
            self._all_pred, self._all_group = pred, group
            pred = self._pred = pred[reps]
            probs = None if probs is None else probs[reps]
            m = reps.size
            reps = group = np.arange(m, dtype=np.int64)  # the folded models are distinct
        dis = _disagreement_shares(pred)
        # near-copies (models apart on <= 1 % of the rows) are one vote between them
        # (_near_copy_weights; None where there are none: the plain vote)
        self._vote_weights = _near_copy_weights(dis)
        self._hard = (pred == majority_vote(pred, self._vote_weights)[None, :]).astype(np.float32)
        if surrogate == "vote":
            self._surrogate = self._hard
        elif surrogate == "mixed":
            soft = _soft_agreement(pred, probs, self._vote_weights)
            self._surrogate = (self._hard + soft) / np.float32(2)
        else:
            self._surrogate = _soft_agreement(pred, probs, self._vote_weights)  # (M, N) float32
        self._s_total = self._surrogate.sum(axis=1, dtype=np.float64)
        self._kernels = _bias_kernels(dis)
        # models with identical predictions have identical biases: the posterior is computed
        # on one representative of each (the prior's contrasts between them are 0) and copied
        self._reps, self._group = reps, group
        if self._reps.size == m:
            self._prior_parts = _prior_parts(self._kernels)
        elif self._reps.size > 1:
            reps = self._reps
            self._prior_parts = _prior_parts(_bias_kernels(dis[np.ix_(reps, reps)]))
        self._agree = (pred == pred[:1]).all(axis=0)
        self._labelled = np.zeros(n, dtype=bool)
        self._proposed = np.zeros(n, dtype=bool)
        self._pending: dict[int, float] = {}  # row -> weight 1 / (N p)
        self._rows: list[int] = []
        self._labels: list[int] = []
        self._weights: list[float] = []
        self._sds_order: NDArray[np.int64] | None = None
        self._sds_pos = 0
        # each row's expected number of draws over the active rounds (as if never labelled;
        # None for a cppi selection's rows, whose proposals are not known)
        self._reach = np.zeros(n)
        self._contested = None

    @classmethod
    def from_selection(
        cls,
        selection: Selection,
        predictions: ArrayLike,
        labels: ArrayLike,
        *,
        rng: RNGLike = None,
        **kwargs: object,
    ) -> RankingCampaign:
        """The campaign of a ``"cppi"`` selection (:func:`cppi_select`) with its rows labelled.

        ``labels`` are the true classes of ``selection.indices``, in that order; the rows'
        proposal weights come from ``selection.diagnostics["weights"]`` and the uniform share
        from ``selection.params``. Further keyword arguments go to the constructor (e.g.
        ``model_names``, ``n_draws``).
        """
        if not isinstance(selection, Selection) or selection.method != "cppi":
            got = selection.method if isinstance(selection, Selection) else type(selection).__name__
            raise LabelwiseError(f"selection must be a 'cppi' selection, got {got!r}")
        camp = cls(
            predictions,
            method="active",
            rng=rng,
            uniform_share=float(selection.params.get("uniform_share", 0.2)),
            **kwargs,  # type: ignore[arg-type]
        )
        camp._adopt(selection)
        camp.record(selection.indices, labels)
        return camp

    def _adopt(self, selection: Selection) -> None:
        """Mark a cppi selection's rows as proposed, with their recorded weights. The
        predictions must be the ones the selection was made from (its fingerprint of them):
        'rank --predictions' with the pile's rows reordered gave accuracies of 0.02-0.04
        without a word (extending checked it, ranking did not)."""
        check_same_population(selection, self.n_inputs)
        weights = np.asarray(selection.diagnostics.get("weights", ()), dtype=np.float64)
        if weights.shape != selection.indices.shape or not np.all(
            np.isfinite(weights) & (weights > 0)
        ):
            raise LabelwiseError(
                "selection must carry one positive proposal weight per row in "
                "diagnostics['weights'] (a 'cppi' selection written by labelwise)"
            )
        if selection.diagnostics.get("n_models", self.n_models) != self.n_models:
            raise LabelwiseError(
                f"predictions must come from the selection's "
                f"{selection.diagnostics['n_models']} models, got {self.n_models}"
            )
        stored = selection.diagnostics.get("predictions_sha1")
        if stored is not None and stored != _fingerprint(self._predictions()):
            raise LabelwiseError(
                "predictions must be the ones the selection was made from (their fingerprint "
                "differs)"
            )
        self._proposed[selection.indices] = True
        self._reach = None  # its proposal probabilities are not known
        for r, w in zip(selection.indices.tolist(), weights.tolist(), strict=True):
            self._pending[r] = w

    # ------------------------------------------------------------------ public API
    def __repr__(self) -> str:
        return (
            f"RankingCampaign(method={self.method!r}, {self.n_models} models "
            f"{self.model_names}, {self.n_inputs} rows, {self.n_labelled} labelled)"
        )

    @property
    def n_models(self) -> int:
        return int(self._pred.shape[0] if self._all_group is None else self._all_group.size)

    @property
    def _n_distinct(self) -> int:
        """Models the campaign computes on: the distinct ones (copies folded, __init__)."""
        return int(self._pred.shape[0])

    def _predictions(self) -> NDArray[np.int64]:
        """The (n_models, N) predictions as given, copies included."""
        return self._pred if self._all_pred is None else self._all_pred

    @property
    def n_inputs(self) -> int:
        return int(self._pred.shape[1])

    @property
    def n_labelled(self) -> int:
        return len(self._rows)

    @property
    def rows(self) -> NDArray[np.int64]:
        """Labelled rows in the order they were recorded."""
        return np.asarray(self._rows, dtype=np.int64)

    def propose(self, k: int) -> NDArray[np.int64]:
        """``k`` distinct rows to label next, never proposed before (int64)."""
        free = int(np.count_nonzero(~self._proposed))
        k = check_batch_size(k, "k", left=free, total=self.n_inputs)
        if self.method == "srs":
            rows = self._propose_uniform(k)
            weights = np.ones(k)
        elif self.method == "sds":
            rows = self._propose_sds(k)
            weights = np.ones(k)
        else:
            rows, weights = self._propose_active(k)
        self._proposed[rows] = True
        for r, w in zip(rows.tolist(), weights.tolist(), strict=True):
            self._pending[r] = w
        return rows

    def record(self, rows: ArrayLike, labels: ArrayLike) -> None:
        """Record the true class ``labels`` of proposed ``rows``."""
        r = np.atleast_1d(np.asarray(rows))
        lab = np.atleast_1d(np.asarray(labels))
        if r.size == 0 and lab.size == 0:  # nothing to record (as Campaign.record)
            return
        if r.ndim != 1 or r.dtype.kind not in "iu":
            raise LabelwiseError(f"rows must be a 1-D array of integer rows, got {r!r}")
        if lab.shape != r.shape:
            raise LabelwiseError(
                f"labels must have one entry per row ({r.size}), got shape {lab.shape}"
            )
        if lab.dtype.kind == "f" and np.all(np.isfinite(lab)) and np.all(lab == np.round(lab)):
            lab = lab.astype(np.int64)
        if lab.dtype.kind == "b":  # a binary task's True/False: classes 1/0, as the predictions
            if self.n_classes != 2:
                raise LabelwiseError(
                    f"labels must be integer class labels, got True/False for {self.n_classes} "
                    "classes (True/False are the classes 1/0 of a binary task)"
                )
            lab = lab.astype(np.int64)
        if lab.dtype.kind not in "iu":
            raise LabelwiseError(
                f"labels must be integer class labels, got dtype {lab.dtype}{_text_hint(lab)}"
            )
        r = r.astype(np.int64)
        lab = lab.astype(np.int64)
        bad = (r < 0) | (r >= self.n_inputs)
        if bad.any():
            raise LabelwiseError(f"rows must be in [0, {self.n_inputs}), got {r[bad][:5].tolist()}")
        if np.unique(r).size != r.size:
            raise LabelwiseError("rows must be distinct")
        not_prop = [x for x in r.tolist() if x not in self._pending]
        if not_prop:
            done = [x for x in not_prop if self._labelled[x]]
            what = "already recorded" if done else "never proposed"
            raise LabelwiseError(
                f"rows must be proposed by propose() and not yet recorded, got {what} rows "
                f"{not_prop[:5]}"
            )
        check_classes_in_range(
            lab,
            self.n_classes,
            "labels",
            rows=r,
            why="n_classes={n}",
            hint="pass n_classes= (CLI: --classes FILE) if a class is never predicted",
        )
        for x, y in zip(r.tolist(), lab.tolist(), strict=True):
            self._rows.append(x)
            self._labels.append(y)
            self._weights.append(self._pending.pop(x))
            self._labelled[x] = True

    def estimate(self) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """Posterior mean accuracies (model order) and their covariance, held within
        ``1 / g`` design sd of the PPI estimates where pooling pulled the leaders
        (:func:`_limited_translation`)."""
        if self.method != "active":
            return self._expand(*self._labelled_estimate())
        _pooled, _post_cov, cov, moved, pad, _limit = self._held(self._posterior())
        return self._expand(moved, _tie_copies(cov + pad, self._reps, self._group))

    def _held(
        self, post: _Mixture
    ) -> tuple[
        NDArray[np.float64],
        NDArray[np.float64],
        NDArray[np.float64],
        NDArray[np.float64],
        NDArray[np.float64],
        float,
    ]:
        """The posterior's mean moved as :meth:`estimate` and :meth:`ranking` report it.

        First toward the design estimate where 3-4 models' labels go against the vote
        (:meth:`_against_the_vote`, which also raises the covariance), then held within the
        translation limit of it (:func:`_leader_shrinkage_gate`, :func:`_translation_gate`,
        :func:`_limited_translation`). Returns the pooled mean (clipped to [0, 1]), the
        posterior's covariance, the raised covariance, the moved mean, the limited
        translation's added covariance and its limit.
        """
        pooled = np.clip(post.mean(), 0.0, 1.0)
        post_cov = post.cov()
        target, cov = self._against_the_vote(pooled, post_cov, post.design)
        if self.n_classes == 2 and self._vote_prior_zoo():
            # a binary zoo on the vote's prior: the leaders' pull toward the vote is the bet
            # its labels' checks already weighed (_vote_prior_average), not a herd's pull; the
            # limit (its translation, contrast floor and tempered draws) made P(best)
            # underconfident (9 binary models, 35 labels: 0.39 claimed where it fired, for
            # 0.88 observed; docs/ranking-notes.md, "P(best) of binary zoos of 7+ models")
            limit = 0.0
        else:
            gate = _leader_shrinkage_gate(target, post.design)
            limit = _translation_gate(target, post.design, gate, self._s_total / self.n_inputs)
        mean, pad = _limited_translation(target, cov, post.design, limit)
        return pooled, post_cov, cov, mean, pad, limit

    def _expand(
        self, mean: NDArray[np.float64], cov: NDArray[np.float64]
    ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """The distinct models' mean and covariance given to every model, copies included."""
        if self._all_group is None:
            return mean, cov
        g = self._all_group
        return mean[g], cov[np.ix_(g, g)]

    def _leaders_split(self, mean: NDArray[np.float64]) -> int:
        """The labelled rows where the ``_GATE_TOP`` models of largest ``mean`` do not all
        predict the same class (at least 1): the labels their contrasts rest on
        (``prob_temper``)."""
        top = np.argsort(-mean, kind="stable")[:_GATE_TOP]
        lead = self._pred[np.ix_(top, self.rows)]
        return max(1, int(np.count_nonzero((lead != lead[:1]).any(axis=0))))

    def _ranking_generator(self) -> np.random.Generator:
        """The generator of :meth:`ranking`'s draws: seeded by the campaign's generator as it
        was given (:func:`_state_entropy`) and the number of labels recorded, so the same
        labels give the same ``prob_best`` however often you look, and a look draws nothing
        from the stream that :meth:`propose` uses. A campaign pickled before it had that
        stream (no ``_ranking_entropy``; ranking() raised AttributeError) keys it by the
        generator's state now: the same for every look until the next proposal."""
        entropy = self._ranking_entropy
        if entropy is None:
            entropy = _state_entropy(self._gen)
        seq = np.random.SeedSequence(entropy, spawn_key=(len(self._labels),))
        return np.random.default_rng(seq)

    def ranking(self, *, confidence: float = 0.95, rank_level: float = 0.9) -> Ranking:
        """The models ranked, with intervals, ``prob_best``, ``prob_beats`` and rank sets."""
        conf = check_confidence(confidence)
        level = check_probability(rank_level, "rank_level")
        gen = self._ranking_generator()
        if self.method == "active":
            post = self._posterior()
            # (3-4 distinct models, or a binary zoo of 5+ under the same prior: no guard,
            # their prior already keeps the spread; tau0)
            few = 2 <= self._reps.size - 1 <= _FEW_CONTRASTS or self._vote_prior_zoo()
            guard = 0.0 if few else self._prob_guard
            # pooled: an accuracy (the shrinkage can carry a model right on every label past
            # 1); mean: toward the design estimate against the vote, then held (_held)
            pooled, post_cov, cov, mean, pad, limit = self._held(post)
            pad = pad + (cov - post_cov)
            cov = _tie_copies(post_cov + pad, self._reps, self._group)
            # where a rising trend in the vote share explains the pull (limit 0, gate > 0), the
            # vote's order stands for P(best) too (_translation_gate)
            contrast = self._contrast_floor * limit
            draws = self._posterior(guard, contrast).draws(gen, self._n_draws)
            if (mean != pooled).any():  # the limited translation: its posterior's draws
                draws = draws + (mean - pooled)[None, :]
                if pad.any():
                    draws = draws + gen.standard_normal(draws.shape) @ _root(pad).T
                if self._reps.size < self._n_distinct:  # copies stay exactly equal
                    draws = draws[:, self._reps][:, self._group]
            if limit > 0 and self._prob_temper > 0:  # the labels discounted (_tempered_draws)
                # n_s; a campaign pickled before it: all labels, as it was reported then
                split = self._leaders_split(mean) if self._temper_by_split else self.n_labelled
                excess = limit * self._prob_temper / max(split, 1)
                draws = _tempered_draws(draws, mean, excess, self._group)
            # rank sets from the guarded posterior (tau_noise)
            guarded = self._posterior(self._tau_noise).draws(gen, self._n_draws)
            low, high = _rank_sets(guarded, level)
            if post.design is not None:
                d_low, d_high = _rank_sets(
                    _Mixture.gaussian(*post.design).draws(gen, self._n_draws),
                    level,
                )
                low, high = np.minimum(low, d_low), np.maximum(high, d_high)
        else:
            mean, cov = self._labelled_estimate()
            draws = _Mixture.gaussian(mean, cov).draws(gen, self._n_draws)
            low, high = _rank_sets(draws, level)
        order = np.argsort(-mean, kind="stable").astype(np.int64)
        rank = stats.rankdata(-np.round(mean, 12), method="min").astype(np.int64)
        beats = _prob_beats(draws)
        best = _share_ties(_prob_best(draws), self._group)
        sd = np.sqrt(np.clip(np.diag(cov), 0, None))
        z = float(stats.norm.ppf(0.5 + conf / 2))
        ci_low, ci_high = mean - z * sd, mean + z * sd
        lab = self._labelled_correct()
        d_acc = d_se = None
        if self.method == "active":
            if post.design is None:  # no label: nothing bounds the consensus bias
                ci_low, ci_high = np.zeros_like(mean), np.ones_like(mean)
            else:  # never narrower than the design-based PPI interval
                d_mean, d_cov = post.design
                d_acc = np.clip(d_mean, 0, 1)
                d_se = np.sqrt(np.clip(np.diag(d_cov), 0, None))
                # models with <= 2 errors (or successes) seen: no more effective labels than
                # the labels' Kish size (_design_intervals)
                few = np.minimum(lab.sum(axis=1), (~lab).sum(axis=1)) <= _FEW_SEEN
                max_n = np.where(few, kish_size(np.asarray(self._weights)), np.inf)
                ppi_low, ppi_high = _design_intervals(
                    d_mean, d_se, self.n_labelled, conf, max_n, self.n_inputs
                )
                ci_low = np.minimum(ci_low, np.minimum(ppi_low, d_mean - z * d_se))
                ci_high = np.maximum(ci_high, np.maximum(ppi_high, d_mean + z * d_se))
                # and never narrower than the interval post-stratified on the rows where
                # every model agrees (_stratified_intervals)
                st_low, st_high = (
                    _tie_copies(b, self._reps, self._group)
                    for b in self._stratified_intervals(lab, conf)
                )
                ci_low = np.minimum(ci_low, st_low)
                ci_high = np.maximum(ci_high, st_high)
        n_correct = lab.sum(axis=1, dtype=np.int64)
        if self._all_group is not None:  # copies folded (__init__): each reported as its original
            g = self._all_group
            mean, n_correct, ci_low, ci_high = mean[g], n_correct[g], ci_low[g], ci_high[g]
            rank, low, high = rank[g], low[g], high[g]
            # P(best) shared among a model's copies; a copy beats its original in half the draws
            best = (best / np.bincount(g))[g]
            beats = np.where(g[:, None] == g[None, :], 0.5, beats[np.ix_(g, g)])
            order = np.argsort(-mean, kind="stable").astype(np.int64)
            if d_acc is not None and d_se is not None:
                d_acc, d_se = d_acc[g], d_se[g]
        return Ranking(
            model_names=self.model_names,
            accuracy=mean,
            n_correct=n_correct,
            ci_low=np.clip(ci_low, 0, 1),
            ci_high=np.clip(ci_high, 0, 1),
            rank=rank,
            order=order,
            prob_better=np.array([beats[a, b] for a, b in itertools.pairwise(order)]),
            n_labelled=self.n_labelled,
            confidence=conf,
            n_bootstrap=draws.shape[0],
            prob_best=best,
            prob_beats=beats,
            rank_low=low,
            rank_high=high,
            rank_level=level,
            method="consensus-ppi" if self.method == "active" else self.method,
            design_accuracy=d_acc,
            design_std_error=d_se,
        )

    # ------------------------------------------------------------------ estimation
    def _stratified_intervals(
        self, lab: NDArray[np.bool_], conf: float
    ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """Design-based accuracy intervals post-stratified on the all-agree and unexplored rows.

        On the stratum ``A`` of rows where all models give the same class (``N_A`` rows) the
        active part of every proposal is 0 (no disagreement), so the labels that fall there
        are a simple random sample of ``A`` (``n_A`` of them, ``k_A`` right); on ``A`` every
        model is right or wrong together. The accuracy of model m is
        ``(T_A + T_D,m) / N`` with ``T_A = sum_{L cap A} c + (N_A - n_A) k_A / n_A`` and, on
        the rows ``D`` where some models disagree, the PPI total ``T_D,m = sum_{L cap D} c_m +
        sum_{U cap D} lam s_m + |U cap D| delta_D,m`` (``delta_D,m`` the Hajek mean of the
        residuals ``c - lam s`` over the labels in ``D`` alone, ``lam`` the PPI++ power of
        :meth:`_power`, sandwich variance). The two parts are combined by MOVER (Zou & Donner
        2008, "Construction of confidence limits about effect measures: a general approach",
        Statist. Med. 27(10)): ``low = T / N - sqrt(l_A^2 + l_D^2) / N``, with ``l_A`` from
        Wilson's interval of ``k_A / n_A`` for the share right on all of ``A`` (finite population
        ``N_A``; Poisson limits for one or two errors;
        :func:`labelwise.campaign._estimators.wilson_effective`), times ``N_A``, and ``l_D`` =
        ``z sd sqrt(N_D |U cap D|)`` (``sd`` the Hajek mean's; the unlabelled rows' own mean
        varies too). A stratum with no label at all counts its whole unseen mass (``A``: the
        unlabelled rows right or wrong; ``D``: every residual possible).

        A third stratum ``R`` (:meth:`_unexplored_contested`) holds the contested rows (a
        second class has >= max(2, 0.15 M) models) whose expected draws over the rounds add
        up to at most 3, and leaves ``D``. There model m is right where it agrees with the
        vote unless the vote is wrong, so ``T_R,m = sum_{L cap R} c_m + sum_{U cap R}
        1[agrees] + |U cap R| r_m`` (``r_m`` the mean of ``c - 1[agrees]`` over the labels
        in ``R``) and only the count ``V`` of rows of ``U cap R`` where the vote is wrong is
        unknown: ``V <= |U cap R| e``, ``e`` the Clopper-Pearson upper limit of the vote's
        error share among the labels in ``R`` (1 with none), or among all contested rows
        labelled if lower. Model m's total lies between ``sum c + A_m - min(V, A_m)`` and
        ``sum c + min(A_m + V, |U cap R|)`` (``A_m`` its rows of ``U cap R`` that agree with
        the vote), MOVER-combined with the other strata as above. Why: 8 near-copies of a
        0.96 model beside models of 0.985 and 0.95 outvote the two where the herd is wrong
        (~190 rows, 4 % of the pile); the proposals, led by the herd's own disagreements,
        reached them ~2-3 times in 35 labels, and a campaign that labelled none estimated the
        herd at 0.98 +- 0.006 for 0.94 (PPI's Hajek mean never saw those rows). 200
        campaigns of 5-label rounds: coverage 0.777 / 0.871 -> 0.917 / 0.950 at 35 / 60
        labels; the study's zoos (30 each, 35 / 60 / 100 labels) strong-close half-widths
        +1 / +1 / 0 %, weak +3 / +2 / +2 %, spread +8 / +4 / +2 %. Not kept: a second class
        of one model enough (strong-close +33 % at 35 labels, and the herd's rows drowned
        among rows where the vote is right: coverage 0.81), the limits of ``R`` added to the
        others' rather than MOVER-combined (herd 0.996 / 0.977, but strong-close +20 % and
        spread +33 % at 35 labels), ``R`` as the disagreement rows reached at most 1.5 x as
        often as by a uniform draw (spread +81 %; the herd's rows, at 2.4-2.7 x, mostly
        outside) or the contested ones reached at most 3-4 x (herd 0.867-0.875).

        Why: the all-agree rows are labelled only through the uniform share, and where the
        consensus is wrong on many of them (nested models wrong together on 20 % of the rows)
        the pooled PPI estimate, whose Hajek normaliser is dominated by their large weights,
        undercovered when few of those rows happened to be drawn. Where ``k_A = n_A`` (no
        consensus error seen on ``A``) ``l_A`` is 0, as the pooled interval implicitly
        assumes: Wilson's zero-count limit there (the unseen mass counted) covered the
        nested zoo but widened the strong-close zoo's intervals 8x (0.021 -> 0.176 at 35
        labels), where the consensus is never wrong on ``A``.

        Unless the other labels show that the models fail together: where no consensus error
        is seen on ``A`` but every model is wrong on at least ``_ALL_WRONG_SEEN`` = 3 and at
        least ``_ALL_WRONG_SHARE`` = 10 % of the labelled rows outside ``A`` (rows where all
        models fail but disagree), ``l_A`` is Wilson's zero-count limit for ``k_A / n_A``
        (finite population ``N_A``; the labels in ``A`` are a simple random sample of it given
        ``n_A``, so the limit is exact under the design). Why: the nested zoo's misses were
        all campaigns that saw no consensus error among their 2-9 all-agree labels (29 of 200
        at 35 labels, coverage 0.08 among them, 1.0 in the others) while 3-9 of their ~30
        other labels had every model wrong; the strong-close zoo, where the consensus is never
        wrong on ``A``, sees 0-1 such rows (at most 4 of 49 in 90 campaigns). 200 campaigns
        of 5-label rounds: nested coverage 0.848 / 0.959 -> 0.950 / 0.974 at 35 / 60 labels
        (half-width 0.244 -> 0.262); the study's zoos (30 each, 35 / 60 / 100 labels)
        strong-close and spread unchanged, weak +0 / +0.5 / +1 %. Not kept: the count alone
        (>= 3 rows; strong-close +20 % at 100 labels, where 2 of 30 campaigns saw 3-4 in 79).
        """
        m, n_pop = self._pred.shape
        r = self.rows
        w = np.asarray(self._weights)
        z = float(stats.norm.ppf(0.5 + conf / 2))
        in_a = self._agree[r]
        n_a_pop, n_a = int(self._agree.sum()), int(in_a.sum())
        left_a = n_a_pop - n_a
        ca = lab[:, in_a]
        total_a = ca.sum(axis=1).astype(np.float64)
        l_a, h_a = np.zeros(m), np.zeros(m)
        if left_a > 0 and n_a == 0:  # nothing seen: the unseen rows right or wrong
            total_a = total_a + 0.5 * left_a
            l_a, h_a = np.full(m, 0.5 * left_a), np.full(m, 0.5 * left_a)
        elif left_a > 0:
            p_a = ca.mean(axis=1)
            total_a = total_a + p_a * left_a
            # no consensus error seen on A, but rows where every model is wrong seen among
            # the other labels: A's zero count is not taken at its word (Wilson's limit)
            all_wrong = int(np.count_nonzero(~lab[:, ~in_a].any(axis=0)))
            doubt = all_wrong >= max(_ALL_WRONG_SEEN, _ALL_WRONG_SHARE * (len(r) - n_a))
            for k in np.flatnonzero((p_a < 1) | doubt):
                lo, hi = wilson_effective(
                    float(p_a[k]), 0.0, max(n_a - 1, 1), conf, n_a, population=n_a_pop
                )
                # limits for the share right on all of A (its finite population already
                # counted by wilson_effective): the total's error is N_A times theirs
                l_a[k], h_a[k] = (p_a[k] - lo) * n_a_pop, (hi - p_a[k]) * n_a_pop
        # R: contested rows the proposals have barely reached (_unexplored_contested)
        low = self._unexplored_contested()
        in_l = low[r]
        n_l_pop, n_l = int(low.sum()), int(in_l.sum())
        left_l = n_l_pop - n_l
        cl = lab[:, in_l]
        hard = self._hard.astype(bool)
        # on R model m is right where it agrees with the vote, except on the rows where the
        # vote is wrong (there c - 1[agrees] is -1, 0 or +1): the unknown is their count
        agree_left = np.count_nonzero(hard[:, low & ~self._labelled], axis=1).astype(np.float64)
        total_l = cl.sum(axis=1) + agree_left
        l_l, h_l = np.zeros(m), np.zeros(m)
        if left_l > 0:
            share_hi = 1.0  # nothing seen on R: every unlabelled row's vote may be wrong
            if n_l > 0:
                hard_l = hard[:, r[in_l]]
                total_l = total_l + left_l * (cl.astype(np.float64) - hard_l).mean(axis=1)
                wrong_l = ~(cl & hard_l).any(axis=0)
                share_hi = _clopper_pearson_upper(int(wrong_l.sum()), n_l, conf)
            assert self._contested is not None
            in_c = self._contested[r]
            if in_c.any():  # or the share the vote is wrong on the contested rows labelled
                wrong_c = ~(lab[:, in_c] & hard[:, r[in_c]]).any(axis=0)
                share_c = _clopper_pearson_upper(int(wrong_c.sum()), int(in_c.sum()), conf)
                share_hi = min(share_hi, share_c)
            wrong_hi = share_hi * left_l
            seen = cl.sum(axis=1)
            l_l = np.maximum(total_l - (seen + agree_left - np.minimum(wrong_hi, agree_left)), 0)
            h_l = np.maximum(seen + np.minimum(agree_left + wrong_hi, left_l) - total_l, 0)
        in_d = ~in_a & ~in_l
        n_d = int(in_d.sum())
        left_d = (n_pop - n_a_pop - n_l_pop) - n_d
        lam = self._power(lab, self._surrogate[:, r].astype(np.float64), w / w.sum())
        cd = lab[:, in_d].astype(np.float64)
        s_d = lam * self._surrogate[:, r[in_d]].astype(np.float64)
        s_left = lam * self._surrogate[:, ~self._agree & ~low].sum(axis=1, dtype=np.float64)
        total_d = cd.sum(axis=1) + s_left - s_d.sum(axis=1)
        l_d, h_d = np.zeros(m), np.zeros(m)
        if left_d > 0 and n_d == 0:  # nothing seen: every unlabelled row right or wrong
            seen = cd.sum(axis=1)
            l_d, h_d = total_d - seen, seen + left_d - total_d
        elif left_d > 0:
            wd = w[in_d] / w[in_d].sum()
            resid = cd - s_d
            delta = resid @ wd
            var = ((resid - delta[:, None]) ** 2 @ wd**2) * (n_d / max(n_d - 1, 1))
            var = np.maximum(var, 0.25 / (n_d + 2) ** 2)  # as the pooled sandwich's floor
            total_d = total_d + left_d * delta
            # the total's error |U cap D| (delta - mean over U cap D): the unlabelled rows'
            # own mean is random too, sd sqrt(N_D / |U cap D|) times that of |U cap D| delta
            # (n draws from N_D: Var = N_D |U cap D| s^2 / n)
            l_d = h_d = z * np.sqrt(var) * left_d * np.sqrt((n_pop - n_a_pop - n_l_pop) / left_d)
        acc = (total_a + total_l + total_d) / n_pop
        lower = acc - np.sqrt(l_a**2 + l_l**2 + l_d**2) / n_pop
        upper = acc + np.sqrt(h_a**2 + h_l**2 + h_d**2) / n_pop
        return lower, upper

    def _unexplored_contested(self) -> NDArray[np.bool_]:
        """The contested rows the proposals have barely reached (the stratum ``R``).

        A row is contested where a second class has at least ``max(2, 0.15 M)`` models
        (:func:`_runner_up_votes`): a group of models that outvotes the others there may
        be wrong together (a herd of near-copies against two better models). ``R`` is the
        set of contested rows of least reach (each row's expected number of draws over the
        active rounds, as if it had never been labelled) whose expected draws together are
        at most 3: nothing seen there is about as likely as not. Empty for a campaign
        adopted from a cppi selection (its proposal probabilities are not known).
        """
        low = np.zeros(self.n_inputs, dtype=bool)
        if self._reach is None:
            return low
        if self._contested is None:
            rival = _runner_up_votes(self._pred)
            self._contested = ~self._agree & (rival >= max(2.0, _RIVAL_SHARE * self._n_distinct))
        idx = np.flatnonzero(self._contested | self._credible_dissent())
        idx = idx[np.argsort(self._reach[idx], kind="stable")]
        low[idx[np.cumsum(self._reach[idx]) <= _UNEXPLORED_DRAWS]] = True
        return low

    def _against_the_vote(
        self,
        pooled: NDArray[np.float64],
        cov: NDArray[np.float64],
        design: tuple[NDArray[np.float64], NDArray[np.float64]] | None,
    ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """3-4 distinct models: the pooled estimate moved a share ``w`` toward the design's.

        ``w`` is :func:`_vote_reversal_share` of the labels' evidence against the vote, and
        the covariance is raised as far toward the design's, ``cov + w (max(cov, D) - cov)``
        (:func:`_psd_max`). Elsewhere (2 or 5+ distinct models, no label) both are returned
        unchanged.
        """
        reps = self._reps
        if design is None or not 2 <= reps.size - 1 <= _FEW_CONTRASTS:
            return pooled, cov
        w = np.asarray(self._weights)
        d_mean, d_cov = design
        share = _vote_reversal_share(
            d_mean[reps] - pooled[reps],
            d_cov[np.ix_(reps, reps)],
            self._s_total[reps] / self.n_inputs,
            self._vote_minus(self._labelled_correct(), int(np.argmax(d_mean))),
            w / w.sum(),
        )
        if share <= 0:
            return pooled, cov
        moved = np.clip(pooled + share * (d_mean - pooled), 0.0, 1.0)
        return moved, cov + share * (_psd_max(cov, d_cov) - cov)

    def _vote_minus(self, correct: NDArray[np.bool_], k: int) -> NDArray[np.float64]:
        """Per labelled row, 1[the vote is right] - 1[model ``k`` is right]; ``correct`` is
        :meth:`_labelled_correct`. The vote is right on a row where a model that agrees with
        it is right."""
        vote_right = (self._hard[:, self.rows].astype(bool) & correct).any(axis=0)
        return vote_right.astype(np.float64) - correct[k]

    def _credible_dissent(self) -> NDArray[np.bool_]:
        """Disagreement rows where a model whose labelled dissents from the vote were right
        at least once and at least half the time dissents from the vote (part of the
        contested rows of :meth:`_unexplored_contested`)."""
        out = np.zeros(self.n_inputs, dtype=bool)
        if self.n_labelled == 0:
            return out
        dissent = self._hard[:, self.rows] == 0
        right = np.count_nonzero(self._labelled_correct() & dissent, axis=1)
        credible = (right >= 1) & (right >= _CREDIBLE_SHARE * dissent.sum(axis=1))
        if credible.any():
            out = ~self._agree & (self._hard[credible] == 0).any(axis=0)
        return out

    def _labelled_correct(self) -> NDArray[np.bool_]:
        r = self.rows
        return self._pred[:, r] == np.asarray(self._labels, dtype=np.int64)[None, :]

    def _posterior(self, guard: float = 0.0, contrast: float = 0.0) -> _Mixture:
        """Posterior of the accuracies, ``tau^2`` floored at ``guard`` times the noise and
        the contrasts' prior spread at ``contrast`` times the disagreement (covariances only)."""
        post = self._posterior_with(self._surrogate, self._s_total, guard, contrast)
        if self._weighted and self.n_labelled > 0:
            w = np.clip(post.mean() - 1.0 / self.n_classes, 0.01, None)
            if self._vote_weights is not None:
                w = w * self._vote_weights
            sur = _weighted_agreement(self._pred, w)
            if self._surrogate_kind == "mixed":
                sur = (sur + self._hard) / np.float32(2)
            post = self._posterior_with(sur, sur.sum(axis=1, dtype=np.float64), guard, contrast)
        return post

    def _posterior_with(
        self,
        surrogate: NDArray[np.float32],
        s_total: NDArray[np.float64],
        guard: float,
        contrast: float = 0.0,
    ) -> _Mixture:
        m, n_pop = self._pred.shape
        n = self.n_labelled
        base = s_total / n_pop
        if n == 0:
            return _Mixture.gaussian(base, np.eye(m) * self._tau0**2)
        r = self.rows
        correct = self._labelled_correct()
        s_lab = surrogate[:, r].astype(np.float64)
        w = np.asarray(self._weights)
        w = w / w.sum()
        lam = self._power(correct, s_lab, w)
        s_lab = lam * s_lab
        resid = correct - s_lab  # (M, n)
        delta_hat = resid @ w
        centred = resid - delta_hat[:, None]
        sigma = (centred * w[None, :] ** 2) @ centred.T * (n / max(n - 1, 1))
        # floor: a model whose residuals are all equal must not look exactly known; the
        # floor keeps the structure of the biases (a common level, contrasts in proportion
        # to how often two models disagree), so models that agree stay tightly paired
        phi = float(np.trace(sigma)) / m * 0.05 + 0.25 / (n + 2) ** 2
        sigma = sigma + phi * np.full((m, m), 1.0 / m) + phi * self._kernels[0]
        # contrast floor kappa / (n + 2) K1 (Var(delta_a - delta_b) >= kappa D_ab / (n + 2)): a
        # pair whose labelled residuals happen to agree must not look exactly ordered. It is a
        # floor, not an addition: sigma is raised only in the directions where the measured
        # sandwich variance is below it (_psd_max). Added to every direction (before), it
        # inflated the contrast variances by about 20 % where the sandwich is already right
        # (standardised design errors sd 0.96-1.01 unfloored, 0.85-0.91 with the addition)
        # and made P(best) underconfident on close zoos (5 models U(0.7, 0.8), 60 labels:
        # bin 0.7-0.9 predicted 0.79, observed 0.955; now 0.80 / 0.89).
        sigma = _psd_max(sigma, (_KAPPA / (n + 2)) * self._kernels[0])
        raw_sigma = sigma
        f = (n_pop - n) / n_pop
        # every row labelled: no surrogate left (a difference of sums in labelling order left
        # an ulp, which split two exactly tied models' P(best) 1 / 0)
        s_unlab = lam * s_total - s_lab.sum(axis=1) if n < n_pop else np.zeros(m)
        shift = (correct.sum(axis=1) + s_unlab) / n_pop
        reps, group = self._reps, self._group
        if reps.size == 1:  # every model predicts the same: one accuracy, no contrast
            level = np.full((1, 1), float(np.mean(sigma)))
            mix = _Mixture(np.ones(1), np.full((1, 1), float(np.mean(delta_hat))), level[None])
        else:
            sig_r = sigma[np.ix_(reps, reps)]
            cen = np.eye(reps.size) - 1.0 / reps.size
            noise = float(np.trace(cen @ sig_r @ cen)) / (reps.size - 1)
            # the prior scale of the biases' spread for 3-4 models: a share of the vote's own
            # spread (_tau_mixture), at least tau0
            spread = max(self._tau0, _FEW_SCALE * float(np.std(base[reps])))
            mix = _tau_mixture(
                sig_r,
                delta_hat[reps],
                self._prior_parts,
                self._tau0,
                guard * noise,
                scale=spread,
                contrast_floor=contrast,
            )
            if self._vote_prior_zoo():
                best = int(np.argmax(shift + f * delta_hat))
                t = _weighted_t(self._vote_minus(correct, best), w)
                mix = self._vote_prior_average(
                    mix,
                    sig_r,
                    delta_hat[reps],
                    raw_sigma[np.ix_(reps, reps)],
                    base[reps],
                    t,
                    guard * noise,
                    spread,
                    contrast,
                )
        if reps.size < m:  # copy the representatives' posterior to their duplicates
            mix = _Mixture(mix.weights, mix.means[:, group], mix.covs[:, group][:, :, group])
        out = _Mixture(mix.weights, shift[None, :] + f * mix.means, mix.covs * f**2)
        if reps.size < m:
            out.copies = (reps, group)
        # the design-based (no pooling) PPI estimate and covariance, equal for copies
        d_mean, d_cov = shift + f * delta_hat, raw_sigma * f**2
        out.design = (_tie_copies(d_mean, reps, group), _tie_copies(d_cov, reps, group))
        return out

    def _vote_prior_zoo(self) -> bool:
        """A binary zoo of 5 or more distinct models, or one of more classes of 5-6
        (:meth:`_vote_prior_average`)."""
        m1 = self._reps.size - 1
        return m1 > _FEW_CONTRASTS and (self.n_classes == 2 or m1 <= _VOTE_PRIOR_CONTRASTS)

    def _vote_prior_average(
        self,
        flat: _Mixture,
        sigma: NDArray[np.float64],
        delta_hat: NDArray[np.float64],
        d_cov: NDArray[np.float64],
        vote: NDArray[np.float64],
        t: float,
        floor: float,
        spread: float,
        contrast: float,
    ) -> _Mixture:
        """Zoos of 5+ distinct models (of more than 2 classes: 5-6): the few-contrast prior's
        posterior ``B`` and the flat one ``F`` (``flat``) averaged, ``(1 - s) B + s F``, ``s``
        from the labels' check.

        With 2 classes every wrong prediction is the one other class, so a model agrees with
        the vote exactly where both are right or both wrong, and the vote's order tracks the
        accuracies as in Condorcet's setting; the flat prior on the biases' spread of 5+
        models (:func:`_tau_mixture`) left most of the labels' noise in the 5 contrasts of a
        6-model binary zoo, ranking it below its own vote (Spearman 0.75-0.85 against
        0.92). The few-contrast prior (Daniels' at a quarter of the vote's spread, a free
        main axis by eigengap) bets on the vote; the bet is called off by the two checks of
        :func:`_vote_reversal_share`, here summed, ``s = clip(-(z + t) / sqrt 2, 0, 1)``
        (``z`` the GLS slope of the pull ``delta_hat - mean(B)`` on the vote shares, ``t`` the
        vote's accuracy minus the best model's on the labels, each in its sd): at 35 labels
        ``z + t`` is -5.1 / -4.0 / -2.1 (10th / 50th / 90th percentile) on 6 binary experts
        right on disjoint blocks (the vote in reverse), -0.3 / 0.9 / 2.3 on 6 binary models
        of 0.70-0.85 (40 campaigns each). 7+ binary models stayed on the flat prior below
        their vote too (9 of 0.70-0.85, 80 campaigns, Spearman at 35 / 60 / 100 / 180
        labels: 0.879 / 0.863 / 0.875 / 0.897 against the vote's 0.953; averaged: 0.934 /
        0.934 / 0.927 / 0.923), and there the checks are as clear (``z + t`` 1.1 / 1.9 /
        2.6 on those 9 models, -5.6 / -4.6 / -3.5 on 9 binary experts right on disjoint
        blocks, whose Spearman is unchanged). Zoos of 3-4 distinct models are unchanged.

        Zoos of more classes, 5-6 distinct models: here a herd sharing a wrong class reverses
        the vote less plainly per label (6 experts right on disjoint blocks and sharing the
        row's confuser elsewhere: ``z + t`` -3.8 / -1.7 / 0.1 at 35 labels, against 1.8 /
        3.1 / 4.2 where the others are wrong at random and the vote right), and where the
        models fall into families the vote's order is the largest family's (the ranking
        study's 6-model regime: the vote's Spearman 0.83, the flat prior's 0.90). So the bet
        needs the vote ahead, ``s = clip((2 - z - t) / sqrt 2, 0, 1)``, and keeps only the
        share the free main axis leaves, ``1 - s <- (1 - s) (1 - min(1, gap / 0.35)^4)``
        (``gap`` the zoo's largest eigengap, as for the flat share of :func:`_tau_mixture`:
        0.01-0.06 for those experts, 0.15-0.55 for the study's families). 80 campaigns,
        Spearman at 35 / 60 / 100 / 180 labels: 6 experts, the vote right (0.947), 0.771 /
        0.810 / 0.838 / 0.854 -> 0.905 / 0.900 / 0.912 / 0.918; sharing the confuser (the
        vote reversed) 0.502 / 0.608 / 0.716 / 0.775 -> 0.490 / 0.584 / 0.717 / 0.780; 6
        close models 0.961 / 0.969 / 0.968 / 0.976 -> 0.972 / 0.978 / 0.981 / 0.976. The
        binary rule (no shift, no gap) took the reversed experts to 0.307 at 35 labels
        (with the gap alone 0.317) and the study's regime 0.906 / 0.923 -> 0.888 / 0.906 at
        100 / 180 (docs/ranking-notes.md, "Binary zoos of 7+ models; 5-6 models of more
        classes").
        """
        bet = _tau_mixture(
            sigma,
            delta_hat,
            self._prior_parts,
            self._tau0,
            floor,
            scale=spread,
            contrast_floor=contrast,
            few=True,
        )
        z = _vote_slope_z(delta_hat - bet.mean(), d_cov, vote)
        if self.n_classes == 2:
            s = float(np.clip(-(z + t) / math.sqrt(2.0), 0.0, 1.0))
        else:  # the vote at least _VOTE_AHEAD ahead, and no family standing apart
            s = float(np.clip((_VOTE_AHEAD - (z + t)) / math.sqrt(2.0), 0.0, 1.0))
            s = 1 - (1 - s) * (1 - _free_axis_share(self._prior_parts.largest_gap))
        if s <= 0:
            return bet
        if s >= 1:
            return flat
        return _Mixture(
            np.concatenate([(1 - s) * bet.weights, s * flat.weights]),
            np.concatenate([bet.means, flat.means]),
            np.concatenate([bet.covs, flat.covs]),
        )

    def _power(
        self,
        correct: NDArray[np.bool_],
        s_lab: NDArray[np.float64],
        w: NDArray[np.float64],
    ) -> float:
        """PPI++ power tuning for the between-model differences, shrunk to 1 by n0 labels.

        lambda_hat = sum_t w_t <C c_t, C s_t> / sum_t w_t |C s_t|^2 (C centres across models,
        weighted covariance over labelled rows), then (n lambda_hat + n0') / (n + n0') in
        [0, 1], with n0' = n0 clip(lambda_hat / _POWER_TRUST, _POWER_FLOOR, 1) for 7+ distinct
        models (n0 for fewer): where the labels find the vote worthless or reversed
        (lambda_hat <= 0.125) the pull towards trusting it is a quarter of n0 (class
        docstring, ``power_tuning``).
        """
        n = correct.shape[1]
        dc = correct - correct.mean(axis=0, keepdims=True)
        ds = s_lab - s_lab.mean(axis=0, keepdims=True)
        dc = dc - (dc @ w)[:, None]
        ds = ds - (ds @ w)[:, None]
        den = float(((ds**2) @ w).sum())
        if den <= 0:
            return 1.0
        lam_hat = float(((dc * ds) @ w).sum()) / den
        n0 = self._n0
        if self._reps.size >= _POWER_MIN_MODELS:  # not the few-model zoos (their own prior)
            n0 *= min(1.0, max(lam_hat / _POWER_TRUST, _POWER_FLOOR))
        return float(np.clip((n * lam_hat + n0) / (n + n0), 0.0, 1.0))

    def _labelled_estimate(self) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        m = self._n_distinct
        n = self.n_labelled
        if n == 0:
            return np.full(m, 0.5), np.eye(m) * 0.25
        correct = self._labelled_correct().astype(np.float64)
        mean = correct.mean(axis=1)
        # Bayesian bootstrap-like Gaussian: covariance of the paired means, with a
        # Jeffreys-style floor so all-right models are not exactly known; times the
        # finite-population correction 1 - n / N (every row labelled: exact)
        centred = correct - mean[:, None]
        cov = centred @ centred.T / (n * max(n - 1, 1)) + np.eye(m) * 0.25 / (n + 2) ** 2
        return mean, cov * (1 - n / self.n_inputs)

    # ------------------------------------------------------------------ selection
    def _propose_uniform(self, k: int) -> NDArray[np.int64]:
        free = np.flatnonzero(~self._proposed)
        return np.sort(self._gen.choice(free, size=k, replace=False)).astype(np.int64)

    def _propose_sds(self, k: int) -> NDArray[np.int64]:
        if self._sds_order is None:
            budget = max(1, math.ceil(0.25 * self.n_inputs))
            self._sds_order = sds_select(self._pred, budget, rng=self._gen).indices
        out: list[int] = []
        while len(out) < k and self._sds_pos < self._sds_order.size:
            row = int(self._sds_order[self._sds_pos])
            self._sds_pos += 1
            if not self._proposed[row]:
                out.append(row)
        rows = np.asarray(out, dtype=np.int64)
        if rows.size < k:  # SDS candidates used up: continue uniformly
            self._proposed[rows] = True
            rows = np.concatenate([rows, self._propose_uniform(k - rows.size)])
            self._proposed[rows] = False
        return rows

    def _propose_active(self, k: int) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
        post = self._posterior()
        beats = post.prob_beats()
        draws = post.draws(self._gen, min(self._n_draws, _PROPOSE_DRAWS))
        # copies of one model: no order to learn between them (the diagonal stays as it was)
        eye = np.eye(self._n_distinct, dtype=bool)
        same = (self._group[:, None] == self._group[None, :]) & ~eye
        g = np.where(same, 0.0, 4 * beats * (1 - beats)).mean(axis=1) + _share_ties(
            _prob_best(draws), self._group
        )
        u_all = _disagreement(self._pred, g) ** self._pow
        free = ~self._proposed
        u = np.where(free, u_all, 0.0)
        n_free = int(np.count_nonzero(free))
        total = float(u.sum())
        p = np.full(self.n_inputs, self._eta / n_free)
        # every row's draw probability as if it were still free (on the free rows u = u_all)
        p = p + (1 - self._eta) * u_all / total if total > 0 else p / self._eta
        if self._reach is not None:  # every row's expected draws
            self._reach += k * p
        p = np.where(free, p, 0.0)
        # successive sampling without replacement: k smallest exponential keys E_i / p_i
        keys = np.full(self.n_inputs, np.inf)
        idx = np.flatnonzero(free)
        keys[idx] = self._gen.standard_exponential(idx.size) / p[idx]
        rows = np.argpartition(keys, k - 1)[:k]
        rows = rows[np.argsort(keys[rows])].astype(np.int64)
        # weight of a draw: 1 / (N p_i), p over the rows still free (bounded by 1 / eta)
        weights = 1.0 / (n_free * p[rows])
        return rows, weights


CPPI_PARAMS = {
    "uniform_share": Param(
        Interval(float, 0.0, 1.0, closed="right"),
        "CPPI: uniform share of each draw probability",
    ),
}


def _real(value: Any, name: str, bounds: str, ok: Callable[[float], bool]) -> float:
    """``value`` as a float: a finite real number (not a bool) for which ``ok`` holds; else
    an error saying ``name`` must be ``bounds``. ``uniform_share=None`` or ``power="2"`` (a
    config file's text) ended in a raw TypeError from the comparison."""
    if isinstance(value, bool | np.bool_) or not isinstance(
        value, int | float | np.integer | np.floating
    ):
        raise LabelwiseError(f"{name} must be a number {bounds}, got {value!r}")
    v = float(value)
    if not (math.isfinite(v) and ok(v)):
        raise LabelwiseError(f"{name} must be {bounds}, got {value}")
    return v


@validate_params(CPPI_PARAMS)
def cppi_select(
    predictions: ArrayLike,
    budget: int,
    *,
    uniform_share: float = 0.3,
    rng: RNGLike = None,
) -> Selection:
    """One batch of :class:`RankingCampaign`'s active selection, proposed before any label.

    The rows are drawn as in the campaign's first round (module docstring: inputs on which
    the models that the label-free consensus cannot order disagree, with a uniform share
    ``uniform_share``); their proposal weights are kept in ``diagnostics["weights"]`` so
    :meth:`RankingCampaign.from_selection` can give the consensus-PPI ranking, with
    P(best) and rank sets, once they are labelled. A campaign that records labels between
    rounds chooses better: :func:`labelwise.extend` with ``labels=`` (the classes of the rows
    selected so far; ``labelwise select --extend DIR --labels FILE``) adds the campaign's next
    active round, the same rows a :class:`RankingCampaign` given those labels proposes;
    without labels it adds another label-free batch.
    """
    gen = check_rng(rng)
    camp = RankingCampaign(predictions, method="active", rng=gen, uniform_share=uniform_share)
    budget = check_budget(budget, camp.n_inputs)
    rows = camp.propose(budget)
    return _cppi_selection(camp, None, rows, uniform_share, gen)


def _cppi_selection(
    camp: RankingCampaign,
    before: Selection | None,
    rows: NDArray[np.int64],
    uniform_share: float,
    gen: np.random.Generator,
) -> Selection:
    """``before``'s rows (if any) then ``rows``, with every row's proposal weight."""
    old_rows = np.empty(0, np.int64) if before is None else np.asarray(before.indices)
    old_w = [] if before is None else [float(w) for w in before.diagnostics["weights"]]
    return Selection(
        indices=np.concatenate([old_rows, rows]),
        method="cppi",
        population_size=camp.n_inputs,
        params={"uniform_share": float(uniform_share)},
        rng_state=generator_state(gen),
        diagnostics={
            "weights": old_w + [camp._pending[r] for r in rows.tolist()],
            "n_models": camp.n_models,
            "predictions_sha1": _fingerprint(camp._predictions()),
        },
    )


def _cppi_extend(
    selection: Selection,
    data: Any,
    additional: int,
    rng: RNGLike,
    labels: ArrayLike | None = None,
) -> Selection:
    """The next ``additional`` rows: label-free, or (``labels`` of the selected rows given) the
    campaign's next active round after recording them."""
    if data is None:
        raise LabelwiseError("predictions must be given to extend a CPPI selection")
    additional = check_additional(selection, additional)
    gen = generator_for_extension(selection.rng_state, rng)
    share = float(selection.params.get("uniform_share", 0.2))
    camp = RankingCampaign(data, method="active", rng=gen, uniform_share=share)
    camp._adopt(selection)
    if labels is not None:
        camp.record(selection.indices, labels)
    rows = camp.propose(additional)
    return _cppi_selection(camp, selection, rows, share, gen)


class _Mixture:
    """A finite mixture of Gaussians over the models' accuracies (or consensus biases)."""

    def __init__(
        self,
        weights: NDArray[np.float64],
        means: NDArray[np.float64],
        covs: NDArray[np.float64],
    ) -> None:
        self.weights = weights  # (K,)
        self.means = means  # (K, M)
        self.covs = covs  # (K, M, M)
        # (mean, cov) of the unshrunk PPI estimate, when there are labels
        self.design: tuple[NDArray[np.float64], NDArray[np.float64]] | None = None
        # (representatives, group of every model) when some models are identical: draws are
        # made for the representatives and copied, so copies are exactly equal in every draw
        self.copies: tuple[NDArray[np.int64], NDArray[np.int64]] | None = None

    @classmethod
    def gaussian(cls, mean: NDArray[np.float64], cov: NDArray[np.float64]) -> _Mixture:
        return cls(np.ones(1), mean[None, :], cov[None, :, :])

    def mean(self) -> NDArray[np.float64]:
        mu = np.asarray(self.weights @ self.means)
        return mu if self.copies is None else _tie_copies(mu, *self.copies)

    def cov(self) -> NDArray[np.float64]:
        """Total covariance: within-component plus the spread of the component means."""
        mu = self.mean()
        dev = self.means - mu[None, :]
        within = np.einsum("k,kij->ij", self.weights, self.covs)
        cov = np.asarray(within + (dev * self.weights[:, None]).T @ dev)
        return cov if self.copies is None else _tie_copies(cov, *self.copies)

    def prob_beats(self) -> NDArray[np.float64]:
        """P(a beats b) in closed form: sum_k w_k Phi((mu_ka - mu_kb) / sd_k(a - b))."""
        d = np.diagonal(self.covs, axis1=1, axis2=2)  # (K, M)
        var = np.clip(d[:, :, None] + d[:, None, :] - 2 * self.covs, 1e-300, None)
        diff = self.means[:, :, None] - self.means[:, None, :]
        out = np.einsum("k,kab->ab", self.weights, special.ndtr(diff / np.sqrt(var)))
        np.fill_diagonal(out, 0.5)
        return np.asarray(out)

    def draws(self, gen: np.random.Generator, n_draws: int) -> NDArray[np.float64]:
        """``n_draws`` draws; the component of each draw is drawn with the weights."""
        if self.copies is not None:
            reps, group = self.copies
            sub = _Mixture(self.weights, self.means[:, reps], self.covs[:, reps][:, :, reps])
            return sub.draws(gen, n_draws)[:, group]
        k, m = self.means.shape
        counts = gen.multinomial(n_draws, self.weights) if k > 1 else np.array([n_draws])
        out = np.empty((n_draws, m))
        at = 0
        used = np.flatnonzero(counts)
        roots = _roots(self.covs[used])
        for j, root in zip(used.tolist(), roots, strict=True):
            c = int(counts[j])
            out[at : at + c] = self.means[j][None, :] + gen.standard_normal((c, m)) @ root.T
            at += c
        return out[gen.permutation(n_draws)] if k > 1 else out


def _roots(covs: NDArray[np.float64]) -> NDArray[np.float64]:
    """:func:`_root` of each of a stack of covariances (one batched Cholesky when it works)."""
    try:
        return np.asarray(np.linalg.cholesky(covs))
    except np.linalg.LinAlgError:
        return np.stack([_root(c) for c in covs]) if len(covs) else covs


def _root(cov: NDArray[np.float64]) -> NDArray[np.float64]:
    """A matrix ``R`` with ``R R' = cov`` (Cholesky, with a small ridge if needed)."""
    scale = max(float(np.trace(cov)) / cov.shape[0], 1e-300)
    for ridge in (0.0, 1e-10, 1e-8, 1e-6):
        try:
            return np.asarray(np.linalg.cholesky(cov + np.eye(cov.shape[0]) * ridge * scale))
        except np.linalg.LinAlgError:
            continue
    vals, vecs = linalg.eigh(cov, driver="evr")
    return np.asarray(vecs * np.sqrt(np.clip(vals, 0, None))[None, :])


_N_TAU = 40
_FEW_SEEN = 2
_PROPOSE_DRAWS = 1000
# RankingCampaign._power: below lambda_hat = _POWER_TRUST the labels' pull away from the vote
# is weighed against a prior of fewer labels, down to _POWER_FLOOR n0
_POWER_TRUST = 0.5
_POWER_FLOOR = 0.25
_POWER_MIN_MODELS = 7
_KAPPA = 0.04
_TAU_PRIOR_POW = 1.0
_TAU_MAX = 2.0
_N_T1 = 12
_T1_MIN = 0.01
_P_FREE = 0.5
# few contrasts (3 or 4 distinct models): uniform shrinkage prior, free main axis by eigengap
_FEW_CONTRASTS = 3
_P_FREE_FEW = 0.9
_GAP_FREE = 0.35
_FEW_SCALE = 0.25


def _state_entropy(gen: np.random.Generator) -> int:
    """128 bits from a SHA-256 of ``gen``'s bit-generator state, drawing nothing from it: a
    seeded generator (or one restored from a selection's stored state, as ``select --extend``
    and ``rank`` do) gives the same entropy every time."""
    state = json.dumps(
        gen.bit_generator.state,
        sort_keys=True,
        default=lambda v: v.tolist() if hasattr(v, "tolist") else str(v),
    )
    return int.from_bytes(hashlib.sha256(state.encode()).digest()[:16], "little")


_VOTE_PRIOR_CONTRASTS = 5  # zoos of more than 2 classes: the vote's prior for up to 6 models
_VOTE_AHEAD = 2.0  # ... where the labels' checks put the vote this far (z + t) ahead
_P_WIDE_FEW = 0.2  # few contrasts: the flat tau prior's share beside Daniels' (times the share
# the free axis leaves)
_GATE_TOP = 5


def _vote_reversal_share(
    pull: NDArray[np.float64],
    d_cov: NDArray[np.float64],
    vote: NDArray[np.float64],
    vote_minus_best: NDArray[np.float64],
    w: NDArray[np.float64],
) -> float:
    """How far (in [0, 1]) 3-4 models' pooled estimate moves to the design-based one.

    The few-contrast prior (:func:`_tau_mixture`) bets that the vote's order is right: the
    biases' spread is a quarter of the vote's. Two checks of that bet on the labels, each in
    its own sd. ``z``: the generalised-least-squares slope of the pull ``p = d - post``
    (design-based minus pooled accuracies, design covariance ``D``) on the models' mean vote
    agreement ``sbar``, ``z = b_hat / sd(b_hat)``, ``b_hat = [(X' D^-1 X)^-1 X' D^-1 p]_1``,
    ``X = [1, sbar - mean sbar]``: do the labels rank the models less like the vote than
    the pooled estimate does? (On the design-based accuracies themselves, ``z`` stayed
    negative where the free main axis had already followed the labels: a near-copy pair
    or two of three models sharing a class error at 180 labels lost 0.05.) ``t``: the
    weighted mean of ``1[vote right] - 1[model k right]`` over the labelled rows (weights
    ``w``, summing to 1) in its sd, ``k`` the model of largest design estimate: is the vote
    more accurate than the best model, as it is when the models' errors are independent
    enough for the vote to carry information (Condorcet)? The share is ``clip(-z, 0, 1)
    clip(-t, 0, 1)``: 0 unless both go against the vote, 1 where both are a sd or more
    against it. Medians at 35 labels (120 campaigns of the code before): models right on
    disjoint blocks of rows and sharing one wrong class elsewhere (the vote in reverse)
    ``z`` -1.1 / -0.6 (3 / 4 models), ``t`` -1.1 / -1.0; a near-copy pair beside a better
    model -0.8 / -0.6; 3 close models 0.4 / 1.4, 3 weak ones 0.7 / 0.7, 3 binary ones 0.9 /
    0.0 (docs/ranking-notes.md, "Few models against the vote").
    """
    if w.size < 2:
        return 0.0
    z = _vote_slope_z(pull, d_cov, vote)
    t = _weighted_t(vote_minus_best, w)
    return float(np.clip(-z, 0.0, 1.0) * np.clip(-t, 0.0, 1.0))


def _vote_slope_z(
    pull: NDArray[np.float64], d_cov: NDArray[np.float64], vote: NDArray[np.float64]
) -> float:
    """GLS slope of ``pull`` on ``vote`` in its sd (0 where undefined)."""
    x = vote - float(np.mean(vote))
    if float(np.ptp(x)) <= 0:
        return 0.0
    xmat = np.stack([np.ones_like(x), x], axis=1)
    try:
        a = xmat.T @ np.linalg.solve(d_cov, xmat)
        coef = np.linalg.solve(a, xmat.T @ np.linalg.solve(d_cov, pull))
        var_b = float(np.linalg.inv(a)[1, 1])
    except np.linalg.LinAlgError:
        return 0.0
    return float(coef[1]) / math.sqrt(var_b) if var_b > 0 else 0.0


def _weighted_t(x: NDArray[np.float64], w: NDArray[np.float64]) -> float:
    """The weighted mean of ``x`` (weights ``w`` summing to 1) in its sd (0 where undefined)."""
    mean = float(x @ w)
    var = float(((x - mean) ** 2) @ w**2)
    return mean / math.sqrt(var) if var > 0 else 0.0


def _leader_shrinkage_gate(
    mean: NDArray[np.float64],
    design: tuple[NDArray[np.float64], NDArray[np.float64]] | None,
) -> float:
    """How far pooling moved the leaders, as a share in [0, 1] of the contrast floor to use.

    ``T`` is the mean, over the ``_GATE_TOP`` models of largest posterior accuracy, of
    ``(design - posterior) / design sd``: how many of their own sampling sd the hierarchical
    prior pulled the leaders' accuracies. The gate is ``clip(T - 0.5, 0, 1)``. Measured
    (median over campaigns at 40-180 labels): the real MNIST-1D CNN zoo 1.4-2.6 and the
    digits zoo 1.5-2.2, whose vote orders the top wrongly; the synthetic strong-close,
    weak, 6-model and 5-model zoos 0.2, 0.4, 0.1 and 0.03 (90th percentiles <= 0.7); the
    spread zoo 1.7-2.0.
    """
    if design is None:
        return 0.0
    d_mean, d_cov = design
    sd = np.sqrt(np.clip(np.diag(d_cov), 0, None))
    top = np.argsort(-mean, kind="stable")[:_GATE_TOP]
    ok = sd[top] > 0
    if not ok.any():
        return 0.0
    t = float(np.mean((d_mean[top][ok] - mean[top][ok]) / sd[top][ok]))
    return float(np.clip(t - 0.5, 0.0, 1.0))


_TREND_PULL = 1.5  # T (design sd) from which a pull the vote's trend explains is not limited
_TREND_RESIDUAL = 0.5  # the leaders' pull beyond that trend (design sd) that is still limited


def _translation_gate(
    mean: NDArray[np.float64],
    design: tuple[NDArray[np.float64], NDArray[np.float64]] | None,
    gate: float,
    vote: NDArray[np.float64],
) -> float:
    """The limited translation's gate: ``gate``, or 0 where a trend in the vote explains the pull.

    The leaders' pull ``T`` (:func:`_leader_shrinkage_gate`) has two causes. On the herd-led
    real zoos the best models agree *less* with the vote than the herd behind them, and
    pooling pulls exactly them: the pull is not a function of the vote share. On the
    synthetic spread zoo the vote's order is right but pooling under-credits every model
    in proportion to how much it agrees with the vote: the pull ``d - post`` of all models
    rises linearly with the vote share ``sbar``. Fitted by weighted least squares over all
    models, ``d_m - post_m = a + b (sbar_m - mean sbar) + r_m`` (weights ``1 / sd_m^2``,
    design sd), the leaders' residual pull ``T_res`` (the mean of ``r_m / sd_m`` over the
    ``_GATE_TOP`` leaders) is 0.44 (10th-90th percentile 0.08-0.96) on the spread zoo,
    1.1 (0.53-1.65) on MNIST-1D and 1.0 (0.30-1.85) on digits (40 campaigns at 40-180
    labels). Limiting a pull the trend explains only swaps the leaders by their PPI noise:
    the limit is dropped where ``T >= _TREND_PULL`` and ``T_res <= _TREND_RESIDUAL``. A
    moderate pull (``T < 1.5``) is always limited: the nested 8-model zoo of the
    comparative test (pull 0.85-1.45, its vote's top three reversed) is linear in the vote
    share too (``T_res`` -0.38-0.02), and there the limit is what puts the best model first.
    With few models the five leaders weigh much in the fit and it absorbs part of their own
    pull (20 models, leaders 2 sd beyond a linear trend: ``T_res`` 0.65), so the residual
    is a measure for zoos of 20+ models; a trend falling with the vote share (the herd's
    signature, slope ``b <= 0``) always keeps the limit.
    """
    if design is None or gate <= 0:
        return gate
    d_mean, d_cov = design
    sd = np.sqrt(np.clip(np.diag(d_cov), 0, None))
    ok = sd > 0
    top = np.argsort(-mean, kind="stable")[:_GATE_TOP]
    top = top[ok[top]]
    if ok.sum() < 3 or top.size == 0:
        return gate
    pull = (d_mean - mean) / np.where(ok, sd, 1.0)
    if float(np.mean(pull[top])) < _TREND_PULL:
        return gate
    x = np.stack([np.ones(ok.sum()), vote[ok] - float(np.mean(vote[ok]))], axis=1)
    coef = np.linalg.lstsq(x / sd[ok, None], pull[ok], rcond=None)[0]
    resid = pull - (coef[0] + coef[1] * (vote - float(np.mean(vote[ok])))) / np.where(ok, sd, 1.0)
    rising = coef[1] > 0  # a pull falling with the vote share is the herd's signature
    return 0.0 if rising and float(np.mean(resid[top])) <= _TREND_RESIDUAL else gate


_CONTENDER_Z = 1.96  # a design interval of 95 % that reaches the fifth leader: a contender
_TRANSLATION_SD = 1.0  # c(g) = _TRANSLATION_SD / g: design sd at g = 1


def _limited_translation(
    mean: NDArray[np.float64],
    cov: NDArray[np.float64],
    design: tuple[NDArray[np.float64], NDArray[np.float64]] | None,
    gate: float,
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Pooled accuracies held within ``c = 1 / g`` design sd of the PPI ones; the added cov.

    Limited translation (Efron & Morris 1972, "Limiting the risk of Bayes and empirical
    Bayes estimators - Part II", JASA 67(337)): the pooled estimate of a model may
    move at most ``c sd_m`` from its design-based PPI estimate ``d_m``,
    ``acc_m = clip(post_m, d_m - c sd_m, d_m + c sd_m)``, with ``c = 1 / g`` and ``g`` in
    [0, 1] the leaders' shrinkage gate (:func:`_leader_shrinkage_gate`): no limit where
    the check passes (``g = 0``), one design sd where it fails (``g = 1``). Where the limit
    binds (the set ``B``) the posterior is translated with it and its covariance is raised
    to at least the design's on ``B``: the returned ``pad`` is ``(D_BB - P_BB)_+``
    (:func:`_psd_max`, 0 off ``B``), so ``P + pad >= D`` there in the PSD order and P(best)
    drawn from the translated posterior is no surer of a moved model than its design.
    Without the pad (means translated, covariance kept) P(best) was overconfident: the
    first-ranked model of the MNIST-1D zoo claimed 0.78 / 0.73 / 0.68 for 0.30 / 0.30 /
    0.37 observed (30 campaigns at 40 / 90 / 180 labels; Brier 1.14 / 1.07 / 0.88 against
    0.98 / 0.90 / 0.78 with it).

    Only the contenders are held: the ``_GATE_TOP`` models of largest ``mean`` (those whose
    pull the gate measured) and every model whose design interval reaches the fifth of
    them, ``d_m + 1.96 sd_m >= mean_(5)`` (a best model the pooling put lower, as on the
    herd-led zoos, is one). The gate is evidence about the leaders only; a model whose own
    labels put it out of their reach cannot be the best, and holding it near its PPI
    estimate only added that estimate's noise to the order of the rest: the spread zoo (24
    models, the vote's order right, the limit on in about 60 % of its states) ranked below
    its vote at 35-80 labels, Spearman 0.9889 / 0.9879 / 0.9876 / 0.9881 at 35 / 40 / 45 /
    50 labels against the vote's 0.9911 (seeds 0-1 of the ranking study, 60 campaigns);
    contenders only 0.9903 / 0.9903 / 0.9894 / 0.9897, the mean over sizes 0.9909 ->
    0.9917, Jaccard@k and regret identical (docs/ranking-notes.md, "The limited
    translation's contenders (rk31)").
    """
    m = mean.size
    pad = np.zeros((m, m))
    if design is None or gate <= 0:
        return mean, pad
    d_mean, d_cov = design
    sd = np.sqrt(np.clip(np.diag(d_cov), 0, None))
    c = _TRANSLATION_SD / gate
    moved = np.clip(np.clip(mean, d_mean - c * sd, d_mean + c * sd), 0.0, 1.0)
    # only the contenders: the leaders and the models whose design interval reaches them
    fifth = np.sort(mean)[::-1][min(_GATE_TOP, m) - 1]
    contender = (mean >= fifth) | (d_mean + _CONTENDER_Z * sd >= fifth)
    moved = np.where(contender, moved, mean)
    bind = np.flatnonzero(moved != mean)
    if bind.size:
        blk = np.ix_(bind, bind)
        pad[blk] = _psd_max(cov[blk], d_cov[blk]) - cov[blk]
    return moved, pad


def _tempered_draws(
    draws: NDArray[np.float64],
    mean: NDArray[np.float64],
    excess: float,
    group: NDArray[np.int64],
) -> NDArray[np.float64]:
    """The leaders' draws spread about ``mean`` by ``s = sqrt(1 + excess)``.

    The leaders ``L`` are the ``_GATE_TOP`` models of largest ``mean`` (and their copies,
    ``group``): ``draw_L -> mean_L + s (draw_L - mean_L)``, the other models' draws kept.
    Their covariance becomes ``(1 + excess)`` times that of ``draws`` (under a flat prior,
    the posterior of the labels' likelihood raised to ``1 / (1 + excess)``, a tempered
    posterior), so P(best) and P(A beats B) among the leaders are less sure while the
    models far behind stay as well ordered.
    :meth:`RankingCampaign.ranking` uses ``excess = l n0 / n_s`` (``l`` the limited
    translation's gate, ``n0`` ``prob_temper``, ``n_s`` the labelled rows where the leaders
    split; see ``prob_temper``).
    Tempering every model instead cost the pairs far apart: Brier score of P(A beats B)
    over all pairs of the MNIST-1D zoo at 40 labels 0.034 -> 0.051 (the leaders only 0.038),
    for the same gain among the five leaders (0.256 -> 0.240).
    """
    if excess <= 0:
        return draws
    top = np.argsort(-mean, kind="stable")[:_GATE_TOP]
    lead = np.flatnonzero(np.isin(group, group[top]))
    out = draws.copy()
    s = math.sqrt(1.0 + excess)
    out[:, lead] = mean[None, lead] + s * (draws[:, lead] - mean[None, lead])
    return out


def _psd_max(a: NDArray[np.float64], b: NDArray[np.float64]) -> NDArray[np.float64]:
    """``a + (b - a)_+`` (positive part by eigh): >= ``a`` and >= ``b`` in the PSD order.

    Equal to ``a`` wherever ``a`` already exceeds ``b``; so a floor ``b`` only binds in the
    directions where the measured covariance ``a`` is below it.
    """
    d = (b - a + (b - a).T) / 2
    vals, vecs = linalg.eigh(d, driver="evr")
    pos = np.clip(vals, 0, None)
    return np.asarray(a + (vecs * pos[None, :]) @ vecs.T)


class _PriorParts:
    """A centred basis ``Q`` and, per bias kernel, ``(Q' K Q, its inverse, mean eigenvalue)``;
    ``tops[k]``: the leading eigenpair ``(lambda_1, e_1)`` of a shaped kernel's ``Q' K Q``
    (None for the independent one), the direction whose scale is free (:func:`_tau_mixture`);
    ``gaps[k]``: its relative eigengap ``(lambda_1 - lambda_2) / lambda_1`` (None likewise)."""

    def __init__(
        self,
        basis: NDArray[np.float64],
        kernels: list[tuple[NDArray[np.float64], NDArray[np.float64], float]],
        tops: list[tuple[float, NDArray[np.float64]] | None],
        gaps: list[float | None],
    ) -> None:
        self.basis = basis
        self.kernels = kernels
        self.tops = tops
        self.gaps = gaps

    @property
    def largest_gap(self) -> float:
        """The zoo's largest eigengap over its shaped kernels (0 with none)."""
        return max((x for x in self.gaps if x is not None), default=0.0)


def _free_axis_share(gap: float) -> float:
    """How free the main axis of the models' disagreement is, by its eigengap:
    ``min(1, gap / _GAP_FREE)^4`` (0 for no gap, 1 from ``_GAP_FREE`` on)."""
    return min(1.0, gap / _GAP_FREE) ** 4


def _helmert_basis(m: int) -> NDArray[np.float64]:
    """(m, m - 1) orthonormal basis of the vectors summing to 0 (Helmert contrasts)."""
    q = np.zeros((m, m - 1))
    for k in range(1, m):
        q[:k, k - 1] = 1.0
        q[k, k - 1] = -float(k)
        q[:, k - 1] /= math.sqrt(k * (k + 1))
    return q


def _prior_parts(kernels: Sequence[NDArray[np.float64]]) -> _PriorParts:
    """Decompose the kernels once (eigenvalues floored at 1e-4 of the largest).

    The shaped kernels (all but the last, the independent one) also give their leading
    eigenpair, the main axis of the models' disagreement (:func:`_tau_mixture`).
    """
    m = kernels[0].shape[0]
    q = _helmert_basis(m)
    out = []
    tops: list[tuple[float, NDArray[np.float64]] | None] = []
    gaps: list[float | None] = []
    for i, kernel in enumerate(kernels):
        k_q = q.T @ kernel @ q
        vals, vecs = linalg.eigh((k_q + k_q.T) / 2, driver="evr")
        vals = np.clip(vals, max(float(vals.max()), 1e-12) * 1e-4, None)
        out.append(
            (
                (vecs * vals[None, :]) @ vecs.T,
                (vecs / vals[None, :]) @ vecs.T,
                float(vals.mean()),
            )
        )
        shaped = i < len(kernels) - 1 and m > 2
        tops.append((float(vals[-1]), np.asarray(vecs[:, -1])) if shaped else None)
        gaps.append(float((vals[-1] - vals[-2]) / vals[-1]) if shaped else None)
    return _PriorParts(q, out, tops, gaps)


def _tau_mixture(
    sigma: NDArray[np.float64],
    delta_hat: NDArray[np.float64],
    parts: _PriorParts,
    tau0: float,
    floor: float,
    *,
    scale: float | None = None,
    contrast_floor: float = 0.0,
    few: bool | None = None,
) -> _Mixture:
    """Posterior of the biases, prior spread and shape integrated out (hierarchical Bayes).

    Model: ``delta_hat ~ N(delta, Sigma)``, ``delta = mu 1 + eta``, ``eta ~ N(0, tau^2 K)`` on
    the centred subspace, ``K`` one of ``kernels`` (:func:`_bias_kernels`, equal prior
    weight). The common level ``mu`` is the plain mean of ``delta_hat`` (variance
    ``1' Sigma 1 / M^2``): a generalised-least-squares mean would weight the models by the
    inverse of a covariance estimated from few labels, and such weights (of either sign) put
    the level outside the models' estimates. The contrasts ``y = Q' delta_hat`` (``Q`` an
    orthonormal basis of the centred subspace) are ``N(Q' eta, S)``, ``S = Q' Sigma Q``, so
    for given ``tau`` and ``K`` (``K_q = Q' K Q``)

        cov_q = (S^-1 + K_q^-1 / tau^2)^-1,   mean_q = cov_q S^-1 y,

    with restricted likelihood ``y ~ N(0, S + tau^2 K_q)``. ``tau`` is uniform on [tau0, 2]
    (Gelman 2006, Sec. 4.3: uniform on the scale, not its log, so a small zoo is not
    over-shrunk), on a grid of 40 log-spaced values weighted by their spacing; the result is
    the mixture of the Gaussian posteriors by posterior weight of ``(tau, K)``. This replaces
    the plug-in empirical-Bayes ``tau^2``, whose posterior ignores how uncertain ``tau`` is
    and so is too narrow for models far from the others (Morris 1983, Sec. 4: the extra
    ``B^2 (y - ybar)^2`` term). Few contrasts (2 or 3: 3 or 4 distinct models) are the
    exception, below. ``floor`` > 0 (the rank-set guard) widens every component to
    the covariance at ``tau^2 K`` with ``tau^2 >= floor / mean eigenvalue of K_q``, keeping
    its mean. ``scale`` (accuracy units; default ``tau0``): the prior scale of the spread for
    few contrasts (below). ``contrast_floor`` > 0 (5+ models) gives every component the
    covariance of the prior ``P + contrast_floor^2 K_2`` (``P - P (S + P)^-1 P`` with ``P``
    so raised), its mean and weight kept: ``Var(delta_a - delta_b) >= (contrast_floor
    D_ab)^2`` a priori (:class:`RankingCampaign`'s ``contrast_floor``). ``few`` (default:
    ``2 <= M - 1 <= 3``) asks for the few-contrast prior below at any number of models
    (:meth:`RankingCampaign._vote_prior_average`).

    A free main axis (automatic relevance determination of one direction; MacKay 1994,
    Neal 1996): for the shaped kernels, with prior probability 1/2 the leading eigenvector
    ``e_1`` of ``K_q`` (eigenvalue ``lambda_1``) has prior variance
    ``(tau^2 + t1^2) lambda_1``, ``t1`` on 12 log-spaced values in [0.01, 2] (equal weight).
    One spread for all contrasts cannot fit a zoo whose biases split along one axis: a herd
    of 6 models of 9, all calling class 0 class 1, has 15 herd-internal contrasts near 0 and
    one herd-against-the-rest contrast of -0.3 +- 0.1 at 35 labels; the shared ``tau`` was
    fitted to the many small ones and shrank the large one back to the vote (Spearman
    -0.49 / -0.38 / 0.19 at 35 / 100 / 180 labels, 20 campaigns; with the free axis -0.20 /
    0.53 / 0.68, SRS 0.54 / 0.66 / 0.76). Both terms of the likelihood follow from the
    solves at ``t1 = 0`` (matrix determinant lemma, Sherman-Morrison), and the prior
    precision changes only in ``e_1`` (:func:`_prior_precisions`).

    Few contrasts (``2 <= M - 1 <= 3``). The restricted likelihood of 2-3 contrasts does not
    identify ``tau``: it is flat below the noise and falls only like ``tau^-(M-1)`` above it,
    so the uniform prior left about half of every contrast's noise in the posterior (3
    independent models of 0.78 / 0.80 / 0.82: noise sd 0.02-0.09 against true differences
    of 0.02; Spearman 0.64 at 35 labels, the vote 0.97). Here ``tau`` has Daniels' uniform
    shrinkage prior (Daniels 1999, "A prior for the variance in hierarchical models",
    Canadian J. Statist. 27(3): uniform on ``B = s0 / (s0 + tau^2)``, density
    ``2 tau s0 / (s0 + tau^2)^2``, ``s0 = (M - 1) / tr(S^-1 K_q)`` the harmonic mean of the
    contrasts' sampling variances per unit of prior variance, i.e. the generalised
    eigenvalues of ``(S, K_q)``): a priori the data and the vote weigh alike. The vote's bias
    that is structural, a family of models against the rest, is carried by the main axis
    instead: with prior probability 0.9 its spread ``t1`` is uniform on [0, 2] (the flat
    prior the common spread had; grid weights proportional to ``t1``) and its prior variance
    is ``tau^2 lambda_1 + t1^2 (lambda_1 - lambda_2)``: the eigengap, so the axis exists
    only as far as the leading direction stands out (a near-copy pair beside a third model:
    gap 0.77 lambda_1) and vanishes where the models are exchangeable and ``e_1`` is an
    arbitrary direction (3 independent models: gap 0.04-0.09 lambda_1). 240 campaigns per
    zoo (N 5,000, 5-label rounds), Spearman at 35 / 60 / 100 / 180 labels: those 3 models
    0.62 / 0.72 / 0.81 / 0.88 -> 0.70 / 0.78 / 0.84 / 0.92; 4 at 0.77-0.83 0.89 / 0.93 ->
    0.95 / 0.96; the vote wrong, 3 near-copies beside a better model -0.04 / 0.15 / 0.43 ->
    0.07 / 0.31 / 0.55, a near-copy pair beside one -> 0.19 / 0.37 -> 0.09 / 0.33 at 35 / 60
    (within noise, +-0.07), then 0.56 / 0.71 -> 0.59 / 0.77. Zoos of 2 and of 5 or more
    models are unchanged: at 5 models (4 contrasts) the 5-model calibration test's P(best)
    became underconfident beyond its bound (bin 0.5-0.7: 0.61 predicted, 0.78 observed).

    That prior, at the noise's scale, still kept 0.4-0.5 of the noise of every contrast, at
    any number of labels (it is scale-free), and the free axis leaked more: the eigengap of
    exchangeable models is 0.04-0.10, small but times ``t1^2`` up to 4 a spread far above
    the noise, and 0.9 of the prior on it (3 models of 0.79 / 0.81 / 0.83, 35 labels: a
    contrast of sd 0.03 kept 0.46; Spearman 0.78 against the vote's 0.98). The vote's biases
    of exchangeable models barely differ (there: sd 0.0056 across models, against 0.017 for
    the accuracies, and mostly along the vote's own order), so Daniels' scale ``s0`` is
    capped at ``scale^2`` per unit prior variance, ``scale`` (from the campaign) a quarter
    of the spread (sd) of the models' mean agreements ``sbar``, at least ``tau0``: a priori
    the biases differ by about a quarter of what the vote sees (3 models 0.0032, a perfect
    model beside three of 0.65-0.85 0.025). And the free axis' prior probability is
    ``0.9 min(1, gap / 0.35)^4``: full for a near-copy pair beside a third model (gap 0.92)
    or two of three sharing a class error (0.40), 0.006 for exchangeable models (0.10). A
    contrast of 1 noise sd among exchangeable models is then kept 0.02-0.04, one of 4 sd
    0.84 (the labels still overrule the vote when they are clear). 240 campaigns per zoo
    (N 5,000, 5-label rounds), Spearman at 35 / 60 / 100 / 180 labels, before -> after: 3
    close models 0.78 / 0.82 / 0.90 / 0.92 -> 0.97 / 0.97 / 0.97 / 0.96 (vote 0.98); 4 close
    0.92 / 0.94 / 0.96 / 0.97 -> 0.99 (vote 1.00); the vote wrong (3 near-copies beside a
    better model, a near-copy pair beside one, 2 of 3 sharing a class error) within noise
    (+-0.04-0.05; table in docs/ranking-notes.md). Without the quarter of the vote's
    spread (``scale`` = ``tau0``) the close zoos reach the vote exactly, but a perfect model
    beside three of 0.65-0.85 was estimated 0.087 / 0.070 low at 30 / 60 labels (0.057 /
    0.035 before; 0.064 / 0.028 now): its bias truly differs from the others'.

    That capped scale is a bet that the vote tracks the accuracies. Where it does not and
    no family stands apart (3-4 models each right on its own block of rows and sharing one
    wrong class elsewhere: the vote ranks them in reverse, eigengaps 0.04-0.09, so the free
    axis is off) the labels' contrasts lie far beyond it, and Daniels' tail (``tau^-3``)
    against a likelihood flat up to them still kept the posterior near the vote (a
    contrast of 4 noise sd kept 0.85). So the prior of ``tau`` is a mixture: ``1 - p`` of
    Daniels' at the capped scale and ``p`` of the flat prior on [tau0, 2] that 5+ models
    have, ``p = 0.2 (1 - min(1, gap / 0.35)^4)`` (``_P_WIDE_FEW``, ``gap`` the zoo's largest
    eigengap): the share the free axis leaves, so a zoo with one dominant axis (near-copies,
    a family sharing a class error) keeps its explanation and is unchanged. The restricted
    likelihood weighs the parts; contrasts within the noise have little likelihood under
    the flat part (one noise sd kept 0.059 -> 0.072, 4 sd 0.85 -> 0.95). 80 campaigns per
    zoo, 5-label rounds, Spearman at 35 / 60 / 100 / 180 labels, before -> after: 4
    disjoint experts 0.01 / 0.35 / 0.54 / 0.75 -> 0.33 / 0.48 / 0.67 / 0.79, 3 of them
    -0.14 / 0.29 / 0.61 / 0.82 -> 0.55 / 0.66 / 0.76 / 0.84; binary (2 classes, 3 models of
    0.70-0.85) 0.80 / 0.81 / 0.82 / 0.83 -> 0.84 / 0.84 / 0.86 / 0.87; 3 close models
    0.975 / 0.981 / 0.963 / 0.963 -> 0.975 / 0.981 / 0.981 / 0.969; near-copy and
    shared-class-error zoos identical. Tried: ``p = 0.2`` for every zoo (not by the gap)
    cost a near-copy pair beside a better model 0.05-0.20 at 35-100 labels (by each
    kernel's own gap: 0.03-0.08); ``p = 0.5`` cost 3 close models 0.03-0.08 and kept one
    noise sd 0.115.
    """
    m = delta_hat.size
    taus = np.geomspace(tau0, max(_TAU_MAX, 2 * tau0), _N_TAU)
    tau2 = taus**2
    t1_2 = np.geomspace(_T1_MIN, _TAU_MAX, _N_T1) ** 2
    q = parts.basis
    proj = np.full((m, m), 1.0 / m)
    y = q.T @ delta_hat
    s_q = q.T @ sigma @ q
    s_q = (s_q + s_q.T) / 2
    s_inv = np.asarray(np.linalg.inv(s_q), dtype=np.float64)
    # every (K, tau, t1) at once: batched determinants and solves of the (M-1)-square
    # matrices over tau; the free axis (prior variance + t1^2 lambda_1 e_1 e_1') is a rank-1
    # update of each, so its likelihood follows from the same solves (matrix determinant
    # lemma and Sherman-Morrison)
    n_tau = taus.size
    if few is None:
        few = 2 <= m - 1 <= _FEW_CONTRASTS
    logw_parts, kern_parts, t2_parts, t1_parts = [], [], [], []
    for k, ((k_q, _, k_mean), top, gap) in enumerate(
        zip(parts.kernels, parts.tops, parts.gaps, strict=True)
    ):
        if few:  # uniform shrinkage prior at the smaller of the noise and the vote's scale,
            # mixed with the flat prior (_P_WIDE_FEW); both times the log grid's spacing tau
            ref = tau0 if scale is None else scale
            s0 = min((m - 1) / float(np.trace(s_inv @ k_q)), ref**2 / k_mean)
            # the share the free main axis leaves: by the zoo's largest eigengap, for every
            # kernel (the unshaped one has no axis, the zoo still has one)
            p_wide = _P_WIDE_FEW * (1 - _free_axis_share(parts.largest_gap))
            dens = (1 - p_wide) * 2 * tau2 * s0 / (s0 + tau2) ** 2
            dens = dens + p_wide * taus / (taus[-1] - taus[0])
            log_tau = np.log(dens)
        else:  # uniform on [tau0, 2], times the log grid's spacing tau
            log_tau = _TAU_PRIOR_POW * np.log(taus)
        v = s_q[None, :, :] + tau2[:, None, None] * k_q[None, :, :]
        logdet = np.linalg.slogdet(v)[1]
        rhs = y[:, None] if top is None else np.stack([y, math.sqrt(top[0]) * top[1]], axis=1)
        sol = np.linalg.solve(v, np.broadcast_to(rhs[None], (n_tau, *rhs.shape)))
        yvy = sol[:, :, 0] @ y
        if top is None:
            logw_parts.append(-0.5 * (logdet + yvy) + log_tau)
            a = np.zeros((1, n_tau))
        else:
            u = rhs[:, 1]
            uvu, uvy = sol[:, :, 1] @ u, sol[:, :, 1] @ y
            a = np.concatenate([np.zeros(1), t1_2])[:, None] * np.ones(n_tau)[None, :]
            if few:  # the free variance t1^2 (lambda_1 - lambda_2) = (t1^2 gap) lambda_1
                assert gap is not None  # a shaped kernel's
                a = a * gap
            den = 1 + a * uvu[None, :]
            ll = -0.5 * (logdet[None, :] + np.log(den) + yvy[None, :] - a * uvy[None, :] ** 2 / den)
            if few:  # P(free) 0.9 (less below the gap _GAP_FREE), t1 uniform: grid weights
                # proportional to t1
                assert gap is not None
                p_free = _P_FREE_FEW * _free_axis_share(gap)
                t1 = np.sqrt(t1_2)
                prior = np.log(np.concatenate([[1 - p_free], p_free * t1 / t1.sum()]))
                prior = prior[:, None]
            else:
                prior = np.full((a.shape[0], 1), math.log(_P_FREE / _N_T1))
                prior[0] = math.log(1 - _P_FREE)
            logw_parts.append((ll + log_tau[None, :] + prior).ravel())
        kern_parts.append(np.full(a.size, k))
        t2_parts.append(np.broadcast_to(tau2[None, :], a.shape).ravel())
        t1_parts.append(a.ravel())
    logw = np.concatenate(logw_parts)
    wts = np.exp(logw - logw.max())
    wts /= wts.sum()
    keep = np.flatnonzero(wts > 1e-4 * wts.max())
    wts = wts[keep] / wts[keep].sum()
    kernel = np.concatenate(kern_parts)[keep]
    t2 = np.concatenate(t2_parts)[keep]
    t1_sq = np.concatenate(t1_parts)[keep]
    cov_q = _posterior_covs(s_inv, _prior_precisions(parts, kernel, t2, t1_sq))
    mean_q = cov_q @ (s_inv @ y)
    g = floor / np.array([kp[2] for kp in parts.kernels])[kernel]
    wide = g > t2  # the guard: the covariance at tau^2 = g, the mean at tau
    if contrast_floor > 0 and m - 1 > _FEW_CONTRASTS:
        # the contrast floor (with the guard's tau^2): the covariance of each component with
        # the prior P + contrast_floor^2 K_2 (cov = P' - P' (S + P')^-1 P'), its mean and
        # weight kept; it replaces every covariance, the guard's too
        c_floor = contrast_floor**2 * parts.kernels[1][0]
        t2_f = np.where(wide, g, t2)
        cov_q = _covs_from_prior(s_q, _floored_priors(parts, kernel, t2_f, t1_sq, c_floor))
    elif wide.any():
        cov_q[wide] = _posterior_covs(
            s_inv, _prior_precisions(parts, kernel[wide], g[wide], t1_sq[wide])
        )
    fixed = proj @ delta_hat
    level = proj @ sigma @ proj.T
    means = fixed[None, :] + mean_q @ q.T
    covs = level[None, :, :] + q[None, :, :] @ cov_q @ q.T[None, :, :]
    return _Mixture(wts, means, covs)


def _prior_precisions(
    parts: _PriorParts,
    kernel: NDArray[np.int64],
    tau2: NDArray[np.float64],
    t1_2: NDArray[np.float64],
) -> NDArray[np.float64]:
    """Prior precisions of the contrasts, stacked: ``(tau^2 K_q + t1^2 lambda_1 e_1 e_1')^-1``.

    ``e_1`` is an eigenvector of ``K_q``, so only its eigenvalue changes:
    ``K_q^-1 / tau^2 + (1 / (lambda_1 (tau^2 + t1^2)) - 1 / (lambda_1 tau^2)) e_1 e_1'``.
    """
    k_inv = np.stack([kp[1] for kp in parts.kernels])
    prec = k_inv[kernel] / tau2[:, None, None]
    for k, top in enumerate(parts.tops):
        sel = np.flatnonzero((kernel == k) & (t1_2 > 0))
        if top is None or sel.size == 0:
            continue
        lam, e = top
        c = 1 / (lam * (tau2[sel] + t1_2[sel])) - 1 / (lam * tau2[sel])
        prec[sel] += c[:, None, None] * np.outer(e, e)[None, :, :]
    return prec


def _floored_priors(
    parts: _PriorParts,
    kernel: NDArray[np.int64],
    tau2: NDArray[np.float64],
    t1_2: NDArray[np.float64],
    c_floor: NDArray[np.float64],
) -> NDArray[np.float64]:
    """Prior covariances of the contrasts with the contrast floor, stacked:
    ``tau^2 K_q + t1^2 lambda_1 e_1 e_1' + F`` (the inverse of :func:`_prior_precisions`)."""
    prior = np.linalg.inv(_prior_precisions(parts, kernel, tau2, t1_2)) + c_floor[None]
    return np.asarray((prior + np.swapaxes(prior, 1, 2)) / 2)


def _covs_from_prior(
    s_q: NDArray[np.float64], prior_cov: NDArray[np.float64]
) -> NDArray[np.float64]:
    """Posterior covariances ``P - P (S + P)^-1 P`` of x given y ~ N(x, S), x ~ N(0, P)."""
    cov = prior_cov - prior_cov @ np.linalg.solve(s_q[None] + prior_cov, prior_cov)
    return np.asarray((cov + np.swapaxes(cov, 1, 2)) / 2)


def _design_intervals(
    mean: NDArray[np.float64],
    sd: NDArray[np.float64],
    n: int,
    confidence: float,
    max_n: NDArray[np.float64],
    population: int,
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Per-model score interval of the design-based PPI accuracy: Wilson at the effective size.

    ``mean +- z sd`` (Wald) alone undercovered where a model's accuracy is estimated from
    few labels with a skewed residual: a herd of 10 near-copies (accuracy 0.78) beside 3
    other models, 35 / 60 labels, 100 campaigns: the reported intervals (the hull of the
    posterior's and Wald's) covered 0.909 / 0.944. Each model's accuracy is a proportion
    estimated by a design, so this interval is Wilson's at the Kish effective size
    ``p (1 - p) / sd^2`` with the t quantile on n - 1 degrees of freedom and the Poisson
    limits for one or two errors (:func:`labelwise.campaign._estimators.wilson_effective`;
    Korn & Graubard 1998); the reported interval contains it too: 0.934 / 0.956.

    ``max_n``: each model's cap on the effective size. A model with at most two errors (or
    successes) among the labels gets the labels' Kish size (no credit from the vote), as its
    PPI variance says nothing about the errors not yet seen: 8 near-copies of a 0.96 model
    wrong on 3 % of rows, 35 labels, often 0-1 of them there, were estimated at 0.989 +- 0.006
    and their intervals covered 0.80 (60 campaigns). Such a count of labels is drawn without
    replacement from the ``population`` rows (its finite-population factor; every row
    labelled: the exact accuracy).
    """
    bounds = [
        wilson_effective(
            float(m),
            float(s),
            max(n - 1, 1),
            confidence,
            n,
            max_n=float(c),
            population=population,
        )
        for m, s, c in zip(mean, sd, max_n, strict=True)
    ]
    low, high = np.array(bounds).T
    return np.asarray(low, dtype=np.float64), np.asarray(high, dtype=np.float64)


def _posterior_covs(
    sigma_inv: NDArray[np.float64], prior_prec: NDArray[np.float64]
) -> NDArray[np.float64]:
    """Covariances of x given delta_hat ~ N(x, Sigma), x ~ N(0, P_k^-1), stacked."""
    cov = np.linalg.inv(sigma_inv[None, :, :] + prior_prec)
    return np.asarray((cov + np.swapaxes(cov, 1, 2)) / 2)


_KERNEL_INPUTS = 10_000
_NEAR_COPY = 0.01  # models apart on at most this share of the rows vote as one (_near_copy_weights)
_RIVAL_SHARE = 0.15  # a row is contested where >= max(2, 0.15 M) models give a second class
_UNEXPLORED_DRAWS = 3.0  # expected draws of all of R together
# A's zero count is doubted where every model is wrong on >= 3 and >= 10 % of the other labels
_ALL_WRONG_SEEN = 3
_ALL_WRONG_SHARE = 0.1
_CREDIBLE_SHARE = 0.5  # a model's dissents count where >= half of its labelled ones were right


def _clopper_pearson_upper(k: int, n: int, conf: float) -> float:
    """Clopper-Pearson upper limit (two-sided ``conf``) of a binomial share, ``k`` of ``n``."""
    if k >= n:
        return 1.0
    return float(stats.beta.ppf(0.5 + conf / 2, k + 1, n - k))


def _runner_up_votes(pred: NDArray[np.int64]) -> NDArray[np.int64]:
    """Per row, how many models give the second most common class (0 where all agree)."""
    m = pred.shape[0]
    srt = np.sort(pred, axis=0)
    new = np.ones(srt.shape, dtype=bool)
    new[1:] = srt[1:] != srt[:-1]
    idx = np.arange(m)[:, None]
    start = np.maximum.accumulate(np.where(new, idx, 0), axis=0)
    last = np.ones(srt.shape, dtype=bool)
    last[:-1] = new[1:]
    runs = np.where(last, idx - start + 1, 0)
    runs.sort(axis=0)
    return runs[-2] if m > 1 else np.zeros(pred.shape[1], dtype=np.int64)


def _disagreement_shares(pred: NDArray[np.int64]) -> NDArray[np.float64]:
    """``D_ab``: the share of inputs on which models a and b disagree (on at most 10,000
    evenly spaced inputs)."""
    m, n = pred.shape
    step = max(1, n // _KERNEL_INPUTS)
    sub = pred[:, ::step]
    if int(sub.max()) < 32767:
        sub = sub.astype(np.int16)
    dis = np.empty((m, m))
    for a in range(m):  # elementwise (a BLAS product is slow on a busy machine)
        dis[a] = np.count_nonzero(sub != sub[a][None, :], axis=1) / sub.shape[1]
    return dis


def _near_copy_weights(dis: NDArray[np.float64]) -> NDArray[np.float64] | None:
    """Each model's weight in the vote: ``1 / k_m``, ``k_m`` the models (itself included)
    that disagree with it on at most ``_NEAR_COPY`` (1 %) of the rows; None where every
    ``k_m`` is 1 (the plain vote).

    A near-copy (a fine-tune of one checkpoint, a quantised export) is no independent second
    opinion: counted as a model it moves the vote toward the pair, raises both models'
    agreement with it and so their surrogate and P(best) (docs/ranking-notes.md, "Copies of
    a model (cp34)" and "(pb34)"). Two models apart on a share ``D_ab`` of the rows can
    differ in accuracy by at most ``D_ab``; at 1 % that is within the labels' resolution
    of a few hundred rows, so they vote as one. No pair of the ranking study's zoos (closest
    0.083), of the scikit-learn zoos (0.013) or of the real MNIST-1D CNN zoo (0.034) is that
    close: their vote is unchanged.
    """
    k = np.count_nonzero(dis <= _NEAR_COPY, axis=1)
    if (k <= 1).all():
        return None
    return np.asarray(1.0 / k, dtype=np.float64)


def _bias_kernels(dis: NDArray[np.float64]) -> tuple[NDArray[np.float64], ...]:
    """Prior covariance shapes of the consensus biases: ``K_p = -1/2 C D^p C``, p = 1, 2.

    ``D_ab`` is the share of inputs on which models a and b disagree
    (:func:`_disagreement_shares`). Two models' biases ``delta_m = mean_i (c_mi - s_mi)``
    differ only through the inputs where they disagree: ``delta_a - delta_b = D_ab b_ab``
    with ``b_ab`` the mean of ``(c_a - c_b) - (s_a - s_b)`` there, in [-2, 2]. ``K_1`` makes
    ``Var(delta_a - delta_b)`` proportional to ``D_ab`` (``b_ab`` an average of independent
    terms), ``K_2`` to ``D_ab^2`` (``b_ab`` of the same size for every pair, e.g. nested
    models where the better is right wherever they differ). ``D`` is a Hamming (L1)
    distance, of negative type, so ``K_1`` is positive semi-definite (Schoenberg 1935);
    ``K_2`` is projected on the PSD cone. Either way models of one family, which agree often,
    get close biases, and models that disagree often keep apart, which a prior of
    independent biases would shrink together.
    """
    m = dis.shape[0]
    cen = np.eye(m) - 1.0 / m
    out = []
    for power in (1, 2):
        k = -0.5 * cen @ dis**power @ cen
        vals, vecs = linalg.eigh((k + k.T) / 2, driver="evr")
        k = (vecs * np.clip(vals, 0, None)[None, :]) @ vecs.T  # nearest PSD matrix
        out.append(np.asarray((k + k.T) / 2))
    out.append(cen)  # independent biases
    return tuple(out)


def _soft_agreement(
    pred: NDArray[np.int64],
    probs: NDArray[np.float64] | None,
    weights: NDArray[np.float64] | None = None,
) -> NDArray[np.float32]:
    """s_mi: share of models predicting model m's class on input i (or their mean probability);
    with ``weights`` (near-copies, :func:`_near_copy_weights`) the weighted share or mean."""
    m, n = pred.shape
    if weights is not None:
        if probs is None:
            return _weighted_agreement(pred, weights)
        mean = np.tensordot(weights / weights.sum(), probs, axes=1)
        mean = mean / np.clip(mean.sum(axis=1, keepdims=True), 1e-12, None)
        return mean[np.arange(n)[None, :], pred].astype(np.float32)
    if probs is not None:
        mean = probs.mean(axis=0)
        mean = mean / np.clip(mean.sum(axis=1, keepdims=True), 1e-12, None)
        return mean[np.arange(n)[None, :], pred].astype(np.float32)
    n_cls = int(pred.max()) + 1
    if n * n_cls <= _MAX_CELLS:
        cells = pred + n_cls * np.arange(n, dtype=np.int64)[None, :]
        counts = np.bincount(cells.ravel(), minlength=n * n_cls)
        return (counts[cells] / m).astype(np.float32)
    keys = (pred.astype(np.int64) * n + np.arange(n, dtype=np.int64)[None, :]).ravel()
    _, inv, cnt = np.unique(keys, return_inverse=True, return_counts=True)
    return (cnt[inv].reshape(m, n) / m).astype(np.float32)


def _weighted_agreement(pred: NDArray[np.int64], g: NDArray[np.float64]) -> NDArray[np.float32]:
    """s_mi = sum_k g_k [pred_ki = pred_mi] / sum_k g_k (weighted soft vote)."""
    m, n = pred.shape
    n_cls = int(pred.max()) + 1
    gw = np.broadcast_to(g[:, None], (m, n)).ravel()
    if n * n_cls <= _MAX_CELLS:
        cells = pred + n_cls * np.arange(n, dtype=np.int64)[None, :]
        sums = np.bincount(cells.ravel(), weights=gw, minlength=n * n_cls)
        return (sums[cells] / g.sum()).astype(np.float32)
    keys = (pred.astype(np.int64) * n + np.arange(n, dtype=np.int64)[None, :]).ravel()
    _, inv = np.unique(keys, return_inverse=True)
    sums = np.bincount(inv, weights=gw)
    return (sums[inv].reshape(m, n) / g.sum()).astype(np.float32)


def _disagreement(pred: NDArray[np.int64], g: NDArray[np.float64]) -> NDArray[np.float64]:
    """u_i = (sum g)^2 - sum_c (sum_{m: pred_mi = c} g_m)^2 = 2 sum_{a<b} g_a g_b [differ]."""
    m, n = pred.shape
    n_cls = int(pred.max()) + 1
    gw = np.broadcast_to(g[:, None], (m, n)).ravel()
    if n * n_cls <= _MAX_CELLS:
        cells = (pred + n_cls * np.arange(n, dtype=np.int64)[None, :]).ravel()
        sums = np.bincount(cells, weights=gw, minlength=n * n_cls)
        sq = np.bincount(np.repeat(np.arange(n), n_cls), weights=sums**2, minlength=n)
    else:
        keys = (pred.astype(np.int64) * n + np.arange(n, dtype=np.int64)[None, :]).ravel()
        uniq, inv = np.unique(keys, return_inverse=True)
        sums = np.bincount(inv, weights=gw, minlength=uniq.size)
        sq = np.bincount(uniq % n, weights=sums**2, minlength=n)
    return np.clip(float(g.sum()) ** 2 - sq, 0, None)


def _prob_beats(draws: NDArray[np.float64]) -> NDArray[np.float64]:
    """P(i beats j) over posterior draws, ties half; diagonal 0.5."""
    d, m = draws.shape
    out = np.empty((m, m))
    for i in range(m):
        gt = (draws[:, i : i + 1] > draws).sum(axis=0)
        eq = (draws[:, i : i + 1] == draws).sum(axis=0)
        out[i] = (gt + 0.5 * eq) / d
    return out


def _prob_best(draws: NDArray[np.float64]) -> NDArray[np.float64]:
    """Share of the draws in which each model is best, a tie of k models counting 1/k each
    (argmax gave it to the first: two models of exactly 0.9 on a fully labelled pile were
    P(best) 1 and 0)."""
    top = draws == draws.max(axis=1, keepdims=True)
    return np.asarray((top / top.sum(axis=1, keepdims=True)).mean(axis=0), dtype=np.float64)


def _fingerprint(pred: NDArray[np.int64]) -> str:
    """SHA-1 of the (n_models, N) predicted classes: extend checks it is given the same."""
    return hashlib.sha1(np.ascontiguousarray(pred, dtype=np.int64).tobytes()).hexdigest()


def _copies(pred: NDArray[np.int64]) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """Representatives (first of each set of identical models) and every model's group.

    One pass: a random linear hash of each model's predictions, then exact comparison of
    the models whose hashes collide (np.unique(axis=0) sorts whole rows: 1 s at 80 x 100k).
    """
    m = pred.shape[0]
    w = np.random.default_rng(0).integers(1, 2**31, pred.shape[1], dtype=np.int64)
    h = pred @ w  # wraps around on overflow: still a hash
    group = np.arange(m)
    for a in range(m):
        if group[a] != a:
            continue
        for b in np.flatnonzero(h[a + 1 :] == h[a]) + a + 1:
            if group[b] == b and np.array_equal(pred[a], pred[b]):
                group[b] = a
    reps = np.flatnonzero(group == np.arange(m)).astype(np.int64)
    return reps, np.searchsorted(reps, group).astype(np.int64)


def _tie_copies(
    x: NDArray[np.float64], reps: NDArray[np.int64], group: NDArray[np.int64]
) -> NDArray[np.float64]:
    """``x`` (per model, or model x model) with every copy given its representative's values.

    A product or sum over a model's row (BLAS, numpy's SIMD reductions) can round
    differently at another row offset, so identical models' estimates differed in the last
    bit (4e-16 at rows 0 and 24 of a 27-model zoo): the same model must get one accuracy.
    """
    if reps.size == group.size:
        return x
    idx = reps[group]
    return x[idx] if x.ndim == 1 else x[np.ix_(idx, idx)]


def _share_ties(prob_best: NDArray[np.float64], group: NDArray[np.int64]) -> NDArray[np.float64]:
    """Split each group of identical models' P(best) equally (argmax gives it to the first)."""
    total = np.bincount(group, weights=prob_best)
    count = np.bincount(group)
    return np.asarray(total[group] / count[group])


def _rank_sets(
    draws: NDArray[np.float64], level: float
) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """Per-model rank quantiles at level 1 - (1 - level) / M (Bonferroni: simultaneous)."""
    _d, m = draws.shape
    # rank of each model in each draw: 1 + the number of models strictly better (ties, as
    # between identical models, share the better rank): positions in the sorted draw, each
    # run of equal values given the position of its first
    order = np.argsort(-draws, axis=1, kind="stable")
    ordered = np.take_along_axis(draws, order, axis=1)
    new = np.ones(ordered.shape, dtype=bool)
    new[:, 1:] = ordered[:, 1:] != ordered[:, :-1]
    first = np.maximum.accumulate(np.where(new, np.arange(1, m + 1), 0), axis=1)
    ranks = np.empty_like(order)
    np.put_along_axis(ranks, order, first, axis=1)
    alpha = (1 - level) / m
    low = np.quantile(ranks, alpha / 2, axis=0, method="lower").astype(np.int64)
    high = np.quantile(ranks, 1 - alpha / 2, axis=0, method="higher").astype(np.int64)
    return low, high

"""Estimators and scores (Li et al. 2019, Eq. 1, Eq. 4, Eq. 10) on hand-computed examples."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from scipy import stats

import labelwise as lw

Z95 = 1.959963984540054  # standard normal 97.5% quantile


def _finite(e: lw.Estimate) -> bool:
    return all(math.isfinite(v) for v in (e.value, e.std_error, e.ci_low, e.ci_high))


# --- SRS ---------------------------------------------------------------------------------


def test_srs_mean_and_se_with_fpc_by_hand() -> None:
    # y = (0.5, 0.25, 1.0, 0.75, 0.5), N = 20
    # mean = 3.0 / 5 = 0.6
    # deviations (-0.1, -0.35, 0.4, 0.15, -0.1), squares sum to 0.325, s^2 = 0.325 / 4 = 0.08125
    # SE = sqrt((1 - 5/20) * 0.08125 / 5) = sqrt(0.0121875) = 0.110397...
    # t(0.975, df=4) = 2.776445, half-width = 0.306511
    e = lw.srs_estimate([0.5, 0.25, 1.0, 0.75, 0.5], population_size=20)
    assert e.value == pytest.approx(0.6)
    assert e.std_error == pytest.approx(math.sqrt(0.0121875))
    assert e.ci_low == pytest.approx(0.6 - 2.776445105197793 * math.sqrt(0.0121875))
    assert e.ci_high == pytest.approx(0.6 + 2.776445105197793 * math.sqrt(0.0121875))
    assert e.interval == "t"
    assert e.metric == "mean score"
    assert e.n_labelled == 5
    assert e.population_size == 20
    assert e.method == "srs"
    assert e.notes == ()


def test_srs_regression_scores_get_the_bootstrap_t_interval() -> None:
    """1 - squared error (a long lower tail): from 20 labels the interval is the bootstrap-t,
    longer below than above, the same for the same scores, and it covers where Student-t did
    not (measured over these 1,000 draws of 35: bootstrap-t 0.934, t 0.877)."""
    g = np.random.default_rng(5)
    n_pop, n = 5000, 35
    y = 1 - (g.normal(0, 1, n_pop) * 0.3 * np.exp(g.normal(0, 0.35, n_pop))) ** 2
    truth = y.mean()
    t_q = stats.t.ppf(0.975, n - 1)
    boot = t_cov = below = 0
    for r in range(1000):
        s = y[np.random.default_rng([r, n]).choice(n_pop, n, replace=False)]
        e = lw.srs_estimate(s, population_size=n_pop)
        assert e.interval == "bootstrap-t"
        below += e.ci_high - e.value < e.value - e.ci_low
        boot += e.ci_low <= truth <= e.ci_high
        half = t_q * math.sqrt((1 - n / n_pop) * s.var(ddof=1) / n)
        t_cov += abs(s.mean() - truth) <= half
    assert boot / 1000 >= 0.92
    assert below >= 900
    assert t_cov / 1000 <= boot / 1000 - 0.03
    again = lw.srs_estimate(s, population_size=n_pop)
    assert (again.ci_low, again.ci_high) == (e.ci_low, e.ci_high)
    # below 20 labels the t interval stays (a handful of values cannot pivot a bootstrap)
    assert lw.srs_estimate(s[:19], population_size=n_pop).interval == "t"
    # stratified (CSS) scores get the stratified bootstrap-t
    strata = np.arange(n) % 2
    st = lw.stratified_estimate(s, strata, [2500, 2500])
    assert st.interval == "stratified bootstrap-t"
    assert st.ci_low < st.value < st.ci_high


def test_srs_regression_interval_covers_a_heavy_tailed_error() -> None:
    """Student-t(5) errors (1 - squared error: skew about -11): every miss of the symmetric
    bootstrap-t is an interval above the truth, drawn before the rare large errors (these
    1,000 draws of 35: coverage 0.880, 11.6 % above). The lower limit at the pivot's 0.995
    quantile (score_lower_miss) covers 0.950 here; the upper limit is unchanged."""
    g = np.random.default_rng(19)
    n_pop, n = 5000, 35
    e2 = g.standard_t(5, n_pop) ** 2
    y = 1 - 0.1 * e2 / e2.mean()
    truth = y.mean()
    cover = above = 0
    for r in range(1000):
        s = y[np.random.default_rng([r, n]).choice(n_pop, n, replace=False)]
        e = lw.srs_estimate(s, population_size=n_pop)
        cover += e.ci_low <= truth <= e.ci_high
        above += e.ci_low > truth
    # Monte-Carlo sd of a coverage of 0.95 over 1,000 draws: 0.007
    assert cover / 1000 >= 0.935
    assert above / 1000 <= 0.06


def test_srs_without_population_has_no_fpc() -> None:
    # s^2 = 0.08125, SE = sqrt(0.08125 / 5) = 0.127475...
    e = lw.srs_estimate([0.5, 0.25, 1.0, 0.75, 0.5])
    assert e.std_error == pytest.approx(math.sqrt(0.08125 / 5))
    assert e.population_size is None


def test_wilson_textbook_value() -> None:
    # Wilson (1927) score interval for 8/10 at 95%: (0.4902, 0.9433); for 0/10: (0, 0.2775).
    lo, hi = lw.wilson_interval(8, 10)
    assert (lo, hi) == (pytest.approx(0.4902, abs=5e-5), pytest.approx(0.9433, abs=5e-5))
    lo, hi = lw.wilson_interval(0, 10)
    assert lo == 0.0
    assert hi == pytest.approx(0.2775, abs=5e-5)
    # 90%: z = 1.6449 -> (0.5408, 0.9314)
    lo, hi = lw.wilson_interval(8, 10, 0.90)
    assert (lo, hi) == (pytest.approx(0.5408, abs=5e-5), pytest.approx(0.9314, abs=5e-5))


def test_wilson_interval_always_holds_its_proportion() -> None:
    """All labels correct: Wilson's upper limit came out 0.9999999999999999 for 97 of the
    sizes 1..300 (0 errors: the lower limit 1e-17 above 0 for 41), so 'estimate' wrote an
    accuracy of 1.0 with ci_high 0.9999999999999999 in estimate.json: the estimate outside its
    own interval (369 of 181,800 (successes, n, fpc) cases). The interval now holds p = s/n,
    exactly 1 (0) when every label is correct (wrong)."""
    for fpc in (1.0, 0.5):
        for n in range(1, 121):
            for s in range(n + 1):
                lo, hi = lw.wilson_interval(s, n, fpc=fpc)
                assert lo <= s / n <= hi, (s, n, fpc)
            assert lw.wilson_interval(n, n, fpc=fpc)[1] == 1.0
            assert lw.wilson_interval(0, n, fpc=fpc)[0] == 0.0


def test_binary_srs_uses_wilson_with_finite_population_factor() -> None:
    scores = [1.0] * 8 + [0.0] * 2
    e = lw.srs_estimate(scores)  # infinite population: the textbook interval
    assert (e.ci_low, e.ci_high) == pytest.approx(lw.wilson_interval(8, 10))
    assert e.interval == "wilson"
    assert e.metric == "accuracy"
    # s^2 = 10/9 * 0.8 * 0.2 = 0.17778, SE = sqrt(0.17778 / 10) = 0.13333
    assert e.std_error == pytest.approx(math.sqrt(0.8 * 0.2 / 9))
    # N = 50: z^2 scaled by (N - n) / (N - 1) = 40/49, z^2 = 3.13588:
    # centre = (0.8 + 0.156794) / 1.313588 = 0.728383
    # half = sqrt(3.13588 * 0.016 + 3.13588^2 / 400) / 1.313588 = 0.208148
    # SE = sqrt((1 - 10/50) * 0.17778 / 10) = 0.119257
    f = lw.srs_estimate(scores, population_size=50)
    assert f.ci_low == pytest.approx(0.728383 - 0.208148, abs=2e-6)
    assert f.ci_high == pytest.approx(0.728383 + 0.208148, abs=2e-6)
    assert f.std_error == pytest.approx(0.119257, abs=1e-6)
    assert f.ci_high - f.ci_low < e.ci_high - e.ci_low


@pytest.mark.parametrize(
    "scores",
    [
        [1.0] * 7 + [0.0] * 3,
        [1.0] * 10,
        [0.2, 0.9, 0.4, 0.4, 1.0],
        [0.3, 0.3, 0.3],
        [1.0, 0.0],
    ],
    ids=["binary", "all-correct", "scores", "equal-scores", "two"],
)
def test_labelling_the_whole_pile_gives_the_exact_value(scores: list[float]) -> None:
    truth = float(np.mean(scores))
    for method in (lw.srs_estimate, lw.ces_estimate):
        e = method(scores, population_size=len(scores))  # no warning: the value is exact
        assert e.value == pytest.approx(truth)
        assert e.std_error == 0.0
        assert e.ci_low == pytest.approx(truth)
        assert e.ci_high == pytest.approx(truth)


def test_labelling_a_one_row_pile_with_a_binary_score() -> None:
    e = lw.srs_estimate([1.0], population_size=1)
    assert (e.value, e.std_error, e.ci_low, e.ci_high) == (1.0, 0.0, 1.0, 1.0)


def test_labelling_a_one_row_pile_with_a_non_binary_score() -> None:
    e = lw.srs_estimate([0.25], population_size=1)
    assert (e.value, e.std_error, e.ci_low, e.ci_high) == (0.25, 0.0, 0.25, 0.25)


def test_t_interval_for_non_binary_scores_is_not_clipped() -> None:
    e = lw.srs_estimate([1.0, -2.0, 0.5], confidence=0.9)
    assert e.interval == "t"
    assert e.ci_low < -2.0  # regression scores can be negative: no clipping to [0, 1]
    # 90% t with 2 df: 2.919986; s = sqrt(((0.8333)^2 + (2.1667)^2 + (0.3333)^2) / 2)
    s = math.sqrt(np.var([1.0, -2.0, 0.5], ddof=1))
    assert e.ci_high - e.value == pytest.approx(2.919985580355516 * s / math.sqrt(3))


def test_confidence_level_widens_the_interval() -> None:
    y = np.r_[np.ones(30), np.zeros(10)]
    widths = [lw.srs_estimate(y, confidence=c) for c in (0.8, 0.9, 0.95, 0.99)]
    w = [e.ci_high - e.ci_low for e in widths]
    assert w == sorted(w)
    assert len(set(w)) == 4


# --- degenerate cases --------------------------------------------------------------------


def test_all_correct_warns_and_reports_a_positive_se() -> None:
    with pytest.warns(lw.DegenerateDataWarning, match="all 5 labelled scores are 1"):
        e = lw.srs_estimate([1.0] * 5, population_size=100)
    assert _finite(e)
    assert e.value == 1.0
    assert e.std_error > 0
    assert e.ci_high == 1.0
    assert 0.4 < e.ci_low < 1.0
    assert e.notes  # the warning is kept with the result


@pytest.mark.parametrize("score", [0.0, 1.0])
def test_one_binary_label_warns_and_is_finite(score: float) -> None:
    with pytest.warns(lw.DegenerateDataWarning):
        e = lw.srs_estimate([score], population_size=50)
    assert _finite(e)
    assert e.std_error > 0
    assert e.ci_low <= score <= e.ci_high
    assert e.ci_high - e.ci_low > 0.5


def test_one_non_binary_label_warns_and_is_unbounded() -> None:
    with pytest.warns(lw.DegenerateDataWarning, match="one label"):
        e = lw.srs_estimate([0.4])
    assert e.value == 0.4
    assert not math.isnan(e.std_error)
    assert e.ci_low == -math.inf
    assert e.ci_high == math.inf


def test_equal_non_binary_scores_warn() -> None:
    with pytest.warns(lw.DegenerateDataWarning, match="equal"):
        e = lw.srs_estimate([0.3, 0.3, 0.3], population_size=10)
    assert e.value == pytest.approx(0.3)
    assert not math.isnan(e.ci_low)


@pytest.mark.parametrize(("value", "n"), [(0.1, 20), (0.7, 100), (0.3, 200)])
def test_equal_scores_whose_variance_rounds_above_zero_warn(value, n) -> None:
    """srs_estimate warned of equal scores only when their sample variance was exactly 0:
    twenty scores of 0.1 have a mean of 0.1 + 1e-17 and a variance of 1e-33, so a zero-width
    interval came back without a word (0.1: 20, 50, 100, 120 labels; 0.7 and 0.3 likewise),
    also from Campaign(method='srs' or regression 'auto'). All scores equal now warns."""
    assert np.full(n, value).var(ddof=1) > 0  # the precondition: rounding, not data
    with pytest.warns(lw.DegenerateDataWarning, match="all .* scores are equal"):
        e = lw.srs_estimate(np.full(n, value), population_size=4 * n)
    assert e.ci_high - e.ci_low < 1e-12
    assert any("zero width" in note for note in e.notes)
    g = np.random.default_rng(0)
    camp = lw.Campaign(g.normal(size=(4 * n, 3)), None, method="srs", rng=0)
    rows = camp.propose(n)
    camp.record(rows, np.full(n, value))
    with pytest.warns(lw.DegenerateDataWarning, match="zero width"):
        camp.estimate()


# --- stratified (Eq. 4) ------------------------------------------------------------------


def test_stratified_estimate_by_hand() -> None:
    # N_h = (80, 10, 10), W_h = (0.8, 0.1, 0.1)
    # stratum 0: (1.0, 0.5)      mean 0.75, s^2 = 0.125, n = 2
    # stratum 1: (0.2, 0.4, 0.6) mean 0.4,  s^2 = 0.04,  n = 3
    # stratum 2: (0.0, 0.5)      mean 0.25, s^2 = 0.125, n = 2
    # value = 0.8*0.75 + 0.1*0.4 + 0.1*0.25 = 0.665
    # Var = 0.64*(1-2/80)*0.125/2 + 0.01*(1-3/10)*0.04/3 + 0.01*(1-2/10)*0.125/2
    #     = 0.039 + 0.0000933 + 0.0005 = 0.0395933
    # Satterthwaite df = Var^2 / (0.039^2/1 + 0.0000933^2/2 + 0.0005^2/1) = 1.03049
    y = [1.0, 0.5, 0.2, 0.4, 0.6, 0.0, 0.5]
    strata = [0, 0, 1, 1, 1, 2, 2]
    e = lw.stratified_estimate(y, strata, [80, 10, 10])
    var = 0.039 + 0.01 * 0.7 * 0.04 / 3 + 0.0005
    assert e.value == pytest.approx(0.665)
    assert e.std_error == pytest.approx(math.sqrt(var))
    df = var**2 / (0.039**2 + (0.01 * 0.7 * 0.04 / 3) ** 2 / 2 + 0.0005**2)
    assert df == pytest.approx(1.03049, abs=1e-5)
    from scipy import stats

    half = stats.t.ppf(0.975, df) * math.sqrt(var)
    assert e.ci_low == pytest.approx(0.665 - half)
    assert e.ci_high == pytest.approx(0.665 + half)
    assert e.method == "css"
    assert e.interval == "stratified-t"
    assert e.population_size == 100
    assert e.n_labelled == 7


def test_stratified_binary_uses_agresti_coull_per_stratum() -> None:
    # N_h = (40, 5, 5); correct 3/4, 1/2, 1/3 -> value 0.8*0.75 + 0.1*0.5 + 0.1/3 = 0.683333
    # per stratum p~ = (x + z^2/2) / (n + z^2), variance of the mean p~(1-p~)/(n + z^2)
    y = [1, 1, 1, 0, 1, 0, 0, 1, 0]
    strata = [0, 0, 0, 0, 1, 1, 2, 2, 2]
    e = lw.stratified_estimate(np.asarray(y, dtype=float), strata, [40, 5, 5])
    z2 = Z95**2
    var = 0.0
    for w, x, n, big_n in ((0.8, 3, 4, 40), (0.1, 1, 2, 5), (0.1, 1, 3, 5)):
        pt = (x + z2 / 2) / (n + z2)
        var += w**2 * (1 - n / big_n) * pt * (1 - pt) / (n + z2)
    assert e.value == pytest.approx(0.8 * 0.75 + 0.05 + 0.1 / 3)
    assert e.std_error == pytest.approx(math.sqrt(var))
    assert e.ci_high == 1.0  # clipped for a proportion
    assert 0 < e.ci_low < e.value
    assert e.metric == "accuracy"


def test_stratified_with_one_stratum_is_srs_mean() -> None:
    y = np.array([0.2, 0.9, 0.4, 0.4, 1.0])
    e = lw.stratified_estimate(y, np.zeros(5, dtype=int), [40])
    f = lw.srs_estimate(y, population_size=40)
    assert e.value == pytest.approx(f.value)
    assert e.std_error == pytest.approx(f.std_error)
    assert e.ci_low == pytest.approx(f.ci_low)


def test_stratified_full_strata_give_the_exact_value() -> None:
    y = [1.0, 0.5, 0.25, 0.0]
    e = lw.stratified_estimate(y, [0, 0, 1, 1], [2, 2])
    assert e.value == pytest.approx(0.4375)
    assert e.std_error == 0.0
    assert e.ci_low == pytest.approx(0.4375)
    assert e.ci_high == pytest.approx(0.4375)


def test_stratified_all_correct_strata_stay_positive() -> None:
    e = lw.stratified_estimate(np.ones(6), [0, 0, 1, 1, 2, 2], [80, 10, 10])
    assert _finite(e)
    assert e.std_error > 0
    assert e.ci_low < 1.0


def test_one_label_in_a_stratum_with_non_binary_scores_warns() -> None:
    # Stratum 2 has one label: its variance is borrowed from the largest other one (0.125).
    y = [1.0, 0.5, 0.2, 0.4, 0.6, 0.3]
    with pytest.warns(lw.DegenerateDataWarning, match=r"strata \[2\]"):
        e = lw.stratified_estimate(y, [0, 0, 1, 1, 1, 2], [80, 10, 10])
    assert _finite(e)
    var = 0.64 * (1 - 2 / 80) * 0.125 / 2 + 0.01 * 0.7 * 0.04 / 3 + 0.01 * 0.9 * 0.125 / 1
    assert e.std_error == pytest.approx(math.sqrt(var))
    assert e.notes


def test_every_stratum_with_one_label_borrows_the_overall_variance() -> None:
    y = [0.9, 0.5, 0.1]
    with pytest.warns(lw.DegenerateDataWarning):
        e = lw.stratified_estimate(y, [0, 1, 2], [8, 1, 1])
    assert _finite(e)
    assert e.std_error == pytest.approx(math.sqrt(0.64 * (1 - 1 / 8) * np.var(y, ddof=1)))


def test_single_fully_labelled_stratum_with_one_non_binary_label_is_not_nan() -> None:
    e = lw.stratified_estimate([0.5], [0], [1])  # fully labelled: exact, nothing to warn about
    assert _finite(e)
    assert e.ci_low == pytest.approx(0.5)
    assert e.ci_high == pytest.approx(0.5)


@pytest.mark.parametrize(
    ("args", "name"),
    [
        (([1.0, 0.0], [0], [5]), "strata"),
        (([1.0, 0.0], [0.0, 1.0], [5, 5]), "strata"),
        (([1.0, 0.0], [0, 3], [5, 5]), "strata"),
        (([1.0, 0.0], [0, -1], [5, 5]), "strata"),
        (([1.0, 0.0], [0, 0], [5, 5]), "stratum"),  # stratum 1 has rows but no label
        (([1.0, 0.0, 1.0], [0, 0, 0], [2]), "strata"),  # more labels than rows
        (([1.0, 0.0], [0, 1], [5, -1]), "stratum_sizes"),
        (([1.0, 0.0], [0, 1], [0, 0]), "stratum_sizes"),
        (([1.0, np.nan], [0, 1], [5, 5]), "scores"),
    ],
)
def test_stratified_bad_inputs(args: tuple[Any, ...], name: str) -> None:
    with pytest.raises(lw.LabelwiseError, match=name):
        lw.stratified_estimate(*args)


# --- dispatch ----------------------------------------------------------------------------


def _pile(n: int = 300) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    conf = rng.uniform(0.3, 1.0, n)
    correct = (rng.random(n) < conf).astype(float)
    act = np.maximum(rng.normal(size=(n, 6)), 0)
    return conf, correct, act


def test_estimate_dispatches_css_to_the_stratified_estimator() -> None:
    conf, correct, _ = _pile()
    sel = lw.css_select(conf, 30, rng=1)
    y = correct[sel.indices]
    e = lw.estimate(sel, y)
    assert sel.strata is not None
    assert sel.stratum_sizes is not None
    f = lw.stratified_estimate(y, sel.strata, sel.stratum_sizes)
    assert e == f
    assert e.method == "css"
    # Not the plain mean: the strata are weighted by N_h / N, not by n_h / n.
    w = np.array(sel.stratum_sizes) / 300
    means = [y[sel.strata == h].mean() for h in range(3)]
    assert e.value == pytest.approx(float(np.dot(w, means)))
    assert e.value != pytest.approx(y.mean())


def test_estimate_dispatches_srs_and_ces() -> None:
    _, correct, act = _pile()
    sel = lw.srs_select(300, 25, rng=1)
    e = lw.estimate(sel, correct[sel.indices], confidence=0.9)
    assert e == lw.srs_estimate(correct[sel.indices], population_size=300, confidence=0.9)
    sel = lw.ces_select(act, 40, n_groups=20, rng=1)
    e = lw.estimate(sel, correct[sel.indices])
    assert e.method == "ces"
    assert e.value == pytest.approx(correct[sel.indices].mean())
    assert e.population_size == 300


def test_estimate_checks_score_length_and_method() -> None:
    conf, correct, _ = _pile()
    sel = lw.css_select(conf, 30, rng=1)
    with pytest.raises(lw.LabelwiseError, match="scores"):
        lw.estimate(sel, correct[:29])
    other = lw.Selection(indices=np.arange(3), method="mystery", population_size=10)
    with pytest.raises(lw.LabelwiseError, match="method"):
        lw.estimate(other, [1.0, 0.0, 1.0])


def test_metric_can_be_named() -> None:
    e = lw.srs_estimate([0.9, 0.8, 0.7], metric="1-MSE")
    assert e.metric == "1-MSE"
    assert e.to_dict()["metric"] == "1-MSE"


# --- scores ------------------------------------------------------------------------------


def test_correctness_from_classes_and_probabilities() -> None:
    pred = np.array([0, 2, 1, 1])
    labels = np.array([0, 1, 1, 2])
    assert lw.correctness(pred, labels).tolist() == [1.0, 0.0, 1.0, 0.0]
    probs = np.array([[0.7, 0.2, 0.1], [0.1, 0.1, 0.8], [0.2, 0.5, 0.3], [0.4, 0.35, 0.25]])
    assert lw.correctness(probs, labels).tolist() == [1.0, 0.0, 1.0, 0.0]
    assert lw.correctness(pred.astype(float), labels.astype(float)).tolist() == [1, 0, 1, 0]


@pytest.mark.parametrize(
    ("pred", "labels", "kwargs"),
    [
        ([0, 1], [0, 3], {"n_classes": 3}),
        ([0, 1], [0, -1], {"n_classes": 3}),
        ([[0.5, 0.5], [0.2, 0.8]], [0, 2], {}),  # C = 2 from the probabilities
        ([0, 1], [0.0, 0.5], {}),
        ([0, 1, 1], [0, 1], {}),
        ([0, 1], [0, np.nan], {}),
    ],
)
def test_correctness_bad_labels_name_labels(pred: Any, labels: Any, kwargs: dict[str, Any]) -> None:
    with pytest.raises(lw.LabelwiseError, match="labels"):
        lw.correctness(pred, labels, **kwargs)


def test_correctness_bad_predictions_name_predictions() -> None:
    with pytest.raises(lw.LabelwiseError, match="predictions"):
        lw.correctness([0.5, 1.0], [0, 1])


def test_regression_scores_are_one_minus_squared_error() -> None:
    h = lw.regression_scores([0.5, 1.0, -1.0], [0.0, 1.0, 1.0])
    assert h.tolist() == pytest.approx([0.75, 1.0, -3.0])
    # Several outputs: the mean squared error per row.
    h = lw.regression_scores([[0.0, 1.0], [2.0, 2.0]], [[0.0, 0.0], [1.0, 1.0]])
    assert h.tolist() == pytest.approx([0.5, 0.0])
    with pytest.raises(lw.LabelwiseError, match="targets"):
        lw.regression_scores([1.0, 2.0], [1.0])
    with pytest.raises(lw.LabelwiseError, match="targets"):
        lw.regression_scores([1.0, 2.0], [1.0, np.inf])


# --- bad inputs --------------------------------------------------------------------------


@pytest.mark.parametrize("fn", [lw.srs_estimate, lw.ces_estimate])
@pytest.mark.parametrize(
    ("scores", "kwargs", "name"),
    [
        ([1.0, np.nan], {}, "scores"),
        ([1.0, np.inf], {}, "scores"),
        ([], {}, "scores"),
        ([[1.0, 0.0]], {}, "scores"),
        (["a", "b"], {}, "scores"),
        ([1.0, 0.0], {"confidence": 1.5}, "confidence"),
        ([1.0, 0.0], {"confidence": 0.0}, "confidence"),
        ([1.0, 0.0], {"confidence": 1.0}, "confidence"),
        ([1.0, 0.0], {"confidence": "high"}, "confidence"),
        ([1.0, 0.0], {"population_size": 1}, "population_size"),
        ([1.0, 0.0], {"population_size": 10.0}, "population_size"),
        ([1.0, 0.0], {"population_size": True}, "population_size"),
    ],
)
def test_mean_estimators_bad_inputs(
    fn: Any, scores: Any, kwargs: dict[str, Any], name: str
) -> None:
    with pytest.raises(lw.LabelwiseError, match=name):
        fn(scores, **kwargs)


def test_stratified_bad_confidence() -> None:
    with pytest.raises(lw.LabelwiseError, match="confidence"):
        lw.stratified_estimate([1.0, 0.0], [0, 1], [5, 5], confidence=1.5)


def test_wilson_bad_n() -> None:
    with pytest.raises(lw.LabelwiseError, match="n must"):
        lw.wilson_interval(0, 0)


def test_errors_are_value_errors() -> None:
    with pytest.raises(ValueError):
        lw.srs_estimate([np.nan])

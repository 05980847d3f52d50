"""Bad input to the public sampler / estimator API: clear errors, never a traceback.

Each case was found by a robustness sweep (negative seeds, scores too large for a variance,
logits as confidences, corrupt selection files, ...); before the fix each ended in a raw numpy
exception, a KeyError, or a NaN / misplaced interval.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import labelwise as lw
from labelwise.estimation.estimators import wilson_interval


def test_negative_seeds_are_refused() -> None:
    with pytest.raises(lw.LabelwiseError, match="non-negative int seed"):
        lw.srs_select(10, 3, rng=-1)
    pred = np.array([[0, 1, 1, 0], [0, 0, 1, 1]])
    with pytest.raises(lw.LabelwiseError, match="non-negative int seed"):
        lw.rank_models(pred, np.array([0, 1, 1, 1]), rng=-3)
    lw.srs_select(10, 3, rng=np.int64(7))  # numpy integers still fine


def test_scores_too_large_for_a_variance_are_refused() -> None:
    y = np.r_[np.full(39, 0.99), -1e160]
    with pytest.raises(lw.LabelwiseError, match="rescale the targets"):
        lw.srs_estimate(y)
    lw.srs_estimate(np.r_[np.full(39, 0.99), -1e100])  # large but representable: fine


def test_css_refuses_logits() -> None:
    logits = np.random.default_rng(0).normal(size=(200, 3)) * 3
    with pytest.raises(lw.LabelwiseError, match="logits"):
        lw.css_select(logits, 30, rng=0)
    with pytest.raises(lw.LabelwiseError, match="probabilities in"):
        lw.css_select(np.full(50, 7.5), 10, rng=0)


def test_corrupt_selection_files_are_refused() -> None:
    d = lw.srs_select(50, 10, rng=0).to_dict()
    dup = dict(d, indices=[1, 2, 2, 3])
    with pytest.raises(lw.LabelwiseError, match="distinct"):
        lw.Selection.from_dict(dup)
    with pytest.raises(lw.LabelwiseError, match="integer rows"):
        lw.Selection.from_dict(dict(d, indices=[1.7, 2.9]))
    with pytest.raises(lw.LabelwiseError, match="population_size"):
        lw.Selection.from_dict(dict(d, population_size=50.9))
    assert lw.Selection.from_dict(dict(d, indices=[1.0, 2.0], diagnostics={})).budget == 2


def test_extend_without_parameters_or_with_a_bad_state() -> None:
    probs = np.random.default_rng(0).dirichlet(np.ones(3), 60)
    d = lw.ddg_select(probs, 10).to_dict()
    d.pop("params")
    with pytest.raises(lw.LabelwiseError, match="missing its ddg parameter"):
        lw.extend(lw.Selection.from_dict(d), probs, 5)
    s = lw.srs_select(60, 10, rng=0).to_dict()
    s["rng_state"] = dict(s["rng_state"], state={"state": -1, "inc": 1})
    s["diagnostics"] = {}
    with pytest.raises(lw.LabelwiseError, match="unusable rng_state"):
        lw.extend(lw.Selection.from_dict(s), None, 5)
    with pytest.raises(lw.LabelwiseError, match="5 rows, 2 of them not yet selected"):
        lw.extend(lw.srs_select(5, 3, rng=0), 5, 3)


def test_estimate_needs_a_selection() -> None:
    with pytest.raises(lw.LabelwiseError, match="must be a Selection"):
        lw.estimate({"indices": [0, 1]}, [1, 0])  # type: ignore[arg-type]


def test_bootstrap_interval_contains_its_estimate_at_any_level() -> None:
    gen = np.random.default_rng(0)
    for _ in range(50):
        y = 1 - gen.standard_exponential(54) ** 2 * 0.1
        for conf in (0.01, 0.1, 0.3, 0.95):
            e = lw.srs_estimate(y, confidence=conf)
            assert e.ci_low <= e.value <= e.ci_high


def test_wilson_interval_checks_its_arguments() -> None:
    with pytest.raises(lw.LabelwiseError, match="successes must be in"):
        wilson_interval(3, 2)
    with pytest.raises(lw.LabelwiseError, match="confidence must be in"):
        wilson_interval(1, 2, 1.5)
    lo, hi = wilson_interval(0, 10)
    assert lo == 0.0 and 0 < hi < 0.35


def test_cppi_extend_needs_the_same_predictions() -> None:
    gen = np.random.default_rng(0)
    pred = gen.integers(0, 3, (4, 200))
    sel = lw.cppi_select(pred, 20, rng=0)
    other = pred.copy()
    other[0, :10] = (other[0, :10] + 1) % 3
    with pytest.raises(lw.LabelwiseError, match="ones the selection was made from"):
        lw.extend(sel, other, 10)
    assert lw.extend(sel, pred, 10).budget == 30


def test_ces_extend_needs_the_same_activations() -> None:
    """Extending a CES selection with other data of as many rows (the probabilities, another
    layer) went on silently against another pile's sections; it is now refused, while the
    same activations in another dtype still extend."""
    rng = np.random.default_rng(0)
    acts = rng.normal(size=(200, 6)).astype(np.float32)
    sel = lw.ces_select(acts, 20, rng=0)
    other = rng.dirichlet(np.ones(3), 200)
    for wrong in (other, acts[::-1].copy(), acts[:, :5]):
        with pytest.raises(lw.LabelwiseError, match="the ones the selection was made from"):
            lw.extend(sel, wrong, 5)
    assert lw.extend(sel, acts.astype(np.float64), 5).budget == 25
    old = lw.Selection.from_dict(
        {**sel.to_dict(), "diagnostics": {"objective_trace": [], "ignored_constant_neurons": 0}}
    )
    assert lw.extend(old, acts, 5).budget == 25  # older selections carry no fingerprint


def test_ces_range_beyond_float64_is_a_constant_neuron_with_its_warning() -> None:
    a = np.random.default_rng(0).normal(size=(60, 3))
    a[0, 0], a[1, 0] = 1.7e308, -1.7e308
    with pytest.warns(lw.DegenerateDataWarning, match="1 of 3 neurons are constant"):
        sel = lw.ces_select(a, 20, rng=0)
    assert sel.budget == 20
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        lw.ces_select(np.random.default_rng(1).normal(size=(60, 3)), 20, rng=0)


def test_nan_in_probabilities_is_named_by_its_row() -> None:
    probs = np.random.default_rng(0).dirichlet(np.ones(3), 80)
    probs[57, 1] = np.nan
    with pytest.raises(lw.LabelwiseError, match="NaN or infinity at row 57"):
        lw.css_select(probs, 20, rng=0)
    acts = np.random.default_rng(1).normal(size=(80, 4))
    with pytest.raises(lw.LabelwiseError, match="at row 57"):
        lw.Campaign(acts, probs, rng=0)


def test_extend_checks_the_recorded_parameters() -> None:
    acts = np.random.default_rng(0).normal(size=(120, 4))
    d = lw.ces_select(acts, 20, rng=0).to_dict()
    d["params"] = dict(d["params"], n_groups=-1)
    with pytest.raises(lw.LabelwiseError, match="selection parameter n_groups must be"):
        lw.extend(lw.Selection.from_dict(d), acts, 10)


@pytest.mark.parametrize("bad", [{"a": np.zeros((10, 3))}, None, {1, 2}])
def test_a_mapping_or_none_as_an_array_is_named(bad: object) -> None:
    """Not "must be 2-D, got shape ()": the message says what was passed."""
    kind = type(bad).__name__
    acts = np.zeros((10, 3))
    calls = [
        lambda: lw.ces_select(bad, 5, rng=0),
        lambda: lw.Campaign(activations=bad, probabilities=None, rng=0),
        lambda: lw.Campaign(activations=acts, probabilities=bad if bad is not None else {}, rng=0),
        lambda: lw.css_select(bad, 5, rng=0),
    ]
    for call in calls:
        with pytest.raises(lw.LabelwiseError, match=r"must be an array with one row per input"):
            call()
    with pytest.raises(lw.LabelwiseError, match=f"got {kind}"):
        lw.ces_select(bad, 5, rng=0)


def test_ranking_campaign_takes_a_mapping_of_models() -> None:
    zoo = lw.ranking.synthetic.synthetic_zoo([0.9, 0.8, 0.7], 300, n_classes=3, rng=0)
    names = ["big", "mid", "small"]
    by_name = dict(zip(names, zoo.predictions, strict=True))
    a = lw.RankingCampaign(by_name, rng=1)
    b = lw.RankingCampaign(zoo.predictions, rng=1, model_names=names)
    for camp in (a, b):
        rows = camp.propose(40)
        camp.record(rows, zoo.labels[rows])
    ra, rb = a.ranking(), b.ranking()
    assert ra.model_names == tuple(names)
    np.testing.assert_array_equal(ra.accuracy, rb.accuracy)
    probs = {k: np.eye(3)[v] for k, v in by_name.items()}
    with pytest.raises(lw.LabelwiseError, match="same models"):
        lw.RankingCampaign(by_name, probabilities={"big": probs["big"]})
    probs["mid"] = probs["mid"][:10]
    with pytest.raises(lw.LabelwiseError, match="shapes differ"):
        lw.RankingCampaign(by_name, probabilities=probs)


def test_accuracy_needs_scores_in_0_1() -> None:
    """metric="accuracy" with scores outside [0, 1] (e.g. labels passed as scores) gave an
    "accuracy" of 1.27 with an interval up to 1.66; it is now refused, by every estimator."""
    sel = lw.srs_select(100, 20, rng=0)
    scores = np.tile([0.0, 2.0], 10)
    with pytest.raises(lw.LabelwiseError, match=r"metric 'accuracy' needs scores in \[0, 1\]"):
        lw.estimate(sel, scores, metric="accuracy")
    with pytest.raises(lw.LabelwiseError, match="needs scores in"):
        lw.srs_estimate(scores - 1, metric="accuracy")
    with pytest.raises(lw.LabelwiseError, match="needs scores in"):
        lw.ces_estimate(scores, metric="accuracy")
    with pytest.raises(lw.LabelwiseError, match="needs scores in"):
        lw.stratified_estimate(scores, np.zeros(20, int), [100], metric="accuracy")
    with pytest.raises(lw.LabelwiseError, match="metric must be a string"):
        lw.estimate(sel, scores / 2, metric=1)  # type: ignore[arg-type]
    est = lw.estimate(sel, scores, metric="score")  # other scores: any name
    assert est.value == 1.0 and est.metric == "score"
    assert lw.estimate(sel, scores / 2, metric="accuracy").value == 0.5


def test_rank_models_needs_distinct_names() -> None:
    """rank_models took model_names ["a", "a"] (the CLI's --names refused them): its table
    and JSON then named two models alike; it now refuses repeated or empty names."""
    pred = np.array([[0, 1, 1, 0], [0, 0, 1, 1]])
    labels = np.array([0, 1, 1, 1])
    for names in (["a", "a"], ["a", " "]):
        with pytest.raises(lw.LabelwiseError, match="2 distinct, non-empty names"):
            lw.rank_models(pred, labels, model_names=names, rng=0)
    with pytest.raises(lw.LabelwiseError, match="must name all 2 models, got 1"):
        lw.rank_models(pred, labels, model_names=["a"], rng=0)
    assert lw.rank_models(pred, labels, model_names=["a", "b"], rng=0).model_names == ("a", "b")


def test_regression_targets_too_large_to_square_say_rescale() -> None:
    """A target of 1e200 overflowed the squared error to -inf: 'scores must be finite, found
    NaN or infinity ... (drop or impute those rows)' about values the user gave as finite,
    with a NumPy overflow warning; it is now named and the fix (rescale) given."""
    pred = np.linspace(0, 1, 5)
    tgt = pred.copy()
    tgt[3] = 1e200
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # and no overflow warning on the way
        with pytest.raises(lw.LabelwiseError, match=r"targets must be at most 1e\+150.*position 3"):
            lw.regression_scores(pred, tgt)
        with pytest.raises(lw.LabelwiseError, match="rescale the targets"):
            lw.regression_scores(tgt, pred)
        assert lw.regression_scores(pred * 1e100, pred * 1e100).tolist() == [1.0] * 5


def test_proposing_past_the_pile_says_how_many_rows_are_left() -> None:
    """A batch larger than the rows left said 'n must be in [1, 30]' (Campaign) and, once every
    row was proposed, 'n must be at most the unproposed rows, got a full campaign' /
    'k must be <= the rows never proposed, got k with 0 left' (RankingCampaign). One check
    now names the rows left and the pile's size in both (and in `labelwise next`)."""
    gen = np.random.default_rng(0)
    probs = np.tile([0.7, 0.3], (30, 1))
    camp = lw.Campaign(gen.standard_normal((30, 4)), probs, rng=0)
    rank = lw.RankingCampaign(gen.integers(0, 2, (3, 30)), rng=0)
    for c, name in ((camp, "n"), (rank, "k")):
        c.propose(18)
        with pytest.raises(
            lw.LabelwiseError,
            match=rf"{name} must be at most the 12 rows never "
            r"proposed \(of 30\), got 13",
        ):
            c.propose(13)
        c.propose(12)
        with pytest.raises(
            lw.LabelwiseError,
            match=r"every row of the pile \(30\) has been "
            "proposed: there is nothing left",
        ):
            c.propose(1)
        with pytest.raises(lw.LabelwiseError, match=rf"{name} must be >= 1, got 0"):
            c.propose(0)


def test_class_labels_given_as_scores_are_named() -> None:
    """lw.estimate(selection, class_labels) returned a 'mean score' of 4.5 without a word;
    whole-number scores above 1 now warn (at the caller's line) and say how to score them."""
    sel = lw.srs_select(100, 10, rng=0)
    classes = np.array([0, 3, 4, 9, 2, 5, 7, 1, 8, 6])
    with pytest.warns(UserWarning, match=r"whole numbers up to 9.*labelwise\.correctness") as rec:
        est = lw.estimate(sel, classes)
    assert est.metric == "mean score" and est.value == 4.5
    assert rec[0].filename == __file__
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # scores in [0, 1], or a named metric: no warning
        lw.estimate(sel, classes / 9)
        lw.estimate(sel, classes, metric="defects")


def _flat_probs(n: int = 200, c: int = 3) -> np.ndarray:
    return np.full((n, c), 1.0 / c)


def _same_models(n: int = 200) -> np.ndarray:
    y = np.random.default_rng(0).integers(0, 5, n)
    return np.stack([y, y, y])


def _other_models(n: int = 200) -> np.ndarray:
    rows = np.arange(n)
    return np.stack([rows % 5, rows % 3, rows % 4])


WARNING_CALLS = {
    "sds_select": lambda: lw.sds_select(_same_models(), 30, rng=0),
    "sds extend": lambda: lw.extend(lw.sds_select(_other_models(), 45, rng=0), _other_models(), 10),
    "rdg_select": lambda: lw.rdg_select(np.stack([_flat_probs(), _flat_probs()]), 30, rng=0),
    "srs_estimate": lambda: lw.srs_estimate(np.ones(30)),
    "spearman": lambda: lw.spearman(np.ones(5), np.arange(5.0)),
}


@pytest.mark.parametrize("name", sorted(WARNING_CALLS))
def test_warnings_point_at_the_callers_line(name: str) -> None:
    """sds_select / rdg_select warned from labelwise/_params.py:196 (the parameter check's
    wrapper added a frame the fixed stacklevel did not count): a notebook showed the
    library's line, not the user's."""
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        WARNING_CALLS[name]()
    assert rec, f"{name} gave no warning"
    assert [w.filename for w in rec] == [__file__] * len(rec)

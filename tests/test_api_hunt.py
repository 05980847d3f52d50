"""The public API called as a stranger would (api33 hunt): plausible but unusual inputs and
call orders. Each test failed before its fix: a raw numpy exception, an argument ignored
without a word, or a message that misread the input."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import labelwise as lw
from synthetic import captured_pile, run_cli


def _pile(n: int = 120, c: int = 3, seed: int = 0):
    g = np.random.default_rng(seed)
    return g.normal(size=(n, 4)), g.dirichlet(np.ones(c), size=n)


@pytest.mark.parametrize("scores", [["yes", "no", "yes"], [object(), 1, 0]])
def test_campaign_record_of_text_scores_is_refused_and_changes_nothing(scores) -> None:
    """A labeller's 'yes'/'no' went to float() inside record: a raw ValueError."""
    acts, probs = _pile()
    c = lw.Campaign(acts, probs, rng=0)
    rows = c.propose(3)
    with pytest.raises(lw.LabelwiseError, match="scores must be numbers"):
        c.record(rows, scores)
    assert c.n_recorded == 0
    c.record(rows, ["1", "0", "1"])  # numbers written as text are numbers
    assert c.n_recorded == 3


@pytest.mark.parametrize(
    ("method", "kwargs", "regression", "said"),
    [
        ("srs", {"n_strata": 3}, False, "n_strata=3 ignored: method='srs' samples the whole"),
        ("active", {"n_strata": 3}, False, "n_strata=3 ignored: method='active' draws from"),
        ("srs", {"n_strata": 3, "min_stratum_size": 5}, False, "n_strata=3 and min_stratum_s"),
        ("auto", {"min_stratum_size": 5}, True, "min_stratum_size=5 ignored: method='auto' (srs"),
    ],
)
def test_strata_arguments_a_design_ignores_give_a_warning(method, kwargs, regression, said):
    """Campaign(method='srs', n_strata=3) (or 'active', or a regression 'auto') ignored the
    strata without a word; the CLI printed a note for its flags. Now a UserWarning naming the
    arguments, at the caller's line; the design is unchanged (one stratum, same rows)."""
    acts, probs = _pile()
    probs = None if regression else probs
    with pytest.warns(UserWarning, match="ignored") as caught:
        c = lw.Campaign(acts, probs, method=method, rng=0, **kwargs)
    assert len(caught) == 1 and str(caught[0].message).startswith(said)
    assert caught[0].filename == __file__
    assert np.unique(c.strata).size == 1
    plain = lw.Campaign(acts, probs, method=method, rng=0)
    np.testing.assert_array_equal(c.propose(10), plain.propose(10))


@pytest.mark.parametrize("method", ["stratified", "model-assisted", "auto", "srs"])
def test_strata_arguments_used_or_left_out_give_no_warning(method) -> None:
    acts, probs = _pile()
    kwargs = {} if method == "srs" else {"n_strata": 3, "min_stratum_size": 5}
    lw.Campaign(acts, probs, method=method, rng=0, **kwargs)  # warnings are errors here


@pytest.mark.parametrize(
    ("method", "started"),
    [
        ("active", "started an active classification campaign"),
        ("srs", "started an srs classification campaign"),
        ("stratified", "started a stratified classification campaign"),
        ("auto", "started a model-assisted (auto) classification campaign"),
    ],
)
def test_campaign_says_a_or_an_as_the_method_is_read(tmp_path, capsys, method, started) -> None:
    """'labelwise campaign' printed "started a active ..." and "started a srs ...". The
    article follows how the name is read: a method acronym letter by letter (an srs, an rdg,
    a ces, a cppi), a word as a word (an active, a stratified)."""
    cap = captured_pile(tmp_path, 6, 40, ["a", "b"], 4, [f"r{i}" for i in range(40)])["cap"]
    data = ["--activations", cap / "activations.npy", "--probs", cap / "probabilities.npy"]
    code, out, err = run_cli(
        ["campaign", tmp_path / "c", *data, "--method", method, "--seed", "0"], capsys
    )
    assert code == 0, err
    assert out.startswith(started), out
    words = ["srs", "css", "ces", "sds", "ddg", "rdg", "cppi", "active", "model-assisted"]
    said = [lw.registry.with_article(w).split()[0] for w in words]
    assert said == ["an", "a", "a", "an", "a", "an", "a", "an", "a"]


@pytest.mark.parametrize("command", ["select", "rank"])
def test_2d_scores_of_several_models_are_not_called_one_models_probabilities(
    tmp_path, capsys, command
) -> None:
    """'select --method sds --predictions X.npy' with X (3, 40) floats (3 models' scores or
    confidences) said it held "one model's probabilities (N, C)" and how to stack captures.
    The docstring's 2-D form is (models, inputs) class labels: refused, saying that 2-D means
    whole-number classes, the value found, and the two forms to give. An (N, C) table whose
    rows sum to 1 (here rounded to 2 decimals) is still named as one model's probabilities."""
    g = np.random.default_rng(0)
    labels = g.integers(0, 3, (3, 40))
    np.save(tmp_path / "labels.npy", labels)
    scores = g.random((3, 40))
    np.save(tmp_path / "scores.npy", scores)
    p = g.random((40, 3))
    np.save(tmp_path / "one.npy", np.round(p / p.sum(axis=1, keepdims=True), 2))
    sel = ["select", "--method", "sds", "--budget", "5", "--seed", "0"]
    code, _, err = run_cli(
        [*sel, "--predictions", tmp_path / "labels.npy", "--out", tmp_path / "s"], capsys
    )
    assert code == 0, err
    if command == "select":
        argv = [*sel, "--out", tmp_path / "s2"]
    else:
        rows = np.loadtxt(tmp_path / "s" / "to_label.csv", delimiter=",", skiprows=1, usecols=1)
        y = np.column_stack([rows, g.integers(0, 3, rows.size)])
        np.savetxt(tmp_path / "y.csv", y, fmt="%d", delimiter=",", header="row,label", comments="")
        argv = ["rank", tmp_path / "s", "--labels", tmp_path / "y.csv"]
    code, _, err = run_cli([*argv, "--predictions", tmp_path / "scores.npy"], capsys)
    assert code == 2 and "one model's" not in err, err
    assert f"a 2-D array holds class labels, whole numbers, got {scores[0, 0]:.4g} in" in err, err
    assert "scores or confidences of 3 models?" in err and "(models, inputs, classes)" in err
    code, _, err = run_cli([*argv, "--predictions", tmp_path / "one.npy"], capsys)
    assert code == 2 and "one model's probabilities (N, C)" in err, err


def test_ranking_campaign_records_true_false_labels_of_a_binary_task() -> None:
    """Boolean predictions were read as classes 0/1, but the same task's boolean labels
    were refused ('labels must be integer class labels, got dtype bool'). Recorded as 1/0,
    they give the ranking the integer labels give; with more than 2 classes they are refused."""
    g = np.random.default_rng(3)
    y = g.random(60) < 0.5
    pred = np.stack([np.where(g.random(60) < a, y, ~y) for a in (0.9, 0.7, 0.6)])
    out = []
    for labels in (y, y.astype(np.int64)):
        c = lw.RankingCampaign(pred, rng=0, n_draws=200)
        rows = c.propose(12)
        c.record(rows, labels[rows])
        out.append(c.ranking())
    np.testing.assert_array_equal(out[0].accuracy, out[1].accuracy)
    np.testing.assert_array_equal(out[0].prob_best, out[1].prob_best)
    three = lw.RankingCampaign(pred + np.arange(60) % 2, rng=0, n_draws=200)  # classes 0..2
    rows = three.propose(4)
    with pytest.raises(lw.LabelwiseError, match="got True/False for 3 classes"):
        three.record(rows, y[rows])


def _tiny_pile_campaign(n_rows: int, n_labels: int, seed: int, method: str = "auto"):
    g = np.random.default_rng([n_rows, n_labels, seed])
    acts, probs = g.normal(size=(n_rows, 4)), g.dirichlet(np.ones(3), n_rows)
    correct = (g.random(n_rows) < 0.7).astype(float)
    c = lw.Campaign(acts, probs, method=method, rng=seed)
    rows = c.propose(n_labels)
    c.record(rows, correct[rows])
    return c, correct


def test_all_labels_right_on_a_one_stratum_pile_is_not_narrower_than_srs() -> None:
    """A pile of 20 rows is one stratum (strata hold at least 10 rows). With 5 labels all
    right, the stratified variance shrunk toward its prior made the Wilson effective size 82:
    [0.948, 1] where SRS on the same 5 labels says [0.622, 1]. No design effect can be seen
    without an error: the effective size is at most the labels (as for each group of a
    two-group design)."""
    acts = np.random.default_rng(0).normal(size=(20, 4))
    probs = np.random.default_rng(1).dirichlet(np.ones(3), 20)
    for method in ("auto", "stratified", "proportional", "srs"):
        c = lw.Campaign(acts, probs, method=method, rng=0)
        rows = c.propose(5)
        if method == "srs":
            with pytest.warns(lw.DegenerateDataWarning, match="all 5 labelled scores are 1"):
                c.record(rows, np.ones(5))
                srs = c.estimate()
            continue
        c.record(rows, np.ones(5))
        e = c.estimate()
        assert e.value == 1.0 and e.ci_high == 1.0
        assert 0.5 < e.ci_low < 0.7, (method, e.ci_low)  # was 0.948
    assert srs.ci_low == pytest.approx(0.622, abs=1e-3)


@pytest.mark.parametrize("n_labels", [1, 3, 5])
def test_intervals_on_a_20_row_pile_cover_at_a_few_labels(n_labels) -> None:
    """95 % intervals of the default design on 20-row piles (accuracy about 0.7) at 1, 3 and
    5 labels covered the pile's accuracy in 0.53 / 0.605 / 0.765 of 200 piles (SRS 0.955 /
    0.965 / 0.955): a label or a few, all right or all wrong, gave [0.669, 1] or [0, 0.331].
    Now 1.0 / 0.995 / 0.97 (seeded piles; here 100 of them)."""
    hits = 0
    for seed in range(100):
        c, correct = _tiny_pile_campaign(20, n_labels, seed)
        e = c.estimate()
        hits += e.ci_low <= correct.mean() <= e.ci_high
    assert hits >= 92, hits


@pytest.mark.parametrize(
    "call",
    [
        lambda p: lw.sds_select(p, 1, rng=0),
        lambda p: lw.cppi_select(p, 3, rng=0),
        lambda p: lw.RankingCampaign(p, rng=0).propose(3),
        lambda p: lw.sds_select(list(p), 1, rng=0),
    ],
    ids=["sds", "cppi", "campaign", "sds-list"],
)
def test_predictions_with_more_models_than_inputs_warn_of_a_transposed_table(call) -> None:
    """4 models' predictions on 60 inputs given as a (60, 4) table (a DataFrame, one row
    per input) were read as 60 models of 4 inputs: sds_select and RankingCampaign.propose
    returned 'rows' that were model indices, without a word (the CLI refuses the shape). A
    warning now names the shape and np.swapaxes; the right shape gives none."""
    g = np.random.default_rng(0)
    y = g.integers(0, 3, 60)
    pred = np.stack([np.where(g.random(60) < a, y, (y + 1) % 3) for a in (0.9, 0.8, 0.7, 0.6)])
    with pytest.warns(UserWarning, match=r"60 models of 4 inputs each.*np\.swapaxes") as caught:
        call(pred.T)
    assert caught[0].filename == __file__
    call(pred)  # warnings are errors here
    call(g.integers(0, 3, (10, 5)))  # hand-made: 10 models of 5 inputs, no warning


@pytest.mark.parametrize("probs", ["classification", None])
def test_activations_without_a_column_are_named_as_such(probs) -> None:
    """Campaign on (N, 0) activations (an empty layer, a slice [:, :0]) said they 'must be
    small enough to standardise (|a| well below 1e308) ... overflows at row 0; divide them by
    a constant first'. Now the same message as CES: at least one neuron (column)."""
    acts, p = _pile()
    with pytest.raises(lw.LabelwiseError, match=r"at least one neuron \(column\), got shape"):
        lw.Campaign(acts[:, :0], p if probs else None, rng=0)


@pytest.mark.parametrize("method", ["srs", "stratified", "auto"])
def test_equal_regression_scores_with_a_floor_do_not_warn_of_zero_width(method) -> None:
    """A regression campaign with score_floor=-3 and 20 equal scores returned [-0.48, 0.776]
    (widened to the betting interval on [-3, 1]) but warned, and noted, that 'the interval has
    zero width and understates the uncertainty'. The design's interval had zero width; the one
    returned has not: no such warning or note. Without a floor the warning stays."""
    acts = np.random.default_rng(0).normal(size=(300, 5))
    c = lw.Campaign(acts, None, method=method, rng=0, score_floor=-3)
    rows = c.propose(20)
    c.record(rows, np.full(20, 0.5))
    e = c.estimate()  # warnings are errors here
    assert e.ci_low < 0.5 < e.ci_high and "widened to betting" in e.interval
    assert not any("zero width" in n for n in e.notes)
    plain = lw.Campaign(acts, None, method=method, rng=0)
    plain.record(plain.propose(20), np.full(20, 0.5))
    with pytest.warns(lw.DegenerateDataWarning, match="the interval has zero width"):
        assert plain.estimate().ci_low == 0.5


def test_wilson_interval_takes_a_numpy_confidence() -> None:
    """wilson_interval(5, 10, np.float32(0.95)) said 'confidence must be in (0, 1), got
    np.float32(0.95)' (it took only Python int/float); every estimator takes numpy scalars."""
    ref = lw.wilson_interval(5, 10, 0.95)
    assert lw.wilson_interval(5, 10, np.float64(0.95)) == ref
    lo, hi = lw.wilson_interval(5, 10, np.float32(0.95))
    assert lo == pytest.approx(ref[0], abs=1e-7) and hi == pytest.approx(ref[1], abs=1e-7)
    with pytest.raises(lw.LabelwiseError, match=r"confidence must be in \(0, 1\), got 1.5"):
        lw.wilson_interval(5, 10, 1.5)
    with pytest.raises(lw.LabelwiseError, match="confidence must be"):
        lw.wilson_interval(5, 10, True)


@pytest.mark.parametrize(
    "kwargs",
    [{"uniform_share": None}, {"power": "2"}, {"tau0": [0.002]}, {"power_tuning": None},
     {"tau_noise": "0.5"}, {"prob_guard": None}, {"contrast_floor": "x"}, {"prob_temper": None},
     {"uniform_share": True}, {"power": float("inf")}],
)  # fmt: skip
def test_ranking_campaign_tuning_values_that_are_not_numbers_are_named(kwargs) -> None:
    """RankingCampaign(uniform_share=None) or power='2' (a config file's text) ended in a raw
    TypeError ("'<' not supported between instances of 'int' and 'NoneType'"); True passed as
    uniform_share 1, infinity as a power. Each is now a LabelwiseError naming the argument."""
    (name,) = kwargs
    pred = np.random.default_rng(0).integers(0, 3, (3, 40))
    with pytest.raises(lw.LabelwiseError, match=rf"^{name} must be (a number )?(in|>)"):
        lw.RankingCampaign(pred, rng=0, **kwargs)
    lw.RankingCampaign(pred, rng=0, **{name: np.float32(0.5)})  # numpy numbers are numbers


@pytest.mark.parametrize(
    ("kwargs", "said"),
    [
        ({"n_strata": 0}, "n_strata must be >= 1, got 0"),
        ({"min_stratum_size": "5"}, "min_stratum_size must be"),
        ({"n_strata": 3, "score_floor": 2.0}, "score_floor"),
    ],
)
def test_bad_strata_arguments_to_srs_are_refused_not_said_to_be_ignored(kwargs, said) -> None:
    """Campaign(method='srs', n_strata=0) warned 'n_strata=0 ignored: ... leave it out' and
    then refused it (with warnings as errors, the warning was all one saw); likewise for
    another bad argument checked after the warning. The warning now comes once every argument
    is checked: only the error."""
    acts, _ = _pile()
    with pytest.raises(lw.LabelwiseError, match=said):
        lw.Campaign(acts, None, method="srs", rng=0, **kwargs)


def test_a_registered_method_named_by_a_word_gets_a_words_article() -> None:
    """registry.with_article read every registered name as an acronym, letter by letter: a
    method registered as "margin" gave "an margin selection" (as for "an srs"). A name
    without a vowel is an acronym; any other is a word."""
    from labelwise import registry

    expected = {"srs": "an", "css": "a", "ces": "a", "sds": "an", "ddg": "a", "rdg": "an"}
    expected |= {"cppi": "a", "active": "an", "stratified": "a", "auto": "an"}
    for name, article in expected.items():
        assert registry.with_article(name) == f"{article} {name}"
    for name, article in {"margin": "a", "random": "a", "lhs": "an", "entropy": "an"}.items():
        registry.register(dataclasses.replace(registry.get("srs"), name=name))
        try:
            assert registry.with_article(name) == f"{article} {name}"
        finally:
            del registry._METHODS[name]


@pytest.mark.parametrize(
    ("table", "said"),
    [
        (np.full((60, 4), np.nan), "finite"),
        (np.full((60, 4), 0.5), "integer class labels when 2-D"),
        (np.full((60, 4), -1), "non-negative class labels"),
    ],
)
def test_a_transposed_table_that_is_also_invalid_gets_the_error(table, said) -> None:
    """A (60, 4) table (60 'models') with NaN, fractions or negative labels gave the
    transposed-table warning before the error refusing it: with warnings as errors (pytest,
    the studies) the warning was all one saw, of a table that could not be used either way.
    The warning now comes once the predictions are checked."""
    for call in (lambda p: lw.cppi_select(p, 3, rng=0), lambda p: lw.RankingCampaign(p, rng=0)):
        with pytest.raises(lw.LabelwiseError, match=said):
            call(table)


def test_campaign_load_of_a_missing_or_corrupt_state_is_a_clear_error(tmp_path) -> None:
    """Campaign.load of a missing directory raised FileNotFoundError, a corrupt campaign.json
    json's JSONDecodeError and a corrupt arrays file zipfile's BadZipFile (api33): now a
    LabelwiseError naming the directory or the file."""
    import shutil

    gen = np.random.default_rng(0)
    acts = gen.normal(size=(200, 4))
    probs = gen.dirichlet(np.ones(3), size=200)
    kw = {"activations": acts, "probabilities": probs}
    with pytest.raises(lw.LabelwiseError, match="is no directory"):
        lw.Campaign.load(tmp_path / "nowhere", **kw)
    with pytest.raises(lw.LabelwiseError, match=r"holds no campaign\.json"):
        lw.Campaign.load(tmp_path, **kw)
    camp = lw.Campaign(acts, probs, rng=0)
    rows = camp.propose(10)
    camp.record(rows, np.ones(10))
    camp.save(tmp_path / "c")
    assert lw.Campaign.load(tmp_path / "c", **kw).estimate() == camp.estimate()
    bad = tmp_path / "bad"
    shutil.copytree(tmp_path / "c", bad)
    (bad / "campaign.arrays.npz").write_bytes(b"not a zip")
    with pytest.raises(lw.LabelwiseError, match="cannot read the campaign arrays"):
        lw.Campaign.load(bad, **kw)
    (bad / "campaign.json").write_text("{ truncated")
    with pytest.raises(lw.LabelwiseError, match="cannot read the campaign state"):
        lw.Campaign.load(bad, **kw)
    (bad / "campaign.json").write_text("[1, 2]")
    with pytest.raises(lw.LabelwiseError, match="holds no campaign state"):
        lw.Campaign.load(bad, **kw)

"""Campaign on degenerate input (fuzz sweep fuz13): clear errors or clean results."""

from __future__ import annotations

import re
import warnings
from typing import Any

import numpy as np
import pytest

import labelwise as lw
from labelwise.exceptions import DegenerateDataWarning


def _data(n: int, d: int = 4, c: int = 3, seed: int = 0):
    g = np.random.default_rng(seed)
    return g.normal(size=(n, d)), g.dirichlet(np.ones(c), size=n)


@pytest.mark.parametrize(("n", "k", "score"), [(500, 30, 1.0), (50, 10, 0.0), (40, 3, 1.0)])
def test_active_accuracy_stays_in_unit_interval_and_its_interval(n, k, score) -> None:
    """Every labelled row right (or wrong): the AIPW mean went to 1.025 (or -0.12), outside
    [0, 1] and outside its own interval."""
    acts, probs = _data(n)
    c = lw.Campaign(acts, probs, method="active", rng=0)
    rows = c.propose(k)
    c.record(rows, np.full(k, score))
    e = c.estimate()
    assert 0.0 <= e.ci_low <= e.value <= e.ci_high <= 1.0
    if k > 3:  # the two the sweep found outside [0, 1]: reported at the boundary, with a note
        assert e.value == score
        assert any("outside [0, 1]" in note for note in e.notes)


@pytest.mark.parametrize("method", ["active", "auto", "stratified", "srs"])
@pytest.mark.parametrize("task", ["classification", "regression"])
def test_every_row_recorded_is_exact(task, method) -> None:
    """All 7 rows recorded: active reported 0.861 with [0, 1] for a true 0.714; the
    stratified designs a standard error of 0 inside [0.417, 0.719] (40 rows) and "worth about 0
    random ones"."""
    g = np.random.default_rng(1)
    acts = g.normal(size=(7, 4))
    probs = g.dirichlet(np.ones(3), size=7) if task == "classification" else None
    s = np.array([1, 1, 0, 1, 1, 0, 1.0]) if probs is not None else -g.exponential(size=7)
    c = lw.Campaign(acts, probs, method=method, rng=0)
    for k in (2, 2, 2, 1):
        rows = c.propose(k)
        c.record(rows, s[rows])
    e = c.estimate()
    assert e.value == pytest.approx(s.mean(), rel=1e-12)
    assert e.ci_low == e.ci_high == e.value
    assert e.std_error == 0.0 and e.n_labelled == 7
    assert e.interval == "exact (whole pile labelled)"
    assert e.effective_sample_size == 7


@pytest.mark.parametrize(
    ("field", "value", "match"),
    [
        ("confidence", 2, "confidence must be in"),
        ("method", "bogus", "method must be one of"),
        ("recorded_scores", [2.0], "scores must be in"),
        ("recorded_scores", [float("nan")], "scores must be finite"),
        ("recorded_rows", "repeat", "recorded_rows must be distinct"),
    ],
)
def test_a_hand_edited_state_is_refused(field, value, match) -> None:
    """An edited campaign.json resumed with confidence 2, method 'bogus', a score of 2.0
    (estimate 0.74) or a NaN score (that row silently dropped out)."""
    acts, probs = _data(200)
    c = lw.Campaign(acts, probs, rng=0)
    rows = c.propose(20)
    c.record(rows, np.ones(20))
    d = c.to_dict()
    if field == "recorded_scores":
        d[field] = value + d[field][1:]
    elif field == "recorded_rows":
        d[field] = d[field][:1] * 2 + d[field][2:]
    else:
        d[field] = value
    with pytest.raises(lw.LabelwiseError, match=match):
        lw.Campaign.from_dict(d, activations=acts, probabilities=probs)


def test_load_refuses_a_reordered_pile_and_save_a_file(tmp_path) -> None:
    """Campaign.load took the pile reversed (same strata sizes) and went on against other rows;
    save into a path that is a file raised a bare FileExistsError."""
    acts, probs = _data(300)
    c = lw.Campaign(acts, probs, rng=0)
    rows = c.propose(20)
    c.record(rows, np.ones(20))
    c.save(tmp_path / "c")
    with pytest.raises(lw.LabelwiseError, match="same row order"):
        lw.Campaign.load(tmp_path / "c", activations=acts[::-1].copy(), probabilities=probs[::-1])
    # the same pile resumes, also recomputed in float32 (last bits differ)
    again = lw.Campaign.load(
        tmp_path / "c", activations=acts.astype(np.float32), probabilities=probs
    )
    assert again.n_recorded == 20
    # a state saved before the check (no "pile" field) resumes as before
    d = c.to_dict()
    del d["pile"]
    assert lw.Campaign.from_dict(d, activations=acts, probabilities=probs).n_recorded == 20
    # a regression campaign (no probabilities) resumed from its cached arrays compared
    # nothing and went on against the reversed pile's rows
    r = lw.Campaign(acts, None, rng=0)
    rows = r.propose(20)
    r.record(rows, np.full(20, 0.9))
    r.save(tmp_path / "r")
    assert (tmp_path / "r" / "campaign.arrays.npz").exists()
    with pytest.raises(lw.LabelwiseError, match="same row order"):
        lw.Campaign.load(tmp_path / "r", activations=acts[::-1].copy(), probabilities=None)
    assert lw.Campaign.load(tmp_path / "r", activations=acts, probabilities=None).n_recorded == 20
    (tmp_path / "f").write_text("x")
    with pytest.raises(lw.LabelwiseError, match="must be a directory"):
        c.save(tmp_path / "f")
    assert (tmp_path / "f").read_text() == "x"


@pytest.mark.parametrize("method", ["srs", "active", "auto"])
def test_load_refuses_the_other_task(method, tmp_path) -> None:
    """A regression state loaded with probabilities gave 'accuracy' -1.0 with CI (0, -0.42);
    a classification state loaded with probabilities=None resumed as 1-MSE."""
    acts, probs = _data(100)
    reg = lw.Campaign(acts, None, method=method, rng=0)
    rows = reg.propose(20)
    reg.record(rows, np.linspace(-3, 1, 20))
    reg.save(tmp_path / "reg")
    cls = lw.Campaign(acts, probs, method=method, rng=0)
    rows = cls.propose(20)
    cls.record(rows, (np.arange(20) % 3 > 0).astype(float))
    cls.save(tmp_path / "cls")
    for name, p in (("reg", probs), ("cls", None)):
        both = r"classification.*regression|regression.*classification"
        with pytest.raises(lw.LabelwiseError, match=both):
            lw.Campaign.load(tmp_path / name, activations=acts, probabilities=p)
        with pytest.raises(lw.LabelwiseError, match="saved as a"):
            lw.Campaign.from_dict(
                (reg if name == "reg" else cls).to_dict(), activations=acts, probabilities=p
            )
    # the right task resumes; a state saved before the task was recorded still loads
    assert lw.Campaign.load(tmp_path / "reg", activations=acts, probabilities=None).task == (
        "regression"
    )
    old = cls.to_dict()
    del old["task"]
    back = lw.Campaign.from_dict(old, activations=acts, probabilities=probs)
    assert back.task == "classification" and back.estimate() == cls.estimate()


@pytest.mark.parametrize(
    "acts",
    [np.ones((50, 4)), np.zeros((1, 3)), np.full((30, 2), 1e-300)],
    ids=["constant", "one-row", "tiny"],
)
def test_regression_active_without_signal_proposes_uniformly(acts) -> None:
    """Constant activations (or N=1): 'Probabilities contain NaN' from numpy, after a
    RuntimeWarning (0 / 0); the conftest turns warnings into errors."""
    n = acts.shape[0]
    c = lw.Campaign(acts, None, method="active", rng=0)
    rows = c.propose(min(5, n))
    assert np.unique(rows).size == rows.size == min(5, n)
    np.testing.assert_allclose(c.to_dict()["draws"]["nq"], 1.0)  # N q = 1: uniform
    c.record(rows, np.linspace(-1, 1, rows.size))
    if n > 1:
        rows = c.propose(n - rows.size)
        assert np.unique(c.proposed).size == n


def _recorded(fn):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = fn()
    return out, [(w.category, str(w.message), w.filename) for w in caught]


DESIGNS = ["srs", "stratified", "proportional", "model-assisted", "active"]


@pytest.mark.parametrize("method", DESIGNS)
def test_regression_one_label_warns_as_srs(method) -> None:
    """One regression score: NaN SE and ESS, ci_low -inf, with no word (srs warned)."""
    acts = np.random.default_rng(0).normal(size=(50, 4))
    c = lw.Campaign(acts, None, method=method, rng=0)
    rows = c.propose(3)
    c.record(rows[:1], [0.5])
    e, caught = _recorded(c.estimate)
    assert e.std_error == np.inf and e.ci_low == -np.inf and e.ci_high == 1.0
    assert np.isfinite(e.value) and not np.isnan(e.effective_sample_size)
    msg = "one label gives no variance estimate; the interval is unbounded"
    assert msg in e.notes
    assert any(cat is DegenerateDataWarning and m == msg and f == __file__ for cat, m, f in caught)


@pytest.mark.parametrize("method", DESIGNS[:4])
def test_regression_constant_scores_warn_of_zero_width(method) -> None:
    acts = np.random.default_rng(0).normal(size=(50, 4))
    c = lw.Campaign(acts, None, method=method, rng=0)
    rows = c.propose(30)
    c.record(rows, np.full(30, 0.5))
    e, caught = _recorded(c.estimate)
    assert e.ci_low == e.ci_high == e.value == 0.5
    msg = "all 30 labelled scores are equal; the interval has zero width and understates"
    assert any(cat is DegenerateDataWarning and msg in m for cat, m, _ in caught)
    assert any(msg in note for note in e.notes)


def test_probabilities_must_be_probabilities() -> None:
    """Logits, percentages, all-zero rows and (N, 1) columns were accepted (the CLI rejected
    them): the strata and the prior error were built from meaningless values."""
    acts, probs = _data(200)
    g = np.random.default_rng(0)
    hint = re.escape("; logits or regression outputs? Save softmax probabilities")
    for bad in (g.normal(size=(200, 3)) * 3, probs * 100, np.zeros((200, 3))):
        with pytest.raises(lw.LabelwiseError, match=hint):
            lw.Campaign(acts, bad, rng=0)
        state = lw.Campaign(acts, probs, rng=0).to_dict()
        with pytest.raises(lw.LabelwiseError, match=hint):
            lw.Campaign.from_dict(state, activations=acts, probabilities=bad)
    with pytest.raises(lw.LabelwiseError, match=r"at least 2.*probabilities=None"):
        lw.Campaign(acts, np.ones((200, 1)), rng=0)
    # float32 softmax rows, and rows rounded to 4 decimals (sums within 1e-3), still pass
    for ok in (probs.astype(np.float32), np.round(probs, 4)):
        assert lw.Campaign(acts, ok, rng=0).task == "classification"
    # rows off by a few thousandths are rounded probabilities, not logits: the hint says so
    rounded = probs.copy()
    rounded[7] *= 0.996
    with pytest.raises(
        lw.LabelwiseError,
        match=r"within 0.001\), got row 7 summing to 0.996; "
        r"rounded probabilities\? Divide each row by its sum",
    ):
        lw.Campaign(acts, rounded, rng=0)


@pytest.mark.parametrize("method", ["auto", "srs", "stratified", "model-assisted", "active"])
def test_huge_activations_are_scaled_exactly(method) -> None:
    """Activations of 1e155 (finite float64): numpy LinAlgError 'Eigenvalues did not
    converge' after overflow warnings, or NaN outlyingness used silently. Standardising is
    scale-free, so the campaign must be the one of the activations / 1e155."""
    acts, probs = _data(200)
    small = lw.Campaign(acts, probs, method=method, rng=0)
    big = lw.Campaign(acts * 1e155, probs, method=method, rng=0)
    np.testing.assert_allclose(big.to_arrays()["dist"], small.to_arrays()["dist"], rtol=1e-12)
    if small._features is not None:
        np.testing.assert_allclose(big._features, small._features, rtol=1e-9, atol=1e-12)
    np.testing.assert_array_equal(big.strata, small.strata)
    np.testing.assert_array_equal(big.propose(30), small.propose(30))


def test_outlyingness_of_ordinary_activations_is_unchanged() -> None:
    """The power-of-2 scaling is exact: the formula's value, to 1e-12 relative."""
    from labelwise.campaign._features import outlyingness

    g = np.random.default_rng(5)
    for a in (g.normal(size=(500, 7)) * 3 + 10, g.normal(size=(50, 2)).astype(np.float32)):
        x = a.astype(np.float64)
        total, sq = x.sum(axis=0), np.einsum("ij,ij->j", x, x)
        mu = total / len(x)
        sd = np.sqrt(np.maximum(sq / len(x) - mu**2, 0.0))
        want = np.sqrt((((x - mu) / sd) ** 2).mean(axis=1))
        np.testing.assert_allclose(outlyingness(a), want, rtol=1e-12)


def test_activations_near_the_float_limit_are_standardised() -> None:
    """+-1.7e308 in one column (a - mean overflows unscaled): the distances of +-1.7."""
    from labelwise.campaign._features import outlyingness

    acts, _ = _data(50)
    acts[:, 0] = np.where(np.arange(50) < 45, 1.7, -1.7)
    huge = acts.copy()
    huge[:, 0] *= 1e308
    np.testing.assert_allclose(outlyingness(huge), outlyingness(acts), rtol=1e-12)


class _CountingGenerator:
    """A generator that counts its weighted draws (calls and values drawn), then draws."""

    def __init__(self, gen: np.random.Generator) -> None:
        self.gen, self.calls, self.drawn = gen, 0, 0

    def choice(self, *args: Any, **kwargs: Any) -> Any:
        out = self.gen.choice(*args, **kwargs)
        self.calls, self.drawn = self.calls + 1, self.drawn + int(np.size(out))
        return out

    def __getattr__(self, name: str) -> Any:
        return getattr(self.gen, name)


def test_active_proposals_near_exhaustion_take_linear_time() -> None:
    """Each draw that hit a proposed row cost one O(N) weighted draw: propose(N - 1) then
    propose(1) took 45 s at N = 50,000. Counted, not timed (a timed assertion fails on a
    busy machine): the chunked draws make about 10 O(N) calls (11 at N = 25,000) drawing
    about 10 N values in all; one call per wasted draw made thousands."""
    n = 5_000
    acts, probs = _data(n)
    c = lw.Campaign(acts, probs, method="active", rng=0)
    counting = _CountingGenerator(c._active_gen)
    c._active_gen = counting  # type: ignore[assignment]
    c.propose(n - 1)
    last = c.propose(1)
    assert counting.calls <= 30 and counting.drawn <= 30 * n, (counting.calls, counting.drawn)
    assert np.unique(c.proposed).size == n and not np.isin(last, c.proposed[:-1]).any()


def test_active_design_stays_unbiased_through_exhaustion() -> None:
    """Proposing 36 of 40 rows at once takes the chunked draws past 3/4 of q's mass: the
    AIPW mean (scores <= 0: never clipped) stays unbiased over 800 campaigns."""
    g = np.random.default_rng(7)
    acts = g.normal(size=(40, 3))
    y = -g.uniform(0, 3, size=40)
    err = []
    for r in range(800):
        c = lw.Campaign(acts, None, method="active", rng=r)
        rows = c.propose(36)
        c.record(rows, y[rows])
        err.append(float(c._active_draws().mean()) - y.mean())
    err = np.asarray(err)
    assert abs(err.mean()) < 4 * err.std() / np.sqrt(err.size)


def test_regression_scores_too_large_for_a_variance_are_refused() -> None:
    acts = np.random.default_rng(0).normal(size=(40, 3))
    camp = lw.Campaign(acts, None, method="srs", rng=0)
    rows = camp.propose(5)
    with pytest.raises(lw.LabelwiseError, match="rescale the targets"):
        camp.record(rows, [0.9, 0.8, 0.7, 0.95, -1e300])
    assert camp.n_recorded == 0  # nothing recorded
    camp.record(rows, [0.9, 0.8, 0.7, 0.95, -1e100])
    assert camp.n_recorded == 5


def test_score_floor_is_checked_kept_and_used() -> None:
    acts, probs = _data(200)
    with pytest.raises(lw.LabelwiseError, match="regression"):
        lw.Campaign(acts, probs, score_floor=-1.0)
    with pytest.raises(lw.LabelwiseError, match="active"):
        lw.Campaign(acts, None, method="active", score_floor=-1.0)
    for bad in (1.0, float("nan"), "x", True):
        with pytest.raises(lw.LabelwiseError, match="score_floor"):
            lw.Campaign(acts, None, score_floor=bad)
    c = lw.Campaign(acts, None, rng=0, score_floor=-1.0)
    rows = c.propose(20)
    before = c.to_dict()
    scores = np.full(20, 0.9)
    scores[3] = -1.5
    with pytest.raises(lw.LabelwiseError, match="score_floor -1"):
        c.record(rows, scores)
    assert c.to_dict() == before
    c.record(rows, np.linspace(0.5, 1.0, 20))
    again = lw.Campaign.from_dict(c.to_dict(), activations=acts, probabilities=None)
    assert again.score_floor == -1.0 and again.estimate() == c.estimate()
    # the anytime sequence is the betting sequence on [floor, 1]: no "unbounded" warning
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        cs = c.estimate(anytime=True)
    assert cs.interval == "betting-cs (anytime)" and cs.ci_low < 0.5
    assert c.estimate().ci_low <= cs.ci_low
    d = c.to_dict()
    d["score_floor"] = 2.0
    with pytest.raises(lw.LabelwiseError, match="score_floor"):
        lw.Campaign.from_dict(d, activations=acts, probabilities=None)


def test_score_floor_covers_a_rare_huge_error() -> None:
    """1 % of the rows with an error 100x the typical one: the bootstrap-t of 35 labels
    covered 0.47 (200 campaigns, half-width 0.16; no interval from n draws is valid for
    every unbounded pile, Bahadur & Savage 1956). Knowing the floor of the scores, the
    interval holds the betting interval on [floor, 1], exact at any n: it covers (1.00,
    half-width 0.28)."""
    g = np.random.default_rng(0)
    n_pop = 2000
    acts = g.normal(size=(n_pop, 4))
    err = 0.01 * g.chisquare(1, n_pop)
    err[g.choice(n_pop, n_pop // 100, replace=False)] = 1.0
    score = 1 - err
    truth = score.mean()
    hits = {None: 0, -1.0: 0}
    reps = 200
    for r in range(reps):
        for floor in hits:
            c = lw.Campaign(acts, None, rng=r, score_floor=floor)
            rows = c.propose(35)
            c.record(rows, score[rows])
            e = c.estimate()
            hits[floor] += e.ci_low <= truth <= e.ci_high
    assert hits[-1.0] / reps >= 0.95
    assert hits[None] / reps < 0.8  # what the floor fixes


def test_surrogate_note_names_why_it_was_not_fitted() -> None:
    """100 labels all correct: the note said 'too few labels for the surrogate (< 20)'."""
    acts, probs = _data(600)
    c = lw.Campaign(acts, probs, method="model-assisted", rng=0)
    rows = c.propose(100)
    c.record(rows, np.ones(100))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DegenerateDataWarning)
        notes = c.estimate().notes
    assert any("every recorded score is the same" in n for n in notes)
    assert not any("too few labels" in n for n in notes)


def test_worth_is_the_srs_size_with_the_same_interval_and_never_above_the_pile() -> None:
    """'45 labels are worth about 144 random ones' on a pile of 123, and '12 labels worth 1'
    when all 12 were correct (user-journey sweep). The worth is now the SRS size whose own
    interval (Wilson's with the finite-population factor) is as wide: exactly inverse to it."""
    from labelwise.campaign._estimators import srs_worth
    from labelwise.estimation.estimators import wilson_interval, without_replacement_factor

    for m, k, n_pop in ((50, 45, 1000), (12, 12, 123), (100, 61, 150)):
        lo, hi = wilson_interval(k, m, 0.95, fpc=without_replacement_factor(m, n_pop))
        assert srs_worth(k / m, (hi - lo) / 2, 0.0, m, n_pop, 0.95, binary=True) == pytest.approx(
            m, rel=1e-6
        )
    g = np.random.default_rng(0)
    n_pop = 123
    acts = g.normal(size=(n_pop, 8))
    probs = g.dirichlet(np.ones(3) * 0.3, size=n_pop)
    correct = (g.random(n_pop) < probs.max(axis=1)).astype(float)
    c = lw.Campaign(acts, probs, rng=0)
    for _ in range(6):
        rows = c.propose(15)
        c.record(rows, correct[rows])
        e = c.estimate()
        assert 1 <= e.effective_sample_size <= n_pop
    c = lw.Campaign(acts, probs, rng=1)
    rows = c.propose(12)
    c.record(rows, np.ones(12))
    assert 4 <= c.estimate().effective_sample_size <= 12


def test_class_labels_recorded_as_scores_say_how_to_score_them() -> None:
    """record(rows, labels) said 'scores must be in [0, 1] for accuracy, got 0..3', not what
    the numbers were nor how to turn labels into scores (estimate's warning already did)."""
    acts, probs = _data(300, c=4)
    c = lw.Campaign(acts, probs, rng=0)
    rows = c.propose(10)
    labels = np.arange(10) % 4
    with pytest.raises(lw.LabelwiseError, match=r"class labels.*labelwise\.correctness"):
        c.record(rows, labels)
    with pytest.raises(lw.LabelwiseError, match=r"in \[0, 1\] for accuracy") as exc:
        c.record(rows, np.full(10, 1.5))  # not whole numbers: no class-label advice
    assert "correctness" not in str(exc.value)
    c.record(rows, (labels == probs[rows].argmax(axis=1)).astype(float))


def test_rows_outside_the_pile_are_named() -> None:
    """record([row 51, 10**6], ...) said 'rows must be in [0, 300), got 51..': the smallest row,
    not the one outside the pile."""
    acts, probs = _data(300)
    c = lw.Campaign(acts, probs, rng=0)
    rows = c.propose(2)
    with pytest.raises(lw.LabelwiseError, match=r"rows must be in \[0, 300\), got \[1000000\]"):
        c.record([int(rows[0]), 10**6], [1.0, 0.0])
    with pytest.raises(lw.LabelwiseError, match=r"got \[-1\]"):
        c.record([-1, int(rows[0])], [1.0, 0.0])


def test_a_campaign_shows_what_it_is_in_a_notebook() -> None:
    """A notebook cell ending in `camp` showed '<labelwise.campaign.campaign.Campaign object
    at 0x7f...>': nothing about the campaign."""
    acts, probs = _data(300)
    c = lw.Campaign(acts, probs, rng=0)
    rows = c.propose(10)
    c.record(rows[:4], [1.0, 0.0, 1.0, 1.0])
    assert repr(c) == (
        "Campaign(method='model-assisted' (auto), classification, 300 rows, 10 proposed, "
        "4 labelled)"
    )
    assert repr(lw.Campaign(acts, None, method="srs", rng=0)) == (
        "Campaign(method='srs', regression, 300 rows, 0 proposed, 0 labelled)"
    )


def test_probability_errors_give_the_python_line_too() -> None:
    """In a notebook, logits were refused with only the shell's remedy ('labelwise capture
    --head softmax'), and a binary model's single P(class 1) column with 'rows summing to 1
    ... logits or regression outputs?', neither the cause nor the fix."""
    acts, probs = _data(200)
    logits = np.random.default_rng(0).normal(size=(200, 3)) * 3
    with pytest.raises(lw.LabelwiseError, match=r"scipy\.special\.softmax\(logits, axis=1\)"):
        lw.Campaign(acts, logits, rng=0)
    p1 = probs[:, :1]
    with pytest.raises(lw.LabelwiseError, match=r"np\.column_stack\(\[1 - p, p\]\)"):
        lw.Campaign(acts, p1, rng=0)
    both = np.column_stack([1 - p1, p1])
    assert lw.Campaign(acts, both, rng=0).task == "classification"

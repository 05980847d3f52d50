"""CES (Li et al. 2019, Sec. 3.2, Algorithm 1, Sec. 4.3.4) against the plain-loop reference."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

import labelwise as lw
import labelwise.sampling.ces as ces_mod
from ces_reference import objective as ref_objective
from ces_reference import sections as ref_sections
from labelwise.sampling.ces import CESState

OBJECTIVES = ["ce", "ce-common", "kl"]
N_SMALL = 60


def _small_pile() -> np.ndarray:
    """60 x 6 activations with the awkward cases in known columns.

    0, 1: ReLU-like (many exact zeros = the minimum), the maximum repeated in column 0;
    2: constant (ignored with a warning);
    3: integers 0..60 with both ends present: every value k*3 (K=20) or k*20 (K=3) lies
       exactly on a section edge, and the arithmetic is exact, so edges must go to the upper
       section and the maximum to the closed last one;
    4: negative values; 5: float32-representable continuous values.
    """
    rng = np.random.default_rng(2024)
    a = np.empty((N_SMALL, 6))
    a[:, 0] = np.maximum(rng.normal(size=N_SMALL), 0.0)
    a[:3, 0] = a[:, 0].max()
    a[:, 1] = np.maximum(rng.normal(loc=0.3, size=N_SMALL), 0.0)
    a[:, 2] = 1.5
    a[:, 3] = rng.integers(0, 61, size=N_SMALL)
    a[0, 3], a[1, 3], a[2, 3], a[3, 3] = 0, 60, 60, 3 * 7
    a[:, 4] = -rng.exponential(size=N_SMALL)
    a[:, 5] = rng.normal(size=N_SMALL).astype(np.float32)
    return a


SMALL = _small_pile()


def _state(x: np.ndarray, k: int, kind: str, eps: float = 1e-10) -> CESState:
    if np.any(np.ptp(x, axis=0) == 0):
        with pytest.warns(lw.DegenerateDataWarning, match="constant"):
            return CESState(x, n_sections=k, objective=kind, epsilon=eps)
    return CESState(x, n_sections=k, objective=kind, epsilon=eps)


@pytest.mark.parametrize("k", [3, 20])
def test_section_codes_match_reference_including_edges(k: int) -> None:
    st = _state(SMALL, k, "ce")
    assert st.n_neurons == 5  # the constant column 2 is dropped
    assert list(st.cols) == [0, 1, 3, 4, 5]
    codes = st.codes(np.arange(N_SMALL))
    for jj, j in enumerate(st.cols):
        ref = np.array(ref_sections(SMALL[:, j].tolist(), k))
        assert np.array_equal(codes[:, jj], ref), f"column {j}"
        # The minimum is in the first section, the maximum in the closed last one.
        assert np.all(codes[SMALL[:, j] == SMALL[:, j].min(), jj] == 0)
        assert np.all(codes[SMALL[:, j] == SMALL[:, j].max(), jj] == k - 1)
    # Column 3: the value 21 sits on an edge: K=3 -> 21 // 20 = 1, K=20 -> 21 // 3 = 7.
    assert codes[3, 2] == (1 if k == 3 else 7)


@pytest.mark.parametrize("kind", OBJECTIVES)
@pytest.mark.parametrize("k", [3, 20])
def test_objective_matches_reference(kind: str, k: int) -> None:
    rng = np.random.default_rng(k)
    for size in (1, 7, 25, N_SMALL):
        rows = rng.choice(N_SMALL, size=size, replace=False).tolist()
        with pytest.warns(lw.DegenerateDataWarning, match="constant"):
            got = lw.ces_objective(SMALL, rows, n_sections=k, objective=kind)
        want = ref_objective(SMALL, rows, k, kind)
        assert got == pytest.approx(want, rel=1e-12, abs=1e-12), (size, got, want)


@pytest.mark.parametrize("kind", OBJECTIVES)
@pytest.mark.parametrize("k", [3, 20])
@pytest.mark.parametrize("group_size", [1, 4])
def test_score_groups_matches_reference(kind: str, k: int, group_size: int) -> None:
    rng = np.random.default_rng(100 * k + group_size)
    t = rng.choice(N_SMALL, size=12, replace=False)
    rest = np.setdiff1d(np.arange(N_SMALL), t)
    groups = np.array([rng.choice(rest, size=group_size, replace=False) for _ in range(15)])
    # A group of rows that all share the extreme values (repeated cells within one group).
    if group_size == 4:
        groups[0] = np.setdiff1d(np.arange(N_SMALL), t)[:4]
    st = _state(SMALL, k, kind)
    st.add(t)
    assert st.size == 12
    assert st.objective() == pytest.approx(ref_objective(SMALL, t.tolist(), k, kind), abs=1e-12)
    got = st.score_groups(groups)
    want = [ref_objective(SMALL, t.tolist() + g.tolist(), k, kind) for g in groups]
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    # Scoring does not change T.
    assert st.size == 12
    assert st.objective() == pytest.approx(ref_objective(SMALL, t.tolist(), k, kind), abs=1e-12)


@pytest.mark.parametrize("kind", ["ce", "ce-common"])
def test_epsilon_floors_empty_sections(kind: str) -> None:
    # One row of T leaves most sections empty: each costs -P_S log(eps).
    for eps in (1e-10, 1e-3):
        with pytest.warns(lw.DegenerateDataWarning):
            got = lw.ces_objective(SMALL, [5], n_sections=20, objective=kind, epsilon=eps)
        assert got == pytest.approx(ref_objective(SMALL, [5], 20, kind, eps), rel=1e-12)
    with pytest.warns(lw.DegenerateDataWarning):
        a = lw.ces_objective(SMALL, [5], n_sections=20, objective="ce", epsilon=1e-10)
        b = lw.ces_objective(SMALL, [5], n_sections=20, objective="ce", epsilon=1e-3)
    assert a > b


def test_kl_of_the_whole_pile_is_zero_and_ce_is_its_entropy() -> None:
    x = SMALL[:, [0, 1, 3]]
    every = np.arange(N_SMALL)
    assert lw.ces_objective(x, every, objective="kl") == pytest.approx(0.0, abs=1e-12)
    ce = lw.ces_objective(x, every, objective="ce")
    st = CESState(x, n_sections=20, objective="ce", epsilon=1e-10)
    p = st.p_s[st.p_s > 0]
    assert ce == pytest.approx(-(p * np.log(p)).sum() / 3, rel=1e-12)


def test_constant_neuron_is_ignored_with_a_warning() -> None:
    x = np.delete(SMALL, 2, axis=1)
    rows = [1, 4, 9, 16, 25]
    with pytest.warns(lw.DegenerateDataWarning, match="1 of 6 neurons are constant"):
        with_const = lw.ces_objective(SMALL, rows, objective="kl")
    assert with_const == pytest.approx(lw.ces_objective(x, rows, objective="kl"), rel=1e-12)
    with pytest.warns(lw.DegenerateDataWarning):
        sel = lw.ces_select(SMALL, 20, initial=10, n_groups=20, rng=0)
    assert sel.diagnostics["ignored_constant_neurons"] == 1
    # The constant column does not change which rows are picked.
    sel2 = lw.ces_select(x, 20, initial=10, n_groups=20, rng=0)
    assert np.array_equal(sel.indices, sel2.indices)


def test_higher_rank_activations_are_flattened_per_row() -> None:
    rng = np.random.default_rng(3)
    x = np.maximum(rng.normal(size=(80, 3, 4)), 0.0)
    a = lw.ces_select(x, 45, initial=20, n_groups=30, rng=1)
    b = lw.ces_select(x.reshape(80, 12), 45, initial=20, n_groups=30, rng=1)
    assert np.array_equal(a.indices, b.indices)


@pytest.mark.parametrize("dtype", [np.float32, np.int64, np.bool_])
def test_other_dtypes_agree_with_float64(dtype: Any) -> None:
    x = np.round(SMALL[:, [0, 3, 4]] * 4)  # small integers: exact in every dtype
    if dtype is np.bool_:
        x = x > np.median(x, axis=0)
    rows = [2, 3, 5, 7, 11, 13, 17]
    got = lw.ces_objective(x.astype(dtype), rows, objective="kl")
    assert got == pytest.approx(ref_objective(x.astype(np.float64), rows, 20, "kl"), abs=1e-12)


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_non_finite_activations_are_rejected(bad: float) -> None:
    x = SMALL[:, [0, 1]].copy()
    x[17, 1] = bad
    with pytest.raises(lw.LabelwiseError, match=r"activations.*row 17"):
        lw.ces_select(x, 10, rng=0)
    with pytest.raises(lw.LabelwiseError, match="activations"):
        lw.ces_objective(x, [0, 1])
    with pytest.raises(lw.LabelwiseError, match="activations"):
        lw.ces_select(x.astype(np.float32), 10, rng=0)


@pytest.mark.parametrize(
    "x",
    [np.ones((30, 4)), np.zeros((30, 1)), np.ones((1, 3))],
    ids=["ones", "one-zero-column", "one-row"],
)
def test_all_constant_activations_are_rejected(x: np.ndarray) -> None:
    with pytest.raises(lw.LabelwiseError, match="activations must vary"):
        lw.ces_select(x, 1, rng=0)


@pytest.mark.parametrize(
    "x", [np.empty((0, 4)), np.empty((5, 0)), np.ones(5), np.array([["a", "b"]] * 3)]
)
def test_malformed_activations_are_rejected(x: np.ndarray) -> None:
    with pytest.raises(lw.LabelwiseError, match="activations"):
        lw.ces_select(x, 1, rng=0)


def test_budget_up_to_initial_is_a_plain_random_sample() -> None:
    rng = np.random.default_rng(9)
    other = rng.normal(size=SMALL.shape)
    for budget in (1, 10, 30):
        with pytest.warns(lw.DegenerateDataWarning):
            a = lw.ces_select(SMALL, budget, initial=30, rng=4)
        # Nothing about the activations or the objective enters: only the random stream.
        b = lw.ces_select(other, budget, initial=30, objective="kl", n_sections=3, rng=4)
        assert np.array_equal(a.indices, b.indices)
        assert len(a.diagnostics["objective_trace"]) == 1
    # ... and it is uniform: each row's inclusion frequency is budget / N.
    hits = np.zeros(N_SMALL)
    for seed in range(600):
        hits[lw.ces_select(other, 10, initial=30, rng=seed).indices] += 1
    freq = hits / 600
    # Binomial(600, 1/6) per row: sd ~ 0.015; allow about 4.5 sd.
    assert np.all(np.abs(freq - 10 / N_SMALL) < 0.07)


@pytest.mark.parametrize(
    ("budget", "initial", "group_size", "steps"),
    [(47, 30, 5, 4), (45, 30, 5, 3), (12, 5, 3, 3), (31, 30, 5, 1)],
)
def test_trace_has_one_entry_per_step_and_equals_the_prefix_objectives(
    budget: int, initial: int, group_size: int, steps: int
) -> None:
    x = SMALL[:, [0, 1, 3, 4, 5]]
    sel = lw.ces_select(
        x, budget, initial=initial, group_size=group_size, n_groups=25, objective="kl", rng=8
    )
    trace = sel.diagnostics["objective_trace"]
    assert len(trace) == 1 + steps
    sizes = [initial + i * group_size for i in range(steps)] + [budget]
    for value, size in zip(trace, sizes, strict=True):
        assert value == pytest.approx(
            lw.ces_objective(x, sel.indices[:size], objective="kl"), rel=1e-10
        )


@pytest.mark.parametrize("kind", OBJECTIVES)
def test_each_step_keeps_the_best_candidate_group(
    kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Algorithm 1, line 4: Q* minimises the objective of T ∪ Q_i over the l groups drawn.

    The groups the package draws are recorded and re-scored with the plain-loop reference.
    """
    drawn: list[np.ndarray] = []
    real_draw = ces_mod._draw_groups

    def recording_draw(*args: Any) -> np.ndarray:
        groups = real_draw(*args)
        drawn.append(groups.copy())
        return groups

    monkeypatch.setattr(ces_mod, "_draw_groups", recording_draw)
    x = SMALL[:40, [0, 3, 4]]
    initial, q, budget = 6, 3, 16
    sel = lw.ces_select(
        x, budget, n_sections=5, initial=initial, group_size=q, n_groups=8, objective=kind, rng=21
    )
    assert len(drawn) == math.ceil((budget - initial) / q)
    chosen = sel.indices[:initial].tolist()
    for step, groups in enumerate(drawn):
        assert groups.shape == (8, min(q, budget - len(chosen)))
        assert not set(groups.ravel().tolist()) & set(chosen)
        ref = [ref_objective(x, chosen + g.tolist(), 5, kind) for g in groups]
        start = initial + step * q
        picked = sel.indices[start : start + groups.shape[1]].tolist()
        assert picked in [g.tolist() for g in groups]
        picked_score = ref_objective(x, chosen + picked, 5, kind)
        assert picked_score == pytest.approx(min(ref), abs=1e-12)
        chosen += picked
    assert chosen == sel.indices.tolist()


def _signal_pile(seed: int, n: int = 1500) -> np.ndarray:
    """Clustered activations: a random subset under-represents some clusters."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(scale=2.0, size=(6, 10))
    weights = np.array([0.4, 0.25, 0.15, 0.1, 0.06, 0.04])
    z = rng.choice(6, size=n, p=weights)
    return np.maximum(centres[z] + rng.normal(size=(n, 10)), 0.0)


@pytest.mark.parametrize("kind", ["kl", "ce"])
def test_ces_beats_random_subsets_on_its_objective(kind: str) -> None:
    wins, ces_vals, rnd_vals = 0, [], []
    for seed in range(20):
        x = _signal_pile(seed)
        sel = lw.ces_select(x, 60, objective=kind, n_groups=100, rng=seed)
        ces_val = lw.ces_objective(x, sel.indices, objective=kind)
        rng = np.random.default_rng(1000 + seed)
        rnd = np.mean(
            [
                lw.ces_objective(x, rng.choice(x.shape[0], 60, replace=False), objective=kind)
                for _ in range(10)
            ]
        )
        ces_vals.append(ces_val)
        rnd_vals.append(rnd)
        wins += ces_val < rnd
    assert np.mean(ces_vals) < 0.85 * np.mean(rnd_vals)  # measured: kl 0.58, ce 0.78
    assert wins >= 19


def test_initial_rows_are_kept_when_extending() -> None:
    x = SMALL[:, [0, 1, 3]]
    sel = lw.ces_select(x, 36, initial=30, n_groups=10, rng=2)
    ext = lw.extend(sel, x, 4)
    assert np.array_equal(ext.indices[:36], sel.indices)
    assert len(ext.diagnostics["objective_trace"]) == len(sel.diagnostics["objective_trace"]) + 1
    with pytest.raises(lw.LabelwiseError, match="activations"):
        lw.extend(sel, None, 4)


def test_small_pool_draws_distinct_rows_to_the_end() -> None:
    # Fewer free rows than 20 * group_size: the argsort branch of _draw_groups.
    x = SMALL[:, [0, 3, 4]]
    sel = lw.ces_select(x, N_SMALL, initial=5, group_size=7, n_groups=30, rng=5)
    assert np.array_equal(np.sort(sel.indices), np.arange(N_SMALL))


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({"objective": "cross-entropy"}, "objective"),
        ({"objective": None}, "objective"),
        ({"n_sections": 0}, "n_sections"),
        ({"n_sections": 256}, "n_sections"),
        ({"n_sections": 2.5}, "n_sections"),
        ({"n_sections": True}, "n_sections"),
        ({"epsilon": 0.0}, "epsilon"),
        ({"epsilon": 1.0}, "epsilon"),
        ({"epsilon": -1e-10}, "epsilon"),
        ({"epsilon": float("nan")}, "epsilon"),
        ({"epsilon": "small"}, "epsilon"),
        ({"initial": 0}, "initial"),
        ({"group_size": 0}, "group_size"),
        ({"n_groups": 0}, "n_groups"),
        ({"n_groups": 1.5}, "n_groups"),
    ],
)
def test_bad_parameters_are_errors_naming_them(kwargs: dict[str, Any], name: str) -> None:
    x = SMALL[:, [0, 1]]
    with pytest.raises(lw.LabelwiseError, match=name):
        lw.ces_select(x, 40, rng=0, **kwargs)


@pytest.mark.parametrize(
    "kwargs", [{"objective": "ce2"}, {"n_sections": 0}, {"epsilon": 2.0}], ids=str
)
def test_ces_objective_checks_its_parameters(kwargs: dict[str, Any]) -> None:
    with pytest.raises(lw.LabelwiseError, match=next(iter(kwargs))):
        lw.ces_objective(SMALL[:, [0, 1]], [0, 1], **kwargs)


@pytest.mark.parametrize("rows", [[], [-1, 2], [0, N_SMALL]])
def test_ces_objective_rejects_bad_rows(rows: list[int]) -> None:
    with pytest.raises(lw.LabelwiseError, match="rows"):
        lw.ces_objective(SMALL[:, [0, 1]], rows)


def test_one_section_gives_a_constant_objective() -> None:
    x = SMALL[:, [0, 1]]
    # K=1: every row is in the only section, P_T = P_S, so CE = 0 = KL for any T.
    for kind in OBJECTIVES:
        assert lw.ces_objective(x, [3, 4], n_sections=1, objective=kind) == pytest.approx(0.0)

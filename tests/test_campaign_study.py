"""The campaign study's measures on a small seeded pile: E against SRS's exact variance."""

from __future__ import annotations

import numpy as np
import pytest

from labelwise.experiments.campaign_study import Population, _run_srs, run_campaign_study
from test_campaign import _pile


def test_srs_row_is_measured_against_the_exact_srs_variance() -> None:
    """E's denominator is (1 - n/N) S² / n, so the simulated SRS row's E is about 1 (here
    within 0.25 at 300 repetitions) and a design that is really better shows E < 1."""
    y, acts, probs = _pile(400, kind="informative", seed=3)
    study = run_campaign_study(
        [Population("pile", y, acts, probs)],
        methods=("proportional", "stratified"),
        sizes=(40, 80),
        repetitions=300,
    )
    rows = {r["method"]: r for r in study.rows}
    pop = Population("pile", y, acts, probs)
    err, _, _ = _run_srs(pop, (40, 80), 300, 0, 0.95)
    n = np.array([40.0, 80.0])
    exact = y.var(ddof=1) * (1 - n / 400) / n
    assert rows["srs"]["E"] == pytest.approx(float(np.mean(np.mean(err**2, axis=0) / exact)))
    assert rows["srs"]["E"] != 1.0  # a simulated denominator would make it 1 by definition
    assert abs(rows["srs"]["E"] - 1) < 0.25
    assert rows["proportional"]["E"] < 1.1
    assert rows["stratified"]["E"] < rows["srs"]["E"]
    e_n = np.asarray(study.per_size["pile/stratified"]["E"])
    assert e_n.shape == (2,) and np.all(e_n > 0)
    for r in rows.values():
        assert 0.85 <= r["coverage"] <= 1.0


def test_monte_carlo_errors_are_over_repetitions_not_sizes() -> None:
    """E's and the coverage's standard errors come from the per-repetition means over sizes
    (the nested sizes of one repetition are not independent), not from size x repetition
    cells as if they were independent draws."""
    y, acts, probs = _pile(400, kind="informative", seed=3)
    study = run_campaign_study(
        [Population("pile", y, acts, probs)], methods=("stratified",), sizes=(40, 80),
        repetitions=50,
    )  # fmt: skip
    pop = Population("pile", y, acts, probs)
    err, _, cover = _run_srs(pop, (40, 80), 50, 0, 0.95)
    n = np.array([40.0, 80.0])
    exact = y.var(ddof=1) * (1 - n / 400) / n
    per_rep = np.mean(err**2 / exact[None, :], axis=1)
    srs = next(r for r in study.rows if r["method"] == "srs")
    assert srs["E"] == pytest.approx(per_rep.mean())
    assert srs["E_se"] == pytest.approx(per_rep.std(ddof=1) / np.sqrt(50))
    assert srs["coverage_se"] == pytest.approx(cover.mean(axis=1).std(ddof=1) / np.sqrt(50))
    assert 0 < srs["E_se"] < srs["E"]
    assert "+-" in study.table()


def test_the_study_command_refuses_unknown_contexts_and_one_repetition(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from labelwise.experiments.campaign_study import main

    for argv, msg in (
        (["--contexts", "digits-none,nope"], "--contexts must be among"),
        (["--repetitions", "1"], "--repetitions must be >= 2"),
    ):
        with pytest.raises(SystemExit) as exc:
            main(argv)
        assert exc.value.code == 2
        assert msg in capsys.readouterr().err

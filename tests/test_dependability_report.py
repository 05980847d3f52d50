"""The combined dependability report on arrays."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from labelwise import LabelwiseError
from labelwise.dependability.report import dependability_report


def data(n: int = 400, seed: int = 0) -> dict:
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 3, n)
    logits = rng.standard_normal((n, 3))
    logits[np.arange(n), y] += 1.5
    probs = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    acts = np.maximum(rng.standard_normal((n, 12)) + y[:, None] * 0.3, 0)
    weather = rng.choice(["sunny", "rainy"], n)
    road = rng.choice(["stone", "tarmac", "mud"], n)
    return {"y": y, "probs": probs, "acts": acts, "scen": {"weather": weather, "road": road}}


def test_report_rows_and_values() -> None:
    d = data()
    spec = {"weather": ["sunny", "cloudy", "rainy"], "road": ["stone", "tarmac", "mud"]}
    rep = dependability_report(
        labels=d["y"],
        probabilities=d["probs"],
        activations=d["acts"],
        scenarios=d["scen"],
        spec=spec,
        severity=np.ones((3, 3)) - np.eye(3),
    )
    names = [r[0] for r in rep.rows]
    assert names[:3] == ["accuracy", "neuron 1-activation coverage", "neuron 2-activation coverage"]
    values = dict((r[0], r[1]) for r in rep.rows)
    acc = float(np.mean(d["probs"].argmax(1) == d["y"]))
    assert values["accuracy"] == pytest.approx(acc)
    # cloudy never occurs: 6 of the 9 weather x road cells are occupied
    assert values["scenario 2-projection coverage"] == pytest.approx(6 / 9)
    assert values["accuracy discounted by coverage"] == pytest.approx(acc * 6 / 9)
    # all off-diagonal weights 1: the normalised weighted error is the plain error rate
    assert values["weighted error (normalised)"] == pytest.approx(1 - acc)
    doc = rep.to_dict()
    assert doc["details"]["next_scenarios"]["proposals"]
    assert "accuracy" in rep.table()


def test_every_summary_value_says_its_range_and_direction() -> None:
    """The summary printed bare numbers: nothing said they were shares in [0, 1], which ones
    are better low, what 'top 10% mean' averages or what the normalised weighted error divides
    by. The table now ends with that legend and every JSON summary row has a meaning."""
    d = data()
    rep = dependability_report(
        labels=d["y"],
        probabilities=d["probs"],
        activations=d["acts"],
        scenarios=d["scen"],
        spec={"weather": ["sunny", "cloudy", "rainy"], "road": ["stone", "tarmac", "mud"]},
        severity=np.ones((3, 3)) - np.eye(3),
    )
    table = rep.table()
    assert "a share or probability in [0, 1]" in table
    assert "lower is better for activation pattern, weighted error, higher for the others" in table
    assert "mean severity per input / largest severity 1" in table
    summary = rep.to_dict()["summary"]
    assert all(row["meaning"] and "[0, 1]" in row["meaning"] for row in summary)


def test_scenario_results_name_their_conditions() -> None:
    """The per-scenario results were computed from unnamed rows: dependability.json had
    'conditions': null and scenarios like ['rainy', 'mud'], and the worst scenario printed as a
    bare tuple. They now keep the condition names."""
    d = data()
    spec = {"weather": ["sunny", "cloudy", "rainy"], "road": ["stone", "tarmac", "mud"]}
    rep = dependability_report(
        labels=d["y"],
        probabilities=d["probs"],
        activations=d["acts"],
        scenarios=d["scen"],
        spec=spec,
    )
    perf = rep.to_dict()["details"]["scenario_performance"]
    assert perf["conditions"] == ["weather", "road"]
    detail = dict((r[0], r[2]) for r in rep.rows)["worst scenario accuracy"]
    assert detail.startswith("weather=") and ", road=" in detail


def test_report_without_optional_parts_and_bad_labels() -> None:
    d = data()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        rep = dependability_report(labels=d["y"], probabilities=d["probs"], activations=d["acts"])
    assert len(rep.rows) == 4
    with pytest.raises(LabelwiseError, match="labels"):
        dependability_report(labels=d["y"][:-1], probabilities=d["probs"], activations=d["acts"])
    with pytest.raises(LabelwiseError, match="labels"):
        dependability_report(labels=d["y"] + 3, probabilities=d["probs"], activations=d["acts"])

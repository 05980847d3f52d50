"""Scenario coverage by k-projection (Cheng et al. 2018, "Towards Dependability Metrics for
Neural Networks", Sec. II-A) and greedy proposals of the next scenarios to collect."""

from __future__ import annotations

import itertools
import json
import math
import sys
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from labelwise.dependability import scenario as sc
from labelwise.dependability.scenario import next_scenarios, scenario_coverage
from labelwise.exceptions import DegenerateDataWarning, LabelwiseError, MissingDependencyError

# The paper's example: C1 weather, C2 road surfacing, C3 incoming road orientation.
SPEC = {
    "weather": ["sunny", "cloudy", "rainy"],
    "road": ["stone", "mud", "tarmac"],
    "orientation": ["straight", "curvy"],
}
# Its data set of two scenarios, (sunny, stone, straight) and (rainy, tarmac, curvy).
DATA = {
    "weather": ["sunny", "rainy"],
    "road": ["stone", "tarmac"],
    "orientation": ["straight", "curvy"],
}


def _with_rows(data: Mapping[str, Sequence[Any]], *rows: Sequence[Any]) -> dict[str, list[Any]]:
    out = {c: list(v) for c, v in data.items()}
    for row in rows:
        for c, v in zip(out, row, strict=True):
            out[c].append(v)
    return out


def _naive_coverage(
    data: Mapping[str, Sequence[Any]], spec: Mapping[str, Sequence[Any]], k: int
) -> float:
    """Eq. 1 by hand: sets of seen value combinations per k-subset."""
    names = list(spec)
    n_rows = len(data[names[0]])
    occupied = total = 0
    for subset in itertools.combinations(names, k):
        seen = {tuple(data[c][r] for c in subset) for r in range(n_rows)}
        occupied += len(seen)
        total += math.prod(len(spec[c]) for c in subset)
    return occupied / total


# --- the paper's worked example -----------------------------------------------------------


def test_paper_example_two_projection() -> None:
    res = scenario_coverage(DATA, SPEC)
    assert res.value == pytest.approx((2 + 2 + 2) / (9 + 6 + 6))
    assert res.k == 2
    assert res.subsets == (("weather", "road"), ("weather", "orientation"), ("road", "orientation"))
    # The denominator 9 + 6 + 6 = 3x3 + 3x2 + 3x2 fixes the spec sizes (3, 3, 2).
    assert list(res.total.values()) == [9, 6, 6]
    assert list(res.occupied.values()) == [2, 2, 2]
    assert (res.n_occupied, res.n_cells) == (6, 21)
    assert len(res.missing) == 21 - 6
    assert (("weather", "road"), ("sunny", "mud")) in res.missing
    assert (("weather", "road"), ("sunny", "stone")) not in res.missing
    table = res.table("road", "weather")
    assert table.conditions == ("weather", "road")
    np.testing.assert_array_equal(table.counts, [[1, 0, 0], [0, 0, 0], [0, 0, 1]])


def test_paper_example_adding_cloudy_mud_curvy() -> None:
    # "an image satisfying the scenario (cloudy, mud, curvy) can efficiently increase the
    # metric from (2+2+2)/(9+6+6) to (3+3+3)/(9+6+6)"
    res = scenario_coverage(_with_rows(DATA, ("cloudy", "mud", "curvy")), SPEC)
    assert res.value == pytest.approx((3 + 3 + 3) / (9 + 6 + 6))
    assert list(res.occupied.values()) == [3, 3, 3]


def test_paper_example_k1_and_k3_by_hand() -> None:
    # k = 1: 2 of 3 weathers, 2 of 3 roads, 2 of 2 orientations.
    assert scenario_coverage(DATA, SPEC, k=1).value == pytest.approx((2 + 2 + 2) / (3 + 3 + 2))
    # k = 3: the two full scenarios out of 3 * 3 * 2.
    res3 = scenario_coverage(DATA, SPEC, k=3)
    assert res3.value == pytest.approx(2 / 18)
    assert res3.total == {("weather", "road", "orientation"): 18}


def test_next_scenarios_on_the_paper_example() -> None:
    plan = next_scenarios(DATA, SPEC, n=1)
    assert plan.exact
    assert plan.coverage_before == pytest.approx(6 / 21)
    (first,) = plan
    # Any scenario opening 3 new cells is best, e.g. the paper's (cloudy, mud, curvy);
    # ties go to spec order, and (sunny, mud, curvy) comes first.
    assert first.gain == 3
    assert first.coverage == pytest.approx(9 / 21)
    assert dict(first.scenario) == {"weather": "sunny", "road": "mud", "orientation": "curvy"}
    assert scenario_coverage(
        _with_rows(DATA, ("cloudy", "mud", "curvy")), SPEC
    ).value == pytest.approx(first.coverage)


def test_next_scenarios_stops_at_full_coverage() -> None:
    plan = next_scenarios(DATA, SPEC, n=50)
    assert 0 < len(plan) < 50
    assert plan.coverage_after == pytest.approx(1.0)
    rows = [tuple(p.scenario.values()) for p in plan]
    assert scenario_coverage(_with_rows(DATA, *rows), SPEC).value == pytest.approx(1.0)


# --- quantitative variant -----------------------------------------------------------------


def test_quantitative_targets() -> None:
    data = _with_rows(DATA, ("sunny", "stone", "straight"))  # (sunny, stone, straight) twice
    # target 2 everywhere: per subset one cell full (1) and one half (0.5).
    res = scenario_coverage(data, SPEC, targets=2)
    assert res.quantitative
    assert res.value == pytest.approx((1.5 + 1.5 + 1.5) / 21)
    assert res.covered == {s: 1.5 for s in res.subsets}
    assert res.occupied == {s: 2 for s in res.subsets}
    # A half-filled cell is still missing.
    assert (("weather", "road"), ("rainy", "tarmac")) in res.missing
    # Per subset: only (road, weather) wants 2 (any key order); the others want 1.
    res = scenario_coverage(data, SPEC, targets={("road", "weather"): 2})
    assert res.value == pytest.approx((1.5 + 2 + 2) / 21)
    assert res.table("weather", "road").target == 2
    # target 1 is the plain metric.
    assert scenario_coverage(data, SPEC, targets=1).value == scenario_coverage(data, SPEC).value


@pytest.mark.parametrize(
    ("targets", "match"),
    [
        (0, "targets must be"),
        (1.5, "targets must be an integer"),
        ({("weather", "sky"): 2}, "unknown condition.*sky"),
        ({("weather",): 2}, "2 distinct conditions"),
        ({("weather", "weather"): 2}, "2 distinct conditions"),
        ({("weather", "road"): 0}, "targets"),
        ({("weather", "road"): 2, ("road", "weather"): 3}, "more than once"),
    ],
)
def test_bad_targets(targets: Any, match: str) -> None:
    with pytest.raises(LabelwiseError, match=match):
        scenario_coverage(DATA, SPEC, targets=targets)


# --- impossible cells ---------------------------------------------------------------------


def test_impossible_cells_leave_the_denominator() -> None:
    res = scenario_coverage(DATA, SPEC, impossible=[{"weather": "cloudy", "road": "mud"}])
    assert res.n_cells == 20
    assert res.value == pytest.approx(6 / 20)
    assert res.table("weather", "road").n_impossible == 1
    assert (("weather", "road"), ("cloudy", "mud")) not in res.missing
    # One condition's value: every cell with it goes (3 weather x mud + mud x 2 orientations).
    res = scenario_coverage(DATA, SPEC, impossible=[{"road": "mud"}])
    assert res.n_cells == 21 - 3 - 2
    assert res.total == {
        ("weather", "road"): 6,
        ("weather", "orientation"): 6,
        ("road", "orientation"): 4,
    }


def test_impossible_over_more_than_k_conditions() -> None:
    rule = [{"weather": "cloudy", "road": "mud", "orientation": "curvy"}]
    # Each pair of it can still occur (with other values), so no 2-cell is excluded ...
    assert scenario_coverage(DATA, SPEC, impossible=rule).n_cells == 21
    # ... but the 3-cell is, and the scenario is never proposed.
    assert scenario_coverage(DATA, SPEC, k=3, impossible=rule).n_cells == 17
    for p in next_scenarios(DATA, SPEC, n=50, impossible=rule):
        assert tuple(p.scenario.values()) != ("cloudy", "mud", "curvy")


def test_impossible_data_and_all_impossible_are_errors() -> None:
    with pytest.raises(LabelwiseError, match=r"row 1 matches the impossible"):
        scenario_coverage(DATA, SPEC, impossible=[{"weather": "rainy"}])
    # (With data, some cell is always possible: a row in an impossible cell is an error.)
    empty: dict[str, list[str]] = {c: [] for c in SPEC}
    weather = {"weather": SPEC["weather"]}
    with pytest.raises(LabelwiseError, match="every cell"):
        next_scenarios(
            {"weather": []}, weather, k=1, impossible=[{"weather": w} for w in weather["weather"]]
        )
    every = [{"orientation": "straight"}, {"orientation": "curvy"}]
    with pytest.raises(LabelwiseError, match="every full scenario"):
        next_scenarios(empty, SPEC, k=2, impossible=every)


@pytest.mark.parametrize(
    ("impossible", "match"),
    [
        ([{"sky": "blue"}], "unknown condition 'sky'"),
        ([{"weather": "foggy"}], "'foggy' is not an allowed value of condition 'weather'"),
        ([{}], "non-empty"),
        ({"weather": "sunny"}, "must be a list"),
    ],
)
def test_bad_impossible(impossible: Any, match: str) -> None:
    with pytest.raises(LabelwiseError, match=match):
        scenario_coverage(DATA, SPEC, impossible=impossible)


def test_proposals_avoid_impossible_scenarios() -> None:
    plan = next_scenarios(DATA, SPEC, n=50, impossible=[{"road": "mud"}])
    assert plan.coverage_after == pytest.approx(1.0)
    assert all(p.scenario["road"] != "mud" for p in plan)


# --- greedy proposals ---------------------------------------------------------------------


def _random_case(seed: int) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    rng = np.random.default_rng(seed)
    m = int(rng.integers(2, 5))
    spec = {f"c{i}": [f"v{j}" for j in range(int(rng.integers(2, 4)))] for i in range(m)}
    n_rows = int(rng.integers(1, 6))
    data = {c: [str(rng.choice(v)) for _ in range(n_rows)] for c, v in spec.items()}
    return data, spec


def _possible_scenarios(
    spec: Mapping[str, Sequence[Any]], impossible: Sequence[Mapping[str, Any]] = ()
) -> list[tuple[Any, ...]]:
    names = list(spec)
    out = []
    for z in itertools.product(*spec.values()):
        scen = dict(zip(names, z, strict=True))
        if not any(all(scen[c] == v for c, v in a.items()) for a in impossible):
            out.append(z)
    return out


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("k", [1, 2, 3])
def test_first_proposal_is_optimal_by_brute_force(seed: int, k: int) -> None:
    data, spec = _random_case(seed)
    k = min(k, len(spec))
    impossible = [{"c0": "v0", "c1": "v1"}] if seed % 3 == 0 else []
    data = {c: list(v) for c, v in data.items()}
    keep = [
        r
        for r in range(len(data["c0"]))
        if not (impossible and data["c0"][r] == "v0" and data["c1"][r] == "v1")
    ]
    if not keep:
        return
    data = {c: [v[r] for r in keep] for c, v in data.items()}
    plan = next_scenarios(data, spec, k=k, n=1, impossible=impossible)
    best = max(
        scenario_coverage(_with_rows(data, z), spec, k=k, impossible=impossible).value
        for z in _possible_scenarios(spec, impossible)
    )
    before = scenario_coverage(data, spec, k=k, impossible=impossible).value
    if best == pytest.approx(before):
        assert len(plan) == 0
    else:
        assert plan[0].coverage == pytest.approx(best)
        # Ties by spec order: no earlier scenario reaches the same coverage.
        z0 = tuple(plan[0].scenario.values())
        for z in _possible_scenarios(spec, impossible):
            if z == z0:
                break
            value = scenario_coverage(_with_rows(data, z), spec, k=k, impossible=impossible)
            assert value.value < best - 1e-12


@pytest.mark.parametrize("seed", range(8))
def test_proposals_raise_coverage_monotonically_and_truthfully(seed: int) -> None:
    data, spec = _random_case(seed)
    plan = next_scenarios(data, spec, k=2, n=6)
    previous = plan.coverage_before
    rows: list[tuple[Any, ...]] = []
    for p in plan:
        assert p.gain > 0
        assert p.coverage > previous
        previous = p.coverage
        rows.append(tuple(p.scenario.values()))
        # The reported coverage is the coverage of the data plus the proposals so far.
        assert scenario_coverage(_with_rows(data, *rows), spec).value == pytest.approx(p.coverage)


def test_planning_from_scratch_reaches_full_pairwise_coverage() -> None:
    spec = {f"c{i}": ["a", "b"] for i in range(4)}
    empty: dict[str, list[str]] = {c: [] for c in spec}
    plan = next_scenarios(empty, spec, n=20)
    assert plan.coverage_before == 0.0
    assert plan.coverage_after == pytest.approx(1.0)
    assert plan[0].gain == math.comb(4, 2)
    # Every pair covered with far fewer tests than all 16 scenarios.
    assert len(plan) <= 8


def test_heuristic_path_for_large_spaces(monkeypatch: pytest.MonkeyPatch) -> None:
    exact = next_scenarios(DATA, SPEC, n=50, impossible=[{"road": "mud", "weather": "sunny"}])
    monkeypatch.setattr(sc, "_EXACT_LIMIT", 0)
    plan = next_scenarios(DATA, SPEC, n=50, impossible=[{"road": "mud", "weather": "sunny"}])
    assert not plan.exact and exact.exact
    assert plan[0].gain == exact[0].gain == 3
    previous = plan.coverage_before
    for p in plan:
        assert p.gain > 0 and p.coverage > previous
        assert not (p.scenario["road"] == "mud" and p.scenario["weather"] == "sunny")
        previous = p.coverage
    assert plan.coverage_after == pytest.approx(1.0)
    with pytest.raises(LabelwiseError, match="every full scenario"):
        next_scenarios(
            {"weather": [], "road": [], "orientation": []},
            SPEC,
            impossible=[{"orientation": "straight"}, {"orientation": "curvy"}],
        )


def test_next_scenarios_checks_n() -> None:
    with pytest.raises(LabelwiseError, match="n must be"):
        next_scenarios(DATA, SPEC, n=0)


# --- inferred spec ------------------------------------------------------------------------


def test_inferred_spec_warns_and_is_relative_to_what_was_seen() -> None:
    with pytest.warns(DegenerateDataWarning, match="inferred"):
        res = scenario_coverage(DATA)
    assert res.spec_inferred
    assert res.spec == {
        "weather": ("rainy", "sunny"),
        "road": ("stone", "tarmac"),
        "orientation": ("curvy", "straight"),
    }
    assert res.value == pytest.approx(6 / 12)
    with pytest.warns(DegenerateDataWarning, match="inferred"):
        plan = next_scenarios(DATA, n=1)
    assert plan[0].scenario["weather"] in {"sunny", "rainy"}


def test_no_warning_with_a_spec() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert not scenario_coverage(DATA, SPEC).spec_inferred


# --- bad inputs ---------------------------------------------------------------------------


def test_value_outside_the_spec_names_condition_value_and_row() -> None:
    data = _with_rows(DATA, ("foggy", "mud", "curvy"))
    with pytest.raises(LabelwiseError, match=r"condition 'weather' has value 'foggy' at row 2"):
        scenario_coverage(data, SPEC)
    data = _with_rows(DATA, (None, "mud", "curvy"))
    with pytest.raises(LabelwiseError, match=r"'weather' is missing at row 2"):
        scenario_coverage(data, SPEC)


@pytest.mark.parametrize(
    ("spec", "match"),
    [
        ({**SPEC, "season": ["summer", "winter"]}, r"not columns of conditions"),
        ({**SPEC, "road": []}, "at least one allowed value"),
        ({**SPEC, "road": ["mud", "mud"]}, "twice"),
        ({**SPEC, "road": "mud"}, "must be a list"),
        ({}, "spec must map"),
        (["weather"], "spec must map"),
    ],
)
def test_bad_spec(spec: Any, match: str) -> None:
    with pytest.raises(LabelwiseError, match=match):
        scenario_coverage(DATA, spec)


@pytest.mark.parametrize(
    ("k", "match"),
    [
        (0, r"k must be in \[1, 3\], got 0"),
        (4, r"k must be in \[1, 3\], got 4"),
        (True, "k must be an integer"),
    ],
)
def test_bad_k(k: Any, match: str) -> None:
    with pytest.raises(LabelwiseError, match=match):
        scenario_coverage(DATA, SPEC, k=k)
    with pytest.raises(LabelwiseError, match=match):
        next_scenarios(DATA, SPEC, k=k)


def test_k_above_the_number_of_conditions() -> None:
    spec = {"weather": SPEC["weather"], "road": SPEC["road"]}
    with pytest.raises(LabelwiseError, match=r"at most the number of conditions \(2\), got 3"):
        scenario_coverage(DATA, spec, k=3)


@pytest.mark.parametrize(
    ("conditions", "match"),
    [
        ({"weather": [], "road": [], "orientation": []}, "at least one row"),
        ({}, "at least one column"),
        ({"weather": ["sunny"], "road": [], "orientation": []}, "same length"),
        ({"weather": "sunny", "road": ["mud"], "orientation": ["curvy"]}, "sequence"),
        (42, "mapping column -> values"),
    ],
)
def test_bad_tables(conditions: Any, match: str) -> None:
    with pytest.raises(LabelwiseError, match=match):
        scenario_coverage(conditions, SPEC)


def test_errors_are_value_errors() -> None:
    with pytest.raises(ValueError):
        scenario_coverage({}, SPEC)


# --- inputs: CSV, JSON, YAML, DataFrame-like ----------------------------------------------


def _write_csv(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def test_csv_table_and_json_spec(tmp_path: Path) -> None:
    csv_path = _write_csv(
        tmp_path / "conditions.csv",
        "file,weather,road,orientation\na.png, sunny ,stone,straight\n\nb.png,rainy,tarmac,curvy\n",
    )
    spec_path = tmp_path / "spec.json"
    spec_path.write_text(json.dumps(SPEC), encoding="utf-8")
    # Columns the spec does not name (here "file") are ignored.
    res = scenario_coverage(csv_path, spec_path)
    assert res.value == pytest.approx(6 / 21)
    assert res.n_rows == 2
    assert scenario_coverage(str(csv_path), SPEC).value == res.value


def test_yaml_spec_gives_the_same_coverage(tmp_path: Path) -> None:
    yaml = pytest.importorskip("yaml")
    csv_path = _write_csv(
        tmp_path / "conditions.csv",
        "weather,road,orientation\nsunny,stone,straight\nrainy,tarmac,curvy\n",
    )
    spec_path = tmp_path / "spec.yaml"
    spec_path.write_text(yaml.safe_dump(SPEC), encoding="utf-8")
    assert scenario_coverage(csv_path, spec_path).value == pytest.approx(6 / 21)


def test_csv_text_matches_numeric_spec_values(tmp_path: Path) -> None:
    csv_path = _write_csv(tmp_path / "c.csv", "speed,lanes\n30,1\n50,2\n")
    res = scenario_coverage(csv_path, {"speed": [30, 50, 80], "lanes": [1, 2]})
    assert res.value == pytest.approx(2 / 6)
    assert res.missing[0] == (("speed", "lanes"), (30, 2))


def test_bad_csv_files(tmp_path: Path) -> None:
    with pytest.raises(LabelwiseError, match="does not exist"):
        scenario_coverage(tmp_path / "nope.csv", SPEC)
    ragged = _write_csv(tmp_path / "r.csv", "weather,road\nsunny\n")
    with pytest.raises(LabelwiseError, match="line 2 has 1 fields"):
        scenario_coverage(ragged, {"weather": ["sunny"], "road": ["mud"]})
    empty_cell = _write_csv(tmp_path / "e.csv", "weather,road\nsunny,\n")
    with pytest.raises(LabelwiseError, match="'road' is missing at row 0"):
        scenario_coverage(empty_cell, {"weather": ["sunny"], "road": ["mud"]})
    with pytest.raises(LabelwiseError, match="is empty"):
        scenario_coverage(_write_csv(tmp_path / "x.csv", ""), SPEC)
    with pytest.raises(LabelwiseError, match="not valid JSON"):
        scenario_coverage(DATA, _write_csv(tmp_path / "s.json", "{oops"))


def test_yaml_spec_without_pyyaml_suggests_json(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    spec_path = _write_csv(tmp_path / "spec.yaml", "weather: [sunny, cloudy, rainy]\n")
    monkeypatch.setitem(sys.modules, "yaml", None)  # import yaml -> ImportError
    with pytest.raises(MissingDependencyError, match="JSON"):
        scenario_coverage(DATA, spec_path)


class _Column:
    def __init__(self, values: list[Any]) -> None:
        self._values = values

    def __len__(self) -> int:
        return len(self._values)

    def to_numpy(self) -> np.ndarray:
        return np.asarray(self._values, dtype=object)


class _FrameLike:
    """The two things a DataFrame offers that scenario_coverage uses."""

    def __init__(self, data: Mapping[str, list[Any]]) -> None:
        self._data = dict(data)
        self.columns = list(data)

    def __getitem__(self, name: str) -> _Column:
        return _Column(self._data[name])


def test_dataframe_like_tables() -> None:
    res = scenario_coverage(_FrameLike({**DATA, "id": [7, 8]}), SPEC)
    assert res.value == pytest.approx(6 / 21)


def test_mixed_types_keep_their_identity() -> None:
    spec: dict[str, list[Any]] = {"lanes": [1, 2, "many"], "wet": [True, False]}
    data = {"lanes": [1, "many", 2], "wet": [True, False, False]}
    res = scenario_coverage(data, spec, k=1)
    assert res.value == 1.0
    assert scenario_coverage({"x": np.array([1, 2, 2])}, {"x": [1, 2, 3]}, k=1).value == 2 / 3


# --- the result ---------------------------------------------------------------------------


def test_result_is_frozen_read_only_and_serialisable() -> None:
    res = scenario_coverage(DATA, SPEC, impossible=[{"road": "mud"}], targets=2)
    d = json.loads(json.dumps(res.to_dict()))
    assert d["value"] == pytest.approx(res.value)
    assert d["n_cells"] == 16
    assert d["tables"][0]["conditions"] == ["weather", "road"]
    assert d["impossible"] == [{"road": "mud"}]
    with pytest.raises(AttributeError):
        res.value = 1.0  # type: ignore[misc]
    with pytest.raises(ValueError):
        res.tables[0].counts[0, 0] = 5
    with pytest.raises(TypeError):
        res.spec["weather"] = ("x",)  # type: ignore[index]
    plan = next_scenarios(DATA, SPEC, n=2)
    p = json.loads(json.dumps(plan.to_dict()))
    assert p["proposals"][0]["scenario"] == {
        "weather": "sunny",
        "road": "mud",
        "orientation": "curvy",
    }
    assert p["coverage_after"] == pytest.approx(plan.coverage_after)


# --- properties ---------------------------------------------------------------------------


@st.composite
def _cases(draw: st.DrawFn) -> tuple[dict[str, list[int]], dict[str, list[int]], int, list[int]]:
    m = draw(st.integers(1, 4))
    sizes = draw(st.lists(st.integers(1, 4), min_size=m, max_size=m))
    spec = {f"c{i}": list(range(s)) for i, s in enumerate(sizes)}
    n_rows = draw(st.integers(1, 12))
    rows = [[draw(st.integers(0, s - 1)) for s in sizes] for _ in range(n_rows)]
    data = {c: [r[i] for r in rows] for i, c in enumerate(spec)}
    k = draw(st.integers(1, min(3, m)))
    order = draw(st.permutations(range(n_rows)))
    return data, spec, k, list(order)


@settings(max_examples=60, deadline=None)
@given(_cases())
def test_coverage_bounds_order_and_duplicates(
    case: tuple[dict[str, list[int]], dict[str, list[int]], int, list[int]],
) -> None:
    data, spec, k, order = case
    value = scenario_coverage(data, spec, k=k).value
    assert 0.0 < value <= 1.0
    assert value == pytest.approx(_naive_coverage(data, spec, k))
    shuffled = {c: [v[i] for i in order] for c, v in data.items()}
    assert scenario_coverage(shuffled, spec, k=k).value == value
    doubled = {c: v + v[: len(v) // 2 + 1] for c, v in data.items()}
    assert scenario_coverage(doubled, spec, k=k).value == value
    quantitative = scenario_coverage(data, spec, k=k, targets=3).value
    assert 0.0 < quantitative <= value


@pytest.mark.parametrize("seed", range(6))
def test_heuristic_reaches_full_coverage_on_random_cases(
    seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    data, spec = _random_case(seed)
    monkeypatch.setattr(sc, "_EXACT_LIMIT", 0)
    plan = next_scenarios(data, spec, k=2, n=100)
    assert not plan.exact
    assert plan.coverage_after == pytest.approx(1.0)
    rows = [tuple(p.scenario.values()) for p in plan]
    assert scenario_coverage(_with_rows(data, *rows), spec).value == pytest.approx(1.0)


@pytest.mark.parametrize("limit", [None, 0])
def test_cells_no_possible_scenario_reaches(
    limit: int | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    # (a=0, b=0) is a possible 2-cell by the documented rule (no rule within {a, b}), but
    # both of its full scenarios are impossible: proposals stop one cell short of 1.
    spec = {"a": [0, 1], "b": [0, 1], "c": [0, 1]}
    impossible = [{"a": 0, "b": 0, "c": 0}, {"a": 0, "b": 0, "c": 1}]
    if limit is not None:
        monkeypatch.setattr(sc, "_EXACT_LIMIT", limit)
    plan = next_scenarios({"a": [1], "b": [1], "c": [1]}, spec, n=20, impossible=impossible)
    assert plan.n_cells == 12
    assert plan.coverage_after == pytest.approx(11 / 12)

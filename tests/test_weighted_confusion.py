"""Weighted confusion (Cheng et al. 2018, Sec. II-H, Table I) on hand-computed examples."""

from __future__ import annotations

import contextlib
import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import labelwise as lw
from labelwise.dependability.confusion import (
    SeverityMatrix,
    load_severity,
    weighted_confusion,
)

TABLE1 = [[0, 4, 8], [2, 0, 6], [2, 2, 0]]
NAMES = ("pedestrian", "vehicle", "background")


# --- known values ----------------------------------------------------------------------------


def test_hand_computed_three_classes() -> None:
    # W (rows truth, columns prediction):   labels      0 0 0 1 1 2 2 2
    #   [[0, 1, 5],                          predictions 0 1 2 1 0 2 2 1
    #    [2, 0, 3],
    #    [1, 1, 0]]
    # counts [[1, 1, 1], [1, 1, 0], [0, 1, 2]]
    # weighted [[0, 1, 5], [2, 0, 0], [0, 1, 0]] -> sum 9, N = 8
    # weighted error 9/8, normalised 9/8/5 = 9/40, errors 4/8
    # per class: (0+1+5)/3 = 2, (2+0)/2 = 1, (0+1+0)/3 = 1/3
    w = [[0, 1, 5], [2, 0, 3], [1, 1, 0]]
    r = weighted_confusion([0, 0, 0, 1, 1, 2, 2, 2], [0, 1, 2, 1, 0, 2, 2, 1], w)
    np.testing.assert_array_equal(r.counts, [[1, 1, 1], [1, 1, 0], [0, 1, 2]])
    np.testing.assert_array_equal(r.weighted, [[0, 1, 5], [2, 0, 0], [0, 1, 0]])
    np.testing.assert_array_equal(r.class_counts, [3, 2, 3])
    assert r.n == 8
    assert r.error_rate == pytest.approx(0.5)
    assert r.weighted_error == pytest.approx(9 / 8)
    assert r.normalised_weighted_error == pytest.approx(9 / 40)
    assert r.weighted_accuracy == pytest.approx(31 / 40)
    np.testing.assert_allclose(r.per_class_weighted_error, [2.0, 1.0, 1 / 3])
    assert r.classes == (0, 1, 2)


def test_direction_rows_are_truth_columns_are_prediction() -> None:
    # one pedestrian seen as background costs W[ped, bg] = 8, the reverse W[bg, ped] = 2
    y = ["pedestrian", "vehicle", "background"]
    r1 = weighted_confusion(y, ["background", "vehicle", "background"], "paper-table1")
    r2 = weighted_confusion(y, ["pedestrian", "vehicle", "pedestrian"], "paper-table1")
    assert r1.counts[0, 2] == 1 and r1.weighted_error == pytest.approx(8 / 3)
    assert r2.counts[2, 0] == 1 and r2.weighted_error == pytest.approx(2 / 3)
    assert r1.normalised_weighted_error == pytest.approx(1 / 3)
    assert r2.normalised_weighted_error == pytest.approx(1 / 12)
    assert r1.per_class_weighted_error.tolist() == [8.0, 0.0, 0.0]
    assert r2.per_class_weighted_error.tolist() == [0.0, 0.0, 2.0]


def test_paper_table1_ships_and_loads() -> None:
    s = load_severity("paper-table1")
    assert isinstance(s, SeverityMatrix)
    assert s.classes == NAMES
    assert s.weights.shape == (3, 3)
    np.testing.assert_array_equal(s.weights, TABLE1)
    np.testing.assert_array_equal(np.diag(s.weights), 0)
    # the paper's ordering: pedestrian -> background is the worst error, and confusing a
    # pedestrian is worse than the opposite confusion
    assert np.unravel_index(s.weights.argmax(), s.weights.shape) == (0, 2)
    assert s.weights[0, 2] > s.weights[2, 0]
    assert s.weights[0, 1] > s.weights[1, 0]
    assert s.weights[1, 2] > s.weights[2, 1]
    assert "Table I" in s.description
    assert not s.weights.flags.writeable


def test_shipped_file_matches_the_loaded_matrix() -> None:
    import labelwise.dependability.confusion as mod

    path = Path(mod.__file__).parent / "data" / "severity_table1.json"
    from_path = load_severity(path)
    np.testing.assert_array_equal(from_path.weights, load_severity("paper-table1").weights)
    assert from_path.classes == NAMES


@pytest.mark.parametrize("scale", [1.0, 3.0, 0.25])
def test_uniform_off_diagonal_severity_gives_the_plain_error_rate(scale: float) -> None:
    rng = np.random.default_rng(0)
    y = rng.integers(0, 4, 200)
    p = np.where(rng.random(200) < 0.3, rng.integers(0, 4, 200), y)
    w = scale * (np.ones((4, 4)) - np.eye(4))
    r = weighted_confusion(y, p, w)
    plain = float(np.mean(y != p))
    assert r.error_rate == pytest.approx(plain)
    assert r.normalised_weighted_error == pytest.approx(plain)
    assert r.weighted_error == pytest.approx(scale * plain)
    assert r.weighted_accuracy == pytest.approx(1 - plain)


def test_all_correct_gives_zero_error() -> None:
    r = weighted_confusion([0, 1, 2], [0, 1, 2], TABLE1)
    assert r.weighted_error == 0.0 and r.weighted_accuracy == 1.0
    np.testing.assert_array_equal(r.per_class_weighted_error, 0.0)


# --- input forms -----------------------------------------------------------------------------


def test_names_indices_and_scores_give_the_same_result() -> None:
    names = ["pedestrian", "vehicle", "background", "pedestrian", "vehicle"]
    preds = ["vehicle", "vehicle", "pedestrian", "background", "background"]
    idx = {n: i for i, n in enumerate(NAMES)}
    y = [idx[n] for n in names]
    p = [idx[n] for n in preds]
    scores = np.eye(3)[p] * 0.8 + 0.1
    by_name = weighted_confusion(names, preds, "paper-table1")
    by_index = weighted_confusion(y, p, "paper-table1")
    by_scores = weighted_confusion(y, scores, TABLE1, classes=NAMES)
    for r in (by_index, by_scores):
        np.testing.assert_array_equal(r.counts, by_name.counts)
        assert r.weighted_error == by_name.weighted_error
        assert r.classes == NAMES
    # 4 + 0 + 2 + 8 + 6 = 20 over 5 inputs
    assert by_name.weighted_error == pytest.approx(4.0)


def test_json_file_with_class_names(tmp_path: Path) -> None:
    f = tmp_path / "sev.json"
    f.write_text(json.dumps({"classes": ["cat", "dog"], "severity": [[0, 1], [3, 0]]}))
    r = weighted_confusion(["dog", "dog", "cat"], ["cat", "dog", "dog"], f)
    assert r.classes == ("cat", "dog")
    assert r.weighted_error == pytest.approx((3 + 1) / 3)
    # a str path works as well as a Path
    assert weighted_confusion(["dog", "cat"], ["cat", "cat"], str(f)).weighted_error == 1.5


def test_classes_reorder_a_named_severity() -> None:
    s = load_severity("paper-table1")
    r = weighted_confusion(
        ["background", "pedestrian", "vehicle"],
        ["pedestrian", "background", "vehicle"],
        s,
        classes=["background", "vehicle", "pedestrian"],
    )
    assert r.classes == ("background", "vehicle", "pedestrian")
    np.testing.assert_array_equal(r.severity, [[0, 2, 2], [6, 0, 2], [8, 4, 0]])
    assert r.weighted_error == pytest.approx((2 + 8) / 3)


def test_classes_name_the_rows_of_a_plain_matrix() -> None:
    r = weighted_confusion(["b", "a"], ["a", "a"], [[0, 1], [5, 0]], classes=["a", "b"])
    assert r.classes == ("a", "b")
    assert r.weighted_error == pytest.approx(2.5)


def test_severity_round_trips_through_to_dict(tmp_path: Path) -> None:
    s = load_severity("paper-table1")
    f = tmp_path / "copy.json"
    f.write_text(json.dumps(s.to_dict()))
    back = load_severity(f)
    np.testing.assert_array_equal(back.weights, s.weights)
    assert back.classes == s.classes


def test_result_is_frozen_serialisable_and_prints() -> None:
    y = ["pedestrian", "vehicle", "background"]
    r = weighted_confusion(y, ["background", "vehicle", "vehicle"], "paper-table1")
    with pytest.raises(dataclasses.FrozenInstanceError):
        r.weighted_error = 0.0  # type: ignore[misc]
    assert not r.counts.flags.writeable and not r.weighted.flags.writeable
    with pytest.warns(lw.DegenerateDataWarning):  # background absent from labels
        r = weighted_confusion(
            ["pedestrian", "vehicle"], ["background", "vehicle"], TABLE1, classes=NAMES
        )
    d = json.loads(json.dumps(r.to_dict(), allow_nan=False))
    assert d["per_class_weighted_error"] == [8.0, 0.0, None]
    assert d["counts"] == [[0, 0, 1], [0, 1, 0], [0, 0, 0]]
    text = weighted_confusion(
        ["pedestrian", "vehicle", "background"],
        ["background", "vehicle", "background"],
        "paper-table1",
    ).table()
    for word in ("pedestrian", "vehicle", "background", "weighted error", "8"):
        assert word in text


def test_absent_class_warns_and_reports_nan() -> None:
    with pytest.warns(lw.DegenerateDataWarning, match=r"\[2\]"):
        r = weighted_confusion([0, 1], [1, 1], TABLE1)
    assert np.isnan(r.per_class_weighted_error[2])
    assert r.notes


# --- bad input -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("severity", "match"),
    [
        ([[0, 1, 2], [1, 0, 2]], "square"),
        ([[0, 1], [1, 0, 2]], "square"),
        ([0, 1, 2], "square"),
        ([[0]], "at least 2"),
        ([[0, 1], [1, 2]], r"zero diagonal.*\[1, 1\]"),
        ([[1, 1], [1, 0]], "zero diagonal"),
        ([[0, -1], [1, 0]], r"non-negative.*\[0, 1\]"),
        ([[0, np.nan], [1, 0]], "finite"),
        ([[0, np.inf], [1, 0]], "finite"),
        ([[0, 0], [0, 0]], "positive"),
        ([["0", "a"], ["b", "0"]], "numbers"),
    ],
)
def test_bad_severity_raises(severity: object, match: str) -> None:
    with pytest.raises(lw.LabelwiseError, match=f"severity.*{match}"):
        weighted_confusion([0, 1], [1, 0], severity)  # type: ignore[arg-type]


def test_severity_matrix_validates_too() -> None:
    with pytest.raises(lw.LabelwiseError, match="zero diagonal"):
        SeverityMatrix(np.array([[1.0, 1.0], [1.0, 0.0]]))
    with pytest.raises(lw.LabelwiseError, match="classes"):
        SeverityMatrix(np.array([[0.0, 1.0], [1.0, 0.0]]), ("a", "b", "c"))
    with pytest.raises(lw.LabelwiseError, match="distinct"):
        SeverityMatrix(np.array([[0.0, 1.0], [1.0, 0.0]]), ("a", "a"))


def test_mismatched_classes_raise() -> None:
    with pytest.raises(lw.LabelwiseError, match=r"classes.*3 x 3.*got 2"):
        weighted_confusion([0, 1], [1, 0], TABLE1, classes=["a", "b"])
    with pytest.raises(lw.LabelwiseError, match="classes must name the same classes"):
        weighted_confusion([0], [0], "paper-table1", classes=["pedestrian", "vehicle", "truck"])
    with pytest.raises(lw.LabelwiseError, match=r"labels must be class indices in \[0, 3\)"):
        weighted_confusion([0, 3], [0, 1], TABLE1)
    with pytest.raises(lw.LabelwiseError, match=r"predictions must be class indices.*\[-1\]"):
        weighted_confusion([0, 1], [0, -1], TABLE1)
    with pytest.raises(lw.LabelwiseError, match=r"labels must only hold the classes.*'cyclist'"):
        weighted_confusion(["cyclist"], ["vehicle"], "paper-table1")
    with pytest.raises(lw.LabelwiseError, match=r"predictions.*one column per class"):
        weighted_confusion([0, 1], np.ones((2, 4)), TABLE1)


def test_bad_labels_and_predictions_raise() -> None:
    with pytest.raises(lw.LabelwiseError, match="predictions must have one entry per label"):
        weighted_confusion([0, 1, 2], [0, 1], TABLE1)
    with pytest.raises(lw.LabelwiseError, match="labels must hold at least one input"):
        weighted_confusion([], [], TABLE1)
    with pytest.raises(lw.LabelwiseError, match="labels must be integer class indices"):
        weighted_confusion([0.5, 1], [0, 1], TABLE1)
    with pytest.raises(lw.LabelwiseError, match="labels must be finite"):
        weighted_confusion([np.nan, 1], [0, 1], TABLE1)
    with pytest.raises(lw.LabelwiseError, match=r"labels must be \(N,\) classes"):
        weighted_confusion([[0, 1]], [0, 1], TABLE1)


def test_bad_severity_files_raise(tmp_path: Path) -> None:
    with pytest.raises(lw.LabelwiseError, match="does not exist"):
        load_severity(tmp_path / "missing.json")
    with pytest.raises(lw.LabelwiseError, match="neither a file nor a shipped"):
        load_severity("paper-table9")
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(lw.LabelwiseError, match="not valid JSON"):
        load_severity(bad)
    cases = [
        ({"classes": ["a", "b"]}, '"severity"'),
        ({"severity": [[0, 1], [1, 0]], "wieghts": 1}, "unknown keys"),
        ({"severity": [[0, "x"], [1, 0]]}, r'"severity"\[0\]\[1\] must be a number'),
        ({"severity": [[0, None], [1, 0]]}, "must be a number"),
        ({"classes": ["a"], "severity": [[0, 1], [1, 0]]}, "classes"),
        ({"severity": [[0, 1], [1, 1]]}, "zero diagonal"),
        ([[0, 1], [1, 0]], "JSON object"),
    ]
    for obj, match in cases:
        bad.write_text(json.dumps(obj))
        with pytest.raises(lw.LabelwiseError, match=match):
            load_severity(bad)


# --- properties ------------------------------------------------------------------------------


@settings(max_examples=60, deadline=None)
@given(
    st.integers(2, 5).flatmap(
        lambda c: st.tuples(
            st.just(c),
            st.lists(st.tuples(st.integers(0, c - 1), st.integers(0, c - 1)), min_size=1),
            st.lists(st.floats(0.01, 10, allow_nan=False), min_size=c * c, max_size=c * c),
        )
    )
)
def test_properties(case: tuple[int, list[tuple[int, int]], list[float]]) -> None:
    c, pairs, flat = case
    w = np.array(flat).reshape(c, c)
    np.fill_diagonal(w, 0.0)
    y = np.array([a for a, _ in pairs])
    p = np.array([b for _, b in pairs])
    absent = len(set(y.tolist())) < c
    with pytest.warns(lw.DegenerateDataWarning) if absent else contextlib.nullcontext():
        r = weighted_confusion(y, p, w)
    assert r.counts.sum() == len(pairs)
    assert 0.0 <= r.normalised_weighted_error <= 1.0 + 1e-12
    off = w[~np.eye(c, dtype=bool)]
    assert off.min() * r.error_rate - 1e-9 <= r.weighted_error <= off.max() * r.error_rate + 1e-9
    # the row order of the inputs does not matter
    perm = np.random.default_rng(len(pairs)).permutation(len(pairs))
    with pytest.warns(lw.DegenerateDataWarning) if absent else contextlib.nullcontext():
        r2 = weighted_confusion(y[perm], p[perm], w)
    np.testing.assert_array_equal(r2.counts, r.counts)
    assert r2.weighted_error == pytest.approx(r.weighted_error)

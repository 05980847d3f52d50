"""The one JSON rule: NumPy values converted, non-finite floats written as null."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from labelwise import Estimate
from labelwise._json import dumps, jsonable
from labelwise.io import write_json


def test_numpy_values_become_plain_python() -> None:
    out = jsonable({"a": np.int64(3), "b": np.float32(0.5), "c": np.arange(3), "d": np.bool_(1)})
    assert out == {"a": 3, "b": 0.5, "c": [0, 1, 2], "d": True}
    assert type(out["a"]) is int and type(out["d"]) is bool


def test_non_finite_floats_become_null_everywhere() -> None:
    obj = {"x": math.inf, "y": [np.nan, 1.0], "z": np.array([[1.0, -np.inf]]), "t": (np.nan,)}
    assert jsonable(obj) == {"x": None, "y": [None, 1.0], "z": [[1.0, None]], "t": [None]}
    text = dumps(obj)
    assert "Infinity" not in text and "NaN" not in text
    json.loads(text)


def test_results_are_converted_through_to_dict(tmp_path) -> None:
    est = Estimate(
        value=0.5, std_error=math.inf, ci_low=-math.inf, ci_high=math.inf,
        confidence=0.95, n_labelled=1, method="srs",
    )  # fmt: skip
    write_json(tmp_path / "e.json", {"estimate": est})
    back = json.loads((tmp_path / "e.json").read_text())
    assert back["estimate"]["value"] == 0.5
    assert back["estimate"]["std_error"] is None and back["estimate"]["ci_low"] is None


def test_unknown_objects_are_named() -> None:
    with pytest.raises(TypeError, match="object"):
        jsonable(object())

"""CES selections recorded before the speed work (issue 15): the same seed must keep giving the
same rows, whatever the input type (array, memory-mapped ``.npy``) and through ``extend``.

The expected indices are in ``tests/data/ces_selections.json``, written once by
``python tests/test_ces_regression.py --record`` from the implementation of commit 55e3e75
(two passes, then per-group scoring). Re-record only for an intended change of the algorithm.
"""

from __future__ import annotations

import json
import sys
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import labelwise as lw

DATA = Path(__file__).parent / "data" / "ces_selections.json"


def _relu(n: int, m: int, seed: int, dtype: Any = np.float32) -> np.ndarray:
    """ReLU-like activations with correlated neurons (many exact zeros, the minimum)."""
    rng = np.random.default_rng(seed)
    mix = rng.standard_normal((8, m))
    z = rng.standard_normal((n, 8))
    return np.maximum(z @ mix + rng.standard_normal((n, m)) - 0.5, 0.0).astype(dtype)


def _normal_with_constant(n: int, m: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, m))
    x[:, 3] = 2.5
    return x


def _integers(n: int, m: int, seed: int) -> np.ndarray:
    """Small integers: many ties and values exactly on section edges."""
    return np.random.default_rng(seed).integers(0, 41, size=(n, m)).astype(np.int64)


PILES: dict[str, Callable[[], np.ndarray]] = {
    "relu_f32": lambda: _relu(3000, 64, 1),
    "relu_f64": lambda: _relu(1200, 30, 2, np.float64),
    "normal_const": lambda: _normal_with_constant(1500, 20, 3),
    "integers": lambda: _integers(800, 10, 4),
    "rank3": lambda: _relu(600, 12, 5).reshape(600, 4, 3),
    # Large enough for the parallel kernels (range, histogram and scoring).
    "wide_f32": lambda: _relu(2500, 1500, 6),
    "tiny": lambda: _relu(40, 3, 7, np.float64),
}

# (case name, pile, budget, parameters, seed)
CASES: list[tuple[str, str, int, dict[str, Any], int]] = []
for _seed in (0, 1, 2):
    for _obj in ("kl", "ce", "ce-common"):
        CASES.append((f"relu_f32-{_obj}-s{_seed}", "relu_f32", 100, {"objective": _obj}, _seed))
CASES += [
    ("relu_f64-k3-q1", "relu_f64", 60, {"n_sections": 3, "group_size": 1, "n_groups": 50}, 4),
    ("relu_f64-k7-q3", "relu_f64", 73, {"n_sections": 7, "group_size": 3, "initial": 10}, 5),
    ("normal_const-kl", "normal_const", 90, {"n_groups": 120}, 6),
    ("normal_const-ce-eps", "normal_const", 90, {"objective": "ce", "epsilon": 1e-3}, 7),
    ("integers-kl", "integers", 64, {"n_sections": 20, "group_size": 4}, 8),
    ("integers-k255", "integers", 64, {"n_sections": 255, "objective": "ce-common"}, 9),
    ("rank3-kl", "rank3", 50, {"initial": 20, "n_groups": 80}, 10),
    ("wide_f32-kl", "wide_f32", 100, {}, 11),
    ("wide_f32-ce", "wide_f32", 70, {"objective": "ce", "group_size": 8}, 12),
    ("tiny-all", "tiny", 40, {"initial": 5, "group_size": 7, "n_groups": 30}, 13),
    ("budget-below-initial", "relu_f32", 20, {}, 14),
]
# (case name, base case, additional rows, rng of the extension: None = continue the stream)
EXTENDS: list[tuple[str, str, int, int | None]] = [
    ("extend-relu_f32-kl", "relu_f32-kl-s0", 37, None),
    ("extend-relu_f32-ce-rng", "relu_f32-ce-s1", 20, 99),
    ("extend-wide", "wide_f32-kl", 25, None),
    ("extend-from-initial", "budget-below-initial", 31, None),
]

_PILE_CACHE: dict[str, np.ndarray] = {}


def pile(name: str) -> np.ndarray:
    if name not in _PILE_CACHE:
        _PILE_CACHE[name] = PILES[name]()
    return _PILE_CACHE[name]


def _select(x: Any, case: tuple[str, str, int, dict[str, Any], int]) -> lw.Selection:
    _, _, budget, params, seed = case
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", lw.DegenerateDataWarning)
        return lw.ces_select(x, budget, rng=seed, **params)


def _extend(x: Any, ext: tuple[str, str, int, int | None]) -> lw.Selection:
    _, base, additional, rng = ext
    case = next(c for c in CASES if c[0] == base)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", lw.DegenerateDataWarning)
        return lw.extend(_select(x, case), x, additional, rng=rng)


def _record() -> None:
    out: dict[str, list[int]] = {}
    for case in CASES:
        out[case[0]] = _select(pile(case[1]), case).indices.tolist()
    for ext in EXTENDS:
        base = next(c for c in CASES if c[0] == ext[1])
        out[ext[0]] = _extend(pile(base[1]), ext).indices.tolist()
    DATA.write_text(json.dumps(out, indent=None, separators=(",", ":")).replace("],", "],\n"))


@pytest.fixture(scope="module")
def expected() -> dict[str, list[int]]:
    return dict(json.loads(DATA.read_text()))


@pytest.fixture(scope="module")
def memmaps(tmp_path_factory: pytest.TempPathFactory) -> dict[str, np.ndarray]:
    root = tmp_path_factory.mktemp("ces_piles")
    out = {}
    for name in PILES:
        np.save(root / f"{name}.npy", pile(name))
        out[name] = np.load(root / f"{name}.npy", mmap_mode="r")
    return out


def _as_input(name: str, kind: str, memmaps: dict[str, np.ndarray]) -> Any:
    if kind == "memmap":
        return memmaps[name]
    return pile(name)


@pytest.mark.parametrize("kind", ["array", "memmap"])
@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_selection_is_unchanged(
    case: tuple[str, str, int, dict[str, Any], int],
    kind: str,
    expected: dict[str, list[int]],
    memmaps: dict[str, np.ndarray],
) -> None:
    sel = _select(_as_input(case[1], kind, memmaps), case)
    assert sel.indices.tolist() == expected[case[0]]


@pytest.mark.parametrize("kind", ["array", "memmap"])
@pytest.mark.parametrize("ext", EXTENDS, ids=[e[0] for e in EXTENDS])
def test_extension_is_unchanged(
    ext: tuple[str, str, int, int | None],
    kind: str,
    expected: dict[str, list[int]],
    memmaps: dict[str, np.ndarray],
) -> None:
    base = next(c for c in CASES if c[0] == ext[1])
    sel = _extend(_as_input(base[1], kind, memmaps), ext)
    assert sel.indices.tolist() == expected[ext[0]]
    assert sel.indices.tolist()[: base[2]] == expected[base[0]]


def test_the_records_distinguish_the_cases(expected: dict[str, list[int]]) -> None:
    # The test can fail: different seeds and objectives give different rows.
    assert expected["relu_f32-kl-s0"] != expected["relu_f32-kl-s1"]
    assert expected["relu_f32-kl-s0"][30:] != expected["relu_f32-ce-s0"][30:]
    assert expected["relu_f32-kl-s0"][:30] == expected["relu_f32-ce-s0"][:30]


if __name__ == "__main__" and "--record" in sys.argv:
    _record()

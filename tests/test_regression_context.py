"""Tests for labelwise.experiments.regression (Friedman #1, shifts, MLP contexts)."""

from __future__ import annotations

import dataclasses
import pickle
import subprocess
import sys
from typing import Any

import numpy as np
import pytest

from labelwise import regression_scores
from labelwise.adapters import training
from labelwise.exceptions import LabelwiseError, MissingDependencyError
from labelwise.experiments import regression
from labelwise.experiments.digits import relight
from labelwise.experiments.regression import (
    SHIFTS,
    RegressionContext,
    apply_shift,
    load_friedman1,
    occlude_features,
    regression_context,
    relight_features,
    train_regression_mlp,
)

pytest.importorskip("sklearn")

try:
    import torch
except ImportError:  # pragma: no cover - the NumPy-only tests still run
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="needs labelwise[torch]")


@pytest.fixture(scope="module")
def inputs() -> np.ndarray:
    return load_friedman1(50, 200, seed=0)[2]


# ------------------------------------------------------------------------------ import


def test_import_does_not_import_frameworks() -> None:
    code = (
        "import sys, labelwise.experiments.regression as r\n"
        "r.occlude_features([[0.1] * 10] * 3, rng=0)\n"
        "r.relight_features([[0.1] * 10] * 3, rng=0)\n"
        "loaded = [k for k in ('torch', 'sklearn') if k in sys.modules]\n"
        "assert not loaded, loaded\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


# -------------------------------------------------------------------------------- data


def test_load_friedman1() -> None:
    state = np.random.get_state()  # noqa: NPY002
    x_train, y_train, x_op, y_op = load_friedman1(seed=0)
    after = np.random.get_state()  # noqa: NPY002
    np.testing.assert_array_equal(after[1], state[1])  # global NumPy state untouched
    assert x_train.shape == (2000, 10) and x_train.dtype == np.float32
    assert x_op.shape == (5000, 10) and x_op.dtype == np.float32
    assert y_train.shape == (2000,) and y_train.dtype == np.float64
    assert y_op.shape == (5000,) and y_op.dtype == np.float64
    assert x_train.min() >= 0.0 and x_train.max() <= 1.0
    assert x_op.min() >= 0.0 and x_op.max() <= 1.0
    assert y_train.mean() == pytest.approx(0.0, abs=1e-12)
    assert y_train.std() == pytest.approx(1.0)
    assert abs(y_op.mean()) < 0.1 and 0.9 < y_op.std() < 1.1
    again = load_friedman1(seed=0)
    for left, right in zip((x_train, y_train, x_op, y_op), again, strict=True):
        np.testing.assert_array_equal(left, right)
    assert not np.array_equal(load_friedman1(seed=1)[0], x_train)


@pytest.mark.parametrize(
    "kwargs", [{"n_train": 1}, {"n_operational": 0}, {"seed": -1}, {"noise": -1.0}]
)
def test_load_rejects_bad_arguments(kwargs: dict[str, Any]) -> None:
    with pytest.raises(LabelwiseError):
        load_friedman1(**kwargs)


# ------------------------------------------------------------------------------ shifts


def test_occlude_features_sets_one_block() -> None:
    ones = np.ones((2000, 10), dtype=np.float32)
    out = occlude_features(ones, rng=1)
    assert out.dtype == np.float32 and out.shape == ones.shape
    np.testing.assert_array_equal(ones, 1.0)  # input untouched
    assert set(np.unique(out)) == {np.float32(0.5), np.float32(1.0)}
    lengths, starts = set(), set()
    for row in out:
        (cols,) = np.nonzero(row == 0.5)
        assert cols.size == cols.max() - cols.min() + 1  # contiguous
        lengths.add(int(cols.size))
        starts.add(int(cols.min()))
    assert lengths == {2, 3}
    assert starts == set(range(9))  # every position where a block fits
    zero = occlude_features(ones, size=1, value=0.0, rng=1)
    assert np.all((zero == 0.0).sum(axis=1) == 1)
    np.testing.assert_array_equal(occlude_features(ones, size=10, rng=0), 0.5)


def test_occlude_features_reproducible(inputs: np.ndarray) -> None:
    np.testing.assert_array_equal(occlude_features(inputs, rng=3), occlude_features(inputs, rng=3))
    assert not np.array_equal(occlude_features(inputs, rng=3), occlude_features(inputs, rng=4))


@pytest.mark.parametrize(
    "kwargs", [{"size": 0}, {"size": 11}, {"size": (3, 2)}, {"size": 1.5}, {"value": 2.0}]
)
def test_occlude_features_rejects_bad_options(inputs: np.ndarray, kwargs: dict[str, Any]) -> None:
    with pytest.raises(LabelwiseError):
        occlude_features(inputs, rng=0, **kwargs)


def test_relight_features(inputs: np.ndarray) -> None:
    out = relight_features(inputs, rng=5)
    assert out.dtype == np.float32 and out.shape == inputs.shape
    assert out.min() >= 0.0 and out.max() <= 1.0
    assert not np.array_equal(out, inputs)
    np.testing.assert_array_equal(
        out,
        relight(inputs[:, None, :], brightness=(-0.1, 0.1), contrast=(0.8, 1.2), rng=5)[:, 0, :],
    )
    expected = np.clip(0.5 + 1.1 * (inputs - 0.5) + 0.05, 0.0, 1.0)
    np.testing.assert_allclose(
        relight_features(inputs, brightness=0.05, contrast=1.1), expected, atol=1e-6
    )
    # one gain and offset per row: each unclipped row is an affine map of the original
    for new, src in zip(out[:5], inputs[:5], strict=True):
        inside = (new > 0.0) & (new < 1.0)
        slope, offset = np.polyfit(src[inside], new[inside], 1)
        assert 0.8 - 1e-4 <= slope <= 1.2 + 1e-4
        np.testing.assert_allclose(new[inside], slope * src[inside] + offset, atol=1e-5)


@pytest.mark.parametrize(
    "bad, message",
    [
        (np.zeros((4, 10, 1)), r"x must have shape \(N, F\); got shape \(4, 10, 1\)"),
        (np.full((2, 10), 2.0), r"x must be scaled to \[0, 1\]; got range \[2, 2\]"),
        (np.full((2, 10), np.nan), r"x contains NaN or infinite values"),
    ],
)
def test_shifts_reject_bad_inputs(bad: np.ndarray, message: str) -> None:
    for shift in SHIFTS:
        with pytest.raises(LabelwiseError, match=message):
            apply_shift(bad, shift, rng=0)


def test_apply_shift_dispatch(inputs: np.ndarray) -> None:
    assert SHIFTS == ("none", "patch", "light")
    np.testing.assert_array_equal(apply_shift(inputs, "none"), inputs)
    np.testing.assert_array_equal(
        apply_shift(inputs, "patch", rng=5), occlude_features(inputs, rng=5)
    )
    np.testing.assert_array_equal(
        apply_shift(inputs, "light", rng=5, contrast=0.5),
        relight_features(inputs, rng=5, contrast=0.5),
    )
    with pytest.raises(LabelwiseError):
        apply_shift(inputs, "blur")
    with pytest.raises(LabelwiseError):
        apply_shift(inputs, "none", size=2)


# ------------------------------------------------------------------------------- torch


def test_missing_torch_raises(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "torch", None)
    with pytest.raises(MissingDependencyError, match=r"pip install 'labelwise\[torch\]'"):
        train_regression_mlp(np.zeros((4, 10)), np.zeros(4), epochs=1)
    with pytest.raises(MissingDependencyError, match=r"labelwise\[torch\]"):
        regression_context("none")
    with pytest.raises(MissingDependencyError):
        training.regression_mlp_class.__wrapped__()


@needs_torch
def test_mlp_architecture() -> None:
    cls = regression.RegressionMLP
    assert issubclass(cls, torch.nn.Module)
    assert "RegressionMLP" in dir(regression)
    with pytest.raises(AttributeError):
        _ = regression.NoSuchThing
    model = cls()
    x = torch.zeros(5, 10)
    assert model(x).shape == (5,)
    assert model.embed(x).shape == (5, 32)
    linears = [m for m in model.modules() if isinstance(m, torch.nn.Linear)]
    assert [(m.in_features, m.out_features) for m in linears] == [(10, 64), (64, 32), (32, 1)]
    assert type(pickle.loads(pickle.dumps(model))) is cls


@needs_torch
def test_training_is_deterministic_and_leaves_global_state() -> None:
    x, y, _, _ = load_friedman1(300, 1, seed=0)
    threads = torch.get_num_threads()
    torch.manual_seed(123)
    expected = torch.rand(3)
    torch.manual_seed(123)
    a = train_regression_mlp(x, y, epochs=2, seed=7)
    assert torch.equal(torch.rand(3), expected)  # global RNG untouched
    assert torch.get_num_threads() == threads
    assert torch.is_grad_enabled()
    b = train_regression_mlp(x, y, epochs=2, seed=7)
    c = train_regression_mlp(x, y, epochs=2, seed=8)
    assert not a.training
    sa, sb, sc = a.state_dict(), b.state_dict(), c.state_dict()
    assert all(torch.equal(sa[k], sb[k]) for k in sa)
    assert not all(torch.equal(sa[k], sc[k]) for k in sa)
    with torch.no_grad():
        assert isinstance(train_regression_mlp(x[:50], y[:50], epochs=1), torch.nn.Module)


@needs_torch
@pytest.mark.parametrize(
    "args, kwargs, message",
    [
        ((np.zeros((10, 10)), np.zeros(9)), {}, r"x and y disagree in length: 10 != 9"),
        ((np.zeros((10, 10)), np.zeros((10, 1))), {}, r"y must be one-dimensional"),
        ((np.zeros(10), np.zeros(10)), {}, r"x must have shape \(N, F\)"),
        ((np.zeros((0, 10)), np.zeros(0)), {}, r"cannot train on zero rows"),
        ((np.zeros((10, 10)), np.full(10, np.inf)), {}, r"x and y must be finite"),
        ((np.zeros((10, 10)), np.zeros(10)), {"epochs": 0}, r"epochs must be >= 1"),
        ((np.zeros((10, 10)), np.zeros(10)), {"batch_size": 0}, r"batch_size must be >= 1"),
        ((np.zeros((10, 10)), np.zeros(10)), {"learning_rate": 0.0}, r"learning_rate must be"),
    ],
)
def test_train_rejects_bad_input(
    args: tuple[Any, ...], kwargs: dict[str, Any], message: str
) -> None:
    with pytest.raises(LabelwiseError, match=message):
        train_regression_mlp(*args, **kwargs)


@pytest.fixture(scope="module")
def contexts() -> dict[str, RegressionContext]:
    if torch is None:
        pytest.skip("needs labelwise[torch]")
    return {shift: regression_context(shift, seed=0) for shift in SHIFTS}


@needs_torch
def test_context_is_deterministic() -> None:
    kwargs: dict[str, Any] = {"n_train": 200, "n_operational": 300, "epochs": 2}
    a = regression_context("light", seed=3, **kwargs)
    b = regression_context("light", seed=3, **kwargs)
    c = regression_context("light", seed=4, **kwargs)
    for field in ("inputs", "targets", "activations", "predictions"):
        np.testing.assert_array_equal(getattr(a, field), getattr(b, field))
    assert not np.array_equal(a.activations, c.activations)
    assert not np.array_equal(a.targets, c.targets)


@needs_torch
def test_context_arrays(contexts: dict[str, RegressionContext]) -> None:
    for shift, ctx in contexts.items():
        assert ctx.name == f"friedman-{shift}"
        n = len(ctx)
        assert n == 5000
        assert ctx.inputs.shape == (n, 10) and ctx.inputs.dtype == np.float32
        assert ctx.inputs.min() >= 0.0 and ctx.inputs.max() <= 1.0
        assert ctx.targets.shape == (n,) and ctx.targets.dtype == np.float64
        assert ctx.activations.shape == (n, 32) and ctx.activations.dtype == np.float32
        assert ctx.activations.min() >= 0.0  # post-ReLU
        assert ctx.predictions.shape == (n,) and ctx.predictions.dtype == np.float64
        assert not ctx.model.training
        assert all(not m._forward_pre_hooks for m in ctx.model.modules())  # hook removed
        # activations are the input of the last Linear: they reproduce the predictions
        with torch.no_grad():
            again = ctx.model.head(torch.from_numpy(ctx.activations))[:, 0].numpy()
        np.testing.assert_allclose(again, ctx.predictions, atol=1e-5)
        scores = ctx.scores()
        assert scores.shape == (n,) and scores.dtype == np.float64
        np.testing.assert_allclose(scores, 1.0 - (ctx.predictions - ctx.targets) ** 2)
        np.testing.assert_allclose(scores, regression_scores(ctx.predictions, ctx.targets))
        assert float(scores.mean()) == pytest.approx(ctx.one_minus_mse, abs=1e-12)
        assert "one_minus_mse=" in repr(ctx)
    with pytest.raises(dataclasses.FrozenInstanceError):
        contexts["none"].name = "x"  # type: ignore[misc]


@needs_torch
def test_same_seed_same_data_and_model(contexts: dict[str, RegressionContext]) -> None:
    clean = contexts["none"]
    _, _, x_op, y_op = load_friedman1(seed=0)
    np.testing.assert_array_equal(clean.inputs, x_op)
    for ctx in contexts.values():
        np.testing.assert_array_equal(ctx.targets, y_op)
        sa, sb = clean.model.state_dict(), ctx.model.state_dict()
        assert all(torch.equal(sa[k], sb[k]) for k in sa)
    patched = contexts["patch"].inputs
    assert np.all(np.isin((patched != x_op).sum(axis=1), [0, 1, 2, 3]))
    assert np.mean(np.any(patched != x_op, axis=1)) > 0.95
    assert np.all(np.any(contexts["light"].inputs != x_op, axis=1))


@needs_torch
def test_one_minus_mse(contexts: dict[str, RegressionContext]) -> None:
    # measured for seed 0: none 0.904, patch 0.672, light 0.760
    clean = contexts["none"].one_minus_mse
    assert 0.85 <= clean <= 0.95
    for shift in ("patch", "light"):
        shifted = contexts[shift].one_minus_mse
        assert shifted <= clean - 0.05
        assert 0.55 <= shifted <= 0.85


@pytest.mark.parametrize(
    "kwargs",
    [
        {"shift": "blur"},
        {"shift": "resolution"},
        {"seed": -1},
        {"seed": 1.5},
        {"seed": 2**32},
        {"n_train": 0},
        {"n_operational": 0},
        {"epochs": 0},
        {"noise": -1.0},
    ],
)
def test_context_rejects_bad_arguments(kwargs: dict[str, Any]) -> None:
    if torch is None and "shift" not in kwargs and "seed" not in kwargs and "epochs" not in kwargs:
        pytest.skip("validated after the torch check")
    with pytest.raises(LabelwiseError):
        regression_context(**{"epochs": 1, **kwargs})


@needs_torch
def test_context_rejects_bad_shift_options() -> None:
    with pytest.raises(LabelwiseError):
        regression_context(
            "patch", epochs=1, n_train=20, n_operational=20, shift_options={"size": 0}
        )
    with pytest.raises(LabelwiseError):
        regression_context("none", epochs=1, n_train=20, n_operational=20, shift_options={"x": 1})

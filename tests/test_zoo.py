"""Tests for labelwise.experiments.zoo (model zoo for comparative testing)."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from typing import Any

import numpy as np
import pytest

from labelwise.exceptions import LabelwiseError
from labelwise.experiments import zoo as zoo_module
from labelwise.experiments.zoo import (
    FAMILIES,
    ModelSpec,
    Zoo,
    default_zoo,
    small_zoo,
    train_zoo,
)

try:
    import torch
except ImportError:  # pragma: no cover - the pure tests still run
    torch = None

try:
    import mnist1d as _mnist1d_package  # noqa: F401

    HAS_MNIST1D = True
except ImportError:  # pragma: no cover - depends on the environment
    HAS_MNIST1D = False

needs_all = pytest.mark.skipif(
    torch is None or not HAS_MNIST1D, reason="needs labelwise[torch] and mnist1d"
)

N_SAMPLES = 1_000  # 500 training and 500 operational signals
TINY = [
    ModelSpec("linear", "linear", epochs=10, learning_rate=1e-2),
    ModelSpec("mlp", "mlp", width=32, depth=2, epochs=10, learning_rate=1e-2, dropout=0.1),
    ModelSpec("cnn", "cnn", width=8, depth=2, epochs=10, learning_rate=1e-2, hidden=16),
    ModelSpec("mlp-half", "mlp", 16, 1, epochs=10, seed=1, learning_rate=1e-2, train_fraction=0.5),
]
HIDDEN = {"linear": None, "mlp": 32, "cnn": 16, "mlp-half": 16}


@pytest.fixture(scope="module")
def tiny() -> Zoo:
    return train_zoo(TINY, n_samples=N_SAMPLES, seed=0, progress=False)


# ------------------------------------------------------------------------------ import


def test_import_does_not_import_frameworks() -> None:
    code = (
        "import sys, labelwise.experiments.zoo as z\n"
        "specs = z.default_zoo(); z.small_zoo()\n"
        "loaded = [k for k in ('torch', 'mnist1d', 'sklearn') if k in sys.modules]\n"
        "assert not loaded, loaded\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


# ------------------------------------------------------------------------------- specs


def test_default_zoo() -> None:
    specs = default_zoo()
    assert len(specs) >= 24
    assert all(isinstance(s, ModelSpec) for s in specs)
    names = [s.name for s in specs]
    assert len(set(names)) == len(names)
    families = {s.family for s in specs}
    assert len(families) >= 2 and families <= set(FAMILIES)
    assert len({s.seed for s in specs}) > 1
    assert len({s.epochs for s in specs}) > 3
    assert any(s.train_fraction < 1 for s in specs)
    assert default_zoo() == specs  # a fresh, equal list each call


def test_ranking_covers_default_zoo() -> None:
    assert sorted(zoo_module._RANKING) == sorted(s.name for s in default_zoo())


@pytest.mark.parametrize("n", [2, 4, 7])
def test_small_zoo(n: int) -> None:
    specs = small_zoo(n)
    default = default_zoo()
    assert len(specs) == n
    assert all(s in default for s in specs)
    assert [s.name for s in specs] == [s.name for s in default if s in specs]
    ranks = [zoo_module._RANKING.index(s.name) for s in specs]
    assert 0 in ranks and len(default) - 1 in ranks


def test_small_zoo_default_is_four() -> None:
    assert len(small_zoo()) == 4


@pytest.mark.parametrize("n", [1, 0, 1000, 2.0, True])
def test_small_zoo_rejects_bad_n(n: Any) -> None:
    with pytest.raises(LabelwiseError):
        small_zoo(n)


def test_spec_is_frozen() -> None:
    spec = TINY[1]
    with pytest.raises(dataclasses.FrozenInstanceError):
        spec.epochs = 5  # type: ignore[misc]


@pytest.mark.parametrize(
    "kwargs",
    [
        {"name": ""},
        {"family": "rnn"},
        {"width": 0},
        {"depth": 0},
        {"epochs": 0},
        {"seed": -1},
        {"learning_rate": 0.0},
        {"learning_rate": float("nan")},
        {"kernel_size": 4},
        {"hidden": 0},
        {"dropout": 1.0},
        {"train_fraction": 0.0},
        {"train_fraction": 1.5},
        {"batch_size": 0},
        {"epochs": 2.5},
        {"family": "linear", "width": 8, "depth": 0},
    ],
)
def test_spec_rejects_bad_args(kwargs: dict[str, Any]) -> None:
    base: dict[str, Any] = {"name": "m", "family": "mlp", "width": 8, "depth": 1}
    with pytest.raises(LabelwiseError):
        ModelSpec(**{**base, **kwargs})


# ------------------------------------------------------------------------- train_zoo args


@pytest.mark.parametrize(
    ("specs", "kwargs"),
    [
        ([], {}),
        (TINY[0], {}),
        ([TINY[0], "mlp"], {}),
        ([TINY[0], TINY[0]], {}),
        (TINY[:1], {"dataset": "cifar"}),
        (TINY[:1], {"seed": -1}),
        (TINY[:1], {"n_samples": 5}),
        (TINY[:1], {"n_samples": 100.0}),
        (TINY[:1], {"dataset": "digits", "n_samples": 1000}),
    ],
)
def test_train_zoo_rejects_bad_args(specs: Any, kwargs: dict[str, Any]) -> None:
    with pytest.raises(LabelwiseError):
        train_zoo(specs, progress=False, **kwargs)


@needs_all
def test_train_zoo_rejects_too_deep_cnn() -> None:
    spec = ModelSpec("deep", "cnn", width=4, depth=6, epochs=1)
    with pytest.raises(LabelwiseError, match="pooling"):
        train_zoo([spec], n_samples=100, progress=False)


# ------------------------------------------------------------------------------ outputs


@needs_all
def test_shapes_and_dtypes(tiny: Zoo) -> None:
    n_models, n = len(TINY), N_SAMPLES // 2
    assert tiny.names == [s.name for s in TINY]
    assert tiny.specs == tuple(TINY)
    assert tiny.dataset == "mnist1d" and tiny.seed == 0
    assert tiny.n_models == n_models and tiny.n_inputs == n
    assert tiny.labels.shape == (n,) and tiny.labels.dtype == np.int64
    assert tiny.predictions.shape == (n_models, n) and tiny.predictions.dtype == np.int64
    assert tiny.probabilities.shape == (n_models, n, 10)
    assert tiny.probabilities.dtype == np.float32
    assert tiny.accuracies.shape == (n_models,)
    assert len(tiny.train_seconds) == n_models
    assert set(np.unique(tiny.labels)) == set(range(10))


@needs_all
def test_probabilities_and_predictions(tiny: Zoo) -> None:
    p = tiny.probabilities
    assert np.all(p >= 0)
    np.testing.assert_allclose(p.sum(axis=2), 1.0, atol=1e-5)
    np.testing.assert_array_equal(tiny.predictions, p.argmax(axis=2))


@needs_all
def test_accuracies(tiny: Zoo) -> None:
    expected = [np.mean(tiny.predictions[i] == tiny.labels) for i in range(len(TINY))]
    np.testing.assert_allclose(tiny.accuracies, expected)
    np.testing.assert_array_equal(tiny.correct, tiny.predictions == tiny.labels)
    assert np.all(tiny.accuracies > 0.15)  # better than chance (0.1)


@needs_all
def test_activations(tiny: Zoo) -> None:
    assert len(tiny.activations) == len(TINY)
    for name, act in zip(tiny.names, tiny.activations, strict=True):
        width = HIDDEN[name]
        if width is None:
            assert act is None
        else:
            assert act is not None
            assert act.shape == (tiny.n_inputs, width) and act.dtype == np.float32
            assert np.all(act >= 0)  # after a ReLU


@needs_all
def test_deterministic(tiny: Zoo) -> None:
    again = train_zoo(TINY, n_samples=N_SAMPLES, seed=0, progress=False)
    np.testing.assert_array_equal(again.labels, tiny.labels)
    np.testing.assert_array_equal(again.predictions, tiny.predictions)
    np.testing.assert_array_equal(again.probabilities, tiny.probabilities)
    for a, b in zip(again.activations, tiny.activations, strict=True):
        if a is None or b is None:
            assert a is None and b is None
        else:
            np.testing.assert_array_equal(a, b)


@needs_all
def test_models_are_independent_of_their_neighbours(tiny: Zoo) -> None:
    alone = train_zoo(TINY[2:3], n_samples=N_SAMPLES, seed=0, progress=False)
    np.testing.assert_array_equal(alone.probabilities[0], tiny.probabilities[2])


@needs_all
def test_seeds_change_the_models() -> None:
    specs = [TINY[1], dataclasses.replace(TINY[1], name="mlp-s7", seed=7)]
    zoo = train_zoo(specs, n_samples=N_SAMPLES, seed=0, progress=False)
    assert not np.array_equal(zoo.probabilities[0], zoo.probabilities[1])
    other = train_zoo(specs[:1], n_samples=N_SAMPLES, seed=1, progress=False)
    assert not np.array_equal(other.labels, zoo.labels)


@needs_all
def test_global_state_untouched() -> None:
    threads = torch.get_num_threads()
    torch.manual_seed(123)
    expected = torch.rand(3)
    torch.manual_seed(123)
    train_zoo(TINY[:1], n_samples=200, progress=False)
    np.testing.assert_array_equal(torch.rand(3).numpy(), expected.numpy())
    assert torch.get_num_threads() == threads


@needs_all
def test_digits_dataset() -> None:
    specs = [TINY[0], dataclasses.replace(TINY[2], epochs=1)]
    zoo = train_zoo(specs, dataset="digits", progress=False)
    assert zoo.n_inputs == 899
    assert zoo.probabilities.shape == (2, 899, 10)
    assert zoo.activations[0] is None
    assert zoo.activations[1] is not None and zoo.activations[1].shape == (899, 16)


# ------------------------------------------------------------------------------- select


@needs_all
def test_select(tiny: Zoo) -> None:
    sub = tiny.select(["cnn", 0])
    assert sub.names == ["cnn", "linear"]
    assert sub.specs == (TINY[2], TINY[0])
    np.testing.assert_array_equal(sub.predictions, tiny.predictions[[2, 0]])
    np.testing.assert_array_equal(sub.accuracies, tiny.accuracies[[2, 0]])
    assert sub.activations[1] is None
    assert "n_models=2" in repr(sub)


@needs_all
@pytest.mark.parametrize("models", [[], ["nope"], [0, 0], [9], [-1]])
def test_select_rejects_bad_models(tiny: Zoo, models: list[Any]) -> None:
    with pytest.raises(LabelwiseError):
        tiny.select(models)

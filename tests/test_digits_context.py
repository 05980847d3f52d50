"""Tests for labelwise.experiments.digits (shifts, CNN training, operational contexts)."""

from __future__ import annotations

import dataclasses
import pickle
import subprocess
import sys
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from labelwise.adapters import training
from labelwise.exceptions import LabelwiseError, MissingDependencyError
from labelwise.experiments import digits
from labelwise.experiments.digits import (
    DigitsContext,
    apply_shift,
    digits_context,
    load_digit_images,
    lower_resolution,
    occlude,
    relight,
    swap_labels,
    train_digits_cnn,
)

pytest.importorskip("sklearn")

try:
    import torch
except ImportError:  # pragma: no cover - the NumPy-only tests still run
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="needs labelwise[torch]")

ShiftFn = Callable[..., np.ndarray]

RANDOM_SHIFTS: dict[str, ShiftFn] = {
    "occlude": lambda x, rng: occlude(x, rng=rng),
    "occlude-range": lambda x, rng: occlude(x, n_patches=2, size=(1, 3), rng=rng),
    "relight": lambda x, rng: relight(x, rng=rng),
}
ALL_SHIFTS: dict[str, ShiftFn] = {
    **RANDOM_SHIFTS,
    "lower_resolution": lambda x, rng: lower_resolution(x),
    "lower_resolution-4": lambda x, rng: lower_resolution(x, factor=4),
}


@pytest.fixture(scope="module")
def images() -> np.ndarray:
    x, _ = load_digit_images()
    return x[:60]


# ------------------------------------------------------------------------------ import


def test_import_does_not_import_torch() -> None:
    code = (
        "import sys, labelwise.experiments, labelwise.experiments.digits as d\n"
        "d.occlude(d.load_digit_images()[0][:3], rng=0)\n"
        "assert 'torch' not in sys.modules, 'torch imported'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_load_digit_images() -> None:
    x, y = load_digit_images()
    assert x.shape == (1797, 8, 8) and x.dtype == np.float32
    assert y.shape == (1797,) and y.dtype == np.int64
    assert x.min() == 0.0 and x.max() == 1.0
    assert set(np.unique(y)) == set(range(10))


# ------------------------------------------------------------------------------ shifts


@pytest.mark.parametrize("name", sorted(ALL_SHIFTS))
def test_shift_keeps_shape_dtype_range_and_input(name: str, images: np.ndarray) -> None:
    before = images.copy()
    out = ALL_SHIFTS[name](images, 0)
    assert out.shape == images.shape
    assert out.dtype == np.float32
    assert out.min() >= 0.0 and out.max() <= 1.0
    assert out is not images and not np.shares_memory(out, images)
    np.testing.assert_array_equal(images, before)
    assert not np.array_equal(out, images)


@pytest.mark.parametrize("name", sorted(RANDOM_SHIFTS))
def test_random_shift_reproducible_with_seed(name: str, images: np.ndarray) -> None:
    fn = RANDOM_SHIFTS[name]
    np.testing.assert_array_equal(fn(images, 3), fn(images, 3))
    np.testing.assert_array_equal(
        fn(images, np.random.default_rng(3)), fn(images, np.random.default_rng(3))
    )
    assert not np.array_equal(fn(images, 3), fn(images, 4))


def test_shift_accepts_other_numeric_input(images: np.ndarray) -> None:
    out = occlude(images.astype(np.float64).tolist(), rng=0)
    assert out.dtype == np.float32
    np.testing.assert_array_equal(out, occlude(images, rng=0))


@pytest.mark.parametrize(
    "bad", [np.zeros((4, 64)), np.full((2, 8, 8), 2.0), np.full((2, 8, 8), np.nan)]
)
def test_shift_rejects_bad_images(bad: np.ndarray) -> None:
    message = r"images (must have shape \(N, H, W\)|must be scaled to \[0, 1\]|contains NaN)"
    with pytest.raises(LabelwiseError, match=message):
        occlude(bad, rng=0)
    with pytest.raises(LabelwiseError, match=message):
        relight(bad, rng=0)
    with pytest.raises(LabelwiseError, match=message):
        lower_resolution(bad)


@pytest.mark.parametrize("size", [3, (2, 3), (1, 8)])
def test_occlude_zeroes_one_rectangle(size: int | tuple[int, int]) -> None:
    ones = np.ones((200, 8, 8), dtype=np.float32)
    out = occlude(ones, n_patches=1, size=size, rng=1)
    low, high = (size, size) if isinstance(size, int) else size
    heights, widths = set(), set()
    for img in out:
        assert set(np.unique(img)) <= {0.0, 1.0}
        rows, cols = np.nonzero(img == 0.0)
        h = rows.max() - rows.min() + 1
        w = cols.max() - cols.min() + 1
        assert rows.size == h * w  # the zeros fill their bounding box: a rectangle
        assert low <= h <= high and low <= w <= high
        heights.add(int(h))
        widths.add(int(w))
    assert heights == widths == set(range(low, high + 1))


def test_occlude_positions_cover_the_image() -> None:
    out = occlude(np.ones((500, 8, 8), dtype=np.float32), size=2, rng=0)
    assert np.all((out == 0.0).any(axis=0))  # every pixel gets occluded somewhere


def test_occlude_options() -> None:
    ones = np.ones((20, 8, 8), dtype=np.float32)
    np.testing.assert_array_equal(occlude(ones, n_patches=0, rng=0), ones)
    np.testing.assert_array_equal(occlude(ones, size=8, rng=0), np.zeros_like(ones))
    gray = occlude(ones, size=2, value=0.5, rng=0)
    assert np.all((gray == 0.5).sum(axis=(1, 2)) == 4)
    for kwargs in ({"size": 9}, {"size": 0}, {"size": (3, 2)}, {"n_patches": -1}):
        with pytest.raises(LabelwiseError):
            occlude(ones, rng=0, **kwargs)  # type: ignore[arg-type]


def test_relight_formula(images: np.ndarray) -> None:
    np.testing.assert_array_equal(relight(images, brightness=0.0, contrast=1.0), images)
    np.testing.assert_array_equal(
        relight(images, brightness=1.0, contrast=1.0), np.ones_like(images)
    )
    np.testing.assert_allclose(
        relight(images, brightness=0.0, contrast=0.0), np.full_like(images, 0.5)
    )
    expected = np.clip(0.5 + 0.5 * (images - 0.5) + 0.1, 0.0, 1.0)
    np.testing.assert_allclose(relight(images, brightness=0.1, contrast=0.5), expected, atol=1e-6)
    # A range draws one value per image: every image is an affine map of the original.
    out = relight(images, brightness=(-0.1, 0.1), contrast=(0.6, 0.9), rng=0)
    for img, src in zip(out[:5], images[:5], strict=True):
        inside = (img > 0.0) & (img < 1.0)  # not clipped
        slope, offset = np.polyfit(src[inside], img[inside], 1)
        assert 0.6 - 1e-4 <= slope <= 0.9 + 1e-4
        np.testing.assert_allclose(img[inside], slope * src[inside] + offset, atol=1e-5)
    with pytest.raises(LabelwiseError):
        relight(images, contrast=-1.0)
    with pytest.raises(LabelwiseError):
        relight(images, brightness=(0.3, 0.1))


@pytest.mark.parametrize("factor", [1, 2, 4, 8])
def test_lower_resolution_constant_on_blocks(factor: int, images: np.ndarray) -> None:
    out = lower_resolution(images, factor=factor)
    n = images.shape[0]
    k = 8 // factor
    blocks = out.reshape(n, k, factor, k, factor)
    assert np.all(blocks == blocks[:, :, :1, :, :1])
    src = images.reshape(n, k, factor, k, factor).mean(axis=(2, 4))
    np.testing.assert_allclose(blocks[:, :, 0, :, 0], src, atol=1e-6)
    if factor == 1:
        np.testing.assert_array_equal(out, images)


def test_lower_resolution_rejects_bad_factor(images: np.ndarray) -> None:
    for factor in (0, 3, 2.5):
        with pytest.raises(LabelwiseError):
            lower_resolution(images, factor=factor)  # type: ignore[arg-type]


def test_swap_labels() -> None:
    y = np.array([0, 1, 8, 8, 0, 3, 7, 9], dtype=np.int32)
    before = y.copy()
    out = swap_labels(y, ((8, 0),))
    np.testing.assert_array_equal(out, [8, 1, 0, 0, 8, 3, 7, 9])
    assert out.dtype == np.int32
    np.testing.assert_array_equal(y, before)
    out2 = swap_labels(y, [(8, 0), (7, 1)])
    np.testing.assert_array_equal(out2, [8, 7, 0, 0, 8, 3, 1, 9])
    np.testing.assert_array_equal(swap_labels(out2, [(8, 0), (7, 1)]), y)  # an involution
    np.testing.assert_array_equal(swap_labels(y, ()), y)
    for bad in ([(8, 8)], [(8, 0), (0, 3)], [(1, 2, 3)]):
        with pytest.raises(LabelwiseError):
            swap_labels(y, bad)  # type: ignore[arg-type]
    with pytest.raises(LabelwiseError):
        swap_labels(y.astype(float), [(8, 0)])


def test_apply_shift_dispatch(images: np.ndarray) -> None:
    np.testing.assert_array_equal(apply_shift(images, "none"), images)
    np.testing.assert_array_equal(apply_shift(images, "patch", rng=5), occlude(images, rng=5))
    np.testing.assert_array_equal(apply_shift(images, "light", rng=5), relight(images, rng=5))
    np.testing.assert_array_equal(
        apply_shift(images, "resolution", factor=4), lower_resolution(images, factor=4)
    )
    with pytest.raises(LabelwiseError):
        apply_shift(images, "blur")


# ------------------------------------------------------------------------------- torch


@pytest.fixture(scope="module")
def clean() -> DigitsContext:
    return digits_context("none", seed=0)


@pytest.fixture(scope="module")
def patch() -> DigitsContext:
    return digits_context("patch", seed=0)


def test_missing_torch_raises(monkeypatch: pytest.MonkeyPatch, images: np.ndarray) -> None:
    monkeypatch.setitem(sys.modules, "torch", None)
    with pytest.raises(MissingDependencyError, match=r"pip install 'labelwise\[torch\]'"):
        train_digits_cnn(images, np.zeros(len(images), dtype=np.int64), epochs=1)
    with pytest.raises(MissingDependencyError, match=r"labelwise\[torch\]"):
        digits_context("none")
    with pytest.raises(MissingDependencyError):
        training.digits_cnn_class.__wrapped__()


@needs_torch
def test_digits_cnn_architecture() -> None:
    cls = digits.DigitsCNN
    assert issubclass(cls, torch.nn.Module)
    assert "DigitsCNN" in dir(digits)
    with pytest.raises(AttributeError):
        _ = digits.NoSuchThing
    model = cls()
    x = torch.zeros(5, 8, 8)
    assert model(x).shape == (5, 10)
    assert model(x.unsqueeze(1)).shape == (5, 10)
    assert model.embed(x).shape == (5, 64)
    linears = [m for m in model.modules() if isinstance(m, torch.nn.Linear)]
    assert linears[-1].in_features == 64 and linears[-1].out_features == 10
    clone = pickle.loads(pickle.dumps(model))
    assert type(clone) is cls


@needs_torch
def test_digits_cnn_can_be_scripted() -> None:
    """torch.jit.script(model), as examples/dependability_digits.py saves it: the shared
    embed/forward (_FeaturesHiddenHead) failed to script ('Unknown type annotation:
    Callable', then 'no attribute channelless_rank'); the scripted model gives the same
    logits and embedding, with or without the channel axis."""
    torch.manual_seed(0)
    model = digits.DigitsCNN().eval()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # TorchScript is deprecated in 2.13
        scripted = torch.jit.script(model)
    x = torch.randn(4, 8, 8)
    with torch.no_grad():
        assert torch.equal(scripted(x), model(x))
        assert torch.equal(scripted(x.unsqueeze(1)), model(x))
        assert torch.equal(scripted.embed(x), model.embed(x))


@needs_torch
def test_training_is_deterministic_and_leaves_global_state(images: np.ndarray) -> None:
    x, y = load_digit_images()
    threads = torch.get_num_threads()
    torch.manual_seed(123)
    expected = torch.rand(3)
    torch.manual_seed(123)
    a = train_digits_cnn(x[:300], y[:300], epochs=2, seed=7)
    assert torch.equal(torch.rand(3), expected)  # global RNG untouched
    assert torch.get_num_threads() == threads
    assert torch.is_grad_enabled()
    b = train_digits_cnn(x[:300], y[:300], epochs=2, seed=7)
    c = train_digits_cnn(x[:300], y[:300], epochs=2, seed=8)
    assert not a.training
    sa, sb, sc = a.state_dict(), b.state_dict(), c.state_dict()
    assert all(torch.equal(sa[k], sb[k]) for k in sa)
    assert not all(torch.equal(sa[k], sc[k]) for k in sa)


@needs_torch
def test_training_works_under_no_grad() -> None:
    x, y = load_digit_images()
    with torch.no_grad():
        model = train_digits_cnn(x[:100], y[:100], epochs=1)
    assert isinstance(model, torch.nn.Module)


@needs_torch
def test_train_rejects_bad_input() -> None:
    x, y = load_digit_images()
    with pytest.raises(LabelwiseError, match=r"images and labels disagree in length: 10 != 9"):
        train_digits_cnn(x[:10], y[:9], epochs=1)
    with pytest.raises(LabelwiseError, match=r"cannot train on zero images"):
        train_digits_cnn(x[:0], y[:0], epochs=1)
    with pytest.raises(LabelwiseError, match=r"labels must be in \[0, 10\); got \[10 11"):
        train_digits_cnn(x[:10], y[:10] + 10, epochs=1)
    with pytest.raises(LabelwiseError, match=r"epochs must be >= 1"):
        train_digits_cnn(x[:10], y[:10], epochs=0)
    with pytest.raises(LabelwiseError, match=r"images must have shape \(N, 8, 8\)"):
        train_digits_cnn(np.zeros((10, 4, 4)), y[:10], epochs=1)


@needs_torch
def test_context_is_deterministic() -> None:
    a = digits_context("light", seed=3, epochs=2)
    b = digits_context("light", seed=3, epochs=2)
    c = digits_context("light", seed=4, epochs=2)
    for field in ("train_images", "images", "labels", "activations", "probabilities"):
        np.testing.assert_array_equal(getattr(a, field), getattr(b, field))
    assert not np.array_equal(a.labels, c.labels)


@needs_torch
def test_context_arrays(clean: DigitsContext, patch: DigitsContext) -> None:
    for ctx in (clean, patch):
        n = len(ctx)
        assert n == 898 or n == 899
        assert ctx.train_images.shape == (1797 - n, 8, 8)
        assert ctx.train_images.dtype == np.float32
        assert ctx.train_labels.shape == (1797 - n,) and ctx.train_labels.dtype == np.int64
        assert ctx.images.shape == (n, 8, 8) and ctx.images.dtype == np.float32
        assert ctx.images.min() >= 0.0 and ctx.images.max() <= 1.0
        assert ctx.labels.shape == (n,) and ctx.labels.dtype == np.int64
        assert ctx.activations.shape == (n, 64) and ctx.activations.dtype == np.float32
        assert ctx.activations.min() >= 0.0  # post-ReLU
        assert ctx.probabilities.shape == (n, 10) and ctx.probabilities.dtype == np.float32
        assert ctx.predictions.shape == (n,) and ctx.predictions.dtype == np.int64
        np.testing.assert_allclose(ctx.probabilities.sum(axis=1), 1.0, atol=1e-5)
        assert np.all(ctx.probabilities >= 0.0)
        np.testing.assert_array_equal(ctx.predictions, ctx.probabilities.argmax(axis=1))
        assert ctx.accuracy == pytest.approx(np.mean(ctx.predictions == ctx.labels))
        assert not ctx.model.training
        assert all(not m._forward_pre_hooks for m in ctx.model.modules())  # hook removed
        # activations are the input of the last Linear: they reproduce the logits
        with torch.no_grad():
            logits = ctx.model.head(torch.from_numpy(ctx.activations)).numpy()
        np.testing.assert_allclose(
            np.exp(logits - logits.max(axis=1, keepdims=True))
            / np.exp(logits - logits.max(axis=1, keepdims=True)).sum(axis=1, keepdims=True),
            ctx.probabilities,
            atol=1e-5,
        )
    assert clean.name == "digits-none" and patch.name == "digits-patch"
    assert "accuracy=" in repr(clean)
    with pytest.raises(dataclasses.FrozenInstanceError):
        clean.name = "x"  # type: ignore[misc]


@needs_torch
def test_context_accuracies(clean: DigitsContext, patch: DigitsContext) -> None:
    assert clean.accuracy >= 0.95
    assert patch.accuracy < clean.accuracy - 0.05
    assert 0.7 <= patch.accuracy <= 0.92


@needs_torch
def test_context_scores_are_per_row_correctness(patch: DigitsContext) -> None:
    scores = patch.scores()
    assert scores.dtype == np.float64
    np.testing.assert_array_equal(scores == 1.0, patch.predictions == patch.labels)
    assert set(np.unique(scores)) <= {0.0, 1.0}
    assert scores.mean() == pytest.approx(patch.accuracy, abs=1e-15)


@needs_torch
def test_same_seed_same_split_and_model(clean: DigitsContext, patch: DigitsContext) -> None:
    np.testing.assert_array_equal(clean.train_images, patch.train_images)
    np.testing.assert_array_equal(clean.labels, patch.labels)
    sa, sb = clean.model.state_dict(), patch.model.state_dict()
    assert all(torch.equal(sa[k], sb[k]) for k in sa)
    changed = np.any(clean.images != patch.images, axis=(1, 2))
    assert changed.mean() > 0.7  # most patches cover some ink (the rest hit background)
    # the split is stratified: each class is (almost) halved
    counts = np.bincount(clean.labels, minlength=10)
    train_counts = np.bincount(clean.train_labels, minlength=10)
    assert np.all(np.abs(counts - train_counts) <= 1)


@needs_torch
def test_mutant_context(clean: DigitsContext) -> None:
    ctx = digits_context("none", mutant="8-0", seed=0)
    assert ctx.name == "digits-none-mutant-8-0"
    np.testing.assert_array_equal(ctx.train_labels, clean.train_labels)  # true labels
    np.testing.assert_array_equal(ctx.images, clean.images)
    eights = ctx.labels == 8
    zeros = ctx.labels == 0
    assert np.mean(ctx.predictions[eights] == 0) > 0.8
    assert np.mean(ctx.predictions[zeros] == 8) > 0.8
    assert ctx.accuracy < clean.accuracy - 0.1


@needs_torch
@pytest.mark.parametrize(
    "kwargs",
    [
        {"shift": "blur"},
        {"mutant": "8to0"},
        {"mutant": "8-8"},
        {"train_fraction": 1.0},
        {"seed": -1},
    ],
)
def test_context_rejects_bad_arguments(kwargs: dict[str, Any]) -> None:
    with pytest.raises(LabelwiseError):
        digits_context(**{"epochs": 1, **kwargs})


@needs_torch
def test_context_shift_options() -> None:
    ctx = digits_context("resolution", epochs=1, shift_options={"factor": 4})
    blocks = ctx.images.reshape(len(ctx), 2, 4, 2, 4)
    assert np.all(blocks == blocks[:, :, :1, :, :1])

"""PyTorch models and training behind the studies and the demo (digits, MNIST-1D, regression,
the model zoo).

The experiment modules (:mod:`labelwise.experiments`) hold the data, the shifts and the
validation, in NumPy; everything that needs torch is here, and torch is imported lazily inside
the functions, so importing this module never imports it.

* :func:`require_torch` -- raise :class:`MissingDependencyError` naming the calling module;
* :func:`fit` -- deterministic Adam training on mini-batches, optionally with a one-cycle
  learning-rate schedule;
* :func:`forward_with_activations` -- one ``no_grad`` pass capturing the input of the
  model's last ``Linear``;
* :func:`digits_cnn_class`, :func:`mnist1d_cnn_class`, :func:`regression_mlp_class` -- the
  model classes (built once, on first use), :func:`zoo_model` -- a zoo member;
* :func:`train_on_arrays`, :func:`classify`, :func:`regress`, :func:`train_zoo_models`,
  :func:`last_linear` -- the torch side of the experiments.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
from numpy.typing import NDArray

from labelwise._deps import require
from labelwise._progress import progress_bar
from labelwise._validation import check_int
from labelwise.exceptions import LabelwiseError

if TYPE_CHECKING:
    import torch

    from labelwise.experiments.zoo import ModelSpec


def require_torch(module: str) -> None:
    """Raise :class:`MissingDependencyError` when torch cannot be imported."""
    require("torch", f"this part of {module}")


def check_training_args(
    epochs: Any, batch_size: Any, seed: Any, learning_rate: Any, num_threads: Any
) -> tuple[int, int, int, float, int | None]:
    """``(epochs, batch_size, seed, learning_rate, num_threads)`` validated, else raise."""
    epochs = check_int(epochs, "epochs", minimum=1)
    batch_size = check_int(batch_size, "batch_size", minimum=1)
    seed = check_int(seed, "seed", minimum=0)
    if not (np.isfinite(learning_rate) and learning_rate > 0):
        raise LabelwiseError(f"learning_rate must be positive; got {learning_rate!r}")
    threads = None if num_threads is None else check_int(num_threads, "num_threads", minimum=1)
    return epochs, batch_size, seed, learning_rate, threads


def fit(
    model_factory: Callable[[], torch.nn.Module],
    x: torch.Tensor,
    y: torch.Tensor,
    loss_fn: Callable[[torch.Tensor, torch.Tensor], torch.Tensor],
    *,
    epochs: int,
    batch_size: int,
    learning_rate: float,
    seed: int,
    num_threads: int | None,
    one_cycle: bool,
) -> torch.nn.Module:
    """Build ``model_factory()`` and train it with Adam on ``loss_fn(model(x[b]), y[b])``.

    ``x`` and ``y`` are already shaped for the model (one row per example). The arguments
    are checked first (:func:`check_training_args`). Deterministic for a given ``seed``
    (and thread count): the model is built under ``torch.manual_seed(seed)`` inside
    ``torch.random.fork_rng()``, so the caller's global torch RNG state is left untouched,
    and each epoch visits the rows in the order ``np.random.default_rng(seed).permutation``
    (one generator for the whole run) in mini-batches of ``batch_size``. With
    ``one_cycle`` the learning rate follows ``OneCycleLR`` with peak ``learning_rate`` over
    all ``epochs * ceil(N / batch_size)`` steps, stepped after every batch; otherwise it is
    constant. ``num_threads`` is the torch intra-op thread count used while training,
    restored afterwards (``None`` keeps the caller's). Returns the model in eval mode.
    """
    import torch

    epochs, batch_size, seed, learning_rate, threads = check_training_args(
        epochs, batch_size, seed, learning_rate, num_threads
    )
    order_rng = np.random.default_rng(seed)
    n = x.shape[0]
    steps_per_epoch = -(-n // batch_size)
    previous_threads = torch.get_num_threads()
    new_threads = threads if threads is not None and threads != previous_threads else None
    try:
        if new_threads is not None:
            torch.set_num_threads(new_threads)
        with torch.random.fork_rng(devices=[]), torch.enable_grad():
            torch.manual_seed(seed)
            model = model_factory()
            model.train()
            optimizer = torch.optim.Adam(model.parameters(), lr=learning_rate)
            scheduler = (
                torch.optim.lr_scheduler.OneCycleLR(
                    optimizer, max_lr=learning_rate, total_steps=epochs * steps_per_epoch
                )
                if one_cycle
                else None
            )
            for _ in range(epochs):
                perm = torch.from_numpy(order_rng.permutation(n))
                for start in range(0, n, batch_size):
                    idx = perm[start : start + batch_size]
                    optimizer.zero_grad()
                    loss = loss_fn(model(x[idx]), y[idx])
                    loss.backward()
                    optimizer.step()
                    if scheduler is not None:
                        scheduler.step()
    finally:
        if new_threads is not None:
            torch.set_num_threads(previous_threads)
    model.eval()
    return model


def forward_with_activations(
    model: torch.nn.Module, x: torch.Tensor
) -> tuple[NDArray[np.float32], torch.Tensor]:
    """One batched ``no_grad`` pass: (input of the last ``Linear`` as float32, output).

    The model runs in eval mode and gets its training flag back afterwards; the captured
    input is flattened to ``(N, -1)``.
    """
    import torch
    from torch import nn

    linears = [m for m in model.modules() if isinstance(m, nn.Linear)]
    if not linears:
        raise LabelwiseError("the model has no torch.nn.Linear layer")
    captured: list[torch.Tensor] = []

    def hook(_module: nn.Module, args: tuple[Any, ...]) -> None:
        captured.append(args[0].detach())

    handle = linears[-1].register_forward_pre_hook(hook)
    was_training = model.training
    try:
        model.eval()
        with torch.no_grad():
            out: torch.Tensor = model(x)
    finally:
        handle.remove()
        model.train(was_training)
    if len(captured) != 1:
        raise LabelwiseError(f"the last Linear layer ran {len(captured)} times, expected once")
    activations = captured[0].reshape(x.shape[0], -1).numpy().astype(np.float32)
    return activations, out


# --------------------------------------------------------------------------- experiment models


class _FeaturesHiddenHead:
    """``embed`` and ``forward`` of the experiment CNNs (mixed into an ``nn.Module``).

    ``embed(x) = hidden(features(x))``, the last hidden representation (input of ``head``);
    an input batch of rank ``channelless_rank`` (no channel axis) gets one at axis 1.
    ``forward(x) = head(embed(x))``, the logits.
    """

    channelless_rank: int
    # TorchScript (torch.jit.script, as examples/dependability_digits.py does) sees a class
    # attribute only as a constant, and refuses a Callable annotation: those are for mypy
    __constants__ = ("channelless_rank",)
    if TYPE_CHECKING:
        features: Callable[[torch.Tensor], torch.Tensor]
        hidden: Callable[[torch.Tensor], torch.Tensor]
        head: Callable[[torch.Tensor], torch.Tensor]

    def embed(self, x: torch.Tensor) -> torch.Tensor:
        """The last hidden representation (input of ``head``), shape ``(N, 64)``."""
        if x.ndim == self.channelless_rank:
            x = x.unsqueeze(1)
        return self.hidden(self.features(x))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.embed(x))


def _defined_in(cls: type[torch.nn.Module], module: str) -> type[torch.nn.Module]:
    """``cls`` named as a top-level class of ``module`` (where it is pickled from)."""
    cls.__module__ = module
    cls.__qualname__ = cls.__name__
    return cls


@functools.cache
def digits_cnn_class() -> type[torch.nn.Module]:
    """Create (once) the ``DigitsCNN`` class; kept in a function so torch loads lazily."""
    require_torch("labelwise.experiments.digits")
    from torch import nn

    from labelwise.experiments.digits import HIDDEN_SIZE, N_CLASSES

    class DigitsCNN(_FeaturesHiddenHead, nn.Module):
        """LeNet-style CNN for ``1x8x8`` digits with a 64-neuron last hidden layer.

        ``conv(1->8, 3x3, pad 1) -> ReLU -> maxpool 2 -> conv(8->16, 3x3, pad 1) -> ReLU
        -> maxpool 2 -> flatten (64) -> Linear(64, 64) -> ReLU -> Linear(64, 10)``.
        ``features`` and ``hidden`` produce the 64 activations fed to ``head``; inputs may
        be ``(N, 8, 8)`` or ``(N, 1, 8, 8)``. ``forward`` returns logits.
        """

        channelless_rank = 3

        def __init__(self, n_classes: int = N_CLASSES) -> None:
            super().__init__()
            self.features = nn.Sequential(
                nn.Conv2d(1, 8, kernel_size=3, padding=1),
                nn.ReLU(),
                nn.MaxPool2d(2),
                nn.Conv2d(8, 16, kernel_size=3, padding=1),
                nn.ReLU(),
                nn.MaxPool2d(2),
                nn.Flatten(),
            )
            self.hidden = nn.Sequential(nn.Linear(64, HIDDEN_SIZE), nn.ReLU())
            self.head = nn.Linear(HIDDEN_SIZE, n_classes)

    return _defined_in(DigitsCNN, "labelwise.experiments.digits")


@functools.cache
def mnist1d_cnn_class() -> type[torch.nn.Module]:
    """Create (once) the ``Mnist1dCNN`` class; kept in a function so torch loads lazily."""
    require_torch("labelwise.experiments.mnist1d")
    from torch import nn

    from labelwise.experiments.mnist1d import HIDDEN_SIZE, N_CLASSES, SEQUENCE_LENGTH

    class Mnist1dCNN(_FeaturesHiddenHead, nn.Module):
        """1D CNN for length-40 signals with a 64-neuron last hidden layer.

        ``conv(1->32, k5, pad 2) -> ReLU -> conv(32->32, k3, pad 1) -> ReLU -> maxpool 2
        -> conv(32->64, k3, pad 1) -> ReLU -> maxpool 2 -> flatten (640) -> Linear(640, 64)
        -> ReLU -> Linear(64, 10)``. ``features`` and ``hidden`` produce the 64
        activations fed to ``head``; inputs may be ``(N, 40)`` or ``(N, 1, 40)``.
        ``forward`` returns logits.
        """

        channelless_rank = 2

        def __init__(self, n_classes: int = N_CLASSES) -> None:
            super().__init__()
            self.features = nn.Sequential(
                nn.Conv1d(1, 32, kernel_size=5, padding=2),
                nn.ReLU(),
                nn.Conv1d(32, 32, kernel_size=3, padding=1),
                nn.ReLU(),
                nn.MaxPool1d(2),
                nn.Conv1d(32, 64, kernel_size=3, padding=1),
                nn.ReLU(),
                nn.MaxPool1d(2),
                nn.Flatten(),
            )
            self.hidden = nn.Sequential(
                nn.Linear(64 * (SEQUENCE_LENGTH // 4), HIDDEN_SIZE), nn.ReLU()
            )
            self.head = nn.Linear(HIDDEN_SIZE, n_classes)

    return _defined_in(Mnist1dCNN, "labelwise.experiments.mnist1d")


@functools.cache
def regression_mlp_class() -> type[torch.nn.Module]:
    """Create (once) the ``RegressionMLP`` class; kept in a function so torch loads lazily."""
    require_torch("labelwise.experiments.regression")
    import torch
    from torch import nn

    from labelwise.experiments.regression import HIDDEN_SIZE, N_FEATURES

    class RegressionMLP(nn.Module):
        """``Linear(F, 64) -> ReLU -> Linear(64, 32) -> ReLU -> Linear(32, 1)``.

        ``hidden`` produces the 32 activations fed to ``head``; ``forward`` returns
        ``(N,)`` predictions.
        """

        def __init__(self, n_features: int = N_FEATURES) -> None:
            super().__init__()
            self.hidden = nn.Sequential(
                nn.Linear(n_features, 64),
                nn.ReLU(),
                nn.Linear(64, HIDDEN_SIZE),
                nn.ReLU(),
            )
            self.head = nn.Linear(HIDDEN_SIZE, 1)

        def embed(self, x: torch.Tensor) -> torch.Tensor:
            """The last hidden representation (input of ``head``), shape ``(N, 32)``."""
            out: torch.Tensor = self.hidden(x)
            return out

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            out: torch.Tensor = self.head(self.embed(x)).squeeze(-1)
            return out

    del torch
    return _defined_in(RegressionMLP, "labelwise.experiments.regression")


def zoo_model(spec: ModelSpec, length: int) -> torch.nn.Module:
    """The untrained model of ``spec`` for inputs of length ``length``."""
    from torch import nn

    from labelwise.experiments.zoo import N_CLASSES

    layers: list[nn.Module] = []
    if spec.family == "linear":
        return nn.Sequential(nn.Linear(length, N_CLASSES))
    if spec.family == "mlp":
        size = length
        for _ in range(spec.depth):
            layers += [nn.Linear(size, spec.width), nn.ReLU()]
            if spec.dropout:
                layers.append(nn.Dropout(spec.dropout))
            size = spec.width
        layers.append(nn.Linear(size, N_CLASSES))
        return nn.Sequential(*layers)
    channels = 1
    for _ in range(spec.depth):
        layers += [
            nn.Conv1d(channels, spec.width, spec.kernel_size, padding=spec.kernel_size // 2),
            nn.ReLU(),
            nn.MaxPool1d(2),
        ]
        channels = spec.width
    layers += [nn.Flatten(), nn.Linear(channels * (length >> spec.depth), spec.hidden), nn.ReLU()]
    if spec.dropout:
        layers.append(nn.Dropout(spec.dropout))
    layers.append(nn.Linear(spec.hidden, N_CLASSES))
    return nn.Sequential(*layers)


# --------------------------------------------------------------------------- experiment runs


def train_on_arrays(
    model_factory: Callable[[], torch.nn.Module],
    x: NDArray[np.float32],
    y: NDArray[np.int64] | NDArray[np.float32],
    *,
    loss: Literal["cross_entropy", "mse"],
    epochs: int,
    batch_size: int,
    learning_rate: float,
    seed: int,
    num_threads: int | None,
    one_cycle: bool,
) -> torch.nn.Module:
    """:func:`fit` on NumPy inputs and targets already shaped for the model, with
    cross-entropy (``loss="cross_entropy"``, class labels) or mean squared error (``"mse"``)."""
    require_torch("labelwise.adapters.training")
    import torch

    return fit(
        model_factory,
        torch.from_numpy(np.ascontiguousarray(x)),
        torch.from_numpy(np.ascontiguousarray(y)),
        torch.nn.CrossEntropyLoss() if loss == "cross_entropy" else torch.nn.MSELoss(),
        epochs=epochs,
        batch_size=batch_size,
        learning_rate=learning_rate,
        seed=seed,
        num_threads=num_threads,
        one_cycle=one_cycle,
    )


def classify(
    model: torch.nn.Module, x: NDArray[np.float32]
) -> tuple[NDArray[np.float32], NDArray[np.float32]]:
    """One batched pass: (input of the last ``Linear``, softmax probabilities as float32)."""
    import torch

    activations, logits = forward_with_activations(model, torch.from_numpy(x))
    probabilities = torch.softmax(logits.to(torch.float64), dim=1).numpy().astype(np.float32)
    return activations, probabilities


def regress(
    model: torch.nn.Module, x: NDArray[np.float32]
) -> tuple[NDArray[np.float32], NDArray[np.float64]]:
    """One batched pass: (input of the last ``Linear``, predictions as float64 ``(N,)``)."""
    import torch

    activations, out = forward_with_activations(model, torch.from_numpy(x))
    predictions = out.reshape(x.shape[0]).numpy().astype(np.float64)
    return activations, predictions


def last_linear(model: torch.nn.Module) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """``(W, b)`` of the model's last defined ``nn.Linear`` as NumPy, ``W`` of shape
    ``(in_features, out_features)`` (so that logits are ``a @ W + b``)."""
    from torch import nn

    linears = [m for m in model.modules() if isinstance(m, nn.Linear)]
    if not linears:
        raise LabelwiseError("the model has no torch.nn.Linear layer")
    last = linears[-1]
    weight = last.weight.detach().cpu().numpy().astype(np.float64).T
    bias = (
        np.zeros(last.out_features)
        if last.bias is None
        else last.bias.detach().cpu().numpy().astype(np.float64)
    )
    return weight, bias


def train_zoo_models(
    specs: Sequence[ModelSpec],
    x_train: NDArray[np.float32],
    y_train: NDArray[np.int64],
    x_op: NDArray[np.float32],
    *,
    seeds: Sequence[int],
    n_classes: int,
    progress: bool,
) -> tuple[NDArray[np.int64], NDArray[np.float32], list[NDArray[np.float32] | None], list[float]]:
    """Train each zoo member (:func:`zoo_model`) and run it over ``x_op``.

    Member ``i`` trains with :func:`fit` seeded by ``seeds[i]`` (which also draws its
    ``train_fraction`` subset) on one thread, restored afterwards. Returns
    ``(predictions (M, N), probabilities (M, N, C), activations, train_seconds)``.
    """
    require_torch("labelwise.experiments.zoo")
    import torch
    from torch import nn

    length = x_train.shape[1]
    n_models, n_op = len(specs), x_op.shape[0]
    predictions = np.empty((n_models, n_op), dtype=np.int64)
    probabilities = np.empty((n_models, n_op, n_classes), dtype=np.float32)
    activations: list[NDArray[np.float32] | None] = []
    seconds: list[float] = []
    x_op_t = torch.from_numpy(np.ascontiguousarray(x_op))
    previous_threads = torch.get_num_threads()
    bar = progress_bar(n_models, desc="zoo", unit="model", enabled=progress)
    try:
        torch.set_num_threads(1)
        for i, spec in enumerate(specs):
            train_seed = int(seeds[i])
            rows = np.arange(x_train.shape[0])
            if spec.train_fraction < 1.0:
                k = max(1, round(spec.train_fraction * len(rows)))
                rng = np.random.default_rng([train_seed, 1])
                rows = np.sort(rng.choice(len(rows), size=k, replace=False))
            x = torch.from_numpy(np.ascontiguousarray(x_train[rows]))
            x_eval = x_op_t
            if spec.family == "cnn":
                x, x_eval = x.unsqueeze(1), x_op_t.unsqueeze(1)
            start = time.perf_counter()
            model = fit(
                functools.partial(zoo_model, spec, length),
                x,
                torch.from_numpy(np.ascontiguousarray(y_train[rows])),
                nn.CrossEntropyLoss(),
                epochs=spec.epochs,
                batch_size=spec.batch_size,
                learning_rate=spec.learning_rate,
                seed=train_seed,
                num_threads=1,
                one_cycle=True,
            )
            seconds.append(time.perf_counter() - start)
            hidden, logits = forward_with_activations(model, x_eval)
            probs = torch.softmax(logits.to(torch.float64), dim=1).numpy().astype(np.float32)
            probabilities[i] = probs
            predictions[i] = probs.argmax(axis=1)
            activations.append(hidden if spec.has_hidden_layer else None)
            bar.update(1)
    finally:
        torch.set_num_threads(previous_threads)
        bar.close()
    return predictions, probabilities, activations, seconds

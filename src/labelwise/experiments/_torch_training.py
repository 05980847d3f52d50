"""Training scaffolding shared by the operational contexts (digits, MNIST-1D, regression).

torch is imported lazily, inside the functions: importing this module never imports it.

* :func:`require_torch` -- raise :class:`MissingDependencyError` naming the calling module;
* :func:`lazy_attributes` -- PEP 562 ``__getattr__`` / ``__dir__`` for classes built on
  first access (so that importing a context module does not import torch);
* :func:`fit` -- deterministic Adam training on mini-batches, optionally with a one-cycle
  learning-rate schedule;
* :func:`forward_with_activations` -- one ``no_grad`` pass capturing the input of the
  model's last ``Linear``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, MutableMapping
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from labelwise._validation import check_int
from labelwise.exceptions import LabelwiseError, MissingDependencyError

if TYPE_CHECKING:
    import torch

TORCH_HINT = "pip install 'labelwise[torch]'"


def require_torch(module: str) -> None:
    """Raise :class:`MissingDependencyError` when torch cannot be imported."""
    try:
        import torch  # noqa: F401
    except ImportError as exc:
        raise MissingDependencyError(f"this part of {module} needs PyTorch: {TORCH_HINT}") from exc


def lazy_attributes(
    module_globals: MutableMapping[str, Any], builders: Mapping[str, Callable[[], Any]]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """A module's ``(__getattr__, __dir__)`` that build ``builders[name]()`` on first access.

    PEP 562: a model class is created by its builder (which imports torch) only when the
    attribute is read, so that importing the module does not import torch. The names are
    kept out of ``__all__`` by the caller: a star import must not need torch.
    """
    module_name = module_globals["__name__"]

    def __getattr__(name: str) -> Any:
        builder = builders.get(name)
        if builder is None:
            raise AttributeError(f"module {module_name!r} has no attribute {name!r}")
        return builder()

    def __dir__() -> list[str]:
        return sorted([*module_globals, *builders])

    return __getattr__, __dir__


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

"""PyTorch adapter: run a model once and capture a hidden layer and its outputs as NumPy.

This is the only module of labelwise that uses torch, and it imports torch lazily inside the
functions: importing this module works without torch, calling it raises
:class:`~labelwise.exceptions.MissingDependencyError`.

Examples
--------
>>> from labelwise.adapters.torch import capture
>>> cap = capture(model, x_operational)  # doctest: +SKIP
>>> cap.activations.shape, cap.outputs.shape  # doctest: +SKIP
((10000, 84), (10000, 10))
"""

from __future__ import annotations

import difflib
import itertools
import os
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from .._deps import require
from .._progress import progress_bar
from .._validation import check_int
from ..exceptions import LabelwiseError

if TYPE_CHECKING:
    import torch

__all__ = ["Capture", "capture", "load_model"]

_HEADS = ("softmax", "raw")
_PROBABILITY_ATOL = 1e-4  # rows summing to 1 within this are taken as already-softmaxed
_CHAIN_ATOL = 1e-5  # chained children must reproduce forward() within this
_SOFTMAX_CHUNK_ROWS = 1 << 16
_TUPLE_LABEL = "output[0] (features)"
_TUPLE_HINT = (
    "pass the Python nn.Module instead, or save a TorchScript model whose forward() returns "
    "a tuple (features, logits)"
)


def _require_torch() -> None:
    """Raise :class:`MissingDependencyError` when torch cannot be imported."""
    require("torch", "the PyTorch adapter")


@dataclass(frozen=True, eq=False)
class Capture:
    """What one pass of a model over the operational inputs produced.

    Attributes
    ----------
    activations:
        float32, shape ``(N, m)``: the captured layer's tensor for each row, flattened.
    outputs:
        float32, shape ``(N, C)``: softmax probabilities (``head="softmax"``) or the model's
        raw outputs (``head="raw"``, e.g. regression; a 1-D output becomes ``(N, 1)``).
    layer:
        Which tensor was captured, e.g. ``"fc3 (input)"``, ``"features (output)"`` or
        ``"output[0] (features)"`` for a model returning ``(features, logits)``.
    head:
        ``"softmax"`` or ``"raw"``.
    """

    activations: NDArray[np.float32]
    outputs: NDArray[np.float32]
    layer: str
    head: str

    def __repr__(self) -> str:
        return (
            f"Capture(activations={self.activations.shape}, outputs={self.outputs.shape}, "
            f"layer={self.layer!r}, head={self.head!r})"
        )


def load_model(path: str | os.PathLike[str]) -> torch.nn.Module:
    """Load a model saved as TorchScript (``torch.jit.save``) or as a pickled ``nn.Module``.

    TorchScript is tried first (``torch.jit.load(path, map_location="cpu")``), then
    ``torch.load(path, map_location="cpu", weights_only=False)`` of a whole pickled module.

    .. warning::
        Unpickling runs arbitrary code: load only files you trust.

    Parameters
    ----------
    path:
        The model file.

    Returns
    -------
    torch.nn.Module
        The model, on the CPU (a ``torch.jit.ScriptModule`` for TorchScript files).

    Raises
    ------
    LabelwiseError
        The file is missing, corrupt, or holds something other than a model (e.g. a
        ``state_dict``).
    MissingDependencyError
        torch is not installed.
    """
    _require_torch()
    import torch

    if isinstance(path, bytes) or not isinstance(path, str | os.PathLike):
        raise LabelwiseError(f"path must be a str or os.PathLike, got {type(path).__name__}")
    where = os.fspath(path)
    if not os.path.exists(where):
        raise LabelwiseError(f"model file not found: {where!r}")
    if os.path.isdir(where):
        raise LabelwiseError(f"model path {where!r} is a directory, expected a file")

    try:
        with warnings.catch_warnings():
            # torch >= 2.9 deprecates TorchScript; the user chose the file format, not us.
            warnings.filterwarnings(
                "ignore", message=r".*torch\.jit.*deprecated", category=DeprecationWarning
            )
            scripted: torch.nn.Module = torch.jit.load(where, map_location="cpu")
        return scripted
    except Exception as exc:
        jit_error = _short(exc)

    try:
        obj = torch.load(where, map_location="cpu", weights_only=False)
    except Exception as exc:
        raise LabelwiseError(
            f"could not load a model from {where!r}: it is neither a TorchScript file "
            f"(torch.jit.load: {jit_error}) nor a pickled torch.nn.Module "
            f"(torch.load: {_short(exc)})"
        ) from exc
    if isinstance(obj, torch.nn.Module):
        return obj
    if isinstance(obj, Mapping):
        raise LabelwiseError(
            f"{where!r} holds a {type(obj).__name__} (a state_dict or checkpoint?), not a "
            "model: build the model in Python, call model.load_state_dict(...), and pass the "
            "module itself"
        )
    raise LabelwiseError(f"{where!r} holds a {type(obj).__name__}, not a torch.nn.Module")


def capture(
    model: torch.nn.Module | str | os.PathLike[str],
    inputs: Any,
    *,
    layer: str | None = None,
    head: str = "softmax",
    batch_size: int = 256,
    device: str | torch.device = "cpu",
    progress: bool = True,
) -> Capture:
    """Run ``model`` over ``inputs`` once and capture a hidden layer and the outputs.

    The model is put in eval mode and run under ``torch.no_grad()`` in batches; its
    per-module training flags, its device and its hooks are restored afterwards.

    Parameters
    ----------
    model:
        A ``torch.nn.Module``, or the path of a TorchScript / pickled model file
        (see :func:`load_model`).
    inputs:
        A NumPy array (memory maps are read batch by batch), a tensor, or any array-like
        with ``shape``, ``dtype`` and slicing (h5py, zarr). The first axis is the rows; each
        batch is converted to the dtype of the model's first floating-point parameter
        (float32 for most models, float64 for a ``model.double()``) and passed as
        ``model(batch)``.
    layer:
        ``None`` (default) captures the *input* of the last ``nn.Linear`` that runs in the
        forward pass (found with pre-hooks on the first batch), i.e. the last hidden
        representation before the classification head; ``Capture.layer`` names it. (For
        TorchScript models, which have no hooks, the last ``Linear`` in
        ``model.named_modules()`` order.) A name from ``model.named_modules()`` (e.g.
        ``"features.3"``) captures the *output* of that module. A model whose
        forward returns a tuple ``(features, logits)`` needs no layer: ``features`` is
        captured.
    head:
        ``"softmax"``: the model returns logits, and ``outputs`` are their softmax over the
        classes (outputs that are already probabilities - non-negative rows summing to 1 - are
        kept as they are). ``"raw"``: ``outputs`` are the model outputs unchanged.
    batch_size:
        Rows per forward pass (>= 1). Does not change the result.
    device:
        Where to run, e.g. ``"cpu"``, ``"cuda"``, ``"cuda:1"``. A model whose parameters are
        all on one other device is moved there for the pass and moved back afterwards; a model
        spread over several devices is left where it is.
    progress:
        Show a tqdm progress bar over the batches (also off when the environment variable
        ``LABELWISE_NO_PROGRESS=1``).

    Returns
    -------
    Capture
        float32 ``activations`` ``(N, m)`` and ``outputs`` ``(N, C)``.

    Raises
    ------
    LabelwiseError
        Invalid arguments, empty inputs, an unknown layer, a model without ``nn.Linear`` and
        no ``layer``, a model that fails on the inputs (e.g. a wrong input shape: the message
        gives the shape passed, the shape the first layer expects and the model's error),
        non-finite results, or a TorchScript model whose layer cannot be reached
        (hooks do not work on TorchScript; see Notes).
    MissingDependencyError
        torch is not installed.

    Notes
    -----
    TorchScript modules do not support hooks. For them, the layer is reached by running the
    model's child modules one after another (as in a scripted ``nn.Sequential``); on the first
    batch this chain is checked against ``model(x)`` and a :class:`LabelwiseError` is raised if
    the two differ. TorchScript models whose forward returns ``(features, logits)`` always work.
    """
    _require_torch()
    import torch

    if head not in _HEADS:
        raise LabelwiseError(f"head must be one of {_HEADS}, got {head!r}")
    batch_size = check_int(batch_size, "batch_size", minimum=1)
    if layer is not None and (not isinstance(layer, str) or not layer):
        raise LabelwiseError(f"layer must be None or a non-empty module name, got {layer!r}")
    target_device = _check_device(device)
    if not isinstance(progress, bool | np.bool_):
        raise LabelwiseError(f"progress must be True or False, got {progress!r}")

    if isinstance(model, str | os.PathLike):
        model = load_model(model)
    elif not isinstance(model, torch.nn.Module):
        raise LabelwiseError(
            f"model must be a torch.nn.Module or the path of a saved model, "
            f"got {type(model).__name__}"
        )
    dtype = _input_dtype(model)
    n_rows, get_batch = _row_source(inputs, dtype)
    plan = _plan(model, layer)

    training_flags = [(module, module.training) for module in model.modules()]
    original_device = _single_device(model)
    moved = original_device is not None and original_device != target_device
    runner = _Runner(model, plan, head)
    activations: NDArray[np.float32] | None = None
    outputs: NDArray[np.float32] | None = None
    try:
        if moved:
            model.to(target_device)
        model.eval()
        runner.attach()
        starts = range(0, n_rows, batch_size)
        bar = progress_bar(len(starts), desc="labelwise capture", unit="batch", enabled=progress)
        with bar, torch.no_grad():
            for start in starts:
                stop = min(start + batch_size, n_rows)
                x = get_batch(start, stop).to(target_device)
                feats, outs = runner(x)
                if activations is None or outputs is None:
                    activations = np.empty((n_rows, feats.shape[1]), dtype=np.float32)
                    outputs = np.empty((n_rows, outs.shape[1]), dtype=np.float32)
                _store(activations, feats, start, "activations", runner.label)
                _store(outputs, outs, start, "model outputs", runner.label)
                bar.update(1)
    finally:
        runner.detach()
        # parents come before children in modules(), so each module ends with its own flag
        for module, flag in training_flags:
            module.train(flag)
        if moved and original_device is not None:
            model.to(original_device)

    assert activations is not None and outputs is not None  # n_rows >= 1
    if head == "softmax" and not _looks_like_probabilities(outputs):
        _softmax_rows_inplace(outputs)
    bad = _first_nonfinite_row(outputs)
    if bad is not None:
        raise LabelwiseError(
            f"the model produced NaN or infinite outputs (first at row {bad}); "
            "check the inputs for NaN/inf"
        )
    return Capture(activations=activations, outputs=outputs, layer=runner.label, head=head)


# --------------------------------------------------------------------------- validation


def _short(exc: BaseException, limit: int = 200) -> str:
    text = str(exc).strip().splitlines()
    first = text[0] if text else type(exc).__name__
    return first if len(first) <= limit else first[: limit - 3] + "..."


def _check_device(device: Any) -> torch.device:
    import torch

    if isinstance(device, torch.device):
        dev = device
    elif isinstance(device, str):
        try:
            dev = torch.device(device)
        except (RuntimeError, ValueError):
            raise LabelwiseError(
                f"device must be a torch device string such as 'cpu' or 'cuda:0', got {device!r}"
            ) from None
    else:
        raise LabelwiseError(f"device must be a str or torch.device, got {device!r}")
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise LabelwiseError(f"device {device!r} requested but CUDA is not available here")
    if dev.type == "mps" and not torch.backends.mps.is_available():
        raise LabelwiseError(f"device {device!r} requested but MPS is not available here")
    return dev


def _input_dtype(model: torch.nn.Module) -> torch.dtype:
    """The dtype of the model's first floating-point parameter (or buffer), else float32.

    Inputs are cast to it, so that a float64 (or float16) model gets inputs it can multiply.
    """
    import torch

    for t in itertools.chain(model.parameters(), model.buffers()):
        if t.is_floating_point():
            return t.dtype
    return torch.float32


def _row_source(
    inputs: Any, model_dtype: torch.dtype
) -> tuple[int, Callable[[int, int], torch.Tensor]]:
    """Number of rows and a function returning rows ``[start, stop)`` in ``model_dtype``."""
    import torch

    if isinstance(inputs, torch.Tensor):
        tensor = inputs
        if tensor.dim() == 0:
            raise LabelwiseError("inputs must have a first axis of rows, got a 0-d tensor")
        if tensor.is_complex():
            raise LabelwiseError(f"inputs must hold real numbers, got dtype {tensor.dtype}")
        n = int(tensor.shape[0])

        def tensor_batch(start: int, stop: int) -> torch.Tensor:
            return tensor[start:stop].detach().to(dtype=model_dtype)

        get: Callable[[int, int], torch.Tensor] = tensor_batch
    else:
        array = inputs
        lazy = hasattr(array, "shape") and hasattr(array, "dtype") and hasattr(array, "__getitem__")
        if not (isinstance(array, np.ndarray) or lazy):
            try:
                array = np.asarray(array)
            except (TypeError, ValueError) as exc:
                raise LabelwiseError(f"inputs must be a numeric array: {exc}") from None
        try:
            dtype = np.dtype(array.dtype)
        except TypeError:
            raise LabelwiseError(f"inputs must hold numbers, got dtype {array.dtype}") from None
        if dtype.kind not in "biuf":
            raise LabelwiseError(f"inputs must hold real numbers, got dtype {dtype}")
        shape = tuple(array.shape)
        if len(shape) == 0:
            raise LabelwiseError("inputs must have a first axis of rows, got a 0-d array")
        n = int(shape[0])

        def array_batch(start: int, stop: int) -> torch.Tensor:
            # a fresh, writable, contiguous copy of just these rows, in the model's dtype
            wide = np.float64 if model_dtype == torch.float64 else np.float32
            rows = np.array(array[start:stop], dtype=wide, order="C", copy=True)
            return torch.from_numpy(rows).to(dtype=model_dtype)

        get = array_batch
    if n == 0:
        raise LabelwiseError("inputs must have at least one row, got 0")
    return n, get


# --------------------------------------------------------------------------- planning


@dataclass(frozen=True)
class _Plan:
    """Which tensor to capture: the input or output of module ``name`` (``None``: none)."""

    name: str | None
    where: str  # "input" or "output"
    explicit: bool  # the user named the layer

    @property
    def label(self) -> str:
        shown = self.name if self.name else "<model>"
        return f"{shown} ({self.where})"


def _is_linear(module: torch.nn.Module) -> bool:
    import torch

    if isinstance(module, torch.nn.Linear):
        return True
    # scripted modules keep the Python class name in ``original_name``
    return getattr(module, "original_name", None) == "Linear"


def _plan(model: torch.nn.Module, layer: str | None) -> _Plan:
    modules = dict(model.named_modules())
    if layer is not None:
        if layer not in modules:
            raise LabelwiseError(_unknown_layer_message(layer, [n for n in modules if n]))
        return _Plan(layer, "output", explicit=True)
    linears = [name for name, module in modules.items() if _is_linear(module)]
    return _Plan(linears[-1] if linears else None, "input", explicit=False)


def _unknown_layer_message(layer: str, names: list[str], shown: int = 8) -> str:
    if not names:
        return f"layer {layer!r} not found: the model has no named submodules"
    close = difflib.get_close_matches(layer, names, n=3)
    picks = close + [n for n in names if n not in close][: max(0, shown - len(close))]
    more = f", ... ({len(names)} modules in all)" if len(names) > len(picks) else ""
    return (
        f"layer {layer!r} is not a module of the model; valid names (from "
        f"model.named_modules()) include {', '.join(repr(n) for n in picks)}{more}"
    )


def _no_linear_message() -> str:
    return (
        "the model has no nn.Linear layer, so there is no default layer to capture: pass "
        "layer='<module name>' (a name from model.named_modules()), or make forward() return "
        "a tuple (features, logits)"
    )


def _single_device(model: torch.nn.Module) -> torch.device | None:
    """The one device holding all parameters and buffers, or None (none, or several)."""
    devices = {t.device for t in itertools.chain(model.parameters(), model.buffers())}
    return next(iter(devices)) if len(devices) == 1 else None


# --------------------------------------------------------------------------- running


def _as_pair(out: Any) -> tuple[torch.Tensor, torch.Tensor] | None:
    """``(features, logits)`` when the model returned a tuple/list of two tensors."""
    import torch

    if (
        isinstance(out, tuple | list)
        and len(out) == 2
        and all(isinstance(t, torch.Tensor) for t in out)
    ):
        return out[0], out[1]
    return None


class _Runner:
    """Runs one batch and returns ``(features, outputs)`` as 2-D tensors.

    Python modules are captured with a hook; TorchScript modules (no hooks) by running their
    children in sequence, verified against ``model(x)`` on the first batch.
    """

    def __init__(self, model: torch.nn.Module, plan: _Plan, head: str) -> None:
        import torch

        self.model = model
        self.plan = plan
        self.head = head
        self.scripted = isinstance(model, torch.jit.ScriptModule)
        self.label = plan.label
        # the default layer of a Python module: the last Linear *executed*, chosen on batch 1
        self._auto = not plan.explicit and not self.scripted and plan.name is not None
        self._seen: list[tuple[str, Any]] = []
        self._handles: list[Any] = []
        self._mode: str | None = None  # "hook", "tuple", "chain" or "root"; set on batch 1

    # hooks ---------------------------------------------------------------------------

    def attach(self) -> None:
        plan = self.plan
        if self.scripted or plan.name is None or plan.name == "":
            return
        if self._auto:
            # record every Linear's input in execution order; batch 1 picks the last one
            for name, module in self.model.named_modules():
                if _is_linear(module):
                    self._hook(name, module, "input")
        else:
            self._hook(plan.name, dict(self.model.named_modules())[plan.name], plan.where)

    def _hook(self, name: str, module: torch.nn.Module, where: str) -> None:
        seen = self._seen

        def pre_hook(_module: torch.nn.Module, args: tuple[Any, ...]) -> None:
            seen.append((name, args[0] if args else None))

        def post_hook(_module: torch.nn.Module, _args: tuple[Any, ...], output: Any) -> None:
            seen.append((name, output))

        try:
            if where == "input":
                self._handles.append(module.register_forward_pre_hook(pre_hook))
            else:
                self._handles.append(module.register_forward_hook(post_hook))
        except (RuntimeError, NotImplementedError) as exc:  # e.g. a scripted submodule
            raise LabelwiseError(
                f"cannot hook layer {name!r} ({_short(exc)}); {_TUPLE_HINT}"
            ) from exc

    def detach(self) -> None:
        while self._handles:
            self._handles.pop().remove()
        self._seen.clear()

    def _choose_executed_linear(self) -> None:
        """Batch 1 of the default layer: keep the last Linear that ran, hook only it."""
        ran = [name for name, _ in self._seen]
        if not ran:
            raise LabelwiseError(
                "no nn.Linear layer ran in the model's forward(), so there is no default "
                "layer to capture: pass layer='<module name>' (a name from "
                "model.named_modules()), or make forward() return a tuple (features, logits)"
            )
        chosen = ran[-1]
        kept = [entry for entry in self._seen if entry[0] == chosen]
        self.detach()
        self._seen.extend(kept)
        self._auto = False
        self.plan = _Plan(chosen, "input", explicit=False)
        self.label = self.plan.label
        self.attach()

    def _call(self, x: torch.Tensor) -> Any:
        """``model(x)``; an error of the model becomes a :class:`LabelwiseError` saying the
        input shape given and, where it can be read off the first layer, the one expected."""
        try:
            return self.model(x)
        except LabelwiseError:
            raise
        except Exception as exc:
            expected = _expected_input(self.model)
            wanted = f"; the model's first layer {expected}" if expected else ""
            raise LabelwiseError(
                f"the model failed on inputs of shape {tuple(x.shape)} (rows first, dtype "
                f"{str(x.dtype).removeprefix('torch.')}){wanted}: {type(exc).__name__}: "
                f"{_short(exc)}"
            ) from exc

    # one batch -----------------------------------------------------------------------

    def __call__(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        if self._mode is None:
            feats, out = self._first(x)
        elif self._mode == "chain":
            feats, out = self._chain(x)
        else:
            feats, out = self._forward(x)
        rows = int(x.shape[0])
        return self._features(feats, rows), self._outputs(out, rows)

    def _first(self, x: torch.Tensor) -> tuple[Any, Any]:
        import torch

        plan = self.plan
        if not self.scripted:
            feats, out = self._forward(x)
            self._mode = "tuple" if self.label == _TUPLE_LABEL else "hook"
            return feats, out
        reference = self._call(x)
        pair = _as_pair(reference)
        if pair is not None and not plan.explicit:
            self._mode, self.label = "tuple", _TUPLE_LABEL
            return pair
        if plan.name is None:
            raise LabelwiseError(_no_linear_message())
        if plan.name == "":
            self._mode = "root"
            return x, reference
        self._mode = "chain"
        try:
            feats, out = self._chain(x)
        except LabelwiseError:
            raise
        except Exception as exc:
            why = f"running its children failed: {_short(exc)}"
            raise LabelwiseError(self._chain_failure(why)) from exc
        same = (
            isinstance(reference, torch.Tensor)
            and isinstance(out, torch.Tensor)
            and out.shape == reference.shape
            and torch.allclose(
                out.float(), reference.float(), rtol=1e-5, atol=_CHAIN_ATOL, equal_nan=True
            )
        )
        if not same:
            raise LabelwiseError(
                self._chain_failure("its children applied in order do not reproduce forward()")
            )
        return feats, reference

    def _chain_failure(self, why: str) -> str:
        return (
            f"cannot capture layer {self.plan.label!r} of this TorchScript model: TorchScript "
            f"modules do not support hooks, and the fallback of running the model's child "
            f"modules one after another does not work here ({why}); {_TUPLE_HINT}"
        )

    def _forward(self, x: torch.Tensor) -> tuple[Any, Any]:
        """Plain ``model(x)``, features from the hook or from a ``(features, logits)`` tuple."""
        self._seen.clear()
        out = self._call(x)
        pair = _as_pair(out)
        if pair is not None and not self.plan.explicit:
            self.label = _TUPLE_LABEL
            return pair
        if pair is not None:
            out = pair[1]
        if self._auto:
            self._choose_executed_linear()
        plan = self.plan
        if plan.name is None:
            raise LabelwiseError(_no_linear_message())
        if plan.name == "":
            return x, out
        if not self._seen:
            raise LabelwiseError(
                f"layer {plan.label!r} was not run by the model's forward(); pass another "
                "layer= (a module that forward() calls)"
            )
        if len(self._seen) > 1:
            raise LabelwiseError(
                f"layer {plan.label!r} runs {len(self._seen)} times per forward(), so its "
                "tensor is ambiguous; pass another layer="
            )
        return self._seen[0][1], out

    def _chain(self, x: torch.Tensor) -> tuple[Any, Any]:
        assert self.plan.name  # chain mode has a named, non-root target
        found: list[Any] = []
        out = _run_chain(self.model, x, self.plan.name.split("."), self.plan.where, found)
        if len(found) != 1:
            raise LabelwiseError(
                self._chain_failure(f"layer reached {len(found)} times, expected once")
            )
        return found[0], out

    # shaping -------------------------------------------------------------------------

    def _features(self, feats: Any, rows: int) -> torch.Tensor:
        import torch

        if not isinstance(feats, torch.Tensor):
            raise LabelwiseError(
                f"the captured layer {self.label!r} gave a {type(feats).__name__}, not a "
                "tensor; pass layer= naming a module whose output is a single tensor"
            )
        if feats.dim() == 0 or feats.shape[0] != rows:
            raise LabelwiseError(
                f"the captured layer {self.label!r} has shape {tuple(feats.shape)}, expected "
                f"{rows} rows first (one per input row)"
            )
        return feats.reshape(rows, -1)

    def _outputs(self, out: Any, rows: int) -> torch.Tensor:
        import torch

        if not isinstance(out, torch.Tensor):
            raise LabelwiseError(
                f"the model returned a {type(out).__name__}; expected a tensor of outputs or "
                "a tuple (features, logits)"
            )
        if out.dim() == 0 or out.shape[0] != rows:
            raise LabelwiseError(
                f"the model output has shape {tuple(out.shape)}, expected {rows} rows first"
            )
        if self.head == "raw":
            return out.reshape(rows, -1)
        if out.dim() != 2 or out.shape[1] < 2:
            raise LabelwiseError(
                f"head='softmax' needs model outputs of shape (rows, classes) with at least 2 "
                f"classes, got {tuple(out.shape)}; use head='raw' for other outputs (e.g. a "
                "single sigmoid logit or a regression)"
            )
        return out


def _expected_input(model: torch.nn.Module) -> str | None:
    """What the model's first parameterised layer takes, e.g. ``"'fc' is
    Linear(in_features=64): it expects inputs of shape (rows, ..., 64)"``, or None when it
    cannot be read off (also for TorchScript submodules, via their ``original_name``)."""
    for name, module in model.named_modules():
        kind = getattr(module, "original_name", None) or type(module).__name__
        shown = repr(name) if name else "the model"
        in_features = getattr(module, "in_features", None)
        if kind == "Linear" and isinstance(in_features, int):
            return (
                f"{shown} is Linear(in_features={in_features}): it expects inputs of shape "
                f"(rows, ..., {in_features})"
            )
        in_channels = getattr(module, "in_channels", None)
        dims = {"Conv1d": 1, "Conv2d": 2, "Conv3d": 3}.get(kind)
        if dims is not None and isinstance(in_channels, int):
            spatial = ", ".join(["..."] * dims)
            return (
                f"{shown} is {kind}(in_channels={in_channels}): it expects inputs of shape "
                f"(rows, {in_channels}, {spatial})"
            )
        if next(iter(module.parameters(recurse=False)), None) is not None:
            return None  # some other first layer: nothing safe to say
    return None


def _run_chain(
    module: torch.nn.Module, x: Any, path: list[str], where: str, found: list[Any]
) -> Any:
    """Apply ``module``'s children in order, recording the input/output of ``path``."""
    for name, child in module.named_children():
        if path and name == path[0]:
            if len(path) == 1:
                if where == "input":
                    found.append(x)
                x = child(x)
                if where == "output":
                    found.append(x)
            else:
                x = _run_chain(child, x, path[1:], where, found)
        else:
            x = child(x)
    return x


def _store(
    dest: NDArray[np.float32], values: torch.Tensor, start: int, what: str, label: str
) -> None:
    import torch

    stop = start + int(values.shape[0])
    if values.shape[1] != dest.shape[1]:
        raise LabelwiseError(
            f"{what} of rows {start}-{stop - 1} have {values.shape[1]} columns but earlier "
            f"rows had {dest.shape[1]} (layer {label!r}); inputs must all have the same shape"
        )
    block = values.detach().to(device="cpu", dtype=torch.float32).numpy()
    if what == "activations" and not np.isfinite(block).all():
        row = start + int(np.argwhere(~np.isfinite(block))[0][0])
        raise LabelwiseError(
            f"the captured layer {label!r} is NaN or infinite at row {row}; "
            "check the inputs for NaN/inf"
        )
    dest[start:stop] = block


# --------------------------------------------------------------------------- softmax


def _looks_like_probabilities(outputs: NDArray[np.float32]) -> bool:
    if not np.isfinite(outputs).all() or outputs.min() < 0:
        return False
    sums = outputs.sum(axis=1, dtype=np.float64)
    return bool(np.abs(sums - 1.0).max() <= _PROBABILITY_ATOL)


def _softmax_rows_inplace(outputs: NDArray[np.float32]) -> None:
    for start in range(0, outputs.shape[0], _SOFTMAX_CHUNK_ROWS):
        block = outputs[start : start + _SOFTMAX_CHUNK_ROWS].astype(np.float64)
        block -= block.max(axis=1, keepdims=True)
        np.exp(block, out=block)
        block /= block.sum(axis=1, keepdims=True)
        outputs[start : start + _SOFTMAX_CHUNK_ROWS] = block


def _first_nonfinite_row(arr: NDArray[np.float32]) -> int | None:
    ok = np.isfinite(arr).all(axis=1)
    return None if ok.all() else int(np.argmin(ok))

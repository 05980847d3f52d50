"""PyTorch adapter: run a model once and capture a hidden layer and its outputs as NumPy.

This is the only module of labelwise that uses torch, and it imports torch lazily inside the
functions: importing this module works without torch, calling it raises
:class:`~labelwise.exceptions.MissingDependencyError`.

Models come as people save them (:func:`load_model`): a TorchScript file (``torch.jit.save``,
any ``forward``), a pickled ``nn.Module`` (``torch.save(model)``), a ``torch.export`` program
(``.pt2``), or a ``state_dict`` / checkpoint plus the model class (``model_class=``).

Examples
--------
>>> from labelwise.adapters.torch import capture
>>> cap = capture(model, x_operational)  # doctest: +SKIP
>>> cap.activations.shape, cap.outputs.shape  # doctest: +SKIP
((10000, 84), (10000, 10))
"""

from __future__ import annotations

import contextlib
import difflib
import importlib
import itertools
import json
import os
import re
import sys
import warnings
import zipfile
from collections.abc import Callable, Collection, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from .._deps import require
from .._progress import progress_bar
from .._validation import check_int, did_you_mean
from ..exceptions import LabelwiseError, user_stacklevel
from ._capture import (
    Capture,
    CaptureWriter,
    array_rows,
    check_head,
    check_logits_output,
    head_outputs,
    model_file,
    one_output,
    pair_roles,
    parse_classes,
    probability_tolerance,
    single_output_message,
    warn_one_output,
)
from ._torch_graph import GraphTap, is_exported, tap_exported, tap_scripted

if TYPE_CHECKING:
    import torch

__all__ = ["Capture", "capture", "load_model"]

_TUPLE_PREFIX = "output["  # the label of features taken from a model's tuple output
_TUPLE_HINT = (
    "pass the Python nn.Module instead, or save a TorchScript model whose forward() returns "
    "a tuple (features, logits)"
)
_STATE_KEYS = ("state_dict", "model_state_dict", "model", "net")
#: what :func:`load_model` found in a file, recorded in capture.json
MODEL_KINDS = ("torchscript", "pickle", "state-dict", "export", "module")


def _require_torch() -> None:
    """Raise :class:`MissingDependencyError` when torch cannot be imported."""
    require("torch", "the PyTorch adapter", extra="torch")


def load_model(
    path: str | os.PathLike[str],
    *,
    model_class: str | type | None = None,
    model_kwargs: Mapping[str, Any] | None = None,
) -> torch.nn.Module:
    """Load a model saved as TorchScript, a pickled module, a ``.pt2`` or a ``state_dict``.

    * ``model_class`` given: ``path`` holds a ``state_dict``, or a checkpoint dict with one
      under ``"state_dict"`` / ``"model_state_dict"`` (read with ``weights_only=True``; a
      trusted checkpoint holding other objects is read with ``weights_only=False`` when the
      environment variable ``LABELWISE_TRUST_CHECKPOINT=1`` is set; a ``module.`` / ``model.``
      prefix of DataParallel or Lightning is removed);
      the model is ``model_class(**model_kwargs)`` with those weights (strict).
      ``model_class`` is a class or ``"package.module:Class"``, imported with the current
      directory on ``sys.path``.
    * a ``.pt2`` file: ``torch.export.load(path).module()``.
    * otherwise TorchScript is tried first (``torch.jit.load``), then
      ``torch.load(path, weights_only=False)`` of a whole pickled module, with the current
      directory on ``sys.path`` so that its class can be imported from there.

    .. warning::
        Unpickling runs arbitrary code: load only files you trust.

    Parameters
    ----------
    path:
        The model file.
    model_class, model_kwargs:
        The class (and its keyword arguments) that the ``state_dict`` in ``path`` belongs to.

    Returns
    -------
    torch.nn.Module
        The model, on the CPU (a ``torch.jit.ScriptModule`` for TorchScript files).

    Raises
    ------
    LabelwiseError
        The file is missing, corrupt, holds something other than a model (e.g. a
        ``state_dict`` without ``model_class``), the pickled model's class cannot be imported
        (the message names the module and class), or the weights do not fit the class.
    MissingDependencyError
        torch is not installed.
    """
    return _load(path, model_class=model_class, model_kwargs=model_kwargs)[0]


def _load(
    path: str | os.PathLike[str],
    *,
    model_class: str | type | None = None,
    model_kwargs: Mapping[str, Any] | None = None,
    names: tuple[str, str] = ("model_class", "model_kwargs"),
) -> tuple[torch.nn.Module, str]:
    """:func:`load_model` and the kind of file it was (one of :data:`MODEL_KINDS`).
    ``names``: what the errors call ``model_class`` and ``model_kwargs`` (the CLI's flags)."""
    _require_torch()
    import torch

    where = model_file(path, "a file")
    if where.lower().endswith(".onnx"):
        raise LabelwiseError(
            f"{where!r} is an ONNX model, but this takes PyTorch models only (TorchScript, a "
            "pickled nn.Module, a .pt2 or a state_dict); ONNX models are read by "
            "'labelwise capture' (labelwise.adapters.onnx), whose activations and "
            "probabilities the other commands take"
        )
    if model_kwargs is not None and model_class is None:
        raise LabelwiseError("model_kwargs needs model_class (the class they are passed to)")
    if model_class is not None:
        return _from_state_dict(where, model_class, model_kwargs or {}, names), "state-dict"
    if where.lower().endswith(".pt2"):
        return _from_export(where), "export"

    try:
        with warnings.catch_warnings():
            # torch >= 2.9 deprecates TorchScript; the user chose the file format, not us.
            warnings.filterwarnings(
                "ignore", message=r".*torch\.jit.*deprecated", category=DeprecationWarning
            )
            scripted: torch.nn.Module = torch.jit.load(where, map_location="cpu")
        return scripted, "torchscript"
    except Exception as exc:
        jit_error = _short(exc)

    try:
        with _cwd_on_path():
            obj = torch.load(where, map_location="cpu", weights_only=False)
    except Exception as exc:
        other = _not_a_torch_file(where)
        if other:
            # e.g. a text file unpickles as a GLOBAL of module 'at' (from "cat\ndog")
            raise LabelwiseError(f"{where!r} is not a PyTorch model file: {other}") from exc
        if isinstance(exc, ModuleNotFoundError | AttributeError):
            raise LabelwiseError(_unimportable_message(where, exc)) from exc
        raise LabelwiseError(
            f"could not load a model from {where!r}: it is neither a TorchScript file "
            f"(torch.jit.load: {jit_error}) nor a pickled torch.nn.Module "
            f"(torch.load: {_short(exc)})"
        ) from exc
    if isinstance(obj, torch.nn.Module):
        return obj, "pickle"
    if isinstance(obj, Mapping):
        raise LabelwiseError(
            f"{where!r} holds {_a(type(obj).__name__)} (a state_dict or checkpoint?), not a "
            "model: pass the class it belongs to, model_class='package.module:Class' "
            "(CLI: --model-class package.module:Class --state-dict FILE, and --model-kwargs "
            "'{...}' for its arguments)"
        )
    raise LabelwiseError(f"{where!r} holds {_a(type(obj).__name__)}, not a torch.nn.Module")


def _a(name: str) -> str:
    """``"a dict"``, ``"an OrderedDict"``: the article by the name's first letter."""
    return ("an " if name[:1].lower() in "aeiou" else "a ") + name


@contextlib.contextmanager
def _cwd_on_path(folder: str | None = None) -> Iterator[None]:
    """The current directory (or ``folder``) first on ``sys.path`` (as ``python -m`` has it),
    then restored."""
    cwd = os.getcwd() if folder is None else folder
    added = cwd not in sys.path
    if added:
        sys.path.insert(0, cwd)
    try:
        yield
    finally:
        if added:
            with contextlib.suppress(ValueError):
                sys.path.remove(cwd)


def _unimportable_message(where: str, exc: BaseException) -> str:
    text = str(exc)
    if isinstance(exc, ModuleNotFoundError):
        module = exc.name or text
        what = f"its class is defined in module {module!r}, which cannot be imported"
    elif "Can't get attribute" in text:
        # "Can't get attribute 'Net' on <module '__main__' from 'train.py'>"
        what = f"its class cannot be found ({_short(exc)})"
        if "__main__'" in text:
            what += (
                "; the class was defined in the script that saved the model, so the pickle "
                "refers to __main__"
            )
    else:
        what = f"unpickling failed ({type(exc).__name__}: {_short(exc)})"
    return (
        f"cannot load the pickled model {where!r}: {what}. Run labelwise from the directory "
        "that holds the class's module (it is put on sys.path), or save the weights with "
        "torch.save(model.state_dict(), FILE) and load them with model_class="
        "'package.module:Class' (CLI: --model-class package.module:Class --state-dict FILE)"
    )


def _import_class(spec: str | type, name: str = "model_class") -> type:
    """``"package.module:Class"`` (or ``package.module.Class``) -> the class; ``name`` is what
    the errors call the spec (``--model-class`` in the CLI)."""
    if isinstance(spec, type):
        return spec
    if not isinstance(spec, str) or not spec.strip():
        raise LabelwiseError(f"{name} must be a class or 'package.module:Class', got {spec!r}")
    text = spec.strip()
    if ":" in text:
        module_name, _, attr = text.partition(":")
    else:
        module_name, _, attr = text.rpartition(".")
    if not module_name or not attr:
        raise LabelwiseError(f"{name} must look like 'package.module:Class', got {spec!r}")
    folder = None
    if module_name.endswith(".py") or "/" in module_name or os.sep in module_name:
        # a path to the module's file, e.g. "./mymod", "mymod.py", "models/net.py"
        file = module_name if module_name.endswith(".py") else module_name + ".py"
        if not os.path.isfile(file):
            raise LabelwiseError(
                f"{name} {spec!r}: no Python file {file!r}; pass 'module:Class' (a module "
                "importable from the current directory) or 'path/to/module.py:Class'"
            )
        folder = os.path.dirname(os.path.abspath(file))
        module_name = os.path.splitext(os.path.basename(file))[0]
    try:
        with _cwd_on_path(folder):
            module = importlib.import_module(module_name)
    except ImportError as exc:
        raise LabelwiseError(
            f"cannot import module {module_name!r} for {name} {spec!r} ({exc}); run from "
            f"the directory that holds {module_name.replace('.', '/')}.py, or add its "
            "directory to PYTHONPATH"
        ) from exc
    except Exception as exc:  # the module itself fails, or a name import_module refuses
        raise LabelwiseError(
            f"cannot import module {module_name!r} for {name} {spec!r}: "
            f"{type(exc).__name__}: {_short(exc)}"
        ) from exc
    obj: Any = module
    for part in attr.split("."):
        if not hasattr(obj, part):
            names = [n for n in dir(module) if isinstance(getattr(module, n, None), type)]
            close = difflib.get_close_matches(part, names, n=3)
            hint = f"; did you mean {', '.join(close)}?" if close else ""
            raise LabelwiseError(
                f"{name} {spec!r}: module {module_name!r} has no class {attr!r}{hint}"
            )
        obj = getattr(obj, part)
    if not isinstance(obj, type):
        raise LabelwiseError(f"{name} {spec!r} is a {type(obj).__name__}, not a class")
    return obj


def _from_state_dict(
    where: str,
    model_class: str | type,
    model_kwargs: Mapping[str, Any],
    names: tuple[str, str] = ("model_class", "model_kwargs"),
) -> torch.nn.Module:
    import torch

    class_name, kwargs_name = names
    cls = _import_class(model_class, class_name)
    if not isinstance(model_kwargs, Mapping):
        raise LabelwiseError(f"{kwargs_name} must be a dict, got {type(model_kwargs).__name__}")
    how = (
        "--model-kwargs '{\"name\": value}'"
        if kwargs_name.startswith("--")
        else "model_kwargs (CLI: --model-kwargs '{\"name\": value}')"
    )
    try:
        model = cls(**dict(model_kwargs))
    except Exception as exc:
        raise LabelwiseError(
            f"could not build {cls.__name__}(**{dict(model_kwargs)!r}): {type(exc).__name__}: "
            f"{_short(exc)}; pass its constructor arguments as {how}"
        ) from exc
    if not isinstance(model, torch.nn.Module):
        raise LabelwiseError(f"{cls.__name__}(...) is a {type(model).__name__}, not an nn.Module")
    trusted = os.environ.get(TRUST_ENV, "") == "1"
    try:
        obj = torch.load(where, map_location="cpu", weights_only=not trusted)
    except Exception as exc:
        raise LabelwiseError(_unreadable_state_message(where, exc)) from exc
    state = _state_of(obj, where)
    own = model.state_dict()
    state = _without_prefix(state, set(own))
    try:
        model.load_state_dict(state, strict=True)
    except RuntimeError as exc:
        expected = set(own)
        missing = sorted(expected - set(state))
        unexpected = sorted(set(state) - expected)
        parts = []
        if missing:
            parts.append(f"missing {_few(missing)}")
        if unexpected:
            parts.append(f"unexpected {_few(unexpected)}")
        for key in own:
            got = getattr(state.get(key), "shape", None)
            if got is not None and tuple(got) != tuple(own[key].shape):
                parts.append(
                    f"size mismatch for {key!r}: the file has {tuple(got)}, the model "
                    f"{tuple(own[key].shape)}"
                )
                break
        detail = "; ".join(parts) if parts else _short(exc)
        raise LabelwiseError(
            f"the weights in {where!r} do not fit {cls.__name__}(**{dict(model_kwargs)!r}): "
            f"{detail}; check {class_name} and {kwargs_name} (e.g. layer sizes)"
        ) from exc
    return model


#: set to 1 to read a trusted checkpoint that holds more than tensors (weights_only=False)
TRUST_ENV = "LABELWISE_TRUST_CHECKPOINT"
_PREFIXES = ("module.", "model.", "net.", "_orig_mod.")  # DataParallel, Lightning, compile


def _without_prefix(state: dict[str, Any], expected: set[str]) -> dict[str, Any]:
    """``state`` with a wrapper's key prefix removed (``module.`` of DataParallel, ``model.``
    of a Lightning module, ...) when every key has it and the model's keys do not."""
    for prefix in _PREFIXES:
        if state and all(k.startswith(prefix) for k in state) and set(state) != expected:
            stripped = {k.removeprefix(prefix): v for k, v in state.items()}
            if prefix == "module." or set(stripped) & expected:
                return _without_prefix(stripped, expected)
    return state


def _unreadable_state_message(where: str, exc: BaseException) -> str:
    """One line on why ``torch.load(weights_only=True)`` failed, without torch's ANSI codes."""
    text = re.sub(r"\x1b\[[0-9;]*m", "", str(exc))
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    detail = next((line for line in lines if "Unsupported global" in line), None)
    if detail is not None:
        detail = detail.split(". Please")[0]
    if detail is None:
        detail = lines[0] if lines else type(exc).__name__
    if len(detail) > 200:
        detail = detail[:197] + "..."
    if "weights only" not in text.lower() and "weights_only" not in text:
        return (
            f"could not read a state_dict from {where!r} (torch.load: {detail}); save one with "
            "torch.save(model.state_dict(), FILE)"
        )
    return (
        f"could not read a state_dict from {where!r}: it holds more than tensors, which "
        f"torch.load(weights_only=True) refuses ({detail}). Re-save just the weights with "
        f"torch.save(model.state_dict(), FILE), or, only if you trust the file (unpickling runs "
        f"its code), set {TRUST_ENV}=1 to load it with weights_only=False"
    )


def _state_of(obj: Any, where: str) -> dict[str, Any]:
    import torch

    if isinstance(obj, Mapping):
        if obj and all(isinstance(v, torch.Tensor) for v in obj.values()):
            return dict(obj)
        for key in _STATE_KEYS:
            inner = obj.get(key)
            if isinstance(inner, Mapping) and all(
                isinstance(v, torch.Tensor) for v in inner.values()
            ):
                return dict(inner)
        keys = ", ".join(repr(k) for k in list(obj)[:8])
        raise LabelwiseError(
            f"{where!r} holds a dict without a state_dict (keys: {keys}); expected the "
            f"tensors themselves or a checkpoint with one of the keys {list(_STATE_KEYS)}"
        )
    raise LabelwiseError(f"{where!r} holds {_a(type(obj).__name__)}, not a state_dict")


def _few(names: list[str], shown: int = 5) -> str:
    more = f" and {len(names) - shown} more" if len(names) > shown else ""
    return ", ".join(repr(n) for n in names[:shown]) + more


def _from_export(where: str) -> torch.nn.Module:
    """The module of a ``torch.export`` program. torch logs the traceback of a file it
    cannot read (e.g. a state_dict saved as ``.pt2``) and raises "check the warnings above":
    the log is held back and its error given instead, and a file torch.save or
    torch.jit.save wrote is named as such."""
    import logging

    import torch

    class _Held(logging.Handler):
        def __init__(self) -> None:
            super().__init__()
            self.errors: list[BaseException] = []

        def emit(self, record: logging.LogRecord) -> None:
            if record.exc_info and record.exc_info[1] is not None:
                self.errors.append(record.exc_info[1])

    log = logging.getLogger("torch.export")  # torch gives it its own stderr handler
    held = _Held()
    handlers, propagate = list(log.handlers), log.propagate
    log.handlers, log.propagate = [held], False
    try:
        program = torch.export.load(where)
        module: torch.nn.Module = program.module()
    except Exception as exc:
        other = _saved_otherwise(where)
        if other:
            raise LabelwiseError(f"{where!r} is not a torch.export program: {other}") from exc
        why = held.errors[-1] if held.errors else exc
        raise LabelwiseError(
            f"could not load the torch.export program {where!r} (torch.export.load: "
            f"{_short(why)}); save it with torch.export.save(torch.export.export(model, "
            "(x,)), FILE)"
        ) from exc
    finally:
        log.handlers, log.propagate = handlers, propagate
    return module


def _not_a_torch_file(where: str) -> str:
    """What a file that neither torch.save nor torch.jit.save wrote looks like (they write a
    zip archive, or before torch 1.6 a pickle): a NumPy array, an image, text; else ``""``."""
    try:
        with open(where, "rb") as fh:
            head = fh.read(512)
    except OSError:
        return ""
    if head.startswith((b"PK\x03\x04", b"\x80")) or not head:
        return ""
    swapped = " (--model and --inputs swapped?)"
    if head.startswith(b"\x93NUMPY"):
        return f"it is a NumPy array (.npy){swapped}"
    if head.startswith((b"\x89PNG", b"\xff\xd8\xff", b"GIF8", b"BM")):
        return f"it is an image{swapped}"
    try:
        head.decode("utf-8")
    except UnicodeDecodeError as exc:
        if exc.start < len(head) - 3:  # not a character cut at the end of the 512 bytes
            return ""
    if b"\x00" in head:
        return ""
    return "it is a text file (models are saved by torch.save, torch.jit.save, torch.onnx.export)"


def _saved_otherwise(where: str) -> str:
    """For a ``.pt2`` that is no torch.export program: what torch.save or torch.jit.save wrote
    it (read from the zip's names, nothing unpickled), and how to give it; else ``""``."""
    try:
        with zipfile.ZipFile(where) as zf:
            names = zf.namelist()
    except (OSError, zipfile.BadZipFile):
        return ""
    if any("/code/" in n for n in names):
        return "it is a TorchScript file (torch.jit.save): give it a .pt suffix"
    if any(n.endswith("/data.pkl") for n in names):
        return (
            "torch.save wrote it (a state_dict, a checkpoint or a pickled module?): give a "
            "state_dict as --state-dict FILE with --model-class pkg.module:Class (Python: "
            "model_class=), a pickled module with a .pt suffix"
        )
    return ""


def parse_model_kwargs(text: str | None) -> dict[str, Any] | None:
    """The JSON object of ``--model-kwargs`` (``None`` stays ``None``)."""
    if text is None:
        return None
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise LabelwiseError(
            f"--model-kwargs must be a JSON object such as '{{\"hidden\": 32}}' ({exc})"
        ) from None
    if not isinstance(value, dict):
        raise LabelwiseError(
            f"--model-kwargs must be a JSON object such as '{{\"hidden\": 32}}', got {text!r}"
        )
    return value


def capture(
    model: torch.nn.Module | str | os.PathLike[str],
    inputs: Any,
    *,
    layer: str | None = None,
    head: str | None = None,
    batch_size: int = 256,
    device: str | torch.device = "cpu",
    progress: bool = True,
    out: str | os.PathLike[str] | None = None,
    logits_output: int | str | None = None,
) -> Capture:
    """Run ``model`` over ``inputs`` once and capture a hidden layer and the outputs.

    The model is put in eval mode and run under ``torch.no_grad()`` in batches; its
    per-module training flags, its device and its hooks are restored afterwards.

    Parameters
    ----------
    model:
        A ``torch.nn.Module``, or the path of a TorchScript / pickled / ``.pt2`` model file
        (see :func:`load_model`).
    inputs:
        A NumPy array (memory maps are read batch by batch), a tensor, any array-like with
        ``shape`` (or ``len``) and slicing that returns an array (h5py, zarr, labelwise piles),
        or a ``torch.utils.data.Dataset`` / ``DataLoader`` yielding tensors or ``(x, y)``
        tuples (a Dataset is read in order, ``batch_size`` rows at a time). The first axis is
        the rows; each batch is converted to the dtype of the model's first floating-point
        parameter (float32 for most models, float64 for a ``model.double()``; int64 token ids for a
        model whose first layer is an ``nn.Embedding``) and passed as
        ``model(batch)``.
    layer:
        ``None`` (default) captures the *input* of the last ``nn.Linear`` that runs in the
        forward pass (found with pre-hooks on the first batch; for TorchScript and
        ``torch.export`` models, the last ``linear`` operation of the forward graph that feeds
        the output), i.e. the last hidden representation before the classification head;
        ``Capture.layer`` names it. A name from ``model.named_modules()`` (e.g.
        ``"features.3"``) captures the *output* of that module. A model whose
        forward returns a tuple ``(features, logits)`` needs no layer: ``features`` is
        captured.
    head:
        ``"softmax"``: the model returns logits, and ``outputs`` are their softmax over the
        classes (outputs that are already probabilities - non-negative rows summing to 1 - are
        kept as they are; decided on the first batch, within a tolerance that follows the
        output dtype). One output per row (shape ``(N,)`` or ``(N, 1)``: a binary classifier)
        gives ``[1 - p, p]``: ``p`` the output itself when it lies in [0, 1] on every row (a
        final sigmoid), else ``sigmoid(output)`` (a logit). ``"raw"``: ``outputs`` are the
        model outputs unchanged (a regression). ``None`` (default): ``"softmax"``, with a
        ``UserWarning`` when the model has one output per row, which may as well be a
        regression's.
    batch_size:
        Rows per forward pass (>= 1). Does not change the result.
    device:
        Where to run, e.g. ``"cpu"``, ``"cuda"``, ``"cuda:1"``. A model whose parameters are
        all on one other device is moved there for the pass and moved back afterwards; a model
        spread over several devices is left where it is.
    progress:
        Show a tqdm progress bar over the batches (also off when the environment variable
        ``LABELWISE_NO_PROGRESS=1``).
    out:
        ``None``: the arrays are kept in memory. A directory: each batch is written straight
        to ``activations.npy``, ``probabilities.npy`` (``outputs.npy`` with ``head="raw"``)
        and ``predictions.npy`` there (memory-mapped, under temporary names renamed into
        place at the end, so an error leaves no partial file), and the result's arrays are
        read-only memory maps of those files: a pile larger than RAM can be captured.

    logits_output:
        For a model returning two tensors: which one (0 or 1) holds the class scores; the
        other is captured as the features unless ``layer`` is given. ``None`` (default)
        decides by shape: a 1-D or integer output is a predicted label (ignored; the
        features come from ``layer`` or the default layer), otherwise the wider output is
        the features and the narrower one the logits, and two outputs whose roles cannot be
        told apart (the second wider than the first) are an error naming their shapes.
        For a model returning a dict (HuggingFace style, ``{"logits": ...}``): the key of the
        class scores; ``None`` takes ``"logits"``, else the dict's one floating-point tensor
        of shape (rows, C), with a ``UserWarning`` saying so, and is an error listing the keys
        when there is no such one. For a tuple of three or more outputs: the index of the
        class scores (``None``: its one (rows, C) tensor, as for a dict). The features of a
        dict or such a tuple come from ``layer`` or the default layer.

    Returns
    -------
    Capture
        float32 ``activations`` ``(N, m)`` and ``outputs`` ``(N, C)``; ``classes`` from a
        ``classes`` attribute of the model (a list of names), if any.

    Raises
    ------
    LabelwiseError
        Invalid arguments, empty inputs, an unknown layer, a model without ``nn.Linear`` and
        no ``layer``, a model that fails on the inputs (e.g. a wrong input shape: the message
        gives the shape passed, the shape the first layer expects and the model's error),
        non-finite results, or a compiled (TorchScript / export) model whose layer cannot be
        reached (the message says why).
    MissingDependencyError
        torch is not installed.

    Notes
    -----
    Hooks do not fire inside TorchScript and ``torch.export`` models, whatever their
    ``forward`` does. For them the hidden tensor is exposed in the graph itself: the forward
    graph is inlined (each operation remembers the module it came from) and the wanted value
    is returned as an extra output (see :mod:`labelwise.adapters._torch_graph`).
    """
    _require_torch()
    import torch

    head, inferred = check_head(head)
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
    n_rows, batches = _batches(inputs, dtype, batch_size)
    plan = _plan(model, layer)
    classes = _model_classes(model)

    # an exported program is frozen in the mode it was exported in (no eval()/train())
    frozen = is_exported(model)
    logits_output = check_logits_output(logits_output)
    runner = _Runner(model, plan, head, logits_output)
    # a function made from a TorchScript graph records autograd even under no_grad(): switch
    # the parameters' requires_grad off for the pass (restored afterwards)
    with CaptureWriter(n_rows, head=head, out=out) as writer:
        with _evaluating(model, target_device, set_eval=not frozen, freeze=runner.scripted):
            try:
                runner.attach()
                n_batches = -(-n_rows // batch_size)
                bar = progress_bar(
                    n_batches, desc="labelwise capture", unit="batch", enabled=progress
                )
                done = 0
                with bar, torch.no_grad():
                    for x in batches():
                        feats, outs, eps = runner(x.to(target_device))
                        writer.write(done, feats, outs, runner.label, eps=eps)
                        done += int(x.shape[0])
                        bar.update(1)
            finally:
                runner.detach()
        activations, outputs = writer.finish(runner.label, rows=done)
    if inferred and runner.one_output:
        warn_one_output(probability=bool(writer.binary_probability))
    if classes is not None and outputs.shape[1] != len(classes):
        classes = None  # a `classes` attribute that does not describe the outputs
    return Capture(
        activations=activations,
        outputs=outputs,
        layer=runner.label,
        head=head,
        classes=classes,
        probabilities_given=writer.probabilities,
        binary_probability=writer.binary_probability,
    )


def _numpy(values: torch.Tensor) -> np.ndarray:
    import torch

    return values.detach().to(device="cpu", dtype=torch.float32).numpy()


def _exact_numpy(values: torch.Tensor) -> np.ndarray:
    """``values`` on the CPU as NumPy, every value kept (bfloat16, which NumPy lacks, as
    float32)."""
    import torch

    values = values.detach().to(device="cpu")
    if values.dtype == torch.bfloat16:
        values = values.to(dtype=torch.float32)
    return values.numpy()


def _eps(values: torch.Tensor) -> float:
    """The machine epsilon of the dtype the model computed ``values`` in (0 for integers)."""
    import torch

    return float(torch.finfo(values.dtype).eps) if values.is_floating_point() else 0.0


def class_probabilities(out: torch.Tensor, dtype: torch.dtype | None = None) -> torch.Tensor:
    """Class probabilities from a classifier's (rows, classes) outputs, as :func:`capture`
    reads them: the softmax of logits, or the outputs themselves when every row already is a
    probability vector (non-negative, summing to 1 within :func:`probability_tolerance` of the
    dtype the model computed in). ``dtype``: compute in this dtype (default: the outputs').

    A model ending in a softmax layer would otherwise be softmaxed twice: its probabilities
    squeezed toward 1/C (0.23 for 10 classes at most), which makes every confidence, loss or
    threshold read on them meaningless.
    """
    import torch

    values = out if dtype is None else out.to(dtype)
    if outputs_are_probabilities(out):
        return values
    return torch.softmax(values, dim=1)


def outputs_are_probabilities(out: torch.Tensor) -> bool:
    """Whether every row of a classifier's (rows, classes) outputs already is a probability
    vector: non-negative, summing to 1 within :func:`probability_tolerance` of their dtype (a
    model ending in a softmax layer), as :func:`class_probabilities` decides."""
    import torch

    values = out.detach()
    return bool(
        values.numel()
        and bool(torch.isfinite(values).all())
        and float(values.min()) >= 0
        and float((values.sum(dim=1) - 1).abs().max()) <= probability_tolerance(_eps(out))
    )


def channels_first_view(model: torch.nn.Module) -> torch.nn.Module:
    """``model``, which takes channels-last images (N, H, W, C), as a module taking (N, C, H, W):
    its input is permuted back to (N, H, W, C) before ``model`` runs, so the image
    perturbations and the occlusion maps, which work on (N, C, H, W), move pixels and not
    channels. The view keeps the model's training mode (torchattacks restores the mode of the
    module it is given)."""
    import torch

    class _ChannelsFirstView(torch.nn.Module):
        def __init__(self, inner: torch.nn.Module) -> None:
            super().__init__()
            self.inner = inner

        def forward(self, x: torch.Tensor) -> Any:
            return self.inner(x.permute(0, 2, 3, 1))

    view = _ChannelsFirstView(model)
    view.training = model.training
    return view


def scores_view(model: torch.nn.Module, logits_output: int | str | None = None) -> torch.nn.Module:
    """``model`` as a module whose forward returns only the class scores, picked as
    :func:`capture` picks them (``logits_output``: a dict key, a tuple's index, or ``None``:
    a dict's ``"logits"`` or its one (rows, C) tensor, the narrower of two outputs), for code
    that calls ``model(x)`` and reads a tensor (the perturbations, attacks and occlusion
    maps). A model returning a tensor is returned as it is."""
    import torch

    choice = check_logits_output(logits_output)

    class _ScoresView(torch.nn.Module):
        def __init__(self, inner: torch.nn.Module) -> None:
            super().__init__()
            self.inner = inner

        def forward(self, x: torch.Tensor) -> Any:
            out = self.inner(x)
            if isinstance(out, torch.Tensor):
                return out
            if isinstance(out, Mapping) or (
                isinstance(out, tuple | list)
                and (len(out) != 2 or isinstance(choice, str) or (choice or 0) > 1)
            ):
                return _pick_output(out, choice)[0]
            pair = _as_pair(out)
            if pair is None:
                return out
            _, logits, _ = pair_roles(
                (tuple(pair[0].shape), tuple(pair[1].shape)),
                (_is_label(pair[0]), _is_label(pair[1])),
                None if isinstance(choice, str) else choice,
            )
            return pair[logits]

    view = _ScoresView(model)
    view.training = model.training
    return view


def _model_classes(model: torch.nn.Module) -> tuple[str, ...] | None:
    """Names from a ``classes`` attribute holding a list of str (anything else is ignored)."""
    try:
        value = getattr(model, "classes", None)
    except Exception:
        return None
    if isinstance(value, list | tuple) and value and all(isinstance(v, str) for v in value):
        try:
            return parse_classes(list(value), "the model's classes attribute")
        except LabelwiseError:
            return None
    return None


# --------------------------------------------------------------------------- validation


def _short(exc: BaseException, limit: int = 200) -> str:
    """The first line of ``exc``'s message, at most ``limit`` characters; for an error
    inside a TorchScript model the last line, the error itself (the first is only "The
    following operation failed in the TorchScript interpreter.", the rest its traceback)."""
    text = str(exc).strip().splitlines()
    first = text[0] if text else type(exc).__name__
    if first.startswith("The following operation failed in the TorchScript interpreter"):
        last = re.sub(rf"^{re.escape(type(exc).__name__)}: ", "", text[-1].strip())
        first = last or first
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


_ID_LAYERS = ("Embedding", "EmbeddingBag")


def _input_dtype(model: torch.nn.Module) -> torch.dtype:
    """The dtype of the model's first floating-point parameter (or buffer), else float32;
    int64 when the model's first layer with parameters is an ``nn.Embedding`` (token ids).

    Inputs are cast to it, so that a float64 (or float16) model gets inputs it can multiply.
    """
    import torch

    for module in model.modules():
        if next(iter(module.parameters(recurse=False)), None) is None:
            continue
        kind = getattr(module, "original_name", None) or type(module).__name__
        if isinstance(module, torch.nn.Embedding | torch.nn.EmbeddingBag) or kind in _ID_LAYERS:
            return torch.int64
        break
    for t in itertools.chain(model.parameters(), model.buffers()):
        if t.is_floating_point():
            return t.dtype
    return torch.float32


def _batches(
    inputs: Any, model_dtype: torch.dtype, batch_size: int
) -> tuple[int, Callable[[], Iterator[torch.Tensor]]]:
    """The number of rows and a function iterating over the batches in ``model_dtype``.

    Only one batch is read (and converted) at a time.
    """
    import torch
    from torch.utils.data import DataLoader, Dataset

    if isinstance(inputs, torch.Tensor):
        tensor = inputs
        if tensor.dim() == 0:
            raise LabelwiseError("inputs must have a first axis of rows, got a 0-d tensor")
        if tensor.is_complex():
            raise LabelwiseError(f"inputs must hold real numbers, got dtype {tensor.dtype}")
        n = int(tensor.shape[0])
        if n == 0:
            raise LabelwiseError("inputs must have at least one row, got 0")

        def tensor_batches() -> Iterator[torch.Tensor]:
            for start in range(0, n, batch_size):
                yield _cast(tensor[start : start + batch_size].detach(), model_dtype, start)

        return n, tensor_batches
    if isinstance(inputs, DataLoader | Dataset):
        return _loader_batches(inputs, model_dtype, batch_size)

    n, get = array_rows(inputs)
    wide = np.float64 if model_dtype == torch.float64 else np.float32

    def array_batches() -> Iterator[torch.Tensor]:
        for start in range(0, n, batch_size):
            # a fresh, writable, contiguous copy of just these rows, in the model's dtype
            got = get(start, min(start + batch_size, n))
            if model_dtype == torch.int64:
                yield _cast(torch.from_numpy(np.array(got, order="C")), model_dtype, start)
                continue
            rows = np.array(got, dtype=wide, order="C")
            yield torch.from_numpy(rows).to(dtype=model_dtype)

    return n, array_batches


def _loader_batches(
    inputs: Any, model_dtype: torch.dtype, batch_size: int
) -> tuple[int, Callable[[], Iterator[torch.Tensor]]]:
    """Batches of a ``DataLoader`` (as it batches) or of a ``Dataset`` (in order).

    The capture's row i must be the pile's row i (labels, ids and images are matched by row):
    a DataLoader whose sampler is not sequential (``shuffle=True``, a random or custom
    sampler) or that drops its last incomplete batch (``drop_last=True``) is refused."""
    from torch.utils.data import DataLoader, SequentialSampler, default_collate

    loader = inputs if isinstance(inputs, DataLoader) else None
    if loader is None:
        loader = DataLoader(inputs, batch_size=batch_size, shuffle=False, collate_fn=_collate_rows)
    elif loader.collate_fn is default_collate:
        _refuse_list_items(loader.dataset)
    sampler: Any = loader.batch_sampler
    try:
        n = len(sampler.sampler) if loader.batch_size is not None else sum(map(len, sampler))
    except TypeError:
        raise LabelwiseError(
            "inputs: a Dataset/DataLoader must have a length (an IterableDataset without "
            "__len__ cannot be captured); wrap it in a map-style Dataset"
        ) from None
    if loader.batch_size is not None and not isinstance(loader.sampler, SequentialSampler):
        raise LabelwiseError(
            f"inputs: the DataLoader's sampler ({type(loader.sampler).__name__}) does not give "
            "the rows in the pile's order, so the capture's rows would not be the pile's "
            "(labels and ids are matched by row): pass the Dataset itself, or a DataLoader "
            "with shuffle=False and no sampler"
        )
    if loader.batch_size is not None and loader.drop_last and n % loader.batch_size:
        raise LabelwiseError(
            f"inputs: the DataLoader has drop_last=True: the last {n % loader.batch_size} rows "
            f"of the {n} would be left out of the capture; pass the Dataset itself, or a "
            "DataLoader with drop_last=False"
        )
    if n == 0:
        raise LabelwiseError("inputs must have at least one row, got 0")

    def loader_batches() -> Iterator[torch.Tensor]:
        for number, item in enumerate(loader):
            yield _batch_tensor(item, number, model_dtype)

    return n, loader_batches


def _sample_input(sample: Any) -> Any:
    """The input of one Dataset item: the item, or the first element of ``(x, y, ...)``. A
    list holding only numbers (at any depth) is the input itself, not ``(x, y)``."""
    if isinstance(sample, tuple) and sample:
        return sample[0]
    if isinstance(sample, list) and sample:
        try:
            as_array = np.asarray(sample)
        except (ValueError, TypeError):  # ragged: (x, y) with x a list
            return sample[0]
        return sample if as_array.dtype.kind in "biuf" else sample[0]
    return sample


def _collate_rows(samples: list[Any]) -> Any:
    """The batch of a Dataset's items: their inputs stacked as rows. Tensors, arrays and
    Python lists of numbers are all rows (torch's default collate would turn a list of ``d``
    numbers into ``d`` tensors, one per feature)."""
    import torch
    from torch.utils.data import default_collate

    if any(isinstance(s, Mapping) for s in samples):
        return default_collate(samples)  # _batch_tensor names the keys
    rows = []
    for sample in samples:
        x = _sample_input(sample)
        if not isinstance(x, torch.Tensor):
            try:
                arr = np.asarray(x)
            except (ValueError, TypeError) as exc:
                raise LabelwiseError(
                    f"inputs: a Dataset item's input is a {type(x).__name__} that is not an "
                    f"array of numbers ({exc}); return a tensor or a NumPy array from "
                    "__getitem__"
                ) from None
            if arr.dtype.kind not in "biuf":
                raise LabelwiseError(
                    f"inputs: a Dataset item's input is a {type(x).__name__} of dtype "
                    f"{arr.dtype}, not numbers; return a tensor or a NumPy array of numbers "
                    "from __getitem__"
                )
            x = torch.from_numpy(np.ascontiguousarray(arr))
        rows.append(x)
    shapes = {tuple(r.shape) for r in rows}
    if len(shapes) > 1:
        raise LabelwiseError(
            f"inputs: the Dataset's items have different shapes {sorted(shapes)[:4]}; every "
            "row must have the same shape (resize or pad them in __getitem__)"
        )
    return torch.stack(rows)


def _refuse_list_items(dataset: Any) -> None:
    """A DataLoader with torch's default collate over items whose input is a Python list
    batches one tensor per feature, not rows: refused, saying what to change."""
    try:
        first = dataset[0]
    except Exception:  # an iterable or unusual Dataset: nothing to check here
        return
    x = _sample_input(first)
    if isinstance(x, list):
        raise LabelwiseError(
            "inputs: the DataLoader's Dataset returns Python lists as inputs; torch's default "
            "collate turns a list of d numbers into d tensors (one per feature), not rows. "
            "Pass the Dataset itself to capture (its lists are read as rows), or return "
            "torch.tensor(x) from __getitem__"
        )


def _batch_tensor(item: Any, number: int, model_dtype: torch.dtype) -> torch.Tensor:
    """The inputs of one loader batch: a tensor, or the first element of ``(x, y, ...)``."""
    import torch

    x = item[0] if isinstance(item, tuple | list) and item else item
    if isinstance(x, np.ndarray):
        x = torch.from_numpy(np.ascontiguousarray(x))
    if isinstance(item, Mapping):
        key = _tensor_key(item, ("image", "input", "inputs", "x", "pixel_values"))
        raise LabelwiseError(
            f"inputs: batch {number} of the DataLoader is a dict with keys {list(item)}; "
            "capture takes a tensor or a tuple (x, y, ...): pass a DataLoader that keeps the "
            "input, e.g. DataLoader(dataset, batch_size=256, collate_fn=lambda b: "
            f"torch.stack([d[{key!r}] for d in b]))"
        )
    if not isinstance(x, torch.Tensor):
        raise LabelwiseError(
            f"inputs: batch {number} of the DataLoader is a {type(item).__name__}; expected a "
            "tensor or a tuple (x, y, ...) whose first element is a tensor"
        )
    if x.dim() == 0 or x.is_complex() or x.dtype == torch.bool:
        raise LabelwiseError(
            f"inputs: batch {number} holds a tensor of shape {tuple(x.shape)} and dtype "
            f"{x.dtype}; expected real numbers with rows first"
        )
    return _cast(x.detach(), model_dtype, None)


def _cast(x: torch.Tensor, model_dtype: torch.dtype, start: int | None) -> torch.Tensor:
    """``x`` in ``model_dtype``; for a model taking integer ids (int64), float inputs must
    hold whole numbers."""
    import torch

    if model_dtype != torch.int64 or not x.is_floating_point():
        return x.to(dtype=model_dtype)
    if not bool(torch.isfinite(x).all()) or not bool((x == x.round()).all()):
        where = "" if start is None else f" (rows from {start})"
        raise LabelwiseError(
            "the model's first layer is an nn.Embedding, so it takes integer ids, but the "
            f"inputs{where} hold non-integer {str(x.dtype).removeprefix('torch.')} values; "
            "pass the token ids as an integer array (e.g. an int64 .npy pile)"
        )
    return x.to(dtype=model_dtype)


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


@contextlib.contextmanager
def _evaluating(
    model: torch.nn.Module, device: torch.device, *, set_eval: bool = True, freeze: bool = True
) -> Iterator[None]:
    """The model for one pass: on ``device``, in eval mode (``set_eval``) and with its
    parameters' ``requires_grad`` off (``freeze``); every flag and the device restored after.

    A model spread over several devices stays where it is (see :func:`_single_device`).
    """
    # parents come before children in modules(), so each module ends with its own flag
    training_flags = [(m, m.training) for m in model.modules()] if set_eval else []
    grad_flags = [(p, p.requires_grad) for p in model.parameters()] if freeze else []
    original_device = _single_device(model)
    moved = original_device is not None and original_device != device
    try:
        if moved:
            model.to(device)
        if set_eval:
            model.eval()
        for parameter, _ in grad_flags:
            parameter.requires_grad_(False)
        yield
    finally:
        for parameter, flag in grad_flags:
            parameter.requires_grad_(flag)
        for module, flag in training_flags:
            module.train(flag)
        if moved and original_device is not None:
            model.to(original_device)


# --------------------------------------------------------------------------- running


def _as_pair(out: Any) -> tuple[torch.Tensor, torch.Tensor] | None:
    """The two tensors when the model returned a tuple/list of two tensors."""
    import torch

    if (
        isinstance(out, tuple | list)
        and len(out) == 2
        and all(isinstance(t, torch.Tensor) for t in out)
    ):
        return out[0], out[1]
    return None


def _tensor_key(d: Mapping[Any, Any], preferred: tuple[str, ...]) -> Any:
    """The key of ``d`` to name in a message: the first of ``preferred`` present, else the
    first key holding a tensor (else the first key)."""
    import torch

    for key in preferred:
        if key in d:
            return key
    return next((k for k, v in d.items() if isinstance(v, torch.Tensor)), next(iter(d), "x"))


def _returned(out: Any) -> str:
    """What a model returned, for a message: ``"one tensor of shape (40, 3)"``."""
    import torch

    if isinstance(out, torch.Tensor):
        return f"one tensor of shape {tuple(out.shape)}"
    if isinstance(out, tuple | list):
        return f"a {type(out).__name__} of {len(out)}"
    return f"a {type(out).__name__}"


def _pick_output(out: Any, choice: int | str | None) -> tuple[Any, str | None]:
    """The class scores in a model's dict output (HuggingFace style, ``{"logits": ...}``) or
    in a tuple/list of other than two outputs, and a note when they were chosen without
    ``choice`` (a dict key, or a tuple's index).

    Without ``choice``: a dict's ``"logits"``, else its one floating-point tensor of shape
    (rows, C); a tuple's one such tensor. Anything else is ambiguous: the error lists the
    outputs and says how to name one.
    """
    import torch

    def shown(v: Any) -> str:
        return str(tuple(v.shape)) if isinstance(v, torch.Tensor) else type(v).__name__

    def scores(v: Any) -> bool:
        return isinstance(v, torch.Tensor) and v.dim() == 2 and v.is_floating_point()

    if isinstance(out, Mapping):
        keys = list(out)
        listed = ", ".join(f"{k!r} {shown(v)}" for k, v in out.items())
        how = (
            "name the key that holds the class scores: logits_output='KEY' (CLI: "
            "--logits-output KEY)"
        )
        if isinstance(choice, str):
            if choice not in out:
                maybe = did_you_mean(choice, [str(k) for k in keys])
                raise LabelwiseError(
                    f"logits_output={choice!r} (CLI: --logits-output) is not a key of the "
                    f"model's output dict{maybe}; its keys: {listed}"
                )
            key, note = choice, None
        elif choice is not None:
            raise LabelwiseError(
                f"logits_output={choice} (CLI: --logits-output) is an index, but the model "
                f"returns a dict ({listed}): {how}"
            )
        elif isinstance(out.get("logits"), torch.Tensor):
            key = "logits"
            note = f"the model returns a dict ({listed}): taking 'logits' as the class scores"
        else:
            found = [k for k, v in out.items() if scores(v)]
            if len(found) != 1:
                raise LabelwiseError(
                    f"the model returns a dict ({listed}) and labelwise cannot tell which one "
                    f"holds the class scores: {how}"
                )
            key = found[0]
            note = (
                f"the model returns a dict ({listed}): taking {key!r}, its one tensor of "
                "shape (rows, classes), as the class scores"
            )
        if note:
            note += "; pass logits_output='KEY' (CLI: --logits-output KEY) for another"
        if not isinstance(out[key], torch.Tensor):
            raise LabelwiseError(f"the model's output {key!r} is a {shown(out[key])}, not a tensor")
        return out[key], note
    listed = ", ".join(f"[{i}] {shown(v)}" for i, v in enumerate(out))
    what = f"a {type(out).__name__} of {len(out)} ({listed})"
    how = "say which one holds the class scores: logits_output=INDEX (CLI: --logits-output INDEX)"
    if isinstance(choice, str):
        raise LabelwiseError(
            f"logits_output={choice!r} (CLI: --logits-output) names a dict key, but the model "
            f"returns {what}: {how}"
        )
    if choice is not None:
        if choice >= len(out):
            raise LabelwiseError(
                f"logits_output={choice} (CLI: --logits-output) is not an output of the model, "
                f"which returns {what}: {how}"
            )
        index, note = choice, None
    else:
        found = [i for i, v in enumerate(out) if scores(v)]
        if len(found) != 1:
            raise LabelwiseError(
                f"the model returns {what} and labelwise cannot tell which one holds the class "
                f"scores: {how}"
            )
        index = found[0]
        note = (
            f"the model returns {what}: taking output[{index}], its one tensor of shape (rows, "
            "classes), as the class scores; pass logits_output=INDEX (CLI: --logits-output "
            "INDEX) for another"
        )
    if not isinstance(out[index], torch.Tensor):
        raise LabelwiseError(f"the model's output[{index}] is a {shown(out[index])}, not a tensor")
    return out[index], note


def _is_label(t: torch.Tensor) -> bool:
    """A predicted label rather than scores: 1-D, or integer/bool values."""
    return t.dim() <= 1 or not t.is_floating_point()


class _Runner:
    """Runs one batch and returns ``(features, outputs)`` as 2-D tensors.

    Python modules are captured with a hook; TorchScript and ``torch.export`` modules (no
    hooks fire inside them) with a tap on their forward graph (:mod:`._torch_graph`).
    """

    def __init__(
        self,
        model: torch.nn.Module,
        plan: _Plan,
        head: str,
        logits_output: int | str | None = None,
    ) -> None:
        import torch

        self.model = model
        self.logits_output = logits_output
        self._warned = False
        self.plan = plan
        self.head = head
        self.scripted = isinstance(model, torch.jit.ScriptModule)
        self.exported = not self.scripted and is_exported(model)
        self.graph = self.scripted or self.exported
        self.label = plan.label
        # the default layer of a Python module: the last Linear *executed*, chosen on batch 1
        self._auto = not plan.explicit and not self.graph and bool(plan.name)
        self._seen: list[tuple[str, Any]] = []
        self._handles: list[Any] = []
        self._tap: GraphTap | None = None
        self._mode: str | None = None  # "hook", "tuple" or "graph"; set on batch 1
        self.one_output = False  # whether the model's outputs are one value per row

    # hooks ---------------------------------------------------------------------------

    def attach(self) -> None:
        plan = self.plan
        if self.graph or plan.name is None or plan.name == "":
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

    def _choose_executed_linear(self, out: Any = None) -> None:
        """Batch 1 of the default layer: keep the last Linear that ran, hook only it (with a
        warning when its output is not as wide as the model's: it may not be the head)."""
        ran = [name for name, _ in self._seen]
        if not ran:
            raise LabelwiseError(
                "no nn.Linear layer ran in the model's forward(), so there is no default "
                "layer to capture: pass layer='<module name>' (a name from "
                "model.named_modules()), or make forward() return a tuple (features, logits)"
            )
        chosen = ran[-1]
        self._check_head(chosen, ran, out)
        kept = [entry for entry in self._seen if entry[0] == chosen]
        self.detach()
        self._seen.extend(kept)
        self._auto = False
        self.plan = _Plan(chosen, "input", explicit=False)
        self.label = self.plan.label
        self.attach()

    def _pair(self, out: Any) -> tuple[Any, Any]:
        """``(features or None, logits)`` of a two-tensor output (else ``(None, out)``, or the
        class scores picked from a dict or a tuple of another length, see
        :func:`_pick_output`); sets the label when the features are one of the outputs."""
        import torch

        several = isinstance(out, Mapping) or (
            isinstance(out, tuple | list)
            and (
                len(out) != 2
                or isinstance(self.logits_output, str)
                or (self.logits_output or 0) > 1
            )
        )
        if several:
            picked, note = _pick_output(out, self.logits_output)
            if note and not self._warned:
                self._warned = True
                warnings.warn(note, UserWarning, stacklevel=user_stacklevel())
            return None, picked
        pair = _as_pair(out)
        if pair is None:
            if self.logits_output is not None and isinstance(out, torch.Tensor):
                raise LabelwiseError(single_output_message(self.logits_output, _returned(out)))
            return None, out
        feats, logits, warning = pair_roles(
            (tuple(pair[0].shape), tuple(pair[1].shape)),
            (_is_label(pair[0]), _is_label(pair[1])),
            None if isinstance(self.logits_output, str) else self.logits_output,  # str: above
        )
        if warning and not self._warned and not self.plan.explicit:
            self._warned = True
            warnings.warn(warning, UserWarning, stacklevel=user_stacklevel())
        if feats is None:
            return None, pair[logits]
        if not self.plan.explicit:
            self.label = f"output[{feats}] (features)"
        return pair[feats], pair[logits]

    def _check_head(self, chosen: str, ran: list[str], out: Any) -> None:
        import torch

        width = getattr(dict(self.model.named_modules())[chosen], "out_features", None)
        if not isinstance(out, torch.Tensor) or out.dim() < 1 or not isinstance(width, int):
            return
        wide = int(np.prod(out.shape[1:])) if out.dim() > 1 else 1
        if wide == width:
            return
        linears = list(dict.fromkeys(ran))
        others = [n for n, m in self.model.named_modules() if n and n not in linears]
        warnings.warn(
            f"the default layer is the input of {chosen!r}, the last nn.Linear that ran, but "
            f"its {width} outputs are not the model's {wide} outputs, so it may not be the "
            "classification head (e.g. a squeeze-and-excitation block, or a head applied with "
            "F.linear); check the captured layer, or pass layer='<module>' (CLI: --layer) to "
            f"capture a module's output. Linear layers that ran: {', '.join(linears)}; other "
            f"modules: {', '.join(others[-8:]) or 'none'}",
            UserWarning,
            stacklevel=user_stacklevel(),
        )

    def _call(self, x: torch.Tensor) -> Any:
        """``model(x)``; an error of the model becomes a :class:`LabelwiseError` saying the
        input shape given and, where it can be read off the first layer, the one expected."""
        try:
            return self.model(x)
        except LabelwiseError:
            raise
        except Exception as exc:
            raise self._failure(x, exc) from exc

    def _failure(self, x: torch.Tensor, exc: BaseException) -> LabelwiseError:
        if isinstance(exc, TypeError) and re.search(
            r"forward\(\) missing \d+ required (positional|keyword-only) argument", str(exc)
        ):
            return LabelwiseError(
                "the model's forward takes more than the input: capture calls model(x) with "
                f"one batch of inputs, and {_short(exc)}; wrap the model so that forward(x) "
                "supplies the rest, e.g. a module whose forward(x) returns model(x, mask)"
            )
        fixed = re.search(r"Guard failed: \w+\.size\(\)\[0\] == (\d+)", str(exc))
        if fixed is not None:
            # torch.export.export(model, (x,)) specialises the batch size of x unless told
            return LabelwiseError(
                f"the torch.export program takes batches of exactly {fixed[1]} rows, got "
                f"{int(x.shape[0])}: it was exported without a dynamic batch size; export it "
                "again with torch.export.export(model, (x,), dynamic_shapes=({0: "
                "torch.export.Dim('batch')},)) and torch.export.save it"
            )
        expected = _expected_input(self.model)
        wanted = f"; the model's first layer {expected}" if expected else ""
        return LabelwiseError(
            f"the model failed on inputs of shape {tuple(x.shape)} (rows first, dtype "
            f"{str(x.dtype).removeprefix('torch.')}){wanted}: {type(exc).__name__}: "
            f"{_short(exc)}{_no_channel_axis(self.model, tuple(x.shape))}"
            f"{_channels_moved(self.model, tuple(x.shape), exc)}{_ids_out_of_range(self.model, x)}"
        )

    # one batch -----------------------------------------------------------------------

    def __call__(self, x: torch.Tensor) -> tuple[np.ndarray, np.ndarray, float]:
        """``(features, outputs, eps)`` of one batch: float32 NumPy arrays (one output per row
        with ``head="softmax"``: in the model's dtype), and the machine epsilon of the dtype the
        model computed its outputs in (see :meth:`CaptureWriter.write`)."""
        if self._mode is None:
            feats, out = self._first(x)
        elif self._mode == "graph":
            feats, out = self._graph(x)
        else:
            feats, out = self._forward(x)
        rows = int(x.shape[0])
        features = _numpy(self._features(feats, rows))
        outputs = self._outputs(out, rows)
        return features, outputs, _eps(out)

    def _first(self, x: torch.Tensor) -> tuple[Any, Any]:
        import torch

        plan = self.plan
        if not self.graph:
            feats, out = self._forward(x)
            self._mode = "tuple" if self.label.startswith(_TUPLE_PREFIX) else "hook"
            return feats, out
        if not plan.explicit:
            feats, out = self._pair(self._call(x))
            if feats is not None:
                self._mode = "tuple"
                return feats, out
        wanted = plan.name if plan.explicit else None
        if isinstance(self.model, torch.jit.ScriptModule):
            self._tap = tap_scripted(self.model, wanted)
        else:
            assert isinstance(self.model, torch.fx.GraphModule)
            self._tap = tap_exported(self.model, wanted)
        self.label = self._tap.label
        self._mode = "graph"
        return self._graph(x)

    def _graph(self, x: torch.Tensor) -> tuple[Any, Any]:
        """Run the forward graph with the hidden value exposed."""
        assert self._tap is not None
        try:
            out, feats = self._tap(x)
        except LabelwiseError:
            raise
        except Exception as exc:
            raise self._failure(x, exc) from exc
        return feats, self._pair(out)[1]

    def _forward(self, x: torch.Tensor) -> tuple[Any, Any]:
        """Plain ``model(x)``, features from the hook or from a ``(features, logits)`` tuple."""
        self._seen.clear()
        out = self._call(x)
        feats, out = self._pair(out)
        if feats is not None and not self.plan.explicit:
            return feats, out
        if self._auto:
            self._choose_executed_linear(out)
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

    def _outputs(self, out: Any, rows: int) -> np.ndarray:
        import torch

        if not isinstance(out, torch.Tensor):
            raise LabelwiseError(
                f"the model returned a {type(out).__name__}; expected a tensor of outputs or "
                "a tuple (features, logits)"
            )
        values = _exact_numpy(out)
        self.one_output = one_output(values)
        outputs = head_outputs(values, rows, self.head)
        if self.head == "softmax" and self.one_output:
            return outputs  # CaptureWriter keeps a float64 logit's precision for its sigmoid
        return outputs.astype(np.float32)


_CONV_DIMS = {"Conv1d": 1, "Conv2d": 2, "Conv3d": 3}


def _first_layer(model: torch.nn.Module, kinds: Collection[str]) -> tuple[str, Any] | None:
    """``(kind, module)`` of the model's first module whose kind (class name, or a
    TorchScript submodule's ``original_name``) is one of ``kinds``, when no module with
    parameters of its own comes before it; else None (another first layer)."""
    for _, module in model.named_modules():
        kind = getattr(module, "original_name", None) or type(module).__name__
        if kind in kinds:
            return kind, module
        if next(iter(module.parameters(recurse=False)), None) is not None:
            return None
    return None


def _no_channel_axis(model: torch.nn.Module, shape: tuple[int, ...]) -> str:
    """When the first layer is a 1-channel ConvNd and the rows have N spatial axes but no
    channel axis ((rows, 28, 28) grey images saved without one), how to add it; else ``""``."""
    first = _first_layer(model, _CONV_DIMS)
    if first is None:
        return ""
    kind, module = first
    if getattr(module, "in_channels", None) == 1 and len(shape) == 1 + _CONV_DIMS[kind]:
        return (
            f"; the rows have no channel axis ({', '.join(map(str, shape[1:]))}): save "
            "the pile with one, np.save(FILE, x[:, None])"
        )
    return ""


def _ids_out_of_range(model: torch.nn.Module, x: torch.Tensor) -> str:
    """When the first parameterised layer is an ``nn.Embedding`` of ``n`` entries and the
    integer inputs hold an id outside ``[0, n)``: says so (PyTorch's own message, 'index out
    of range in self', names neither the ids nor the table's size); else ``""``."""
    first = _first_layer(model, ("Embedding",))
    if first is None:
        return ""
    n = getattr(first[1], "num_embeddings", None)
    if not isinstance(n, int) or x.dtype.is_floating_point or x.numel() == 0:
        return ""
    low, high = int(x.min()), int(x.max())
    if low >= 0 and high < n:
        return ""
    return (
        f"; the first layer is an nn.Embedding of {n} ids (0 to {n - 1}) but these "
        f"rows hold ids from {low} to {high}: were they numbered with another "
        "vocabulary (or is the padding id -1)?"
    )


def _channels_moved(model: torch.nn.Module, shape: tuple[int, ...], exc: BaseException) -> str:
    """When the first layer is a ConvNd taking C channels and the model failed on a count of
    channels (PyTorch's "expected input[...] to have C channels, but got ..."): rows that are
    (..., C) channels last are to be moved channels first; rows that already are (C, ...)
    channels first mean the forward rearranges its input before that layer (typically a
    channels-last model, ``x.permute(0, 3, 1, 2)``), where the error's "expects (rows, C, ...)"
    alone reads as if the rows were right. Says which, and how to move the axis; else ``""``
    (another failure, e.g. images of another size failing in a later Linear, is no layout's:
    channels-first rows were told the forward rearranges its input)."""
    first = _first_layer(model, _CONV_DIMS)
    if first is None or not re.search(r"to have \d+ channels", str(exc)):
        return ""
    kind, module = first
    c = getattr(module, "in_channels", None)
    if len(shape) != 2 + _CONV_DIMS[kind] or (shape[1] == c) == (shape[-1] == c):
        return ""
    if shape[-1] == c:
        chw = ", ".join(map(str, ("rows", shape[-1], *shape[1:-1])))
        return (
            f"; the rows look channels last ({', '.join(map(str, shape[1:]))}): give "
            f"them channels first, ({chw}): np.save(FILE, np.moveaxis(x, -1, 1)) "
            "(a folder of images: --layout chw)"
        )
    hwc = ", ".join(map(str, ("rows", *shape[2:], shape[1])))
    return (
        f"; the rows already are channels first ({', '.join(map(str, shape[1:]))}), so "
        f"the model's forward rearranges its input before that layer: if it takes "
        f"channels-last rows ({hwc}), give them so: np.save(FILE, np.moveaxis(x, 1, -1)) "
        "(a folder of images: --layout hwc)"
    )


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
        dims = _CONV_DIMS.get(kind)
        if dims is not None and isinstance(in_channels, int):
            spatial = ", ".join(["..."] * dims)
            return (
                f"{shown} is {kind}(in_channels={in_channels}): it expects inputs of shape "
                f"(rows, {in_channels}, {spatial})"
            )
        if next(iter(module.parameters(recurse=False)), None) is not None:
            return None  # some other first layer: nothing safe to say
    return None

"""What every capture adapter shares, without any framework: the result, the rows, the writer.

* :class:`Capture` is the result of :func:`labelwise.adapters.torch.capture` and
  :func:`labelwise.adapters.onnx.capture`.
* :func:`array_rows` reads any array-like pile one batch at a time (a NumPy array, a memory
  map, or any object with ``__len__``/``shape`` and ``__getitem__(slice) -> ndarray``).
* :class:`CaptureWriter` stores the batches: in memory, or (``out=DIR``) straight into
  ``.npy`` memory maps under temporary names that are renamed into place only when the whole
  pass succeeded, so a pile larger than RAM can be captured and an error leaves no partial file.
"""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import tempfile
import warnings
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..exceptions import LabelwiseError, user_stacklevel

__all__ = ["Capture", "CaptureWriter", "array_rows", "parse_classes"]

HEADS = ("softmax", "raw")
_PROBABILITY_ATOL = 1e-4  # rows summing to 1 within this are taken as already-softmaxed
#: the row-sum tolerance is at least this many machine epsilons of the model's output dtype
#: (a float16 softmax sums to 1 within about 2e-4, a bfloat16 one within about 2e-3)
_PROBABILITY_EPS = 2.5
_CHUNK_ROWS = 1 << 16
_FLUSH_BYTES = 64 << 20  # msync the memory maps after this much new data (not every batch)

#: the files ``capture(..., out=DIR)`` writes, by head
OUTPUT_FILES = {"softmax": "probabilities.npy", "raw": "outputs.npy"}


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
        Which tensor was captured, e.g. ``"fc3 (input)"``, ``"features (output)"``,
        ``"output[0] (features)"`` for a model returning ``(features, logits)``, or an ONNX
        tensor name.
    head:
        ``"softmax"`` or ``"raw"``.
    classes:
        Class names in output order when the model declares them (ONNX metadata ``classes``,
        a ``classes`` attribute of a PyTorch model), else ``None``.
    probabilities_given:
        ``head="softmax"``: whether the model's outputs already were probabilities (kept as
        they are; decided on the first batch) rather than logits (softmaxed); else ``None``
        (and for one output per row, which is told apart by every row, not the first batch).
    binary_probability:
        ``head="softmax"`` and one output per row: whether it lay in [0, 1] on every row and
        was taken as a sigmoid's probability of class 1 (``True``) or as a logit
        (``False``); else ``None``.
    """

    activations: NDArray[np.float32]
    outputs: NDArray[np.float32]
    layer: str
    head: str
    classes: tuple[str, ...] | None = None
    probabilities_given: bool | None = None
    binary_probability: bool | None = None

    def __repr__(self) -> str:
        named = "" if self.classes is None else f", classes={len(self.classes)}"
        return (
            f"Capture(activations={self.activations.shape}, outputs={self.outputs.shape}, "
            f"layer={self.layer!r}, head={self.head!r}{named})"
        )


def model_file(path: Any, expected: str) -> str:
    """``path`` (str or os.PathLike) of an existing model file, as a str; ``expected`` names
    what a directory should have been (e.g. ``"an .onnx file"``)."""
    if isinstance(path, bytes) or not isinstance(path, str | os.PathLike):
        raise LabelwiseError(f"path must be a str or os.PathLike, got {type(path).__name__}")
    where = os.fspath(path)
    if not os.path.exists(where):
        raise LabelwiseError(f"model file not found: {where!r}")
    if os.path.isdir(where):
        raise LabelwiseError(f"model path {where!r} is a directory, expected {expected}")
    return where


def parse_classes(value: Any, where: str) -> tuple[str, ...] | None:
    """Class names from a JSON list, a comma-separated string or a sequence of str.

    ``None`` and empty values give ``None``; anything else that is not names is an error
    naming ``where`` (e.g. ``"the ONNX metadata 'classes'"``).
    """
    import json

    if value is None:
        return None
    names: Any = value
    if isinstance(value, str):
        text = value.strip()
        if not text:
            return None
        if text.startswith("["):
            try:
                names = json.loads(text)
            except json.JSONDecodeError as exc:
                raise LabelwiseError(f"{where} is not a valid JSON list ({exc})") from None
        else:
            names = [part.strip() for part in text.split(",")]
    if not isinstance(names, list | tuple) or not all(isinstance(n, str) for n in names):
        raise LabelwiseError(f"{where} must be a list of class names (str), got {value!r}")
    if not names:
        return None
    if len(set(names)) != len(names) or any(not n for n in names):
        raise LabelwiseError(f"{where} must hold distinct, non-empty names, got {list(names)}")
    return tuple(names)


def pair_roles(
    shapes: tuple[tuple[Any, ...], tuple[Any, ...]],
    labels: tuple[bool, bool],
    logits_output: int | None,
) -> tuple[int | None, int, str | None]:
    """Which of two model outputs are the features and the logits: ``(features, logits,
    warning)``; ``features`` is ``None`` when the other output is a predicted label.

    ``shapes`` are the outputs' shapes (rows first), ``labels`` whether each one is a label
    (1-D or integers).
    """
    if logits_output is not None:
        other = 1 - logits_output
        if labels[logits_output]:
            raise LabelwiseError(
                f"logits_output={logits_output} names output[{logits_output}] of shape "
                f"{shapes[logits_output]}, which holds labels (1-D or integers), not class scores"
            )
        return (None if labels[other] else other), logits_output, None
    if labels[0] and labels[1]:
        raise LabelwiseError(
            f"the model returns two outputs of shapes {shapes[0]} and {shapes[1]}, and both look "
            "like labels (1-D or integers); capture needs class scores (rows, classes)"
        )
    if labels[0] or labels[1]:
        return None, (1 if labels[0] else 0), None
    if any(not s or not all(isinstance(d, int) for d in s[1:]) for s in shapes):
        return 0, 1, None  # sizes not known up front (ONNX): the (features, logits) convention
    widths = [int(np.prod(s[1:])) if len(s) > 1 else 1 for s in shapes]
    if widths[0] > widths[1]:
        return 0, 1, None
    if widths[0] == widths[1]:
        return (
            0,
            1,
            f"the model returns two outputs of the same shape {shapes[0]}: taking output[0] as "
            f"the features and output[1] as the logits; pass logits_output=0 (CLI: "
            "--logits-output 0) if it is the other way",
        )
    raise LabelwiseError(
        f"the model returns two outputs, output[0] of shape {shapes[0]} and output[1] of shape "
        f"{shapes[1]}; labelwise reads two outputs as (features, logits), but here the second "
        "is the wider one. Say which one holds the class scores: logits_output=0 or 1 (CLI: "
        "--logits-output 0 or 1)"
    )


def single_output_message(logits_output: int | str, returned: str) -> str:
    """The error for ``logits_output`` given to a model that does not return several outputs."""
    return (
        f"logits_output={logits_output!r} (CLI: --logits-output) applies only to a model with "
        f"several outputs (two or more, or a dict), but this one returns {returned}; drop it"
    )


def check_logits_output(value: Any) -> int | str | None:
    """``logits_output`` checked: ``None``, an index >= 0 (a tuple's or the ONNX outputs') or
    a non-empty name (a dict key, an ONNX output name)."""
    if value is None or (isinstance(value, str) and value):
        return value
    if isinstance(value, int | np.integer) and not isinstance(value, bool) and value >= 0:
        return int(value)
    raise LabelwiseError(
        "logits_output must be None, an output index >= 0 or an output name (a dict key, an "
        f"ONNX output name), got {value!r}"
    )


def logits_output_arg(text: str) -> int | str:
    """The CLI's ``--logits-output``: digits are an index, anything else a name. Nothing (or
    only spaces) and a negative index are errors naming the flag (argparse prints them
    before the model is loaded; :func:`check_logits_output` named ``logits_output``)."""
    text = text.strip()
    if not text:
        raise argparse.ArgumentTypeError(
            "give the output that holds the class scores: its index (0, 1, ...) or its name "
            "(a dict key, an ONNX output name), or leave --logits-output out"
        )
    if text[0] == "-" and text[1:].isdigit():
        raise argparse.ArgumentTypeError(
            f"{text}: output indices count from 0 (0, 1, ...), not from the end; give the "
            "index of the output that holds the class scores"
        )
    return int(text) if text.isdigit() else text


def check_head(head: Any) -> tuple[str, bool]:
    """``(head, inferred)``: ``None`` (not given) is ``"softmax"``, inferred; anything but
    ``None`` or one of :data:`HEADS` is an error."""
    if head is None:
        return "softmax", True
    if head not in HEADS:
        raise LabelwiseError(f"head must be None or one of {HEADS}, got {head!r}")
    return head, False


def one_output(values: Any) -> bool:
    """Whether a batch of model outputs holds one value per row (``(rows,)``, ``(rows, 1)``):
    a binary classifier's logit, or a regression."""
    arr = np.asarray(values)
    return arr.ndim == 1 or (arr.ndim == 2 and arr.shape[1] == 1)


def warn_one_output(*, probability: bool = False) -> None:
    """The warning when ``head`` was not given and the model has one output per row: it is
    taken as a binary classifier's logit, which a regression model's output is not; nothing
    in the values tells the two apart (a regression target in [-5, 5] is a plausible logit),
    so the caller is told how to say which it is. ``probability``: the outputs lay in [0, 1]
    on every row and were taken as a sigmoid's probability of class 1 instead."""
    taken = (
        "in [0, 1] on every row: taken as a sigmoid's probability p of class 1 "
        "(probabilities [1 - p, p])"
        if probability
        else "taken as a binary classifier's logit (probabilities [1 - sigmoid, sigmoid])"
    )
    warnings.warn(
        f"the model has one output per row, {taken}; for a regression model pass head='raw' "
        "(CLI: --head raw), for a binary classifier head='softmax' (CLI: --head softmax) "
        "to silence this",
        UserWarning,
        stacklevel=user_stacklevel(),
    )


def head_outputs(values: Any, rows: int, head: str) -> NDArray[Any]:
    """One batch of model outputs (NumPy, rows first) as the 2-D array ``head`` stores.

    ``head="raw"``: the outputs flattened to ``(rows, -1)``. ``head="softmax"``: one output
    per row (shape ``(rows,)`` or ``(rows, 1)``: a binary classifier) is returned as
    ``(rows, 1)``, and :class:`CaptureWriter` makes the probabilities ``[1 - p, p]`` of it
    once it has seen every row (``p`` = the output itself when every output lies in [0, 1],
    a sigmoid's; else ``p = sigmoid(output)``, a logit); ``(rows, classes)`` scores with at
    least two classes are returned as they are (:class:`CaptureWriter` decides whether they
    already are probabilities or are softmaxed); any other shape is an error.
    """
    arr = np.asarray(values)
    if arr.ndim == 0 or arr.shape[0] != rows:
        raise LabelwiseError(f"the model output has shape {arr.shape}, expected {rows} rows first")
    if head == "raw":
        return arr.reshape(rows, -1)
    if one_output(arr):
        # one output per row: a binary classifier's logit or sigmoid probability; which one
        # is told by every row (CaptureWriter.finish), not by the first batch
        return arr.reshape(rows, 1)
    if arr.ndim != 2 or arr.shape[1] < 2:
        raise LabelwiseError(
            f"head='softmax' needs model outputs of shape (rows, classes) with at least 2 "
            f"classes (or one logit per row), got {arr.shape}; use head='raw' for other "
            "outputs (e.g. a regression)"
        )
    return arr


# --------------------------------------------------------------------------- rows


def array_rows(inputs: Any) -> tuple[int, Callable[[int, int], NDArray[Any]]]:
    """The number of rows and a function returning rows ``[start, stop)`` as an ndarray.

    ``inputs`` is a NumPy array or memory map, or any object with ``shape`` (or ``__len__``)
    and ``__getitem__(slice)`` returning an array (h5py, zarr, labelwise piles). Only one batch
    is read at a time; nothing is copied up front. Lists and other sequences are converted with
    ``np.asarray``.
    """
    array = inputs
    if isinstance(array, Iterator):  # np.asarray would make a 0-d object array of it
        raise LabelwiseError(
            f"inputs are a {type(array).__name__}, read once and of unknown length; pass an "
            "array (e.g. np.concatenate(list(batches))), a Dataset or a DataLoader"
        )
    if isinstance(array, Mapping):
        key = next(iter(array), "x")
        raise LabelwiseError(
            f"inputs are a dict with keys {list(array)}; pass the array of inputs itself, "
            f"e.g. inputs[{key!r}]"
        )
    lazy = hasattr(array, "__getitem__") and (hasattr(array, "shape") or hasattr(array, "__len__"))
    if isinstance(array, list | tuple) or not (isinstance(array, np.ndarray) or lazy):
        try:
            array = np.asarray(array)
        except (TypeError, ValueError) as exc:
            raise LabelwiseError(f"inputs must be a numeric array: {exc}") from None
    shape = getattr(array, "shape", None)
    if shape is not None:
        try:
            shape = tuple(int(d) for d in shape)
        except (TypeError, ValueError):
            raise LabelwiseError(f"inputs have an unreadable shape {shape!r}") from None
        if len(shape) == 0:
            raise LabelwiseError("inputs must have a first axis of rows, got a 0-d array")
        n = shape[0]
    else:
        n = len(array)
    dtype = getattr(array, "dtype", None)
    if dtype is not None:
        _check_real(dtype)
    if n == 0:
        raise LabelwiseError("inputs must have at least one row, got 0")

    def batch(start: int, stop: int) -> NDArray[Any]:
        try:
            rows = np.asarray(array[start:stop])
        except LabelwiseError:
            raise
        except Exception as exc:
            raise LabelwiseError(
                f"could not read input rows {start}-{stop - 1}: {type(exc).__name__}: {exc}"
            ) from exc
        _check_real(rows.dtype)
        if rows.ndim == 0 or rows.shape[0] != stop - start:
            raise LabelwiseError(
                f"reading input rows {start}-{stop - 1} gave shape {rows.shape}, expected "
                f"{stop - start} rows first"
            )
        return rows

    return n, batch


def _check_real(dtype: Any) -> None:
    try:
        kind = np.dtype(dtype).kind
    except TypeError:
        raise LabelwiseError(f"inputs must hold numbers, got dtype {dtype}") from None
    if kind not in "biuf":
        raise LabelwiseError(f"inputs must hold real numbers, got dtype {np.dtype(dtype)}")


# --------------------------------------------------------------------------- writer


class CaptureWriter:
    """Collects a capture batch by batch, in memory or into ``.npy`` files under ``out``.

    The arrays are allocated when the first batch tells their widths. With ``out``, each batch
    goes straight into a memory-mapped temporary file (flushed as it goes), and
    :meth:`finish` renames ``activations.npy``, ``probabilities.npy`` (or ``outputs.npy``)
    and ``predictions.npy`` into place; :meth:`abort` (or an exception inside ``with``)
    removes the temporary files and leaves any earlier files untouched.
    """

    def __init__(self, n_rows: int, *, head: str, out: str | os.PathLike[str] | None) -> None:
        self.n_rows = n_rows
        self.head = head
        self.out = None if out is None else Path(out)
        self.activations: NDArray[np.float32] | None = None
        self.outputs: NDArray[np.float32] | None = None
        self._temps: dict[str, Path] = {}
        self._unflushed = 0
        self.written: list[str] = []
        #: head="softmax": whether the model's outputs already are probabilities, decided
        #: once, on the first batch (``None`` until then)
        self.probabilities: bool | None = None
        #: head="softmax" and one output per row: the smallest and largest output seen (the
        #: outputs are stored as they come until :meth:`finish`: float32 in column 1, and
        #: what float32 drops of a float64 output in column 0)
        self._binary: list[float] | None = None
        #: after :meth:`finish`, one output per row: whether it lay in [0, 1] on every row and
        #: was taken as the probability of class 1 (else a logit, ``p = sigmoid``)
        self.binary_probability: bool | None = None
        if self.out is not None:
            if self.out.exists() and not self.out.is_dir():
                raise LabelwiseError(f"out: {self.out} exists and is not a directory")
            self.out.mkdir(parents=True, exist_ok=True)

    def __enter__(self) -> CaptureWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.abort()

    def _allocate(self, name: str, shape: tuple[int, ...], dtype: Any) -> NDArray[Any]:
        if self.out is None:
            return np.empty(shape, dtype=dtype)
        fd, tmp = tempfile.mkstemp(prefix=f".{name}.", suffix=".tmp", dir=self.out)
        os.close(fd)
        self._temps[name] = Path(tmp)
        return np.lib.format.open_memmap(tmp, mode="w+", dtype=dtype, shape=shape)

    def write(
        self,
        start: int,
        feats: NDArray[Any],
        outs: NDArray[Any],
        label: str,
        *,
        eps: float | None = None,
    ) -> None:
        """Store rows ``start ...`` of both arrays (2-D, rows first, any float dtype).

        ``eps`` is the machine epsilon of the dtype the model computed its outputs in (default:
        that of ``outs``): with ``head="softmax"`` it sets how closely rows must sum to 1 to be
        taken as probabilities already. That is decided on the first batch, for the whole
        capture; a later batch that disagrees is an error.
        """
        if self.activations is None or self.outputs is None:
            self.activations = self._allocate(
                "activations.npy", (self.n_rows, feats.shape[1]), np.float32
            )
            width = int(outs.shape[1])
            if self.head == "softmax" and width == 1:
                width = 2  # [1 - p, p], made by finish()
                self._binary = [math.inf, -math.inf]
            if self.head == "raw" and width == 1 and self.out is not None:
                # one raw output per row (a regression) is saved 1-D, as (N,)
                single = self._allocate(OUTPUT_FILES["raw"], (self.n_rows,), np.float32)
                self.outputs = single.reshape(self.n_rows, 1)
            else:
                self.outputs = self._allocate(
                    OUTPUT_FILES[self.head], (self.n_rows, width), np.float32
                )
        stop = start + int(feats.shape[0])
        if stop > self.n_rows:
            raise LabelwiseError(f"the inputs gave more than the {self.n_rows} rows they announced")
        for what, dest, values in (
            ("activations", self.activations, feats),
            ("model outputs", self.outputs, outs),
        ):
            width = 1 if self._binary is not None and dest is self.outputs else dest.shape[1]
            if values.shape[1] != width:
                raise LabelwiseError(
                    f"{what} of rows {start}-{stop - 1} have {values.shape[1]} columns but "
                    f"earlier rows had {dest.shape[1]} (layer {label!r}); inputs must all have "
                    "the same shape"
                )
        block = np.asarray(feats, dtype=np.float32)
        if not np.isfinite(block).all():
            row = start + int(np.argwhere(~np.isfinite(block))[0][0])
            raise LabelwiseError(
                f"the captured layer {label!r} is NaN or infinite at row {row}; "
                "check the inputs for NaN/inf"
            )
        if self._binary is not None:
            values = np.asarray(outs, dtype=np.float64)
            # NaN: finish() names its row; +-inf is a logit's (sigmoid: 0 or 1)
            if values.size and not np.isnan(values).any():
                self._binary[0] = min(self._binary[0], float(values.min()))
                self._binary[1] = max(self._binary[1], float(values.max()))
            # float32 s and its float64 remainder: sigmoid(s) as before fa9adcf, computed on
            # the float64 logit (a float32 s alone moved 1 in 10 stored probabilities by 1 ulp)
            with np.errstate(over="ignore", invalid="ignore"):  # |s| > 3.4e38: inf, as sigmoid
                high = values.astype(np.float32)
                low = np.where(np.isfinite(high), values - high, 0.0)
            outs = np.concatenate([low, high], axis=1)
        elif self.head == "softmax":
            outs = self._as_probabilities(outs, start, stop, eps)
        self.activations[start:stop] = block
        self.outputs[start:stop] = outs
        self._unflushed += block.nbytes + int(np.asarray(outs).size) * 4
        if self._unflushed >= _FLUSH_BYTES and isinstance(self.activations, np.memmap):
            # write the dirty pages back every 64 MiB: they are file pages, never anonymous
            # memory, and flushing every batch would make the pass I/O-bound
            self.activations.flush()
            assert isinstance(self.outputs, np.memmap)
            self.outputs.flush()
            self._unflushed = 0

    def _as_probabilities(
        self, outs: NDArray[Any], start: int, stop: int, eps: float | None
    ) -> NDArray[Any]:
        if eps is None:
            kind = np.asarray(outs).dtype
            eps = float(np.finfo(kind).eps) if kind.kind == "f" else 0.0
        tolerance = probability_tolerance(eps)
        values = np.asarray(outs, dtype=np.float64)
        if not np.isfinite(values).all():
            return values  # finish() names the first non-finite row
        worst = _probability_error(values)
        looks = worst <= tolerance
        if self.probabilities is None:
            self.probabilities = looks
        elif looks != self.probabilities:
            first = "already probabilities" if self.probabilities else "not probabilities (logits)"
            now = (
                "are probabilities"
                if looks
                else f"are not (a row is off from summing to 1 by {worst:.3g})"
            )
            raise LabelwiseError(
                f"the model's outputs for the first batch were {first} (rows of non-negative "
                f"values summing to 1 within {tolerance:.3g}), but rows {start}-{stop - 1} {now}; "
                "head='softmax' treats the whole capture one way: pass head='raw' (CLI: --head "
                "raw) to keep the outputs as they are"
            )
        if self.probabilities:
            return values
        values = values - values.max(axis=1, keepdims=True)
        np.exp(values, out=values)
        values /= values.sum(axis=1, keepdims=True)
        return values

    def finish(self, label: str, *, rows: int | None = None) -> tuple[Any, Any]:
        """Softmax (if asked and needed), check, and (with ``out``) move the files into place.

        Returns ``(activations, outputs)``: in-memory arrays, or read-only memory maps of the
        final files.
        """
        if self.activations is None or self.outputs is None:
            raise LabelwiseError("inputs must have at least one row, got 0")
        if rows is not None and rows != self.n_rows:
            raise LabelwiseError(
                f"the inputs announced {self.n_rows} rows but gave {rows}; pass a sized "
                "dataset whose length is the number of rows"
            )
        outputs = self.outputs
        if self._binary is not None:
            # before the check: a logit of +-inf (float16 overflow, logit(1.0)) is p = 1 or 0
            self._binary_probabilities(outputs)
        bad = _first_nonfinite_row(outputs)
        if bad is not None:
            raise LabelwiseError(
                f"the model produced NaN or infinite outputs (first at row {bad}); "
                "check the inputs for NaN/inf"
            )
        if self.out is None:
            return self.activations, self.outputs
        predictions = self._allocate("predictions.npy", *self._prediction_layout())
        for start in range(0, self.n_rows, _CHUNK_ROWS):
            block = outputs[start : start + _CHUNK_ROWS]
            if self.head == "softmax":
                predictions[start : start + _CHUNK_ROWS] = block.argmax(axis=1)
            elif block.shape[1] == 1:
                predictions[start : start + _CHUNK_ROWS] = block[:, 0]
            else:
                predictions[start : start + _CHUNK_ROWS] = block
        arrays = [self.activations, self.outputs, predictions]
        for arr in arrays:
            assert isinstance(arr, np.memmap)
            arr.flush()
        self.activations = self.outputs = None
        del arrays, predictions, outputs
        for name, tmp in list(self._temps.items()):
            os.chmod(tmp, _new_file_mode())
            os.replace(tmp, self.out / name)
            self.written.append(name)
            del self._temps[name]
        acts = np.load(self.out / "activations.npy", mmap_mode="r")
        outs = np.load(self.out / OUTPUT_FILES[self.head], mmap_mode="r")
        if outs.ndim == 1:
            outs = outs.reshape(-1, 1)
        return acts, outs

    def _binary_probabilities(self, outputs: NDArray[np.float32]) -> None:
        """One output per row, as :meth:`write` stored it: ``[1 - p, p]`` in place, ``p`` the
        output itself when it lay in [0, 1] on every row (a sigmoid's probability: taking it for a
        logit squeezed every probability into [0.5, 0.73] and predicted class 1 for nearly
        every row), else ``sigmoid(output)``."""
        assert self._binary is not None
        low, high = self._binary
        self.binary_probability = low >= 0.0 and high <= 1.0
        for start in range(0, self.n_rows, _CHUNK_ROWS):
            block = outputs[start : start + _CHUNK_ROWS]
            s = block[:, 1].astype(np.float64) + block[:, 0]  # the output, float64 (write())
            block[:] = binary_probabilities(s, probability=self.binary_probability)

    def _prediction_layout(self) -> tuple[tuple[int, ...], Any]:
        assert self.outputs is not None
        if self.head == "softmax":
            return (self.n_rows,), np.int64
        width = self.outputs.shape[1]
        return ((self.n_rows,) if width == 1 else (self.n_rows, width)), np.float32

    def abort(self) -> None:
        """Remove the temporary files (nothing when :meth:`finish` has run)."""
        self.activations = self.outputs = None
        for tmp in self._temps.values():
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
        self._temps.clear()


def binary_probabilities(values: Any, *, probability: bool) -> NDArray[np.float64]:
    """``[1 - p, p]``, shape ``(rows, 2)``, of one output per row: ``p = values`` when they
    are a sigmoid's probabilities of class 1 (``probability``), else ``p = sigmoid(values)``
    (logits; -inf and inf give 0 and 1, NaN stays NaN)."""
    s = np.asarray(values, dtype=np.float64).reshape(-1)
    if probability:
        p = s
    else:
        with np.errstate(over="ignore"):  # exp(-x) overflows to inf for x << 0: p = 0
            p = 1.0 / (1.0 + np.exp(-s))
    return np.stack([1.0 - p, p], axis=1)


def _new_file_mode() -> int:
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


# --------------------------------------------------------------------------- softmax


def probability_tolerance(eps: float) -> float:
    """How closely rows must sum to 1 to be taken as probabilities already, for outputs
    computed in a dtype of machine epsilon ``eps`` (the one rule for every adapter)."""
    return max(_PROBABILITY_ATOL, _PROBABILITY_EPS * eps)


def _probability_error(block: NDArray[np.float64]) -> float:
    """How far the rows of ``block`` are from probabilities: the largest ``|sum - 1|``
    (``inf`` when a value is negative or not finite)."""
    if block.size == 0:
        return 0.0
    if not np.isfinite(block).all() or block.min() < 0:
        return float("inf")
    return float(np.abs(block.sum(axis=1) - 1.0).max())


def _first_nonfinite_row(arr: NDArray[np.float32]) -> int | None:
    for start in range(0, arr.shape[0], _CHUNK_ROWS):
        ok = np.isfinite(arr[start : start + _CHUNK_ROWS]).all(axis=1)
        if not ok.all():
            return start + int(np.argmin(ok))
    return None

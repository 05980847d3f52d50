"""Capture as a Dask job: a zarr pile of inputs in, zarr activations and outputs out.

:func:`capture_to_zarr` splits the inputs into row blocks, ships the model to the workers once
(a model file is loaded there by path; a ``torch.nn.Module`` is pickled into one graph key),
runs :func:`labelwise.adapters.torch.capture` on every block as a Dask task and writes each
block's rows straight into the output zarr arrays (one zarr chunk per block, so no two tasks
write the same chunk). Only small per-block summaries travel back to the client, so neither
the client nor a worker holds more than one block.

With a ``distributed.Client`` active the tasks run on its cluster; the output directory must
then be reachable by every worker under the same path (a shared file system)::

    from distributed import Client
    client = Client("tcp://scheduler:8786")      # an existing cluster
    capture_to_zarr("model.pt", "pile/inputs.zarr", "pile/capture")

Without a client Dask's local threaded scheduler runs them. The arrays are written under a
temporary directory inside ``out_dir`` and moved into place only when every block succeeded:
a failure (e.g. NaN in the inputs, named by its global row) leaves nothing behind.
"""

from __future__ import annotations

import contextlib
import functools
import os
import pickle
import shutil
import tempfile
import threading
import uuid
from dataclasses import dataclass
from math import prod
from pathlib import Path
from typing import Any

import numpy as np

from .._chunks import _check_block, is_dask, open_array, rows_per_block
from .._deps import require
from .._validation import check_int, check_out_dir
from ..exceptions import LabelwiseError
from ..io import new_folders, remove_empty
from ._capture import binary_probabilities, warn_one_output

__all__ = ["ZarrCapture", "capture_to_zarr"]

ACTIVATIONS = "activations.zarr"
# capture hooks the model: blocks sharing one model object (threads of a worker) take turns
_CAPTURE_LOCK = threading.Lock()
OUTPUTS = "outputs.zarr"


@dataclass(frozen=True)
class ZarrCapture:
    """Where :func:`capture_to_zarr` wrote, and what.

    Attributes
    ----------
    activations, outputs:
        The written zarr arrays (opened read-only): float32 (N, m) and (N, C).
    layer:
        The captured layer's name (as :attr:`labelwise.adapters.torch.Capture.layer`).
    directory:
        ``out_dir``; the arrays are ``activations.zarr`` and ``outputs.zarr`` inside it.
    n_blocks:
        Number of Dask tasks (row blocks) the capture ran as.
    """

    activations: Any
    outputs: Any
    layer: str
    directory: Path
    n_blocks: int


def _capture_block(
    model: Any,
    block: Any,
    start: int,
    *,
    layer: str | None,
    head: str,
    batch_size: int,
    acts_path: str,
    outs_path: str,
) -> tuple[int, int, str, bool | None, bool | None]:
    """Capture one block on a worker and write its rows into the output zarr arrays; returns
    its rows, layer, and how ``head="softmax"`` took its outputs (``probabilities_given``,
    ``binary_probability``: decided on this block's rows only)."""
    from . import torch as lw_torch

    zarr = require("zarr", "capture to zarr", extra="dask")
    x = np.asarray(block)
    _check_block(x, start, 0, "inputs")
    if isinstance(model, str | os.PathLike):
        model = _load_model(os.fspath(model))
    elif isinstance(model, _Shipped):
        model = model.load()
    try:
        with _CAPTURE_LOCK:  # hooks on a model shared by the threads of one worker
            cap = lw_torch.capture(
                model, x, layer=layer, head=head, batch_size=batch_size, progress=False
            )
    except LabelwiseError as exc:
        raise LabelwiseError(f"inputs rows {start}..{start + x.shape[0] - 1}: {exc}") from None
    stop = start + x.shape[0]
    zarr.open_array(acts_path, mode="r+")[start:stop] = cap.activations
    zarr.open_array(outs_path, mode="r+")[start:stop] = cap.outputs
    return start, stop, cap.layer, cap.probabilities_given, cap.binary_probability


#: Written into the staging folder by the first block that fails: later blocks skip.
_FAILED = ".failed"


def _one_output_decided(
    done: list[tuple[int, int, str, bool | None, bool | None]], outs_path: str, zarr: Any
) -> bool | None:
    """One output per row (``head="softmax"``): each block took its rows for a sigmoid's
    probabilities when they all lay in [0, 1], so a logit model's block of logits in [0, 1]
    was stored as ``[1 - s, s]`` beside blocks of ``[1 - sigmoid, sigmoid]``. The pile is
    one or the other, as in memory: probabilities only if every block was; the blocks that
    took their logits for probabilities hold ``s`` itself in column 1 and are made
    ``[1 - sigmoid(s), sigmoid(s)]``. Returns the pile's decision (None: not one output)."""
    decided = [(a, b, given) for a, b, _, _, given in done if given is not None]
    if not decided:
        return None
    pile = all(given for _, _, given in decided)
    if not pile:
        outs = zarr.open_array(outs_path, mode="r+")
        for a, b, given in decided:
            if given:
                outs[a:b] = binary_probabilities(outs[a:b, 1], probability=False)
    return pile


def _settled_block(*args: Any, acts_path: str, **kwargs: Any) -> Any:
    """:func:`_capture_block` that never raises: ``("ok", result)``, ``("error", exc)`` or
    None (skipped: a block failed before this one started).

    ``dask.compute`` returns at a block's first error while the other blocks still run, and
    those went on writing chunks into the staging folder after the failed capture had
    removed it (the out_dir it made was left behind). Settled blocks let the compute end only
    when every block has ended; after a failure the blocks not yet started skip at once."""
    sentinel = Path(acts_path).parent / _FAILED
    if sentinel.exists():
        return None
    try:
        return "ok", _capture_block(*args, acts_path=acts_path, **kwargs)
    except Exception as exc:
        with contextlib.suppress(OSError):
            sentinel.touch()
        return "error", exc


class _Shipped:
    """A model pickled once on the client and unpickled once per worker process.

    Shipping the pickle's bytes (not the module) keeps the module's own state exactly as
    ``pickle`` restores it (Dask's serialisation of a live module can break its hook dicts).
    """

    _cache: dict[str, Any] = {}  # noqa: RUF012 - per-process cache, shared on purpose

    def __init__(self, model: Any) -> None:
        self.token = uuid.uuid4().hex
        self.payload = pickle.dumps(model)

    def load(self) -> Any:
        with _CAPTURE_LOCK:
            if self.token not in self._cache:
                self._cache.clear()  # one model at a time per worker
                self._cache[self.token] = pickle.loads(self.payload)
            return self._cache[self.token]


@functools.lru_cache(maxsize=2)
def _load_model(path: str) -> Any:
    """A model file loaded once per worker process (not once per block)."""
    from . import torch as lw_torch

    return lw_torch.load_model(path)


def _as_dask(inputs: Any, rows: int) -> Any:
    da = require("dask.array", "capture to zarr", extra="dask")
    arr = open_array(inputs)
    if not is_dask(arr):
        arr = da.from_array(arr, chunks=(rows, *arr.shape[1:]))
    return arr.rechunk({0: rows, **{i: -1 for i in range(1, arr.ndim)}})


def capture_to_zarr(
    model: Any,
    inputs: Any,
    out_dir: str | os.PathLike[str],
    *,
    layer: str | None = None,
    head: str | None = None,
    batch_size: int = 256,
    rows_per_task: int | None = None,
) -> ZarrCapture:
    """Run :func:`labelwise.adapters.torch.capture` over a pile as Dask tasks, into zarr.

    Parameters
    ----------
    model:
        A ``torch.nn.Module`` (pickled to the workers) or the path of a model file that every
        worker can read (loaded there with :func:`labelwise.adapters.torch.load_model`).
    inputs:
        The pile: a zarr array or its path, a ``dask.array``, a memory-mapped ``.npy``, a
        directory of ``.npy`` chunks (anything :func:`labelwise._chunks.open_array` opens).
    out_dir:
        Directory for ``activations.zarr`` and ``outputs.zarr`` (created; existing arrays
        there are an error).
    layer, head, batch_size:
        As :func:`labelwise.adapters.torch.capture` (``head="softmax"`` decides on the first
        row whether the outputs already are probabilities; a block that disagrees is an error;
        one output per row is a sigmoid's probability when it lies in [0, 1] on every row of
        the pile, else a logit, as in memory).
    rows_per_task:
        Rows per Dask task and per output zarr chunk (default: the 64 MiB block budget of
        :mod:`labelwise._chunks` over 8 bytes per input, activation and output value of a
        row).

    Returns
    -------
    ZarrCapture
        The written arrays, opened read-only; results equal the in-memory
        :func:`~labelwise.adapters.torch.capture` of the same inputs.
    """
    dask = require("dask", "capture to zarr", extra="dask")
    zarr = require("zarr", "capture to zarr", extra="dask")
    from . import torch as lw_torch

    check_int(batch_size, "batch_size", minimum=1)
    src = open_array(inputs)
    if len(src.shape) < 2 or src.shape[0] < 1:
        raise LabelwiseError(
            f"inputs must be a non-empty array of rows (N, ...), got shape {tuple(src.shape)}"
        )
    if rows_per_task is not None:
        check_int(rows_per_task, "rows_per_task", minimum=1)
    out = Path(out_dir)
    check_out_dir(out, "out_dir")
    for name in (ACTIVATIONS, OUTPUTS):
        if (out / name).exists():
            raise LabelwiseError(f"out_dir already holds {out / name}; remove it or pick another")

    # shapes and the layer from the first row, captured here (cheap)
    first = np.asarray(src[:1])
    _check_block(first, 0, 0, "inputs")
    # head None is softmax; the note on one output per row waits for every block (one row
    # cannot tell a sigmoid's probability from a logit)
    inferred = head is None
    given = "softmax" if head is None else head
    probe = lw_torch.capture(model, first, layer=layer, head=given, batch_size=1, progress=False)
    head = probe.head
    n = int(src.shape[0])
    # a block holds its inputs, activations and outputs: the budget covers all three
    width = prod(src.shape[1:]) + probe.activations.shape[1] + probe.outputs.shape[1]
    rows = rows_per_block((n, width), np.float64) if rows_per_task is None else rows_per_task
    # out_dir is made only now, after the probe: a model or inputs refused left it empty;
    # the folders made here are removed again if a block fails
    created = new_folders(out)
    out.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".capture-", dir=out))
    moved = False
    try:
        acts_path, outs_path = str(tmp / ACTIVATIONS), str(tmp / OUTPUTS)
        for path, width in (
            (acts_path, probe.activations.shape[1]),
            (outs_path, probe.outputs.shape[1]),
        ):
            zarr.open_array(
                path, mode="w", shape=(n, width), chunks=(rows, width), dtype=np.float32
            )
        arr = _as_dask(src, rows)
        what = model if isinstance(model, str | os.PathLike) else _Shipped(model)
        shipped = dask.delayed(what, name=f"labelwise-model-{uuid.uuid4().hex}")
        blocks = arr.to_delayed().ravel()
        starts = np.concatenate([[0], np.cumsum(arr.chunks[0])[:-1]]).astype(int).tolist()
        call = dask.delayed(_settled_block, pure=False)
        tasks = [
            call(
                shipped,
                b,
                s,
                layer=layer,
                head=head,
                batch_size=batch_size,
                acts_path=acts_path,
                outs_path=outs_path,
            )
            for b, s in zip(blocks, starts, strict=True)
        ]
        settled = dask.compute(*tasks)
        for result in settled:
            if result is not None and result[0] == "error":
                raise result[1]
        done: list[tuple[int, int, str, bool | None, bool | None]] = [
            result[1] for result in settled
        ]
        layers = {label for _, _, label, _, _ in done}
        if layers != {probe.layer}:
            raise LabelwiseError(f"blocks captured different layers: {sorted(layers)}")
        odd = [(a, b) for a, b, _, given, _ in done if given != probe.probabilities_given]
        if odd:
            kind = "already probabilities" if probe.probabilities_given else "logits"
            raise LabelwiseError(
                f"the model's outputs for row 0 were {kind}, but not for rows "
                f"{odd[0][0]}-{odd[0][1] - 1} ({len(odd)} blocks disagree): head='softmax' must "
                "treat the whole pile one way; pass head='raw' to keep the outputs as they are"
            )
        binary = _one_output_decided(done, outs_path, zarr)
        for name in (ACTIVATIONS, OUTPUTS):
            os.replace(tmp / name, out / name)
        moved = True
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
        if not moved:
            remove_empty(created)
    if inferred and binary is not None:
        warn_one_output(probability=binary)
    return ZarrCapture(
        activations=zarr.open_array(str(out / ACTIVATIONS), mode="r"),
        outputs=zarr.open_array(str(out / OUTPUTS), mode="r"),
        layer=probe.layer,
        directory=out,
        n_blocks=len(done),
    )

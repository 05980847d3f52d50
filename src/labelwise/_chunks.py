"""One way to read a pile in row blocks: in memory, memory-mapped, zarr, a directory, Dask.

Every sampler, the campaign and the coverage metrics read their (N, ...) inputs through
:func:`map_rows` (per-row outputs, e.g. a confidence per row) or :func:`reduce_rows` (a
mergeable state, e.g. a coverage table). Both

- accept a NumPy array, an ``np.memmap`` (a memory-mapped ``.npy``), a zarr array, a
  :class:`ChunkedArray` (a directory of ``.npy`` chunk files) or a ``dask.array``;
- read ``rows_per_block`` rows at a time, so the anonymous memory of a pass is bounded by the
  block budget (:func:`get_block_bytes`, 64 MiB by default, ``LABELWISE_BLOCK_BYTES`` or
  :func:`block_bytes` to change it), not by N;
- check every block for NaN and infinity before using it and name the *global* row of the
  first one (nothing is computed, so nothing is written, past a bad row);
- run the blocks of a ``dask.array`` as Dask tasks (``dask.compute`` over one delayed call per
  block; results merged by a tree of delayed ``combine`` calls): with a
  ``distributed.Client`` active they run on its cluster. Results do not depend on where the
  blocks ran: per-row outputs are concatenated in row order and accumulators merge exactly.

:func:`open_array` turns a path into one of these (``.npy`` memory-mapped, ``.zarr``, a
directory of ``.npy`` chunks).
"""

from __future__ import annotations

import contextlib
import copy
import functools
import math
import os
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
from numpy.typing import NDArray

from .exceptions import LabelwiseError

__all__ = [
    "DEFAULT_BLOCK_BYTES",
    "ChunkedArray",
    "block_bytes",
    "check_rows",
    "concat_rows",
    "first_nonfinite",
    "get_block_bytes",
    "is_dask",
    "iter_blocks",
    "map_rows",
    "open_array",
    "pick_rows",
    "raise_if_nonfinite",
    "reduce_rows",
    "rows_per_block",
    "take_rows",
]

R = TypeVar("R")

#: Default byte budget of one block (its float64 working copy).
DEFAULT_BLOCK_BYTES = 64 * 2**20

_BLOCK_BYTES: list[int] = []  # stack of overrides set by block_bytes()


def get_block_bytes() -> int:
    """The byte budget of one block: the innermost :func:`block_bytes`, else the
    ``LABELWISE_BLOCK_BYTES`` environment variable, else :data:`DEFAULT_BLOCK_BYTES`."""
    if _BLOCK_BYTES:
        return _BLOCK_BYTES[-1]
    env = os.environ.get("LABELWISE_BLOCK_BYTES")
    if env:
        try:
            value = int(env)
        except ValueError:
            raise LabelwiseError(
                f"LABELWISE_BLOCK_BYTES must be a positive integer, got {env!r}"
            ) from None
        if value < 1:
            raise LabelwiseError(f"LABELWISE_BLOCK_BYTES must be a positive integer, got {env!r}")
        return value
    return DEFAULT_BLOCK_BYTES


@contextlib.contextmanager
def block_bytes(nbytes: int) -> Iterator[None]:
    """Use blocks of about ``nbytes`` bytes inside the ``with`` block (tests force it tiny)."""
    if isinstance(nbytes, bool) or not isinstance(nbytes, int | np.integer) or nbytes < 1:
        raise LabelwiseError(f"block bytes must be a positive integer, got {nbytes!r}")
    _BLOCK_BYTES.append(int(nbytes))
    try:
        yield
    finally:
        _BLOCK_BYTES.pop()


# --------------------------------------------------------------------------- inputs


def is_dask(x: Any) -> bool:
    """True for a ``dask.array.Array`` (checked without importing dask)."""
    return type(x).__module__.startswith("dask.") and hasattr(x, "to_delayed")


def _is_zarr(x: Any) -> bool:
    return type(x).__module__.startswith("zarr.")


class ChunkedArray:
    """Several arrays with the same trailing shape and dtype, read as one along the rows.

    ``ChunkedArray.open(directory)`` memory-maps every ``*.npy`` file of a directory in name
    order (name them ``part-00000.npy``, ``part-00001.npy``, ... so the order is the row
    order). Supports ``shape``, ``dtype``, ``ndim``, ``len()`` and row slicing
    (``x[a:b]`` returns a NumPy array; only the parts the slice touches are read).
    """

    def __init__(self, parts: Sequence[Any], *, names: Sequence[str] | None = None) -> None:
        if not parts:
            raise LabelwiseError("a chunked array needs at least one chunk, got none")
        names = list(names) if names is not None else [f"chunk {i}" for i in range(len(parts))]
        first = parts[0]
        tail, dtype = tuple(first.shape[1:]), np.dtype(first.dtype)
        for part, name in zip(parts, names, strict=True):
            if np.ndim(part) < 1:
                raise LabelwiseError(f"{name} must be an array with rows, got a scalar")
            if tuple(part.shape[1:]) != tail:
                raise LabelwiseError(
                    f"every chunk must have the trailing shape {tail} of {names[0]}, "
                    f"{name} has shape {tuple(part.shape)}"
                )
            if np.dtype(part.dtype) != dtype:
                raise LabelwiseError(
                    f"every chunk must have the dtype {dtype} of {names[0]}, {name} has "
                    f"{part.dtype}"
                )
        self._parts = list(parts)
        sizes = np.array([int(p.shape[0]) for p in self._parts], dtype=np.int64)
        self._starts = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        self.dtype = dtype
        self.shape: tuple[int, ...] = (int(self._starts[-1]), *tail)

    @classmethod
    def open(cls, directory: str | os.PathLike[str]) -> ChunkedArray:
        """Memory-map the ``*.npy`` files of ``directory``, concatenated in name order."""
        d = Path(directory)
        if not d.is_dir():
            raise LabelwiseError(f"chunk directory {d} does not exist or is not a directory")
        files = sorted(p for p in d.iterdir() if p.suffix == ".npy")
        if not files:
            raise LabelwiseError(f"chunk directory {d} holds no .npy files")
        parts = []
        for f in files:
            try:
                parts.append(np.load(f, mmap_mode="r", allow_pickle=False))
            except (ValueError, OSError, EOFError) as exc:
                raise LabelwiseError(f"chunk {f} is not a readable .npy array ({exc})") from None
        return cls(parts, names=[str(f) for f in files])

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def n_chunks(self) -> int:
        return len(self._parts)

    def __len__(self) -> int:
        return self.shape[0]

    def __repr__(self) -> str:
        return f"ChunkedArray(shape={self.shape}, dtype={self.dtype}, chunks={self.n_chunks})"

    def __getitem__(self, key: Any) -> NDArray[Any]:
        if isinstance(key, int | np.integer) and not isinstance(key, bool):
            i = int(key) + (self.shape[0] if key < 0 else 0)
            if not 0 <= i < self.shape[0]:
                raise IndexError(f"row {key} is out of range for {self.shape[0]} rows")
            return self[i : i + 1][0]
        if isinstance(key, tuple) and key and isinstance(key[0], slice):
            return self[key[0]][(slice(None), *key[1:])]
        if isinstance(key, slice):
            start, stop, step = key.indices(self.shape[0])
            if step != 1:
                return self[start:stop][::step]
            stop = max(stop, start)
            first = int(np.searchsorted(self._starts, start, side="right")) - 1
            out = []
            i = max(first, 0)
            while i < len(self._parts) and self._starts[i] < stop:
                lo = max(start - int(self._starts[i]), 0)
                hi = min(stop, int(self._starts[i + 1])) - int(self._starts[i])
                out.append(np.asarray(self._parts[i][lo:hi]))
                i += 1
            if not out:
                return np.empty((0, *self.shape[1:]), dtype=self.dtype)
            return out[0] if len(out) == 1 else np.concatenate(out)
        rows = np.asarray(key)
        if rows.dtype == bool:
            rows = np.flatnonzero(rows)
        rows = rows.astype(np.int64).reshape(-1)
        result = np.empty((rows.size, *self.shape[1:]), dtype=self.dtype)
        part = np.searchsorted(self._starts, rows, side="right") - 1
        for p in np.unique(part):
            m = part == p
            result[m] = np.asarray(self._parts[p])[rows[m] - self._starts[p]]
        return result

    def __array__(self, dtype: Any = None, copy: Any = None) -> NDArray[Any]:
        whole = self[:]
        return whole if dtype is None else whole.astype(dtype)


def known_shape(x: Any, name: str = "the dask array") -> tuple[int, ...]:
    """``x.shape`` as integers; a dask array of unknown length (NaN chunks, e.g. after boolean
    filtering) is a :class:`LabelwiseError` saying how to compute its chunk sizes."""
    shape = tuple(x.shape)
    if any(isinstance(s, float) and not np.isfinite(s) for s in shape):
        raise LabelwiseError(
            f"{name} has unknown chunk sizes (shape {shape}, e.g. after boolean indexing); call "
            "its .compute_chunk_sizes() first (for a dask DataFrame: .to_dask_array(lengths=True))"
        )
    return tuple(int(s) for s in shape)


def open_array(source: Any, name: str = "the dask array") -> Any:
    """A row-readable array from ``source``.

    A path is opened by what it is: a ``.npy`` file memory-mapped, a ``.zarr`` store (or any
    directory zarr recognises) as a zarr array, another directory as a :class:`ChunkedArray`
    of its ``.npy`` files. Arrays (NumPy, memmap, zarr, dask, :class:`ChunkedArray`) are
    returned as they are (a dask array of unknown length is an error naming ``name``);
    anything else goes through ``np.asarray``.
    """
    if isinstance(source, str | os.PathLike):
        p = Path(source)
        if p.is_file():
            from .io import load_array

            return load_array(p, "path")
        if p.is_dir():
            from .io import load_array

            # a zarr store, or a directory of one array's .npy chunks (the messages say which)
            return load_array(p, "path")
        raise LabelwiseError(f"path: {p} does not exist")
    if is_dask(source):
        known_shape(source, name)
        return source
    if isinstance(source, np.ndarray | ChunkedArray) or _is_zarr(source):
        return source
    return np.asarray(source)


# --------------------------------------------------------------------------- blocks


def rows_per_block(
    shape: Sequence[int], dtype: Any, *, axis: int = 0, nbytes: int | None = None
) -> int:
    """Rows (along ``axis``) per block: the budget over the bytes of one row in float64."""
    other = math.prod(int(s) for i, s in enumerate(shape) if i != axis)
    per_row = max(1, other) * max(np.dtype(dtype).itemsize, 8)
    budget = get_block_bytes() if nbytes is None else nbytes
    return max(1, budget // per_row)


def _bounds(arr: Any, axis: int) -> list[tuple[int, int]]:
    n = int(arr.shape[axis])
    rows = rows_per_block(arr.shape, arr.dtype, axis=axis)
    chunks = getattr(arr, "chunks", None)
    if _is_zarr(arr) and chunks is not None:  # whole zarr chunks per block where possible
        c = int(chunks[axis])
        if rows >= c:
            rows = rows // c * c
    return [(s, min(s + rows, n)) for s in range(0, n, rows)]


def _zarr_read_error(arr: Any, where: str, exc: Exception) -> LabelwiseError:
    """A failed read of a zarr array (a corrupt or missing chunk) as one line."""
    store = getattr(arr, "store_path", None) or getattr(arr, "store", None) or "a zarr array"
    text = " ".join(str(exc).split()) or type(exc).__name__
    return LabelwiseError(f"cannot read {where} of the zarr array {store} ({text[:300]})")


def _take(arr: Any, start: int, stop: int, axis: int) -> NDArray[Any]:
    index = (slice(None),) * axis + (slice(start, stop),)
    if _is_zarr(arr):
        try:
            return np.asarray(arr[index])
        except Exception as exc:  # codecs and stores raise many types
            raise _zarr_read_error(arr, f"rows {start}..{stop - 1}", exc) from None
    block = arr[index]
    if is_dask(block):
        block = block.compute()
    return np.asarray(block)


def iter_blocks(arr: Any, *, axis: int = 0) -> Iterator[tuple[int, NDArray[Any]]]:
    """``(start, block)`` for consecutive row blocks (NumPy arrays) of ``arr`` along ``axis``."""
    for start, stop in _bounds(arr, axis):
        yield start, _take(arr, start, stop, axis)


def _first_nonfinite_block(block: NDArray[Any], axis: int) -> int | None:
    """Position along ``axis`` of the first row of ``block`` holding NaN or infinity."""
    if block.dtype.kind not in "fc" or block.size == 0:
        return None
    ok = np.isfinite(block)
    if ok.all():
        return None
    other = tuple(i for i in range(block.ndim) if i != axis)
    bad_rows = ~ok.all(axis=other) if other else ~ok
    return int(np.flatnonzero(bad_rows)[0])


def _check_block(block: NDArray[Any], start: int, axis: int, name: str) -> None:
    bad = _first_nonfinite_block(block, axis)
    if bad is not None:
        raise LabelwiseError(
            f"{name} must be finite, found NaN or infinity at row {start + bad} "
            "(drop or impute those rows first)"
        )


def first_nonfinite(arr: Any, *, axis: int = 0) -> int | None:
    """Global row (along ``axis``) of the first NaN or infinity, in one chunked pass."""
    for start, block in iter_blocks(arr, axis=axis):
        bad = _first_nonfinite_block(block, axis)
        if bad is not None:
            return start + bad
    return None


def raise_if_nonfinite(arr: Any, name: str, *, axis: int = 0) -> None:
    """Raise :class:`LabelwiseError` naming the first row of ``arr`` with NaN or infinity."""
    if np.dtype(arr.dtype).kind not in "fc" or 0 in arr.shape:
        return
    bad = first_nonfinite(arr, axis=axis)
    if bad is not None:
        raise LabelwiseError(
            f"{name} must be finite, found NaN or infinity at row {bad} "
            "(drop or impute those rows first)"
        )


def _run_block(
    fn: Callable[[NDArray[Any], int], R],
    block: Any,
    start: int,
    axis: int,
    name: str,
    check_finite: bool,
) -> R:
    block = np.asarray(block)
    if check_finite:
        _check_block(block, start, axis, name)
    return fn(block, start)


def _dask_blocks(arr: Any, axis: int) -> tuple[list[Any], list[int]]:
    """One delayed NumPy block per row block of a dask array, and the blocks' first rows."""
    rows = rows_per_block(arr.shape, arr.dtype, axis=axis)
    target = {i: -1 for i in range(arr.ndim) if i != axis}
    sizes = arr.chunks[axis]
    if max(sizes, default=0) > rows:
        target[axis] = rows
    arr = arr.rechunk(target)
    blocks = list(arr.to_delayed().ravel())
    starts = np.concatenate([[0], np.cumsum(arr.chunks[axis])[:-1]]).astype(int).tolist()
    return blocks, starts


def map_rows(
    fn: Callable[[NDArray[Any], int], R],
    arr: Any,
    *,
    name: str = "data",
    axis: int = 0,
    check_finite: bool = True,
) -> list[R]:
    """``[fn(block, start), ...]`` over the row blocks of ``arr``, in row order.

    Every block is checked for NaN/inf first (``check_finite``), the error naming the global
    row. A dask array's blocks run as Dask tasks (on the active ``distributed.Client``, if
    any); ``fn`` must then be picklable (a module-level function or a ``functools.partial``).
    """
    if is_dask(arr):
        import dask

        blocks, starts = _dask_blocks(arr, axis)
        call = dask.delayed(_run_block, pure=True)
        tasks = [
            call(fn, b, s, axis, name, check_finite) for b, s in zip(blocks, starts, strict=True)
        ]
        return list(dask.compute(*tasks))
    return [
        _run_block(fn, block, start, axis, name, check_finite)
        for start, block in iter_blocks(arr, axis=axis)
    ]


def reduce_rows(
    fn: Callable[[NDArray[Any], int], R],
    combine: Callable[[R, R], R],
    arr: Any,
    *,
    name: str = "data",
    axis: int = 0,
    check_finite: bool = True,
) -> R:
    """``fn`` on every row block, the results folded by ``combine`` (left to right).

    For a dask array the blocks and the folding run as Dask tasks: ``combine`` is applied
    pairwise in a tree (adjacent blocks, row order kept), so only one result per worker step
    travels. ``combine`` must be associative (accumulators' ``merge`` is).
    """
    if is_dask(arr):
        import dask

        blocks, starts = _dask_blocks(arr, axis)
        call = dask.delayed(_run_block, pure=True)
        level = [
            call(fn, b, s, axis, name, check_finite) for b, s in zip(blocks, starts, strict=True)
        ]
        join = dask.delayed(combine, pure=True)
        while len(level) > 1:
            nxt = [join(level[i], level[i + 1]) for i in range(0, len(level) - 1, 2)]
            if len(level) % 2:
                nxt.append(level[-1])
            level = nxt
        (out,) = dask.compute(level[0])
        return out
    acc: R | None = None
    for start, block in iter_blocks(arr, axis=axis):
        part = _run_block(fn, block, start, axis, name, check_finite)
        acc = part if acc is None else combine(acc, part)
    if acc is None:
        raise LabelwiseError(f"{name} must have at least one row")
    return acc


def concat_rows(parts: Sequence[NDArray[Any]], *, axis: int = 0) -> NDArray[Any]:
    """Per-block outputs of :func:`map_rows` joined back into one array."""
    return parts[0] if len(parts) == 1 else np.concatenate(list(parts), axis=axis)


def merge_accumulators(a: Any, b: Any) -> Any:
    """``a.merge(b)`` (the ``combine`` for :func:`reduce_rows` over accumulators)."""
    return a.merge(b)


def accumulate(make: Callable[[], Any], arr: Any, *, name: str = "activations") -> Any:
    """An accumulator (``update``/``merge``) built over ``arr`` block by block and merged."""
    return reduce_rows(functools.partial(_update_new, make), merge_accumulators, arr, name=name)


def _update_new(make: Callable[[], Any], block: NDArray[Any], start: int) -> Any:
    return make().update(block)


def take_rows(arr: Any, rows: NDArray[np.int64]) -> NDArray[Any]:
    """The given rows (sorted, distinct) of ``arr`` as a NumPy array, read without the rest."""
    rows = np.asarray(rows, dtype=np.int64)
    if is_dask(arr):
        return np.asarray(arr[rows].compute())
    if _is_zarr(arr):
        try:
            return np.asarray(arr.oindex[rows])
        except Exception as exc:  # codecs and stores raise many types
            raise _zarr_read_error(arr, f"{rows.size} selected rows", exc) from None
    return np.asarray(arr[rows])


def pick_rows(arr: Any, rows: Any) -> NDArray[Any]:
    """``arr[rows]`` as a NumPy array, in the order of ``rows`` (repeats allowed), reading
    only those rows (in row order) of a memmap, a zarr array, a dask array, ...."""
    rows = np.asarray(rows, dtype=np.int64).reshape(-1)
    distinct, back = np.unique(rows, return_inverse=True)
    return take_rows(arr, distinct)[back.reshape(-1)]


def check_not_container(x: Any, name: str) -> None:
    """A mapping, set or None is not an array: say so instead of "got shape ()"."""
    if (
        x is None
        or isinstance(x, (dict, set, frozenset))
        or (hasattr(x, "keys") and not hasattr(x, "shape"))
    ):
        raise LabelwiseError(
            f"{name} must be an array with one row per input (NumPy, memmap, zarr or dask), "
            f"got {type(x).__name__}"
        )


def _ranks(ndims: tuple[int, ...]) -> str:
    """``1-D or 2-D``; a run of more than three ranks as ``at least 1-D`` (up to NumPy's 32)."""
    if len(ndims) > 3 and ndims == tuple(range(ndims[0], ndims[0] + len(ndims))):
        return f"at least {ndims[0]}-D"
    return " or ".join(f"{d}-D" for d in ndims)


def check_rows(x: Any, name: str, *, ndim: int | Sequence[int], min_rows: int = 1) -> Any:
    """``x`` opened (:func:`open_array`, nothing read) and checked: rank, numeric dtype, rows.

    The out-of-core counterpart of :func:`labelwise._validation.check_numeric_array`;
    finiteness is checked block by block in the passes (:func:`map_rows`).
    """
    check_not_container(x, name)
    try:
        arr = open_array(x, name)
    except (TypeError, ValueError) as exc:
        if isinstance(exc, LabelwiseError):
            raise
        raise LabelwiseError(f"{name} must be a numeric array: {exc}") from None
    ndims = (ndim,) if isinstance(ndim, int) else tuple(ndim)
    if len(arr.shape) not in ndims:
        raise LabelwiseError(f"{name} must be {_ranks(ndims)}, got shape {tuple(arr.shape)}")
    if np.dtype(arr.dtype).kind not in "biuf":
        raise LabelwiseError(f"{name} must hold numbers, got dtype {arr.dtype}")
    if arr.shape[0] < min_rows:
        raise LabelwiseError(f"{name} must have at least {min_rows} row(s), got {arr.shape[0]}")
    return arr


def check_per_input(x: Any, name: str, *, min_rows: int = 1, noun: str = "arrays") -> Any:
    """An (N, ...) array of per-input values, opened, not read (rank >= 2, numeric, rows)."""
    arr = check_rows(x, name, ndim=tuple(range(1, 33)), min_rows=0)
    if arr.ndim < 2:
        raise LabelwiseError(
            f"{name} must be (N, n_neurons) or (N, ...) per-input {noun}, got shape "
            f"{tuple(arr.shape)}"
        )
    if arr.shape[0] < min_rows:
        raise LabelwiseError(f"{name} must have at least {min_rows} row(s), got {arr.shape[0]}")
    return arr


def _update_copy(template: Any, block: NDArray[Any], start: int) -> Any:
    acc = copy.deepcopy(template)
    return acc.update(block)


def accumulate_like(template: Any, arr: Any, *, name: str = "activations") -> Any:
    """Copies of the (empty) accumulator ``template`` updated block by block, then merged.

    On a dask array every block's accumulator is built in a Dask task and the merges run as a
    tree of tasks (:func:`reduce_rows`); ``template`` is left untouched.
    """
    return reduce_rows(
        functools.partial(_update_copy, template), merge_accumulators, arr, name=name
    )

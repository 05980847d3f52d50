"""Piles: the unlabelled inputs a model is run over, read a batch of rows at a time.

:func:`open_pile` opens

- ``.npy`` arrays (memory-mapped: a batch reads only its rows),
- ``.npz`` archives (one array, chosen with ``key=``),
- zarr array stores (a ``.zarr`` directory, or one holding ``zarr.json`` / ``.zarray``; read
  chunk by chunk, so a pile written by :func:`labelwise.adapters.dask_capture.capture_to_zarr`
  or any zarr writer can be larger than memory),
- folders of images (png, jpg, jpeg, bmp, gif, webp, tif, tiff; found recursively, sorted by path;
  decoded with Pillow a batch at a time, with one declared :class:`ImageSpec` for every row),
- CSV tables (header required) and Parquet tables (pyarrow), numeric ``columns=``,

as a :class:`Pile`: ``len(pile)``, ``pile.shape`` (rows first), ``pile.dtype`` (float32),
``pile[start:stop]`` or ``pile[int_array]`` (a float32 array of just those rows), ``pile.ids``
(one stable string per row: an image's path under the folder, ``/``-separated; a table's id
column; else the row number) and :meth:`Pile.describe` (what ``labelwise capture`` writes as
the ``"pile"`` entry of ``capture.json``). A :class:`Pile` has ``shape``, ``dtype`` and slicing,
so :func:`labelwise.adapters.torch.capture` reads it batch by batch like a memory map.

NumPy only at import: Pillow and pyarrow are imported when an image folder or a Parquet file
is opened.

Examples
--------
>>> from labelwise.piles import ImageSpec, open_pile
>>> pile = open_pile("photos/", image=ImageSpec(size=(32, 32), channels=3))  # doctest: +SKIP
>>> pile.shape, pile.ids[0]  # doctest: +SKIP
((2000, 3, 32, 32), 'cats/0001.png')
"""

from __future__ import annotations

import csv
import math
import os
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, overload

import numpy as np
from numpy.typing import NDArray

from ._deps import require
from ._validation import close_name, did_you_mean
from .exceptions import LabelwiseError, user_stacklevel
from .io import csv_delimiter, is_zarr_store, open_zarr

__all__ = ["IMAGE_SUFFIXES", "ImageSpec", "Pile", "open_pile"]

IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".bmp", ".gif", ".webp", ".tif", ".tiff")
_LAYOUTS = ("chw", "hwc")


@dataclass(frozen=True)
class ImageSpec:
    """How every image of a folder becomes one row (the same for every row).

    Each image is converted to ``channels`` (1: grey ``"L"``, 3: ``"RGB"``; a 16-bit grey
    image keeps its full depth, its values scaled by 255/65535 to the 8-bit range), resized to
    ``size`` = ``(height, width)`` with bilinear resampling (``None``: every image must already
    have the same size), scaled (``pixel * scale``), normalised per channel
    (``(x - mean) / std``; ``None``: not normalised) and laid out as ``"chw"``
    (channels, height, width: PyTorch) or ``"hwc"``.
    """

    size: tuple[int, int] | None = None
    channels: int = 3
    scale: float = 1.0 / 255.0
    mean: tuple[float, ...] | None = None
    std: tuple[float, ...] | None = None
    layout: str = "chw"

    def __post_init__(self) -> None:
        if self.size is not None:
            size = tuple(self.size)
            if len(size) != 2 or not all(
                isinstance(s, int | np.integer) and not isinstance(s, bool) and s >= 1 for s in size
            ):
                raise LabelwiseError(
                    f"image size must be (height, width) of positive integers, got {self.size!r}"
                )
            object.__setattr__(self, "size", (int(size[0]), int(size[1])))
        if self.channels not in (1, 3):
            raise LabelwiseError(
                f"image channels (CLI: --channels) must be 1 or 3, got {self.channels!r}"
            )
        if not (
            isinstance(self.scale, int | float) and math.isfinite(self.scale) and self.scale > 0
        ):
            raise LabelwiseError(
                f"image scale (CLI: --scale) must be a positive finite number (pixel * scale), "
                f"got {self.scale!r}"
            )
        if self.layout not in _LAYOUTS:
            raise LabelwiseError(f"image layout must be one of {_LAYOUTS}, got {self.layout!r}")
        for name in ("mean", "std"):
            value = getattr(self, name)
            if value is None:
                continue
            vals = tuple(float(v) for v in value)
            if len(vals) not in (1, self.channels) or not all(math.isfinite(v) for v in vals):
                raise LabelwiseError(
                    f"image {name} (CLI: --{name}) must be 1 or {self.channels} (channels) finite "
                    f"numbers, got {value!r}"
                )
            if name == "std" and any(v <= 0 for v in vals):
                raise LabelwiseError(f"image std (CLI: --std) must be positive, got {value!r}")
            object.__setattr__(self, name, vals)

    def to_dict(self) -> dict[str, Any]:
        return {
            "size": None if self.size is None else list(self.size),
            "channels": self.channels,
            "scale": self.scale,
            "mean": None if self.mean is None else list(self.mean),
            "std": None if self.std is None else list(self.std),
            "layout": self.layout,
        }


class _RowNumbers(Sequence[str]):
    """``"0", "1", ...``: the ids of a pile whose rows have no name."""

    def __init__(self, n: int) -> None:
        self._n = n

    def __len__(self) -> int:
        return self._n

    @overload
    def __getitem__(self, i: int) -> str: ...
    @overload
    def __getitem__(self, i: slice) -> Sequence[str]: ...
    def __getitem__(self, i: int | slice) -> str | Sequence[str]:
        if isinstance(i, slice):
            return [str(j) for j in range(self._n)[i]]
        return str(range(self._n)[i])


class Pile:
    """Rows of inputs, read on demand. Made by :func:`open_pile`.

    ``pile[key]`` takes a slice, an integer or an array of row indices and returns float32
    rows (reading, decoding or converting only those rows).
    """

    def __init__(
        self,
        *,
        kind: str,
        path: Path,
        shape: tuple[int, ...],
        read: Callable[[NDArray[np.int64] | slice], NDArray[Any]],
        ids: Sequence[str],
        info: dict[str, Any],
        stored_dtype: np.dtype[Any] | None = None,
    ) -> None:
        self.kind = kind
        self.path = path
        self.shape = shape
        self.dtype = np.dtype(np.float32)
        #: the dtype an array pile is stored in (rows are read as float32); None otherwise
        self.stored_dtype = stored_dtype
        self.ids = ids
        self._read = read
        self._info = info

    @property
    def skipped(self) -> tuple[tuple[str, str], ...]:
        """Image folders opened with ``skip_corrupt``: ``(id, reason)`` of each file left out
        (``describe()["skipped"]`` as pairs; empty for every other pile)."""
        return tuple((s["id"], s["reason"]) for s in self._info.get("skipped", ()))

    def __len__(self) -> int:
        return self.shape[0]

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def __getitem__(self, key: Any) -> NDArray[np.float32]:
        n = self.shape[0]
        if isinstance(key, slice):
            start, stop, step = key.indices(n)
            sel: NDArray[np.int64] | slice = (
                slice(start, max(start, stop)) if step == 1 else np.arange(start, stop, step)
            )
            out = self._read(sel)
        elif isinstance(key, int | np.integer) and not isinstance(key, bool):
            i = int(key)
            if not -n <= i < n:
                raise IndexError(f"row {i} is outside the pile of {n} rows")
            out = self._read(np.asarray([i % n], dtype=np.int64))[0]
        else:
            idx = np.asarray(key)
            if idx.dtype == bool:
                idx = np.flatnonzero(idx)
            if idx.ndim != 1 or idx.dtype.kind not in "iu":
                raise IndexError("a pile takes a slice, an integer or a 1-D array of row indices")
            idx = idx.astype(np.int64)
            if idx.size and (idx.min() < -n or idx.max() >= n):
                raise IndexError(f"row indices must be in [-{n}, {n}), got {idx.tolist()[:10]}")
            out = self._read(idx % n if n else idx)
        return np.asarray(out, dtype=np.float32)

    def __array__(self, dtype: Any = None, copy: Any = None) -> NDArray[Any]:
        arr = self[:]
        return arr if dtype is None else arr.astype(dtype)

    def describe(self) -> dict[str, Any]:
        """What the pile is: kind, path, root, preprocessing, columns, key, shape (JSON)."""
        return {
            "kind": self.kind,
            "path": str(self.path.resolve()),
            "root": None,
            "preprocessing": None,
            "columns": None,
            "key": None,
            "id_column": None,
            "rows": int(self.shape[0]),
            "shape": [int(s) for s in self.shape],
            **self._info,
        }

    def __repr__(self) -> str:
        return f"Pile(kind={self.kind!r}, path={str(self.path)!r}, shape={self.shape})"


def open_pile(
    path: str | os.PathLike[str],
    *,
    key: str | None = None,
    columns: Sequence[str] | None = None,
    id_column: str | None = None,
    image: ImageSpec | None = None,
    skip_corrupt: bool = False,
    warn_id_like: bool = False,
) -> Pile:
    """Open the pile at ``path``; its kind is read from the path (see the module docstring).

    Parameters
    ----------
    path:
        A ``.npy``, ``.npz``, ``.csv`` or ``.parquet`` file, a zarr array store, or a folder
        of images.
    key:
        ``.npz`` only: the array to read (may be omitted when the archive holds one array).
    columns:
        Tables only: the numeric columns that make a row, in this order (default: every
        numeric column except ``id_column``).
    id_column:
        Tables only: the column holding each row's id (default: the row number).
    image:
        Folders only: the declared preprocessing (default ``ImageSpec()``: RGB, scaled by
        1/255, channels first, every image the same size).
    skip_corrupt:
        Folders only: leave out the images Pillow cannot decode instead of stopping at the
        first one. Every image is then decoded once when the pile is opened; the files left
        out are in :attr:`Pile.skipped` and ``describe()["skipped"]``, a warning names them,
        and ``pile.ids`` (``ids.txt``) lists only the images that are rows. Default: a
        corrupt image is an error naming it.
    warn_id_like:
        CSV tables read with the default columns: warn about columns that look like row ids
        or a saved index (they would be fed to a model as inputs). Set by ``capture``; a pile
        opened to show its rows (the label page) does not warn.

    Raises
    ------
    LabelwiseError
        A missing path, an unknown kind, an option that does not apply to the kind, a
        missing or ambiguous ``key`` (the message lists the keys), an unreadable or corrupt
        file (named), images of different sizes without ``size`` (two are named), a
        non-numeric value (its row and column are named), duplicate ids.
    """
    return open_pile_as(
        path,
        "path",
        key=key,
        columns=columns,
        id_column=id_column,
        image=image,
        skip_corrupt=skip_corrupt,
        warn_id_like=warn_id_like,
    )


def open_pile_as(
    path: str | os.PathLike[str],
    what: str,
    *,
    key: str | None = None,
    columns: Sequence[str] | None = None,
    id_column: str | None = None,
    image: ImageSpec | None = None,
    skip_corrupt: bool = False,
    warn_id_like: bool = False,
) -> Pile:
    """:func:`open_pile`, its messages naming the pile ``what`` (the CLI: ``"--inputs"``)."""
    if not isinstance(path, str | os.PathLike):
        raise LabelwiseError(
            f"path must be the path of a file or folder (str or Path), got "
            f"{type(path).__name__}; an array in memory needs no pile: pass it to capture or "
            "the samplers as it is"
        )
    p = Path(path)
    if not p.exists():
        raise LabelwiseError(f"{what}: {p} does not exist")
    suffix = p.suffix.lower()
    kind = (
        "zarr"
        if is_zarr_store(p)
        else "images"
        if p.is_dir()
        else {
            ".npy": "npy",
            ".npz": "npz",
            ".csv": "csv",
            ".parquet": "parquet",
            ".pq": "parquet",
        }.get(suffix)
    )
    if kind is None:
        raise LabelwiseError(
            f"{what}: {p} is not a pile labelwise reads: give a .npy or .npz array, a .zarr "
            f"array, a .csv or .parquet table, or a folder of images "
            f"({', '.join(IMAGE_SUFFIXES)})"
        )
    _only_for(kind, "npz", key=key)
    _only_for(kind, ("csv", "parquet"), columns=columns, id_column=id_column)
    _only_for(kind, "images", image=image, skip_corrupt=skip_corrupt or None)
    if kind == "npy":
        return _open_npy(p, what)
    if kind == "npz":
        return _open_npz(p, key, what)
    if kind == "zarr":
        return _open_zarr(p, what)
    if kind == "images":
        return _open_images(p, image or ImageSpec(), skip_corrupt, what)
    if kind == "csv":
        return _open_csv(p, columns, id_column, warn_id_like, what)
    return _open_parquet(p, columns, id_column, what)


def _only_for(kind: str, kinds: str | tuple[str, ...], **given: Any) -> None:
    allowed = (kinds,) if isinstance(kinds, str) else kinds
    if kind in allowed:
        return
    for name, value in given.items():
        if value is not None:
            flag = "--" + name.replace("_", "-")
            raise LabelwiseError(
                f"{name} ({flag}) applies to {' and '.join(allowed)} piles, not to this {kind} pile"
            )


# ------------------------------------------------------------------------------ arrays


def _array_pile(kind: str, path: Path, arr: NDArray[Any], info: dict[str, Any], what: str) -> Pile:
    if arr.ndim == 0:
        raise LabelwiseError(f"{what}: {path} holds a 0-d array; the first axis must be rows")
    if arr.dtype.kind not in "biuf":
        raise LabelwiseError(f"{what}: {path} must hold real numbers, got dtype {arr.dtype}")
    if arr.shape[0] == 0:
        raise LabelwiseError(f"{what}: {path} has no rows (shape {tuple(arr.shape)})")

    def read(sel: NDArray[np.int64] | slice) -> NDArray[Any]:
        if isinstance(sel, slice):
            return np.asarray(arr[sel], dtype=np.float32)
        # sorted reads are kind to a memory map; put the rows back in the order asked
        order = np.argsort(sel, kind="stable")
        out = np.empty((sel.size, *arr.shape[1:]), dtype=np.float32)
        rows = sel[order]
        # zarr indexes rows by an integer array through .oindex (orthogonal selection)
        out[order] = arr.oindex[rows] if hasattr(arr, "oindex") else arr[rows]
        return out

    return Pile(
        kind=kind,
        path=path,
        shape=tuple(int(s) for s in arr.shape),
        read=read,
        ids=_RowNumbers(int(arr.shape[0])),
        info=info,
        stored_dtype=np.dtype(arr.dtype),
    )


def _open_npy(path: Path, what: str) -> Pile:
    from .io import load_array

    return _array_pile("npy", path, load_array(path, what), {}, what)


def _open_zarr(path: Path, what: str) -> Pile:
    """A zarr array store, read chunk by chunk as capture asks (never whole)."""
    arr = open_zarr(path, what)
    return _array_pile("zarr", path, arr, {"chunks": [int(c) for c in arr.chunks]}, what)


def _open_npz(path: Path, key: str | None, what: str) -> Pile:
    try:
        with np.load(path, allow_pickle=False) as archive:
            keys = list(archive.files)
            if key is None:
                if len(keys) != 1:
                    raise LabelwiseError(
                        f"{what}: {path} holds {len(keys)} arrays; choose one with key= (--key) "
                        f"(keys: {', '.join(keys) or 'none'})"
                    )
                key = keys[0]
            elif key not in keys:
                raise LabelwiseError(
                    f"key {key!r} (--key) is not in {path}; its keys are: "
                    f"{', '.join(keys) or 'none'}"
                )
            arr = archive[key]
    except LabelwiseError:
        raise
    except (ValueError, OSError, EOFError) as exc:
        raise LabelwiseError(f"{what}: {path} is not a readable .npz archive ({exc})") from None
    return _array_pile("npz", path, arr, {"key": key}, what)


# ------------------------------------------------------------------------------ images


def _image_files(root: Path) -> list[Path]:
    """The images under ``root``, recursively: hidden files and folders (``.name``, e.g.
    ``.ipynb_checkpoints``) are skipped, symlinked folders are followed (each real folder once)."""
    found: list[Path] = []
    visited: set[str] = set()
    for folder, dirs, names in os.walk(root, followlinks=True):
        real = os.path.realpath(folder)
        if real in visited:  # a symlink loop, or a folder linked twice
            dirs[:] = []
            continue
        visited.add(real)
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in names:
            f = Path(folder) / name
            wanted = Path(name).suffix.lower() in IMAGE_SUFFIXES and not name.startswith(".")
            if wanted and f.is_file():
                found.append(f)
    return sorted(found, key=lambda f: f.relative_to(root).as_posix())


def _open_images(root: Path, spec: ImageSpec, skip_corrupt: bool, what: str) -> Pile:
    image_module = require("PIL.Image", "reading a folder of images", extra="images")
    image_ops = require("PIL.ImageOps", "reading a folder of images", extra="images")
    files = _image_files(root)
    if not files:
        arrays = sorted(f.name for f in root.iterdir() if f.suffix.lower() in (".npy", ".npz"))
        hint = (
            f"; it holds {len(arrays)} array file(s) ({', '.join(arrays[:3])}"
            f"{', ...' if len(arrays) > 3 else ''}), but a pile is one array: give one .npy, "
            ".npz or zarr array (join chunks with np.concatenate, or write them into one zarr "
            "array when they do not fit in memory)"
            if arrays
            else ""
        )
        raise LabelwiseError(
            f"{what}: the folder {root} holds no images ({', '.join(IMAGE_SUFFIXES)}, "
            f"searched recursively){hint}"
        )
    # ids without surrounding spaces, as the labels reader reads them back (" a.png" -> "a.png")
    ids = [f.relative_to(root).as_posix().strip() for f in files]
    for i in ids:
        if "\n" in i or "\r" in i:
            raise LabelwiseError(f"{what}: an image path holds a line break: {i!r}; rename it")
    if len(set(ids)) != len(ids):
        twice = sorted({i for i in ids if ids.count(i) > 1})
        raise LabelwiseError(
            f"{what}: image names that differ only by surrounding spaces give the same id: "
            f"{twice[:5]}; rename them"
        )
    skipped: list[tuple[str, str]] = []
    sizes: list[tuple[int, int]] | None = None  # (width, height) of each file, when known
    if skip_corrupt:
        # one open per file: decoded to find the corrupt ones, its size read on the way
        decoded = [
            (f, i, _decoded_size(image_module, f, i, skipped))
            for f, i in zip(files, ids, strict=True)
        ]
        kept = [(f, i) for f, i, wh in decoded if wh is not None]
        sizes = [wh for _, _, wh in decoded if wh is not None]
        if not kept:
            raise LabelwiseError(
                f"{what}: none of the {len(files)} images in {root} can be decoded, e.g. "
                f"{skipped[0][0]} ({skipped[0][1]})"
            )
        files, ids = [f for f, _ in kept], [i for _, i in kept]
        if skipped:
            shown = ", ".join(i for i, _ in skipped[:10])
            more = f" and {len(skipped) - 10} more" if len(skipped) > 10 else ""
            warnings.warn(
                f"{root}: skipped {len(skipped)} corrupt image(s) of {len(files) + len(skipped)} "
                f"(not rows of the pile; listed under 'skipped' in its description): "
                f"{shown}{more}",
                UserWarning,
                stacklevel=user_stacklevel(),
            )
    if spec.size is None:
        first: tuple[int, int] | None = None
        for k, f in enumerate(files):
            w, h = _image_header(image_module, f, what) if sizes is None else sizes[k]
            if first is None:
                first = (h, w)
            elif (h, w) != first:
                raise LabelwiseError(
                    f"{what}: images differ in size: {files[0]} is {first[0]}x{first[1]} "
                    f"(HxW), {f} is {h}x{w}; give a size to resize them all: "
                    "ImageSpec(size=(H, W)) (--image-size HxW)"
                )
        assert first is not None
        height, width = first
    else:
        height, width = spec.size
    chw = (spec.channels, height, width)
    row_shape = chw if spec.layout == "chw" else (height, width, spec.channels)
    mean = None if spec.mean is None else np.asarray(spec.mean, dtype=np.float32)
    std = None if spec.std is None else np.asarray(spec.std, dtype=np.float32)
    mode = "L" if spec.channels == 1 else "RGB"

    def decode(f: Path) -> NDArray[np.float32]:
        try:
            with image_module.open(f) as img:
                img.load()
                img = image_ops.exif_transpose(img)  # a phone photo stored on its side
                if img.mode.startswith("I"):
                    # 16-bit grey (PNG "I;16", or "I"): keep the full depth, brought to the
                    # 0-255 range of 8-bit images so that the default --scale 1/255 fits
                    depth = 255.0 / 65535.0
                    img = img.convert("F")
                else:
                    depth = None
                    img = img.convert(mode)
                if img.size != (width, height):
                    if spec.size is None:
                        raise LabelwiseError(
                            f"{what}: {f} is {img.size[1]}x{img.size[0]}, not {height}x{width} "
                            "like the others (did it change?); give ImageSpec(size=(H, W)) "
                            "(--image-size HxW)"
                        )
                    img = img.resize((width, height), image_module.Resampling.BILINEAR)
                x = np.asarray(img, dtype=np.float32)
                if depth is not None:
                    x = x * np.float32(depth)
                    if spec.channels == 3:
                        x = np.repeat(x[:, :, None], 3, axis=2)
        except LabelwiseError:
            raise
        except Exception as exc:  # Pillow raises OSError, SyntaxError, ValueError ...
            raise LabelwiseError(
                f"{what}: cannot decode image {f} ({exc}); move it away, or leave every "
                "corrupt image out with skip_corrupt=True (--skip-corrupt)"
            ) from None
        x = x.reshape(height, width, spec.channels) * np.float32(spec.scale)
        if mean is not None:
            x -= mean
        if std is not None:
            x /= std
        return np.ascontiguousarray(x.transpose(2, 0, 1)) if spec.layout == "chw" else x

    def read(sel: NDArray[np.int64] | slice) -> NDArray[Any]:
        chosen = files[sel] if isinstance(sel, slice) else [files[int(i)] for i in sel]
        out = np.empty((len(chosen), *row_shape), dtype=np.float32)
        for j, f in enumerate(chosen):
            out[j] = decode(f)
        return out

    info: dict[str, Any] = {"root": str(root.resolve()), "preprocessing": spec.to_dict()}
    if skip_corrupt:
        info["skipped"] = [{"id": i, "reason": why} for i, why in skipped]
    return Pile(
        kind="images",
        path=root,
        shape=(len(files), *row_shape),
        read=read,
        ids=ids,
        info=info,
    )


def _decoded_size(
    image_module: Any, f: Path, i: str, skipped: list[tuple[str, str]]
) -> tuple[int, int] | None:
    """Decode ``f`` once: its (width, height) as :func:`_image_header` gives them; None, with
    ``(id, reason)`` noted in ``skipped``, if Pillow cannot decode it."""
    try:
        with image_module.open(f) as img:
            img.load()
            return _oriented_size(img)
    except Exception as exc:  # Pillow raises OSError, SyntaxError, ValueError ...
        skipped.append((i, " ".join(str(exc).split()) or type(exc).__name__))
        return None


def _oriented_size(img: Any) -> tuple[int, int]:
    """(width, height) of an opened image as :func:`decode` turns it (EXIF orientation)."""
    width, height = int(img.size[0]), int(img.size[1])
    # EXIF orientations 5-8 turn the image by 90 degrees (decode() applies them)
    try:
        turned = img.getexif().get(0x0112) in (5, 6, 7, 8)
    except Exception:  # a truncated file: decode() names it
        turned = False
    return (height, width) if turned else (width, height)


def _image_header(image_module: Any, f: Path, what: str) -> tuple[int, int]:
    """(width, height) from the file's header, without decoding the pixels."""
    try:
        with image_module.open(f) as img:
            return _oriented_size(img)
    except Exception as exc:
        raise LabelwiseError(
            f"{what}: cannot read image {f} ({exc}); move it away, or leave every corrupt "
            "image out with skip_corrupt=True (--skip-corrupt)"
        ) from None


def _check_ids(path: Path, ids: list[str], id_column: str, what: str) -> None:
    seen: dict[str, int] = {}
    dup: list[str] = []
    for row, i in enumerate(ids):
        if not i:
            raise LabelwiseError(
                f"{what}: {path} column {id_column!r} is empty (or null) at row {row}; every "
                "row needs an id (fill it in, or leave id_column (--id-column) out to number "
                "the rows)"
            )
        if "\n" in i or "\r" in i:
            raise LabelwiseError(f"{what}: {path} column {id_column!r} holds a line break: {i!r}")
        seen[i] = seen.get(i, 0) + 1
        if seen[i] == 2:
            dup.append(i)
    if dup:
        raise LabelwiseError(
            f"{what}: {path} column {id_column!r} repeats ids, e.g. {dup[:5]}; "
            "an id column must name each row once"
        )


def _table_columns(
    path: Path,
    header: list[str],
    numeric: Callable[[str], bool],
    columns: Sequence[str] | None,
    id_column: str | None,
    what: str,
) -> list[str]:
    if id_column is not None and id_column not in header:
        raise LabelwiseError(
            f"id_column (--id-column) {id_column!r} is not a column of {path}"
            f"{did_you_mean(id_column, header)}; columns: {', '.join(header)}"
        )
    if columns is None:
        chosen = [c for c in header if c != id_column and numeric(c)]
        if not chosen:
            raise LabelwiseError(f"{what}: {path} has no numeric column; columns: {header}")
        return chosen
    chosen = list(columns)
    unknown = [c for c in chosen if c not in header]
    if unknown:
        close = list(dict.fromkeys(c for c in (close_name(u, header) for u in unknown) if c))
        meant = f" (did you mean {', '.join(map(repr, close))}?)" if close else ""
        raise LabelwiseError(
            f"columns (--columns): {', '.join(map(repr, unknown))} not in {path}{meant}; "
            f"columns: {', '.join(header)}"
        )
    if not chosen:
        raise LabelwiseError("columns (--columns) must name at least one column")
    return chosen


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


_ID_NAMES = ("", "id", "index", "idx", "row", "key")


def _warn_id_like(
    path: Path, chosen: list[str], values: list[Sequence[Any]], id_column: str | None
) -> None:
    """Warn about default feature columns that look like ids: an unnamed (pandas index) or
    id-named column, or integers counting the rows 0, 1, 2, ..."""
    odd = []
    for name, col in zip(chosen, values, strict=True):
        lowered = name.lower()
        named = (
            lowered in _ID_NAMES
            or lowered.startswith("unnamed:")
            or lowered.endswith(("_id", " id", "-id"))
        )
        try:
            counts = np.asarray(col, dtype=np.float64)
            counting = (
                len(counts) > 2 and counts[0] in (0, 1) and bool(np.all(np.diff(counts) == 1))
            )
        except (TypeError, ValueError):
            counting = False
        if named or counting:
            odd.append(name)
    if odd:
        shown = ", ".join(repr(n) for n in odd)
        hint = "" if id_column is not None else " or name it with id_column= (--id-column)"
        warnings.warn(
            f"{path}: column(s) {shown} look like row ids or a saved index (e.g. pandas "
            f"to_csv() without index=False), yet are read as model inputs; leave them out with "
            f"columns= (--columns){hint}",
            UserWarning,
            stacklevel=user_stacklevel(),
        )


def _open_csv(
    path: Path,
    columns: Sequence[str] | None,
    id_column: str | None,
    warn_id_like: bool,
    what: str,
) -> Pile:
    try:
        with open(path, encoding="utf-8-sig", newline="") as fh:
            # ';' or tab between fields (a spreadsheet where ',' is the decimal mark), as
            # the labels reader takes them; then a ',' in a number is its decimal mark
            sep = csv_delimiter(fh.readline())
            fh.seek(0)
            reader = csv.reader(fh, delimiter=sep)
            header = next(reader, None)
            # each row with its line in the file: blank lines are skipped, not renumbered
            numbered = [(reader.line_num, r) for r in reader if r and any(c.strip() for c in r)]
    except UnicodeDecodeError as exc:
        raise LabelwiseError(
            f"{what}: cannot read {path} as UTF-8 ({exc}); save it as UTF-8 (a spreadsheet's "
            "'CSV UTF-8')"
        ) from None
    except (OSError, csv.Error) as exc:
        raise LabelwiseError(f"{what}: cannot read {path} ({exc})") from None
    if not header:
        raise LabelwiseError(f"{what}: {path} is empty; a CSV pile needs a header row")
    header = [h.strip() for h in header]
    body = [r for _, r in numbered]
    line_of = [n for n, _ in numbered]
    if not body:
        raise LabelwiseError(f"{what}: {path} has a header but no rows")
    twice = sorted({h for h in header if header.count(h) > 1})
    if twice:
        raise LabelwiseError(
            f"{what}: {path} names the columns {twice} more than once; a column is chosen by "
            "its name, so rename them"
        )
    short = next(((r, rec) for r, rec in enumerate(body) if len(rec) < len(header)), None)
    if short is not None:
        raise LabelwiseError(
            f"{what}: {path} line {line_of[short[0]]} has {len(short[1])} fields, the header "
            f"{len(header)} ({', '.join(header)}); every line needs a value for every column"
        )
    where = {name: j for j, name in enumerate(header)}

    def cell(text: str) -> str:
        text = text.strip()
        return text if sep == "," else text.replace(",", ".")

    def numeric(name: str) -> bool:
        # judged on the whole table, not its first row: most non-empty cells are numbers (an
        # empty cell or a stray 'n/a' is then reported by row and column)
        j = where[name]
        filled = [c for c in (cell(rec[j]) for rec in body) if c]
        return bool(filled) and 2 * sum(_is_number(c) for c in filled) >= len(filled)

    chosen = _table_columns(path, header, numeric, columns, id_column, what)
    if columns is None and warn_id_like:
        _warn_id_like(path, chosen, [[rec[where[c]] for rec in body] for c in chosen], id_column)
    idx = [where[c] for c in chosen]
    data = np.empty((len(body), len(chosen)), dtype=np.float32)
    for r, rec in enumerate(body):
        for k, j in enumerate(idx):
            text = cell(rec[j])
            try:
                v = float(text)
            except ValueError:
                v = math.nan
            if not math.isfinite(v):
                raise LabelwiseError(
                    f"{what}: {path} row {r} (line {line_of[r]}) column {chosen[k]!r} is not a "
                    f"finite number: {text!r}"
                )
            data[r, k] = v
    ids: Sequence[str] = _RowNumbers(len(body))
    if id_column is not None:
        j = where[id_column]
        ids = [rec[j].strip() if j < len(rec) else "" for rec in body]
        _check_ids(path, list(ids), id_column, what)
    return _table_pile("csv", path, data, ids, chosen, id_column, what)


def _table_pile(
    kind: str,
    path: Path,
    data: NDArray[np.float32],
    ids: Sequence[str],
    chosen: list[str],
    id_column: str | None,
    what: str,
) -> Pile:
    pile = _array_pile(kind, path, data, {"columns": chosen, "id_column": id_column}, what)
    return Pile(kind=kind, path=path, shape=pile.shape, read=pile._read, ids=ids, info=pile._info)


def _open_parquet(
    path: Path, columns: Sequence[str] | None, id_column: str | None, what: str
) -> Pile:
    pq = require("pyarrow.parquet", "reading a Parquet pile", extra="tables")
    pa = require("pyarrow", "reading a Parquet pile", extra="tables")
    try:
        schema = pq.read_schema(path)
    except Exception as exc:
        raise LabelwiseError(f"{what}: {path} is not a readable Parquet file ({exc})") from None
    header = list(schema.names)

    def numeric(name: str) -> bool:
        t = schema.field(name).type
        return bool(pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_boolean(t))

    chosen = _table_columns(path, header, numeric, columns, id_column, what)
    wanted = chosen + ([id_column] if id_column is not None and id_column not in chosen else [])
    try:
        table = pq.read_table(path, columns=wanted)
    except Exception as exc:
        raise LabelwiseError(f"{what}: cannot read {path} ({exc})") from None
    n = table.num_rows
    if n == 0:
        raise LabelwiseError(f"{what}: {path} has no rows")
    data = np.empty((n, len(chosen)), dtype=np.float32)
    for k, name in enumerate(chosen):
        col = table.column(name)
        if not numeric(name):
            raise LabelwiseError(
                f"columns (--columns): column {name!r} of {path} is not numeric "
                f"({schema.field(name).type})"
            )
        if col.null_count:
            nulls = np.flatnonzero(np.asarray(col.is_null().to_numpy(zero_copy_only=False)))
            raise LabelwiseError(
                f"{what}: {path} row {int(nulls[0])} column {name!r} is empty (null)"
            )
        values = np.asarray(col.to_numpy(zero_copy_only=False), dtype=np.float64)
        bad = np.flatnonzero(~np.isfinite(values))
        if bad.size:
            raise LabelwiseError(
                f"{what}: {path} row {int(bad[0])} column {name!r} is not a finite number: "
                f"{values[bad[0]]}"
            )
        data[:, k] = values
    ids: Sequence[str] = _RowNumbers(n)
    if id_column is not None:
        ids = ["" if v is None else str(v).strip() for v in table.column(id_column).to_pylist()]
        _check_ids(path, list(ids), id_column, what)
    return _table_pile("parquet", path, data, ids, chosen, id_column, what)

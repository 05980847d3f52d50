"""Files: atomic writes, safe .npy (and zarr) loading, label CSVs.

Errors name the file and the argument.
"""

from __future__ import annotations

import contextlib
import csv
import difflib
import hashlib
import itertools
import json
import math
import os
import shlex
import tempfile
import unicodedata
from collections.abc import Callable, Collection, Sequence
from pathlib import Path
from typing import IO, Any

import numpy as np
from numpy.typing import NDArray

from ._json import dumps
from .exceptions import LabelwiseError

__all__ = [
    "atomic_write",
    "file_digest",
    "id_key",
    "is_zarr_store",
    "load_array",
    "open_zarr",
    "read_json",
    "read_labels_csv",
    "save_array",
    "shell_arg",
    "write_csv",
    "write_files",
    "write_json",
    "write_labels_csv",
]


def _not_utf8(path: Path, what: str) -> str:
    """The message for a labels file that is not UTF-8 text: a binary file (a NumPy array, a
    spreadsheet's .xlsx) is named as such; a text file in another encoding gets the line of
    its first byte that is not UTF-8 and how to save it."""
    raw = path.read_bytes()
    if raw.startswith(b"\x93NUMPY"):
        return f"{what}: {path} is a NumPy array, not a CSV of labels (row,label)"
    if raw.startswith((b"\xff\xfe", b"\xfe\xff")):
        return (
            f"{what}: {path} is UTF-16 text (a spreadsheet's 'Unicode Text'), not UTF-8: "
            "save it as 'CSV UTF-8'"
        )
    if raw.startswith(b"PK\x03\x04"):
        return (
            f"{what}: {path} is a zip file (an .xlsx workbook?), not a CSV of labels: save it as "
            "'CSV UTF-8' (row,label)"
        )
    try:
        raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        bad = exc.start
    else:  # pragma: no cover - read as text, it failed
        return f"{what}: {path} is not UTF-8 text; save it as UTF-8 (a spreadsheet's 'CSV UTF-8')"
    line = raw[:bad].count(b"\n") + 1
    return (
        f"{what}: {path} is not UTF-8 text (line {line} holds byte 0x{raw[bad]:02x}); save it as "
        "UTF-8 (a spreadsheet's 'CSV UTF-8')"
    )


def atomic_write(
    path: str | os.PathLike[str], write: Callable[[IO[Any]], object], *, binary: bool = False
) -> None:
    """Write ``path`` via a temporary file in the same directory and ``os.replace``.

    Readers see the old file or the complete new one, never a partial file; on error the
    temporary file is removed and the old file (if any) is untouched. A path that is a
    directory, a parent that cannot be made and a failed write (no space, no permission)
    are :class:`LabelwiseError` naming the path.
    """
    path = Path(path)
    tmp = _stage(path, write, binary)
    try:
        os.replace(tmp, path)
    except BaseException as exc:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        if isinstance(exc, OSError):
            raise LabelwiseError(
                f"cannot write {path} ({exc.strerror or exc}); nothing was changed"
            ) from None
        raise


def new_folders(path: str | os.PathLike[str]) -> list[Path]:
    """The folders ``Path(path).mkdir(parents=True)`` would create, deepest first: what a
    failed run removes again with :func:`remove_empty`."""
    path = Path(path)
    return list(itertools.takewhile(lambda p: not p.exists(), (path, *path.parents)))


def remove_empty(folders: Sequence[Path]) -> None:
    """Remove ``folders`` (deepest first, as :func:`new_folders` lists them) while they are
    empty: a failed run leaves no empty folder behind, as if it had written something."""
    for folder in folders:
        try:
            folder.rmdir()
        except OSError:
            return


def write_files(files: Sequence[tuple[str | os.PathLike[str], str]]) -> None:
    """Write several text files as one: either every file is new or none is.

    Each ``(path, text)`` is first written in full to a temporary file beside its path (as
    :func:`atomic_write` does); only when all of them are written are they renamed into
    place, in the order given. A failure while writing (a directory given as a path, a
    directory without write permission, no space) removes the temporary files and changes
    nothing; the :class:`LabelwiseError` names the file that failed and says so.
    """
    staged: list[tuple[Path, str]] = []
    try:
        for where, text in files:
            path = Path(where)
            try:
                staged.append((path, _stage(path, _writing(text), False)))
            except LabelwiseError as exc:
                others = [str(w) for i, (w, _) in enumerate(files) if i != len(staged)]
                kept = f" ({', '.join(others)} as they were)" if others else ""
                why = str(exc).removesuffix("; nothing was changed")
                raise LabelwiseError(f"{why}; nothing was written{kept}") from None
        for i, (path, tmp) in enumerate(staged):
            try:
                os.replace(tmp, path)
            except OSError as exc:
                done = [str(p) for p, _ in staged[:i]]
                raise LabelwiseError(
                    f"cannot write {path} ({exc.strerror or exc})"
                    + (f"; {', '.join(done)} already replaced" if done else "; nothing was changed")
                ) from None
    finally:
        for _, tmp in staged:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)


def _writing(text: str) -> Callable[[IO[Any]], object]:
    """A ``write`` for :func:`atomic_write` that writes ``text``."""
    return lambda fh: fh.write(text)


def _stage(path: Path, write: Callable[[IO[Any]], object], binary: bool) -> str:
    """A temporary file beside ``path`` (made with its directory, if need be) holding what
    ``write`` wrote, synced, with the mode ``path`` has or a new file would get; errors are
    :class:`LabelwiseError` naming ``path`` (the temporary file removed)."""
    if path.is_dir():
        raise LabelwiseError(f"cannot write {path}: it is a directory; give a file name")
    for up in (path.parent, *path.parent.parents):
        if up.exists() and not up.is_dir():
            raise LabelwiseError(f"cannot write {path}: {up} is a file, not a directory")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise LabelwiseError(
            f"cannot write {path}: cannot make its directory {path.parent} ({exc.strerror or exc})"
        ) from None
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except OSError as exc:
        raise LabelwiseError(
            f"cannot write {path}: cannot create a file in {path.parent} ({exc.strerror or exc})"
        ) from None
    try:
        fh: IO[Any] = (
            os.fdopen(fd, "wb") if binary else os.fdopen(fd, "w", newline="", encoding="utf-8")
        )
        with fh:
            write(fh)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, _mode_for(path))
    except BaseException as exc:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        if isinstance(exc, OSError) and not isinstance(exc, BrokenPipeError):
            raise LabelwiseError(
                f"cannot write {path} ({exc.strerror or exc}); nothing was changed"
            ) from None
        raise
    return tmp


def _mode_for(path: Path) -> int:
    """The replaced file's permissions, or those a new file gets under the umask
    (``mkstemp`` creates its file readable by the owner only)."""
    try:
        return os.stat(path).st_mode & 0o777
    except FileNotFoundError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask


def write_json(path: str | os.PathLike[str], obj: Any) -> None:
    """Write ``obj`` as strict JSON, atomically (NumPy values converted, NaN/inf as null)."""
    text = dumps(obj) + "\n"
    atomic_write(path, lambda fh: fh.write(text))


def read_json(path: str | os.PathLike[str], what: str) -> Any:
    try:
        with open(path, encoding="utf-8-sig") as fh:  # a BOM, as Notepad saves it
            return json.load(fh)
    except FileNotFoundError:
        raise LabelwiseError(f"{what}: {path} does not exist") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise LabelwiseError(f"{what}: {path} is not valid JSON ({exc})") from None


def save_array(path: str | os.PathLike[str], array: NDArray[Any]) -> None:
    atomic_write(path, lambda fh: np.save(fh, array, allow_pickle=False), binary=True)


def write_csv(path: str | os.PathLike[str], header: list[str], rows: list[list[Any]]) -> None:
    def _write(fh: IO[Any]) -> None:
        w = csv.writer(fh)
        w.writerow(header)
        w.writerows(rows)

    atomic_write(path, _write)


def shell_arg(path: str | os.PathLike[str]) -> str:
    """``path`` as one shell word, to paste into the commands the messages suggest: as it is
    when the shell leaves it whole, else in double quotes (``labelwise next "my camp"``, which
    reads well inside a message's single quotes), or, when it holds a character that double
    quotes do not protect (a double quote, a dollar, a backquote, a backslash or an
    exclamation mark), shell-quoted."""
    text = str(path)
    if shlex.quote(text) == text:
        return text
    if not any(c in text for c in '"$`\\!'):
        return f'"{text}"'
    return shlex.quote(text)


def is_zarr_store(path: str | os.PathLike[str]) -> bool:
    """True for a directory that holds a zarr array: named ``*.zarr`` or holding ``zarr.json``
    (zarr v3) or ``.zarray`` (zarr v2). Decided from the names only; zarr is not imported."""
    p = Path(path)
    return p.is_dir() and (
        p.suffix.lower() == ".zarr" or (p / "zarr.json").is_file() or (p / ".zarray").is_file()
    )


def open_zarr(path: str | os.PathLike[str], what: str) -> Any:
    """The zarr array in the store ``path``, opened read-only (nothing read but its metadata).

    zarr is optional (extra ``dask``): without it, a
    :class:`~labelwise.exceptions.MissingDependencyError` says how to install it. A store zarr
    cannot open (a group, a corrupt ``zarr.json``, ...) is a :class:`LabelwiseError` naming it.
    """
    from ._deps import require

    p = Path(path)
    zarr = require("zarr", f"reading the zarr store {p} ({what})", extra="dask")
    try:
        arr = zarr.open_array(str(p), mode="r")
        shape, dtype = tuple(int(s) for s in arr.shape), np.dtype(arr.dtype)
    except Exception as exc:  # zarr raises many types for a bad store
        arrays = _zarr_group_arrays(zarr, p)
        if arrays is not None:
            inside = ", ".join(str(p / a) for a in arrays[:5]) or "it holds none"
            raise LabelwiseError(
                f"{what}: {p} is a zarr group, not an array; give one of its arrays: {inside}"
            ) from None
        raise LabelwiseError(
            f"{what}: {p} is not a readable zarr array ({_one_line(exc)})"
        ) from None
    if not shape:
        raise LabelwiseError(f"{what}: {p} holds a 0-d zarr array; the first axis must be rows")
    if dtype.kind not in "biuf":
        raise LabelwiseError(f"{what}: {p} must hold real numbers, got dtype {dtype}")
    return arr


def _zarr_group_arrays(zarr: Any, p: Path) -> list[str] | None:
    """The names of the arrays in the zarr group ``p`` (recursively), or None if ``p`` is no
    group zarr can open."""
    try:
        group = zarr.open_group(str(p), mode="r")
        return sorted(name for name, _ in group.arrays())
    except Exception:  # not a group either: the caller reports the array error
        return None


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text if len(text) <= 300 else text[:297] + "..."


def load_array(path: str | os.PathLike[str], what: str, *, mmap: bool = True) -> Any:
    """Load a .npy file (memory-mapped by default; never unpickles) or open a zarr array.

    A zarr store (:func:`is_zarr_store`: a ``*.zarr`` directory, or one holding ``zarr.json``
    or ``.zarray``) is opened read-only as a ``zarr.Array`` (zarr is optional, extra
    ``dask``); its rows are read only where they are used, block by block, like those of a
    memory-mapped .npy. Any other directory holding ``*.npy`` files is a directory of chunks,
    memory-mapped and read as one along the rows in name order
    (:class:`labelwise.ChunkedArray`, what :func:`labelwise.open_array` opens). With
    ``mmap=False`` the whole array is read into a NumPy array (any kind).
    """
    p = Path(path)
    if p.is_dir():
        if (p / "capture.json").is_file() and not is_zarr_store(p):
            # its .npy files (activations, probabilities, predictions) are not chunks of one
            # array: the message was that their shapes differ
            names = sorted(f.name for f in p.glob("*.npy"))
            raise LabelwiseError(
                f"{what}: {p} is the directory 'labelwise capture' wrote; give one of its "
                f"arrays: {', '.join(str(p / n) for n in names)}"
            )
        if not is_zarr_store(p):
            if not any(f.suffix == ".npy" and f.is_file() for f in p.iterdir()):
                raise LabelwiseError(
                    f"{what}: {p} is a directory but neither a zarr store (no zarr.json or "
                    ".zarray in it) nor a directory of .npy chunks; give a .npy file, a zarr "
                    "array or a directory of .npy chunks"
                )
            from ._chunks import ChunkedArray

            try:
                chunks = ChunkedArray.open(p)
            except LabelwiseError as exc:
                raise LabelwiseError(
                    f"{what}: {p} is a directory, so its .npy files are read as the chunks of "
                    f"one array (in name order), but {exc}; give a .npy file, a zarr array or "
                    "a directory holding only one array's chunks"
                ) from None
            return np.asarray(chunks) if not mmap else chunks
        arr = open_zarr(p, what)
        if not mmap:
            try:
                return np.asarray(arr[...])
            except Exception as exc:  # a corrupt chunk
                raise LabelwiseError(
                    f"{what}: cannot read the zarr array {p} ({_one_line(exc)})"
                ) from None
        return arr
    if not p.is_file():
        raise LabelwiseError(f"{what}: {p} does not exist or is not a file")
    try:
        arr = np.load(p, mmap_mode="r" if mmap else None, allow_pickle=False)
    except (ValueError, OSError, EOFError) as exc:
        text = str(exc)
        if "allow_pickle" in text or "pickled" in text:
            text = "not a .npy file written by numpy.save: "
            # capture reads the pile itself: sending it to 'capture' was circular there
            text += (
                "a table is read from a .csv or .parquet file (name it so), images from "
                "their folder"
                if what == "--inputs"
                else "a CSV or other table goes through 'labelwise capture --inputs FILE' first"
            )
        elif p.stat().st_size == 0:
            text = "the file is empty, 0 bytes: was it written to the end?"
        raise LabelwiseError(f"{what}: {p} is not a readable .npy array ({text})") from None
    if not isinstance(arr, np.ndarray):
        raise LabelwiseError(f"{what}: {p} must hold one array (.npy), not an archive")
    return arr


def file_digest(path: str | os.PathLike[str]) -> str:
    """sha256 of a file, read in 4 MiB blocks; of a directory (a zarr store), of its files.

    The digest of a directory is the sha256 of, for every regular file under it (hidden
    ones such as ``.zarray`` included) in the order of their relative POSIX paths: the path
    (UTF-8), a NUL byte, the file's size (8 bytes, little-endian) and its bytes, read in 4 MiB
    blocks. It changes when a file is added, removed, renamed or edited, and does not depend
    on where the directory lies or on file times.
    """
    p = Path(path)
    h = hashlib.sha256()
    if p.is_dir():
        files = sorted((f.relative_to(p).as_posix(), f) for f in p.rglob("*") if f.is_file())
        for rel, f in files:
            h.update(rel.encode("utf-8") + b"\0")
            h.update(f.stat().st_size.to_bytes(8, "little"))
            _hash_file(h, f)
        return h.hexdigest()
    _hash_file(h, p)
    return h.hexdigest()


def _hash_file(h: Any, path: Path) -> None:
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 22), b""):
            h.update(block)


def id_key(text: str) -> str:
    """A row id as compared: stripped, in Unicode normal form C, with ``/`` between folders.

    The same file name may be spelt in two forms: macOS writes decomposed names (NFD: 'a' and
    a combining ring), Linux keeps the bytes it is given and most editors type composed
    characters (NFC), so ``blå.png`` in a labeller's CSV and in ``ids.txt`` may differ in
    bytes while naming the same file. A labeller on Windows writes ``blue\\011.png`` for the
    pile's ``blue/011.png``. Two ids of one pile that become the same key are ambiguous (an
    error when a labels file names them, :func:`read_labels_csv`).
    """
    return unicodedata.normalize("NFC", text.strip()).replace("\\", "/")


def read_labels_csv(
    path: str | os.PathLike[str],
    *,
    classes: Sequence[str] | None = None,
    ids: Sequence[str] | None = None,
    what: str = "--labels",
    n_rows: int | None = None,
    allowed: Collection[int] | None = None,
    not_allowed: str = "not selected",
    n_classes: int | None = None,
) -> tuple[NDArray[np.int64], str, NDArray[Any]]:
    """Read ``row,<value>`` (or ``id,<value>``) pairs; ``<value>`` is one of ``label``,
    ``target`` or ``score``.

    Returns the rows, the value column's name and its values (int64 for ``label``, float64
    otherwise). Duplicate rows, non-integer rows, empty files and bad values are errors.

    ``classes`` (class names, index = class): a ``label`` may be a class name (exact match
    after stripping spaces) or, as always, a class index; an unknown name is an error naming
    the line, the name and some known names. A ``class`` column holds class names only: alone
    (``row,class``) it gives the labels; beside ``label`` (as :func:`write_labels_csv`
    writes it) the ``label`` is the class index and both must name the same class. Class names
    that are numbers other than their own index (``["1", "2", "3"]``) make a bare ``label``
    such as ``1`` ambiguous (the class named "1" or class 1?): without a ``class`` column
    such a value is an error, never a guess. ``ids`` (one id per pile row, e.g. an image's
    path): a file without a ``row`` column may name its rows in an ``id`` column instead;
    unknown ids are errors naming them. A file with both columns must agree with ``ids``.
    ``what`` names the file in the messages (a CLI flag, e.g. ``"--test-labels"``).
    ``n_rows`` (the pile's size): a row outside ``[0, n_rows)`` is an error naming the file and
    its line; ``allowed`` (e.g. the selected rows): a row not in it is an error naming the
    file, the lines and rows, and saying that they ``not_allowed``; ``n_classes``: a
    ``label`` outside ``[0, n_classes)`` is an error naming the file and its line.
    """
    p = Path(path)
    src = f"{what}: {p}"  # what the helpers below name
    if p.is_dir():
        raise LabelwiseError(f"{what}: {p} is a directory; give the CSV file of labels")
    if not p.is_file():
        raise LabelwiseError(f"{what}: {p} does not exist")
    try:
        with open(p, encoding="utf-8-sig", newline="") as fh:  # -sig: spreadsheets write a BOM
            sep = csv_delimiter(fh.readline())
            reader = csv.reader(fh, delimiter=sep)
            fh.seek(0)
            header = next(reader, None)
            # each record with its line in the file: blank lines are skipped, not renumbered
            numbered = [(reader.line_num, r) for r in reader if r and any(c.strip() for c in r)]
    except UnicodeDecodeError:
        raise LabelwiseError(_not_utf8(p, what)) from None
    except (OSError, csv.Error) as exc:
        raise LabelwiseError(f"{what}: cannot read {p} ({exc})") from None
    if header is None:
        raise LabelwiseError(f"{what}: {p} is empty")
    body = [r for _, r in numbered]
    line_of = [n for n, _ in numbered]
    cols = [c.strip().lower() for c in header]
    if header and header[0].lstrip()[:1] in ("[", "{") and "row" not in cols and "id" not in cols:
        # a Label Studio export (or any JSON): its columns were the JSON cut at the commas
        raise LabelwiseError(
            f"{what}: {p} is JSON, not a CSV of labels (row,label); a Label Studio export is "
            "read by 'labelwise import DIR FILE'"
        )
    if "row" not in cols and "id" not in cols:
        other = [h for h, c in zip(header, cols, strict=True) if c not in _VALUE_COLUMNS]
        hint = (
            f"; if {other[0]!r} holds the ids shown in to_label.csv, name that column 'id'"
            if len(other) == 1 and len(header) > 1
            else ""
        )
        raise LabelwiseError(
            f"{what}: {p} needs a 'row' column (or 'id': the row ids of the capture), got "
            f"columns {header}{hint}"
        )
    i_class = cols.index(CLASS_COLUMN) if CLASS_COLUMN in cols else None
    kinds = [k for k in ("label", "target", "score") if k in cols]
    if not kinds and i_class is not None:
        kinds = ["label"]
    if not kinds and i_class is None and {"order", "new"} <= set(cols):
        raise LabelwiseError(
            f"{what}: {p} is a to_label.csv, the list of rows to label (order,row,id,new), "
            "with no labels in it: add a 'label' column with each row's true class (a number "
            "or a class name; 'target' for regression), e.g. in a spreadsheet, and give that "
            "file; or label the rows with 'labelwise label DIR'"
        )
    if len(kinds) != 1 or (i_class is not None and kinds != ["label"]):
        raise LabelwiseError(
            f"{what}: {p} needs exactly one of the columns 'label' (or 'class': class names), "
            f"'target' or 'score', got {header}"
        )
    kind = kinds[0]
    if i_class is not None and classes is None and kind in cols:
        i_class = None  # 'label' holds the class indices; their names cannot be checked
    elif i_class is not None and classes is None:
        raise LabelwiseError(
            f"{what}: {p} has a 'class' column (class names) but the class names are unknown; "
            "give them (classes.json, --classes) or use a 'label' column of class indices"
        )
    i_row = cols.index("row") if "row" in cols else None
    i_id = cols.index("id") if "id" in cols else None
    i_val = cols.index(kind) if kind in cols else i_class
    assert i_val is not None
    if i_row is None and ids is None:
        raise LabelwiseError(
            f"{what}: {p} names its rows by 'id', but the row ids of this pile are unknown "
            "(they come from 'labelwise capture', in ids.txt); give a 'row' column"
        )
    if not body:
        raise LabelwiseError(f"{what}: {p} has a header but no labels")
    row_of: dict[str, int] | None = None
    twice: dict[str, list[int]] = {}  # keys that more than one of the pile's ids become
    if ids is not None and i_id is not None:
        row_of = {}
        for i, name in enumerate(ids):
            key = id_key(name)
            if key in row_of:
                twice.setdefault(key, [row_of[key]]).append(i)
            row_of[key] = i
    index_of = None if classes is None else {name: k for k, name in enumerate(classes)}
    last = max(i for i in (i_row, i_id, i_val, i_class) if i is not None)
    rows: list[int] = []
    vals: list[Any] = []
    unknown: list[tuple[int, str]] = []
    outside: list[tuple[int, int]] = []  # (line, row) not in ``allowed``
    for line_no, rec in zip(line_of, body, strict=True):
        if len(rec) <= last:
            raise LabelwiseError(f"{what}: {p} line {line_no} has too few fields: {rec}")
        if i_row is not None:
            row = _parse_int(rec[i_row], src, line_no, "row")
            if row_of is not None and i_id is not None and ids is not None:
                given = rec[i_id].strip()
                if 0 <= row < len(ids) and given and id_key(ids[row]) != id_key(given):
                    raise LabelwiseError(
                        f"{what}: {p} line {line_no}: row {row} has id {ids[row]!r}, "
                        f"but the file says {given!r}; is the file from another pile?"
                    )
        else:
            assert row_of is not None and i_id is not None
            name = rec[i_id].strip()
            if id_key(name) not in row_of:
                unknown.append((line_no, name))
                continue
            if id_key(name) in twice:
                raise LabelwiseError(
                    f"{what}: {p} line {line_no}: id {name!r} names rows "
                    f"{twice[id_key(name)]} of the pile (their ids differ only in '/' vs '\\' "
                    "or in Unicode form); give a 'row' column"
                )
            row = row_of[id_key(name)]
        if n_rows is not None and not 0 <= row < n_rows:
            raise LabelwiseError(
                f"{what}: {p} line {line_no}: row {row} is not a row of the pile (rows are 0 "
                f"to {n_rows - 1}); is the file from another pile?"
            )
        if allowed is not None and row not in allowed:
            outside.append((line_no, row))
        rows.append(row)
        raw = rec[i_val].strip()
        if raw == "":
            # e.g. to_label.csv with a label column filled in for some rows so far
            empty = sum(1 for r in body if i_val >= len(r) or not r[i_val].strip())
            more = f" (and {empty - 1} more line(s) like it)" if empty > 1 else ""
            raise LabelwiseError(
                f"{what}: {p} line {line_no} has an empty {kind} (row {row}){more}: fill it "
                "in, or delete the lines of the rows not labelled yet (a campaign records its "
                "labels in parts; a selection's estimate needs every selected row)"
            )
        if kind != "label":  # with ';' or tab between fields a comma is the decimal mark
            vals.append(
                _parse_float(raw if sep == "," else raw.replace(",", "."), src, line_no, kind)
            )
        elif i_class is not None:
            vals.append(_class_column(rec, i_val, i_class, src, line_no, classes, index_of))
        elif index_of is not None and raw in index_of:
            as_index = _as_int(raw)
            assert classes is not None
            if as_index is not None and as_index != index_of[raw] and 0 <= as_index < len(index_of):
                raise LabelwiseError(
                    f"{what}: {p} line {line_no}: label {raw!r} is ambiguous: the class named "
                    f"{raw!r} is class {index_of[raw]}, but {raw} is also the index of class "
                    f"{classes[as_index]!r} (class names that are numbers); put class names in a "
                    "'class' column instead of 'label', or keep 'label' (indices) and add "
                    "'class' with each class's name"
                )
            vals.append(index_of[raw])
        else:
            vals.append(_parse_label(raw, src, line_no, classes))
        if kind == "label" and n_classes is not None and not 0 <= vals[-1] < n_classes:
            hint = ""
            if vals[-1] == n_classes:  # one past the last: classes counted from 1
                known = list(classes or [])
                shown = ", ".join(known[:5]) + (", ..." if len(known) > 5 else "")
                names = f" or the class names ({shown})" if known else ""
                hint = (
                    "; are the labels numbered from 1? give class indices from 0 (label - 1)"
                    + names
                )
            raise LabelwiseError(
                f"{what}: {p} line {line_no}: label {raw!r} is not a class: the model has "
                f"{n_classes} classes, 0 to {n_classes - 1}{hint}"
            )
    if unknown:
        shown = ", ".join(f"{name!r} (line {n})" for n, name in unknown[:5])
        raise LabelwiseError(
            f"{what}: {p} names {len(unknown)} ids that are not rows of the pile: {shown}"
            f"{', ...' if len(unknown) > 5 else ''}; ids are the capture's ids.txt, e.g. "
            f"{', '.join(repr(i) for i in list(ids or [])[:3])}{_row_number_hint(ids)}"
        )
    if outside:
        shown = ", ".join(f"row {row} (line {n})" for n, row in outside[:5])
        # most of the file outside: "remove these lines" would leave a few labels and the
        # next error, 'selected rows have no label'; the file is most likely another's
        mostly = len(outside) >= 3 and len(outside) * 2 > len(rows)
        advice = (
            f"that is {len(outside)} of its {len(rows)} rows: is it the labels file of another "
            "selection or campaign? Label the rows listed in this one's to_label.csv"
            if mostly
            else ("remove this line" if len(outside) == 1 else "remove these lines")
        )
        raise LabelwiseError(
            f"{what}: {p} labels {len(outside)} "
            f"{'row that was' if len(outside) == 1 else 'rows that were'} "
            f"{not_allowed}: {shown}{', ...' if len(outside) > 5 else ''}; {advice}: "
            "only the rows given to label count (others would bias the estimate)"
        )
    r = np.asarray(rows, dtype=np.int64)
    uniq, counts = np.unique(r, return_counts=True)
    if (counts > 1).any():
        twice_rows = uniq[counts > 1][:5].tolist()
        pairs = list(zip(line_of, rows, strict=False))  # one row per line read
        shown = "; ".join(
            f"row {row} (lines {', '.join(str(n) for n, r in pairs if r == row)})"
            for row in twice_rows
        )
        raise LabelwiseError(
            f"{what}: {p} labels these rows more than once: {shown}; keep one line for each"
        )
    return r, kind, np.asarray(vals, dtype=np.int64 if kind == "label" else np.float64)


CLASS_COLUMN = "class"


def csv_delimiter(header: str) -> str:
    """The field separator of a labels file or CSV pile, read from its header line: a comma, or the
    semicolon or tab a spreadsheet writes where the comma is the decimal mark (a header
    with no comma but one of those)."""
    if "," not in header:
        for sep in (";", "\t"):
            if sep in header:
                return sep
    return ","


def write_labels_csv(
    path: str | os.PathLike[str],
    rows: Sequence[int] | NDArray[Any],
    values: Sequence[Any] | NDArray[Any],
    *,
    column: str = "label",
    classes: Sequence[str] | None = None,
    ids: Sequence[str] | None = None,
) -> None:
    """Write labels the way :func:`read_labels_csv` reads them back unchanged (atomically).

    ``row,<column>``; for class labels (``column="label"``: class indices) with known
    ``classes`` also ``class``, each label's class name, so that the file says which class
    it holds even when class names are numbers; with ``ids`` (one per pile row) also ``id``.
    """
    named = column == "label" and classes is not None
    header = (
        ["row", column] + ([CLASS_COLUMN] if named else []) + (["id"] if ids is not None else [])
    )
    body: list[list[Any]] = []
    for r, v in zip(rows, values, strict=True):
        r, v = int(r), (v.item() if isinstance(v, np.generic) else v)
        line = [r, v]
        if named:
            assert classes is not None
            line.append(classes[int(v)] if 0 <= int(v) < len(classes) else "")
        if ids is not None:
            line.append(ids[r] if 0 <= r < len(ids) else "")
        body.append(line)
    write_csv(path, header, body)


def _as_int(text: str) -> int | None:
    try:
        return int(text)
    except ValueError:
        return None


def _class_column(
    rec: list[str],
    i_label: int,
    i_class: int,
    path: str,
    line_no: int,
    classes: Sequence[str] | None,
    index_of: dict[str, int] | None,
) -> int:
    """A line's class from its ``class`` (a name) and, when both are there, its ``label``
    (the class index), which must agree."""
    assert classes is not None and index_of is not None
    name = rec[i_class].strip()
    if i_label == i_class:
        if name not in index_of:
            raise _unknown_class(name, path, line_no, classes)
        return index_of[name]
    raw = rec[i_label].strip()
    k = _as_int(raw)
    if k is None or not 0 <= k < len(classes):
        raise LabelwiseError(
            f"{path} line {line_no}: beside a 'class' column, 'label' must be a class "
            f"index in [0, {len(classes)}), got {raw!r}"
        )
    if name and name != classes[k]:
        raise LabelwiseError(
            f"{path} line {line_no}: label {k} is the class {classes[k]!r}, but the "
            f"'class' column says {name!r}; fix one of them"
        )
    return k


def _parse_label(text: str, path: str, line_no: int, classes: Sequence[str] | None) -> int:
    """A class index; with ``classes``, an unknown name is an error listing known ones."""
    try:
        return _parse_int(text, path, line_no, "label")
    except LabelwiseError:
        if classes is None:
            # a number that is not a whole one is a regression target or a score, not a name
            hint = (
                "a regression target goes in a 'target' column (row,target), a per-row "
                "score in [0, 1] in a 'score' column"
                if _is_fraction(text)
                else "to label by class name give the names: --classes FILE (one name per line)"
            )
            raise LabelwiseError(
                f"{path} line {line_no}: label must be an integer (a class index), got "
                f"{text!r}; {hint}"
            ) from None
    raise _unknown_class(text, path, line_no, classes)


def _is_fraction(text: str) -> bool:
    """Whether ``text`` is a finite number (such as '-0.83'), which no class index is."""
    try:
        return math.isfinite(float(text))
    except ValueError:
        return False


_VALUE_COLUMNS = ("label", "target", "score", CLASS_COLUMN, "new", "order")


def _row_number_hint(ids: Sequence[str] | None) -> str:
    """When the pile's ids are its row numbers (a table or array captured without an id
    column), how to label by one's own ids instead."""
    if not ids or any(ids[k] != str(k) for k in (0, len(ids) - 1)):
        return ""
    return (
        ": the pile's ids are its row numbers (a table captured without --id-column); label "
        "by 'row', or capture again with --id-column COLUMN to name the rows by your own ids"
    )


def _unknown_class(text: str, path: str, line_no: int, classes: Sequence[str]) -> LabelwiseError:
    """The error for a label that names no class, listing close or known names."""
    # the same name in another case ('DOG' for 'dog') first, then names spelt alike in any case
    folded = {c.casefold(): c for c in reversed(classes)}
    same = [c for c in classes if c.casefold() == text.casefold()]
    alike = difflib.get_close_matches(text.casefold(), list(folded), n=3)
    close = list(dict.fromkeys(same + [folded[c] for c in alike]))[:3]
    known = close or list(classes[:5])
    more = "" if close or len(classes) <= 5 else f", ... ({len(classes)} classes)"
    shown = ", ".join(repr(k) for k in known)
    hint = f"did you mean {shown}?" if close else f"known names: {shown}{more}"
    return LabelwiseError(f"{path} line {line_no}: {text!r} is not a class name; {hint}")


def _parse_int(text: str, path: str, line_no: int, what: str) -> int:
    t = text.strip()
    try:
        return int(t)
    except ValueError:
        try:
            f = float(t)
        except ValueError:
            f = float("nan")
        if np.isfinite(f) and f == int(f):
            return int(f)
    raise LabelwiseError(f"{path} line {line_no}: {what} must be an integer, got {text!r}")


def _parse_float(text: str, path: str, line_no: int, what: str) -> float:
    try:
        v = float(text)
    except ValueError:
        v = float("nan")
    if not np.isfinite(v):
        raise LabelwiseError(f"{path} line {line_no}: {what} must be a finite number, got {text!r}")
    return v

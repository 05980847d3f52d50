"""What the subcommands share about piles and class names: the ``--inputs`` options of
``capture`` (:func:`labelwise.piles.open_pile`) and ``--classes FILE``."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import numpy as np

from ..exceptions import LabelwiseError
from ..io import atomic_write, is_zarr_store, load_array, read_labels_csv, write_json
from ..piles import IMAGE_SUFFIXES, ImageSpec, Pile, open_pile_as
from ..workspace import CLASSES, IDS, Workspace

CLASSES_HELP = (
    "class names, index = class: a text file with one name per line, a JSON list, or a JSON "
    "object name -> index (torchvision's ImageFolder.class_to_idx); labels may then be given "
    "by name"
)
#: what a --classes file may hold, for the errors about one that holds something else
CLASSES_FORMS = (
    'give a text file with one name per line, a JSON list of names (["cat", "dog"]) or a '
    'JSON object name -> index ({"cat": 0, "dog": 1})'
)


def add_pile_arguments(parser: Any) -> None:
    """``--key``, ``--columns``, ``--id-column`` and the image options of ``--inputs``."""
    g = parser.add_argument_group(
        "inputs",
        f"--inputs is a .npy (memory-mapped) or .npz array, a zarr store (read chunk by "
        f"chunk), a .csv or .parquet table, or a "
        f"folder of images ({', '.join(IMAGE_SUFFIXES)}; found recursively, sorted by path, "
        "decoded a batch at a time). Each row keeps an id (written to OUT/ids.txt): the "
        "image's path under the folder, the table's --id-column, else the row number",
    )
    g.add_argument("--key", help=".npz: the array to read (needed when it holds several)")
    g.add_argument(
        "--columns", help="tables: comma-separated numeric columns (default: every numeric one)"
    )
    g.add_argument("--id-column", help="tables: the column holding each row's id")
    g.add_argument(
        "--image-size",
        metavar="HxW",
        help="images: resize every image to height x width (default: all must share one size)",
    )
    g.add_argument(
        "--channels", type=int, choices=[1, 3], help="images: 1 (grey) or 3 (RGB) [default: 3]"
    )
    g.add_argument("--scale", type=float, help="images: pixel multiplier [default: 1/255]")
    g.add_argument("--mean", help="images: per-channel mean to subtract, e.g. 0.485,0.456,0.406")
    g.add_argument("--std", help="images: per-channel std to divide by, e.g. 0.229,0.224,0.225")
    g.add_argument(
        "--layout", choices=["chw", "hwc"], help="images: channels first or last [default: chw]"
    )
    g.add_argument(
        "--skip-corrupt",
        action="store_true",
        help="images: leave out the files that cannot be decoded (each is decoded once first); "
        "they are named in a warning and under 'skipped' in capture.json, and ids.txt lists "
        "only the images that are rows [default: a corrupt image is an error]",
    )


def _floats(text: str | None, flag: str) -> tuple[float, ...] | None:
    if text is None:
        return None
    try:
        return tuple(float(t) for t in text.split(","))
    except ValueError:
        raise LabelwiseError(f"{flag} must be comma-separated numbers, got {text!r}") from None


def _size(text: str | None) -> tuple[int, int] | None:
    if text is None:
        return None
    parts = text.lower().replace("×", "x").split("x")
    try:
        h, w = (int(p) for p in parts)
    except ValueError:
        raise LabelwiseError(
            f"--image-size must be HxW (height x width), e.g. 28x28, got {text!r}"
        ) from None
    if h < 1 or w < 1:
        raise LabelwiseError(f"--image-size must be positive, got {text!r}")
    return h, w


def open_inputs(args: argparse.Namespace) -> Pile:
    """``--inputs`` with its options as a :class:`~labelwise.piles.Pile`."""
    image_opts = {
        "size": _size(args.image_size),
        "channels": args.channels,
        "scale": args.scale,
        "mean": _floats(args.mean, "--mean"),
        "std": _floats(args.std, "--std"),
        "layout": args.layout,
    }
    given = {k: v for k, v in image_opts.items() if v is not None}
    image = None
    if args.inputs.is_dir() and not is_zarr_store(args.inputs):
        image = ImageSpec(**given)
    elif given and args.inputs.exists():  # a missing folder: open_pile_as says so
        flags = ", ".join("--" + ("image-size" if k == "size" else k) for k in given)
        verb = "apply" if len(given) > 1 else "applies"
        raise LabelwiseError(
            f"{flags} {verb} only to a folder of images, not to {args.inputs}; drop it"
        )
    columns = None
    if args.columns is not None:
        columns = [c.strip() for c in args.columns.split(",") if c.strip()]
    return open_pile_as(
        args.inputs,
        "--inputs",
        key=args.key,
        columns=columns,
        id_column=args.id_column,
        image=image,
        skip_corrupt=bool(getattr(args, "skip_corrupt", False)),
        warn_id_like=True,
    )


def write_pile_files(out: Path, pile: Pile, classes: list[str] | None) -> list[str]:
    """``OUT/ids.txt`` and, with class names, ``OUT/classes.json``; the names written."""
    ids = pile.ids

    def _write(fh: Any) -> None:
        for i in range(len(ids)):
            fh.write(ids[i] + "\n")

    atomic_write(out / IDS, _write)
    written = [IDS]
    if classes is not None:
        write_json(out / CLASSES, classes)
        written.append(CLASSES)
    return written


def read_all_labels(
    path: Path, flag: str, n_rows: int | None = None, classes: list[str] | None = None
) -> np.ndarray:
    """The true class of every input (``n_rows`` of them; None: as many as the file labels):
    a .npy of class numbers, or a CSV ``row,label`` labelling every row once (class names
    with ``classes``), as the labelling commands write it."""
    if path.suffix == ".npy":
        y = np.asarray(load_array(path, flag, mmap=False))
        if y.ndim != 1 or (n_rows is not None and y.size != n_rows):
            want = "one class per input" if n_rows is None else f"{n_rows} classes"
            raise LabelwiseError(f"{flag} must hold {want}, got shape {y.shape}")
        if y.dtype.kind not in "iu" and not (y.dtype.kind == "f" and np.all(y == np.round(y))):
            raise LabelwiseError(f"{flag} must hold integer classes")
        return y.astype(np.int64)
    rows, kind, values = read_labels_csv(path, classes=classes, what=flag)
    if kind != "label":
        raise LabelwiseError(f"{flag}: needs a 'label' column, got '{kind}'")
    n = rows.size if n_rows is None else n_rows
    if rows.size != n or set(rows.tolist()) != set(range(n)):
        raise LabelwiseError(_not_every_row(path, flag, rows, n_rows))
    out = np.empty(n, dtype=np.int64)
    out[rows] = values
    return out


def _not_every_row(path: Path, flag: str, rows: np.ndarray, n_rows: int | None) -> str:
    """What is wrong with a label file that should label each of ``n_rows`` inputs once
    (rows 0..n-1; None: as many as it has lines): the rows it misses and those beyond."""
    n = rows.size if n_rows is None else n_rows
    have = set(rows.tolist())
    missing = [r for r in range(n) if r not in have]
    beyond = sorted(r for r in have if not 0 <= r < n)
    whole = "every input" if n_rows is None else f"every one of the {n_rows} inputs"
    parts = [f"{flag}: {path} labels {rows.size} rows; it must label {whole} once"]
    if missing:
        more = ", ..." if len(missing) > 10 else ""
        parts.append(
            f"{len(missing)} rows have no label (e.g. rows {', '.join(map(str, missing[:10]))}"
            f"{more})"
        )
    if beyond:
        more = ", ..." if len(beyond) > 10 else ""
        parts.append(
            f"rows {', '.join(map(str, beyond[:10]))}{more} are beyond the last input (row {n - 1})"
        )
    hint = (
        "a .npy with one class per input, or a CSV row,label with a line for each input "
        "(rows 0..N-1)"
    )
    return "; ".join(parts) + f": give {hint}"


def _names_of_mapping(mapping: Any, path: Path) -> list[str]:
    """Class names, index = class, from a JSON object mapping names to indices (torchvision's
    ``ImageFolder.class_to_idx``) or indices to names; the indices must be 0..C-1."""
    shape = (
        'a JSON object {"name": index, ...} (as torchvision\'s ImageFolder.class_to_idx) or '
        '{"index": "name", ...}, with the indices 0..C-1'
    )
    if not isinstance(mapping, dict) or not mapping:
        raise LabelwiseError(f"--classes: {path} must be a list of names or {shape}")
    items = list(mapping.items())
    if all(isinstance(v, int) and not isinstance(v, bool) for _, v in items):
        by_index = {int(v): str(k) for k, v in items}
    elif all(isinstance(v, str) and k.strip().isdigit() for k, v in items):
        by_index = {int(k): v for k, v in items}
    else:
        raise LabelwiseError(f"--classes: {path} must be a list of names or {shape}")
    if len(by_index) != len(items) or sorted(by_index) != list(range(len(items))):
        raise LabelwiseError(
            f"--classes: {path} maps to the indices {sorted(by_index)[:10]}; {shape}"
        )
    return [by_index[k].strip() for k in range(len(items))]


def _refuse_json_value(text: str, path: Path) -> None:
    """Refuse a file that holds one JSON value other than a list or object (null, a number,
    true, a quoted string): read one name per line it was one class named 'null' or '3'."""
    try:
        json.loads(text)
    except ValueError:  # names, one per line (two lines of names are not one JSON value)
        return
    shown = " ".join(text.split())
    shown = shown if len(shown) <= 40 else shown[:37] + "..."
    raise LabelwiseError(
        f"--classes: {path} holds the JSON value {shown}, not class names; {CLASSES_FORMS}"
    )


def read_classes(path: Path) -> list[str]:
    """Class names from ``path``: a JSON list of strings, or one name per line."""
    try:
        text = path.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise LabelwiseError(f"--classes: {path} does not exist") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise LabelwiseError(f"--classes: cannot read {path} ({exc})") from None
    if text.lstrip().startswith("{"):
        # torchvision's ImageFolder.class_to_idx ({"cat": 0, ...}) or its inverse
        try:
            mapping = json.loads(text)
        except json.JSONDecodeError as exc:
            raise LabelwiseError(f"--classes: {path} is not valid JSON ({exc})") from None
        names = _names_of_mapping(mapping, path)
    elif text.lstrip().startswith("["):
        try:
            names = json.loads(text)
        except json.JSONDecodeError as exc:
            raise LabelwiseError(f"--classes: {path} is not a valid JSON list ({exc})") from None
        if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
            raise LabelwiseError(f"--classes: {path} must be a JSON list of strings")
        names = [n.strip() for n in names]
    else:
        _refuse_json_value(text, path)
        names = [line.strip() for line in text.splitlines()]
        while names and not names[-1]:
            names.pop()
    if not names:
        raise LabelwiseError(f"--classes: {path} names no classes; {CLASSES_FORMS}")
    for i, n in enumerate(names):
        if not n:
            raise LabelwiseError(f"--classes: {path} class {i} has an empty name")
    seen: set[str] = set()
    dup: list[str] = []
    for n in names:
        if n in seen:
            dup.append(n)
        seen.add(n)
    if dup:
        raise LabelwiseError(f"--classes: {path} names these classes twice: {dup[:5]}")
    return names


def store_classes(
    ws: Workspace, path: Path | None, *, n_classes: int | None = None, fresh: bool = False
) -> None:
    """``--classes FILE`` (checked against ``n_classes``) held by the workspace: labels are
    read with these names, and ``DIR/classes.json`` is written with the command's result
    (:meth:`Workspace.hold_classes`), so a command that fails leaves it as it was.

    Unless the workspace is ``fresh`` (just created), a ``DIR/classes.json`` with other names
    is an error: the labels recorded so far were read with those names.
    """
    names = checked_classes(ws, path, n_classes=n_classes, fresh=fresh)
    if names is not None:
        ws.hold_classes(names)


def checked_classes(
    ws: Workspace, path: Path | None, *, n_classes: int | None = None, fresh: bool = False
) -> list[str] | None:
    """The names of ``--classes FILE``, checked as :func:`store_classes` checks them but not
    saved (None without ``--classes``): a command that makes a new selection or campaign
    saves them with it, so an error on the way leaves the directory's classes.json as it was.
    """
    if path is None:
        return None
    names = read_classes(path)
    if n_classes is not None and len(names) != n_classes:
        raise LabelwiseError(
            f"--classes: {path} names {len(names)} classes, the model has {n_classes} "
            "(columns of the probabilities)"
        )
    captured = ws.capture_classes()
    if captured is not None and list(captured) != names:
        cap = ws.capture_dir()
        shown = ", ".join(captured[:5]) + (", ..." if len(captured) > 5 else "")
        raise LabelwiseError(
            f"--classes: {path} names the classes otherwise than the capture's "
            f"{cap and cap / CLASSES} ({shown}), which say what the model's class numbers mean; "
            "labels read with other names would be scored against the wrong classes. Leave "
            "--classes out, or correct that file"
        )
    own = ws.path / CLASSES
    if own.is_file() and not fresh:
        before = ws.classes()
        if before is not None and list(before) != names:
            raise LabelwiseError(
                f"--classes: {own} already names other classes ({', '.join(before[:5])}"
                f"{', ...' if len(before) > 5 else ''}); delete it to change them"
            )
    return names

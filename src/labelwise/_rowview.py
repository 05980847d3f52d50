"""One pile row as a person sees it: shared by the labelling page and the Label Studio export.

:class:`RowView` reopens the pile a workspace's activations were captured from, as the
capture's ``capture.json`` ``"pile"`` entry (:meth:`labelwise.piles.Pile.describe`) records
it, with :func:`labelwise.piles.open_pile` and the recorded ``key``, ``columns``,
``id_column`` and image preprocessing. Row ids come from the capture's ``ids.txt``
(:meth:`labelwise.workspace.Workspace.row_ids`). A recorded ``path`` or ``root`` that is
relative is read against the capture directory (hand-written ``capture.json`` files).

What a row is (:attr:`RowView.kind`):

- ``"image"``: a folder of images. :meth:`RowView.image_file` is the original file
  ``root/ids[row]`` (kept inside ``root``), shown as it is, not the resized, normalised
  input the model saw (that is :meth:`RowView.inputs`).
- ``"array"``: a ``.npy`` or ``.npz`` (``key``) pile; :meth:`RowView.values` is the row.
- ``"table"``: a ``.csv`` or ``.parquet`` pile; :meth:`RowView.record` is the row's cells
  with their column names (every column of the file, text columns too, as a labeller wants
  to see them), :meth:`RowView.values` the numeric ``columns`` the model read.
- ``"none"``: nothing is known about the rows: no capture or no ``"pile"`` entry
  (:attr:`RowView.note` is empty), or the pile is not where the capture found it or of an
  unknown kind (:attr:`RowView.note` says so).

:meth:`RowView.text` is a short text form of any row. :func:`png_bytes` is an image file
as a browser can show it (a TIFF, which browsers do not show, converted to PNG), and
:func:`browser_image` the same as a ``data:`` URL for a file a browser cannot show.

A pile that **moved** (its file or image folder is gone) is no error; :attr:`RowView.note`
names the path. An array or table pile then gives ``"none"``: the rows are still known by
number and id, so labelling can go on and the page says why there is nothing to see. An image
folder stays ``"image"`` while ``ids.txt`` names its files: :meth:`RowView.image_path` still
says where each one was (what a Label Studio task with an URL prefix needs), and
:meth:`RowView.image_file` is an error naming the missing file.

A pile that **changed** (another number of rows or row shape than recorded, other ids, a
missing ``key`` or column, another kind of file) is a
:class:`~labelwise.exceptions.LabelwiseError`: showing it would put a different input in
front of the labeller than the one the model saw under that row number. One image file
missing from a folder that is still there is an error for that row only.

NumPy only at import; Pillow and pyarrow are imported when a pile needs them.
"""

from __future__ import annotations

import base64
import csv
import io
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ._deps import require
from .exceptions import LabelwiseError
from .io import csv_delimiter
from .piles import ImageSpec, Pile, open_pile
from .workspace import CAPTURE, Workspace

__all__ = ["RowView", "browser_image", "png_bytes"]

_IMAGE_KINDS = ("images", "image", "image-folder")
_ARRAY_KINDS = ("npy", "npz", "zarr", "array")
_TABLE_KINDS = ("csv", "parquet", "table")
_RECORDED = ("npy", "npz", "zarr", "images", "csv", "parquet")
_TEXT_VALUES = 64  # a longer row is shown truncated in the text form
# image files a browser (and so Label Studio's <Image>) shows as they are; TIFF it does not
BROWSER_SUFFIXES = (".png", ".jpg", ".jpeg", ".gif", ".webp", ".bmp")
_PNG_MODES = ("1", "L", "LA", "P", "RGB", "RGBA", "I;16")  # Pillow writes these as PNG


class RowView:
    """The rows of a workspace's pile, for people: see the module docstring.

    Parameters
    ----------
    ws:
        The workspace (selection or campaign) whose activations came from a capture.
    ids:
        The row ids; default :meth:`~labelwise.workspace.Workspace.row_ids`.

    Raises
    ------
    LabelwiseError
        The pile changed since the capture (see the module docstring).
    """

    def __init__(self, ws: Workspace, ids: Sequence[str] | None = None) -> None:
        self.ids: Sequence[str] | None = ids if ids is not None else ws.row_ids()
        self.kind = "none"
        self.note = ""
        self.root: Path | None = None
        self.path: Path | None = None
        self._pile: Pile | None = None
        self._records: list[list[str]] | None = None
        self._header: list[str] | None = None
        self.desc: dict[str, Any] = {}
        self.where = "capture.json"
        cap = ws.capture_dir()
        desc = ws.pile_info()
        if cap is None or desc is None:
            return  # nothing recorded, nothing to note
        self.desc = desc
        self.where = f"{cap / CAPTURE}"
        kind = str(desc.get("kind") or "").lower()
        loc = desc.get("root") or desc.get("path")
        if not loc:
            self.note = f"the pile in {self.where} names no path"
            return
        p = Path(str(loc))
        p = p if p.is_absolute() else cap / p
        if kind in _IMAGE_KINDS and self.ids is not None and not p.exists():
            # the ids still name the files: their paths (e.g. for Label Studio, which may
            # read them from elsewhere) are known, the files themselves are not here
            self.root = p.resolve()
            self.kind = "image"
            self.note = (
                f"the image folder {p} recorded in {self.where} is not there any more (moved "
                "or deleted?); the images cannot be shown"
            )
            return
        if not p.exists():
            self.note = (
                f"the pile {p} recorded in {self.where} is not there any more (moved or "
                "deleted?); rows are shown by number and id only"
            )
            return
        if kind in _IMAGE_KINDS:
            if not p.is_dir():
                raise LabelwiseError(f"the image folder {p} recorded in {self.where} is a file")
            self.root = p.resolve()
            if self.ids is None:
                self.ids = list(self.inputs_pile().ids)
            self._check_rows(len(self.ids), "ids")
            self.kind = "image"
            return
        if kind and kind not in _ARRAY_KINDS + _TABLE_KINDS:
            self.note = f"the pile in {self.where} is of an unknown kind {kind!r}"
            return
        self.path = p
        pile = self._open()
        self._check_pile(pile, kind)
        self.kind = "array" if pile.kind in _ARRAY_KINDS else "table"

    # ----------------------------------------------------------------------- opening

    def _open(self) -> Pile:
        assert self.path is not None
        d = self.desc
        suffix = self.path.suffix.lower()
        table = suffix in (".csv", ".parquet", ".pq")
        try:
            self._pile = open_pile(
                self.path,
                key=d.get("key") if suffix == ".npz" else None,
                columns=d.get("columns") if table else None,
                id_column=d.get("id_column") if table else None,
            )
        except LabelwiseError as exc:
            raise LabelwiseError(
                f"the pile recorded in {self.where} cannot be reopened as it was captured "
                f"(did it change?): {exc}"
            ) from None
        return self._pile

    def _changed(self, what: str) -> LabelwiseError:
        where = self.root or self.path
        return LabelwiseError(
            f"the pile {where} changed since the capture ({self.where}): {what}; restore it "
            "or capture again"
        )

    def _check_rows(self, n: int, what: str) -> None:
        rows = self.desc.get("rows")
        if rows is not None and int(rows) != n:
            raise self._changed(f"it has {n} {what}, the capture recorded {int(rows)} rows")

    def _check_pile(self, pile: Pile, kind: str) -> None:
        if kind in _RECORDED and pile.kind != kind:
            raise self._changed(f"it is now a {pile.kind} pile, the capture read a {kind} pile")
        self._check_rows(len(pile), "rows")
        shape = self.desc.get("shape")
        if shape is not None and [int(s) for s in shape] != list(pile.shape):
            raise self._changed(f"its shape is {list(pile.shape)}, the capture recorded {shape}")
        id_column = self.desc.get("id_column")
        if self.ids is not None and id_column and list(pile.ids) != list(self.ids):
            raise self._changed(f"its {id_column!r} ids differ from ids.txt")

    def inputs_pile(self) -> Pile:
        """The pile as the model read it (image folders are opened on first use)."""
        if self._pile is None:
            if self.root is None:
                raise LabelwiseError(f"no pile to read: {self.note}")
            spec = dict(self.desc.get("preprocessing") or {})
            for k in ("size", "mean", "std"):
                if spec.get(k) is not None:
                    spec[k] = tuple(spec[k])
            skipped = self.desc.get("skipped")
            try:
                with warnings.catch_warnings():
                    # the files skipped at capture are skipped again (the capture warned)
                    warnings.simplefilter("ignore", UserWarning)
                    pile = open_pile(
                        self.root, image=ImageSpec(**spec), skip_corrupt=skipped is not None
                    )
            except (LabelwiseError, TypeError) as exc:
                raise self._changed(f"it cannot be reopened ({exc})") from None
            if self.ids is not None and list(pile.ids) != list(self.ids):
                raise self._changed("its images are not the ones ids.txt lists")
            self._pile = pile
        return self._pile

    # ----------------------------------------------------------------------- rows

    def _row(self, row: int) -> int:
        n = len(self.ids) if self.kind == "image" and self.ids is not None else None
        if self._pile is not None and self.kind != "image":
            n = len(self._pile)
        if n is not None and not 0 <= row < n:
            raise LabelwiseError(f"row {row} is not in the pile of {n} rows")
        return row

    def row_id(self, row: int) -> str:
        """The row's id (``ids.txt``), else its number."""
        if self.ids is not None and 0 <= row < len(self.ids):
            return self.ids[row]
        return str(row)

    def image_path(self, row: int) -> Path:
        """Where the original image of ``row`` is: ``root/ids[row]``, kept inside root (the
        file itself may be missing: see :meth:`image_file`)."""
        if self.kind != "image":
            raise LabelwiseError(f"row {row} has no image file (the pile is not images)")
        assert self.root is not None and self.ids is not None
        rel = self.ids[self._row(row)]
        path = (self.root / rel).resolve()
        if self.root.resolve() not in path.parents:
            raise LabelwiseError(f"row {row}'s id {rel!r} points outside {self.root}")
        return path

    def image_file(self, row: int) -> Path:
        """The original image file of ``row`` (:meth:`image_path`), which must exist."""
        path = self.image_path(row)
        if not path.is_file():
            raise LabelwiseError(
                f"row {row}'s image {path} does not exist (moved or deleted since the capture?)"
            )
        return path

    def values(self, row: int) -> NDArray[np.float32]:
        """The row of an array pile, or the numeric columns of a table row (float32)."""
        if self.kind not in ("array", "table"):
            raise LabelwiseError(f"row {row} has no values to show (the pile is {self.kind})")
        assert self._pile is not None
        return self._pile[self._row(row)]

    def inputs(self, row: int) -> NDArray[np.float32]:
        """The row as the model read it (decoded and preprocessed, for images)."""
        if self.kind == "none":
            raise LabelwiseError(f"row {row} cannot be read: {self.note}")
        return self.inputs_pile()[self._row(row)]

    def record(self, row: int) -> tuple[list[str], list[str]]:
        """A table row as the file holds it: (column names, cells as text)."""
        if self.kind != "table":
            raise LabelwiseError(f"row {row} is not a table row (the pile is {self.kind})")
        header, records = self._table()
        rec = records[self._row(row)]
        return header, [rec[j] if j < len(rec) else "" for j in range(len(header))]

    def _table(self) -> tuple[list[str], list[list[str]]]:
        if self._records is None or self._header is None:
            assert self.path is not None
            if self.path.suffix.lower() == ".csv":
                with open(self.path, encoding="utf-8-sig", newline="") as fh:
                    sep = csv_delimiter(fh.readline())  # as open_pile reads it
                    fh.seek(0)
                    reader = csv.reader(fh, delimiter=sep)
                    header = [h.strip() for h in next(reader, [])]
                    # the rows open_pile counts: blank lines are no rows
                    body = [r for r in reader if r and any(c.strip() for c in r)]
            else:
                pq = require("pyarrow.parquet", "showing a Parquet pile's rows", extra="tables")
                table = pq.read_table(self.path)
                header = list(table.column_names)
                cols = [table.column(c).to_pylist() for c in header]
                body = [[_cell(col[i]) for col in cols] for i in range(table.num_rows)]
            self._header, self._records = header, body
        return self._header, self._records

    def text(self, row: int) -> str:
        """A short text form: ``row 3: [0.1, 2, ...]``, ``row 3: a=1, b=x`` or ``row 3 (id x)``."""
        if self.kind == "array":
            flat = self.values(row).reshape(-1)
            shown = ", ".join(f"{float(v):.4g}" for v in flat[:_TEXT_VALUES])
            more = f", ... ({flat.size} values)" if flat.size > _TEXT_VALUES else ""
            return f"row {row}: [{shown}{more}]"
        if self.kind == "table":
            header, cells = self.record(row)
            return f"row {row}: " + ", ".join(
                f"{h}={v}" for h, v in zip(header, cells, strict=True)
            )
        return f"row {row} (id {self.row_id(row)})"


def _cell(v: Any) -> str:
    if v is None:
        return ""
    return f"{v:.6g}" if isinstance(v, float) else str(v)


def png_bytes(path: Path, what: str) -> bytes:
    """The image file ``path`` as PNG bytes: its first frame; a mode PNG cannot hold
    converted (32-bit integer or float grey scaled from its minimum to its maximum onto
    0-255, CMYK and other colour spaces to RGB or RGBA). ``what`` names the use in the error
    when Pillow is missing."""
    pil = require("PIL.Image", what, extra="images")
    buf = io.BytesIO()
    try:
        with pil.open(path) as im:
            im.load()
            if im.mode in ("I", "F"):
                x = np.asarray(im, dtype=np.float64)
                finite = x[np.isfinite(x)]
                lo, hi = (float(finite.min()), float(finite.max())) if finite.size else (0, 1)
                scaled = np.nan_to_num((x - lo) / ((hi - lo) or 1.0), nan=0.0)
                out = pil.fromarray(np.clip(np.round(scaled * 255), 0, 255).astype(np.uint8))
            elif im.mode in _PNG_MODES:
                out = im
            else:
                out = im.convert("RGBA" if "A" in im.getbands() else "RGB")
            out.save(buf, format="PNG")
    except Exception as exc:  # Pillow raises OSError, SyntaxError, ValueError ...
        raise LabelwiseError(f"cannot read image {path} ({exc})") from None
    return buf.getvalue()


def browser_image(path: Path, what: str) -> str | None:
    """For an image file a browser cannot show (TIFF: not in ``BROWSER_SUFFIXES``) that is
    there: the image as a PNG ``data:`` URL (:func:`png_bytes`); None otherwise."""
    if path.suffix.lower() in BROWSER_SUFFIXES or not path.is_file():
        return None
    return "data:image/png;base64," + base64.b64encode(png_bytes(path, what)).decode("ascii")

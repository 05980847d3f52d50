"""What a row of the pile looks like on the labelling page.

From :meth:`labelwise.workspace.Workspace.pile_info` (the capture's ``"pile"`` entry) and
:meth:`~labelwise.workspace.Workspace.row_ids`:

- an image folder (``{"kind": "images", "root": ...}``): the file ``root/ids[row]``, sent as
  it is (PNG, JPEG, GIF, WebP) or converted to PNG with Pillow;
- an array pile (a ``.npy`` file under ``"path"``): a 2-D row (H, W) or 3-D row (H, W, C) or
  (C, H, W) drawn as an image, a 1-D row as a line plot (PNG) and, when short, a table;
- a table pile (a ``.csv`` file under ``"path"``): the row's values as a table;
- anything else: nothing (the page then shows the row number and the model's top classes).
"""

from __future__ import annotations

import csv
import io
import itertools
import mimetypes
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from .._deps import require
from ..exceptions import LabelwiseError
from ..io import load_array
from ..workspace import Workspace

__all__ = ["RowRenderer"]

_SENT_AS_IS = {".png", ".jpg", ".jpeg", ".gif", ".webp"}
_TABLE_MAX = 32  # a 1-D row this short is also shown as a table
_PLOT_SIZE = (480, 200)


class RowRenderer:
    """The view of one pile row: ``view(row)`` for the page, ``image(row)`` for its picture."""

    def __init__(self, ws: Workspace, ids: list[str] | None) -> None:
        self.ids = ids
        self.pile = ws.pile_info() or {}
        cap = ws.capture_dir()
        self.base = cap if cap is not None else ws.path
        self.kind = "none"
        self.root: Path | None = None
        self.array: NDArray[Any] | None = None
        self.table: Path | None = None
        kind = str(self.pile.get("kind", "")).lower()
        where = self.pile.get("root") or self.pile.get("path")
        if kind in ("images", "image", "image-folder") and where and ids is not None:
            self.root = self._resolve(where)
            self.kind = "image"
        elif where and str(where).endswith(".npy") and self._resolve(where).is_file():
            self.array = load_array(self._resolve(where), "the pile in capture.json")
            self.kind = "array"
        elif where and str(where).endswith(".csv") and self._resolve(where).is_file():
            self.table = self._resolve(where)
            self.kind = "table"

    def _resolve(self, where: Any) -> Path:
        p = Path(str(where))
        return p if p.is_absolute() else (self.base / p)

    def view(self, row: int) -> dict[str, Any]:
        """How the page shows ``row``: ``{"type": "image" | "table" | "none", ...}``."""
        if self.kind == "image":
            return {"type": "image", "url": f"/api/image/{row}"}
        if self.kind == "array":
            assert self.array is not None
            x = np.asarray(self.array[row])
            out: dict[str, Any] = {"type": "image", "url": f"/api/image/{row}"}
            if x.ndim == 1 and x.size <= _TABLE_MAX:
                out["table"] = {
                    "columns": [str(i) for i in range(x.size)],
                    "values": [_fmt(v) for v in x.tolist()],
                }
            if x.ndim not in (1, 2, 3):
                return {"type": "none"}
            return out
        if self.kind == "table":
            columns, values = self._table_row(row)
            return {"type": "table", "table": {"columns": columns, "values": values}}
        return {"type": "none"}

    def image(self, row: int) -> tuple[bytes, str]:
        """The row's picture: (bytes, content type)."""
        if self.kind == "image":
            return self._image_file(row)
        if self.kind == "array":
            assert self.array is not None
            return _png(np.asarray(self.array[row])), "image/png"
        raise LabelwiseError(f"row {row} has no picture (the pile is not known as images)")

    def _image_file(self, row: int) -> tuple[bytes, str]:
        assert self.root is not None and self.ids is not None
        root = self.root.resolve()
        path = (root / self.ids[row]).resolve()
        if root not in path.parents:
            raise LabelwiseError(f"row {row}'s id {self.ids[row]!r} points outside {root}")
        if not path.is_file():
            raise LabelwiseError(f"row {row}'s image {path} does not exist")
        if path.suffix.lower() in _SENT_AS_IS:
            kind = mimetypes.guess_type(path.name)[0] or "application/octet-stream"
            return path.read_bytes(), kind
        image = require(
            "PIL.Image", "showing this image format on the labelling page", extra="images"
        )
        buf = io.BytesIO()
        with image.open(path) as im:
            im.save(buf, format="PNG")
        return buf.getvalue(), "image/png"

    def _table_row(self, row: int) -> tuple[list[str], list[str]]:
        assert self.table is not None
        with open(self.table, encoding="utf-8-sig", newline="") as fh:
            reader = csv.reader(fh)
            header = next(reader, [])
            rec = next(itertools.islice(reader, row, row + 1), None)
        if rec is None:
            raise LabelwiseError(f"row {row} is not in {self.table}")
        return [str(h) for h in header], rec


def _fmt(v: Any) -> str:
    return f"{v:.4g}" if isinstance(v, float) else str(v)


def _png(x: NDArray[Any]) -> bytes:
    """A row of an array pile as a PNG: an image (2-D, 3-D) or a line plot (1-D)."""
    pil = require("PIL.Image", "showing array rows on the labelling page", extra="images")
    draw_mod = require("PIL.ImageDraw", "showing array rows on the labelling page", extra="images")
    x = np.asarray(x, dtype=np.float64)
    buf = io.BytesIO()
    if x.ndim == 1:
        w, h = _PLOT_SIZE
        im = pil.new("RGB", (w, h), "white")
        d = draw_mod.Draw(im)
        finite = x[np.isfinite(x)]
        lo, hi = (float(finite.min()), float(finite.max())) if finite.size else (0.0, 1.0)
        span = hi - lo or 1.0
        pad = 10
        n = max(x.size - 1, 1)
        pts = [
            (pad + (w - 2 * pad) * i / n, h - pad - (h - 2 * pad) * (v - lo) / span)
            for i, v in enumerate(np.nan_to_num(x, nan=lo).tolist())
        ]
        d.line([(pad, h - pad), (w - pad, h - pad)], fill=(180, 180, 180))
        d.line(pts if len(pts) > 1 else pts * 2, fill=(30, 90, 200), width=2)
        im.save(buf, format="PNG")
        return buf.getvalue()
    if x.ndim == 3 and x.shape[0] in (1, 3, 4) and x.shape[-1] not in (1, 3, 4):
        x = np.moveaxis(x, 0, -1)  # (C, H, W) -> (H, W, C)
    if x.ndim == 3 and x.shape[-1] == 1:
        x = x[..., 0]
    if x.ndim == 3 and x.shape[-1] not in (3, 4):
        x = x[..., :3] if x.shape[-1] > 4 else x[..., 0]
    finite = x[np.isfinite(x)]
    lo, hi = (float(finite.min()), float(finite.max())) if finite.size else (0.0, 1.0)
    scaled = np.nan_to_num((x - lo) / ((hi - lo) or 1.0), nan=0.0)
    arr = np.clip(np.round(scaled * 255), 0, 255).astype(np.uint8)
    im = pil.fromarray(arr)
    scale = max(1, 256 // max(arr.shape[0], arr.shape[1]))
    if scale > 1:  # small images (28x28 digits) are drawn large, pixels kept sharp
        im = im.resize((arr.shape[1] * scale, arr.shape[0] * scale), pil.NEAREST)
    im.save(buf, format="PNG")
    return buf.getvalue()

"""What a row of the pile looks like on the labelling page.

The pile and its rows come from :class:`labelwise._rowview.RowView` (the capture's
``"pile"`` entry reopened as it was captured); this module only draws them:

- an image folder: the file ``root/ids[row]``, sent as it is (PNG, JPEG, GIF, WebP) or
  converted to PNG with Pillow;
- an array pile (``.npy``, ``.npz``): a 2-D row (H, W) or 3-D row (H, W, C) or (C, H, W)
  drawn as an image, a 1-D row as a line plot (PNG) and, when short, a table;
- a table pile (``.csv``, ``.parquet``): the row's cells as a table;
- anything else: nothing (the page then shows the row number, the model's top classes and,
  when the pile moved, a note saying so).
"""

from __future__ import annotations

import io
import mimetypes
from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from .._deps import require
from .._rowview import RowView, png_bytes
from ..exceptions import LabelwiseError
from ..workspace import Workspace

__all__ = ["RowRenderer"]

_SENT_AS_IS = {".png", ".jpg", ".jpeg", ".gif", ".webp"}
_TABLE_MAX = 32  # a 1-D row this short is also shown as a table
_PLOT_SIZE = (480, 200)


class RowRenderer:
    """The view of one pile row: ``view(row)`` for the page, ``image(row)`` for its picture."""

    def __init__(self, ws: Workspace, ids: Sequence[str] | None) -> None:
        self.rows = RowView(ws, ids)
        self.ids = self.rows.ids
        self.kind = self.rows.kind

    def view(self, row: int) -> dict[str, Any]:
        """How the page shows ``row``: ``{"type": "image" | "table" | "none", ...}``."""
        if self.kind == "image":
            shown: dict[str, Any] = {"type": "image", "url": f"/api/image/{row}"}
            return {**shown, "note": self.rows.note} if self.rows.note else shown
        if self.kind == "array":
            x = self.rows.values(row)
            if x.ndim not in (1, 2, 3):
                return {"type": "none"}
            out: dict[str, Any] = {"type": "image", "url": f"/api/image/{row}"}
            if x.ndim == 1 and x.size <= _TABLE_MAX:
                out["table"] = {
                    "columns": [str(i) for i in range(x.size)],
                    "values": [_fmt(v) for v in x.tolist()],
                }
            return out
        if self.kind == "table":
            columns, values = self.rows.record(row)
            return {"type": "table", "table": {"columns": columns, "values": values}}
        return {"type": "none", "note": self.rows.note} if self.rows.note else {"type": "none"}

    def image(self, row: int) -> tuple[bytes, str]:
        """The row's picture: (bytes, content type)."""
        if self.kind == "image":
            return self._image_file(row)
        if self.kind == "array":
            return _png(self.rows.values(row)), "image/png"
        raise LabelwiseError(f"row {row} has no picture (the pile is not known as images)")

    def _image_file(self, row: int) -> tuple[bytes, str]:
        path = self.rows.image_file(row)
        if path.suffix.lower() in _SENT_AS_IS:
            kind = mimetypes.guess_type(path.name)[0] or "application/octet-stream"
            return path.read_bytes(), kind
        return png_bytes(path, "showing this image format on the labelling page"), "image/png"


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

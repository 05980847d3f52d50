"""Progress bars: shown on a terminal, silent in logs and CI (or with LABELWISE_NO_PROGRESS=1)."""

from __future__ import annotations

import os
from typing import Any


def progress_bar(
    total: int | None = None, *, desc: str, unit: str = "it", enabled: bool = True
) -> Any:
    """A ``tqdm`` bar that disables itself when stderr is not a terminal."""
    from tqdm.auto import tqdm

    off = not enabled or os.environ.get("LABELWISE_NO_PROGRESS") == "1"
    return tqdm(total=total, desc=desc, unit=unit, leave=False, disable=True if off else None)

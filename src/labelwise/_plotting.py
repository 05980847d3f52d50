"""Matplotlib helpers (optional dependency): headless backend, atomic PNG writes."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any


def pyplot() -> Any:
    """``matplotlib.pyplot`` on the headless Agg backend, or None when matplotlib is missing."""
    try:
        import matplotlib
    except ImportError:
        return None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def save_figure(fig: Any, path: str | os.PathLike[str]) -> Path:
    """Save ``fig`` as PNG via a temporary file and ``os.replace``, then close it."""
    from .io import atomic_write

    path = Path(path)
    try:
        atomic_write(path, lambda fh: fig.savefig(fh, format="png"), binary=True)
    finally:
        import matplotlib.pyplot as plt

        plt.close(fig)
    return path

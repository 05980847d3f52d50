"""``python -m labelwise``: the command line (the same as ``labelwise``)."""

from __future__ import annotations

from .cli import main

if __name__ == "__main__":
    raise SystemExit(main())

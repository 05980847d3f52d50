"""``python -m labelwise.cli``."""

from __future__ import annotations

from . import main

if __name__ == "__main__":
    raise SystemExit(main())

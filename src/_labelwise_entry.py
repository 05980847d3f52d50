"""The ``labelwise`` console command: a module outside the package, so that a Ctrl-C while
the package is imported (about 2 s: numba, scipy, the samplers) ends quietly.

The console script's ``from labelwise.cli import main`` imports the whole package before
``main`` can install anything: a Ctrl-C in those seconds printed a traceback through
importlib. Here the import is itself inside the handler; the package's ``__init__`` stays as
it is (imports are not made lazy).
"""

from __future__ import annotations

import sys


def main() -> int:
    """``labelwise ...``: :func:`labelwise.cli.main`, exit 130 without a traceback on a
    Ctrl-C while it is imported."""
    try:
        from labelwise.cli import main as run
    except KeyboardInterrupt:
        print("labelwise: interrupted while starting; nothing was done", file=sys.stderr)
        return 130
    return run()


if __name__ == "__main__":
    raise SystemExit(main())

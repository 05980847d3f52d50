"""The ``labelwise`` console command: a module outside the package, so that a Ctrl-C while
the package is imported (about 2 s: numba, scipy, the samplers) ends quietly.

The console script's ``from labelwise.cli import main`` imports the whole package before
``main`` can install anything: a Ctrl-C in those seconds printed a traceback through
importlib. Here a SIGINT handler (one line, exit 130; the same as ``labelwise._startup``'s,
which cannot be imported without the package) is set before that import, and
``labelwise.cli.main`` hands Ctrl-C back to Python (``labelwise._startup.release``) where
each command's own handler takes over.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys


def _starting(signum: int, frame: object) -> None:
    """Ctrl-C before ``labelwise._startup`` is imported: one line, exit 130 (what --help or
    --version printed is flushed first, as ``labelwise._startup._starting`` does)."""
    with contextlib.suppress(Exception):  # a closed or half-written stream: leave it
        sys.stdout.flush()
    os.write(2, b"labelwise: interrupted while starting; nothing was done\n")
    os._exit(130)


def main() -> int:
    """``labelwise ...``: :func:`labelwise.cli.main`, exit 130 without a traceback on a
    Ctrl-C while it is imported."""
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        signal.signal(signal.SIGINT, _starting)
    from labelwise.cli import main as run

    return run()


if __name__ == "__main__":
    raise SystemExit(main())

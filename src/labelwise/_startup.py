"""A Ctrl-C while ``python -m labelwise`` (or ``-m labelwise.cli``) imports the package.

runpy imports ``labelwise`` (numba, scipy, the samplers: about 2 s) and ``labelwise.cli``
before their ``__main__`` runs, so a Ctrl-C in those seconds printed a KeyboardInterrupt
traceback through runpy. The package's and the CLI's imports run inside
:func:`quiet_interrupt`: started that way, the interrupt ends the process as the console
command does (``src/_labelwise_entry.py``): exit 130 and one line. Imported any other way
(``import labelwise``, the console command), the KeyboardInterrupt goes on unchanged.
Standard library only: this module is imported first.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["quiet_interrupt"]

MESSAGE = "labelwise: interrupted while starting; nothing was done"
_ENTRIES = ("labelwise", "labelwise.__main__", "labelwise.cli", "labelwise.cli.__main__")
# an interpreter option cluster ending in -m (``-m NAME``, ``-mNAME``, ``-Im NAME``); only
# options that take no value may come before the m
_DASH_M = re.compile(r"-[bBdEIOPqsSuv]*m(.*)")


def _run_as_entry() -> bool:
    """True while runpy locates ``python -m labelwise[.cli]``: it sets ``sys.argv[0]`` to
    ``"-m"`` until the module is found (Python docs, "Command line", ``-m``)."""
    if sys.argv[:1] != ["-m"]:
        return False
    args = getattr(sys, "orig_argv", [])[1:]
    for i, arg in enumerate(args):
        match = _DASH_M.fullmatch(arg)
        if match:
            name = match.group(1) or (args[i + 1] if i + 1 < len(args) else "")
            return name in _ENTRIES
    return False


@contextmanager
def quiet_interrupt() -> Iterator[None]:
    """Turn a KeyboardInterrupt into ``SystemExit(130)`` and one line on stderr when the
    process is ``python -m labelwise[.cli]`` still being located; re-raise it otherwise."""
    try:
        yield
    except KeyboardInterrupt:
        if not _run_as_entry():
            raise
        print(MESSAGE, file=sys.stderr)
        raise SystemExit(130) from None

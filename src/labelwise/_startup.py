"""A Ctrl-C while the ``labelwise`` command is still starting (importing numpy, scipy,
numba and the samplers: about 2 s) ends it with one line and exit 130, not a traceback.

Started as ``python -m labelwise`` (or ``-m labelwise.cli``), runpy imports the package
before its ``__main__`` runs; the console command (``src/_labelwise_entry.py``) imports
``labelwise.cli``. In both, :func:`install` sets a SIGINT handler that prints
:data:`MESSAGE` and leaves at once with ``os._exit(130)`` (nothing has been done yet, so
nothing is lost), and :func:`labelwise.cli.main` hands Ctrl-C back to Python
(:func:`release`) where each command's own handler takes over.

A handler rather than ``except KeyboardInterrupt`` around the imports: the exception could
land outside any such block (in ``labelwise/__main__.py``'s own ``from .cli import main``,
after runpy has located the module), and CPython remembers a KeyboardInterrupt that ended
an inner ``PyRun_String`` and then kills the process with SIGINT at exit (exit -2) even
when a handler had turned it into ``SystemExit(130)``. Imported any other way (``import
labelwise`` in a user's program), nothing is installed. Standard library only: this module
is imported first.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import sys
import threading
from types import FrameType

__all__ = ["MESSAGE", "install", "release"]

MESSAGE = "labelwise: interrupted while starting; nothing was done"
_ENTRIES = ("labelwise", "labelwise.__main__", "labelwise.cli", "labelwise.cli.__main__")
# an interpreter option cluster ending in -m (``-m NAME``, ``-mNAME``, ``-Im NAME``); only
# options that take no value may come before the m
_DASH_M = re.compile(r"-[bBdEIOPqsSuv]*m(.*)")


def run_as_entry() -> bool:
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


def _starting(signum: int, frame: FrameType | None) -> None:
    """The SIGINT handler while the command starts: one line, exit 130."""
    with contextlib.suppress(Exception):  # a closed or half-written stream: leave it
        sys.stdout.flush()  # what --help or --version printed already
    os.write(2, (MESSAGE + "\n").encode())
    os._exit(130)


def install() -> None:
    """Set :func:`_starting` as the SIGINT handler, if Ctrl-C still has Python's default
    handler and this is the main thread (a caller's own handler is kept)."""
    if threading.current_thread() is not threading.main_thread():
        return
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        signal.signal(signal.SIGINT, _starting)


def release() -> None:
    """Give Ctrl-C back to Python (KeyboardInterrupt) if :func:`install` or the console
    command (``_labelwise_entry``, its own copy of the handler) set it.

    The console command's copy is known by its source file, not by ``sys.modules``: run as
    a script (``python src/_labelwise_entry.py CMD``) its module is ``__main__``, and the
    starting handler stayed in place while the command ran (a Ctrl-C then left at once,
    saying nothing was done, with no staging file removed)."""
    handler = signal.getsignal(signal.SIGINT)
    code = getattr(handler, "__code__", None)
    entry = os.path.basename(getattr(code, "co_filename", "")) == "_labelwise_entry.py"
    if handler is _starting or (entry and getattr(handler, "__name__", "") == "_starting"):
        signal.signal(signal.SIGINT, signal.default_int_handler)

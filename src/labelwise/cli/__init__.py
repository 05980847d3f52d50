"""Command-line interface: ``labelwise select | estimate | rank | capture | ... | study``.

Thin: one module per subcommand parses its arguments, calls the public API, prints, and
reads or writes a selection directory through :class:`labelwise.workspace.Workspace`.
No library module imports the CLI.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
import traceback
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .. import __version__
from .._startup import release as _release_ctrl_c
from ..exceptions import LabelwiseError, MissingDependencyError
from . import (
    campaign,
    capture,
    demo,
    dependability,
    estimate,
    export,
    import_labels,
    label,
    next_batch,
    quality,
    rank,
    report,
    select,
    study,
)
from ._common import check_seed

__all__ = ["build_parser", "main"]

EPILOG = """\
typical session:
  labelwise capture --model model.pt --inputs pile.npy --out cap
  labelwise select --method ces --budget 100 --activations cap/activations.npy \\
                   --probs cap/probabilities.npy --out sel
  # label the rows listed in sel/to_label.csv, save them as labels.csv (row,label or
  # id,label; class numbers or names), or: labelwise label sel
  labelwise estimate sel --labels labels.csv
  labelwise select --extend sel --budget 50      # 50 more labels, same method

sequential campaign (the design learns from the labels; stop when the interval is narrow):
  labelwise campaign camp --activations cap/activations.npy --probs cap/probabilities.npy
  labelwise next camp --batch 20                 # label the new rows of camp/to_label.csv
  labelwise estimate camp --labels labels.csv --until-halfwidth 0.02
  labelwise label camp --until-halfwidth 0.02   # or label on a local page, estimate live
"""

SUBCOMMANDS = (
    select,
    campaign,
    next_batch,
    label,
    estimate,
    export,
    import_labels,
    report,
    rank,
    capture,
    dependability,
    quality,
    demo,
    study,
)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; a reader that closes the pipe early (``| head``) ends it quietly, and
    SIGTERM (``kill PID``, a job scheduler) ends it as Ctrl-C does: files written atomically,
    staging files removed (its default action killed the process with a capture's half-written
    arrays left in OUT/.capture-XXXX/)."""
    previous = _terminate_as_interrupt()
    try:
        return _main(argv)
    except BrokenPipeError:
        # Point stdout at /dev/null so the interpreter's final flush cannot fail again.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 1
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def _terminate_as_interrupt() -> Any:
    """Raise KeyboardInterrupt on SIGTERM while a command runs (only the main thread may set
    a handler; a caller's own handler is kept); the handler it replaced, or None."""
    if threading.current_thread() is not threading.main_thread():
        return None
    if signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL:
        return None
    return signal.signal(signal.SIGTERM, _interrupt)


def _main(argv: Sequence[str] | None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "command", None):
        parser.print_help()
        return 2
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            _release_ctrl_c()  # from here a Ctrl-C is the command's (started as python -m)
            check_seed(args)
            code = int(args.func(args) or 0)
        except (LabelwiseError, MissingDependencyError) as exc:
            print(f"labelwise: error: {exc}", file=sys.stderr)
            code = 2
        except BrokenPipeError:
            raise  # the reader left (| head): main ends quietly
        except KeyboardInterrupt:  # Ctrl-C: every file is written atomically, no traceback
            print("labelwise: interrupted; no file was left half-written", file=sys.stderr)
            code = 130
        except OSError as exc:  # a path the system refuses: too long, under a file, no right
            what = exc.strerror or type(exc).__name__
            where = f": {exc.filename}" if exc.filename else ""
            print(
                f"labelwise: error: {what}{where} (check the path, and that you may read or "
                "write there)",
                file=sys.stderr,
            )
            code = 2
        except MemoryError as exc:  # a size far beyond the pile's (--population-size 10**14)
            text = " ".join(str(exc).split())[:300] or "MemoryError"
            # a command may say what to do about it (set_defaults(memory_hint=...))
            hint = getattr(args, "memory_hint", None) or (
                "is a number given (a size, a count of rows or draws) far larger than meant?"
            )
            print(
                f"labelwise: error: not enough memory for this command ({text}); {hint}",
                file=sys.stderr,
            )
            code = 2
        except Exception as exc:
            if not _raised_reading_zarr(exc):
                raise
            text = " ".join(str(exc).split())[:300] or type(exc).__name__
            print(
                f"labelwise: error: cannot read a zarr store ({text}); a chunk file may be "
                "damaged: write the store again",
                file=sys.stderr,
            )
            code = 2
        finally:
            for message in dict.fromkeys(str(w.message) for w in caught):
                print(f"note: {message}", file=sys.stderr)
    return code


def _raised_reading_zarr(exc: BaseException) -> bool:
    """True when ``exc`` came out of zarr or its codecs: a store that opened but whose chunks
    cannot be read (the samplers read zarr arrays directly, block by block)."""
    for frame, _ in traceback.walk_tb(exc.__traceback__):
        module = str(frame.f_globals.get("__name__", ""))
        if module.split(".")[0] in ("zarr", "numcodecs"):
            return True
    return False


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="labelwise",
        description=(
            "Estimate a model's accuracy on a large unlabeled pile from a few labels: choose "
            "which inputs to label (SRS, CSS, CES), then estimate with a confidence interval."
        ),
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--version", action="version", version=f"labelwise {__version__}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")
    for module in SUBCOMMANDS:
        module.add_parser(sub)
    _refuse_empty_paths(p)
    return p


def _path(text: str) -> Path:
    """A path argument: ``Path(text)``, but an empty one is an error. ``Path("")`` is ``.``:
    ``--out "$OUT"`` with OUT unset wrote a selection into the current directory, and
    ``--inputs ""`` read it as an image folder."""
    if not text.strip():
        raise argparse.ArgumentTypeError(
            "an empty path (an unset shell variable?); give a file or directory name, or . "
            "for the current directory"
        )
    return Path(text)


def _refuse_empty_paths(parser: argparse.ArgumentParser) -> None:
    """Give every ``type=Path`` argument of ``parser`` and its subcommands :func:`_path`."""
    for action in parser._actions:
        if action.type is Path:
            action.type = _path
        if isinstance(action, argparse._SubParsersAction):
            for child in action.choices.values():
                _refuse_empty_paths(child)

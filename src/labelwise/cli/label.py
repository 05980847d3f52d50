"""``labelwise label``: label a campaign's or a selection's rows on a local web page."""

from __future__ import annotations

import argparse
import contextlib
import signal
import sys
import threading
import webbrowser
from pathlib import Path
from typing import Any

from ._common import DefaultsHelpFormatter
from ._label_server import check_address, make_server
from ._labelling import LabelSession

DEFAULT_PORT = 8765


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "label",
        help="label the rows of a campaign or selection on a local web page",
        description=(
            "Serve a page, on this machine only by default, that shows each row to label in "
            "the campaign's (or selection's) order: the image or table row when the pile is "
            "known from 'labelwise capture', the model's top classes, one button and key per "
            "class (a number field for regression), skip and undo. Every answer is saved at "
            "once into DIR/labels.csv and, for a campaign, recorded as 'labelwise estimate "
            "DIR --labels DIR/labels.csv' records it; the page shows the live estimate and "
            "its interval. Stop with Ctrl-C; run it again to resume where you stopped."
        ),
        epilog=(
            "Another tool can drive the same page over its JSON API (every POST with "
            "Content-Type: application/json): GET /api/state (the rows to label, the estimate); "
            'POST /api/answer {"row": r, "value": v} (the class number or, when the '
            'classes are named, its name; a number for regression), POST /api/skip {"row": r}, '
            "POST /api/undo, POST /api/propose "
            '{"n": n} (campaigns: the next rows); each returns the new state, or {"error": ...} '
            "with status 409 or 400 when refused."
        ),
        formatter_class=DefaultsHelpFormatter,
    )
    p.add_argument(
        "dir",
        type=Path,
        help="campaign directory ('labelwise campaign' + 'labelwise next') or selection "
        "directory ('labelwise select')",
    )
    p.add_argument("--host", default="127.0.0.1", help="address to listen on")
    p.add_argument(
        "--port", type=int, default=DEFAULT_PORT, help="port to listen on (0: a free one)"
    )
    p.add_argument(
        "--allow-remote",
        action="store_true",
        help="allow a --host other than this machine (anyone who reaches it can label)",
    )
    p.add_argument("--open", action="store_true", help="open the page in a web browser")
    p.add_argument(
        "--until-halfwidth",
        type=float,
        metavar="H",
        help="campaigns only: say 'stop now' once the anytime-valid interval has half-width <= H",
    )
    p.add_argument("--confidence", type=float, default=0.95, help="confidence level")
    p.add_argument(
        "--batch",
        type=int,
        default=None,
        help="campaigns: rows the page proposes when the proposed ones are all labelled "
        "[default: 20]",
    )
    p.add_argument(
        "--predictions",
        type=Path,
        help="regression campaigns: the model's outputs, .npy or zarr, if the campaign did not "
        "record them (as for 'labelwise estimate')",
    )
    p.set_defaults(func=cmd_label)


def _interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt


@contextlib.contextmanager
def _stopped_by_signals() -> Any:
    """Ctrl-C (SIGINT) and SIGTERM stop the server, whatever the caller's handlers were: a
    shell that starts a command in the background without job control starts it with SIGINT
    ignored, and then "Ctrl-C to stop" would not. The previous handlers are restored."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    old = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, _interrupt)
    try:
        yield
    finally:
        for sig, handler in old.items():
            signal.signal(sig, handler)


def cmd_label(args: argparse.Namespace) -> int:
    check_address(args.host, args.port, allow_remote=args.allow_remote)
    session = LabelSession(
        args.dir,
        confidence=args.confidence,
        until_halfwidth=args.until_halfwidth,
        predictions=args.predictions,
        batch=args.batch,
    )
    try:
        server = make_server(session, args.host, args.port, allow_remote=args.allow_remote)
        try:
            st = session.state()
            print(
                f"labelling the {session.kind} in {session.path}: {st['n_labelled']} of "
                f"{st['n_to_label']} rows labelled"
            )
            print(f"  open {server.url}  (Ctrl-C to stop; answers are saved as you go)")
            sys.stdout.flush()
            if args.open:
                webbrowser.open(server.url)
            with contextlib.suppress(KeyboardInterrupt), _stopped_by_signals():
                server.serve_forever()
        finally:
            server.server_close()
    finally:
        session.close()
    n = len(session.labels)
    print(f"stopped; {n} label{'' if n == 1 else 's'} in {session.path / 'labels.csv'}")
    return 0

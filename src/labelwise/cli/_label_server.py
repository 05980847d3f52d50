"""The labelling page's HTTP server: the standard library's ``ThreadingHTTPServer``.

Routes (JSON in and out; every POST must send ``Content-Type: application/json``, which a
form on another site cannot do without the browser asking first):

- ``GET /``: the page (one HTML file, inline CSS and JS, no network);
- ``GET /api/state``: :meth:`LabelSession.state`;
- ``GET /api/image/<row>``: the row's picture (:class:`._label_render.RowRenderer`);
- ``POST /api/answer`` ``{"row": r, "value": v}``, ``POST /api/skip`` ``{"row": r}``,
  ``POST /api/undo``, ``POST /api/propose`` ``{"n": n}``: the new state, or
  ``{"error": message, "state": ...}`` with status 409 when refused (a stale tab) or 400.
"""

from __future__ import annotations

import errno
import ipaddress
import json
import socket
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources
from typing import Any

from .._json import dumps
from ..exceptions import LabelwiseError
from ._label_render import RowRenderer
from ._labelling import BadAnswer, LabelSession, Refused

__all__ = ["LabelServer", "is_loopback", "make_server"]

_MAX_BODY = 1 << 16


def page_html() -> bytes:
    """The page, shipped beside this module."""
    return resources.files("labelwise.cli").joinpath("label_page.html").read_bytes()


def is_loopback(host: str) -> bool:
    """Whether ``host`` names this machine only (127.0.0.0/8, ::1, localhost)."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class LabelServer(ThreadingHTTPServer):
    """A threading HTTP server holding the session and the row renderer."""

    daemon_threads = True
    session: LabelSession
    renderer: RowRenderer

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        name = host.decode() if isinstance(host, bytes) else str(host)
        shown = f"[{name}]" if ":" in name else name
        return f"http://{shown}:{port}/"


def check_address(host: str, port: int, *, allow_remote: bool = False) -> None:
    """An error for a --port out of range or a --host other than this machine's without
    ``allow_remote`` (checked before the directory is opened)."""
    if not is_loopback(host) and not allow_remote:
        raise LabelwiseError(
            f"--host {host} is not this machine only (127.0.0.1, ::1, localhost): anyone who "
            "can reach it could label; add --allow-remote if that is what you want"
        )
    if not 0 <= port <= 65535:
        raise LabelwiseError(f"--port must be in [0, 65535], got {port}")


def make_server(
    session: LabelSession, host: str = "127.0.0.1", port: int = 8765, *, allow_remote: bool = False
) -> LabelServer:
    """A server for ``session`` bound to ``host:port`` (``port`` 0: a free one), not yet running.

    A host that is not loopback needs ``allow_remote``; a port in use is a
    :class:`LabelwiseError` that says so.
    """
    check_address(host, port, allow_remote=allow_remote)
    renderer = RowRenderer(session.ws, session.ids)  # a changed pile: an error before binding
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    cls = type("_Server", (LabelServer,), {"address_family": family})
    try:
        server: LabelServer = cls((host, port), _Handler)
    except OSError as exc:
        if exc.errno == errno.EADDRINUSE:
            raise LabelwiseError(
                f"--port {port} on {host} is in use (another 'labelwise label'?); pick another "
                "with --port, or --port 0 for a free one"
            ) from None
        raise LabelwiseError(f"cannot listen on {host}:{port} ({exc.strerror or exc})") from None
    server.session = session
    server.renderer = renderer
    return server


class _Handler(BaseHTTPRequestHandler):
    server: LabelServer
    server_version = "labelwise-label"

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: the terminal shows the URL and errors, not every request."""

    # ------------------------------------------------------------------ GET
    def do_GET(self) -> None:
        path = self.path.split("?", 1)[0]
        if path in ("/", "/index.html"):
            self._send(HTTPStatus.OK, page_html(), "text/html; charset=utf-8")
        elif path == "/api/state":
            self._json(HTTPStatus.OK, self._state())
        elif path.startswith("/api/image/"):
            try:
                row = int(path.rsplit("/", 1)[1])
                if not 0 <= row < self.server.session.population_size:
                    raise LabelwiseError(f"row {row} is not in the pile")
                body, kind = self.server.renderer.image(row)
            except (ValueError, LabelwiseError) as exc:
                self._json(HTTPStatus.NOT_FOUND, {"error": str(exc)})
                return
            self._send(HTTPStatus.OK, body, kind)
        elif path == "/favicon.ico":
            self._send(HTTPStatus.NO_CONTENT, b"", "image/x-icon")
        else:
            self._json(HTTPStatus.NOT_FOUND, {"error": f"no such page: {path}"})

    # ------------------------------------------------------------------ POST
    def do_POST(self) -> None:
        path = self.path.split("?", 1)[0]
        session = self.server.session
        try:
            body = self._body()
            if path == "/api/answer":
                if "value" not in body:
                    raise BadAnswer(
                        'an answer needs "row" and "value" (the label), e.g. '
                        '{"row": 12, "value": 3}; got the keys ' + repr(sorted(body))
                    )
                session.answer(_int(body, "row"), body.get("value"))
            elif path == "/api/skip":
                session.skip(_int(body, "row"))
            elif path == "/api/undo":
                session.undo()
            elif path == "/api/propose":
                n = body.get("n")
                session.propose(None if n is None else _int(body, "n"))
            else:
                self._json(HTTPStatus.NOT_FOUND, {"error": f"no such action: {path}"})
                return
        except BadAnswer as exc:
            self._json(HTTPStatus.BAD_REQUEST, {"error": str(exc), "state": self._state()})
            return
        except Refused as exc:
            self._json(HTTPStatus.CONFLICT, {"error": str(exc), "state": self._state()})
            return
        except LabelwiseError as exc:
            self._json(HTTPStatus.BAD_REQUEST, {"error": str(exc), "state": self._state()})
            return
        self._json(HTTPStatus.OK, self._state())

    # ------------------------------------------------------------------ helpers
    def _state(self) -> dict[str, Any]:
        session = self.server.session
        problem = None
        with session.lock:
            try:
                session.refresh()
            except LabelwiseError as exc:  # e.g. labels.csv changed under the page
                problem = str(exc)
            st = session.state()
        if problem is not None:
            st["error"] = problem
        if st["current"] is not None:
            st["current"]["view"] = self.server.renderer.view(st["current"]["row"])
        return st

    def _body(self) -> dict[str, Any]:
        kind = self.headers.get("Content-Type", "").split(";")[0].strip().lower()
        if kind != "application/json":
            raise LabelwiseError("send the action as JSON (Content-Type: application/json)")
        text = (self.headers.get("Content-Length") or "0").strip()
        if not text.isdigit():  # no sign, no spaces inside: '-1' would read to the end
            self.close_connection = True
            raise LabelwiseError(f"Content-Length must be a number of bytes, got {text[:40]!r}")
        length = int(text)
        if length > _MAX_BODY:
            self.close_connection = True
            raise LabelwiseError(f"request too large (at most {_MAX_BODY} bytes)")
        raw = self.rfile.read(length) if length else b"{}"
        try:
            doc = json.loads(raw.decode("utf-8") or "{}", parse_constant=_no_constant)
        except (UnicodeDecodeError, ValueError) as exc:  # JSONDecodeError is a ValueError
            raise LabelwiseError(f"the request is not valid JSON ({exc})") from None
        if not isinstance(doc, dict):
            raise LabelwiseError("the request must be a JSON object")
        return doc

    def _json(self, status: HTTPStatus, doc: Any) -> None:
        self._send(status, dumps(doc).encode("utf-8"), "application/json")

    def _send(self, status: HTTPStatus, body: bytes, kind: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.send_header("X-Content-Type-Options", "nosniff")
        self.end_headers()
        if body:
            self.wfile.write(body)


def _no_constant(name: str) -> Any:
    """``json.loads``' hook for NaN, Infinity and -Infinity: not JSON, refused."""
    raise ValueError(f"{name} is not a JSON number")


def _int(body: dict[str, Any], key: str) -> int:
    v = body.get(key)
    if isinstance(v, bool) or not isinstance(v, int):
        raise LabelwiseError(f"'{key}' must be an integer, got {v!r}")
    return v

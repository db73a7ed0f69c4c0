"""The viewer's HTTP server: pages, static assets and ``/api/...``, read-only, for this machine's browser.

GET and HEAD only (anything else is 405); a Host header that names a host other than this one is
refused, so a web page cannot reach the viewer through a DNS name rebound to 127.0.0.1; no CORS;
a content security policy that allows the viewer's own script and nothing else.
"""

from __future__ import annotations

import html
import ipaddress
import json
import logging
import math
import socket
import urllib.parse
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources
from typing import Any

from ..stores import StoreError
from .api import TURNS_PAGE, ViewerApi

__all__ = ["ViewerServer", "json_bytes"]

logger = logging.getLogger("openprogram")

_ASSETS = {
    "app.js": "text/javascript; charset=utf-8",
    "app.css": "text/css; charset=utf-8",
    "favicon.svg": "image/svg+xml",
}
_SECURITY_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
        "base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",
    "Cross-Origin-Opener-Policy": "same-origin",
    "Cross-Origin-Resource-Policy": "same-origin",
}
_READ_METHODS = ("GET", "HEAD")


def _asset(name: str) -> bytes:
    return (resources.files("openprogram._viewer") / "static" / name).read_bytes()


#: Levels of nesting sent of a capture; deeper ones are replaced by a note (no page can show them anyway).
MAX_DEPTH = 200
_TOO_DEEP = "(nested too deep to show)"
_MAX_DIGITS = 4000  # Python refuses to write an int of more than 4300 digits as text


def _jsonable(value: Any, depth: int = 0) -> Any:
    """``value`` as JSON can carry it: NaN, infinities and huge integers as strings (JSON.parse rejects the
    first two, Python will not write the last), keys as strings, nesting cut at :data:`MAX_DEPTH`."""
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > _MAX_DIGITS * 3:
        return f"(an integer of {value.bit_length()} bits)"
    if isinstance(value, (dict, list, tuple)) and depth >= MAX_DEPTH:
        return _TOO_DEEP
    if isinstance(value, dict):
        return {key if isinstance(key, str) else str(key): _jsonable(item, depth + 1) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(item, depth + 1) for item in value]
    return value


def json_bytes(payload: Any) -> bytes:
    try:
        text = json.dumps(payload, separators=(",", ":"), allow_nan=False)
    except (ValueError, TypeError, RecursionError):  # what a store may hand back; made JSON-safe the slow way
        text = json.dumps(_jsonable(payload), separators=(",", ":"), default=str)
    return text.encode("ascii")  # ensure_ascii: a lone surrogate in a capture cannot break the encoding


def _host_name(header: str) -> str:
    """The host part of a Host header (``[::1]:8765`` -> ``::1``), lower case."""
    header = header.strip().lower()
    if header.startswith("["):
        return header[1 : header.find("]")] if "]" in header else header
    return header.rsplit(":", 1)[0] if header.count(":") == 1 else header


def _is_ip(name: str) -> bool:
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


class ViewerServer(ThreadingHTTPServer):
    """Serves one store's sessions; ``url`` is what to open in a browser."""

    daemon_threads = True
    #: Seconds a connection may wait for (the rest of) a request before it is closed: a client that
    #: connects and sends nothing, or half a request, must not keep a thread forever.
    request_timeout = 30.0

    def __init__(self, api: ViewerApi, host: str, port: int) -> None:
        self.api = api
        self.bound_host = host
        if ":" in host:
            self.address_family = socket.AF_INET6
        self._names: set[str] | None = None
        super().__init__((host, port), _Handler)

    @property
    def url(self) -> str:
        address, port = self.server_address[0], self.server_address[1]
        host = address.decode() if isinstance(address, bytes) else address
        if host in ("0.0.0.0", "::"):  # every interface: this machine's browser reaches it on loopback
            host = "127.0.0.1"
        shown = f"[{host}]" if ":" in host else host
        return f"http://{shown}:{port}/"

    def host_allowed(self, header: str | None) -> bool:
        """True for an IP address or a name of this machine; a page on another site reaching the viewer
        through a DNS name it pointed at this address sends that name instead."""
        if not header:
            return True  # HTTP/1.0 clients send none; a browser always does
        name = _host_name(header)
        if _is_ip(name) or name == "localhost":
            return True
        if self._names is None:  # looked up on first need: getfqdn() may wait for DNS
            self._names = {self.bound_host.lower(), socket.gethostname().lower(), socket.getfqdn().lower()}
        return name in self._names


class _Handler(BaseHTTPRequestHandler):
    server: ViewerServer
    server_version = "openprogram-viewer"
    sys_version = ""
    protocol_version = "HTTP/1.1"

    def setup(self) -> None:
        super().setup()
        # Every read of the request (and write of the answer) waits this long at most, then the connection closes.
        self.connection.settimeout(self.server.request_timeout)

    def __getattr__(self, name: str) -> Any:
        # http.server answers a method it has no do_<METHOD> for with 501; the viewer refuses them all with 405.
        if name.startswith("do_"):
            return self._refuse_method
        raise AttributeError(name)

    def version_string(self) -> str:
        return self.server_version

    def log_message(self, format: str, *args: Any) -> None:
        logger.debug("openprogram ui: " + format, *args)

    def do_GET(self) -> None:
        self._answer(body=True)

    def do_HEAD(self) -> None:
        self._answer(body=False)

    def _refuse_method(self) -> None:
        self.close_connection = True  # a body we do not read must not be taken for the next request
        self._send(
            HTTPStatus.METHOD_NOT_ALLOWED,
            b"405 method not allowed: the viewer only reads\n",
            "text/plain; charset=utf-8",
            body=True,
            extra={"Allow": ", ".join(_READ_METHODS)},
        )

    # --- routing -------------------------------------------------------------------
    def _answer(self, body: bool) -> None:
        if not self.server.host_allowed(self.headers.get("Host")):
            self._send(HTTPStatus.FORBIDDEN, b"403 unexpected Host header\n", "text/plain; charset=utf-8", body)
            return
        parts = urllib.parse.urlsplit(self.path)
        path = urllib.parse.unquote(parts.path)
        query = urllib.parse.parse_qs(parts.query)
        try:
            self._route(path, query, body)
        except StoreError as exc:
            logger.warning("openprogram ui: %s", exc)
            if path.startswith("/api/"):
                self._send_json(HTTPStatus.SERVICE_UNAVAILABLE, {"error": str(exc)}, body)
            else:
                self._send_page(HTTPStatus.SERVICE_UNAVAILABLE, "The store cannot be read", str(exc), body)
        except (ConnectionError, TimeoutError):
            raise  # the client went away: nothing to answer
        except Exception:  # a bug of ours: answer it, and keep serving
            logger.exception("openprogram ui: cannot answer %s", path)
            message = "The viewer failed to answer this request; the log has the details."
            if path.startswith("/api/"):
                self._send_json(HTTPStatus.INTERNAL_SERVER_ERROR, {"error": message}, body)
            else:
                self._send_page(HTTPStatus.INTERNAL_SERVER_ERROR, "Something went wrong", message, body)

    def _route(self, path: str, query: dict[str, list[str]], body: bool) -> None:
        api = self.server.api
        segments = [s for s in path.split("/") if s]
        if path == "/":
            self._send(HTTPStatus.OK, _asset("index.html"), "text/html; charset=utf-8", body)
        elif len(segments) == 2 and segments[0] == "sessions":
            if api.session_exists(segments[1]):
                api.cache.warm(segments[1])  # the page's script will ask for the tree next
                self._send(HTTPStatus.OK, _asset("index.html"), "text/html; charset=utf-8", body)
            else:
                self._send_page(
                    HTTPStatus.NOT_FOUND,
                    "Session not found",
                    f"There is no session {segments[1]!r} in {api.store.url}.",
                    body,
                )
        elif len(segments) == 2 and segments[0] == "static" and segments[1] in _ASSETS:
            self._send(HTTPStatus.OK, _asset(segments[1]), _ASSETS[segments[1]], body, cache="no-cache")
        elif segments[:1] == ["api"]:
            payload = self._api(segments[1:], query)
            if payload is None:
                self._send_json(HTTPStatus.NOT_FOUND, {"error": f"not found: {path}"}, body)
            else:
                self._send_json(HTTPStatus.OK, payload, body)
        else:
            self._send_page(HTTPStatus.NOT_FOUND, "Not found", f"Nothing is served at {path}.", body)

    def _api(self, segments: list[str], query: dict[str, list[str]]) -> Any:
        api = self.server.api

        def number(name: str, default: int) -> int:
            try:
                return int(query.get(name, [str(default)])[0])
            except ValueError:
                return default

        def text(name: str) -> str | None:
            values = query.get(name)
            return values[0] if values else None

        if segments == ["sessions"]:
            return api.sessions(number("limit", 500))
        if segments == ["summaries"]:
            return api.summaries(query.get("id", []))
        if len(segments) < 2 or segments[0] != "sessions":
            return None
        session_id, rest = segments[1], segments[2:]
        call_id = text("id")
        if not rest:
            return api.session(session_id)
        if rest == ["state"]:
            return api.state(session_id)
        if rest == ["children"]:
            return api.children(
                session_id, text("parent") or None, number("offset", 0), number("limit", 200), number("depth", 1)
            )
        if rest == ["conversation"]:
            return api.conversation(session_id, number("offset", -1), number("limit", TURNS_PAGE))
        if rest == ["search"]:
            return api.search(session_id, text("q") or "")
        if rest == ["call"] and call_id is not None:
            return api.call(session_id, call_id)
        if rest == ["path"] and call_id is not None:
            return api.path(session_id, call_id)
        return None

    # --- answers -------------------------------------------------------------------
    def _send_json(self, status: HTTPStatus, payload: Any, body: bool) -> None:
        self._send(status, json_bytes(payload), "application/json", body)

    def _send_page(self, status: HTTPStatus, title: str, message: str, body: bool) -> None:
        page = (
            '<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
            '<meta name="viewport" content="width=device-width, initial-scale=1">'
            f"<title>{html.escape(title)} · openprogram</title>"
            '<link rel="icon" href="/static/favicon.svg"><link rel="stylesheet" href="/static/app.css"></head>'
            '<body><header class="topbar"><a class="brand" href="/">openprogram</a></header>'
            f'<main class="message"><p class="code">{status.value}</p><h1>{html.escape(title)}</h1>'
            f'<p>{html.escape(message)}</p><p><a href="/">All sessions</a></p></main></body></html>\n'
        )
        self._send(status, page.encode("utf-8", "backslashreplace"), "text/html; charset=utf-8", body)

    def _send(
        self,
        status: HTTPStatus,
        content: bytes,
        content_type: str,
        body: bool,
        *,
        cache: str = "no-store",
        extra: dict[str, str] | None = None,
    ) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(content)))
        self.send_header("Cache-Control", cache)
        for name, value in {**_SECURITY_HEADERS, **(extra or {})}.items():
            self.send_header(name, value)
        self.end_headers()
        if body:
            self.wfile.write(content)

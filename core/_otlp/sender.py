"""Sending spans with the official OTLP/HTTP exporter (``openprogram[otlp]``, imported only to send).

The endpoint, headers and timeout come from the standard ``OTEL_EXPORTER_OTLP_*``
variables unless an endpoint is given; a batch the backend does not take comes back
as one sentence saying why, naming the endpoint (without its user, password or query
string: tokens travel there) and never a header value.
"""

from __future__ import annotations

import importlib.util
import logging
import os
import re
import socket
import threading
import urllib.parse
import urllib.request
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from .._runtime import DidNotEnable, install_hint

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import ReadableSpan

__all__ = [
    "DEFAULT_ENDPOINT",
    "INSTALL_HINT",
    "MAX_BATCH",
    "Sender",
    "describe_failure",
    "require_otlp",
    "safe_endpoint",
    "traces_endpoint",
    "unreachable",
]

INSTALL_HINT = install_hint("otlp")
DEFAULT_ENDPOINT = "http://localhost:4318/v1/traces"
MAX_BATCH = 512
"""Spans per request (the SDK's batch processor sends as many)."""

# Where the exporter logs why a request failed, across its versions: kept out of the log while a Sender sends
# (the CLI says it once, the live exporter warns once per outage) and read for the reason.
_EXPORTER_LOGGERS = (
    "opentelemetry.exporter.otlp.proto.http.trace_exporter",
    "opentelemetry.exporter.otlp.proto.http._common",
    "opentelemetry.exporter.otlp.common.http",
    "opentelemetry.exporter.otlp.proto.common._internal",  # a value it cannot encode, with a traceback
)


def require_otlp(what: str) -> None:
    """Raise :class:`openprogram.DidNotEnable` naming ``openprogram[otlp]`` when the exporter is not installed."""
    for module in ("opentelemetry.sdk.trace", "opentelemetry.exporter.otlp.proto.http.trace_exporter"):
        try:
            found = importlib.util.find_spec(module) is not None
        except ImportError:  # a parent package is missing
            found = False
        if not found:
            raise DidNotEnable(f"{what} needs the OpenTelemetry OTLP/HTTP exporter: {INSTALL_HINT}")


def safe_endpoint(endpoint: str) -> str:
    """``endpoint`` as it may be printed: no user, password, query string or fragment (``?api_key=...``)."""
    try:
        parts = urllib.parse.urlsplit(endpoint)
    except ValueError:  # e.g. an unclosed IPv6 bracket: nothing of it is printed
        return "the OTLP endpoint"
    return urllib.parse.urlunsplit((parts.scheme, parts.netloc.rpartition("@")[2], parts.path, "", ""))


def _scrubbed(text: str, endpoint: str) -> str:
    """What the exporter said, without the endpoint's secrets (its query string and its values, its user info)."""
    try:
        parts = urllib.parse.urlsplit(endpoint)
    except ValueError:
        return text.replace(endpoint, safe_endpoint(endpoint))
    userinfo = parts.netloc.rpartition("@")[0]
    found = {parts.query, urllib.parse.unquote_plus(parts.query), parts.fragment, userinfo, *userinfo.split(":")}
    found.update(value for _, value in urllib.parse.parse_qsl(parts.query))
    for secret in sorted(filter(None, found), key=len, reverse=True):  # the longest first: a value is in the query
        text = text.replace(secret, "***")
    return text


def traces_endpoint(endpoint: str | None = None) -> str:
    """Where spans go: ``endpoint`` (``/v1/traces`` added to a bare ``http://host:port``), else
    ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``, else ``OTEL_EXPORTER_OTLP_ENDPOINT`` + ``/v1/traces``,
    else ``http://localhost:4318/v1/traces``. A query string stays at the end."""
    if endpoint:
        return _with_traces_path(endpoint, only_if_bare=True)
    traces = os.environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "").strip()
    if traces:
        return traces
    base = os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT", "").strip()
    return _with_traces_path(base, only_if_bare=False) if base else DEFAULT_ENDPOINT


def _with_traces_path(url: str, *, only_if_bare: bool) -> str:
    """``url`` with ``/v1/traces`` added to its path (only to a path that is empty or ``/`` if ``only_if_bare``)."""
    try:
        parts = urllib.parse.urlsplit(url)
    except ValueError:
        return url  # the exporter says what is wrong with it
    path = parts.path.rstrip("/")
    if only_if_bare and path:
        return url
    return urllib.parse.urlunsplit(parts._replace(path=path + "/v1/traces"))


class _ExporterLog(logging.Filter):
    """Keeps, and keeps out of the log, what the exporter says on a thread sending through a :class:`Sender`."""

    def __init__(self) -> None:
        super().__init__()
        self._local = threading.local()

    def filter(self, record: logging.LogRecord) -> bool:
        caught: list[str] | None = getattr(self._local, "caught", None)
        if caught is None:
            return True
        caught.append(record.getMessage())
        return False

    def begin(self) -> None:
        self._local.caught = []

    def end(self) -> list[str]:
        caught: list[str] = self._local.caught or []
        self._local.caught = None
        return caught


_exporter_log = _ExporterLog()
_watching = threading.Lock()
_watched = False


def _watch_exporter_logs() -> None:
    global _watched
    with _watching:
        if not _watched:
            for name in _EXPORTER_LOGGERS:
                logging.getLogger(name).addFilter(_exporter_log)
            _watched = True


_ERRNO = re.compile(r"\[Errno -?\d+\][^'\")\]]*")


def describe_failure(endpoint: str, answer: tuple[int, str] | None, said: Sequence[str]) -> str:
    """One sentence on why ``endpoint`` did not take a batch: its last HTTP ``answer`` (status, reason), else
    what the exporter logged (``said``), else why it cannot be connected to."""
    where = safe_endpoint(endpoint)
    said = [_scrubbed(text, endpoint) for text in said]
    if answer is not None and answer[0] >= 300:
        reason = " ".join(_scrubbed(answer[1], endpoint).split())[:200]
        return f"the backend at {where} refused the spans (HTTP {answer[0]}{': ' + reason if reason else ''})"
    text = " ".join(said)
    unreachable = _ERRNO.search(text)
    if unreachable is not None:
        return f"cannot reach {where} ({unreachable.group().strip()})"
    if answer is None and "timed out" not in text:
        why = _connect(endpoint)
        if why:
            return f"cannot reach {where} ({why})"
    if answer is None and ("timed out" in text or "timeout" in text or not text):
        return f"the backend at {where} did not answer in time (OTEL_EXPORTER_OTLP_TIMEOUT sets how long to wait)"
    return f"could not export to {where} ({' '.join(text.split())[:300] or 'no reason given'})"


def _connect(endpoint: str) -> str:
    """Why a TCP connection to the endpoint's host fails (``[Errno 111] Connection refused``), or ``""``.

    The exporter's last words on a connection error may be only that it gave up; this says why.
    """
    parts = urllib.parse.urlsplit(endpoint)
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
        socket.create_connection((parts.hostname or "localhost", port), timeout=2.0).close()
    except (OSError, ValueError) as exc:
        return str(exc) or type(exc).__name__
    return ""


def _refused(endpoint: str) -> str | None:
    """Why no connection to the endpoint's host can be made at all (refused, no such host), or None: reachable,
    slow (the exporter's timeout then decides), or reached through a proxy (the proxy answers for it)."""
    try:
        parts = urllib.parse.urlsplit(endpoint)
        host, port = parts.hostname or "localhost", parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        return None  # the exporter says what is wrong with it
    if urllib.request.getproxies().get(parts.scheme) and not urllib.request.proxy_bypass(host):
        return None
    try:
        socket.create_connection((host, port), timeout=2.0).close()
    except (ConnectionRefusedError, socket.gaierror) as exc:
        return str(exc) or type(exc).__name__
    except OSError:  # a timeout, a network down: what the exporter's retries are for
        return None
    return None


def unreachable(endpoint: str) -> str | None:
    """Why ``endpoint`` refuses connections now (a sentence, as :func:`describe_failure` says it), or None.

    The exporter retries a refused connection for its whole timeout: a command checks first, and fails at once.
    """
    why = _refused(endpoint)
    return None if why is None else f"cannot reach {safe_endpoint(endpoint)} ({why})"


class Sender:
    """The official OTLP/HTTP span exporter for one endpoint; :meth:`send` says why a batch was not taken."""

    def __init__(self, endpoint: str | None = None) -> None:
        require_otlp("OTLP export")
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        self.endpoint = traces_endpoint(endpoint)
        self._answer: tuple[int, str] | None = None
        _watch_exporter_logs()
        # Headers and timeout: the exporter reads OTEL_EXPORTER_OTLP_(TRACES_)HEADERS / _TIMEOUT itself.
        self._exporter = OTLPSpanExporter(endpoint=self.endpoint, session=self._session())

    def _session(self) -> Any:
        """A requests session noting each HTTP answer (the exporter logs a refusal's status only sometimes);
        None (the exporter's own) when a credential provider is configured for it."""
        if os.environ.get("OTEL_PYTHON_EXPORTER_OTLP_HTTP_TRACES_CREDENTIAL_PROVIDER"):
            return None
        import requests

        def note(response: Any, *args: Any, **kwargs: Any) -> None:
            self._answer = (response.status_code, str(response.reason or ""))

        session = requests.Session()
        session.hooks["response"].append(note)
        return session

    def unreachable(self) -> str | None:
        """See :func:`unreachable`."""
        return unreachable(self.endpoint)

    def send(self, spans: Sequence[ReadableSpan]) -> str | None:
        """Export one batch; None when the backend took it, else why not (see :func:`describe_failure`)."""
        from opentelemetry.sdk.trace.export import SpanExportResult

        self._answer = None
        _exporter_log.begin()
        try:
            result = self._exporter.export(spans)
        except Exception as exc:  # the exporter's own bug: reported like a refusal, never raised
            said = [*_exporter_log.end(), f"{type(exc).__name__}: {exc}"]
            return describe_failure(self.endpoint, self._answer, said)
        said = _exporter_log.end()
        if result is SpanExportResult.SUCCESS:
            return None
        return describe_failure(self.endpoint, self._answer, said)

    def close(self) -> None:
        """Release the exporter's connections."""
        self._exporter.shutdown()  # type: ignore[no-untyped-call, unused-ignore]

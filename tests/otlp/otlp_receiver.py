"""A real OTLP/HTTP traces endpoint on 127.0.0.1: each request is decoded with ``opentelemetry-proto``.

``Receiver(status=401)`` refuses every request; ``delay=`` makes it slow. As a script
(``python otlp_receiver.py``) it serves until stdin closes, printing its URL first and the
number of spans received last (for the live-export benchmark).
"""

from __future__ import annotations

import dataclasses
import gzip
import sys
import threading
import time
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue


@dataclasses.dataclass(frozen=True)
class ReceivedSpan:
    """One span as the backend received it (ids as hex, attributes decoded)."""

    trace_id: str
    span_id: str
    parent_span_id: str
    name: str
    kind: int
    start_time: int
    end_time: int
    attributes: dict[str, Any]
    status_code: int  # 0 unset, 1 ok, 2 error
    status_message: str
    events: list[tuple[str, dict[str, Any]]]
    resource: dict[str, Any]
    scope: str


def decode_value(value: AnyValue) -> Any:
    """A protobuf ``AnyValue`` as the Python value it carries."""
    which = value.WhichOneof("value")
    if which is None:
        return None
    if which == "array_value":
        return [decode_value(v) for v in value.array_value.values]
    if which == "kvlist_value":
        return decode_attributes(value.kvlist_value.values)
    return getattr(value, which)


def decode_attributes(pairs: Any) -> dict[str, Any]:
    """Protobuf ``KeyValue`` pairs as a dict."""
    found: dict[str, Any] = {}
    pair: KeyValue
    for pair in pairs:
        found[pair.key] = decode_value(pair.value)
    return found


def decode_request(body: bytes) -> list[ReceivedSpan]:
    """The spans of one ``ExportTraceServiceRequest``."""
    request = ExportTraceServiceRequest()
    request.ParseFromString(body)
    spans = []
    for resource_spans in request.resource_spans:
        resource = decode_attributes(resource_spans.resource.attributes)
        for scope_spans in resource_spans.scope_spans:
            for span in scope_spans.spans:
                spans.append(
                    ReceivedSpan(
                        trace_id=span.trace_id.hex(),
                        span_id=span.span_id.hex(),
                        parent_span_id=span.parent_span_id.hex(),
                        name=span.name,
                        kind=span.kind,
                        start_time=span.start_time_unix_nano,
                        end_time=span.end_time_unix_nano,
                        attributes=decode_attributes(span.attributes),
                        status_code=span.status.code,
                        status_message=span.status.message,
                        events=[(event.name, decode_attributes(event.attributes)) for event in span.events],
                        resource=resource,
                        scope=scope_spans.scope.name,
                    )
                )
    return spans


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        if not isinstance(sys.exc_info()[1], ConnectionError):  # a client that gave up waiting is no error here
            super().handle_error(request, client_address)


class Receiver:
    """Serves ``POST /v1/traces`` on an ephemeral loopback port and keeps what arrives."""

    def __init__(self, status: int = 200, delay: float = 0.0) -> None:
        self.status = status
        self.delay = delay
        self.spans: list[ReceivedSpan] = []
        self.requests: list[dict[str, str]] = []  # the headers of each request
        self._changed = threading.Condition()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                encoding = (self.headers.get("Content-Encoding") or "").lower()
                if encoding == "gzip":
                    body = gzip.decompress(body)
                elif encoding == "deflate":
                    body = zlib.decompress(body)
                if receiver.delay:
                    time.sleep(receiver.delay)
                if self.path.partition("?")[0] != "/v1/traces":  # a query string (a token) is the backend's to read
                    self._answer(404, b"not found", "text/plain")
                elif receiver.status != 200:
                    receiver._note(dict(self.headers), [])
                    self._answer(receiver.status, b"refused by the test receiver", "text/plain")
                else:
                    receiver._note(dict(self.headers), decode_request(body))
                    self._answer(200, ExportTraceServiceResponse().SerializeToString(), "application/x-protobuf")

            def _answer(self, status: int, body: bytes, content_type: str) -> None:
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._server = _Server(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(
            target=self._server.serve_forever, args=(0.05,), name="otlp-receiver", daemon=True
        )

    @property
    def url(self) -> str:
        """The base URL (``http://127.0.0.1:PORT``)."""
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    @property
    def traces_url(self) -> str:
        """The traces endpoint (``.../v1/traces``)."""
        return self.url + "/v1/traces"

    def start(self) -> Receiver:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def _note(self, headers: dict[str, str], spans: list[ReceivedSpan]) -> None:
        with self._changed:
            self.requests.append(headers)
            self.spans.extend(spans)
            self._changed.notify_all()

    def wait_for(self, count: int, timeout: float = 20.0) -> list[ReceivedSpan]:
        """The spans received, once there are at least ``count`` (or the timeout passed)."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while len(self.spans) < count and time.monotonic() < deadline:
                self._changed.wait(deadline - time.monotonic())
            return list(self.spans)

    def clear(self) -> None:
        with self._changed:
            self.spans.clear()
            self.requests.clear()


def _serve_until_stdin_closes() -> None:
    receiver = Receiver().start()
    print(receiver.url, flush=True)
    sys.stdin.read()
    print(len(receiver.spans), flush=True)
    receiver.stop()


if __name__ == "__main__":
    _serve_until_stdin_closes()

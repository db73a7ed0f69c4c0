"""The OpenTelemetry ids of recorded calls, derived from the records themselves.

A trace id comes from the session and turn ids, a span id from the call id, so a call exported twice is the
same span, and a W3C ``traceparent`` sent to another process (an MCP server) names the span OTLP export gives
the call that sent it. Hashing only: this module needs no OpenTelemetry.
"""

from __future__ import annotations

import functools
import hashlib

__all__ = ["span_id_of", "trace_id_of", "traceparent_of"]


@functools.lru_cache(maxsize=1024)  # every call of a turn asks for it
def trace_id_of(session_id: str, turn_id: str) -> int:
    """The trace id of a turn: the same for every export of it."""
    return _digest(f"{session_id}\x00{turn_id}", 16)


@functools.lru_cache(maxsize=4096)  # a parent is asked for by each of its children
def span_id_of(call_id: str) -> int:
    """The span id of a call: the same for every export of it."""
    return _digest(call_id, 8)


def traceparent_of(session_id: str, turn_id: str, call_id: str) -> str:
    """The W3C ``traceparent`` header naming a call's span (version 00, sampled)."""
    return f"00-{trace_id_of(session_id, turn_id):032x}-{span_id_of(call_id):016x}-01"


def _digest(text: str, size: int) -> int:
    value = int.from_bytes(hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()[:size], "big")
    return value or 1  # zero is the invalid id

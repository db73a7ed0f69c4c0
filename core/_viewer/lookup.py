"""One call's captures (inputs, output, error, attributes), read from a store when the viewer opens its details."""

from __future__ import annotations

import logging
from typing import Any

from ..stores import CallRecord, Store

__all__ = ["UNREADABLE", "Captures", "find_call", "find_captures"]

logger = logging.getLogger("openprogram")

#: (inputs, output, error, attributes): decoded JSON, the error as text.
Captures = tuple[Any, Any, "str | None", Any]

#: What decoding a record the viewer's writer did not write may raise (JSON nested too deep, numbers too long,
#: a prompt reference of the wrong shape...): the viewer answers without that record's captures.
UNREADABLE = (ValueError, TypeError, LookupError, ArithmeticError, AttributeError, RecursionError)
_told: set[str] = set()


def find_call(store: Store, session_id: str, call_id: str, started_at: float) -> CallRecord | None:
    """One call with its captures, or None if the store does not hold it or it cannot be decoded."""
    try:
        return store.get_call(session_id, call_id, started_at)
    except UNREADABLE as exc:
        if session_id not in _told:  # said once per session, not once per request
            _told.add(session_id)
            logger.warning(
                "openprogram ui: a call of session %s cannot be read (%s): shown without its captures",
                session_id,
                type(exc).__name__,
            )
        return None


def find_captures(store: Store, session_id: str, call_id: str, started_at: float) -> Captures | None:
    """The captures of one call, or None if the store does not hold it (a key lookup in the SQL stores)."""
    call = find_call(store, session_id, call_id, started_at)
    return None if call is None else (call.inputs, call.output, call.error, call.attributes)

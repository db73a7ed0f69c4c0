"""One call's captures (inputs, output, error, attributes), read from a store when the viewer opens its details."""

from __future__ import annotations

from typing import Any

from ..stores import Store

__all__ = ["Captures", "find_captures"]

#: (inputs, output, error, attributes): decoded JSON, the error as text.
Captures = tuple[Any, Any, "str | None", Any]


def find_captures(store: Store, session_id: str, call_id: str, started_at: float) -> Captures | None:
    """The captures of one call, or None if the store does not hold it (a key lookup in the SQL stores)."""
    call = store.get_call(session_id, call_id, started_at)
    return None if call is None else (call.inputs, call.output, call.error, call.attributes)

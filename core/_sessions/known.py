"""The sessions this process has recorded, per store.

Entering a session queues its row for the writer; a session this process recorded
already needs no store lookup when it is entered again.
"""

from __future__ import annotations

import threading

from .._recording import enqueue
from ..stores import Store

__all__ = ["is_known", "learn", "note_session"]

_known: set[tuple[int, str]] = set()  # (id(store), session_id)
_lock = threading.Lock()


def note_session(store: Store, session_id: str, agent_id: str, at: float) -> None:
    """Queue the session's row (created or last updated ``at``) and remember it as recorded."""
    _known.add((id(store), session_id))
    enqueue([session_id, agent_id, at, at, store])


def is_known(store: Store, session_id: str) -> bool:
    """Whether this process recorded the session in ``store``."""
    return (id(store), session_id) in _known


def learn(store: Store, session_id: str) -> bool:
    """Remember the session as recorded; True for the one caller (of any thread) that made it known."""
    key = (id(store), session_id)
    with _lock:
        if key in _known:
            return False
        _known.add(key)
    return True

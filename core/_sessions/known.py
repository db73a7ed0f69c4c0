"""The sessions this process has recorded, per store.

Entering a session queues its row for the writer; a session this process recorded
already needs no store lookup when it is entered again. While the one entry that
found a new id absent asks the store to claim it, other entries of that id wait for
the answer (:func:`wait_for_claim`): the session's row they would queue could
otherwise reach the store first and make the claim fail.
"""

from __future__ import annotations

import threading

from .._recording import enqueue
from ..stores import Store

__all__ = ["claim_answered", "is_known", "learn", "note_session", "settled", "wait_for_claim"]

_known: set[tuple[int, str]] = set()  # (id(store), session_id)
_claims: dict[tuple[int, str], threading.Event] = {}  # claims asked of the store, not yet answered
_lock = threading.Lock()


def note_session(store: Store, session_id: str, agent_id: str, at: float) -> None:
    """Queue the session's row (created or last updated ``at``) and remember it as recorded."""
    _known.add((id(store), session_id))
    enqueue([session_id, agent_id, at, at, store])


def is_known(store: Store, session_id: str) -> bool:
    """Whether this process recorded the session in ``store``."""
    return (id(store), session_id) in _known


def settled(store: Store, session_id: str) -> bool:
    """Whether this process recorded the session in ``store`` and no claim of it awaits the store's answer."""
    key = (id(store), session_id)
    return key in _known and key not in _claims


def learn(store: Store, session_id: str) -> bool:
    """Remember the session as recorded; True for the one caller (of any thread) that made it known, who
    then claims it in the store and calls :func:`claim_answered`."""
    key = (id(store), session_id)
    with _lock:
        if key in _known:
            return False
        _known.add(key)
        _claims[key] = threading.Event()
    return True


def claim_answered(store: Store, session_id: str) -> None:
    """The claim of a session :func:`learn` made known has its answer (or was given up)."""
    event = _claims.pop((id(store), session_id), None)
    if event is not None:
        event.set()


def wait_for_claim(store: Store, session_id: str, timeout: float) -> None:
    """Wait, at most ``timeout`` seconds, for the answer to a claim of the session in flight (if any)."""
    event = _claims.get((id(store), session_id))
    if event is not None:
        event.wait(timeout)

"""Joining a session another process named: its session, turn and the call to record under.

A process that serves a request for another one (an MCP server running a client's tool call) records what it
does into the session the request names, in its own default store: under the requester's call, in the
requester's turn. With a store both share, the session is one tree across the two processes.
"""

from __future__ import annotations

import time

from .._recording import SessionHandle, ensure_started
from .._runtime import validate_session_id
from ..stores import open_store
from .known import is_known, note_session

__all__ = ["join_session"]


def join_session(session_id: str, turn_id: str, parent_call_id: str, agent_id: str = "main") -> SessionHandle:
    """A handle that records into ``session_id``'s turn ``turn_id``, under the call ``parent_call_id``.

    Every id is validated (:class:`openprogram.InvalidSessionId` names the one that is not an id); the store is
    this process's default one, never one the other process names. Install the handle with
    :class:`openprogram.run_with_session`. Opens the store: call it off the event loop.
    """
    validate_session_id(session_id)
    validate_session_id(turn_id, what="turn id")
    validate_session_id(parent_call_id, what="parent call id")
    validate_session_id(agent_id, what="agent id")
    store = open_store()
    ensure_started()  # else nothing is written before exit
    if not is_known(store, session_id):
        note_session(store, session_id, agent_id, time.time())
    return SessionHandle(session_id, turn_id, None, False, agent_id, store, parent_call_id)

"""openprogram: one session context for agent frameworks.

An agent runs inside a session — a durable, resumable record of every call it
made, kept as a call DAG. ``session_context`` installs the session;
``@tool`` and the framework adapters (``instrument()``) record into it.
"""

from __future__ import annotations

from ._capture import Limits, set_limits
from ._configure import configure
from ._context import NoSessionError, SessionHandle, current_call_id, get_current_session, require_current_session
from ._ids import InvalidSessionId
from ._instrument import DidNotEnable, instrument, instrumented, uninstrument
from ._no_session import implicit_session
from ._propagation import ContextThreadPoolExecutor, propagate
from ._scopes import call_scope
from ._session import export_context, run_with_session, session_context
from ._tool import tool
from ._undo import Effect, UndoError, UndoPlan, file_effect, register_undo, undo
from ._writer import flush, flush_async
from .stores import CallRecord, SessionInfo, Store, StoreError, open_store

__version__ = "0.1.0"

__all__ = [
    "CallRecord",
    "ContextThreadPoolExecutor",
    "DidNotEnable",
    "Effect",
    "InvalidSessionId",
    "Limits",
    "NoSessionError",
    "SessionHandle",
    "SessionInfo",
    "Store",
    "StoreError",
    "UndoError",
    "UndoPlan",
    "__version__",
    "call_scope",
    "configure",
    "current_call_id",
    "export_context",
    "file_effect",
    "flush",
    "flush_async",
    "get_current_session",
    "implicit_session",
    "instrument",
    "instrumented",
    "open_store",
    "propagate",
    "register_undo",
    "require_current_session",
    "run_with_session",
    "session_context",
    "set_limits",
    "tool",
    "undo",
    "uninstrument",
]

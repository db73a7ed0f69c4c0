"""openprogram: one session context for agent frameworks.

An agent runs inside a session — a durable, resumable record of every call it
made, kept as a call DAG. ``session_context`` installs the session;
``@tool`` and the framework adapters (``instrument()``) record into it.
"""

from __future__ import annotations

from ._calls import call_scope, tool
from ._capture import Limits, set_limits
from ._configure import configure
from ._history import history
from ._instrumentation import instrument, instrumented, uninstrument
from ._recording import (
    SessionHandle,
    current_call_id,
    flush,
    flush_async,
    get_current_session,
    require_current_session,
)
from ._runtime import (
    VERSION,
    ContextThreadPoolExecutor,
    DidNotEnable,
    InvalidSessionId,
    NoSessionError,
    UndoError,
    propagate,
)
from ._sessions import export_context, implicit_session, run_with_session, session_context
from ._undo import Effect, UndoPlan, file_effect, register_undo, undo
from .stores import CallRecord, SessionInfo, Store, StoreError, open_store

__version__ = VERSION

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
    "history",
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

"""The record path: which session and call are current, a call's record, and its way into a store.

- ``context``: the context variables (the current session and call) and the session handle;
- ``record``: the call record, one tuple per call: its layout, where it waits, how it begins and ends;
- ``stack``: the traceback a failed call keeps, bounded and redacted;
- ``writer``: the background writer that encodes records off the hot path and writes them to stores;
- ``spill``: records written aside while a store is unavailable, and loading them back;
- ``outage``: the stores this process cannot use now, and store calls made for the agent's thread with a bounded wait.
"""

from __future__ import annotations

from . import record, writer  # the modules too, for the writer's state and white-box tests of the layout
from .context import (
    SessionHandle,
    call_var,
    current_call_id,
    get_current_session,
    require_current_session,
    reset_var,
    session_var,
)
from .outage import CALLER_WAIT, StoreUnavailable, call_briefly, call_later, in_outage
from .record import (
    ATTRIBUTES,
    CALL_ID,
    KIND,
    KWARGS,
    NAME,
    NAMES,
    SESSION,
    begin_call,
    describe_error,
    end_call,
    failed_record,
    inflight,
    queue,
    register_control_flow,
    status_of,
)
from .spill import SpillImport, append_spill, load_spill
from .stack import MAX_FRAMES, MAX_TRACEBACK, PendingTraceback, describe_traceback
from .writer import (
    discard_store,
    enqueue,
    enqueue_messages,
    ensure_started,
    flush,
    flush_async,
    flush_before_exit,
    flush_before_exit_async,
    flush_store,
    on_calls_written,
    on_exit,
    spill_directory,
)

__all__ = [
    "MAX_FRAMES",
    "MAX_TRACEBACK",
    "PendingTraceback",
    "describe_traceback",
    "ATTRIBUTES",
    "CALLER_WAIT",
    "CALL_ID",
    "KIND",
    "KWARGS",
    "NAME",
    "NAMES",
    "SESSION",
    "SessionHandle",
    "SpillImport",
    "StoreUnavailable",
    "append_spill",
    "begin_call",
    "call_briefly",
    "call_later",
    "call_var",
    "current_call_id",
    "describe_error",
    "discard_store",
    "end_call",
    "failed_record",
    "enqueue",
    "enqueue_messages",
    "ensure_started",
    "flush",
    "flush_async",
    "flush_before_exit",
    "flush_before_exit_async",
    "flush_store",
    "get_current_session",
    "in_outage",
    "inflight",
    "load_spill",
    "on_calls_written",
    "on_exit",
    "queue",
    "record",
    "register_control_flow",
    "require_current_session",
    "reset_var",
    "session_var",
    "spill_directory",
    "status_of",
    "writer",
]

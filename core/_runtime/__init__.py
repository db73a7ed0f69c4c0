"""The runtime base: what every other part of openprogram stands on, knowing nothing of sessions or stores.

- ``errors``: the public exceptions, in one place;
- ``ids``: call ids (a counter, spelled out late) and validated session ids;
- ``guard``: the one guard around instrumentation code (log once, never raise);
- ``propagation``: carrying the context into threads, executors and generators;
- ``steps``: the step driver that runs a generator's steps in a context or under a call;
- ``threads``: openprogram's own threads, for blocking work a coroutine awaits;
- ``attributes``: ``getattr`` without a pydantic model's exception;
- ``trace_ids``: the OpenTelemetry ids of recorded calls (for export and for a ``traceparent``);
- ``version``: the installed version.
"""

from __future__ import annotations

from . import ids  # the module itself: the hot path reads its counter and prefix, which a fork rebinds
from .attributes import attribute
from .errors import DidNotEnable, InvalidSessionId, NoSessionError, StoreError, UndoError, install_hint
from .guard import forget_logged, guarded, log_once
from .ids import (
    MAX_ID_LENGTH,
    as_text,
    derive_session_id,
    new_call_id,
    new_session_id,
    process_owner,
    validate_session_id,
)
from .propagation import ContextThreadPoolExecutor, close_inner, propagate
from .steps import (
    async_frameless_steps_in_current_context,
    async_steps_in_context,
    async_steps_in_current_context,
    async_steps_under_call,
    frameless_steps_in_current_context,
    steps_in_context,
    steps_in_current_context,
    steps_under_call,
)
from .threads import run_blocking
from .trace_ids import span_id_of, trace_id_of, traceparent_of
from .version import VERSION

__all__ = [
    "MAX_ID_LENGTH",
    "VERSION",
    "ContextThreadPoolExecutor",
    "DidNotEnable",
    "InvalidSessionId",
    "NoSessionError",
    "StoreError",
    "UndoError",
    "as_text",
    "async_frameless_steps_in_current_context",
    "async_steps_in_context",
    "async_steps_in_current_context",
    "async_steps_under_call",
    "attribute",
    "close_inner",
    "derive_session_id",
    "forget_logged",
    "frameless_steps_in_current_context",
    "install_hint",
    "guarded",
    "ids",
    "log_once",
    "new_call_id",
    "new_session_id",
    "process_owner",
    "propagate",
    "run_blocking",
    "span_id_of",
    "steps_in_context",
    "steps_in_current_context",
    "steps_under_call",
    "trace_id_of",
    "traceparent_of",
    "validate_session_id",
]

"""The adapter kit: everything an adapter in ``openprogram.integrations`` needs from the core.

Adapters import from here and from the public API only (see CONTRIBUTING.md,
"The adapter kit"):

- :class:`Integration` and :class:`Target` — the adapter and its table of patches (a row
  with ``overrides=True`` also patches every subclass's own definition);
- :func:`recorded` — the one wrapper recording each call of a framework method;
- :func:`guarded` / :func:`log_once` — the one guard for the adapter's own code;
- :class:`LaterCall`, :class:`StreamCall`, :class:`CallsByKey` — calls that outlive
  the block that began them;
- :func:`steps_in_context` / :func:`steps_under_call` (and async twins) — the step
  driver, with its two semantics (:func:`frameless_steps_in_current_context`: the first,
  driven from C, for a generator that warns about its caller);
- :func:`run_session` — which session a framework run records into; :func:`join_session` /
  :class:`run_with_session` — recording into a session another process named (with
  :func:`traceparent_of`, the W3C id of a call's span, to send it);
- :func:`answered` / :data:`NO_RESULT` — a session's history with every tool call followed by a result,
  as converters into a framework's messages need it;
- :func:`run_blocking` — blocking work (a store lookup) a coroutine awaits, on openprogram's own threads;
- :func:`open_call` / :func:`close_call` — the lean pair for hand-written hot paths;
- :class:`ModelCall` / :class:`ModelStream` with :func:`message`, :func:`tool_call`,
  :func:`reply`, :func:`usage`, :func:`model_inputs`, :func:`messages_of` — a request to a chat model as an
  ``llm`` call, in the one shape for every framework; :func:`content_captured`;
- :func:`rejected_tool_call` — a model's tool call the framework refused (no such tool, arguments
  it rejected), as a ``tool`` call ending ``error``;
- :func:`attribute` — ``getattr(obj, name, None)`` without an exception inside a pydantic model.
"""

from __future__ import annotations

from ._calls import (
    CallsByKey,
    LaterCall,
    ModelCall,
    ModelStream,
    Opened,
    StreamCall,
    ToolCallRejected,
    call_scope,
    close_call,
    injected_arguments,
    message,
    messages_of,
    model_inputs,
    open_call,
    records_itself,
    rejected_tool_call,
    reply,
    tool_call,
    usage,
)
from ._capture import content_captured, json_string
from ._history import NO_RESULT, answered
from ._instrumentation import (
    ORIGINAL,
    Describe,
    Integration,
    Target,
    Wrap,
    recorded,
    shape_of,
    version_tuple,
    wraps_like,
)
from ._recording import CALL_ID, register_control_flow
from ._runtime import (
    DidNotEnable,
    async_frameless_steps_in_current_context,
    async_steps_in_context,
    async_steps_in_current_context,
    async_steps_under_call,
    attribute,
    close_inner,
    frameless_steps_in_current_context,
    guarded,
    log_once,
    propagate,
    run_blocking,
    steps_in_context,
    steps_in_current_context,
    steps_under_call,
    traceparent_of,
    validate_session_id,
)
from ._sessions import RunEntry, join_session, last_run_session_id, run_session, run_with_session

__all__ = [
    "NO_RESULT",
    "ORIGINAL",
    "CallsByKey",
    "Describe",
    "DidNotEnable",
    "Integration",
    "LaterCall",
    "ModelCall",
    "ModelStream",
    "Opened",
    "RunEntry",
    "answered",
    "StreamCall",
    "ToolCallRejected",
    "Target",
    "Wrap",
    "async_frameless_steps_in_current_context",
    "async_steps_in_context",
    "async_steps_in_current_context",
    "async_steps_under_call",
    "attribute",
    "call_id_of",
    "call_scope",
    "close_call",
    "close_inner",
    "content_captured",
    "frameless_steps_in_current_context",
    "guarded",
    "injected_arguments",
    "join_session",
    "json_string",
    "last_run_session_id",
    "log_once",
    "message",
    "messages_of",
    "model_inputs",
    "open_call",
    "propagate",
    "recorded",
    "reply",
    "records_itself",
    "rejected_tool_call",
    "register_control_flow",
    "run_blocking",
    "run_session",
    "run_with_session",
    "shape_of",
    "steps_in_context",
    "steps_in_current_context",
    "steps_under_call",
    "tool_call",
    "traceparent_of",
    "usage",
    "validate_session_id",
    "version_tuple",
    "wraps_like",
]


def call_id_of(opened: Opened) -> str:
    """The id of a call begun with :func:`open_call`."""
    call_id: str = opened[0][CALL_ID]
    return call_id

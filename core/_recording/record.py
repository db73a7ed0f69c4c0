"""The call record: one tuple per call, its layout, where it waits, and how it begins and ends.

A call's record is begun as its :data:`START_WIDTH` start fields, kept in
:data:`inflight` while the call runs, and ended by appending those fields and the
four end fields to :data:`queue`, which the background writer drains. Records are
plain tuples because the hot paths (``@openprogram.tool``, an adapter's per-node
hooks) build them inline; every builder follows :data:`FIELDS`, and the slots are
read by the index constants below.
"""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any, Final

from .._capture import ATOMIC_TYPES, PRECAPTURED, capture_json, redact_error_text
from .._runtime import new_call_id
from .context import SessionHandle
from .stack import with_traceback

__all__ = [
    "ARGS",
    "ATTRIBUTES",
    "CALL_ID",
    "ENDED_AT",
    "ERROR",
    "FIELDS",
    "FRAMEWORK",
    "KIND",
    "KWARGS",
    "NAME",
    "NAMES",
    "OUTPUT",
    "PARENT",
    "RECORD_WIDTH",
    "SESSION",
    "STARTED_AT",
    "START_WIDTH",
    "STATUS",
    "begin_call",
    "describe_error",
    "end_call",
    "failed_record",
    "inflight",
    "queue",
    "register_control_flow",
    "status_of",
]

FIELDS: Final = (
    # --- the start: what inflight holds while the call runs
    "call_id",  # text, or the counter value (an int) the compiled @tool wrapper keeps: _ids.as_text spells it
    "session",  # the SessionHandle the call records into
    "parent",  # the parent call's id (text or counter value); None for a top-level turn
    "kind",
    "name",
    "framework",  # None for calls no framework made
    "names",  # what the next two slots hold; see below
    "args",
    "kwargs",
    "attributes",  # None, a dict, or its JSON text (a failed call's: a stack.PendingTraceback the writer lays out)
    "started_at",  # time.time()
    # --- the end
    "status",  # "ok", "error", "interrupted" (the writer writes "running" for a start alone)
    "output",  # None, a scalar of ATOMIC_TYPES (the writer encodes it), or a 1-tuple of captured JSON text
    "error",  # "Type: message" (bounded, redacted), or None; an "error" call's traceback is in its attributes
    "ended_at",
)
# What ``names``, ``args`` and ``kwargs`` hold depends on the builder:
# - no inputs: all three None;
# - inputs captured on the caller's thread (begin_call, open_call, a @tool call with a
#   mutable argument): ``names`` is PRECAPTURED, ``args`` their JSON text, ``kwargs`` None;
# - scalar arguments kept by reference for the writer to encode (a @tool call whose
#   arguments are all ATOMIC_TYPES): ``names`` the parameter names, or their
#   _capture.parameter_shape (the compiled wrapper), ``args`` the positional arguments'
#   tuple, ``kwargs`` the keyword arguments' dict or None.

CALL_ID: Final = 0
SESSION: Final = 1
PARENT: Final = 2
KIND: Final = 3
NAME: Final = 4
FRAMEWORK: Final = 5
NAMES: Final = 6
ARGS: Final = 7
KWARGS: Final = 8
ATTRIBUTES: Final = 9
STARTED_AT: Final = 10
STATUS: Final = 11
OUTPUT: Final = 12
ERROR: Final = 13
ENDED_AT: Final = 14

START_WIDTH: Final = 11
RECORD_WIDTH: Final = 15
assert len(FIELDS) == RECORD_WIDTH and FIELDS.index("status") == START_WIDTH

inflight: dict[Any, tuple[Any, ...]] = {}
"""Calls that started and have not ended: the call id (or its counter value) -> the start fields."""

# Flat: every entry is RECORD_WIDTH consecutive items, appended with one atomic
# ``queue.extend(...)``. A finished call's entry is its record; the writer's own
# entries (a session row, an alias, a flush marker) start with a tag object instead
# of a call id. No tuple outlives the call that built it, so queued calls give the
# garbage collector nothing to track; the writer regroups entries in C. A list, not a
# deque: the writer takes a batch with one slice (and deletes it), and what is
# appended meanwhile lies past that slice.
queue: list[Any] = []


# --- statuses -------------------------------------------------------------------------

_INTERRUPTING = (asyncio.CancelledError, KeyboardInterrupt, GeneratorExit, SystemExit)
_MAX_ERROR = 4096

# A framework's control-flow exceptions (a human-in-the-loop pause, a hand-off to a parent
# graph), registered by its adapter: the status a call ends with when one passes through it.
_control_flow: dict[type[BaseException], str] = {}
_CONTROL_FLOW: tuple[type[BaseException], ...] = ()


def register_control_flow(exc_type: type[BaseException], status: str) -> None:
    """Record a call through which ``exc_type`` (or a subclass) passes as ``status``, without an error.

    For exceptions a framework raises to steer a run rather than to fail it: a call
    paused by a human-in-the-loop interrupt is ``interrupted``; one that handed control
    elsewhere is ``ok``. Applies to every recorded call, ``@openprogram.tool`` included.
    """
    global _CONTROL_FLOW
    if status not in ("ok", "interrupted"):
        raise ValueError(f"a control-flow status is 'ok' or 'interrupted', not {status!r}")
    _control_flow[exc_type] = status
    _CONTROL_FLOW = tuple(_control_flow)


def status_of(exc: BaseException | None) -> str:
    """``ok``, ``interrupted`` (cancellation, Ctrl-C, generator close, a registered pause) or ``error``."""
    if exc is None:
        return "ok"
    if isinstance(exc, _INTERRUPTING):
        return "interrupted"
    if _CONTROL_FLOW and isinstance(exc, _CONTROL_FLOW):
        # The most specific registration wins (a subclass may be registered apart from its base).
        return next(_control_flow[kind] for kind in type(exc).__mro__ if kind in _control_flow)
    return "error"


def describe_error(exc: BaseException) -> str | None:
    """``Type: message``, bounded and never raising; None for registered control flow (not an error)."""
    if _CONTROL_FLOW and isinstance(exc, _CONTROL_FLOW):
        return None
    try:
        text = f"{type(exc).__qualname__}: {exc}"
    except Exception:
        text = f"{type(exc).__qualname__}: <str() failed>"
    if len(text) <= _MAX_ERROR:
        return redact_error_text(text)
    # A bounded head (the rest is cut anyway), never shown up to its last stretch, where a
    # secret cut in two may have been missed.
    text = redact_error_text(text[: 4 * _MAX_ERROR])
    return text[: min(_MAX_ERROR, len(text) - _MAX_ERROR)] + "...[truncated]"


# --- begin and end -----------------------------------------------------------------------


def begin_call(
    handle: SessionHandle,
    parent_id: str | int | None,
    kind: str,
    name: str,
    framework: str | None = None,
    inputs: Any = None,
    attributes: dict[str, Any] | str | None = None,
    call_id: str | None = None,
    inputs_json: str | None = None,
) -> tuple[Any, ...]:
    """Record the start of a call and return its record (not yet made current).

    ``inputs`` are captured now (a snapshot: later mutation does not change the record), or
    given as ``inputs_json``, captured already. ``attributes`` is a dict, or its JSON text
    when the caller built it already.
    """
    if call_id is None:
        call_id = new_call_id()
    if inputs_json is not None:
        names, inputs = PRECAPTURED, inputs_json
    elif inputs is None:
        names = None
    else:
        names, inputs = PRECAPTURED, capture_json(inputs)
    rec = (call_id, handle, parent_id, kind, name, framework, names, inputs, None, attributes or None, time.time())
    inflight[call_id] = rec
    return rec


def end_call(
    rec: tuple[Any, ...],
    exc: BaseException | None = None,
    output: Any = None,
    attributes: dict[str, Any] | None = None,
    status: str | None = None,
) -> None:
    """Record the end of a call begun with :func:`begin_call` (idempotent).

    ``status`` overrides the one derived from ``exc`` (for framework control
    flow, e.g. a human-in-the-loop pause raised as an exception).
    """
    if inflight.pop(rec[CALL_ID], None) is None:
        return
    if attributes:
        start = rec[ATTRIBUTES]
        merged = dict(json.loads(start) if type(start) is str else start or {})
        merged.update(attributes)
        rec = rec[:ATTRIBUTES] + (merged,) + rec[ATTRIBUTES + 1 :]
    if output is not None and type(output) not in ATOMIC_TYPES:
        output = (capture_json(output),)  # a snapshot, as for inputs; the 1-tuple marks it as JSON text
    if exc is None:
        queue.extend(rec + (status or "ok", output, None, time.time()))
    else:
        queue.extend(failed_record(rec, exc, output, status))


def failed_record(
    rec: tuple[Any, ...], exc: BaseException, output: Any = None, status: str | None = None
) -> tuple[Any, ...]:
    """The whole record of a call that ``exc`` ended: an ``error`` keeps its traceback in its attributes."""
    status = status or status_of(exc)
    if status == "error":
        attributes = with_traceback(rec[ATTRIBUTES], exc)
        if attributes is not rec[ATTRIBUTES]:
            rec = rec[:ATTRIBUTES] + (attributes,) + rec[ATTRIBUTES + 1 :]
    return rec + (status, output, describe_error(exc), time.time())

"""Recorded calls as finished OpenTelemetry spans: one trace per turn, one span per call.

The ids come from the records — a trace id from the session and turn ids, a span id from
the call id — so a call exported twice is the same span, which a backend keeps once. Names
and attributes follow the OpenTelemetry GenAI conventions (``chat {model}``,
``invoke_agent {name}``, ...), with the OpenInference attributes that Phoenix and Langfuse
read for sessions, span kinds, models, tokens and messages (see :mod:`.messages`). What
protobuf cannot carry is made so it can: a lone surrogate is escaped (``\\ud800``), a number
past 64 bits sent as text, a time no clock gives clamped; one such value would otherwise
fail the whole batch it is in.

Needs ``openprogram[otlp]``: only the OTLP export modules import this one.
"""

from __future__ import annotations

import importlib.metadata
import json
import logging
import math
from collections.abc import Iterable, Mapping
from typing import Any

from opentelemetry.sdk.resources import OTELResourceDetector, Resource
from opentelemetry.sdk.trace import Event, ReadableSpan
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.trace import SpanContext, SpanKind, Status, StatusCode, TraceFlags

from .._runtime import VERSION, span_id_of, trace_id_of
from ..stores import CallRecord, CallRow, StoredRow, holds_texts
from .messages import json_text, max_messages, model_content, scalar
from .prompts import Prompts

__all__ = ["SERVICE_NAME", "default_resource", "span_id_of", "spans_of", "spans_of_calls", "trace_id_of"]

SERVICE_NAME = "openprogram"
"""The resource's ``service.name`` unless ``OTEL_SERVICE_NAME`` (or ``OTEL_RESOURCE_ATTRIBUTES``) names one."""

_SCOPE = InstrumentationScope("openprogram", VERSION)
_SAMPLED = TraceFlags(TraceFlags.SAMPLED)
_JSON = "application/json"
_failed_once = False  # a prompt that could not be read was logged
logger = logging.getLogger("openprogram")

# A call's kind -> its GenAI operation name and OpenInference span kind; any other kind
# is named after itself, as a CHAIN.
_OPERATIONS = {
    "llm": ("chat", "LLM"),
    "agent": ("invoke_agent", "AGENT"),
    "tool": ("execute_tool", "TOOL"),
    "graph": ("invoke_workflow", "CHAIN"),
    "crew": ("invoke_workflow", "CHAIN"),
    "flow": ("invoke_workflow", "CHAIN"),
}
# Attributes of an llm call that have their own span attributes.
_MODEL_KEYS = frozenset({"model", "provider", "usage"})
_TRACEBACK = "traceback"  # a failed call's stack: sent as its exception event's exception.stacktrace


def default_resource() -> Resource:
    """The resource spans are sent with: the SDK's name and version, ``service.name`` ``openprogram``, and what
    ``OTEL_RESOURCE_ATTRIBUTES`` and ``OTEL_SERVICE_NAME`` say (they win)."""
    # Not Resource.create(): its detectors run in a thread pool, which a process that is exiting cannot start.
    base = Resource(
        {
            "service.name": SERVICE_NAME,
            "telemetry.sdk.language": "python",
            "telemetry.sdk.name": "opentelemetry",
            "telemetry.sdk.version": _sdk_version(),
        }
    )
    return base.merge(OTELResourceDetector().detect())


def _sdk_version() -> str:
    try:
        return importlib.metadata.version("opentelemetry-sdk")
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


def spans_of(
    rows: Iterable[CallRow], resource: Resource, *, content: bool, prompts: Prompts | None = None
) -> list[ReadableSpan]:
    """A finished span for each final call row (running rows are left out).

    ``content=False`` leaves out inputs, outputs and message text. ``prompts`` puts back what
    a store's raw rows refer to (a model call's messages, long texts); rows that hold their
    captures whole need none. A call that ended with no end time (its process died) ends at
    the latest time recorded in its turn.
    """
    finals = [call for call in map(StoredRow._make, rows) if call.status != "running"]
    latest = _latest(finals)
    limit = max_messages()
    spans = []
    for row in finals:
        call, inputs = _captures(row, prompts) if content else (row, None)
        spans.append(_span(call, _decoded(call.attributes), inputs, resource, content, latest, limit))
    return spans


def spans_of_calls(calls: Iterable[CallRecord], resource: Resource, *, content: bool) -> list[ReadableSpan]:
    """:func:`spans_of` for calls read back as records (``store.iter_calls``): their prompts are whole already,
    and sent without encoding them again as a stored row (which would bound them to a captured value's size)."""
    finals: list[StoredRow] = []
    found: list[tuple[Any, Any]] = []  # each call's decoded attributes and, of a model call, its inputs
    for call in calls:
        if call.status == "running":
            continue
        model = call.kind == "llm"
        inputs = None if model or call.inputs is None or not content else json_text(call.inputs)
        output = None if call.output is None or not content else json_text(call.output)
        finals.append(
            StoredRow(
                call.call_id, call.session_id, call.turn_id, call.parent_id, call.kind, call.name, call.framework,
                call.status, inputs, output, call.error, None, call.started_at, call.ended_at, "",
            )
        )  # fmt: skip
        found.append((call.attributes, call.inputs if model and content else None))
    latest = _latest(finals)
    limit = max_messages()
    return [
        _span(call, recorded, inputs, resource, content, latest, limit)
        for call, (recorded, inputs) in zip(finals, found, strict=True)
    ]


def _captures(call: StoredRow, prompts: Prompts | None) -> tuple[StoredRow, Any]:
    """The row with the long texts its inputs and output refer to put back, and a model call's inputs decoded
    with their messages whole (None for any other call); as recorded when that fails (the span is sent all the
    same, without what could not be read)."""
    global _failed_once
    model = call.kind == "llm"
    inputs = _decoded(call.inputs) if model else None
    if prompts is None:
        return call, inputs
    try:
        session_id = call.session_id
        if holds_texts(call.output):
            call = call._replace(output=json_text(prompts.with_texts(session_id, _decoded(call.output))))
        if holds_texts(call.inputs):
            whole = prompts.with_texts(session_id, _decoded(call.inputs))
            if not model:
                return call._replace(inputs=json_text(whole)), None
            inputs = whole
        return call, prompts.whole_inputs(session_id, call.call_id, inputs) if model else None
    except Exception:  # e.g. the store cannot be read now
        if not _failed_once:
            _failed_once = True
            logger.warning("openprogram: cannot read what a call's record refers to, to export it", exc_info=True)
        return call, inputs


def _latest(finals: list[StoredRow]) -> dict[str, float]:
    """The latest time recorded in each turn, when a call has no end time (else empty)."""
    latest: dict[str, float] = {}
    if any(call.ended_at is None for call in finals):
        for call in finals:
            seen = call.started_at if call.ended_at is None else call.ended_at
            if seen > latest.get(call.turn_id, 0.0):
                latest[call.turn_id] = seen
    return latest


def _span(
    call: StoredRow,
    recorded: Any,
    model_inputs: Any,
    resource: Resource,
    content: bool,
    latest: Mapping[str, float],
    limit: int,
) -> ReadableSpan:
    """A call's span; ``recorded`` is its decoded attributes, ``model_inputs`` a model call's decoded inputs, whole."""
    # the row layout (CALL_COLUMNS), kept as a table
    (call_id, session_id, turn_id, parent_id, kind, name, framework, status,
     inputs, output, error, _attributes, started_at, ended_at, _owner) = call  # fmt: skip
    if not isinstance(recorded, dict):
        recorded = {}
    operation, span_kind = _OPERATIONS.get(kind, (kind, "CHAIN"))
    if kind == "function" and recorded.get("auto_invoked") is True:  # a kernel function a model asked for
        operation, span_kind = "execute_tool", "TOOL"
    target = str(recorded.get("model") or name) if kind == "llm" else name
    attrs: dict[str, Any] = {
        "session.id": session_id,
        "gen_ai.conversation.id": session_id,
        "gen_ai.operation.name": operation,
        "openinference.span.kind": span_kind,
        "openprogram.call.kind": kind,
        "openprogram.call.id": call_id,
        "openprogram.turn.id": turn_id,
    }
    if framework is not None:
        attrs["openprogram.framework"] = framework
    if status == "interrupted":
        attrs["openprogram.call.interrupted"] = True
    trace_id = trace_id_of(session_id, turn_id)
    parent = None
    if parent_id is not None:
        if kind == "turn":  # a turn begins its own trace; the call it ran under is in another one
            attrs["openprogram.parent_call.id"] = parent_id
        else:
            parent = SpanContext(trace_id, span_id_of(parent_id), False, _SAMPLED)
    if operation == "invoke_agent":
        attrs["gen_ai.agent.name"] = name
    elif operation == "execute_tool":
        attrs["gen_ai.tool.name"] = name
        if recorded.get("tool_call_id") is not None:
            attrs["gen_ai.tool.call.id"] = str(recorded["tool_call_id"])
    elif kind == "llm":
        _model_attributes(attrs, target, recorded)
    for key, value in recorded.items():
        if (kind != "llm" or key not in _MODEL_KEYS) and key != _TRACEBACK:
            attrs[f"openprogram.attributes.{key}"] = scalar(value)
    if content:
        if kind == "llm":
            model_content(attrs, model_inputs, inputs, _decoded(output), limit)
        elif inputs is not None:
            attrs["input.value"], attrs["input.mime_type"] = inputs, _JSON
        if output is not None:
            attrs["output.value"], attrs["output.mime_type"] = output, _JSON
    end = ended_at if ended_at is not None else max(latest.get(turn_id, started_at), started_at)
    events: list[Event] = []
    if status == "error":
        state = Status(StatusCode.ERROR, _sendable(error or "error"))
        failure = {key: _sendable(value) for key, value in _exception(error, recorded.get(_TRACEBACK)).items()}
        attrs["error.type"] = failure["exception.type"]
        events.append(Event("exception", failure, timestamp=_nanos(end)))
    elif status == "ok":
        state = Status(StatusCode.OK)
    else:
        state = Status(StatusCode.UNSET)
    return ReadableSpan(
        name=_sendable(f"{operation} {target}"),
        context=SpanContext(trace_id, span_id_of(call_id), False, _SAMPLED),
        parent=parent,
        resource=resource,
        attributes={key: _sendable(value) for key, value in attrs.items()},
        events=events,
        kind=SpanKind.CLIENT if kind == "llm" else SpanKind.INTERNAL,
        status=state,
        start_time=_nanos(started_at),
        end_time=_nanos(end),
        instrumentation_scope=_SCOPE,
    )


def _model_attributes(attrs: dict[str, Any], model: str, recorded: Mapping[str, Any]) -> None:
    """The model and token usage, as GenAI (``gen_ai.*``) and OpenInference (``llm.*``) attributes."""
    attrs["gen_ai.request.model"] = attrs["llm.model_name"] = model
    provider = recorded.get("provider")
    if provider is not None:
        attrs["gen_ai.provider.name"] = attrs["llm.provider"] = str(provider)
    usage = recorded.get("usage")
    if isinstance(usage, dict):
        for key, genai, openinference in (
            ("input_tokens", "gen_ai.usage.input_tokens", "llm.token_count.prompt"),
            ("output_tokens", "gen_ai.usage.output_tokens", "llm.token_count.completion"),
            ("total_tokens", None, "llm.token_count.total"),
        ):
            count = usage.get(key)
            if isinstance(count, int) and not isinstance(count, bool):
                if genai is not None:
                    attrs[genai] = count
                attrs[openinference] = count


def _exception(error: str | None, traceback: Any = None) -> dict[str, Any]:
    """``exception.type`` and ``exception.message`` from an error recorded as ``Type: message``, and
    ``exception.stacktrace`` from the traceback the call kept (in its attributes)."""
    text = error or "error"
    kind, sep, message = text.partition(": ")
    if sep and kind.replace(".", "").replace("_", "").isalnum():
        failure = {"exception.type": kind, "exception.message": message}
    else:
        failure = {"exception.type": "Error", "exception.message": text}
    if isinstance(traceback, str):
        failure["exception.stacktrace"] = traceback
    return failure


def _decoded(text: str | None) -> Any:
    if text is None:
        return None
    try:
        return json.loads(text)
    except ValueError:
        return text


def _nanos(seconds: float) -> int:
    """A time in nanoseconds as OTLP's fixed64 holds it (a time no clock gives, from another process's row: 0 or
    the latest)."""
    if not isinstance(seconds, (int, float)) or not math.isfinite(seconds) or seconds < 0:
        return 0
    return min(int(seconds * 1e9) if seconds < _UINT64_MAX / 1e9 else _UINT64_MAX, _UINT64_MAX)


_INT64 = 1 << 63
_UINT64_MAX = (1 << 64) - 1


def _sendable(value: Any) -> Any:
    """An attribute value protobuf can encode: text with its lone surrogates escaped, an int past 64 bits as text."""
    if isinstance(value, str):
        if value.isascii():
            return value
        return value.encode("utf-8", "backslashreplace").decode("utf-8")  # as the writer escapes stored text
    if isinstance(value, int) and not isinstance(value, bool) and not -_INT64 <= value < _INT64:
        return str(value)
    if isinstance(value, (list, tuple)):
        return [_sendable(item) for item in value]
    return value

"""Recorded calls as finished OpenTelemetry spans: one trace per turn, one span per call.

The ids come from the records — a trace id from the session and turn ids, a span id from
the call id — so a call exported twice is the same span, which a backend keeps once. Names
and attributes follow the OpenTelemetry GenAI conventions (``chat {model}``,
``invoke_agent {name}``, ...), with the OpenInference attributes that Phoenix and Langfuse
read for sessions, span kinds, models, tokens and messages.

Needs ``openprogram[otlp]``: only the OTLP export modules import this one.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.metadata
import json
from collections.abc import Iterable, Mapping
from typing import Any

from opentelemetry.sdk.resources import OTELResourceDetector, Resource
from opentelemetry.sdk.trace import Event, ReadableSpan
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.trace import SpanContext, SpanKind, Status, StatusCode, TraceFlags

from .._runtime import VERSION
from ..stores import CallRow, StoredRow

__all__ = ["SERVICE_NAME", "default_resource", "span_id_of", "spans_of", "trace_id_of"]

SERVICE_NAME = "openprogram"
"""The resource's ``service.name`` unless ``OTEL_SERVICE_NAME`` (or ``OTEL_RESOURCE_ATTRIBUTES``) names one."""

_SCOPE = InstrumentationScope("openprogram", VERSION)
_SAMPLED = TraceFlags(TraceFlags.SAMPLED)
_JSON = "application/json"

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
# Request parameters with a GenAI attribute of their own.
_PARAMS = {
    "temperature": "gen_ai.request.temperature",
    "max_tokens": "gen_ai.request.max_tokens",
    "top_p": "gen_ai.request.top_p",
    "top_k": "gen_ai.request.top_k",
    "stop": "gen_ai.request.stop_sequences",
    "seed": "gen_ai.request.seed",
}


@functools.lru_cache(maxsize=1024)  # every call of a turn asks for it
def trace_id_of(session_id: str, turn_id: str) -> int:
    """The trace id of a turn: the same for every export of it."""
    return _digest(f"{session_id}\x00{turn_id}", 16)


@functools.lru_cache(maxsize=4096)  # a parent is asked for by each of its children
def span_id_of(call_id: str) -> int:
    """The span id of a call: the same for every export of it."""
    return _digest(call_id, 8)


def _digest(text: str, size: int) -> int:
    value = int.from_bytes(hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()[:size], "big")
    return value or 1  # zero is the invalid id


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


def spans_of(rows: Iterable[CallRow], resource: Resource, *, content: bool) -> list[ReadableSpan]:
    """A finished span for each final call row (running rows are left out).

    ``content=False`` leaves out inputs, outputs and message text. A call that ended with
    no end time (its process died) ends at the latest time recorded in its turn.
    """
    finals = [call for call in map(StoredRow._make, rows) if call.status != "running"]
    latest: dict[str, float] = {}
    if any(call.ended_at is None for call in finals):
        for call in finals:
            seen = call.started_at if call.ended_at is None else call.ended_at
            if seen > latest.get(call.turn_id, 0.0):
                latest[call.turn_id] = seen
    return [_span(call, resource, content, latest) for call in finals]


def _span(call: StoredRow, resource: Resource, content: bool, latest: Mapping[str, float]) -> ReadableSpan:
    # the row layout (CALL_COLUMNS), kept as a table
    (call_id, session_id, turn_id, parent_id, kind, name, framework, status,
     inputs, output, error, attributes, started_at, ended_at, _owner) = call  # fmt: skip
    recorded = _decoded(attributes)
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
        if kind != "llm" or key not in _MODEL_KEYS:
            attrs[f"openprogram.attributes.{key}"] = _scalar(value)
    if content:
        if inputs is not None:
            attrs["input.value"], attrs["input.mime_type"] = inputs, _JSON
        if output is not None:
            attrs["output.value"], attrs["output.mime_type"] = output, _JSON
        if kind == "llm":
            _message_attributes(attrs, _decoded(inputs), _decoded(output))
    end = ended_at if ended_at is not None else max(latest.get(turn_id, started_at), started_at)
    events: list[Event] = []
    if status == "error":
        state = Status(StatusCode.ERROR, error or "error")
        failure = _exception(error)
        attrs["error.type"] = failure["exception.type"]
        events.append(Event("exception", failure, timestamp=_nanos(end)))
    elif status == "ok":
        state = Status(StatusCode.OK)
    else:
        state = Status(StatusCode.UNSET)
    return ReadableSpan(
        name=f"{operation} {target}",
        context=SpanContext(trace_id, span_id_of(call_id), False, _SAMPLED),
        parent=parent,
        resource=resource,
        attributes=attrs,
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


def _message_attributes(attrs: dict[str, Any], inputs: Any, output: Any) -> None:
    """The request's messages, parameters and the reply, flattened as OpenInference and GenAI attributes."""
    if isinstance(inputs, dict):
        messages = inputs.get("messages")
        if isinstance(messages, list):
            for index, message in enumerate(messages):
                if isinstance(message, dict):
                    _message(attrs, f"llm.input_messages.{index}.message", message)
        params = inputs.get("params")
        if isinstance(params, dict) and params:
            attrs["llm.invocation_parameters"] = json.dumps(params, default=str)
            for key, name in _PARAMS.items():
                value = params.get(key)
                if value is not None:
                    attrs[name] = [str(v) for v in value] if isinstance(value, list) else _scalar(value)
    if isinstance(output, dict):
        _message(attrs, "llm.output_messages.0.message", output)
        if output.get("finish_reason") is not None:
            attrs["gen_ai.response.finish_reasons"] = [str(output["finish_reason"])]


def _message(attrs: dict[str, Any], prefix: str, message: Mapping[str, Any]) -> None:
    attrs[f"{prefix}.role"] = str(message.get("role") or "user")
    text = message.get("content")
    if text is not None:
        attrs[f"{prefix}.content"] = text if isinstance(text, str) else json.dumps(text, default=str)
    if message.get("tool_call_id") is not None:
        attrs[f"{prefix}.tool_call_id"] = str(message["tool_call_id"])
    calls = message.get("tool_calls")
    for index, call in enumerate(calls if isinstance(calls, list) else ()):
        if not isinstance(call, dict):
            continue
        key = f"{prefix}.tool_calls.{index}.tool_call"
        if call.get("id") is not None:
            attrs[f"{key}.id"] = str(call["id"])
        attrs[f"{key}.function.name"] = str(call.get("name"))
        arguments = call.get("arguments")
        attrs[f"{key}.function.arguments"] = (
            arguments if isinstance(arguments, str) else json.dumps(arguments, default=str)
        )


def _exception(error: str | None) -> dict[str, Any]:
    """``exception.type`` and ``exception.message`` from an error recorded as ``Type: message``."""
    text = error or "error"
    kind, sep, message = text.partition(": ")
    if sep and kind.replace(".", "").replace("_", "").isalnum():
        return {"exception.type": kind, "exception.message": message}
    return {"exception.type": "Error", "exception.message": text}


def _decoded(text: str | None) -> Any:
    if text is None:
        return None
    try:
        return json.loads(text)
    except ValueError:
        return text


def _scalar(value: Any) -> Any:
    """A span attribute value: a str, bool, int or float as is, anything else as JSON text."""
    if isinstance(value, (str, bool, int, float)):
        return value
    return json.dumps(value, default=str)


def _nanos(seconds: float) -> int:
    return int(seconds * 1_000_000_000)

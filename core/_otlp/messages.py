"""A model call's messages as span attributes: OpenInference's flattened ones and the GenAI conventions' JSON ones.

The prompt is sent whole (its messages resolved by the caller), unless it has more than
:func:`max_messages` messages: then the oldest are left out, the newest always kept, and
``openprogram.prompt.messages_omitted`` says how many were. The same messages go to

- ``llm.input_messages.{i}.message.*`` (OpenInference: what Phoenix shows in its chat view);
- ``gen_ai.input.messages`` (JSON text, the GenAI "parts" format), with the system messages'
  text in ``gen_ai.system_instructions`` instead, and the reply in ``gen_ai.output.messages``;
- ``input.value`` (JSON: what Langfuse shows as the observation's input).

Needs no OpenTelemetry: only :mod:`.spans` uses it.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Mapping
from typing import Any

from ..stores import prompt_reference

__all__ = [
    "DEFAULT_MAX_MESSAGES",
    "ENV_MAX_MESSAGES",
    "OMITTED",
    "max_messages",
    "json_text",
    "model_content",
    "scalar",
]

logger = logging.getLogger("openprogram")

ENV_MAX_MESSAGES = "OPENPROGRAM_OTLP_MAX_MESSAGES"
DEFAULT_MAX_MESSAGES = 1000
"""The most prompt messages a span carries unless ``OPENPROGRAM_OTLP_MAX_MESSAGES`` says otherwise (0: no cut).

Far more than an ordinary conversation holds, so prompts are whole; a bound all the same because
each span carries its prompt three times, and a runaway loop's spans would otherwise grow past
what a backend takes in one request. Lower it for a backend that refuses large spans."""
OMITTED = "openprogram.prompt.messages_omitted"
"""The attribute saying how many of the oldest messages a span's prompt leaves out (only when some are)."""

# Request parameters with a GenAI attribute of their own.
_PARAMS = {
    "temperature": "gen_ai.request.temperature",
    "max_tokens": "gen_ai.request.max_tokens",
    "top_p": "gen_ai.request.top_p",
    "top_k": "gen_ai.request.top_k",
    "stop": "gen_ai.request.stop_sequences",
    "seed": "gen_ai.request.seed",
}
_JSON = "application/json"
_warned: set[str] = set()  # invalid values of the variable, each warned about once


def max_messages() -> int:
    """The most prompt messages a span carries (0: all), as ``OPENPROGRAM_OTLP_MAX_MESSAGES`` says when it is set."""
    raw = os.environ.get(ENV_MAX_MESSAGES, "").strip()
    if not raw:
        return DEFAULT_MAX_MESSAGES
    try:
        value = int(raw)
    except ValueError:
        value = -1
    if value < 0:
        if raw not in _warned:
            _warned.add(raw)
            logger.warning(
                "openprogram: %s=%r is not a count of messages (0 for all); using %d",
                ENV_MAX_MESSAGES,
                raw,
                DEFAULT_MAX_MESSAGES,
            )
        return DEFAULT_MAX_MESSAGES
    return value


def model_content(attrs: dict[str, Any], inputs: Any, inputs_text: str | None, output: Any, limit: int) -> None:
    """A model call's inputs (decoded, their messages whole), parameters and reply as span attributes.

    ``input.value`` is the inputs encoded again with their messages (whole, or cut), or
    ``inputs_text`` (the text recorded) when they hold no message list.
    """
    if prompt_reference(inputs) is not None:  # left unresolved (see spans_of): no messages rather than a reference
        inputs = {key: value for key, value in inputs.items() if key != "messages"}
        inputs_text = None
    messages = inputs.get("messages") if isinstance(inputs, dict) else None
    if isinstance(messages, list):
        if 0 < limit < len(messages):
            attrs[OMITTED] = len(messages) - limit
            messages = messages[-limit:]
        inputs_text = json_text({**inputs, "messages": messages})
        _input_messages(attrs, messages)
    elif inputs_text is None and inputs is not None:  # read back as a record: no text recorded to send
        inputs_text = json_text(inputs)
    if inputs_text is not None:
        attrs["input.value"], attrs["input.mime_type"] = inputs_text, _JSON
    params = inputs.get("params") if isinstance(inputs, dict) else None
    if isinstance(params, dict) and params:
        attrs["llm.invocation_parameters"] = json.dumps(params, default=str)
        for key, name in _PARAMS.items():
            value = params.get(key)
            if value is not None:
                attrs[name] = [str(v) for v in value] if isinstance(value, list) else scalar(value)
    if isinstance(output, dict):
        _openinference(attrs, "llm.output_messages.0.message", output)
        reply = _genai(output)
        if output.get("finish_reason") is not None:
            attrs["gen_ai.response.finish_reasons"] = [str(output["finish_reason"])]
            reply["finish_reason"] = str(output["finish_reason"])
        attrs["gen_ai.output.messages"] = json_text([reply])


def _input_messages(attrs: dict[str, Any], messages: list[Any]) -> None:
    chat: list[dict[str, Any]] = []
    instructions: list[dict[str, Any]] = []
    for index, message in enumerate(messages):
        if not isinstance(message, dict):
            continue
        _openinference(attrs, f"llm.input_messages.{index}.message", message)
        converted = _genai(message)
        if converted["role"] == "system":  # instructions, apart from the conversation (GenAI)
            instructions += [part for part in converted["parts"] if part["type"] == "text"]
        else:
            chat.append(converted)
    attrs["gen_ai.input.messages"] = json_text(chat)
    if instructions:
        attrs["gen_ai.system_instructions"] = json_text(instructions)


def _openinference(attrs: dict[str, Any], prefix: str, message: Mapping[str, Any]) -> None:
    """One message as OpenInference's flattened ``{prefix}.role``, ``.content``, ``.tool_calls.{j}.tool_call.*``."""
    attrs[f"{prefix}.role"] = str(message.get("role") or "user")
    text = message.get("content")
    if text is not None:
        attrs[f"{prefix}.content"] = _text(text)
    if message.get("tool_call_id") is not None:
        attrs[f"{prefix}.tool_call_id"] = str(message["tool_call_id"])
    for index, call in enumerate(_tool_calls(message)):
        key = f"{prefix}.tool_calls.{index}.tool_call"
        if call.get("id") is not None:
            attrs[f"{key}.id"] = str(call["id"])
        attrs[f"{key}.function.name"] = str(call.get("name"))
        attrs[f"{key}.function.arguments"] = _text(call.get("arguments"))


def _genai(message: Mapping[str, Any]) -> dict[str, Any]:
    """One message in the GenAI format: ``{"role", "parts": [text, tool_call, tool_call_response parts]}``."""
    role = str(message.get("role") or "user")
    content = message.get("content")
    parts: list[dict[str, Any]] = []
    if role == "tool":
        parts.append({"type": "tool_call_response", "id": _id(message.get("tool_call_id")), "response": content})
    elif content is not None and content != "":
        parts.append({"type": "text", "content": _text(content)})
    for call in _tool_calls(message):
        parts.append(
            {
                "type": "tool_call",
                "id": _id(call.get("id")),
                "name": str(call.get("name")),
                "arguments": call.get("arguments"),
            }
        )
    return {"role": role, "parts": parts}


def _tool_calls(message: Mapping[str, Any]) -> list[dict[str, Any]]:
    calls = message.get("tool_calls")
    return [call for call in calls if isinstance(call, dict)] if isinstance(calls, list) else []


def _id(value: Any) -> str | None:
    return None if value is None else str(value)


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, default=str)


def json_text(value: Any) -> str:
    """Compact JSON text, ASCII: a lone surrogate a message kept cannot make the protobuf encoding fail."""
    return json.dumps(value, default=str, separators=(",", ":"))


def scalar(value: Any) -> Any:
    """A span attribute value: a str, bool, int or float as is, anything else as JSON text."""
    if isinstance(value, (str, bool, int, float)):
        return value
    return json.dumps(value, default=str)

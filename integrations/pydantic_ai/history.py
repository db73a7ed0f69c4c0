"""A session's history as Pydantic AI messages: what an agent is given next turn as ``message_history=``."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from openprogram._kit import NO_RESULT, answered

if TYPE_CHECKING:
    from pydantic_ai.messages import ModelMessage, ModelRequestPart

__all__ = ["NO_RESULT", "as_messages"]


def as_messages(history: Iterable[Mapping[str, Any]]) -> list[ModelMessage]:
    """``openprogram.history()`` as Pydantic AI messages: requests (system prompts, user prompts, tool
    returns) and responses (text, tool calls with their ids and arguments).

    Consecutive system, user and tool messages make one ``ModelRequest``, as Pydantic AI groups them. A tool
    call with no recorded result (a structured output's tool: the run ended with it) is given
    :data:`NO_RESULT`, as Pydantic AI refuses a history with an unanswered call.

    >>> agent.run_sync(question, message_history=as_messages(openprogram.history()))
    """
    from pydantic_ai.messages import (
        ModelRequest,
        ModelResponse,
        SystemPromptPart,
        TextPart,
        ToolCallPart,
        ToolReturnPart,
        UserPromptPart,
    )

    made: list[ModelMessage] = []
    parts: list[ModelRequestPart] = []  # the request being gathered
    names: dict[str, str] = {}  # tool call id -> the tool it called (a tool return names it too)

    # A call with no recorded result (an output tool ends a run so, or the run stopped there) is given
    # NO_RESULT: Pydantic AI refuses a history holding one, and providers reject it.
    for message in answered(history):
        role, content = message.get("role"), message.get("content")
        if role == "tool":
            call_id = str(message.get("tool_call_id") or "")
            parts.append(ToolReturnPart(names.get(call_id, ""), content, tool_call_id=call_id))
            continue
        if role == "system":
            parts.append(SystemPromptPart(_text(content)))
        elif role == "user":
            parts.append(UserPromptPart(_text(content)))
        elif role == "assistant":
            if parts:
                made.append(ModelRequest(parts=list(parts)))
                parts.clear()
            text = _text(content)
            said: list[Any] = [TextPart(text)] if text else []
            for call in message.get("tool_calls") or ():
                call_id, name = str(call.get("id") or ""), str(call.get("name") or "")
                names[call_id] = name
                said.append(ToolCallPart(name, _arguments(call.get("arguments")), tool_call_id=call_id))
            made.append(ModelResponse(parts=said))
        else:
            raise ValueError(f"not a message of openprogram.history(): {dict(message)!r}")
    if parts:
        made.append(ModelRequest(parts=parts))
    return made


def _text(content: Any) -> str:
    """A message's text; content parts (another framework's) joined by their text (media were not captured)."""
    if isinstance(content, str):
        return content
    if content is None:
        return ""
    if isinstance(content, list):
        texts = [part.get("text") if isinstance(part, dict) else part for part in content]
        return "".join(text for text in texts if isinstance(text, str))
    return json.dumps(content, default=str)


def _arguments(arguments: Any) -> str | dict[str, Any] | None:
    """A tool call's arguments as Pydantic AI holds them: a dict, or the JSON text the model sent."""
    if arguments is None or isinstance(arguments, (str, dict)):
        return arguments
    return json.dumps(arguments)

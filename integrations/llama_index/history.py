"""A session's history as LlamaIndex ``ChatMessage`` objects: what an agent run is given next turn."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from openprogram._kit import answered

if TYPE_CHECKING:
    from llama_index.core.llms import ChatMessage  # type: ignore[import-not-found, unused-ignore]

__all__ = ["as_chat_messages"]


def as_chat_messages(history: Iterable[Mapping[str, Any]]) -> list[ChatMessage]:
    """``openprogram.history()`` as ``ChatMessage`` objects, usable as ``chat_history=`` or in a memory.

    A tool call rides on its assistant message as LlamaIndex's LLM integrations read it
    (``additional_kwargs["tool_calls"]``, OpenAI-style, the arguments as JSON text), and its result
    is a ``tool`` message with the same ``tool_call_id``.

    >>> await agent.run(question, chat_history=as_chat_messages(openprogram.history()))
    """
    from llama_index.core.llms import ChatMessage  # type: ignore[import-not-found, unused-ignore]

    made: list[ChatMessage] = []
    for message in answered(history):  # providers reject a tool call with no result
        role, content = message.get("role"), message.get("content")
        if role not in ("system", "user", "assistant", "tool"):
            raise ValueError(f"not a message of openprogram.history(): {dict(message)!r}")
        text = content if isinstance(content, str) or content is None else json.dumps(content)
        extra: dict[str, Any] = {}
        calls = message.get("tool_calls") or () if role == "assistant" else ()
        if calls:
            extra["tool_calls"] = [
                {
                    "id": str(call.get("id") or ""),
                    "type": "function",
                    "function": {"name": str(call.get("name") or ""), "arguments": _arguments(call.get("arguments"))},
                }
                for call in calls
            ]
        if role == "tool":
            extra["tool_call_id"] = str(message.get("tool_call_id") or "")
        made.append(ChatMessage(role=role, content=text or "", additional_kwargs=extra))
    return made


def _arguments(arguments: Any) -> str:
    """A tool call's arguments as JSON text (recorded decoded, or as sent when not JSON)."""
    if isinstance(arguments, str):
        return arguments
    return json.dumps({} if arguments is None else arguments)

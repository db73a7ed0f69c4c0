"""A session's history as LangChain messages: what a LangGraph agent (or ``model.invoke``) is given next turn."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from openprogram._kit import answered

if TYPE_CHECKING:
    from langchain_core.messages import BaseMessage

__all__ = ["as_messages"]


def as_messages(history: Iterable[Mapping[str, Any]]) -> list[BaseMessage]:
    """``openprogram.history()`` as LangChain messages (system, human, AI with its tool calls, tool results).

    A tool call the record holds no result for is given one saying so (:data:`openprogram._kit.NO_RESULT`).

    >>> graph.invoke({"messages": [*as_messages(openprogram.history()), HumanMessage(question)]})
    """
    from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

    made: list[BaseMessage] = []
    for message in answered(history):  # LangGraph's agents refuse a tool call with no result
        role, content = message.get("role"), message.get("content") or ""
        if role == "system":
            made.append(SystemMessage(content))
        elif role == "user":
            made.append(HumanMessage(content))
        elif role == "assistant":
            calls = [
                {"id": call.get("id"), "name": call.get("name") or "", "args": _arguments(call.get("arguments"))}
                for call in message.get("tool_calls") or ()
            ]
            made.append(AIMessage(content, tool_calls=calls))
        elif role == "tool":
            text = content if isinstance(content, (str, list)) else json.dumps(content, default=str)
            made.append(ToolMessage(text, tool_call_id=message.get("tool_call_id") or ""))
        else:
            raise ValueError(f"not a message of openprogram.history(): {dict(message)!r}")
    return made


def _arguments(arguments: Any) -> dict[str, Any]:
    """A tool call's arguments as the dict LangChain holds (recorded as the model sent them: maybe JSON text)."""
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except ValueError:
            return {"input": arguments}
    return arguments if isinstance(arguments, dict) else {"input": arguments}

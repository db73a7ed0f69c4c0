"""A session's history as a Semantic Kernel ``ChatHistory``: what an SK agent or chat service is given next turn."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from openprogram._kit import answered

if TYPE_CHECKING:
    from semantic_kernel.contents import ChatHistory

__all__ = ["as_chat_history"]


def as_chat_history(history: Iterable[Mapping[str, Any]]) -> ChatHistory:
    """``openprogram.history()`` as a ``ChatHistory``: text, function calls and their results.

    >>> await agent.get_response(messages=[*as_chat_history(openprogram.history()).messages, question])
    """
    from semantic_kernel.contents import (
        AuthorRole,
        ChatHistory,
        ChatMessageContent,
        FunctionCallContent,
        FunctionResultContent,
        TextContent,
    )

    roles = {"system": AuthorRole.SYSTEM, "user": AuthorRole.USER, "assistant": AuthorRole.ASSISTANT}
    names: dict[str, str] = {}  # tool call id -> the function it called (a result names it too)
    made = ChatHistory()
    for message in answered(history):  # providers reject a function call with no result
        role, content = message.get("role"), message.get("content")
        text = content if isinstance(content, str) else ("" if content is None else json.dumps(content))
        items: list[Any] = [TextContent(text=text)] if text else []
        if role == "assistant":
            for call in message.get("tool_calls") or ():
                name = str(call.get("name") or "")
                names[str(call.get("id"))] = name
                items.append(FunctionCallContent(id=call.get("id"), name=name, arguments=_arguments(call)))
            made.add_message(ChatMessageContent(role=AuthorRole.ASSISTANT, items=items))
        elif role == "tool":
            call_id = str(message.get("tool_call_id") or "")
            result = FunctionResultContent(id=call_id, name=names.get(call_id, ""), result=text)
            made.add_message(ChatMessageContent(role=AuthorRole.TOOL, items=[result]))
        elif role in roles:
            made.add_message(ChatMessageContent(role=roles[role], items=items))
        else:
            raise ValueError(f"not a message of openprogram.history(): {dict(message)!r}")
    return made


def _arguments(call: Mapping[str, Any]) -> str | None:
    """A call's arguments as SK keeps them (JSON text)."""
    arguments = call.get("arguments")
    if arguments is None or isinstance(arguments, str):
        return arguments
    return json.dumps(arguments)

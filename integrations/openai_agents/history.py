"""A session's history as Agents SDK input items: what ``Runner.run`` is given next turn."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, cast

from openprogram._kit import answered

if TYPE_CHECKING:
    from agents import TResponseInputItem

__all__ = ["as_input"]


def as_input(history: Iterable[Mapping[str, Any]]) -> list[TResponseInputItem]:
    """``openprogram.history()`` as input items: messages, and each tool call as a ``function_call``
    item followed later by its ``function_call_output`` (the same call id, the arguments as JSON text).

    >>> await Runner.run(agent, [*as_input(openprogram.history()), {"role": "user", "content": question}])
    """
    made: list[dict[str, Any]] = []
    for message in answered(history):  # providers reject a function call with no output
        role, content = message.get("role"), message.get("content")
        if role in ("system", "user", "assistant"):
            calls = message.get("tool_calls") or () if role == "assistant" else ()
            if content or not calls:  # a tool call's empty text is no message of its own
                made.append({"role": role, "content": "" if content is None else content})
            for call in calls:
                made.append(
                    {
                        "type": "function_call",
                        "call_id": str(call.get("id") or ""),
                        "name": str(call.get("name") or ""),
                        "arguments": _arguments(call.get("arguments")),
                    }
                )
        elif role == "tool":
            output = content if isinstance(content, str) else json.dumps(content)
            made.append(
                {"type": "function_call_output", "call_id": str(message.get("tool_call_id") or ""), "output": output}
            )
        else:
            raise ValueError(f"not a message of openprogram.history(): {dict(message)!r}")
    return cast("list[TResponseInputItem]", made)


def _arguments(arguments: Any) -> str:
    """A tool call's arguments as the SDK sends them: JSON text (recorded decoded, or as sent when not JSON)."""
    if isinstance(arguments, str):
        return arguments
    return json.dumps({} if arguments is None else arguments)

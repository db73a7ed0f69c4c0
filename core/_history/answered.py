"""A history a model will accept: every tool call followed by a result.

The record may hold a tool call with no result: a structured output's tool ends a run so, and a run
can stop (or fail) right after a model asked for a tool. Frameworks refuse such a history (LangGraph's
agents, Pydantic AI) and providers reject it, so the converters give each such call a result saying so.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

__all__ = ["NO_RESULT", "answered"]

#: The result given to a tool call the record holds no result for.
NO_RESULT = "No result was recorded: the run ended with this call."


def answered(history: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """``history`` with a ``tool`` message of :data:`NO_RESULT` after the results of each assistant
    message whose tool calls were not all answered (before the next message that is not a result)."""
    out: list[dict[str, Any]] = []
    waiting: list[str] = []  # the last assistant message's calls with no result yet

    def close() -> None:
        out.extend({"role": "tool", "content": NO_RESULT, "tool_call_id": call_id} for call_id in waiting)
        waiting.clear()

    for message in history:
        if message.get("role") == "tool":
            call_id = message.get("tool_call_id")
            if call_id in waiting:
                waiting.remove(call_id)
        else:
            close()
            if message.get("role") == "assistant":
                calls = message.get("tool_calls") or ()
                waiting.extend(str(c.get("id") or "") for c in calls if isinstance(c, Mapping))
        out.append(dict(message))
    close()
    return out

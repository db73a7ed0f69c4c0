"""A session's history as ADK's own types: ``Content`` for a model, ``Event`` for an ADK session.

An ADK agent reads its conversation from the events of its ADK session, so the next turn
sees the first when those events are put in the session before it runs:

>>> session = await runner.session_service.create_session(app_name=app, user_id=user)
>>> for event in as_events(openprogram.history(), author=agent.name):
...     await runner.session_service.append_event(session, event)
>>> runner.run_async(user_id=user, session_id=session.id, new_message=question)
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from openprogram._kit import answered

if TYPE_CHECKING:
    from google.adk.events import Event
    from google.genai import types

__all__ = ["as_contents", "as_events"]


def as_contents(history: Iterable[Mapping[str, Any]]) -> list[types.Content]:
    """``openprogram.history()`` as ``google.genai`` ``Content``: user text (role ``user``), the model's text and
    function calls (role ``model``), and the tool results after a call as one ``user`` content of function
    responses (same ids; a call with no recorded result is given one saying so). System messages are left
    out: each ADK agent brings its own instruction.
    """
    from google.genai import types

    made: list[types.Content] = []
    names: dict[str, str] = {}  # tool call id -> the tool it called (a function response names it too)
    for message in answered(history):  # models refuse a function call with no response
        role, content = message.get("role"), message.get("content")
        if role == "system":
            continue
        if role == "user":
            made.append(types.Content(role="user", parts=[types.Part(text=_text(content))]))
        elif role == "assistant":
            parts = [types.Part(text=_text(content))] if content else []
            for call in message.get("tool_calls") or ():
                call_id, name = str(call.get("id") or ""), str(call.get("name") or "")
                names[call_id] = name
                called = types.FunctionCall(id=call_id or None, name=name, args=_arguments(call.get("arguments")))
                parts.append(types.Part(function_call=called))
            made.append(types.Content(role="model", parts=parts or [types.Part(text="")]))
        elif role == "tool":
            call_id = str(message.get("tool_call_id") or "")
            response = types.FunctionResponse(
                id=call_id or None, name=names.get(call_id, ""), response=_result(content)
            )
            last = made[-1] if made else None
            if last is not None and last.role == "user" and last.parts and last.parts[0].function_response:
                last.parts.append(types.Part(function_response=response))  # a turn's results go together
            else:
                made.append(types.Content(role="user", parts=[types.Part(function_response=response)]))
        else:
            raise ValueError(f"not a message of openprogram.history(): {dict(message)!r}")
    return made


def as_events(history: Iterable[Mapping[str, Any]], *, author: str) -> list[Event]:
    """:func:`as_contents` as ADK session events: the user's as ``user``'s, the rest as ``author``'s (the agent
    that will read them: ADK shows an agent another agent's events as quoted context, not as its own turns).
    Append them to an ADK session with ``session_service.append_event`` before the run that continues it.
    """
    from google.adk.events import Event

    events = []
    for content in as_contents(history):
        said_by_user = content.role == "user" and not any(part.function_response for part in content.parts or ())
        events.append(Event(author="user" if said_by_user else author, content=content))
    return events


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


def _arguments(arguments: Any) -> dict[str, Any]:
    """A tool call's arguments as ADK holds them: a dict (JSON text decoded; anything else wrapped)."""
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments) if arguments.strip() else {}
        except ValueError:
            return {"arguments": arguments}
    if arguments is None:
        return {}
    return arguments if isinstance(arguments, dict) else {"arguments": arguments}


def _result(content: Any) -> dict[str, Any]:
    """A tool's result as a function response: ADK wraps a value that is not a dict as ``{"result": value}``."""
    return content if isinstance(content, dict) else {"result": content}

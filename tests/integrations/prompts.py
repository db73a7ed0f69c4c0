"""Reading whole prompts back: what each model call recorded it sent, and what the SQLite store holds.

Shared by every framework's prompt tests: each compares the recorded messages with what its
offline model received, translated to the one message shape by the test itself.
"""

from __future__ import annotations

import json
import sqlite3
from typing import Any

import openprogram
from openprogram.stores import TEXT, prompt_reference

from tests.support import by_kind, calls

#: A captured value's JSON is bounded at 32 KiB (``Limits.max_chars``): a message, on its own.
MESSAGE_BOUND = 32 * 1024
#: How the capture marks a string it cut: ``...[N more chars]`` where the cut is.
CUT_MARKER = " more chars]"


def recorded_prompts(store: openprogram.Store, session_id: str) -> list[list[dict[str, Any]]]:
    """The messages of each model call of the session, in start order, as read back (whole)."""
    return [record.inputs["messages"] for record in by_kind(calls(store, session_id), "llm")]


def stored_rows(store: openprogram.Store, session_id: str) -> list[str]:
    """The JSON text of each row the SQLite store's ``messages`` table holds for the session, read with sqlite3:
    a message (an object), or a long text that messages and outputs refer to (``{"$text": id}``)."""
    openprogram.flush()
    with sqlite3.connect(store.path) as conn:  # type: ignore[attr-defined]
        rows = conn.execute("SELECT body FROM messages WHERE session_id = ?", (session_id,)).fetchall()
    return [body for (body,) in rows]


def stored_messages(store: openprogram.Store, session_id: str) -> list[dict[str, Any]]:
    """The session's message rows, each decoded with the long texts it refers to put back."""
    openprogram.flush()
    with sqlite3.connect(store.path) as conn:  # type: ignore[attr-defined]
        rows = conn.execute("SELECT message_id, body FROM messages WHERE session_id = ?", (session_id,)).fetchall()
    decoded = {row_id: json.loads(body) for row_id, body in rows}
    texts = {row_id: value for row_id, value in decoded.items() if isinstance(value, str)}

    def whole(value: Any) -> Any:
        if isinstance(value, dict):
            if set(value) == {TEXT}:
                return texts[value[TEXT]]
            return {key: whole(inner) for key, inner in value.items()}
        return [whole(inner) for inner in value] if isinstance(value, list) else value

    return [whole(value) for value in decoded.values() if isinstance(value, dict)]


def stored_references(store: openprogram.Store, session_id: str) -> list[dict[str, Any] | None]:
    """How each model call's messages are stored, in start order: a reference to an earlier request
    (``after``, ``keep``) and the ids of the messages it adds, or None when stored whole."""
    openprogram.flush()
    with sqlite3.connect(store.path) as conn:  # type: ignore[attr-defined]
        rows = conn.execute(
            "SELECT inputs FROM calls WHERE session_id = ? AND kind = 'llm' ORDER BY started_at, call_id",
            (session_id,),
        ).fetchall()
    return [prompt_reference(json.loads(inputs)) for (inputs,) in rows]


def distinct(prompts: list[list[dict[str, Any]]]) -> set[str]:
    """The distinct messages across prompts, each as canonical JSON."""
    return {json.dumps(message, sort_keys=True) for prompt in prompts for message in prompt}


def assert_stored_once(store: openprogram.Store, session_id: str, prompts: list[list[dict[str, Any]]]) -> None:
    """The store holds each distinct message the session's model calls sent once: no more rows, no fewer."""
    rows = stored_rows(store, session_id)
    assert len(rows) == len(set(rows))  # nothing stored twice, long texts included
    messages = [json.dumps(message, sort_keys=True) for message in stored_messages(store, session_id)]
    assert len(messages) == len(set(messages)) and set(messages) == distinct(prompts)


def assert_cut_inside(recorded: dict[str, Any], sent: dict[str, Any]) -> None:
    """``recorded`` is ``sent`` (a huge message) cut inside its content: its role and ids, a head, a marker, bounded."""
    assert {k: v for k, v in recorded.items() if k != "content"} == {k: v for k, v in sent.items() if k != "content"}
    head, marker, _ = recorded["content"].rpartition("...[")
    assert marker and recorded["content"].endswith(CUT_MARKER)
    assert head and sent["content"].startswith(head)
    assert len(json.dumps(recorded)) <= MESSAGE_BOUND


def openai_shape(sent: dict[str, Any]) -> dict[str, Any]:
    """A message of an OpenAI chat request body (what CrewAI and SK's connector send) in the one message shape."""
    shaped: dict[str, Any] = {"role": sent["role"], "content": sent.get("content")}
    if sent.get("tool_calls"):
        shaped["tool_calls"] = [
            {"id": c["id"], "name": c["function"]["name"], "arguments": json.loads(c["function"]["arguments"])}
            for c in sent["tool_calls"]
        ]
    if sent.get("tool_call_id"):
        shaped["tool_call_id"] = sent["tool_call_id"]
    return shaped

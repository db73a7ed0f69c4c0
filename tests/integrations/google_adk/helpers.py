"""Running an ADK agent in a test, and reading the recorded tree back (shared helpers are in ``tests.support``)."""

from __future__ import annotations

from typing import Any

import openprogram
from google.adk.runners import InMemoryRunner
from google.genai import types


def tree(records: list[openprogram.CallRecord]) -> list[tuple[int, str, str]]:
    """(depth, kind, name) of every call, in start order: the call tree as ``openprogram show`` prints it."""
    index = {r.call_id: r for r in records}
    shown = []
    for rec in records:
        depth, parent = 0, index.get(rec.parent_id) if rec.parent_id else None
        while parent is not None:
            depth += 1
            parent = index.get(parent.parent_id) if parent.parent_id else None
        shown.append((depth, rec.kind, rec.name))
    return shown


def user(text: str) -> types.Content:
    return types.Content(role="user", parts=[types.Part(text=text)])


async def ask(runner: InMemoryRunner, question: str, *, session_id: str | None = None, **kwargs: Any) -> str:
    """Run ``question`` through ``runner`` (in a new ADK session unless one is given); the last text answered."""
    if session_id is None:
        session_id = (await runner.session_service.create_session(app_name=runner.app_name, user_id="u")).id
    answer = ""
    async for event in runner.run_async(user_id="u", session_id=session_id, new_message=user(question), **kwargs):
        if event.content and event.content.parts and not event.partial:
            answer = "".join(part.text or "" for part in event.content.parts) or answer
    return answer

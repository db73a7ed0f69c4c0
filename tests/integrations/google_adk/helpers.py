"""Running an ADK agent in a test, and reading the recorded tree back (shared helpers are in ``tests.support``)."""

from __future__ import annotations

from typing import Any

from google.adk.runners import InMemoryRunner
from google.genai import types


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

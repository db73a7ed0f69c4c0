"""An async run makes no blocking call on the event loop: BlockBuster over every module, around the run.

With no session open, finding the run's session opens the SQLite store and reads it (and, for a
persistent ADK session, looks its binding up); that happens on openprogram's threads, so the run
is recorded under BlockBuster too.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import openprogram
import pytest
from google.adk.agents import LlmAgent
from google.adk.runners import InMemoryRunner, Runner
from google.adk.sessions import BaseSessionService, InMemorySessionService
from openprogram.integrations.google_adk import last_run_session_id
from openprogram.integrations.google_adk.fakes import ScriptedLlm

from tests.integrations.google_adk.helpers import ask
from tests.support import by_kind, calls

blockbuster = pytest.importorskip("blockbuster", reason="needs blockbuster")


class KeptSessionService(BaseSessionService):
    """A session service ADK does not know to be in-process (as a database's): a run on it continues the
    openprogram session bound to its ADK session, which is looked up in the store."""

    def __init__(self) -> None:
        self.inner = InMemorySessionService()

    async def create_session(self, **kwargs: Any) -> Any:
        return await self.inner.create_session(**kwargs)

    async def get_session(self, **kwargs: Any) -> Any:
        return await self.inner.get_session(**kwargs)

    async def list_sessions(self, **kwargs: Any) -> Any:
        return await self.inner.list_sessions(**kwargs)

    async def delete_session(self, **kwargs: Any) -> Any:
        return await self.inner.delete_session(**kwargs)

    async def append_event(self, session: Any, event: Any) -> Any:
        return await self.inner.append_event(session, event)


def _runner(kept: bool = False) -> Runner:
    def forecast(city: str) -> str:
        """The forecast for a city."""
        return f"{city}: sunny"

    model = ScriptedLlm(script=[[("forecast", {"city": "Paris"})], "sunny"])
    agent = LlmAgent(name="weather", model=model, tools=[forecast])
    if kept:
        return Runner(agent=agent, app_name="app", session_service=KeptSessionService())
    return InMemoryRunner(agent=agent, app_name="app")


def _kinds(session_id: str | None) -> list[str]:
    assert session_id is not None
    return [record.kind for record in calls(openprogram.open_store(), session_id)]


@pytest.mark.usefixtures("instrumented")
@pytest.mark.parametrize("kept", [False, True], ids=["in-memory", "kept"])
def test_an_async_run_with_no_session_open_is_recorded_under_blockbuster(
    caplog: pytest.LogCaptureFixture, kept: bool
) -> None:
    runner = _runner(kept)
    caplog.set_level(logging.INFO, logger="openprogram")

    async def run() -> str:
        session = await runner.session_service.create_session(app_name="app", user_id="u")
        with _blocking_calls_fail():
            return await ask(runner, "weather?", session_id=session.id)

    assert asyncio.run(run()) == "sunny"
    assert "Blocking call" not in caplog.text  # BlockBuster's error, which openprogram would log and swallow
    assert _kinds(last_run_session_id())[-4:] == ["agent", "llm", "tool", "llm"]


@pytest.mark.usefixtures("instrumented")
def test_an_async_run_in_a_session_is_recorded_under_blockbuster(
    caplog: pytest.LogCaptureFixture,
) -> None:
    runner = _runner(kept=True)
    caplog.set_level(logging.INFO, logger="openprogram")

    async def run() -> str:
        session = await runner.session_service.create_session(app_name="app", user_id="u")
        async with openprogram.session_context() as h:
            with _blocking_calls_fail():
                await ask(runner, "weather?", session_id=session.id)
        return h.session_id

    session_id = asyncio.run(run())
    assert "Blocking call" not in caplog.text
    assert len(by_kind(calls(openprogram.open_store(), session_id), "llm")) == 2


def _blocking_calls_fail() -> Any:
    """BlockBuster over every module, as a ``with`` block around the run only: a blocking call under it raises."""
    return blockbuster.blockbuster_ctx()

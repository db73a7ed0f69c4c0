"""An async run makes no blocking call on the event loop: BlockBuster, as Pydantic AI's own suite runs it.

With no session open, finding the run's session opens the SQLite store and reads it; that
happens on openprogram's threads, so the run is recorded under BlockBuster too.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterator
from typing import Any

import openprogram
import pytest
from openprogram.integrations.pydantic_ai import last_run_session_id
from pydantic_ai import Agent

from tests.integrations.pydantic_ai.fakes import scripted
from tests.support import by_kind, calls

blockbuster = pytest.importorskip("blockbuster", reason="needs blockbuster")


@pytest.fixture
def blocking_calls_fail() -> Iterator[None]:
    """BlockBuster over Pydantic AI's code, as its own suite configures it (a blocking call under it raises)."""
    detector = blockbuster.BlockBuster(["pydantic_ai"])
    # Pydantic AI's own exemption: the first schema of a tool reads its docstring from the source file.
    for name in ("os.stat", "io.TextIOWrapper.read"):
        detector.functions[name].can_block_in("pydantic_ai/_function_schema.py", "function_schema")
    detector.activate()
    try:
        yield
    finally:
        detector.deactivate()


def _agent() -> Agent[None, str]:
    agent = Agent(scripted([[("forecast", {"city": "Paris"})]], final="sunny"), name="weather")

    @agent.tool_plain
    def forecast(city: str) -> str:
        """The forecast for a city."""
        return f"{city}: sunny"

    return agent


def _kinds(session_id: str | None) -> list[str]:
    assert session_id is not None
    openprogram.flush()
    return [record.kind for record in calls(openprogram.open_store(), session_id)]


@pytest.mark.usefixtures("instrumented")
@pytest.mark.parametrize("conversation_id", [None, "conv-1"])
def test_an_async_run_with_no_session_open_is_recorded_under_blockbuster(
    blocking_calls_fail: None, caplog: pytest.LogCaptureFixture, conversation_id: str | None
) -> None:
    agent = _agent()
    caplog.set_level(logging.INFO, logger="openprogram")

    async def run() -> Any:
        return await agent.run("weather?", conversation_id=conversation_id)

    assert asyncio.run(run()).output == "sunny"
    assert "Blocking call" not in caplog.text  # BlockBuster's error, which openprogram would log and swallow
    assert _kinds(last_run_session_id())[-4:] == ["agent", "llm", "tool", "llm"]


@pytest.mark.usefixtures("instrumented")
def test_an_async_run_in_a_session_binds_its_conversation_under_blockbuster(
    blocking_calls_fail: None, caplog: pytest.LogCaptureFixture
) -> None:
    agent = _agent()
    caplog.set_level(logging.INFO, logger="openprogram")

    async def run_twice() -> str:
        async with openprogram.session_context() as h:
            first = await agent.run("weather?", conversation_id="conv-2")
        await agent.run("and tomorrow?", conversation_id=first.conversation_id)  # outside: joins that session
        return h.session_id

    session_id = asyncio.run(run_twice())
    assert "Blocking call" not in caplog.text  # BlockBuster's error, which openprogram would log and swallow
    assert last_run_session_id() == session_id
    assert len(by_kind(calls(openprogram.open_store(), session_id), "agent")) == 2

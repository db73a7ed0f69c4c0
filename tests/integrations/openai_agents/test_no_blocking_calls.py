"""An async run makes no blocking call on the event loop (BlockBuster, as Pydantic AI's suite runs it).

With no session open, finding a run's session opens the SQLite store and reads it (its SDK session's
conversation too): that happens on openprogram's threads, so the run is recorded under BlockBuster.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterator
from typing import Any

import openprogram
import pytest
from agents import Agent, Runner, function_tool
from agents.memory import SQLiteSession
from openprogram.integrations.openai_agents import last_run_session_id
from openprogram.integrations.openai_agents.demo import scripted_model

from tests.support import calls

blockbuster = pytest.importorskip("blockbuster", reason="needs blockbuster")


@function_tool
def lookup(key: str) -> str:
    """Look a key up."""
    return f"value of {key}"


@pytest.fixture
def blocking_calls_fail() -> Iterator[None]:
    """BlockBuster over the SDK's and openprogram's code: a blocking call made on the event loop raises."""
    detector = blockbuster.BlockBuster(["agents", "openprogram"])
    detector.activate()
    try:
        yield
    finally:
        detector.deactivate()


def _agent() -> Agent[Any]:
    model = scripted_model([[("lookup", {"key": "a"})], "done"])
    return Agent(name="Researcher", instructions="Use the tool.", tools=[lookup], model=model)


@pytest.mark.parametrize("streamed", [False, True])
@pytest.mark.parametrize("with_sdk_session", [False, True])
def test_an_async_run_with_no_session_open_is_recorded_under_blockbuster(
    blocking_calls_fail: None, caplog: pytest.LogCaptureFixture, streamed: bool, with_sdk_session: bool, tmp_path: Any
) -> None:
    caplog.set_level(logging.INFO, logger="openprogram")
    kwargs: dict[str, Any] = {}
    if with_sdk_session:
        kwargs["session"] = SQLiteSession("conversation-1", str(tmp_path / "sdk.db"))

    async def run() -> Any:
        if streamed:
            result = Runner.run_streamed(_agent(), "find a", **kwargs)
            async for _ in result.stream_events():
                pass
            return result.final_output
        return (await Runner.run(_agent(), "find a", **kwargs)).final_output

    assert asyncio.run(run()) == "done"
    assert "Blocking call" not in caplog.text  # BlockBuster's error, which openprogram would log and swallow
    session_id = last_run_session_id()
    assert session_id is not None
    openprogram.flush()
    kinds = [record.kind for record in calls(openprogram.open_store(), session_id)]
    assert kinds[-4:] == ["agent", "llm", "tool", "llm"]

"""An async agent call makes no blocking call on the event loop (BlockBuster, as Pydantic AI's suite runs it).

With no session open, the first recorded call opens the process's implicit session in the default
SQLite store: the store's path is checked off the event loop, so the call is recorded under BlockBuster.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterator

import openprogram
import pytest
from openprogram.integrations.semantic_kernel.fakes import ScriptedChatService, tools_then_answer
from semantic_kernel import Kernel
from semantic_kernel.agents import ChatCompletionAgent
from semantic_kernel.connectors.ai.function_choice_behavior import FunctionChoiceBehavior

from tests.integrations.semantic_kernel.plugins import Weather
from tests.support import calls

blockbuster = pytest.importorskip("blockbuster", reason="needs blockbuster")

pytestmark = pytest.mark.usefixtures("instrumented")


@pytest.fixture
def blocking_calls_fail() -> Iterator[None]:
    """BlockBuster over SK's and openprogram's code: a blocking call made on the event loop raises."""
    detector = blockbuster.BlockBuster(["semantic_kernel", "openprogram"])
    detector.activate()
    try:
        yield
    finally:
        detector.deactivate()


def test_an_async_agent_call_with_no_session_open_is_recorded_under_blockbuster(
    blocking_calls_fail: None, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="openprogram")
    kernel = Kernel()
    kernel.add_plugin(Weather(), "weather")
    service = ScriptedChatService(default_step=tools_then_answer([("weather", "forecast", {"city": "Paris"})], "ok"))
    agent = ChatCompletionAgent(
        name="forecaster",
        instructions="You know the weather.",
        service=service,
        kernel=kernel,
        function_choice_behavior=FunctionChoiceBehavior.Auto(),
    )

    async def ask() -> str:
        return str(await agent.get_response(messages="Weather in Paris?"))

    assert asyncio.run(ask()) == "ok"
    assert "Blocking call" not in caplog.text  # BlockBuster's error, which openprogram would log and swallow
    implicit = openprogram.implicit_session()
    assert implicit is not None
    openprogram.flush()
    kinds = [r.kind for r in calls(openprogram.open_store(), implicit.session_id)]
    assert {"agent", "llm", "function"} <= set(kinds)

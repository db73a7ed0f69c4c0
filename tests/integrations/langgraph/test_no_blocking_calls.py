"""An async graph run makes no blocking call on the event loop (BlockBuster, as Pydantic AI's suite runs it).

With no session open, finding the run's session (the implicit one, or its checkpointer thread's) opens
the SQLite store and reads it: that happens on openprogram's threads, so the run is recorded.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterator
from typing import Any

import openprogram
import pytest
from langgraph.checkpoint.memory import InMemorySaver
from openprogram._kit import last_run_session_id

from tests.integrations.langgraph.fakes import one_node_graph
from tests.support import calls

blockbuster = pytest.importorskip("blockbuster", reason="needs blockbuster")


@pytest.fixture
def blocking_calls_fail() -> Iterator[None]:
    """BlockBuster over LangGraph's and openprogram's code: a blocking call made on the event loop raises."""
    detector = blockbuster.BlockBuster(["langgraph", "openprogram"])
    detector.activate()
    try:
        yield
    finally:
        detector.deactivate()


@pytest.mark.parametrize("thread", [None, "thread-1"])
def test_an_async_run_with_no_session_open_is_recorded_under_blockbuster(
    blocking_calls_fail: None, caplog: pytest.LogCaptureFixture, thread: str | None
) -> None:
    caplog.set_level(logging.INFO, logger="openprogram")
    graph = one_node_graph(InMemorySaver() if thread else None)
    config: Any = {"configurable": {"thread_id": thread}} if thread else None

    async def run() -> Any:
        return await graph.ainvoke({"log": []}, config)

    assert asyncio.run(run()) == {"log": ["done"]}
    assert "Blocking call" not in caplog.text  # BlockBuster's error, which openprogram would log and swallow
    implicit = openprogram.implicit_session()
    session_id = last_run_session_id("langgraph") if thread else implicit and implicit.session_id
    assert session_id is not None
    openprogram.flush()
    assert [r.kind for r in calls(openprogram.open_store(), session_id)][-2:] == ["graph", "node"]

"""Flows run as they do without openprogram: concurrent ``@start`` methods keep CrewAI's interleaving.

CrewAI runs sync flow methods with ``asyncio.to_thread``, so how two concurrent start
methods interleave depends on whether the loop's default executor has idle threads.
A flow run with no session open records into the implicit session, or enters its
conversation's session around it (a flow state that outlives the run): neither may use
the loop's default executor before the flow's own work does.
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import openprogram
import pytest
from crewai.events import MethodExecutionStartedEvent, crewai_event_bus
from crewai.flow.flow import Flow, listen, start
from openprogram.integrations.crewai import adapter

from tests.support import by_kind, calls

Started = list[tuple[str, tuple[str, ...]]]


class Poem(Flow):  # type: ignore[type-arg]
    """CrewAI's own ``test_unstructured_flow_event_emission`` flow, shortened."""

    @start()
    def prepare_flower(self) -> str:
        self.state["flower"] = "roses"
        return "foo"

    @start()
    def prepare_color(self) -> str:
        self.state["color"] = "red"
        return "bar"

    @listen(prepare_color)
    def write_first_sentence(self) -> str:
        return f"{self.state['flower']} are {self.state['color']}"


def _started(entry: str) -> Started:
    """Each method's start event, in the order CrewAI emitted them, with the state keys it carried."""
    events: list[Any] = []
    lock = threading.Lock()
    with crewai_event_bus.scoped_handlers():

        @crewai_event_bus.on(MethodExecutionStartedEvent)
        def collect(source: Any, event: Any) -> None:
            with lock:
                events.append(event)

        flow = Poem()
        result = flow.kickoff() if entry == "kickoff" else asyncio.run(flow.kickoff_async())  # a fresh loop
        crewai_event_bus.flush()
    assert result == "roses are red"
    events.sort(key=lambda event: event.timestamp)
    return [(event.method_name, tuple(sorted(key for key in event.state if key != "id"))) for event in events]


@pytest.mark.parametrize("entry", ["kickoff", "kickoff_async"])
def test_concurrent_start_methods_interleave_as_without_openprogram(entry: str) -> None:
    openprogram.uninstrument("crewai")
    plain = [_started(entry) for _ in range(3)]
    openprogram.instrument("crewai")
    instrumented = [_started(entry) for _ in range(3)]
    assert instrumented == plain
    session_id = adapter.last_run_session_id()  # the runs went to the implicit session: no session each
    assert session_id is not None
    assert len(by_kind(calls(openprogram.open_store(), session_id), "flow")) == 3


class _FirstStep(Flow):  # type: ignore[type-arg]
    @start()
    async def first(self) -> bool:
        return asyncio.get_running_loop()._default_executor is None  # type: ignore[attr-defined]


def test_a_session_less_flow_run_leaves_the_loops_default_executor_alone() -> None:
    openprogram.uninstrument("crewai")
    untouched_plain = asyncio.run(_FirstStep().kickoff_async())
    openprogram.instrument("crewai")
    assert asyncio.run(_FirstStep().kickoff_async()) is untouched_plain is True
    implicit = adapter.last_run_session_id()
    assert implicit is not None
    # A named state is a conversation: its own session, entered around the run.
    assert asyncio.run(_FirstStep().kickoff_async(inputs={"id": "state-1"})) is True
    assert adapter.last_run_session_id() not in (None, implicit)

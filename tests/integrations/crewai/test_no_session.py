"""With no session open, CrewAI follows the one rule: kickoffs without a conversation share the implicit session."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

import openprogram
import pytest
from crewai import Agent, Crew, Flow, Task
from crewai.flow.flow import start
from openprogram.integrations.crewai import adapter
from openprogram.integrations.crewai.fakes import scripted_llm

from tests.support import by_kind, calls


def _crew() -> Crew:
    agent = Agent(role="Writer", goal="write", backstory="offline", llm=scripted_llm([], final="written"))
    return Crew(agents=[agent], tasks=[Task(description="write it", expected_output="text", agent=agent)])


class _Plain(Flow):  # type: ignore[type-arg]  # no persistence: its state lives and dies with the object
    @start()
    def begin(self) -> str:
        return "begun"


def _no_session_warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [
        r.getMessage() for r in caplog.records if r.levelno == logging.WARNING and "no session open" in r.getMessage()
    ]


def test_two_kickoffs_with_no_session_share_one_session_with_one_warning(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="openprogram")
    _crew().kickoff()
    first = adapter.last_run_session_id()
    _crew().kickoff()
    assert first is not None and adapter.last_run_session_id() == first  # was a new session per kickoff
    implicit = openprogram.implicit_session()
    assert implicit is not None and implicit.session_id == first
    assert len(by_kind(calls(openprogram.open_store(), first), "crew")) == 2
    (warning,) = _no_session_warnings(caplog)  # was two lines at INFO
    assert f"openprogram show {first}" in warning
    assert "session_context" in warning and "configure(no_session=" in warning


def test_flows_without_persisted_state_join_the_implicit_session() -> None:
    _Plain().kickoff()
    first = adapter.last_run_session_id()
    _Plain().kickoff()
    assert first is not None and adapter.last_run_session_id() == first


def test_langgraph_semantic_kernel_and_crewai_runs_share_one_implicit_session(
    caplog: pytest.LogCaptureFixture, instrument: Callable[..., set[str]]
) -> None:
    pytest.importorskip("langgraph")
    pytest.importorskip("semantic_kernel")
    from langgraph.graph import START, StateGraph
    from semantic_kernel import Kernel
    from semantic_kernel.functions import kernel_function
    from typing_extensions import TypedDict

    instrument("langgraph", "semantic_kernel")
    caplog.set_level(logging.INFO, logger="openprogram")
    seen: list[str | None] = []

    def note() -> None:
        handle = openprogram.get_current_session()
        seen.append(None if handle is None else handle.session_id)

    class State(TypedDict):
        text: str

    def node(state: State) -> dict[str, Any]:
        note()
        return {"text": "done"}

    class Plugin:
        @kernel_function(name="echo")
        def echo(self, text: str) -> str:
            note()
            return text

    g = StateGraph(State)
    g.add_node("node", node)
    g.add_edge(START, "node")
    g.compile().invoke({"text": ""}, {"configurable": {"thread_id": "1"}})  # no checkpointer: no conversation
    kernel = Kernel()
    kernel.add_plugin(Plugin(), "plugin")
    asyncio.run(kernel.invoke(plugin_name="plugin", function_name="echo", text="hi"))
    _crew().kickoff()
    implicit = openprogram.implicit_session()
    assert implicit is not None
    assert seen == [implicit.session_id] * 2
    assert adapter.last_run_session_id() == implicit.session_id
    kinds = [c.kind for c in calls(openprogram.open_store(), implicit.session_id)]
    assert {"graph", "function", "crew"} <= set(kinds)
    assert len(_no_session_warnings(caplog)) == 1


def test_a_persisted_flow_state_is_a_conversation_with_its_own_session() -> None:
    from crewai.flow.persistence import persist

    @persist()
    class Saved(Flow):  # type: ignore[type-arg]
        @start()
        def begin(self) -> str:
            return "begun"

    first_flow = Saved()
    first_flow.kickoff()
    first = adapter.last_run_session_id()
    Saved().kickoff()  # a new state: a new conversation
    second = adapter.last_run_session_id()
    Saved().kickoff(inputs={"id": first_flow.flow_id})  # the first state, restored
    assert first is not None and second is not None
    assert first != second and adapter.last_run_session_id() == first
    implicit = openprogram.implicit_session()
    assert implicit is None or implicit.session_id not in (first, second)

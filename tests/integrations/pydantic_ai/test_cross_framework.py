"""One session, one tree across frameworks: a LangGraph node runs a Pydantic AI agent whose tool calls an
``@openprogram.tool``."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any, TypedDict

import openprogram
import pytest
from langgraph.graph import END, START, StateGraph  # the nox session installs it with the test extras
from openprogram.stores import Store
from pydantic_ai import Agent

from tests.integrations.pydantic_ai.fakes import scripted
from tests.support import calls, one, tree


class State(TypedDict):
    city: str
    report: str


@openprogram.tool
def lookup(city: str) -> str:
    return f"{city}: sunny"


def _forecaster() -> Agent[None, str]:
    agent = Agent(scripted([[("forecast", {"city": "Lyon"})]], final="Lyon will be sunny"), name="forecaster")

    @agent.tool_plain
    def forecast(city: str) -> str:
        return lookup(city)

    return agent


def _graph(node: Callable[..., Any]) -> Any:
    graph = StateGraph(State)
    graph.add_node("plan", node)
    graph.add_edge(START, "plan")
    graph.add_edge("plan", END)
    return graph.compile()


EXPECTED = [
    (0, "turn", "main"),
    (1, "graph", "LangGraph"),
    (2, "node", "plan"),
    (3, "agent", "forecaster"),
    (4, "llm", "gpt-fake"),
    (4, "tool", "forecast"),
    (5, "tool", "lookup"),
    (4, "llm", "gpt-fake"),
]


@pytest.fixture(autouse=True)
def _both(instrument: Callable[..., set[str]]) -> None:
    instrument("langgraph", "pydantic_ai")


def test_a_langgraph_node_running_an_agent_sync_is_one_tree(store: Store) -> None:
    def plan(state: State) -> dict[str, str]:
        return {"report": _forecaster().run_sync(f"forecast for {state['city']}").output}

    with openprogram.session_context(store=store) as h:
        assert _graph(plan).invoke({"city": "Lyon"})["report"] == "Lyon will be sunny"
    records = calls(store, h.session_id)
    assert tree(records) == EXPECTED
    assert {r.kind: r.framework for r in records if r.kind in ("graph", "agent")} == {
        "graph": "langgraph",
        "agent": "pydantic_ai",
    }
    assert one(records, "lookup", "tool").framework is None  # recorded by @openprogram.tool itself


def test_an_async_langgraph_node_awaiting_an_agent_is_one_tree(store: Store) -> None:
    async def plan(state: State) -> dict[str, str]:
        return {"report": (await _forecaster().run(f"forecast for {state['city']}")).output}

    with openprogram.session_context(store=store) as h:
        assert asyncio.run(_graph(plan).ainvoke({"city": "Lyon"}))["report"] == "Lyon will be sunny"
    assert tree(calls(store, h.session_id)) == EXPECTED

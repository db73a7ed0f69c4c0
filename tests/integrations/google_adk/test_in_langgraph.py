"""One session, one tree across frameworks: a LangGraph node runs an ADK agent whose tool calls an
``@openprogram.tool``; the agent nests under the node, sync and async."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any, TypedDict

import openprogram
import pytest
from google.adk.agents import LlmAgent
from google.adk.runners import InMemoryRunner
from langgraph.graph import END, START, StateGraph  # the nox session installs it with the test extras
from openprogram.integrations.google_adk.fakes import ScriptedLlm
from openprogram.stores import Store

from tests.integrations.google_adk.helpers import ask, user
from tests.support import calls, one, tree


class State(TypedDict):
    city: str
    report: str


@openprogram.tool
def lookup(city: str) -> str:
    return f"{city}: sunny"


def _runner() -> InMemoryRunner:
    def forecast(city: str) -> str:
        """The forecast for a city."""
        return lookup(city)

    model = ScriptedLlm(model="gemini-fake", script=[[("forecast", {"city": "Lyon"})], "Lyon will be sunny"])
    return InMemoryRunner(agent=LlmAgent(name="forecaster", model=model, tools=[forecast]), app_name="app")


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
    (4, "llm", "gemini-fake"),
    (4, "tool", "forecast"),
    (5, "tool", "lookup"),
    (4, "llm", "gemini-fake"),
]


@pytest.fixture(autouse=True)
def _both(instrument: Callable[..., set[str]]) -> None:
    instrument("langgraph", "google_adk")


def test_a_langgraph_node_running_an_agent_sync_is_one_tree(store: Store) -> None:
    runner = _runner()

    def plan(state: State) -> dict[str, str]:
        async def session_id() -> str:
            return (await runner.session_service.create_session(app_name="app", user_id="u")).id

        answer = ""
        for event in runner.run(user_id="u", session_id=asyncio.run(session_id()), new_message=user("forecast")):
            if event.content and event.content.parts and event.content.parts[0].text:
                answer = event.content.parts[0].text
        return {"report": answer}

    with openprogram.session_context(store=store) as h:
        assert _graph(plan).invoke({"city": "Lyon"})["report"] == "Lyon will be sunny"
    records = calls(store, h.session_id)
    assert tree(records) == EXPECTED
    assert {r.kind: r.framework for r in records if r.kind in ("graph", "agent")} == {
        "graph": "langgraph",
        "agent": "google_adk",
    }
    assert one(records, "lookup", "tool").framework is None  # recorded by @openprogram.tool itself


def test_an_async_langgraph_node_awaiting_an_agent_is_one_tree(store: Store) -> None:
    async def plan(state: State) -> dict[str, str]:
        return {"report": await ask(_runner(), f"forecast for {state['city']}")}

    with openprogram.session_context(store=store) as h:
        assert asyncio.run(_graph(plan).ainvoke({"city": "Lyon"}))["report"] == "Lyon will be sunny"
    assert tree(calls(store, h.session_id)) == EXPECTED

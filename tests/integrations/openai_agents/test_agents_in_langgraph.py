"""One session, one tree across frameworks: a LangGraph node that runs an Agents SDK agent holds its calls."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypedDict

import openprogram
import pytest
from agents import Agent, Runner, function_tool
from langgraph.graph import START, StateGraph
from openprogram.integrations.openai_agents.demo import scripted_model
from openprogram.stores import Store

from tests.integrations.openai_agents.helpers import tree
from tests.support import calls

SESSIONS: list[str | None] = []


@pytest.fixture(autouse=True)
def _langgraph_too(instrument: Callable[..., set[str]]) -> None:
    instrument("langgraph")
    SESSIONS.clear()


@function_tool
def lookup(key: str) -> str:
    """Look a key up."""
    handle = openprogram.get_current_session()
    SESSIONS.append(handle.session_id if handle else None)
    return f"value of {key}"


def _researcher() -> Agent[Any]:
    return Agent(name="Researcher", tools=[lookup], model=scripted_model([[("lookup", {"key": "a"})], "found a"]))


class State(TypedDict, total=False):
    question: str
    answer: str


AGENT_IN_NODE = [
    "turn main",
    "  graph LangGraph",
    "    node ask",
    "      agent Researcher",
    "        llm scripted-offline",
    "        tool lookup",
    "        llm scripted-offline",
]


async def test_an_async_langgraph_node_running_an_agent_holds_the_agents_tree(store: Store) -> None:
    async def ask(state: State) -> State:
        return {"answer": (await Runner.run(_researcher(), state["question"])).final_output}

    builder = StateGraph(State)
    builder.add_node("ask", ask)
    builder.add_edge(START, "ask")
    async with openprogram.session_context(store=store) as h:
        assert (await builder.compile().ainvoke({"question": "find a"}))["answer"] == "found a"
    assert tree(calls(store, h.session_id)) == AGENT_IN_NODE
    assert [h.session_id] == SESSIONS


def test_a_sync_langgraph_node_running_an_agent_synchronously_holds_the_agents_tree(store: Store) -> None:
    def ask(state: State) -> State:
        return {"answer": Runner.run_sync(_researcher(), state["question"]).final_output}

    builder = StateGraph(State)
    builder.add_node("ask", ask)
    builder.add_edge(START, "ask")
    with openprogram.session_context(store=store) as h:
        assert builder.compile().invoke({"question": "find a"})["answer"] == "found a"
    assert tree(calls(store, h.session_id)) == AGENT_IN_NODE
    assert [h.session_id] == SESSIONS

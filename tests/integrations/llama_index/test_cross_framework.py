"""One session, one tree across frameworks: a LangGraph node runs a LlamaIndex agent whose tool is an
``@openprogram.tool``."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypedDict

import openprogram
import pytest
from langgraph.graph import END, START, StateGraph  # the nox session installs it with the test extras
from llama_index.core.agent.workflow import FunctionAgent
from llama_index.core.tools import FunctionTool
from openprogram.integrations.llama_index.fakes import scripted_llm
from openprogram.stores import Store

from tests.integrations.llama_index.helpers import without_steps
from tests.support import calls, tree


class State(TypedDict):
    city: str
    report: str


@openprogram.tool
def lookup(city: str) -> str:
    return f"{city}: sunny"


@pytest.fixture(autouse=True)
def _both(instrument: Callable[..., set[str]]) -> None:
    instrument("langgraph", "llama_index")


def test_a_langgraph_node_running_a_llama_index_agent_is_one_tree(store: Store) -> None:
    async def plan(state: State) -> dict[str, str]:
        agent = FunctionAgent(
            name="forecaster",
            description="Weather.",
            tools=[FunctionTool.from_defaults(fn=lookup, name="lookup", description="Look a city up.")],
            llm=scripted_llm([[("lookup", {"city": state["city"]})]], final=f"{state['city']} will be sunny"),
        )
        return {"report": str(await agent.run(user_msg=f"forecast for {state['city']}"))}

    graph = StateGraph(State)
    graph.add_node("plan", plan)
    graph.add_edge(START, "plan")
    graph.add_edge("plan", END)
    compiled = graph.compile()

    import asyncio

    with openprogram.session_context(store=store) as h:
        result = asyncio.run(compiled.ainvoke({"city": "Lyon", "report": ""}))
    assert result["report"] == "Lyon will be sunny"
    assert without_steps(tree(calls(store, h.session_id))) == [
        (0, "turn", "main"),
        (1, "graph", "LangGraph"),
        (2, "agent", "forecaster"),  # the LangGraph node: a ``node`` too, so left out with the steps
        (3, "llm", "scripted-model"),
        (3, "tool", "lookup"),
        (3, "llm", "scripted-model"),
    ]
    assert tree(calls(store, h.session_id))[:4] == [
        (0, "turn", "main"),
        (1, "graph", "LangGraph"),
        (2, "node", "plan"),
        (3, "agent", "forecaster"),
    ]

"""One session, one tree across frameworks: a LangGraph node kicks off a CrewAI crew whose tool
invokes a Semantic Kernel function that calls an ``@openprogram.tool``."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("langgraph", reason="needs openprogram[langgraph]")
pytest.importorskip("crewai", reason="needs openprogram[crewai]")
pytest.importorskip("semantic_kernel", reason="needs openprogram[semantic-kernel]")

import openprogram
from openprogram.integrations.crewai.fakes import offline_environment, scripted_llm

offline_environment()


@pytest.fixture(autouse=True)
def _home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setenv("OPENPROGRAM_HOME", str(tmp_path))
    openprogram.instrument("langgraph", "crewai", "semantic_kernel")
    yield
    openprogram.uninstrument()


def _chain(calls: list[openprogram.CallRecord], leaf: openprogram.CallRecord) -> list[tuple[str, str | None]]:
    by_id = {c.call_id: c for c in calls}
    chain: list[tuple[str, str | None]] = []
    node: openprogram.CallRecord | None = leaf
    while node is not None:
        chain.append((node.kind, node.framework))
        node = by_id.get(node.parent_id) if node.parent_id else None
    return chain[::-1]


def test_langgraph_node_crew_tool_kernel_function_is_one_tree() -> None:
    from typing import TypedDict

    from crewai import Agent, Crew, Task
    from crewai.tools import tool as crewai_tool
    from langgraph.graph import END, START, StateGraph
    from semantic_kernel import Kernel
    from semantic_kernel.functions import kernel_function

    @openprogram.tool
    def lookup(city: str) -> str:
        return f"{city}: sunny"

    class Weather:
        @kernel_function(name="forecast")
        def forecast(self, city: str) -> str:
            return lookup(city)

    kernel = Kernel()
    kernel.add_plugin(Weather(), plugin_name="weather")

    @crewai_tool("forecast")
    def forecast(city: str) -> str:
        """The forecast for a city, from the Semantic Kernel plugin."""
        return str(asyncio.run(kernel.invoke(plugin_name="weather", function_name="forecast", city=city)))

    class State(TypedDict):
        city: str
        report: str

    def plan(state: State) -> dict[str, str]:
        llm = scripted_llm([("forecast", {"city": state["city"]})], final="report ready")
        agent = Agent(role="Forecaster", goal="forecast", backstory="offline", llm=llm, tools=[forecast])
        crew = Crew(agents=[agent], tasks=[Task(description="forecast", expected_output="text", agent=agent)])
        return {"report": str(crew.kickoff())}

    graph = StateGraph(State)
    graph.add_node("plan", plan)
    graph.add_edge(START, "plan")
    graph.add_edge("plan", END)
    app = graph.compile()

    store = openprogram.open_store("memory://")
    with openprogram.session_context(store=store) as handle:
        result = app.invoke({"city": "Oslo", "report": ""})
    assert result["report"] == "report ready"

    calls = store.list_calls(handle.session_id)
    assert {c.session_id for c in calls} == {handle.session_id}
    leaves = [c for c in calls if c.kind == "tool" and c.name == "lookup"]
    assert len(leaves) == 1
    assert _chain(calls, leaves[0]) == [
        ("turn", None),
        ("graph", "langgraph"),
        ("node", "langgraph"),
        ("crew", "crewai"),
        ("task", "crewai"),
        ("agent", "crewai"),
        ("tool", "crewai"),
        ("function", "semantic_kernel"),
        ("tool", None),
    ]
    assert all(c.status == "ok" for c in calls), [(c.kind, c.name, c.status, c.error) for c in calls]

"""A ``graph`` call's output is what the run returned: the final state, or an ``@entrypoint``'s return value."""

from __future__ import annotations

from typing import Any

import openprogram
import pytest
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.func import entrypoint
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command, interrupt

from tests.integrations.langgraph.fakes import Log, agent_graph, chain_graph, scripted_model
from tests.support import by_kind, calls, one


def test_a_graph_runs_output_is_its_final_state(store: Any) -> None:
    with openprogram.session_context(store=store) as h:
        assert chain_graph(("a", "b")).invoke({"log": ["start"]}) == {"log": ["start", "a", "b"]}
    assert one(calls(store, h.session_id), "LangGraph", "graph").output == {"log": ["start", "a", "b"]}


async def test_an_async_graph_runs_output_is_its_final_state(store: Any) -> None:
    async with openprogram.session_context(store=store) as h:
        await chain_graph(("a",)).ainvoke({"log": []})
    assert one(calls(store, h.session_id), "LangGraph", "graph").output == {"log": ["a"]}


def test_a_message_graphs_output_holds_its_final_messages(store: Any) -> None:
    graph = agent_graph(scripted_model(AIMessage("all done")), [])
    with openprogram.session_context(store=store) as h:
        graph.invoke({"messages": [HumanMessage("go")]})
    output = one(calls(store, h.session_id), "LangGraph", "graph").output
    assert [(m["type"], m["content"]) for m in output["messages"]] == [("human", "go"), ("ai", "all done")]


@pytest.mark.parametrize("asynchronous", [False, True])
async def test_an_entrypoints_output_is_its_return_value(store: Any, asynchronous: bool) -> None:
    @entrypoint()
    def double(x: int) -> dict[str, int]:
        return {"doubled": x * 2}

    async with openprogram.session_context(store=store) as h:
        result = await double.ainvoke(21) if asynchronous else double.invoke(21)
    assert result == {"doubled": 42}
    assert one(calls(store, h.session_id), "double", "graph").output == {"doubled": 42}


def test_a_subgraphs_output_is_its_own_final_state(store: Any) -> None:
    outer = StateGraph(Log)
    outer.add_node("inner", chain_graph(("s1", "s2")))
    outer.add_node("after", lambda state: {"log": ["after"]})
    outer.add_edge(START, "inner")
    outer.add_edge("inner", "after")
    outer.add_edge("after", END)
    with openprogram.session_context(store=store) as h:
        outer.compile().invoke({"log": []})
    records = calls(store, h.session_id)
    run, subgraph_run = by_kind(records, "graph")
    assert subgraph_run.parent_id == one(records, "inner", "node").call_id
    assert (run.output, subgraph_run.output) == ({"log": ["s1", "s2", "after"]}, {"log": ["s1", "s2"]})


def test_a_paused_run_records_the_state_it_paused_in_and_the_resumed_run_its_end(store: Any) -> None:
    def ask(state: Log) -> dict[str, Any]:
        return {"log": [interrupt("approve?")]}

    graph = StateGraph(Log)
    graph.add_node("ask", ask)
    graph.add_edge(START, "ask")
    graph.add_edge("ask", END)
    compiled = graph.compile(checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "output-thread"}}
    with openprogram.session_context(store=store) as h:
        compiled.invoke({"log": ["asked"]}, config)
        compiled.invoke(Command(resume="approved"), config)
    paused, resumed = by_kind(calls(store, h.session_id), "graph")
    assert (paused.status, paused.output) == ("interrupted", {"log": ["asked"]})
    assert (resumed.status, resumed.output) == ("ok", {"log": ["asked", "approved"]})


def test_a_failed_or_abandoned_run_has_no_output(store: Any) -> None:
    def boom(state: Log) -> dict[str, Any]:
        raise ValueError("node failed")

    graph = StateGraph(Log)
    graph.add_node("boom", boom)
    graph.add_edge(START, "boom")
    graph.add_edge("boom", END)
    with openprogram.session_context(store=store) as h:
        with pytest.raises(ValueError, match="node failed"):
            graph.compile().invoke({"log": []})
        steps = chain_graph(("a", "b")).stream({"log": []})
        next(steps)
        steps.close()
    failed, abandoned = by_kind(calls(store, h.session_id), "graph")
    assert (failed.status, failed.output) == ("error", None)
    assert (abandoned.status, abandoned.output) == ("interrupted", None)

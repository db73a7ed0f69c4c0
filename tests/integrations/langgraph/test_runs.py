"""Graph runs, nodes and tools through every LangGraph entry point, with the real framework."""

from __future__ import annotations

import asyncio
import operator
import sys
import threading
from typing import Annotated, Any, TypedDict

import openprogram
import pytest
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.func import entrypoint, task
from langgraph.graph import END, START, StateGraph
from langgraph.pregel import Pregel
from langgraph.types import Send

from tests.integrations.langgraph.fakes import (
    Log,
    add,
    agent_graph,
    chain_graph,
    multiply,
    negate,
    scripted_model,
    seen,
    subtract,
    tool_calls,
)
from tests.support import attributes, by_kind, calls, one

TOOLS = [add, multiply, subtract]
STREAM_MODES = ["values", "updates", "debug", "tasks", "checkpoints", "custom", "messages", ["values", "updates"]]


@pytest.fixture(autouse=True)
def _clear_seen() -> None:
    seen.clear()


def _agent_run_model() -> Any:
    return scripted_model(
        tool_calls(("add", {"a": 1, "b": 2}), ("multiply", {"a": 3, "b": 4}), ("subtract", {"a": 5, "b": 1})),
        AIMessage("done"),
    )


def _check_agent_tree(records: list[Any]) -> None:
    graph = one(records, "LangGraph", "graph")
    assert graph.framework == "langgraph" and graph.status == "ok"
    agents = [c for c in by_kind(records, "node") if c.name == "agent"]
    tools_nodes = [c for c in by_kind(records, "node") if c.name == "tools"]
    assert len(agents) == 2 and len(tools_nodes) == 1
    assert all(c.parent_id == graph.call_id for c in [*agents, *tools_nodes])
    tool_records = by_kind(records, "tool")
    assert sorted(c.name for c in tool_records) == ["add", "multiply", "subtract"]
    assert all(c.parent_id == tools_nodes[0].call_id for c in tool_records)
    assert {c.name: c.inputs for c in tool_records}["add"] == {"a": 1, "b": 2}
    assert {c.name: c.output for c in tool_records}["add"] == "3"  # the ToolMessage's content
    steps = [attributes(c)["step"] for c in [agents[0], tools_nodes[0], agents[1]]]
    assert steps == sorted(steps) and len(set(steps)) == 3
    assert all(attributes(c)["task_id"] for c in [*agents, *tools_nodes])


def test_invoke_records_graph_nodes_and_parallel_tools(store: Any) -> None:
    graph = agent_graph(_agent_run_model(), TOOLS)
    with openprogram.session_context(store=store) as h:
        result = graph.invoke({"messages": [HumanMessage("go")]})
    assert result["messages"][-1].content == "done"
    _check_agent_tree(calls(store, h.session_id))
    assert {sid for _, sid in seen} == {h.session_id}
    assert {w for w, _ in seen} >= {"node:agent", "tool:add", "tool:multiply", "tool:subtract"}


async def test_ainvoke_records_the_same_tree(store: Any) -> None:
    graph = agent_graph(_agent_run_model(), TOOLS)
    async with openprogram.session_context(store=store) as h:
        await graph.ainvoke({"messages": [HumanMessage("go")]})
    _check_agent_tree(calls(store, h.session_id))
    assert {sid for _, sid in seen} == {h.session_id}


async def test_sync_nodes_under_ainvoke_attribute_to_the_graph(store: Any) -> None:
    graph = chain_graph(("a", "b", "c"))
    async with openprogram.session_context(store=store) as h:
        assert (await graph.ainvoke({"log": []}))["log"] == ["a", "b", "c"]
    records = calls(store, h.session_id)
    graph_call = one(records, "LangGraph", "graph")
    assert [c.name for c in by_kind(records, "node")] == ["a", "b", "c"]
    assert all(c.parent_id == graph_call.call_id for c in by_kind(records, "node"))
    assert seen == [("node:a", h.session_id), ("node:b", h.session_id), ("node:c", h.session_id)]


@pytest.mark.parametrize("mode", STREAM_MODES, ids=str)
def test_stream_every_mode(store: Any, mode: Any) -> None:
    graph = agent_graph(_agent_run_model(), TOOLS)
    with openprogram.session_context(store=store) as h:
        chunks = list(graph.stream({"messages": [HumanMessage("go")]}, stream_mode=mode))
    assert chunks or mode in ("custom", "checkpoints")
    _check_agent_tree(calls(store, h.session_id))


@pytest.mark.parametrize("mode", STREAM_MODES, ids=str)
async def test_astream_every_mode(store: Any, mode: Any) -> None:
    graph = agent_graph(_agent_run_model(), TOOLS)
    async with openprogram.session_context(store=store) as h:
        chunks = [c async for c in graph.astream({"messages": [HumanMessage("go")]}, stream_mode=mode)]
    assert chunks or mode in ("custom", "checkpoints")
    _check_agent_tree(calls(store, h.session_id))


def test_an_astream_left_open_is_closed_once_at_loop_shutdown(store: Any) -> None:
    # asyncio.run closes every async generator still open when it ends. The adapter's stream
    # closes LangGraph's; the loop must not close that one too (the two aclose() calls meet and
    # the loop logs "an error occurred during closing of asynchronous generator").
    loop_errors: list[str] = []
    left_open: list[Any] = []

    async def main() -> None:
        asyncio.get_running_loop().set_exception_handler(lambda loop, context: loop_errors.append(context["message"]))
        graph = agent_graph(_agent_run_model(), TOOLS)
        for _ in range(3):  # the loop closes them in an order of its own: one would often avoid the collision
            stream = graph.astream({"messages": [HumanMessage("go")]})
            left_open.append(stream)
            async for _ in stream:
                break

    with openprogram.session_context(store=store) as h:
        asyncio.run(main())
    assert loop_errors == []
    assert [c.status for c in by_kind(calls(store, h.session_id), "graph")] == ["interrupted"] * 3


def test_batch_records_one_graph_call_per_input(store: Any) -> None:
    graph = chain_graph()
    with openprogram.session_context(store=store) as h:
        results = graph.batch([{"log": [str(i)]} for i in range(3)])
    assert [r["log"][0] for r in results] == ["0", "1", "2"]
    records = calls(store, h.session_id)
    graphs = by_kind(records, "graph")
    assert len(graphs) == 3
    graph_ids = {g.call_id for g in graphs}
    nodes = by_kind(records, "node")
    assert len(nodes) == 6 and {n.parent_id for n in nodes} == graph_ids
    assert all(g.parent_id == h.turn_id or g.parent_id == records[0].call_id for g in graphs)


async def test_abatch_records_one_graph_call_per_input(store: Any) -> None:
    graph = chain_graph()
    async with openprogram.session_context(store=store) as h:
        await graph.abatch([{"log": [str(i)]} for i in range(4)])
    records = calls(store, h.session_id)
    assert len(by_kind(records, "graph")) == 4
    assert len(by_kind(records, "node")) == 8
    assert {sid for _, sid in seen} == {h.session_id}


async def test_astream_events(store: Any) -> None:
    graph = agent_graph(_agent_run_model(), TOOLS)
    async with openprogram.session_context(store=store) as h:
        events = [e async for e in graph.astream_events({"messages": [HumanMessage("go")]}, version="v2")]
    assert any(e["event"] == "on_tool_end" for e in events)
    _check_agent_tree(calls(store, h.session_id))


@pytest.mark.skipif(not hasattr(Pregel, "stream_events"), reason="sync stream_events is newer than this langgraph")
@pytest.mark.filterwarnings("ignore")  # v3 is experimental in LangGraph and says so
def test_sync_stream_events_v3(store: Any) -> None:
    graph = chain_graph(("a", "b"))
    with openprogram.session_context(store=store) as h:
        events = list(graph.stream_events({"log": []}, version="v3"))
    assert events
    records = calls(store, h.session_id)
    graph_call = one(records, "LangGraph", "graph")
    assert [(n.name, n.parent_id) for n in by_kind(records, "node")] == [
        ("a", graph_call.call_id),
        ("b", graph_call.call_id),
    ]
    assert seen == [("node:a", h.session_id), ("node:b", h.session_id)]


def test_functional_api_entrypoint_and_tasks(store: Any) -> None:
    @task
    def double(x: int) -> int:
        seen.append(("task", openprogram.get_current_session().session_id))  # type: ignore[union-attr]
        return 2 * x

    @entrypoint()
    def workflow(numbers: list[int]) -> int:
        return sum(f.result() for f in [double(n) for n in numbers])

    with openprogram.session_context(store=store) as h:
        assert workflow.invoke([1, 2, 3]) == 12
    records = calls(store, h.session_id)
    graph_call = one(records, "workflow", "graph")  # named after the entrypoint (LangGraph names it "LangGraph")
    entry = one(records, "workflow", "node")
    assert entry.parent_id == graph_call.call_id
    tasks = [c for c in by_kind(records, "node") if c.name == "double"]
    assert len(tasks) == 3 and all(t.parent_id == entry.call_id for t in tasks)
    assert seen == [("task", h.session_id)] * 3
    assert (entry.output, sorted(t.output for t in tasks)) == (12, [2, 4, 6])  # the return values themselves


@pytest.mark.skipif(
    sys.version_info < (3, 11),
    reason="LangGraph's async @task needs Python 3.11 task context (get_config fails there without openprogram too)",
)
async def test_functional_api_async(store: Any) -> None:
    @task
    async def double(x: int) -> int:
        return 2 * x

    @entrypoint()
    async def workflow(numbers: list[int]) -> int:
        return sum(await asyncio.gather(*(double(n) for n in numbers)))

    async with openprogram.session_context(store=store) as h:
        assert await workflow.ainvoke([1, 2]) == 6
    records = calls(store, h.session_id)
    entry = one(records, "workflow", "node")
    assert [t.parent_id for t in by_kind(records, "node") if t.name == "double"] == [entry.call_id] * 2


def test_subgraph_nests_under_the_node_that_ran_it(store: Any) -> None:
    inner = chain_graph(("inner_a", "inner_b"))
    g = StateGraph(Log)
    g.add_node("outer", lambda s: {"log": ["outer"]})
    g.add_node("sub", inner)
    g.add_edge(START, "outer")
    g.add_edge("outer", "sub")
    g.add_edge("sub", END)
    graph = g.compile()
    with openprogram.session_context(store=store) as h:
        assert graph.invoke({"log": []})["log"][-2:] == ["inner_a", "inner_b"]
    records = calls(store, h.session_id)
    graphs = by_kind(records, "graph")
    assert len(graphs) == 2
    top = next(c for c in graphs if c.parent_id == records[0].call_id)
    sub_node = one(records, "sub", "node")
    assert sub_node.parent_id == top.call_id
    sub_graph = next(c for c in graphs if c is not top)
    assert sub_graph.parent_id == sub_node.call_id
    assert one(records, "inner_a", "node").parent_id == sub_graph.call_id
    assert attributes(one(records, "inner_a", "node"))["checkpoint_ns"].startswith("sub:")


def test_subgraph_called_inside_a_node_function(store: Any) -> None:
    inner = chain_graph(("x",))

    def outer(state: Log) -> dict[str, Any]:
        return {"log": inner.invoke({"log": []})["log"]}

    g = StateGraph(Log)
    g.add_node("outer", outer)
    g.add_edge(START, "outer")
    graph = g.compile()
    with openprogram.session_context(store=store) as h:
        graph.invoke({"log": []})
    records = calls(store, h.session_id)
    outer_node = one(records, "outer", "node")
    inner_graph = next(c for c in by_kind(records, "graph") if c.parent_id == outer_node.call_id)
    assert one(records, "x", "node").parent_id == inner_graph.call_id


def test_send_fan_out_and_parallel_branches_each_get_a_node_call(store: Any) -> None:
    class Fan(TypedDict):
        items: list[int]
        out: Annotated[list[int], operator.add]

    threads: set[int] = set()

    def work(arg: dict[str, int]) -> dict[str, Any]:
        threads.add(threading.get_ident())
        note_session = openprogram.get_current_session()
        assert note_session is not None
        seen.append(("work", note_session.session_id))
        return {"out": [arg["n"] * 10]}

    g = StateGraph(Fan)
    g.add_node("start", lambda s: {})
    g.add_node("work", work)
    g.add_node("left", lambda s: {"out": [1]})
    g.add_node("right", lambda s: {"out": [2]})
    g.add_edge(START, "start")
    g.add_conditional_edges("start", lambda s: [Send("work", {"n": n}) for n in s["items"]])
    g.add_edge(START, "left")
    g.add_edge(START, "right")
    graph = g.compile()
    with openprogram.session_context(store=store) as h:
        out = graph.invoke({"items": [1, 2, 3], "out": []})["out"]
    assert sorted(out) == [1, 2, 10, 20, 30]
    records = calls(store, h.session_id)
    graph_call = one(records, "LangGraph", "graph")
    works = [c for c in by_kind(records, "node") if c.name == "work"]
    assert len(works) == 3
    assert len({attributes(c)["task_id"] for c in works}) == 3
    assert sorted(c.inputs["input"]["n"] for c in works) == [1, 2, 3]
    for name in ("start", "left", "right"):
        assert one(records, name, "node").parent_id == graph_call.call_id
    assert all(c.parent_id == graph_call.call_id for c in works)
    assert seen == [("work", h.session_id)] * 3


def test_graph_compiled_before_instrument_is_covered(store: Any) -> None:
    openprogram.uninstrument()
    graph = chain_graph(("early",))
    openprogram.instrument("langgraph")
    with openprogram.session_context(store=store) as h:
        graph.invoke({"log": []})
    assert one(calls(store, h.session_id), "early", "node").status == "ok"


def test_tool_called_directly_inside_a_node_is_a_child_of_that_node(store: Any) -> None:
    def node(state: Log) -> dict[str, Any]:
        return {"log": [str(add.invoke({"a": 2, "b": 3}))]}

    g = StateGraph(Log)
    g.add_node("calc", node)
    g.add_edge(START, "calc")
    graph = g.compile()
    with openprogram.session_context(store=store) as h:
        assert graph.invoke({"log": []})["log"] == ["5"]
    records = calls(store, h.session_id)
    tool_call = one(records, "add", "tool")
    assert tool_call.parent_id == one(records, "calc", "node").call_id
    assert tool_call.output == 5


async def test_async_tool_run_directly(store: Any) -> None:
    async with openprogram.session_context(store=store) as h:
        assert await negate.ainvoke({"a": 4}) == -4
        assert await add.ainvoke({"a": 1, "b": 1}) == 2  # sync tool through arun
    records = calls(store, h.session_id)
    assert [c.name for c in by_kind(records, "tool")] == ["negate", "add"]
    assert all(c.parent_id == records[0].call_id for c in by_kind(records, "tool"))


@pytest.mark.parametrize("mode", ["sync", "async"])
async def test_a_node_served_from_the_cache_is_recorded_as_cached(store: Any, mode: str) -> None:
    from langgraph.cache.memory import InMemoryCache
    from langgraph.types import CachePolicy

    runs: list[int] = []

    def slow(state: Log) -> dict[str, Any]:
        runs.append(1)
        return {"log": ["computed"]}

    g = StateGraph(Log)
    g.add_node("slow", slow, cache_policy=CachePolicy())
    g.add_edge(START, "slow")
    graph = g.compile(cache=InMemoryCache())
    async with openprogram.session_context(store=store) as h:
        for _ in range(2):
            out = graph.invoke({"log": []}) if mode == "sync" else await graph.ainvoke({"log": []})
            assert out["log"] == ["computed"]
    assert len(runs) == 1  # the second run was served from the cache
    first, second = by_kind(calls(store, h.session_id), "graph")
    ran, cached = by_kind(calls(store, h.session_id), "node")
    assert (ran.parent_id, cached.parent_id) == (first.call_id, second.call_id)
    assert "cached" not in attributes(ran) and attributes(cached)["cached"] is True
    assert ran.output == cached.output == {"log": ["computed"]} and cached.status == "ok"


def test_uninstrument_during_a_run_stops_recording_cache_hits_too(store: Any) -> None:
    from langgraph.cache.memory import InMemoryCache
    from langgraph.types import CachePolicy

    stop = [False]

    def first(state: Log) -> dict[str, Any]:
        if stop[0]:
            openprogram.uninstrument()  # the run goes on; its loop was hooked when it started
        return {"log": ["first"]}

    g = StateGraph(Log)
    g.add_node("first", first)
    g.add_node("cached", lambda state: {"log": ["cached"]}, cache_policy=CachePolicy())
    g.add_edge(START, "first")
    g.add_edge("first", "cached")
    graph = g.compile(cache=InMemoryCache())
    with openprogram.session_context(store=store) as h:
        graph.invoke({"log": []})
        stop[0] = True
        assert graph.invoke({"log": []})["log"] == ["first", "cached"]
    nodes = [(n.name, attributes(n).get("cached")) for n in by_kind(calls(store, h.session_id), "node")]
    assert nodes == [("first", None), ("cached", None), ("first", None)]  # no cache hit after uninstrument()

"""The session travels with the run: lazy streams, thread ids, interrupts and resumes (also across processes)."""

from __future__ import annotations

import asyncio
import contextvars
import json
import subprocess
import sys
import textwrap
import threading
from pathlib import Path
from typing import Any

import openprogram
import pytest
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command, interrupt

from tests.integrations.langgraph.fakes import Log, chain_graph, one_node_graph, one_tool_call_graph, seen
from tests.support import by_kind, calls, one


def setup_function() -> None:
    seen.clear()


def test_stream_created_in_a_session_and_iterated_in_another_thread(store: Any) -> None:
    graph = chain_graph(("a", "b"))
    with openprogram.session_context(store=store) as h:
        stream = graph.stream({"log": []})
    out: list[Any] = []
    worker = threading.Thread(target=lambda: out.extend(stream))  # a plain thread: no context copied
    worker.start()
    worker.join()
    assert len(out) == 2
    assert seen == [("node:a", h.session_id), ("node:b", h.session_id)]
    records = calls(store, h.session_id)
    graph_call = one(records, "LangGraph", "graph")
    assert graph_call.parent_id == records[0].call_id
    assert [n.parent_id for n in by_kind(records, "node")] == [graph_call.call_id] * 2


def test_stream_iterated_inside_another_session_keeps_its_creator(store: Any) -> None:
    graph = chain_graph(("a",))
    with openprogram.session_context(store=store) as first:
        stream = graph.stream({"log": []})
    with openprogram.session_context(store=store) as second:
        list(stream)
        assert openprogram.get_current_session() is second
    assert seen == [("node:a", first.session_id)]
    assert by_kind(calls(store, second.session_id), "node") == []


async def test_astream_created_in_a_session_and_iterated_in_a_bare_task(store: Any) -> None:
    graph = chain_graph(("a", "b"))
    async with openprogram.session_context(store=store) as h:
        stream = graph.astream({"log": []})
    empty = contextvars.Context()  # a task with none of our context

    async def consume() -> list[Any]:
        return [chunk async for chunk in stream]

    loop = asyncio.get_running_loop()
    task = empty.run(loop.create_task, consume())
    assert len(await task) == 2
    assert openprogram.get_current_session() is None
    assert seen == [("node:a", h.session_id), ("node:b", h.session_id)]


@pytest.mark.parametrize("entry", ["astream_events v1", "astream_events v2", "astream_log"])
async def test_lazy_event_streams_keep_their_creators_session(store: Any, entry: str) -> None:
    graph = chain_graph(("a", "b"))
    async with openprogram.session_context(store=store) as h:
        if entry == "astream_log":
            stream = graph.astream_log({"log": []})
        else:
            stream = graph.astream_events({"log": []}, version=entry[-2:])
    empty = contextvars.Context()  # iterated by a task with none of our context

    async def consume() -> int:
        return len([chunk async for chunk in stream])

    assert await empty.run(asyncio.get_running_loop().create_task, consume()) > 0
    assert seen == [("node:a", h.session_id), ("node:b", h.session_id)]
    records = calls(store, h.session_id)
    graph_call = one(records, "LangGraph", "graph")
    assert graph_call.status == "ok" and graph_call.parent_id == records[0].call_id
    assert [n.parent_id for n in by_kind(records, "node")] == [graph_call.call_id] * 2


async def test_astream_closed_early_ends_the_graph_call(store: Any) -> None:
    graph = chain_graph(("a", "b", "c"))
    async with openprogram.session_context(store=store) as h:
        stream = graph.astream({"log": []})
        async for _ in stream:
            break
        await stream.aclose()  # type: ignore[attr-defined]
    graph_call = one(calls(store, h.session_id), "LangGraph", "graph")
    assert graph_call.status == "interrupted" and graph_call.ended_at is not None


def test_a_thread_without_a_session_uses_one_session_per_thread() -> None:
    graph = one_node_graph(InMemorySaver())
    first = {"configurable": {"thread_id": "conversation-1"}}
    graph.invoke({"log": ["hi"]}, first)
    graph.invoke({"log": ["again"]}, first)
    graph.invoke({"log": ["other"]}, {"configurable": {"thread_id": "conversation-2"}})
    assert openprogram.get_current_session() is None
    sessions = [sid for _, sid in seen]
    assert sessions[0] == sessions[1] != sessions[2]
    assert None not in sessions
    default = openprogram.open_store()
    openprogram.flush()
    records = default.list_calls(sessions[0])
    assert [c.kind for c in records if c.kind in ("turn", "graph")] == ["turn", "graph", "turn", "graph"]


def _review_graph(checkpointer: Any) -> Any:
    def draft(state: Log) -> dict[str, Any]:
        return {"log": ["draft"]}

    def review(state: Log) -> dict[str, Any]:
        answer = interrupt({"question": "publish?", "draft": state["log"][-1]})
        handle = openprogram.get_current_session()
        seen.append(("review", None if handle is None else handle.session_id))
        return {"log": [f"answer:{answer}"]}

    g = StateGraph(Log)
    g.add_node("draft", draft)
    g.add_node("review", review)
    g.add_edge(START, "draft")
    g.add_edge("draft", "review")
    g.add_edge("review", END)
    return g.compile(checkpointer=checkpointer)


def test_interrupt_and_resume_in_one_session() -> None:
    # The default store: a resume with no session open finds the thread's session there.
    store = openprogram.open_store()
    graph = _review_graph(InMemorySaver())
    config = {"configurable": {"thread_id": "review-1"}}
    with openprogram.session_context(store=store) as h:
        paused = graph.invoke({"log": []}, config)
        assert paused["__interrupt__"][0].value["question"] == "publish?"
    # The resume runs with no session open: the thread was bound to h's session.
    done = graph.invoke(Command(resume="yes"), config)
    assert done["log"][-1] == "answer:yes"
    assert seen == [("review", h.session_id)]
    records = calls(store, h.session_id)
    assert [c.kind for c in records if c.kind == "turn"] == ["turn", "turn"]
    _check_review_tree(records, "yes")


def _check_review_tree(records: list[Any], answer: str) -> None:
    graphs = by_kind(records, "graph")
    assert [g.status for g in graphs] == ["interrupted", "ok"]
    paused, resumed = graphs
    interrupts = by_kind(records, "interrupt")
    assert len(interrupts) == 2
    asked = next(i for i in interrupts if i.status == "interrupted")
    answered = next(i for i in interrupts if i.status == "ok")
    review_nodes = [n for n in by_kind(records, "node") if n.name == "review"]
    assert [n.status for n in review_nodes] == ["interrupted", "ok"]
    assert asked.parent_id == review_nodes[0].call_id and review_nodes[0].parent_id == paused.call_id
    assert asked.inputs["value"] == {"question": "publish?", "draft": "draft"}
    assert answered.parent_id == resumed.call_id and answered.name == "review"
    assert answered.output == {"resume": answer}
    assert answered.inputs["interrupts"][0]["value"]["question"] == "publish?"
    assert answered.inputs["interrupts"][0]["id"] == asked.inputs["id"]


_PROCESS = textwrap.dedent(
    """
    import json, sys
    import openprogram
    from langgraph.checkpoint.sqlite import SqliteSaver
    from langgraph.types import Command
    sys.path[:0] = [{root!r}]  # the repository, for the tests package
    from tests.integrations.langgraph.test_sessions import _review_graph
    openprogram.instrument("langgraph")
    with SqliteSaver.from_conn_string({checkpoints!r}) as saver:
        graph = _review_graph(saver)
        config = {{"configurable": {{"thread_id": "review-across-processes"}}}}
        if sys.argv[1] == "ask":
            result = graph.invoke({{"log": []}}, config)
        else:
            result = graph.invoke(Command(resume="approved"), config)
    openprogram.flush()
    print(json.dumps({{"log": result["log"], "session": openprogram.get_current_session()}}, default=str))
    """
)


def test_resume_from_a_fresh_process_continues_the_same_session(tmp_path: Path) -> None:
    script = tmp_path / "run.py"
    script.write_text(_PROCESS.format(root=str(Path(__file__).parents[3]), checkpoints=str(tmp_path / "cp.db")))
    outputs = []
    for step in ("ask", "answer"):
        done = subprocess.run(
            [sys.executable, str(script), step], capture_output=True, text=True, timeout=120, check=False
        )
        assert done.returncode == 0, done.stderr
        outputs.append(json.loads(done.stdout.strip().splitlines()[-1]))
    assert outputs[1]["log"][-1] == "answer:approved"
    assert outputs[0]["session"] is None  # no session_context anywhere
    store = openprogram.open_store()  # the same default store (OPENPROGRAM_STORE from the fixture)
    sessions = [s for s in store.list_sessions() if store.list_calls(s.session_id)]
    assert len(sessions) == 1
    records = store.list_calls(sessions[0].session_id)
    assert [c.kind for c in records if c.kind == "turn"] == ["turn", "turn"]
    _check_review_tree(records, "approved")


def test_session_bound_thread_continues_without_session_in_a_new_turn() -> None:
    store = openprogram.open_store()
    graph = one_node_graph(InMemorySaver())
    config = {"configurable": {"thread_id": "bound"}}
    with openprogram.session_context(store=store) as h:
        graph.invoke({"log": []}, config)
    graph.invoke({"log": []}, config)
    assert [sid for _, sid in seen] == [h.session_id, h.session_id]


def test_a_thread_bound_in_another_store_continues_there_without_a_session() -> None:
    other = openprogram.open_store("memory://")  # not the default store
    graph = one_node_graph(InMemorySaver())
    config = {"configurable": {"thread_id": "bound-elsewhere"}}
    with openprogram.session_context(store=other) as h:
        graph.invoke({"log": []}, config)
    graph.invoke({"log": []}, config)  # no session open: this process remembers where the thread went
    assert [sid for _, sid in seen] == [h.session_id, h.session_id]
    openprogram.flush()
    assert [c.kind for c in other.list_calls(h.session_id) if c.kind == "turn"] == ["turn", "turn"]
    default = openprogram.open_store()
    assert "langgraph-bound-elsewhere" not in [s.session_id for s in default.list_sessions()]


def test_a_thread_paused_again_at_the_same_interrupt_records_it_each_time() -> None:
    store = openprogram.open_store("memory://")
    graph = _review_graph(InMemorySaver())
    config = {"configurable": {"thread_id": "asked-twice"}}
    with openprogram.session_context(store=store) as first:
        asked = graph.invoke({"log": []}, config)["__interrupt__"][0]
        again = graph.invoke(None, config)["__interrupt__"][0]  # re-run: the same interrupt id
        assert again.id == asked.id
    with openprogram.session_context(store=store) as second:
        graph.invoke(None, config)
    openprogram.flush()
    for handle, expected in ((first, 2), (second, 1)):
        interrupts = by_kind(store.list_calls(handle.session_id), "interrupt")
        assert [i.inputs["id"] for i in interrupts] == [asked.id] * expected
        assert {i.status for i in interrupts} == {"interrupted"}


def test_interrupt_in_a_subgraph_is_recorded_once_and_resumes() -> None:
    store = openprogram.open_store()
    inner = _review_graph(None)
    g = StateGraph(Log)
    g.add_node("outer", inner)
    g.add_edge(START, "outer")
    graph = g.compile(checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "nested-review"}}
    with openprogram.session_context(store=store) as h:
        assert graph.invoke({"log": []}, config)["__interrupt__"][0].value["question"] == "publish?"
        assert graph.invoke(Command(resume="nested"), config)["log"][-1] == "answer:nested"
    records = calls(store, h.session_id)
    interrupts = by_kind(records, "interrupt")
    assert [i.status for i in interrupts] == ["interrupted", "ok"]
    asked, answered = interrupts
    review = next(n for n in by_kind(records, "node") if n.name == "review" and n.status == "interrupted")
    assert asked.parent_id == review.call_id
    outer = next(n for n in by_kind(records, "node") if n.name == "outer" and n.status == "interrupted")
    sub_graph = next(c for c in by_kind(records, "graph") if c.parent_id == outer.call_id)
    assert review.parent_id == sub_graph.call_id
    assert sub_graph.status == "interrupted" and sub_graph.error is None
    assert answered.output == {"resume": "nested"} and answered.name == "outer"


def _tool_pause_graph(asking_tool: Any) -> Any:
    """A model turn calling ``asking_tool`` (which interrupts) through a ToolNode."""
    from langgraph.graph import MessagesState

    return one_tool_call_graph(asking_tool, {"question": "ok?"}, MessagesState, InMemorySaver())


def test_interrupt_inside_a_tool_pauses_the_tool_call_and_a_parent_command_is_not_an_error(store: Any) -> None:
    from langchain_core.tools import tool

    @tool
    def ask_human(question: str) -> str:
        """Ask a human."""
        return str(interrupt({"question": question}))

    graph = _tool_pause_graph(ask_human)
    cfg = {"configurable": {"thread_id": "tool-pause"}}

    def handoff(state: dict[str, Any]) -> Command[Any]:
        return Command(graph=Command.PARENT, goto="after", update={"log": ["handoff"]})

    inner = StateGraph(Log)
    inner.add_node("handoff", handoff)
    inner.add_edge(START, "handoff")
    outer = StateGraph(Log)
    outer.add_node("sub", inner.compile(name="inner"))
    outer.add_node("after", lambda state: {"log": ["after"]})
    outer.add_edge(START, "sub")
    with openprogram.session_context(store=store) as h:
        graph.invoke({"messages": [("user", "hi")]}, cfg)
        graph.invoke(Command(resume="yes"), cfg)
        assert outer.compile().invoke({"log": []})["log"] == ["handoff", "after"]
    records = calls(store, h.session_id)
    paused, resumed = [c for c in records if c.kind == "tool" and c.name == "ask_human"]
    assert (paused.status, paused.error) == ("interrupted", None)  # was "error": GraphInterrupt
    assert resumed.status == "ok" and resumed.output == "yes"
    assert one(records, "inner", "graph").status == "ok"  # was "error": ParentCommand
    assert {c.status for c in records if c.kind != "tool"} <= {"ok", "interrupted"}


def test_interrupt_inside_an_openprogram_tool_under_a_langchain_tool_is_a_pause(store: Any) -> None:
    from langchain_core.tools import tool

    @tool
    @openprogram.tool
    def confirm(question: str) -> str:
        """Ask a human to confirm."""
        return str(interrupt({"question": question}))

    graph = _tool_pause_graph(confirm)
    cfg = {"configurable": {"thread_id": "openprogram-tool-pause"}}
    with openprogram.session_context(store=store) as h:
        graph.invoke({"messages": [("user", "hi")]}, cfg)
        graph.invoke(Command(resume="confirmed"), cfg)
    paused, resumed = [c for c in calls(store, h.session_id) if c.kind == "tool"]  # recorded once each: by itself
    assert (paused.name, paused.status, paused.error) == ("confirm", "interrupted", None)  # was "error"
    assert (resumed.status, resumed.output) == ("ok", "confirmed")


def test_an_entrypoint_resumed_after_an_interrupt_records_its_return_value(store: Any) -> None:
    from langgraph.func import entrypoint

    @entrypoint(checkpointer=InMemorySaver())
    def approve(draft: str) -> str:
        return f"{draft}: {interrupt('approve?')}"

    cfg = {"configurable": {"thread_id": "entrypoint-resume"}}
    with openprogram.session_context(store=store) as h:
        approve.invoke("plan", cfg)
        assert approve.invoke(Command(resume="yes"), cfg) == "plan: yes"
    paused, resumed = [c for c in calls(store, h.session_id) if c.kind == "node"]
    assert (paused.status, paused.output) == ("interrupted", None)
    assert (resumed.status, resumed.output) == ("ok", "plan: yes")  # not {"__resume__": ..., "__end__": ...}


@pytest.mark.parametrize("when", ["before", "after"])
def test_a_static_breakpoint_records_an_interrupt_and_the_run_continues(store: Any, when: str) -> None:
    g = StateGraph(Log)
    for name in ("a", "b"):
        g.add_node(name, lambda state, name=name: {"log": [name]})
    g.add_edge(START, "a")
    g.add_edge("a", "b")
    g.add_edge("b", END)
    graph = g.compile(checkpointer=InMemorySaver(), **{f"interrupt_{when}": ["b"]})
    cfg = {"configurable": {"thread_id": f"breakpoint-{when}"}}
    with openprogram.session_context(store=store) as h:
        graph.invoke({"log": []}, cfg)
        assert graph.invoke(None, cfg)["log"] == ["a", "b"]
    records = calls(store, h.session_id)
    paused, continued = by_kind(records, "graph")
    assert (paused.status, continued.status) == ("interrupted", "ok")
    stop = one(records, "b", "interrupt")
    assert (stop.parent_id, stop.status, stop.inputs) == (paused.call_id, "interrupted", {"breakpoint": when})
    ran = [(n.name, n.parent_id) for n in by_kind(records, "node")]
    assert ran == [("a", paused.call_id), ("b", paused.call_id if when == "after" else continued.call_id)]


@pytest.mark.parametrize("when", ["before", "after"])
async def test_a_breakpoint_among_parallel_nodes_is_named_after_its_own_nodes(store: Any, when: str) -> None:
    g = StateGraph(Log)
    for name in ("a", "b", "c"):
        g.add_node(name, lambda state, name=name: {"log": [name]})
    g.add_edge(START, "a")
    g.add_edge(START, "b")  # a and b run in one step
    g.add_edge("a", "c")
    graph = g.compile(checkpointer=InMemorySaver(), **{f"interrupt_{when}": ["a"]})
    cfg = {"configurable": {"thread_id": f"parallel-breakpoint-{when}"}}
    async with openprogram.session_context(store=store) as h:
        await graph.ainvoke({"log": []}, cfg)
        assert sorted((await graph.ainvoke(None, cfg))["log"]) == ["a", "b", "c"]
    stop = one(calls(store, h.session_id), "a", "interrupt")  # not "a,b"
    assert stop.inputs == {"breakpoint": when}

"""Tool schemas and injection with the adapter on; instrument/uninstrument; errors never break the graph."""

from __future__ import annotations

import logging
from typing import Annotated, Any

import openprogram
import openprogram._instrumentation
import openprogram._runtime
import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.runnables import Runnable, RunnableConfig
from langchain_core.tools import BaseTool, tool
from langgraph.prebuilt import InjectedState, ToolRuntime
from langgraph.pregel import Pregel, _loop, _runner
from openprogram.integrations.langgraph import adapter

from tests.integrations.langgraph.fakes import (
    Log,
    agent_graph,
    chain_graph,
    one_tool_call_graph,
    scripted_model,
    tool_calls,
)
from tests.support import by_kind, calls, one


@openprogram.tool
def lookup(topic: str, _session: Any = None) -> str:
    """Look a topic up."""
    assert _session is openprogram.get_current_session()
    return f"{topic}@{_session.session_id}"


lookup_tool = tool(lookup)


@tool
def with_state(question: str, state: Annotated[dict[str, Any], InjectedState]) -> str:
    """Answer using the graph state."""
    return f"{question}:{len(state['messages'])}"


@tool
def with_runtime(question: str, runtime: ToolRuntime) -> str:
    """Answer using the tool runtime."""
    return f"{question}:{runtime.tool_call_id}:{runtime.config['configurable'].get('thread_id')}"


@tool
def with_config(question: str, config: RunnableConfig) -> str:
    """Answer using the runnable config."""
    return f"{question}:{config['configurable'].get('thread_id')}"


@tool
@openprogram.tool
def op_with_state(question: str, state: Annotated[dict[str, Any], InjectedState]) -> str:
    """An openprogram tool that also wants the graph state."""
    return f"op:{question}:{len(state['messages'])}"


@tool
@openprogram.tool
async def op_with_runtime(question: str, runtime: ToolRuntime) -> str:
    """An async openprogram tool that also wants the tool runtime."""
    return f"op:{question}:{runtime.tool_call_id}"


def _schema_properties(schema: Any) -> set[str]:
    if isinstance(schema, dict):
        return set(schema.get("properties", {}))
    return set(schema.model_json_schema().get("properties", {}))


def test_session_parameter_never_reaches_langchain_schemas() -> None:
    assert _schema_properties(lookup_tool.args_schema) == {"topic"}
    assert _schema_properties(lookup_tool.tool_call_schema) == {"topic"}
    assert set(lookup_tool.args) == {"topic"}


def test_openprogram_tool_in_a_tool_node_gets_the_session_and_is_recorded_once(store: Any) -> None:
    model = scripted_model(tool_calls(("lookup", {"topic": "x", "_session": "sent by a model"})), AIMessage("ok"))
    graph = agent_graph(model, [lookup_tool])
    with openprogram.session_context(store=store) as h:
        result = graph.invoke({"messages": [HumanMessage("go")]})
    contents = [m.content for m in result["messages"] if isinstance(m, ToolMessage)]
    assert contents == [f"x@{h.session_id}"]
    records = calls(store, h.session_id)
    tool_call = one(records, "lookup", "tool")
    assert tool_call.parent_id == one(records, "tools", "node").call_id


def test_injection_still_works_through_tool_node(store: Any) -> None:
    model = scripted_model(
        tool_calls(
            ("with_state", {"question": "s"}),
            ("with_runtime", {"question": "r"}),
            ("with_config", {"question": "c"}),
            ("op_with_state", {"question": "o"}),
        ),
        AIMessage("ok"),
    )
    graph = agent_graph(model, [with_state, with_runtime, with_config, op_with_state], checkpointer=_saver())
    config = {"configurable": {"thread_id": "inject"}}
    with openprogram.session_context(store=store) as h:
        result = graph.invoke({"messages": [HumanMessage("go")]}, config)
    contents = sorted(m.content for m in result["messages"] if isinstance(m, ToolMessage))
    assert contents == sorted(["s:2", "r:call-1:inject", "c:inject", "op:o:2"])
    records = calls(store, h.session_id)
    tools = {c.name: c for c in by_kind(records, "tool")}
    assert set(tools) == {"with_state", "with_runtime", "with_config", "op_with_state"}
    assert "state" not in tools["with_state"].inputs  # injected plumbing is not captured
    assert tools["with_state"].inputs == {"question": "s"}
    assert tools["op_with_state"].inputs == {"question": "o"}  # nor by an @openprogram.tool function


async def test_injected_arguments_of_an_async_openprogram_tool_are_not_captured(store: Any) -> None:
    model = scripted_model(
        tool_calls(("op_with_runtime", {"question": "a"}), ("op_with_state", {"question": "b"})), AIMessage("ok")
    )
    graph = agent_graph(model, [op_with_runtime, op_with_state])
    async with openprogram.session_context(store=store) as h:
        result = await graph.ainvoke({"messages": [HumanMessage("go")]})
    assert sorted(m.content for m in result["messages"] if isinstance(m, ToolMessage)) == ["op:a:call-0", "op:b:2"]
    tools = {c.name: c for c in by_kind(calls(store, h.session_id), "tool")}
    assert (tools["op_with_runtime"].inputs, tools["op_with_state"].inputs) == ({"question": "a"}, {"question": "b"})


def _saver() -> Any:
    from langgraph.checkpoint.memory import InMemorySaver

    return InMemorySaver()


PATCHED = [
    (Pregel, "stream"),
    (Pregel, "astream"),
    (_runner, "run_with_retry"),
    (_runner, "arun_with_retry"),
    (BaseTool, "run"),
    (BaseTool, "arun"),
    (_loop.SyncPregelLoop, "__enter__"),
    (_loop.AsyncPregelLoop, "__aenter__"),
]
LAZY = ("astream_events", "astream_log")  # Pregel's own in newer langgraph, Runnable's in older


def _current() -> list[Any]:
    return [vars(owner)[name] for owner, name in PATCHED]


def test_uninstrument_restores_every_attribute_exactly() -> None:
    wrapped = _current()
    lazy = {name: vars(Pregel)[name].__openprogram_original__ for name in LAZY}
    openprogram.uninstrument()
    for name, original in lazy.items():
        if original is getattr(Runnable, name):  # inherited: the wrapper is removed, not replaced
            assert name not in vars(Pregel)
        else:
            assert vars(Pregel)[name] is original
    originals = _current()
    assert all(getattr(o, "__openprogram_original__", None) is None for o in originals)
    assert all(getattr(w, "__openprogram_original__", None) is o for w, o in zip(wrapped, originals, strict=True))
    assert _runner.run_with_retry is vars(__import__("langgraph.pregel._retry", fromlist=["x"]))["run_with_retry"]
    openprogram.uninstrument()  # idempotent
    assert _current() == originals


def test_instrument_twice_wraps_once(store: Any) -> None:
    assert vars(Pregel)["astream_log"].__openprogram_original__ is Runnable.astream_log
    before = _current()
    assert openprogram.instrument("langgraph") == {"langgraph"}
    assert openprogram.instrument() >= {"langgraph"}
    assert _current() == before
    with openprogram.session_context(store=store) as h:
        chain_graph(("only",)).invoke({"log": []})
    records = calls(store, h.session_id)
    assert len(by_kind(records, "graph")) == 1 and len(by_kind(records, "node")) == 1


def test_uninstrumented_graph_records_nothing(store: Any) -> None:
    openprogram.uninstrument()
    with openprogram.session_context(store=store) as h:
        assert chain_graph(("a",)).invoke({"log": []})["log"] == ["a"]
    assert [c.kind for c in calls(store, h.session_id)] == ["turn"]


class Boom(Exception):
    pass


def test_a_nodes_exception_propagates_unchanged_and_its_call_is_error(store: Any) -> None:
    raised = Boom("node failed")

    def bad(state: Log) -> dict[str, Any]:
        raise raised

    from langgraph.graph import START, StateGraph

    g = StateGraph(Log)
    g.add_node("bad", bad)
    g.add_edge(START, "bad")
    graph = g.compile()
    with openprogram.session_context(store=store) as h, pytest.raises(Boom) as info:
        graph.invoke({"log": []})
    assert info.value is raised
    records = calls(store, h.session_id)
    node = one(records, "bad", "node")
    assert node.status == "error" and "node failed" in (node.error or "")
    assert one(records, "LangGraph", "graph").status == "error"


async def test_an_async_nodes_exception_propagates_unchanged(store: Any) -> None:
    raised = Boom("async node failed")

    async def bad(state: Log) -> dict[str, Any]:
        raise raised

    from langgraph.graph import START, StateGraph

    g = StateGraph(Log)
    g.add_node("bad", bad)
    g.add_edge(START, "bad")
    with pytest.raises(Boom) as info:
        async with openprogram.session_context(store=store):
            await g.compile().ainvoke({"log": []})
    assert info.value is raised


def test_a_tools_exception_is_recorded_and_tool_node_handles_it(store: Any) -> None:
    @tool
    def broken(x: int) -> int:
        """Always fails."""
        raise ValueError("broken tool")

    model = scripted_model(tool_calls(("broken", {"x": 1})), AIMessage("ok"))
    graph = agent_graph(model, [broken], handle_tool_errors=True)
    with openprogram.session_context(store=store) as h:
        graph.invoke({"messages": [HumanMessage("go")]})
    tool_call = one(calls(store, h.session_id), "broken", "tool")
    assert tool_call.status == "error" and "broken tool" in (tool_call.error or "")


def test_instrumentation_errors_are_logged_never_raised(
    store: Any, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def failing(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("bug in the adapter")

    monkeypatch.setattr(adapter, "_node_output", failing)
    monkeypatch.setattr(adapter, "_GraphStart", failing)
    monkeypatch.setattr(adapter, "_tool_inputs", failing)
    openprogram._runtime.forget_logged()  # each failure is logged once per process
    caplog.set_level(logging.ERROR, logger="openprogram")
    model = scripted_model(tool_calls(("add", {"a": 1, "b": 2})), AIMessage("done"))
    from tests.integrations.langgraph.fakes import add

    with openprogram.session_context(store=store) as h:
        result = agent_graph(model, [add]).invoke({"messages": [HumanMessage("go")]})
    assert result["messages"][-1].content == "done"
    assert "bug in the adapter" in caplog.text
    records = calls(store, h.session_id)
    assert by_kind(records, "graph") == []  # that part failed: the run went on unrecorded
    assert {n.status for n in by_kind(records, "node")} == {"ok"}  # ended without their output


def test_missing_or_old_langgraph_is_reported_with_the_install_hint(monkeypatch: pytest.MonkeyPatch) -> None:
    hint = r"; pip install -e '\.\[langgraph\]' in openprogram's checkout"
    with monkeypatch.context() as patched:
        # The floor is read from openprogram's extras metadata: raise it past the installed langgraph.
        patched.setattr(
            openprogram._instrumentation.integration, "lowest_supported", lambda distribution, extra: "99.0"
        )
        with pytest.raises(openprogram.DidNotEnable, match=r"older than the lowest supported, 99\.0" + hint):
            adapter.LangGraphIntegration().arm()
        openprogram.uninstrument()
        with pytest.raises(openprogram.DidNotEnable, match=hint):
            openprogram.instrument("langgraph")
    monkeypatch.setattr(adapter.LangGraphIntegration, "distribution", "langgraph-not-installed")
    with pytest.raises(openprogram.DidNotEnable, match=r"langgraph-not-installed is not installed" + hint):
        adapter.LangGraphIntegration().arm()


@openprogram.tool
def profile(user_id: str, fields: list[str]) -> str:
    return f"{user_id}:{','.join(fields)}"


@tool
@openprogram.tool
def answer_for(question: str, user_id: Annotated[str, InjectedState("user_id")]) -> str:
    """Answer for the current user (an injected scalar)."""
    return f"{question}/{profile(user_id, ['name'])}"


def test_a_tool_called_inside_an_injected_tool_keeps_its_own_arguments(store: Any) -> None:
    from langgraph.graph import MessagesState

    class State(MessagesState):
        user_id: str

    graph = one_tool_call_graph(answer_for, {"question": "q"}, State)
    with openprogram.session_context(store=store) as h:
        graph.invoke({"messages": [HumanMessage("hi")], "user_id": "u-42"})
    # The injected user_id is a scalar: the compiled path records it. The tool called inside
    # has a user_id of its own, which it keeps (the hint for answer_for does not reach it).
    assert one(calls(store, h.session_id), "profile", "tool").inputs == {"user_id": "u-42", "fields": ["name"]}

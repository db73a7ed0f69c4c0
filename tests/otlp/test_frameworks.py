"""Sessions the framework adapters recorded (their offline demos), exported: every call a span, named per GenAI."""

from __future__ import annotations

import importlib
from collections.abc import Callable

import openprogram

from tests.support import calls

from .conftest import CliRun, by_name, tree_is_whole
from .otlp_receiver import ReceivedSpan, Receiver

# The GenAI operation of each kind (DESIGN.md); any other kind is named after itself.
OPERATIONS = {
    "llm": "chat",
    "agent": "invoke_agent",
    "tool": "execute_tool",
    "graph": "invoke_workflow",
    "crew": "invoke_workflow",
    "flow": "invoke_workflow",
}
SPAN_KINDS = {"llm": "LLM", "agent": "AGENT", "tool": "TOOL"}


def demo(module: str) -> Callable[[], None]:
    """An adapter's offline demo (``integrations/<framework>/demo.py``)."""
    run_demo = importlib.import_module(f"openprogram.integrations.{module}").run_demo
    return lambda: run_demo(lambda line: None)


def run_crew() -> None:
    """The CrewAI demo's crew (an async task, a delegation, a tool) with its scripted LLMs, without the demo's flow
    (a Flow imports CrewAI's memory store, 20 s here)."""
    from crewai import Agent, Crew, Task
    from crewai.tools import tool
    from openprogram.integrations.crewai.fakes import scripted_llm

    @tool("lookup")
    def lookup(topic: str) -> str:
        """Look a topic up in a tiny offline encyclopedia."""
        return {"crews": "a crew runs tasks with agents and tools"}.get(topic, f"nothing known about {topic}")

    writer_llm = scripted_llm([("lookup", {"topic": "crews"})], native=True, final="crews run tasks with agents")
    lead_llm = scripted_llm(
        [("delegate_work_to_coworker", {"task": "explain crews", "context": "one sentence", "coworker": "Writer"})],
        final="report: crews",
    )
    writer = Agent(
        role="Writer",
        goal="write short notes",
        backstory="offline",
        llm=writer_llm,
        tools=[lookup],
        allow_delegation=False,
    )
    lead = Agent(role="Lead", goal="coordinate", backstory="offline", llm=lead_llm, allow_delegation=True)
    notes = Task(description="note what crews are", expected_output="a note", agent=writer, async_execution=True)
    report = Task(description="write the report", expected_output="a report", agent=lead, context=[notes])
    Crew(name="demo crew", agents=[writer, lead], tasks=[notes, report], cache=False).kickoff()


def export_session(
    framework: str,
    run: Callable[[], None],
    instrument: Callable[..., set[str]],
    store_url: str,
    receiver: Receiver,
    export_cli: Callable[..., CliRun],
) -> tuple[list[openprogram.CallRecord], dict[str, ReceivedSpan]]:
    """Record ``run()`` in a session with the adapter on, export it; the calls and their spans by call id."""
    instrument(framework)
    with openprogram.session_context(store=store_url) as handle:
        run()
    recorded = calls(openprogram.open_store(store_url), handle.session_id)
    result = export_cli(handle.session_id, "--endpoint", receiver.url)
    assert result.code == 0, result.err
    spans = receiver.wait_for(len(recorded))
    assert len(spans) == len(recorded) and tree_is_whole(spans)
    by_call = {s.attributes["openprogram.call.id"]: s for s in spans}
    for call in recorded:
        span = by_call[call.call_id]
        operation = OPERATIONS.get(call.kind, call.kind)
        if call.kind == "function" and (call.attributes or {}).get("auto_invoked") is True:
            operation = "execute_tool"  # a kernel function the model asked for is a tool call
        target = (call.attributes or {}).get("model", call.name) if call.kind == "llm" else call.name
        assert span.name == f"{operation} {target}"
        assert span.attributes["gen_ai.operation.name"] == operation
        expected_kind = "TOOL" if operation == "execute_tool" else SPAN_KINDS.get(call.kind, "CHAIN")
        assert span.attributes["openinference.span.kind"] == expected_kind
        assert span.attributes["session.id"] == span.attributes["gen_ai.conversation.id"] == handle.session_id
        assert span.attributes.get("openprogram.framework") == call.framework
        assert span.attributes["openprogram.call.kind"] == call.kind
        if call.kind == "llm":
            usage = (call.attributes or {}).get("usage") or {}
            assert span.attributes["gen_ai.request.model"] == target
            assert span.attributes.get("gen_ai.usage.input_tokens") == usage.get("input_tokens")
            assert span.attributes.get("gen_ai.usage.output_tokens") == usage.get("output_tokens")
    return recorded, by_call


def names_of(by_call: dict[str, ReceivedSpan]) -> dict[str, list[ReceivedSpan]]:
    return by_name(list(by_call.values()))


def test_langgraph_session_exports_graphs_nodes_tools_and_chat_spans(
    instrument: Callable[..., set[str]], store_url: str, receiver: Receiver, export_cli: Callable[..., CliRun]
) -> None:
    recorded, by_call = export_session("langgraph", demo("langgraph.demo"), instrument, store_url, receiver, export_cli)

    names = names_of(by_call)
    assert {
        "invoke_workflow demo_agent",
        "node agent",
        "node tools",
        "node review",
        "execute_tool weather",
        "execute_tool population",
        "execute_tool note",
        "interrupt review",
    } <= set(names)
    assert len(names["invoke_workflow demo_agent"]) == 2  # the run that paused and the one that resumed it
    paused = [s for s in names["invoke_workflow demo_agent"] if s.status_code != 1]  # not ok
    assert [s.attributes.get("openprogram.call.interrupted") for s in paused] == [True]
    chats = [by_call[c.call_id] for c in recorded if c.kind == "llm"]
    assert chats, "the demo's chat model requests are recorded"
    agent_nodes = {s.span_id for s in names["node agent"]}
    for chat in chats:
        assert chat.attributes["openinference.span.kind"] == "LLM" and chat.parent_span_id in agent_nodes
        assert chat.attributes["llm.token_count.total"] > 0


def test_crewai_session_exports_crew_tasks_agents_tools_and_chat_spans(
    instrument: Callable[..., set[str]], store_url: str, receiver: Receiver, export_cli: Callable[..., CliRun]
) -> None:
    recorded, by_call = export_session("crewai", run_crew, instrument, store_url, receiver, export_cli)

    names = names_of(by_call)
    assert {
        "invoke_workflow demo crew",
        "task note what crews are",
        "task write the report",
        "invoke_agent Writer",
        "invoke_agent Lead",
        "execute_tool lookup",
        "execute_tool delegate_work_to_coworker",
    } <= set(names)
    assert {s.attributes["gen_ai.agent.name"] for s in names["invoke_agent Writer"]} == {"Writer"}
    assert all(s.attributes["openinference.span.kind"] == "AGENT" for s in names["invoke_agent Lead"])
    if any(c.kind == "llm" for c in recorded):
        agents = {s.span_id for name, spans in names.items() if name.startswith("invoke_agent") for s in spans}
        chats = [by_call[c.call_id] for c in recorded if c.kind == "llm"]
        assert all(chat.parent_span_id in agents for chat in chats)


def test_semantic_kernel_session_exports_agents_auto_invoked_functions_as_tools_and_chat_spans(
    instrument: Callable[..., set[str]], store_url: str, receiver: Receiver, export_cli: Callable[..., CliRun]
) -> None:
    recorded, by_call = export_session(
        "semantic_kernel", demo("semantic_kernel.demo"), instrument, store_url, receiver, export_cli
    )

    names = names_of(by_call)
    assert {
        "invoke_agent Planner",
        "invoke_agent Researcher",
        "invoke_agent Writer",
        "execute_tool travel.forecast",
        "execute_tool travel.trains",
        "execute_tool travel.hotels",
    } <= set(names)
    forecast = names["execute_tool travel.forecast"][0]
    assert forecast.attributes["openinference.span.kind"] == "TOOL"
    assert forecast.attributes["gen_ai.tool.name"] == "travel.forecast"
    assert forecast.attributes["gen_ai.tool.call.id"].startswith("call_")
    assert any(c.kind == "llm" for c in recorded), "Semantic Kernel chat requests are recorded"

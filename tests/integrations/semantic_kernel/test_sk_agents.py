"""Agents, group chats and orchestrations on InProcessRuntime, including sessions sharing one runtime."""

from __future__ import annotations

import asyncio
from typing import Any

import openprogram
import pytest
from openprogram.integrations.semantic_kernel.fakes import ScriptedChatService, tools_then_answer
from semantic_kernel import Kernel
from semantic_kernel.agents import AgentGroupChat, ChatCompletionAgent
from semantic_kernel.agents.strategies import TerminationStrategy
from semantic_kernel.connectors.ai.function_choice_behavior import FunctionChoiceBehavior

from tests.integrations.semantic_kernel.plugins import Weather, named, otel_errors_alone_and_instrumented
from tests.support import calls, one

pytest.importorskip("google.protobuf", reason="SK orchestrations need protobuf")
from semantic_kernel.agents.orchestration.concurrent import ConcurrentOrchestration
from semantic_kernel.agents.orchestration.group_chat import GroupChatOrchestration, RoundRobinGroupChatManager
from semantic_kernel.agents.orchestration.handoffs import HandoffOrchestration, OrchestrationHandoffs
from semantic_kernel.agents.orchestration.sequential import SequentialOrchestration
from semantic_kernel.agents.runtime import InProcessRuntime


def agent(name: str, city: str, answer: str | None = None, plugin: Weather | None = None) -> ChatCompletionAgent:
    calls_ = [("weather", "forecast", {"city": city}), ("weather", "temperature", {"city": city})]
    service = ScriptedChatService(default_step=tools_then_answer(calls_, answer or f"{name} says {city} is fine"))
    kernel = Kernel()
    kernel.add_plugin(plugin or Weather(), "weather")
    return ChatCompletionAgent(
        name=name,
        description=f"{name} knows the weather",
        instructions=f"You are {name}.",
        service=service,
        kernel=kernel,
        function_choice_behavior=FunctionChoiceBehavior.Auto(),
    )


def check_agent_tree(records: list[Any], agent_name: str, city: str) -> Any:
    """agent -> its model's request, both functions of that model turn, the model again (siblings, in that order)."""
    agent_call = one(records, agent_name)
    assert agent_call.kind == "agent" and agent_call.status == "ok"
    children = [r for r in records if r.parent_id == agent_call.call_id]
    assert [r.kind for r in children] == ["llm", "function", "function", "llm"], [(r.kind, r.name) for r in children]
    first, *functions, second = children
    assert sorted((f.name, f.inputs["city"]) for f in functions) == [
        ("weather.forecast", city),
        ("weather.temperature", city),
    ]
    assert {t["name"] for t in first.output["tool_calls"]} == {"weather-forecast", "weather-temperature"}
    assert (
        first.ended_at <= min(f.started_at for f in functions)
        and max(f.ended_at for f in functions) <= second.started_at
    )
    assert second.output["content"] and second.attributes["usage"]["input_tokens"] > 0
    return agent_call


async def test_chat_completion_agent_get_response_invoke_and_stream(store: Any, instrumented: None) -> None:
    async with openprogram.session_context(store=store) as h:
        response = await agent("Forecaster", "Oslo").get_response(messages="weather?")
        items = [item async for item in agent("Invoker", "Rome").invoke(messages="weather?")]
        chunks = [item async for item in agent("Streamer", "Lima").invoke_stream(messages="weather?")]
    assert "Oslo is fine" in str(response.message)
    assert items and chunks
    records = calls(store, h.session_id)
    for name, city in (("Forecaster", "Oslo"), ("Invoker", "Rome"), ("Streamer", "Lima")):
        call = check_agent_tree(records, name, city)
        assert call.parent_id == records[0].call_id  # the turn
    assert one(records, "Forecaster").inputs == {"messages": "weather?"}
    assert "Oslo is fine" in one(records, "Forecaster").output[0]


async def test_agent_built_before_instrument(store: Any) -> None:
    early = agent("Early", "Bern")
    openprogram.instrument("semantic_kernel")
    try:
        async with openprogram.session_context(store=store) as h:
            await early.get_response(messages="weather?")
    finally:
        openprogram.uninstrument("semantic_kernel")
    check_agent_tree(calls(store, h.session_id), "Early", "Bern")


class _AfterTwo(TerminationStrategy):  # type: ignore[misc]
    async def should_agent_terminate(self, agent: Any, history: Any) -> bool:
        return len([m for m in history if m.role.value == "assistant" and m.content]) >= 2


@pytest.mark.parametrize("streaming", [False, True], ids=["invoke", "invoke_stream"])
async def test_agent_group_chat(store: Any, instrumented: None, streaming: bool) -> None:
    first, second = agent("First", "Oslo"), agent("Second", "Rome")
    chat = AgentGroupChat(agents=[first, second], termination_strategy=_AfterTwo(agents=[second], maximum_iterations=4))
    async with openprogram.session_context(store=store) as h:
        await chat.add_chat_message("weather?")
        messages = [m async for m in (chat.invoke_stream() if streaming else chat.invoke())]
    assert messages
    records = calls(store, h.session_id)
    group = one(records, "AgentGroupChat")
    assert group.kind == "call" and group.status == "ok"
    functions = [r for r in records if r.kind == "function"]
    assert {f.inputs["city"] for f in functions} == {"Oslo", "Rome"}
    # every function is under the group chat
    by_id = {r.call_id: r for r in records}
    for f in functions:
        node = f
        while node.parent_id in by_id and node.call_id != group.call_id:
            node = by_id[node.parent_id]
        assert node.call_id == group.call_id


async def test_group_chat_stream_closed_early_interrupts_its_agents_model_request_at_once(
    store: Any, instrumented: None
) -> None:
    first = agent("First", "Oslo", answer="one two three four")
    chat = AgentGroupChat(agents=[first], termination_strategy=_AfterTwo(agents=[first], maximum_iterations=2))
    async with openprogram.session_context(store=store) as h:
        await chat.add_chat_message("weather?")
        stream = chat.invoke_stream()
        async for _ in stream:
            break
        await stream.aclose()
        openprogram.flush()
        records = store.list_calls(h.session_id)
    assert one(records, "AgentGroupChat").status == "interrupted"
    # the tool-calling round had ended; the answer's round was streaming when the consumer left
    assert [r.status for r in records if r.kind == "llm"] == ["ok", "interrupted"]


def _descends_from(records: list[Any], call: Any, ancestor_id: str) -> bool:
    by_id = {r.call_id: r for r in records}
    node = call
    while node is not None:
        if node.call_id == ancestor_id:
            return True
        node = by_id.get(node.parent_id)
    return False


ORCHESTRATIONS = ["sequential", "concurrent", "group_chat", "handoff"]


def orchestration(kind: str, tag: str, plugin: Weather) -> Any:
    a = agent(f"{tag}_A", f"{tag}-a", plugin=plugin)
    b = agent(f"{tag}_B", f"{tag}-b", plugin=plugin)
    if kind == "sequential":
        return SequentialOrchestration(members=[a, b])
    if kind == "concurrent":
        return ConcurrentOrchestration(members=[a, b])
    if kind == "group_chat":
        return GroupChatOrchestration(members=[a, b], manager=RoundRobinGroupChatManager(max_rounds=2))
    # handoff: A calls the handoff function, B does the work and answers
    a.service = ScriptedChatService(default_step=tools_then_answer([("Handoff", f"transfer_to_{tag}_B", {})], "x"))
    return HandoffOrchestration(members=[a, b], handoffs=OrchestrationHandoffs().add(a, b, "B does weather"))


@pytest.mark.parametrize("kind", ORCHESTRATIONS)
async def test_orchestration_functions_belong_to_the_session(store: Any, instrumented: None, kind: str) -> None:
    runtime = InProcessRuntime()
    runtime.start()  # outside any session: SK's handler tasks start from this context
    try:
        plugin = Weather()
        async with openprogram.session_context(store=store) as h:
            result = await orchestration(kind, "s", plugin).invoke(task="weather?", runtime=runtime)
            await asyncio.wait_for(result.get(), 20)
        await asyncio.wait_for(runtime.stop_when_idle(), 20)
    finally:
        await runtime.close() if hasattr(runtime, "close") else None
    records = calls(store, h.session_id)
    orch = next(r for r in records if r.kind == "call" and r.name.endswith("Orchestration"))
    functions = [r for r in records if r.kind == "function" and r.name.startswith("weather.")]
    assert functions, [(r.kind, r.name) for r in records]
    assert all(_descends_from(records, f, orch.call_id) for f in functions)
    assert {s[1] for s in plugin.seen} == {h.session_id}
    agents = [r for r in records if r.kind == "agent"]
    assert agents and all(a.parent_id == orch.call_id or _descends_from(records, a, orch.call_id) for a in agents)
    if kind == "handoff":
        assert named(records, "Handoff.transfer_to_s_B")
    await asyncio.sleep(0)
    assert one(calls(store, h.session_id), orch.name).status == "ok"


@pytest.mark.parametrize("kind", ORCHESTRATIONS)
async def test_two_sessions_sharing_one_runtime_do_not_leak(store: Any, instrumented: None, kind: str) -> None:
    runtime = InProcessRuntime()
    plugins = {"one": Weather(), "two": Weather()}
    handles: dict[str, Any] = {}

    async def run(tag: str) -> None:
        async with openprogram.session_context(store=store) as h:
            handles[tag] = h
            result = await orchestration(kind, tag, plugins[tag]).invoke(task="weather?", runtime=runtime)
            await asyncio.wait_for(result.get(), 20)

    async with openprogram.session_context(store=store) as starter:
        runtime.start()  # started inside a third session: SK alone would run every handler there
    try:
        await asyncio.gather(run("one"), run("two"))
        await asyncio.wait_for(runtime.stop_when_idle(), 20)
    finally:
        await runtime.close() if hasattr(runtime, "close") else None
    for tag, other in (("one", "two"), ("two", "one")):
        records = calls(store, handles[tag].session_id)
        cities = {r.inputs["city"] for r in records if r.kind == "function" and r.name.startswith("weather.")}
        assert cities and all(c.startswith(f"{tag}-") for c in cities), cities
        assert not [r for r in records if other in r.name]
        assert {s[1] for s in plugins[tag].seen} == {handles[tag].session_id}
    assert [r.kind for r in calls(store, starter.session_id)] == ["turn"]


async def test_agent_stream_closed_early_is_interrupted_with_its_model_request(store: Any, instrumented: None) -> None:
    async with openprogram.session_context(store=store) as h:
        stream = agent("Quitter", "Kyiv", answer="one two three four").invoke_stream(messages="weather?")
        async for _ in stream:
            break
        await stream.aclose()
        assert openprogram.current_call_id() == h.root_call_id  # the consumer's context is restored
        openprogram.flush()
        # at once: no loop turn, no garbage collection (SK leaves its chat stream open)
        records = store.list_calls(h.session_id)
        assert one(records, "Quitter").status == "interrupted"
        # The round streaming when the consumer left: SK 1.45's agent yields the tool-calling round's
        # usage chunk (the first item), SK 1.30's only the answer's text.
        statuses = [r.status for r in records if r.kind == "llm"]
        assert statuses in (["interrupted"], ["ok", "interrupted"])


async def test_agent_stream_closed_early_adds_no_otel_errors_to_sks_own(
    store: Any, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    # SK's agent leaves its chat stream (which holds the auto-function-invocation span's context) to
    # the loop's finaliser, and OpenTelemetry logs "Failed to detach context" then: SK's own. The
    # adapter closes SK's agent stream, whose diagnostics span is attached in the consumer's context:
    # that close must stay there and add nothing. SK 1.30 always opens that span; newer releases only
    # with their diagnostics on (the env var, read at import), so they are switched on here.
    from semantic_kernel.utils.telemetry.agent_diagnostics import decorators as agent_diagnostics

    settings = getattr(agent_diagnostics, "MODEL_DIAGNOSTICS_SETTINGS", None)
    if settings is not None:
        monkeypatch.setattr(settings, "enable_otel_diagnostics", True)

    async def run() -> None:
        stream = agent("Quitter", "Kyiv", answer="one two three four").invoke_stream(messages="weather?")
        async for _ in stream:
            break
        await stream.aclose()

    sk_alone, with_openprogram, session_id = await otel_errors_alone_and_instrumented(caplog, store, run)
    assert len(with_openprogram) <= len(sk_alone), (with_openprogram, sk_alone)  # fewer would be fine
    assert one(calls(store, session_id), "Quitter").status == "interrupted"

"""Each tool the model calls is one ``tool`` call under the run, with the session visible in its body."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import openprogram
import pytest
from openprogram.stores import Store
from pydantic_ai import Agent, ApprovalRequired, DeferredToolRequests, DeferredToolResults, ModelRetry, RunContext
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.models.test import TestModel
from pydantic_ai.toolsets import FunctionToolset

from tests.integrations.pydantic_ai.fakes import scripted
from tests.integrations.pydantic_ai.helpers import parent_of
from tests.support import attributes, by_kind, calls, one, tree

pytestmark = pytest.mark.usefixtures("instrumented")


class Seen:
    """What a tool body saw: its session and the call current in it."""

    def __init__(self) -> None:
        self.sessions: list[str | None] = []
        self.calls: list[str | None] = []
        self.threads: list[str] = []

    def note(self) -> None:
        handle = openprogram.get_current_session()
        self.sessions.append(handle.session_id if handle else None)
        self.calls.append(openprogram.current_call_id())
        self.threads.append(threading.current_thread().name)


def test_sync_and_async_tools_run_under_their_own_call_with_the_session_visible(store: Store) -> None:
    seen = Seen()
    agent = Agent(scripted([[("sync_tool", {"x": 1})], [("async_tool", {"x": 2})]]), name="tools")

    @agent.tool_plain
    def sync_tool(x: int) -> int:
        seen.note()
        return x * 10

    @agent.tool
    async def async_tool(ctx: RunContext[None], x: int) -> int:
        await asyncio.sleep(0)
        seen.note()
        return x * 10

    with openprogram.session_context(store=store) as h:
        agent.run_sync("go")
    records = calls(store, h.session_id)
    sync_call, async_call = one(records, "sync_tool", "tool"), one(records, "async_tool", "tool")
    assert seen.sessions == [h.session_id, h.session_id]
    assert seen.calls == [sync_call.call_id, async_call.call_id]
    assert seen.threads[0] != threading.main_thread().name  # Pydantic AI runs a sync tool in a worker thread
    for call, x in ((sync_call, 1), (async_call, 2)):
        assert parent_of(records, call) == one(records, "tools", "agent")
        assert (call.framework, call.status, call.inputs, call.output) == ("pydantic_ai", "ok", {"x": x}, x * 10)
    assert attributes(sync_call) == {"tool_call_id": "call-0-0"}


def test_parallel_tool_calls_are_each_their_own_call_under_the_run(store: Store) -> None:
    seen: dict[str, str | None] = {}
    both_started = asyncio.Event()
    agent = Agent(scripted([[("first", {}), ("second", {})]]), name="parallel")

    async def meet(name: str) -> str:
        seen[name] = openprogram.current_call_id()
        if len(seen) == 2:
            both_started.set()
        await asyncio.wait_for(both_started.wait(), 5)  # each waits for the other: they overlap
        assert openprogram.current_call_id() == seen[name]
        return name

    @agent.tool_plain
    async def first() -> str:
        return await meet("first")

    @agent.tool_plain
    async def second() -> str:
        return await meet("second")

    with openprogram.session_context(store=store) as h:
        agent.run_sync("go")
    records = calls(store, h.session_id)
    run = one(records, "parallel", "agent")
    for name in ("first", "second"):
        call = one(records, name, "tool")
        assert (seen[name], parent_of(records, call), call.status) == (call.call_id, run, "ok")


def test_a_tool_asking_to_retry_is_a_failed_attempt_and_then_a_retried_call(store: Store) -> None:
    attempts: list[int] = []
    agent = Agent(scripted([[("flaky", {"n": 1})], [("flaky", {"n": 2})]]), name="retrying")

    @agent.tool(retries=2)
    def flaky(ctx: RunContext[None], n: int) -> str:
        attempts.append(ctx.retry)
        if n == 1:
            raise ModelRetry("try a bigger n")
        return "fine"

    with openprogram.session_context(store=store) as h:
        assert agent.run_sync("go").output == "done"
    failed, retried = by_kind(calls(store, h.session_id), "tool")
    assert attempts == [0, 1]
    assert (failed.status, retried.status) == ("error", "ok")
    assert "try a bigger n" in (failed.error or "")
    assert attributes(failed) == {"tool_call_id": "call-0-0"}
    assert attributes(retried) == {"tool_call_id": "call-1-0", "retry": 1}


def test_arguments_failing_validation_are_a_failed_tool_call_that_never_ran(store: Store) -> None:
    ran: list[int] = []
    agent = Agent(scripted([[("square", {"n": "not a number"})], [("square", {"n": 3})]]), name="validating")

    @agent.tool_plain
    def square(n: int) -> int:
        ran.append(n)
        return n * n

    with openprogram.session_context(store=store) as h:
        agent.run_sync("go")
    records = calls(store, h.session_id)
    invalid, valid = by_kind(records, "tool")
    assert ran == [3]
    assert (invalid.status, invalid.inputs, attributes(invalid)) == (
        "error",
        {"n": "not a number"},
        {"tool_call_id": "call-0-0", "executed": False},
    )
    assert "ValidationError" in (invalid.error or "")
    assert (valid.status, valid.output, attributes(valid)["retry"]) == ("ok", 9, 1)
    assert parent_of(records, invalid) == one(records, "validating", "agent")


def test_a_tools_own_exception_reaches_the_caller_unchanged(store: Store) -> None:
    raised = KeyError("no such key")
    agent = Agent(scripted([[("boom", {})]]), name="failing")

    @agent.tool_plain
    def boom() -> str:
        raise raised

    with openprogram.session_context(store=store) as h, pytest.raises(KeyError) as caught:
        agent.run_sync("go")
    assert caught.value is raised
    records = calls(store, h.session_id)
    assert (one(records, "boom", "tool").status, one(records, "failing", "agent").status) == ("error", "error")


@openprogram.tool
def lookup(city: str) -> str:
    """Look a city's weather up."""
    handle = openprogram.get_current_session()
    return f"{city}: sunny ({handle.session_id if handle else None})"


@openprogram.tool
def greet(ctx: RunContext[str], name: str) -> str:
    """Greet someone, in the style the run's dependencies give."""
    return f"{ctx.deps} {name}"


def test_an_openprogram_tool_has_no_session_in_its_schema_gets_its_run_context_and_records_once(
    store: Store,
) -> None:
    schemas: dict[str, Any] = {}

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        schemas.update({tool.name: tool.parameters_json_schema for tool in info.function_tools})
        if len(messages) == 1:
            return ModelResponse(
                parts=[
                    ToolCallPart("lookup", {"city": "Oslo"}, tool_call_id="a"),
                    ToolCallPart("greet", {"name": "Ada"}, tool_call_id="b"),
                ]
            )
        return ModelResponse(parts=[TextPart("done")])

    agent = Agent(FunctionModel(respond), deps_type=str, name="schemas")
    agent.tool_plain(lookup)
    agent.tool(greet)
    with openprogram.session_context(store=store) as h:
        result = agent.run_sync("go", deps="Hello")
    returned = {p.tool_name: p.content for m in result.all_messages() for p in m.parts if p.part_kind == "tool-return"}
    assert returned == {"lookup": f"Oslo: sunny ({h.session_id})", "greet": "Hello Ada"}
    assert set(schemas["lookup"]["properties"]) == {"city"} and set(schemas["greet"]["properties"]) == {"name"}
    records = calls(store, h.session_id)
    tools = by_kind(records, "tool")
    assert sorted(t.name for t in tools) == ["greet", "lookup"]  # each recorded once, by @openprogram.tool
    assert {t.name: t.inputs for t in tools} == {"lookup": {"city": "Oslo"}, "greet": {"name": "Ada"}}  # no ctx
    assert [parent_of(records, t) for t in tools] == [one(records, "schemas", "agent")] * 2


def test_a_session_argument_sent_by_the_model_never_reaches_the_tool(store: Store) -> None:
    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if len(messages) == 1:
            return ModelResponse(
                parts=[
                    ToolCallPart("lookup", {"city": "Rome", "_session": "evil"}, tool_call_id="a"),
                    ToolCallPart("lookup", '{"city": "Pisa", "_session": "evil"}', tool_call_id="b"),
                ]
            )
        return ModelResponse(parts=[TextPart("done")])

    agent = Agent(FunctionModel(respond), name="guarded")
    agent.tool_plain(lookup)
    with openprogram.session_context(store=store) as h:
        agent.run_sync("go")
    tools = by_kind(calls(store, h.session_id), "tool")
    # Pydantic AI runs the two calls concurrently: either may start first.
    assert sorted((t.status, t.inputs["city"], t.inputs, t.output) for t in tools) == [
        ("ok", "Pisa", {"city": "Pisa"}, f"Pisa: sunny ({h.session_id})"),
        ("ok", "Rome", {"city": "Rome"}, f"Rome: sunny ({h.session_id})"),
    ]


def test_toolsets_of_the_agent_and_of_the_run_are_recorded_like_its_own_tools(store: Store) -> None:
    math = FunctionToolset[None]()

    @math.tool_plain
    def add(a: int, b: int) -> int:
        return a + b

    words = FunctionToolset[None]()

    @words.tool_plain
    def upper(text: str) -> str:
        return text.upper()

    agent = Agent(TestModel(), toolsets=[math.prefixed("math")], name="toolsets")
    with openprogram.session_context(store=store) as h:
        agent.run_sync("go", toolsets=[words])
    records = calls(store, h.session_id)
    assert sorted(t.name for t in by_kind(records, "tool")) == ["math_add", "upper"]
    assert [parent_of(records, t) for t in by_kind(records, "tool")] == [one(records, "toolsets", "agent")] * 2
    assert sorted(by_kind(records, "llm")[0].inputs["tools"]) == ["math_add", "upper"]


def test_a_tool_waiting_for_approval_is_interrupted_and_runs_once_approved(store: Store) -> None:
    agent = Agent(
        scripted([[("deploy", {"env": "prod"})]], final="deployed"), name="ops", output_type=[str, DeferredToolRequests]
    )

    @agent.tool
    def deploy(ctx: RunContext[None], env: str) -> str:
        if not ctx.tool_call_approved:
            raise ApprovalRequired()
        return f"deployed to {env}"

    with openprogram.session_context(store=store) as h:
        paused = agent.run_sync("ship it")
        assert isinstance(paused.output, DeferredToolRequests)
        approvals = DeferredToolResults(approvals={paused.output.approvals[0].tool_call_id: True})
        resumed = agent.run_sync(message_history=paused.all_messages(), deferred_tool_results=approvals)
    assert resumed.output == "deployed"
    records = calls(store, h.session_id)
    waiting, approved = by_kind(records, "tool")
    assert (waiting.status, waiting.error) == ("interrupted", None)
    assert (approved.status, approved.output) == ("ok", "deployed to prod")
    assert [kind for _, kind, _ in tree(records)] == ["turn", "agent", "llm", "tool", "agent", "tool", "llm"]

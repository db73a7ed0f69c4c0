"""Each Pydantic AI run is one ``agent`` call holding its model requests and tool calls, on every entry point."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from typing import Any

import openprogram
import pytest
from openprogram._kit import ORIGINAL
from openprogram.integrations.pydantic_ai import last_run_session_id
from openprogram.stores import Store
from pydantic import BaseModel
from pydantic_ai import Agent, RunContext
from pydantic_ai._agent_graph import ModelRequestNode
from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.models.test import TestModel

from tests.integrations.pydantic_ai.fakes import MODEL, failing, scripted
from tests.integrations.pydantic_ai.helpers import parent_of
from tests.support import attributes, by_kind, calls, one, tree


class Clock:
    """A run's dependency: reads of it are attributed to the call that made them."""

    def __init__(self) -> None:
        self.read_in: list[str | None] = []

    def now(self) -> str:
        self.read_in.append(openprogram.current_call_id())
        return "noon"


def _weather_agent(model: Any = None, **kwargs: Any) -> Agent[None, str]:
    agent = Agent(
        model or scripted([[("forecast", {"city": "Paris"})]], final="sunny in Paris"), name="weather", **kwargs
    )

    @agent.tool_plain
    def forecast(city: str) -> str:
        """The forecast for a city."""
        return f"{city}: sunny"

    return agent


async def _by_iter(agent: Agent[None, str]) -> Any:
    async with agent.iter("weather?") as run:
        async for _ in run:
            pass
    assert run.result is not None
    return run.result.output


async def _by_stream(agent: Agent[None, str]) -> Any:
    async with agent.run_stream("weather?") as result:
        return await result.get_output()


async def _by_events(agent: Agent[None, str]) -> Any:
    output = None
    async with agent.run_stream_events("weather?") as events:
        async for event in events:
            result = getattr(event, "result", None)  # the last event carries the run's result
            output = output if result is None else result.output
    return output


ENTRY_POINTS: dict[str, Callable[[Agent[None, str]], Any]] = {
    "run": lambda agent: asyncio.run(agent.run("weather?")).output,
    "run_sync": lambda agent: agent.run_sync("weather?").output,
    "iter": lambda agent: asyncio.run(_by_iter(agent)),
    "run_stream": lambda agent: asyncio.run(_by_stream(agent)),
    "run_stream_events": lambda agent: asyncio.run(_by_events(agent)),
}


@pytest.mark.usefixtures("instrumented")
@pytest.mark.parametrize("entry", list(ENTRY_POINTS))
def test_every_entry_point_records_one_agent_call_holding_its_requests_and_tools(store: Store, entry: str) -> None:
    agent = _weather_agent()
    with openprogram.session_context(store=store) as h:
        assert ENTRY_POINTS[entry](agent) == "sunny in Paris"
    records = calls(store, h.session_id)
    assert [(depth, kind, name) for depth, kind, name in tree(records)] == [
        (0, "turn", "main"),
        (1, "agent", "weather"),
        (2, "llm", MODEL),
        (2, "tool", "forecast"),
        (2, "llm", MODEL),
    ]
    run = one(records, "weather", "agent")
    assert (run.framework, run.status, run.inputs, run.output) == (
        "pydantic_ai",
        "ok",
        {"prompt": "weather?"},
        "sunny in Paris",
    )
    assert set(attributes(run)) == {"run_id", "conversation_id"}
    assert {r.framework for r in records if r.kind != "turn"} == {"pydantic_ai"}


@pytest.mark.usefixtures("instrumented")
def test_run_stream_sync_is_one_agent_call_with_the_session_visible_in_its_tools(store: Store) -> None:
    seen: list[str | None] = []
    agent = Agent(scripted([[("session_id", {})]], final="streamed in sync code"), name="syncing")

    @agent.tool_plain
    def session_id() -> str:
        handle = openprogram.get_current_session()
        seen.append(handle.session_id if handle else None)
        return "ok"

    with openprogram.session_context(store=store) as h:
        result = agent.run_stream_sync("go")
        closable = hasattr(result, "__enter__")
        with result if closable else contextlib.nullcontext(result) as streamed:
            assert "".join(streamed.stream_text(delta=True)) == "streamed in sync code"
    records = calls(store, h.session_id)
    assert seen == [h.session_id]
    run = one(records, "syncing", "agent")
    assert parent_of(records, one(records, "session_id", "tool")) == run
    # Pydantic AI 2.0's result is no context manager and never closes its run: its last request stays open too.
    ended = "ok" if closable else "running"
    assert [(r.status, attributes(r)["stream"]) for r in by_kind(records, "llm")] == [("ok", True), (ended, True)]
    assert run.status == ended


def test_agent_built_before_instrument_is_recorded_and_uninstrument_restores_iter(
    store: Store, instrument: Callable[..., set[str]]
) -> None:
    agent = _weather_agent()
    plain_iter = Agent.iter
    instrument("pydantic_ai")
    assert Agent.iter is not plain_iter
    instrument("pydantic_ai")  # twice wraps once
    with openprogram.session_context(store=store) as h:
        agent.run_sync("weather?")
    assert [kind for _, kind, _ in tree(calls(store, h.session_id))] == ["turn", "agent", "llm", "tool", "llm"]
    openprogram.uninstrument("pydantic_ai")
    assert Agent.iter is plain_iter
    assert not hasattr(ModelRequestNode.stream, ORIGINAL)  # patched before 2.14 only, restored either way
    with openprogram.session_context(store=store) as h2:
        assert _weather_agent().run_sync("weather?").output == "sunny in Paris"
    assert [r.kind for r in calls(store, h2.session_id)] == ["turn"]


@pytest.mark.usefixtures("instrumented")
def test_structured_output_is_the_agent_calls_output_and_the_models_output_tool_call(store: Store) -> None:
    class Forecast(BaseModel):
        city: str
        sky: str

    agent = Agent(scripted([], final='{"city": "Paris", "sky": "clear"}'), output_type=Forecast, name="structured")
    with openprogram.session_context(store=store) as h:
        assert agent.run_sync("weather?").output == Forecast(city="Paris", sky="clear")
    records = calls(store, h.session_id)
    assert one(records, "structured", "agent").output == {"city": "Paris", "sky": "clear"}
    (request,) = by_kind(records, "llm")
    assert request.inputs["tools"] == ["final_result"]
    assert request.output["tool_calls"][0]["name"] == "final_result"
    assert request.output["tool_calls"][0]["arguments"] == {"city": "Paris", "sky": "clear"}
    assert by_kind(records, "tool") == []  # validating an output runs no user code


@pytest.mark.usefixtures("instrumented")
def test_output_function_is_a_tool_call_under_the_agent_seeing_the_session(store: Store) -> None:
    seen: list[str | None] = []

    def shout(text: str) -> str:
        """Shout the answer."""
        seen.append(openprogram.current_call_id())
        return text.upper()

    agent = Agent(scripted([], final='{"text": "quiet"}'), output_type=shout, name="shouter")
    with openprogram.session_context(store=store) as h:
        assert agent.run_sync("say it").output == "QUIET"
    records = calls(store, h.session_id)
    call = one(records, "shout", "tool")
    assert parent_of(records, call) == one(records, "shouter", "agent")
    assert (call.inputs, call.output, attributes(call)) == ("quiet", "QUIET", {"output_function": True})
    assert seen == [call.call_id]


@pytest.mark.usefixtures("instrumented")
def test_instructions_and_dependencies_see_the_session_under_the_agent_call(store: Store) -> None:
    agent = Agent(scripted([[("time", {})]], final="it is noon"), deps_type=Clock, name="clock")

    @agent.instructions
    def when(ctx: RunContext[Clock]) -> str:
        return f"It is {ctx.deps.now()}."

    @agent.tool
    def time(ctx: RunContext[Clock]) -> str:
        return ctx.deps.now()

    clock = Clock()
    with openprogram.session_context(store=store) as h:
        assert agent.run_sync("what time is it?", deps=clock).output == "it is noon"
    records = calls(store, h.session_id)
    run, tool = one(records, "clock", "agent"), one(records, "time", "tool")
    # instructions are rendered under the run, before each request; the tool's read is under the tool
    assert clock.read_in[0] == run.call_id and tool.call_id in clock.read_in
    assert by_kind(records, "llm")[0].inputs["messages"][0] == {"role": "system", "content": "It is noon."}


@pytest.mark.usefixtures("instrumented")
def test_agent_run_in_a_tool_is_under_that_tool(store: Store) -> None:
    helper = Agent(scripted([], final="helped"), name="helper")
    lead = Agent(scripted([[("ask_helper", {"question": "help?"})]], final="done"), name="lead")

    @lead.tool
    async def ask_helper(ctx: RunContext[None], question: str) -> str:
        return (await helper.run(question, usage=ctx.usage)).output

    with openprogram.session_context(store=store) as h:
        assert lead.run_sync("start").output == "done"
    records = calls(store, h.session_id)
    assert [(depth, kind, name) for depth, kind, name in tree(records)] == [
        (0, "turn", "main"),
        (1, "agent", "lead"),
        (2, "llm", MODEL),
        (2, "tool", "ask_helper"),
        (3, "agent", "helper"),
        (4, "llm", MODEL),
        (2, "llm", MODEL),
    ]


@pytest.mark.usefixtures("instrumented")
def test_a_failing_run_is_an_agent_error_and_the_same_exception_reaches_the_caller(store: Store) -> None:
    agent = Agent(failing(), name="down")
    with openprogram.session_context(store=store) as h, pytest.raises(Exception) as raised:
        agent.run_sync("anyone?")
    assert type(raised.value).__name__ == "ProviderDown"
    records = calls(store, h.session_id)
    run, request = one(records, "down", "agent"), one(records, "gpt-down", "llm")
    assert (run.status, request.status) == ("error", "error")
    assert parent_of(records, request) == run
    assert "ProviderDown" in (run.error or "") and "ProviderDown" in (request.error or "")


@pytest.mark.usefixtures("instrumented")
def test_runs_with_no_session_record_into_the_implicit_session_and_a_continuation_joins_it() -> None:
    agent = _weather_agent(TestModel())
    first = agent.run_sync("weather?")
    session_id = last_run_session_id()
    assert session_id is not None
    second = agent.run_sync("and tomorrow?", message_history=first.all_messages())
    assert last_run_session_id() == session_id  # the same conversation: the same session
    agent.run_sync("a new conversation")
    assert last_run_session_id() == session_id  # no conversation to continue: the implicit session too
    implicit = openprogram.implicit_session()
    assert implicit is not None and implicit.session_id == session_id
    openprogram.flush()
    store = openprogram.open_store()
    runs = [r for r in store.list_calls(session_id) if r.kind == "agent"]
    assert [r.inputs for r in runs][:2] == [{"prompt": "weather?"}, {"prompt": "and tomorrow?"}]
    assert {attributes(r)["conversation_id"] for r in runs[:2]} == {first.conversation_id, second.conversation_id}


@pytest.mark.usefixtures("instrumented")
def test_a_run_in_a_session_binds_its_conversation_so_a_later_run_outside_joins_that_session(store: Store) -> None:
    agent = _weather_agent(TestModel())
    with openprogram.session_context(store=store) as h:
        first = agent.run_sync("weather?")
    agent.run_sync("and tomorrow?", conversation_id=first.conversation_id)
    assert last_run_session_id() == h.session_id
    assert [r.inputs for r in by_kind(calls(store, h.session_id), "agent")] == [
        {"prompt": "weather?"},
        {"prompt": "and tomorrow?"},
    ]


@pytest.mark.usefixtures("instrumented")
def test_no_session_policy_error_raises_and_warn_runs_unrecorded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENPROGRAM_NO_SESSION", "error")
    with pytest.raises(openprogram.NoSessionError):
        _weather_agent().run_sync("weather?")
    monkeypatch.setenv("OPENPROGRAM_NO_SESSION", "warn")
    assert _weather_agent().run_sync("weather?").output == "sunny in Paris"
    openprogram.flush()
    assert openprogram.open_store().list_sessions() == []


@pytest.mark.usefixtures("instrumented")
def test_the_users_capabilities_run_too_and_their_list_is_left_as_passed(store: Store) -> None:
    seen: list[str] = []

    class Audit(AbstractCapability[Any]):
        async def wrap_tool_execute(self, ctx: Any, *, call: Any, tool_def: Any, args: Any, handler: Any) -> Any:
            seen.append(f"{call.tool_name} under {openprogram.current_call_id()}")
            return await handler(args)

    mine: list[Any] = [Audit()]
    with openprogram.session_context(store=store) as h:
        _weather_agent().run_sync("weather?", capabilities=mine)
    tool = one(calls(store, h.session_id), "forecast", "tool")
    assert seen == [f"forecast under {tool.call_id}"]  # ours is outermost: theirs runs inside the tool's call
    assert len(mine) == 1


@pytest.mark.usefixtures("instrumented")
@pytest.mark.parametrize("switch", ["configure", "environment"])
def test_content_off_keeps_calls_models_and_usage_and_drops_what_was_said(
    store: Store, switch: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    if switch == "configure":
        openprogram.configure(capture_content=False)
    else:
        monkeypatch.setenv("OPENPROGRAM_CAPTURE_CONTENT", "false")
    with openprogram.session_context(store=store) as h:
        _weather_agent().run_sync("weather?")
    records = calls(store, h.session_id)
    assert [r.kind for r in records] == ["turn", "agent", "llm", "tool", "llm"]
    for rec in records:
        assert (rec.inputs, rec.output) == (None, None)
    for request in by_kind(records, "llm"):
        assert attributes(request)["model"] == MODEL and attributes(request)["usage"]["total_tokens"] > 0


@pytest.mark.usefixtures("instrumented")
def test_a_failure_of_the_adapter_is_logged_once_and_never_reaches_the_agent(
    store: Store, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    from openprogram._runtime import forget_logged
    from openprogram.integrations.pydantic_ai import adapter

    def broken(*args: Any) -> Any:
        raise RuntimeError("adapter bug")

    forget_logged()  # the log-once rule, as in a new process
    monkeypatch.setattr(adapter, "_request_inputs", broken)
    monkeypatch.setattr(adapter, "_tool_attributes", broken)
    with openprogram.session_context(store=store) as h, caplog.at_level(logging.ERROR, logger="openprogram"):
        assert _weather_agent().run_sync("weather?").output == "sunny in Paris"
        assert _weather_agent().run_sync("weather?").output == "sunny in Paris"
    records = calls(store, h.session_id)
    assert [r.kind for r in records] == ["turn", "agent", "llm", "llm", "agent", "llm", "llm"]  # tools unrecorded
    assert {r.inputs for r in by_kind(records, "llm")} == {None}
    failures = [r.getMessage() for r in caplog.records if "instrumentation failed" in r.getMessage()]
    assert len(failures) == 2 and all("pydantic_ai" in failure for failure in failures)  # once per place

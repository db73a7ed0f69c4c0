"""The CrewAI adapter against real crewai with an offline scripted LLM."""

from __future__ import annotations

import asyncio
import logging
import threading
from typing import Any

import openprogram
import pytest
from crewai import Agent, Crew, Flow, Process, Task
from crewai.flow.flow import listen, start
from crewai.hooks import tool_hooks
from crewai.tools import BaseTool, tool
from crewai.tools.structured_tool import CrewStructuredTool
from openprogram._kit import ORIGINAL
from openprogram.integrations.crewai import adapter, models
from openprogram.integrations.crewai.fakes import scripted_llm
from openprogram.stores import Store

from tests.integrations.crewai.helpers import chain
from tests.support import by_kind, calls

SEEN: list[Any] = []


class Echo(BaseTool):
    name: str = "echo"
    description: str = "Echo x."

    def _run(self, x: str) -> str:
        SEEN.append(openprogram.get_current_session())
        return f"echo:{x}"


class Boom(BaseTool):
    name: str = "boom"
    description: str = "Always fails."

    def _run(self, x: str) -> str:
        raise ValueError(f"boom {x}")


@tool("shout")
def shout(x: str) -> str:
    """Upper-case x."""
    SEEN.append(openprogram.get_current_session())
    return x.upper()


@pytest.fixture(autouse=True)
def _clear_seen() -> None:
    SEEN.clear()


def _crew(native: bool = False, steps: list[Any] | None = None, tools: list[Any] | None = None, **crew_kw: Any) -> Crew:
    llm = scripted_llm(
        steps if steps is not None else [("echo", {"x": "hi"}), ("shout", {"x": "hey"})],
        native=native,
        final="all done",
    )
    agent = Agent(role="Tester", goal="test", backstory="offline", llm=llm, tools=tools or [Echo(), shout])
    task = Task(description="run tools", expected_output="text", agent=agent)
    return Crew(agents=[agent], tasks=[task], **crew_kw)


def _assert_dag(records: list[Any], tools: tuple[str, ...] = ("echo", "shout")) -> None:
    tool_calls = by_kind(records, "tool")
    assert [t.name for t in tool_calls] == list(tools)
    for t in tool_calls:
        assert chain(records, t) == ["tool", "agent", "task", "crew", "turn"]
        assert t.framework == "crewai" and t.status == "ok"
    (crew,) = by_kind(records, "crew")
    (task,) = by_kind(records, "task")
    (agent,) = by_kind(records, "agent")
    assert task.name == "run tools" and agent.name == "Tester"
    assert crew.output == "all done"


@pytest.mark.parametrize("native", [False, True], ids=["text", "native"])
def test_kickoff_records_crew_task_agent_tool(store: Store, native: bool) -> None:
    crew = _crew(native)  # built before instrument()? see test_objects_built_before_instrument
    with openprogram.session_context(store=store) as h:
        out = crew.kickoff()
    assert out.raw == "all done"
    records = calls(store, h.session_id)
    _assert_dag(records)
    assert [s.session_id for s in SEEN] == [h.session_id, h.session_id]
    assert by_kind(records, "tool")[0].inputs == {"x": "hi"}


def test_objects_built_before_instrument(store: Store) -> None:
    openprogram.uninstrument()
    crew = _crew(True)
    openprogram.instrument("crewai")
    with openprogram.session_context(store=store) as h:
        crew.kickoff()
    _assert_dag(calls(store, h.session_id))


# CrewAI 1.15.3 and later run their tool hooks through these, which the adapter wraps; before,
# the adapter registers global hooks of its own.
WRAPS_HOOK_RUNNERS = hasattr(tool_hooks, "run_before_tool_call_hooks")


def _adapter_hooks_registered() -> tuple[int, int]:
    """How many times the adapter's before- and after-hook are in CrewAI's global registry."""
    from crewai.hooks import get_after_tool_call_hooks, get_before_tool_call_hooks

    before = get_before_tool_call_hooks().count(adapter._before_tool)
    return before, get_after_tool_call_hooks().count(adapter._after_tool)


@pytest.mark.parametrize("native", [False, True], ids=["text", "native"])
def test_clearing_crewais_global_hooks_loses_no_tool_call(store: Store, native: bool) -> None:
    from crewai.hooks import clear_all_global_hooks

    clear_all_global_hooks()  # e.g. a user resetting their own hooks between runs
    with openprogram.session_context(store=store) as h:
        _crew(native).kickoff()
    records = calls(store, h.session_id)
    _assert_dag(records)
    # what only CrewAI's hook context gives: the agent that called the tool
    assert [t.attributes for t in by_kind(records, "tool")] == [{"agent": "Tester"}] * 2
    # where CrewAI has hook runners, nothing of openprogram's is in its registry; before, its hooks are put back
    assert _adapter_hooks_registered() == ((0, 0) if WRAPS_HOOK_RUNNERS else (1, 1))
    openprogram.uninstrument("crewai")
    assert _adapter_hooks_registered() == (0, 0)


@pytest.mark.skipif(not WRAPS_HOOK_RUNNERS, reason="CrewAI dispatches hook events from 1.15.3")
@pytest.mark.parametrize("user_hook", [False, True], ids=["no user hook", "a user hook"])
def test_a_crew_run_dispatches_the_hook_events_it_would_without_openprogram(store: Store, user_hook: bool) -> None:
    from crewai.events.event_bus import crewai_event_bus
    from crewai.events.types.hook_events import HookDispatchedEvent
    from crewai.hooks import register_after_tool_call_hook, unregister_after_tool_call_hook

    def user_after_hook(context: Any) -> None:
        return None

    def points_dispatched(instrumented: bool) -> list[str]:
        seen: list[str] = []
        (openprogram.instrument if instrumented else openprogram.uninstrument)("crewai")
        with crewai_event_bus.scoped_handlers():

            @crewai_event_bus.on(HookDispatchedEvent)
            def note(source: Any, event: Any) -> None:
                seen.append(event.interception_point)

            with openprogram.session_context(store=store):
                _crew(True).kickoff()
            crewai_event_bus.flush()
        return seen

    if user_hook:
        register_after_tool_call_hook(user_after_hook)
    try:
        plain, instrumented = points_dispatched(False), points_dispatched(True)
    finally:
        if user_hook:
            unregister_after_tool_call_hook(user_after_hook)
    assert instrumented == plain == (["post_tool_call"] * 2 if user_hook else [])


@pytest.mark.skipif(not WRAPS_HOOK_RUNNERS, reason="before 1.15.3, openprogram's hooks run in registration order")
def test_a_tool_call_records_what_the_users_hooks_made_of_its_input_and_result(store: Store) -> None:
    from crewai.hooks import (
        register_after_tool_call_hook,
        register_before_tool_call_hook,
        unregister_after_tool_call_hook,
        unregister_before_tool_call_hook,
    )

    inputs_seen: list[dict[str, Any]] = []

    def rewrite_input(context: Any) -> None:
        inputs_seen.append(dict(context.tool_input))
        context.tool_input["x"] = context.tool_input["x"] + "!"

    def rewrite_result(context: Any) -> str:
        return f"<{context.tool_result}>"

    register_before_tool_call_hook(rewrite_input)
    register_after_tool_call_hook(rewrite_result)
    try:
        with openprogram.session_context(store=store) as h:
            _crew(True, steps=[("echo", {"x": "hi", "_session": "chosen-by-the-model"})], tools=[Echo()]).kickoff()
    finally:
        unregister_before_tool_call_hook(rewrite_input)
        unregister_after_tool_call_hook(rewrite_result)
    (echo,) = by_kind(calls(store, h.session_id), "tool")
    assert inputs_seen == [{"x": "hi"}]  # the user's hook never sees a model's _session
    assert (echo.inputs, echo.output) == ({"x": "hi!"}, "<echo:hi!>")
    assert [s.session_id for s in SEEN] == [h.session_id]


async def test_akickoff_and_kickoff_async(store: Store) -> None:
    async with openprogram.session_context(store=store) as h:
        await _crew(True).akickoff()
        await _crew(False).akickoff()  # text tool calling on the async path: CrewStructuredTool.ainvoke
        await _crew(False).kickoff_async()
    records = calls(store, h.session_id)
    assert len(by_kind(records, "crew")) == 3
    assert all(chain(records, t)[1:4] == ["agent", "task", "crew"] for t in by_kind(records, "tool"))
    assert len(by_kind(records, "tool")) == 6
    assert {s.session_id for s in SEEN} == {h.session_id}


def test_kickoff_for_each(store: Store) -> None:
    with openprogram.session_context(store=store) as h:
        outs = _crew().kickoff_for_each(inputs=[{"a": "1"}, {"a": "2"}])
    assert len(outs) == 2
    records = calls(store, h.session_id)
    crews = by_kind(records, "crew")
    outer = [c for c in crews if c.name.endswith("(for each)")]
    assert len(outer) == 1 and len(crews) == 3
    inner = [c for c in crews if c is not outer[0]]
    assert all(c.parent_id == outer[0].call_id for c in inner)
    assert len(by_kind(records, "tool")) == 4


async def test_kickoff_for_each_async(store: Store) -> None:
    async with openprogram.session_context(store=store) as h:
        await _crew(True).kickoff_for_each_async(inputs=[{"a": "1"}, {"a": "2"}])
    records = calls(store, h.session_id)
    assert len(by_kind(records, "crew")) == 3
    assert all(chain(records, t)[-3:] == ["crew", "crew", "turn"] for t in by_kind(records, "tool"))


def test_async_execution_task(store: Store) -> None:
    first = Agent(
        role="Async worker",
        goal="g",
        backstory="b",
        llm=scripted_llm([("echo", {"x": "a"})], final="first"),
        tools=[Echo()],
    )
    second = Agent(
        role="Joiner", goal="g", backstory="b", llm=scripted_llm([("echo", {"x": "b"})], final="second"), tools=[Echo()]
    )
    t1 = Task(description="async part", expected_output="t", agent=first, async_execution=True)
    t2 = Task(description="join part", expected_output="t", agent=second, context=[t1])
    with openprogram.session_context(store=store) as h:
        Crew(agents=[first, second], tasks=[t1, t2]).kickoff()
    records = calls(store, h.session_id)
    tasks = {t.name: t for t in by_kind(records, "task")}
    assert set(tasks) == {"async part", "join part"}
    (crew,) = by_kind(records, "crew")
    assert tasks["async part"].parent_id == crew.call_id
    tools = by_kind(records, "tool")
    assert len(tools) == 2 and all(chain(records, t)[1:4] == ["agent", "task", "crew"] for t in tools)
    assert {s.session_id for s in SEEN} == {h.session_id} and len(SEEN) == 2


def test_hierarchical_delegation_nests_under_the_delegation_tool(store: Store) -> None:
    worker_llm = scripted_llm([("echo", {"x": "w"})], final="worker done")
    worker = Agent(role="Researcher", goal="g", backstory="b", llm=worker_llm, tools=[Echo()], allow_delegation=False)
    manager_llm = scripted_llm(
        [("delegate_work_to_coworker", {"task": "research it", "context": "ctx", "coworker": "Researcher"})],
        final="managed",
    )
    task = Task(description="lead the work", expected_output="t")
    crew = Crew(agents=[worker], tasks=[task], process=Process.hierarchical, manager_llm=manager_llm)
    with openprogram.session_context(store=store) as h:
        crew.kickoff()
    records = calls(store, h.session_id)
    (delegate,) = [t for t in by_kind(records, "tool") if t.name.startswith("delegate")]
    (echo,) = [t for t in by_kind(records, "tool") if t.name == "echo"]
    assert chain(records, echo)[:4] == ["tool", "agent", "tool", "agent"]
    index = {r.call_id: r for r in records}
    coworker = index[echo.parent_id]
    assert coworker.name == "Researcher" and coworker.parent_id == delegate.call_id
    assert SEEN[0].session_id == h.session_id


def test_parallel_native_tool_calls(store: Store) -> None:
    steps = [[("echo", {"x": "1"}), ("echo", {"x": "2"}), ("shout", {"x": "3"})]]
    with openprogram.session_context(store=store) as h:
        _crew(True, steps).kickoff()
    records = calls(store, h.session_id)
    tools = by_kind(records, "tool")
    assert sorted(t.name for t in tools) == ["echo", "echo", "shout"]
    assert all(chain(records, t)[:2] == ["tool", "agent"] for t in tools)
    assert len(SEEN) == 3 and {s.session_id for s in SEEN} == {h.session_id}


def test_tool_error_is_recorded_and_reaches_crewai(store: Store) -> None:
    errors: list[BaseException] = []

    class Failing(BaseTool):
        name: str = "failing"
        description: str = "fails"

        def _run(self, x: str) -> str:
            exc = RuntimeError("bad tool")
            errors.append(exc)
            raise exc

    for native in (True, False):
        errors.clear()
        with openprogram.session_context(store=store) as h:
            out = _crew(native, [("failing", {"x": "1"})], tools=[Failing()]).kickoff()
        assert out.raw == "all done"  # CrewAI handled the exception as usual
        records = calls(store, h.session_id)
        failing = [t for t in by_kind(records, "tool") if t.name == "failing"]
        assert failing and all(t.status == "error" for t in failing)
        assert "RuntimeError: bad tool" in (failing[0].error or "")
        assert errors  # the tool ran and raised; CrewAI saw the same exception object's message
        assert "bad tool" in str(failing[0].output)


@pytest.mark.parametrize("escape", [KeyboardInterrupt, lambda: SystemExit(3)])
def test_tool_whose_ctrl_c_or_exit_escapes_crewai_is_interrupted(store: Store, escape: Any) -> None:
    # CrewAI catches only Exception: its after-tool hook never runs for these, and the tool
    # call used to stay "running" after its crew had ended.
    class Stops(BaseTool):
        name: str = "stops"
        description: str = "stops"

        def _run(self, x: str) -> str:
            raise escape()

    for native in (True, False):
        with openprogram.session_context(store=store) as h:
            with pytest.raises((KeyboardInterrupt, SystemExit)):
                _crew(native, [("stops", {"x": "1"})], tools=[Stops()]).kickoff()
        records = calls(store, h.session_id)
        assert {r.status for r in records if r.kind not in ("turn", "llm")} == {"interrupted"}
        assert {r.status for r in by_kind(records, "llm")} == {"ok"}  # the request asking for the tool had ended
        assert [t.name for t in by_kind(records, "tool")] == ["stops"]


def test_cached_tool_and_max_usage(store: Store) -> None:
    limited = Echo(max_usage_count=1)
    steps = [("echo", {"x": "same"}), ("echo", {"x": "same"}), ("echo", {"x": "other"})]
    with openprogram.session_context(store=store) as h:
        _crew(True, steps, tools=[limited], cache=True).kickoff()
    records = calls(store, h.session_id)
    tools = by_kind(records, "tool")
    assert len(tools) == 3
    assert len(SEEN) == 1  # ran once; once from the cache; once refused by the usage limit
    executed = [t for t in tools if (t.attributes or {}).get("executed", True)]
    assert len(executed) == 1


@pytest.mark.parametrize("native", [False, True], ids=["text", "native"])
def test_a_tool_call_a_users_hook_blocks_is_recorded_as_not_executed(store: Store, native: bool) -> None:
    from crewai.hooks import register_before_tool_call_hook, unregister_before_tool_call_hook

    def refuse_shout(context: Any) -> bool | None:
        return False if context.tool_name == "shout" else None

    register_before_tool_call_hook(refuse_shout)
    try:
        with openprogram.session_context(store=store) as h:
            _crew(native).kickoff()
    finally:
        unregister_before_tool_call_hook(refuse_shout)
    echo, shout_call = by_kind(calls(store, h.session_id), "tool")
    assert (echo.name, echo.status, echo.attributes) == ("echo", "ok", {"agent": "Tester"})
    assert (shout_call.name, shout_call.status) == ("shout", "ok")
    assert shout_call.attributes == {"agent": "Tester", "executed": False}
    assert "blocked" in str(shout_call.output)
    assert [s.session_id for s in SEEN] == [h.session_id]  # shout's body never ran


def test_agent_kickoff_sync_and_async(store: Store) -> None:
    def solo(x: str) -> Agent:  # distinct inputs: older crewai caches tool results across kickoffs
        llm = scripted_llm([("echo", {"x": x})], native=True)
        return Agent(role="Solo", goal="g", backstory="b", llm=llm, tools=[Echo()])

    with openprogram.session_context(store=store) as h:
        solo("s1").kickoff("do it")
        asyncio.run(solo("s2").kickoff_async("do it again"))
    records = calls(store, h.session_id)
    agents = by_kind(records, "agent")
    assert [a.name for a in agents] == ["Solo", "Solo"]
    assert all(chain(records, t) == ["tool", "agent", "turn"] for t in by_kind(records, "tool"))
    assert len(SEEN) == 2


class _Demo(Flow):  # type: ignore[type-arg]
    @start()
    def begin(self) -> str:
        return "x"

    @listen(begin)
    def run_crew(self, _: str) -> str:
        return str(_crew(True).kickoff().raw)


def test_flow_records_methods_and_nests_the_crew(store: Store) -> None:
    with openprogram.session_context(store=store) as h:
        _Demo().kickoff()
    records = calls(store, h.session_id)
    (flow,) = by_kind(records, "flow")
    methods = [r for r in records if r.kind == "call" and r.parent_id == flow.call_id]
    assert [m.name for m in methods] == ["begin", "run_crew"]
    (crew,) = by_kind(records, "crew")
    assert crew.parent_id == methods[1].call_id
    assert all(
        chain(records, t) == ["tool", "agent", "task", "crew", "call", "flow", "turn"] for t in by_kind(records, "tool")
    )
    assert not [r for r in records if r.kind == "flow" and r.name == "AgentExecutor"]


async def test_flow_kickoff_async(store: Store) -> None:
    async with openprogram.session_context(store=store) as h:
        await _Demo().kickoff_async()
    records = calls(store, h.session_id)
    assert len(by_kind(records, "flow")) == 1 and len(by_kind(records, "tool")) == 2


def test_run_without_session_lands_in_one_exposed_session() -> None:
    out = _crew(True).kickoff()
    assert out.raw == "all done"
    session_id = adapter.last_run_session_id()
    assert session_id is not None
    store = openprogram.open_store()
    records = calls(store, session_id)
    _assert_dag(records)
    assert {s.session_id for s in SEEN} == {session_id}


def test_flow_state_id_continues_its_session() -> None:
    _Demo().kickoff(inputs={"id": "flow-state-1"})
    first = adapter.last_run_session_id()
    _Demo().kickoff(inputs={"id": "flow-state-1"})
    assert adapter.last_run_session_id() == first
    _Demo().kickoff(inputs={"id": "flow-state-2"})
    assert adapter.last_run_session_id() != first
    records = calls(openprogram.open_store(), first or "")
    assert len(by_kind(records, "flow")) == 2 and len(by_kind(records, "turn")) == 2


def test_execution_id_is_bound_to_the_session(store: Store) -> None:
    execution = pytest.importorskip("crewai.execution", reason="no crewai.execution in this crewai (a later 1.15.x)")
    clear_execution_uuid, set_execution_uuid = execution.clear_execution_uuid, execution.set_execution_uuid

    token = set_execution_uuid("host-run-42")
    try:
        with openprogram.session_context(store=store) as h:
            _crew(True).kickoff()
        openprogram.flush()
        assert store.resolve_alias("crewai", "host-run-42") == h.session_id
    finally:
        clear_execution_uuid(token)


def test_streaming_consumed_outside_the_session(store: Store) -> None:
    with openprogram.session_context(store=store) as h:
        streaming = _crew(True, stream=True).kickoff()
    chunks = list(streaming)  # iterated after the session block: the run starts here
    assert chunks is not None
    assert streaming.result.raw == "all done"
    assert [s.session_id for s in SEEN] == [h.session_id, h.session_id]
    records = calls(store, h.session_id)
    assert len(by_kind(records, "tool")) == 2 and len(by_kind(records, "crew")) == 1


async def test_async_streaming_consumed_outside_the_session(store: Store) -> None:
    async with openprogram.session_context(store=store) as h:
        streaming = await _crew(True, stream=True).kickoff_async()
    async for _ in streaming:
        pass
    assert {s.session_id for s in SEEN} == {h.session_id} and len(SEEN) == 2


async def test_structured_tool_ainvoke_sync_and_async(store: Store) -> None:
    seen: list[Any] = []

    def sync_fn(x: str) -> str:
        seen.append(("sync", openprogram.get_current_session(), threading.current_thread().name))
        return x

    async def async_fn(x: str) -> str:
        seen.append(("async", openprogram.get_current_session(), None))
        return x * 2

    sync_tool = CrewStructuredTool.from_function(sync_fn, name="sync_fn", description="s")
    async_tool = CrewStructuredTool.from_function(async_fn, name="async_fn", description="a")

    @tool("async_decorated")
    async def async_decorated(x: str) -> str:
        """Async @tool."""
        seen.append(("decorated", openprogram.get_current_session(), None))
        return x + "!"

    async with openprogram.session_context(store=store) as h:
        assert await sync_tool.ainvoke({"x": "a"}) == "a"
        assert await async_tool.ainvoke({"x": "b"}) == "bb"
        assert await async_decorated.to_structured_tool().ainvoke({"x": "c"}) == "c!"
    assert [k for k, _, _ in seen] == ["sync", "async", "decorated"]
    assert all(s is not None and s.session_id == h.session_id for _, s, _ in seen)
    names = [r.name for r in by_kind(calls(store, h.session_id), "tool")]
    assert names == ["sync_fn", "async_fn", "async_decorated"]


def test_direct_tool_run_is_recorded(store: Store) -> None:
    with openprogram.session_context(store=store) as h:
        assert Echo().run(x="direct") == "echo:direct"
        assert shout.run(x="y") == "Y"
    records = calls(store, h.session_id)
    assert [(t.name, t.parent_id) for t in by_kind(records, "tool")] == [
        ("echo", h.root_call_id if hasattr(h, "root_call_id") else None),
        ("shout", h.root_call_id if hasattr(h, "root_call_id") else None),
    ]


# --- _session and openprogram tools ------------------------------------------------------


@openprogram.tool
def lookup(topic: str, _session: openprogram.SessionHandle | None = None) -> str:
    """Look a topic up."""
    SEEN.append(_session)
    return f"about {topic}"


def test_openprogram_tool_schema_is_clean_and_model_session_is_overwritten(store: Store) -> None:
    crew_tool = tool("lookup")(lookup)
    assert "_session" not in crew_tool.args_schema.model_json_schema()["properties"]
    assert "_session" not in crew_tool.description
    structured = crew_tool.to_structured_tool()
    assert "_session" not in getattr(structured, "formatted_description", structured.description)

    class Lookup(BaseTool):
        name: str = "lookup_cls"
        description: str = "Look up."

        @openprogram.tool
        def _run(self, topic: str, _session: openprogram.SessionHandle | None = None) -> str:
            SEEN.append(_session)
            return topic

    assert "_session" not in Lookup().args_schema.model_json_schema()["properties"]
    for native in (True, False):
        SEEN.clear()
        steps = [("lookup", {"topic": "a", "_session": "forged"}), ("lookup_cls", {"topic": "b", "_session": "x"})]
        with openprogram.session_context(store=store) as h:
            _crew(native, steps, tools=[crew_tool, Lookup()]).kickoff()
        assert len(SEEN) == 2
        assert all(isinstance(s, openprogram.SessionHandle) and s.session_id == h.session_id for s in SEEN)
        tools = by_kind(calls(store, h.session_id), "tool")
        assert all("_session" not in (t.inputs or {}) for t in tools)
        # Recorded once, by the @openprogram.tool function itself, under the agent that ran it.
        assert sorted(t.name for t in tools) == ["_run", "lookup"], [(t.name, t.framework) for t in tools]
        agents = {c.call_id for c in by_kind(calls(store, h.session_id), "agent")}
        assert all(t.parent_id in agents for t in tools)


# --- instrument / uninstrument -------------------------------------------------------------


def test_uninstrument_restores_and_instrument_twice_wraps_once(store: Store) -> None:
    from crewai.tools.base_tool import Tool
    from crewai.utilities import tool_utils

    wrapped = {name: Crew.__dict__[name] for name in ("kickoff", "akickoff")}
    assert all(hasattr(fn, ORIGINAL) for fn in wrapped.values())
    assert hasattr(tool_utils.execute_tool_and_check_finality, ORIGINAL)
    openprogram.instrument("crewai")  # again: no second wrapping
    assert Crew.__dict__["kickoff"] is wrapped["kickoff"]
    assert _adapter_hooks_registered() == ((0, 0) if WRAPS_HOOK_RUNNERS else (1, 1))
    assert hasattr(getattr(tool_hooks, "run_before_tool_call_hooks", None), ORIGINAL) is WRAPS_HOOK_RUNNERS
    openprogram.uninstrument()
    assert not hasattr(Crew.__dict__["kickoff"], ORIGINAL)
    assert not hasattr(Task.__dict__["_execute_core"], ORIGINAL)
    assert not hasattr(Tool.__dict__["run"], ORIGINAL)
    assert not hasattr(tool_utils.execute_tool_and_check_finality, ORIGINAL)
    assert _adapter_hooks_registered() == (0, 0)
    assert not hasattr(getattr(tool_hooks, "run_before_tool_call_hooks", None), ORIGINAL)
    with openprogram.session_context(store=store) as h:
        _crew(True).kickoff()
    assert [r.kind for r in calls(store, h.session_id)] == ["turn"]
    assert len(SEEN) == 2  # the crew still ran, unrecorded
    openprogram.instrument("crewai")
    with openprogram.session_context(store=store) as h2:
        _crew(True).kickoff()
    _assert_dag(calls(store, h2.session_id))


def test_user_exception_propagates_unchanged(store: Store) -> None:
    raised = ValueError("from the user's step")

    class Failing(Flow):  # type: ignore[type-arg]
        @start()
        def begin(self) -> None:
            raise raised

    with openprogram.session_context(store=store) as h, pytest.raises(ValueError) as info:
        Failing().kickoff()
    assert info.value is raised
    records = calls(store, h.session_id)
    assert by_kind(records, "flow")[0].status == "error"


def test_instrumentation_error_never_breaks_the_crew(
    store: Store, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def broken(*args: Any, **kwargs: Any) -> Any:
        raise TypeError("adapter bug")

    caplog.set_level(logging.DEBUG, logger="openprogram")  # an error logged once already is logged at debug level
    crew = _crew(True)
    with openprogram.session_context(store=store) as h, monkeypatch.context() as patch:
        patch.setattr(adapter, "_short", broken)  # every name the adapter gives a call
        patch.setattr(models, "_model_name", broken)  # and a model call
        out = crew.kickoff()
    assert out.raw == "all done" and len(SEEN) == 2
    assert {s.session_id for s in SEEN} == {h.session_id}
    assert [r.kind for r in calls(store, h.session_id)] == ["turn"]  # ran unrecorded
    assert "instrumentation failed" in caplog.text and "adapter bug" in caplog.text


def test_flow_streaming_consumed_outside_the_session(store: Store) -> None:
    flow = _Demo()
    flow.stream = True
    with openprogram.session_context(store=store) as h:
        streaming = flow.kickoff()
    for _ in streaming:
        pass
    assert [s.session_id for s in SEEN] == [h.session_id, h.session_id]
    records = calls(store, h.session_id)
    assert len(by_kind(records, "flow")) == 1 and len(by_kind(records, "tool")) == 2


def test_demo_records_flow_crew_delegation_and_async_task(store: Store) -> None:
    from openprogram.integrations.crewai import demo

    lines: list[str] = []
    with openprogram.session_context(store=store) as h:
        demo.run_demo(lines.append)
    assert f"crewai: tools ran in session(s): {h.session_id}" in lines
    records = calls(store, h.session_id)
    assert len(by_kind(records, "flow")) == 1
    (crew,) = by_kind(records, "crew")
    assert chain(records, crew) == ["crew", "call", "flow", "turn"]
    lookups = [t for t in by_kind(records, "tool") if t.name == "lookup"]
    assert sorted(len(chain(records, t)) for t in lookups) == [7, 9]  # async task; delegated to the Writer
    assert [r.status for r in records if r.status != "ok"] == []

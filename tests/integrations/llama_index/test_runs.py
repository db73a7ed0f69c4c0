"""Agent and workflow runs: ``FunctionAgent``, ``ReActAgent``, ``AgentWorkflow`` hand-offs, plain workflows."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import openprogram
import pytest
from llama_index.core.agent.workflow import AgentWorkflow, FunctionAgent, ReActAgent
from openprogram.integrations.llama_index import last_run_session_id
from openprogram.integrations.llama_index.fakes import scripted_llm
from openprogram.stores import Store
from workflows import Workflow, step
from workflows.events import Event, StartEvent, StopEvent

from tests.integrations.llama_index.helpers import without_steps
from tests.support import attributes, by_kind, calls, one, tree


def forecast(city: str) -> str:
    """The forecast for a city."""
    return f"{city}: sunny"


def weather_agent(*, streaming: bool = True, name: str = "weather") -> FunctionAgent:
    return FunctionAgent(
        name=name,
        description="Knows the weather.",
        tools=[forecast],
        llm=scripted_llm([[("forecast", {"city": "Paris"})]], final="sunny"),
        streaming=streaming,
    )


def run(start: Callable[[], Any]) -> Any:
    """Start a run inside an event loop (``Workflow.run`` needs one) and await its handler."""

    async def main() -> Any:
        return await start()

    return asyncio.run(main())


@pytest.mark.usefixtures("instrumented")
@pytest.mark.parametrize("streaming", [True, False])
def test_a_function_agent_run_is_an_agent_call_with_its_steps_model_calls_and_tools(
    store: Store, streaming: bool
) -> None:
    agent = weather_agent(streaming=streaming)
    with openprogram.session_context(store=store) as h:
        assert run(lambda: agent.run(user_msg="weather?")).response.content == "sunny"
    records = calls(store, h.session_id)
    assert without_steps(tree(records)) == [
        (0, "turn", "main"),
        (1, "agent", "weather"),
        (2, "llm", "scripted-model"),
        (2, "tool", "forecast"),
        (2, "llm", "scripted-model"),
    ]
    assert [name for _, kind, name in tree(records) if kind == "node"][:6] == [
        "init_run",
        "setup_agent",
        "run_agent_step",
        "parse_agent_output",
        "call_tool",
        "aggregate_tool_results",
    ]
    agent_call = one(records, "weather", "agent")
    assert (agent_call.status, agent_call.inputs, agent_call.output) == ("ok", {"user_msg": "weather?"}, "sunny")
    tool = one(records, "forecast", "tool")
    assert (tool.inputs, tool.output) == ({"city": "Paris"}, "Paris: sunny")
    assert one(records, "call_tool", "node").call_id == tool.parent_id
    assert all(attributes(m).get("stream", False) is streaming for m in by_kind(records, "llm"))
    assert all(c.status == "ok" for c in records)


@pytest.mark.usefixtures("instrumented")
def test_a_react_agent_run_records_its_reasoning_requests_and_tool(store: Store) -> None:
    agent = ReActAgent(
        name="reasoner",
        tools=[forecast],
        llm=scripted_llm(
            ['Thought: I need the forecast.\nAction: forecast\nAction Input: {"city": "Lyon"}'],
            final="Thought: I can answer.\nAnswer: Lyon is sunny",
        ),
    )
    with openprogram.session_context(store=store) as h:
        assert str(run(lambda: agent.run(user_msg="weather in Lyon?"))) == "Lyon is sunny"
    records = calls(store, h.session_id)
    assert without_steps(tree(records)) == [
        (0, "turn", "main"),
        (1, "agent", "reasoner"),
        (2, "llm", "scripted-model"),
        (2, "tool", "forecast"),
        (2, "llm", "scripted-model"),
    ]
    assert one(records, "forecast", "tool").inputs == {"city": "Lyon"}
    assert one(records, "reasoner", "agent").output == "Lyon is sunny"


@pytest.mark.usefixtures("instrumented")
def test_in_an_agent_workflow_the_agent_handed_to_runs_under_the_hand_off(store: Store) -> None:
    lead = FunctionAgent(
        name="lead",
        description="Leads.",
        llm=scripted_llm([[("handoff", {"to_agent": "helper", "reason": "weather"})]], final="unused"),
        can_handoff_to=["helper"],
    )
    helper = FunctionAgent(
        name="helper",
        description="Knows the weather.",
        tools=[forecast],
        llm=scripted_llm([[("forecast", {"city": "Nice"})]], final="Nice: sunny"),
    )
    team = AgentWorkflow(agents=[lead, helper], root_agent="lead")
    with openprogram.session_context(store=store) as h:
        assert str(run(lambda: team.run(user_msg="weather?"))) == "Nice: sunny"
    records = calls(store, h.session_id)
    assert without_steps(tree(records)) == [
        (0, "turn", "main"),
        (1, "agent", "AgentWorkflow"),
        (2, "agent", "lead"),
        (3, "llm", "scripted-model"),
        (3, "tool", "handoff"),
        (4, "agent", "helper"),
        (5, "llm", "scripted-model"),
        (5, "tool", "forecast"),
        (5, "llm", "scripted-model"),
    ]
    handed_to = one(records, "helper", "agent")
    assert handed_to.parent_id == one(records, "handoff", "tool").call_id
    assert attributes(handed_to)["handed_off_from"] == "lead"
    assert one(records, "AgentWorkflow", "agent").output == "Nice: sunny"
    assert all(c.status == "ok" for c in records)


class Drafted(Event):
    text: str


def polish_flow(seen: list[str | None]) -> Workflow:
    """An async step, then a sync one (run in a worker thread); each notes the session it sees."""

    def note() -> None:
        handle = openprogram.get_current_session()
        seen.append(handle.session_id if handle else None)

    class Polish(Workflow):
        @step
        async def draft(self, ev: StartEvent) -> Drafted:
            note()
            return Drafted(text=f"{ev.get('topic')} draft")

        @step
        def polish(self, ev: Drafted) -> StopEvent:
            note()
            return StopEvent(result=ev.text.upper())

    return Polish(timeout=30)


@pytest.mark.usefixtures("instrumented")
def test_a_workflow_run_is_a_flow_and_its_steps_nodes_that_see_the_session(store: Store) -> None:
    seen: list[str | None] = []
    flow = polish_flow(seen)
    with openprogram.session_context(store=store) as h:
        assert run(lambda: flow.run(topic="trees")) == "TREES DRAFT"
    records = calls(store, h.session_id)
    assert tree(records) == [(0, "turn", "main"), (1, "flow", "Polish"), (2, "node", "draft"), (2, "node", "polish")]
    assert seen == [h.session_id, h.session_id]
    run_call, draft, polish = records[1:]
    assert (run_call.inputs, run_call.output) == ({"topic": "trees"}, "TREES DRAFT")
    assert draft.output == {"event": {"text": "trees draft"}}
    assert polish.inputs == {"event": {"text": "trees draft"}}
    assert attributes(polish)["event"] == "Drafted"


@pytest.mark.usefixtures("instrumented")
def test_a_failing_step_fails_its_node_and_the_run_with_the_users_exception(store: Store) -> None:
    raised = ValueError("no draft today")

    class Broken(Workflow):
        @step
        async def draft(self, ev: StartEvent) -> StopEvent:
            raise raised

    with openprogram.session_context(store=store) as h, pytest.raises(Exception) as caught:
        run(lambda: Broken(timeout=30).run())
    assert caught.value is raised or caught.value.__cause__ is raised  # as LlamaIndex raises it plain
    records = calls(store, h.session_id)
    assert [(c.kind, c.name, c.status) for c in records[1:]] == [
        ("flow", "Broken", "error"),
        ("node", "draft", "error"),
    ]


def test_agents_and_workflows_built_before_instrument_are_recorded(
    store: Store, instrument: Callable[..., set[str]]
) -> None:
    agent = weather_agent()
    flow = polish_flow([])
    instrument("llama_index")
    with openprogram.session_context(store=store) as h:
        run(lambda: agent.run(user_msg="weather?"))
        run(lambda: flow.run(topic="x"))
    kinds = [c.kind for c in calls(store, h.session_id)]
    assert kinds.count("agent") == 1 and kinds.count("flow") == 1 and kinds.count("llm") == 2


def test_uninstrument_restores_every_patched_method(store: Store) -> None:
    from llama_index.core.agent.workflow import BaseWorkflowAgent
    from llama_index.core.llms.custom import CustomLLM
    from llama_index.core.tools import FunctionTool
    from llama_index_instrumentation.dispatcher import Dispatcher

    def patched() -> tuple[Any, ...]:  # read from the class dicts: wrapt binds a fresh wrapper per access
        return tuple(
            c.__dict__[m]
            for c, m in (
                (Workflow, "run"),
                (Dispatcher, "span"),
                (FunctionTool, "acall"),
                (CustomLLM, "chat"),
                (BaseWorkflowAgent, "run"),
            )
        )

    before = patched()
    openprogram.instrument("llama_index")
    openprogram.instrument("llama_index")  # twice wraps once
    assert Workflow.__dict__["run"].__wrapped__ is before[0]
    openprogram.uninstrument("llama_index")
    assert patched() == before
    with openprogram.session_context(store=store) as h:
        run(lambda: weather_agent().run(user_msg="weather?"))
    assert [c.kind for c in calls(store, h.session_id)] == ["turn"]


@pytest.mark.usefixtures("instrumented")
def test_a_run_with_no_session_open_records_into_the_implicit_session() -> None:
    assert openprogram.get_current_session() is None
    assert str(run(lambda: weather_agent(name="outside").run(user_msg="weather?"))) == "sunny"
    session_id = last_run_session_id()
    assert session_id is not None
    records = calls(openprogram.open_store(), session_id)
    assert [c.kind for c in records if c.name == "outside"] == ["agent"]
    assert one(records, "outside", "agent").status == "ok"


@pytest.mark.usefixtures("instrumented")
def test_a_tool_the_agent_does_not_have_is_a_tool_call_ending_in_error(store: Store) -> None:
    agent = FunctionAgent(
        name="confused",
        description="Asks for a tool it lacks.",
        tools=[forecast],
        llm=scripted_llm([[("teleport", {"to": "Mars"})]], final="cannot"),
    )
    with openprogram.session_context(store=store) as h:
        assert str(run(lambda: agent.run(user_msg="go"))) == "cannot"
    records = calls(store, h.session_id)
    missing = one(records, "teleport", "tool")
    assert (missing.status, missing.inputs, attributes(missing)["executed"]) == ("error", {"to": "Mars"}, False)
    assert "teleport not found" in str(missing.error)
    assert one(records, "confused", "agent").status == "ok"


def pinned_workflows(store: Store) -> int:
    """How many of 3 finished workflow runs a timer scheduled in their step keeps alive."""
    import gc
    import weakref

    handles: list[asyncio.TimerHandle] = []

    class Tiny(Workflow):
        @step
        async def only(self, ev: StartEvent) -> StopEvent:
            handles.append(asyncio.get_running_loop().call_later(3600, lambda: None))
            return StopEvent(result="done")

    async def main() -> list[weakref.ref[Workflow]]:
        refs = []
        for _ in range(3):
            flow = Tiny()
            refs.append(weakref.ref(flow))
            await flow.run()
            del flow
        return refs

    with openprogram.session_context(store=store):
        refs = asyncio.run(main())
    gc.collect()
    for handle in handles:
        handle.cancel()
    return sum(ref() is not None for ref in refs)


def test_a_timer_scheduled_in_a_step_keeps_no_more_workflows_alive_than_plain(
    store: Store, instrument: Callable[..., set[str]]
) -> None:
    # A step's context is copied into what it schedules: openprogram's part of it holds no workflow
    # (it held the one being run, by the context of ``run``). Workflows before 2.2x pin them themselves.
    plain = pinned_workflows(store)
    instrument("llama_index")
    assert pinned_workflows(store) <= plain

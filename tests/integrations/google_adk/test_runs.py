"""ADK runs as one tree: agent -> model request / tool, an AgentTool's agent under its tool, a transfer's agent
under the agent that handed over, workflow agents' sub-agents under them; sync and async, streamed or not."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

import openprogram
import pytest
from google.adk.agents import LlmAgent, ParallelAgent, SequentialAgent
from google.adk.agents.run_config import RunConfig, StreamingMode
from google.adk.runners import InMemoryRunner
from google.adk.tools import LongRunningFunctionTool
from google.adk.tools.agent_tool import AgentTool
from openprogram.integrations.google_adk import last_run_session_id
from openprogram.integrations.google_adk.fakes import ScriptedLlm
from openprogram.stores import Store

from tests.integrations.google_adk.helpers import ask, user
from tests.support import attributes, by_kind, calls, one, tree

pytestmark = pytest.mark.usefixtures("instrumented")


def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


async def slow_double(n: int) -> int:
    """Double a number, asynchronously."""
    await asyncio.sleep(0)
    return 2 * n


def _team() -> LlmAgent:
    helper = LlmAgent(name="helper", model=ScriptedLlm(model="helper-model", script=["helper says 3"]))
    specialist = LlmAgent(
        name="specialist",
        description="Does the sums.",
        model=ScriptedLlm(
            model="specialist-model",
            script=[[("add", {"a": 1, "b": 2}), ("slow_double", {"n": 4})], "3 and 8"],
        ),
        tools=[add, slow_double],
    )
    return LlmAgent(
        name="coordinator",
        instruction="Coordinate.",
        model=ScriptedLlm(
            model="coordinator-model",
            script=[[("helper", {"request": "hi"})], [("transfer_to_agent", {"agent_name": "specialist"})]],
        ),
        tools=[AgentTool(helper)],
        sub_agents=[specialist],
    )


TEAM_TREE = [
    (0, "turn", "main"),
    (1, "agent", "coordinator"),
    (2, "llm", "coordinator-model"),
    (2, "tool", "helper"),
    (3, "agent", "helper"),
    (4, "llm", "helper-model"),
    (2, "llm", "coordinator-model"),
    (2, "tool", "transfer_to_agent"),
    (2, "agent", "specialist"),
    (3, "llm", "specialist-model"),
    (3, "tool", "add"),
    (3, "tool", "slow_double"),
    (3, "llm", "specialist-model"),
]


async def test_an_async_run_is_one_tree_with_agent_tools_and_transfers_nested(store: Store) -> None:
    runner = InMemoryRunner(agent=_team(), app_name="app")
    async with openprogram.session_context(store=store) as h:
        assert await ask(runner, "sum things") == "3 and 8"
    records = calls(store, h.session_id)
    assert tree(records) == TEAM_TREE
    assert {r.status for r in records} == {"ok"}
    assert {r.framework for r in records if r.kind != "turn"} == {"google_adk"}
    coordinator = one(records, "coordinator", "agent")
    assert coordinator.inputs == {"input": "sum things"}
    assert attributes(coordinator)["transferred_to"] == "specialist"
    assert one(records, "specialist", "agent").output == "3 and 8"
    assert one(records, "add", "tool").inputs == {"a": 1, "b": 2}
    assert one(records, "add", "tool").output == 3
    assert one(records, "slow_double", "tool").output == 8
    assert one(records, "helper", "tool").output == "helper says 3"
    assert attributes(one(records, "add", "tool"))["tool_call_id"].startswith("call-")


def test_runner_run_sync_records_the_same_tree(store: Store) -> None:
    runner = InMemoryRunner(agent=_team(), app_name="app")

    async def new_session() -> str:
        return (await runner.session_service.create_session(app_name="app", user_id="u")).id

    session_id = asyncio.run(new_session())
    with openprogram.session_context(store=store) as h:
        events = list(runner.run(user_id="u", session_id=session_id, new_message=user("sum things")))
    assert events
    assert tree(calls(store, h.session_id)) == TEAM_TREE


async def test_each_model_request_has_its_model_usage_and_reply(store: Store) -> None:
    runner = InMemoryRunner(agent=_team(), app_name="app")
    async with openprogram.session_context(store=store) as h:
        await ask(runner, "sum things")
    requests = by_kind(calls(store, h.session_id), "llm")
    last = requests[-1]
    assert attributes(last)["model"] == "specialist-model"
    assert set(attributes(last)["usage"]) == {"input_tokens", "output_tokens", "total_tokens"}
    assert last.output == {"role": "assistant", "content": "3 and 8", "finish_reason": "stop"}
    asked = requests[-2].output["tool_calls"]
    assert [(c["name"], c["arguments"]) for c in asked] == [("add", {"a": 1, "b": 2}), ("slow_double", {"n": 4})]
    assert "stream" not in attributes(last)


async def test_a_streamed_request_is_one_call_with_the_joined_reply(store: Store) -> None:
    agent = LlmAgent(name="streamer", model=ScriptedLlm(script=["one tree per run"]))
    runner = InMemoryRunner(agent=agent, app_name="app")
    async with openprogram.session_context(store=store) as h:
        assert await ask(runner, "go", run_config=RunConfig(streaming_mode=StreamingMode.SSE)) == "one tree per run"
    request = one(calls(store, h.session_id), "scripted-model", "llm")
    assert attributes(request)["stream"] is True
    assert request.output["content"] == "one tree per run"
    assert request.status == "ok"


async def test_workflow_agents_nest_their_sub_agents(store: Store) -> None:
    def worker(name: str) -> LlmAgent:
        return LlmAgent(name=name, model=ScriptedLlm(model=f"{name}-model", script=[f"{name} done"]))

    pipeline = SequentialAgent(
        name="pipeline", sub_agents=[worker("first"), ParallelAgent(name="fan", sub_agents=[worker("a"), worker("b")])]
    )
    runner = InMemoryRunner(agent=pipeline, app_name="app")
    async with openprogram.session_context(store=store) as h:
        await ask(runner, "go")
    shown = tree(calls(store, h.session_id))
    assert shown[:5] == [
        (0, "turn", "main"),
        (1, "agent", "pipeline"),
        (2, "agent", "first"),
        (3, "llm", "first-model"),
        (2, "agent", "fan"),
    ]
    assert sorted(shown[5:]) == [(3, "agent", "a"), (3, "agent", "b"), (4, "llm", "a-model"), (4, "llm", "b-model")]


async def test_a_long_running_tool_is_a_tool_call_marked_so(store: Store) -> None:
    def start_job(name: str) -> dict[str, str]:
        """Start a job that finishes later."""
        return {"status": "pending", "job": name}

    agent = LlmAgent(
        name="ops",
        model=ScriptedLlm(script=[[("start_job", {"name": "backup"})], "started"]),
        tools=[LongRunningFunctionTool(start_job)],
    )
    async with openprogram.session_context(store=store) as h:
        await ask(InMemoryRunner(agent=agent, app_name="app"), "back up")
    job = one(calls(store, h.session_id), "start_job", "tool")
    assert attributes(job)["long_running"] is True
    assert job.output == {"status": "pending", "job": "backup"}


async def test_a_failing_tool_is_an_error_call_and_the_user_gets_the_same_exception(store: Store) -> None:
    failure = RuntimeError("tool broke")

    def broken() -> str:
        """Always fails."""
        raise failure

    agent = LlmAgent(name="fragile", model=ScriptedLlm(script=[[("broken", {})]]), tools=[broken])
    async with openprogram.session_context(store=store) as h:
        with pytest.raises(RuntimeError) as raised:
            await ask(InMemoryRunner(agent=agent, app_name="app"), "go")
    assert raised.value is failure
    records = calls(store, h.session_id)
    assert one(records, "broken", "tool").status == "error"
    assert one(records, "fragile", "agent").status == "error"


async def test_a_failing_model_is_an_error_llm_call(store: Store) -> None:
    failure = ConnectionError("model down")

    def down(request: Any) -> Any:
        raise failure

    agent = LlmAgent(name="offline", model=ScriptedLlm(script=[down]))
    async with openprogram.session_context(store=store) as h:
        with pytest.raises(ConnectionError) as raised:
            await ask(InMemoryRunner(agent=agent, app_name="app"), "go")
    assert raised.value is failure
    assert one(calls(store, h.session_id), "scripted-model", "llm").status == "error"


def test_an_agent_built_before_instrument_is_recorded(store: Store, instrument: Callable[..., set[str]]) -> None:
    openprogram.uninstrument("google_adk")
    runner = InMemoryRunner(agent=_team(), app_name="app")
    instrument("google_adk")
    with openprogram.session_context(store=store) as h:
        asyncio.run(ask(runner, "sum things"))
    assert tree(calls(store, h.session_id)) == TEAM_TREE


def test_uninstrument_restores_adk_and_records_nothing(store: Store) -> None:
    from google.adk.agents.base_agent import BaseAgent
    from google.adk.runners import Runner
    from google.adk.tools.function_tool import FunctionTool

    openprogram.uninstrument("google_adk")
    assert not hasattr(BaseAgent.run_async, "__wrapped__")
    assert not hasattr(Runner.run_async, "__wrapped__")
    assert not hasattr(FunctionTool.run_async, "__wrapped__")
    assert not hasattr(ScriptedLlm.generate_content_async, "__wrapped__")
    with openprogram.session_context(store=store) as h:
        assert asyncio.run(ask(InMemoryRunner(agent=_team(), app_name="app"), "sum things")) == "3 and 8"
    assert tree(calls(store, h.session_id)) == [(0, "turn", "main")]


def test_a_run_with_no_session_open_records_into_the_implicit_session(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="openprogram")
    assert asyncio.run(ask(InMemoryRunner(agent=_team(), app_name="app"), "sum things")) == "3 and 8"
    session_id = last_run_session_id()
    assert session_id is not None and session_id == openprogram.implicit_session().session_id
    assert tree(calls(openprogram.open_store(), session_id))[1:] == [(d, k, n) for d, k, n in TEAM_TREE[1:]]
    assert session_id in caplog.text  # announced once, with how to see it


def test_under_the_warn_policy_a_run_with_no_session_runs_unrecorded() -> None:
    openprogram.configure(no_session="warn")
    try:
        assert asyncio.run(ask(InMemoryRunner(agent=_team(), app_name="app"), "sum things")) == "3 and 8"
    finally:
        openprogram.configure(no_session="auto")
    assert openprogram.open_store().list_sessions() == []


def test_a_persistent_adk_session_continues_its_openprogram_session(tmp_path: Any) -> None:
    from google.adk.runners import Runner
    from google.adk.sessions import DatabaseSessionService

    service = DatabaseSessionService(db_url=f"sqlite+aiosqlite:///{tmp_path / 'adk.db'}")
    runner = Runner(agent=_team(), app_name="app", session_service=service)

    async def twice() -> None:
        made = await service.create_session(app_name="app", user_id="u")
        await ask(runner, "sum things", session_id=made.id)
        runner.agent = _team()  # a fresh script; the same ADK session
        await ask(runner, "again", session_id=made.id)

    asyncio.run(twice())
    session_id = last_run_session_id()
    assert session_id is not None and session_id.startswith("google_adk.session-")
    assert openprogram.implicit_session() is None  # the ADK session's own, not the process's
    records = calls(openprogram.open_store(), session_id)
    assert [r.name for r in by_kind(records, "turn")] == ["main", "main"]
    # The second run goes on with the agent the first transferred to, as ADK keeps it in its session.
    assert {r.turn_id for r in by_kind(records, "agent")} == {r.turn_id for r in by_kind(records, "turn")}


def test_a_persistent_adk_session_run_in_a_session_is_continued_there_with_no_session_open(
    tmp_path: Any, store: Store
) -> None:
    from google.adk.runners import Runner
    from google.adk.sessions import DatabaseSessionService

    service = DatabaseSessionService(db_url=f"sqlite+aiosqlite:///{tmp_path / 'adk.db'}")
    runner = Runner(agent=_team(), app_name="app", session_service=service)

    async def twice() -> str:
        made = await service.create_session(app_name="app", user_id="u")
        async with openprogram.session_context() as h:
            await ask(runner, "sum things", session_id=made.id)
        runner.agent = _team()
        await ask(runner, "again", session_id=made.id)  # no session open: the ADK session's
        return h.session_id

    session_id = asyncio.run(twice())
    assert last_run_session_id() == session_id
    assert len(by_kind(calls(openprogram.open_store(), session_id), "turn")) == 2


def test_under_the_error_policy_a_run_with_no_session_raises_no_session_error() -> None:
    openprogram.configure(no_session="error")
    try:
        with pytest.raises(openprogram.NoSessionError):
            asyncio.run(ask(InMemoryRunner(agent=_team(), app_name="app"), "sum things"))
    finally:
        openprogram.configure(no_session="auto")

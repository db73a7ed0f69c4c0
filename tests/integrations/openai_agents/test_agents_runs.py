"""``Runner.run`` / ``run_sync`` / ``run_streamed``: one agent call per agent turn, hand-offs nested, guardrails.

The model is the offline :func:`scripted_model`; every test drives the real runner.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import threading
import weakref
from collections.abc import Iterator
from typing import Any

import openprogram
import pytest
from agents import (
    Agent,
    GuardrailFunctionOutput,
    InputGuardrailTripwireTriggered,
    OutputGuardrail,
    RunContextWrapper,
    RunHooks,
    Runner,
    function_tool,
    handoff,
    input_guardrail,
    output_guardrail,
)
from agents.memory import SQLiteSession
from agents.run import RunConfig
from agents.tool_guardrails import (
    ToolGuardrailFunctionOutput,
    tool_input_guardrail,
    tool_output_guardrail,
)
from openprogram.integrations.openai_agents import adapter
from openprogram.integrations.openai_agents.demo import scripted_model
from openprogram.stores import Store

from tests.integrations.openai_agents.fake_openai import conversations_session
from tests.integrations.openai_agents.helpers import parent_of, tree
from tests.support import attributes, by_kind, calls, one

SEEN: list[tuple[str, Any, str | None]] = []  # (where, session handle, current call id) inside user code


@pytest.fixture(autouse=True)
def _clear_seen() -> Iterator[None]:
    SEEN.clear()
    yield


def _seen(where: str) -> None:
    SEEN.append((where, openprogram.get_current_session(), openprogram.current_call_id()))


@function_tool
def lookup(key: str) -> str:
    """Look a key up."""
    _seen(f"lookup in {threading.current_thread().name}")
    return f"value of {key}"


@function_tool
async def fetch(url: str) -> str:
    """Fetch a page."""
    await asyncio.sleep(0)
    _seen("fetch")
    return f"page {url}"


def _researcher() -> Agent[Any]:
    return Agent(
        name="Researcher",
        instructions="Use the tools.",
        tools=[lookup, fetch],
        model=scripted_model([[("lookup", {"key": "a"})], [("fetch", {"url": "u"})], "all done"]),
    )


RESEARCHER_TREE = [
    "turn main",
    "  agent Researcher",
    "    llm scripted-offline",
    "    tool lookup",
    "    llm scripted-offline",
    "    tool fetch",
    "    llm scripted-offline",
]


def _assert_tools_saw_their_calls(records: list[openprogram.CallRecord], session_id: str) -> None:
    tools = {r.name: r for r in by_kind(records, "tool")}
    for where, handle, call_id in SEEN:
        name = where.split()[0]
        assert handle is not None and handle.session_id == session_id, where
        assert call_id == tools[name].call_id, where


async def test_run_records_one_agent_call_with_its_model_requests_and_tools(store: Store) -> None:
    async with openprogram.session_context(store=store) as h:
        result = await Runner.run(_researcher(), "find a")
    assert result.final_output == "all done"
    records = calls(store, h.session_id)
    assert tree(records) == RESEARCHER_TREE
    agent = one(records, "Researcher", "agent")
    assert (agent.framework, agent.status, agent.inputs, agent.output) == (
        "openai_agents",
        "ok",
        {"input": "find a"},
        "all done",
    )
    assert one(records, "lookup", "tool").inputs == {"key": "a"} and one(records, "lookup").output == "value of a"
    assert one(records, "fetch", "tool").output == "page u"
    _assert_tools_saw_their_calls(records, h.session_id)
    assert any(where.startswith("lookup") and "MainThread" not in where for where, _, _ in SEEN)  # a worker thread


def test_run_sync_records_the_same_tree(store: Store) -> None:
    with openprogram.session_context(store=store) as h:
        assert Runner.run_sync(_researcher(), "find a").final_output == "all done"
    records = calls(store, h.session_id)
    assert tree(records) == RESEARCHER_TREE
    _assert_tools_saw_their_calls(records, h.session_id)


async def test_streamed_run_records_the_same_tree_while_its_events_are_consumed(store: Store) -> None:
    async with openprogram.session_context(store=store) as h:
        result = Runner.run_streamed(_researcher(), "find a")
        kinds = [event.type async for event in result.stream_events()]
    assert result.final_output == "all done" and "raw_response_event" in kinds
    records = calls(store, h.session_id)
    assert tree(records) == RESEARCHER_TREE
    assert all(attributes(r)["stream"] is True for r in by_kind(records, "llm"))
    assert one(records, "Researcher", "agent").output == "all done"
    _assert_tools_saw_their_calls(records, h.session_id)


async def test_streamed_run_started_in_a_session_and_consumed_after_it_stays_in_that_session(store: Store) -> None:
    async with openprogram.session_context(store=store) as h:
        result = Runner.run_streamed(_researcher(), "find a")
    async for _ in result.stream_events():
        pass
    records = calls(store, h.session_id)
    assert tree(records) == RESEARCHER_TREE
    _assert_tools_saw_their_calls(records, h.session_id)


async def test_streamed_run_cancelled_mid_stream_ends_its_calls_interrupted(store: Store) -> None:
    agent = Agent(name="Talker", model=scripted_model(["a long answer arriving in many pieces"]))
    async with openprogram.session_context(store=store) as h:
        result = Runner.run_streamed(agent, "talk")
        async for event in result.stream_events():
            if event.type == "raw_response_event" and getattr(event.data, "type", "") == "response.output_text.delta":
                result.cancel()
        await asyncio.sleep(0.01)
    records = calls(store, h.session_id)
    assert [(r.kind, r.status) for r in records[1:]] == [("agent", "interrupted"), ("llm", "interrupted")]


# --- hand-offs ----------------------------------------------------------------------------------------


def _billing() -> Agent[Any]:
    return Agent(
        name="Billing",
        instructions="Settle it.",
        tools=[lookup],
        model=scripted_model([[("lookup", {"key": "invoice"})], "refunded"]),
    )


async def test_handoff_nests_the_agent_handed_to_under_the_handoff_under_the_agent_handing_off(store: Store) -> None:
    handed: list[str | None] = []

    async def on_handoff(context: RunContextWrapper[Any]) -> None:
        handed.append(openprogram.current_call_id())

    billing = _billing()
    triage = Agent(
        name="Triage",
        instructions="Route it.",
        handoffs=[handoff(billing, on_handoff=on_handoff)],
        model=scripted_model([[("transfer_to_billing", {})]]),
    )
    async with openprogram.session_context(store=store) as h:
        result = await Runner.run(triage, "I was charged twice")
    assert result.final_output == "refunded" and result.last_agent is billing
    records = calls(store, h.session_id)
    assert tree(records) == [
        "turn main",
        "  agent Triage",
        "    llm scripted-offline",
        "    call transfer_to_billing",
        "      agent Billing",
        "        llm scripted-offline",
        "        tool lookup",
        "        llm scripted-offline",
    ]
    move = one(records, "transfer_to_billing", "call")
    assert attributes(move)["handoff"] is True and attributes(move)["tool_call_id"].startswith("call_")
    assert (move.inputs, move.output) == ({}, {"to_agent": "Billing"})
    assert handed == [move.call_id]  # the hand-off's callback runs under it
    for name in ("Triage", "Billing"):  # every agent of the chain ends with the run's outcome
        assert (one(records, name, "agent").status, one(records, name, "agent").output) == ("ok", "refunded")
    assert one(records, "Triage").ended_at >= one(records, "Billing").ended_at


async def test_handoff_back_to_the_first_agent_is_a_new_agent_call_under_the_second_handoff(store: Store) -> None:
    triage = Agent(name="Triage", model=scripted_model([[("transfer_to_billing", {})], "back and done"]))
    billing = Agent(name="Billing", handoffs=[triage], model=scripted_model([[("transfer_to_triage", {})]]))
    triage.handoffs = [billing]
    async with openprogram.session_context(store=store) as h:
        assert (await Runner.run(triage, "go")).final_output == "back and done"
    assert tree(calls(store, h.session_id)) == [
        "turn main",
        "  agent Triage",
        "    llm scripted-offline",
        "    call transfer_to_billing",
        "      agent Billing",
        "        llm scripted-offline",
        "        call transfer_to_triage",
        "          agent Triage",
        "            llm scripted-offline",
    ]


async def test_agent_used_as_a_tool_runs_under_its_tool_call(store: Store) -> None:
    expert = Agent(name="Expert", tools=[lookup], model=scripted_model([[("lookup", {"key": "x"})], "expert says x"]))
    lead = Agent(
        name="Lead",
        tools=[expert.as_tool(tool_name="ask_expert", tool_description="Ask the expert.")],
        model=scripted_model([[("ask_expert", {"input": "what is x?"})], "x, says the expert"]),
    )
    async with openprogram.session_context(store=store) as h:
        assert (await Runner.run(lead, "what is x?")).final_output == "x, says the expert"
    records = calls(store, h.session_id)
    assert tree(records) == [
        "turn main",
        "  agent Lead",
        "    llm scripted-offline",
        "    tool ask_expert",
        "      agent Expert",
        "        llm scripted-offline",
        "        tool lookup",
        "        llm scripted-offline",
        "    llm scripted-offline",
    ]
    asked = one(records, "ask_expert", "tool")
    assert (asked.inputs, asked.output) == ({"input": "what is x?"}, "expert says x")
    assert one(records, "Expert", "agent").inputs == {"input": "what is x?"}
    _assert_tools_saw_their_calls(records, h.session_id)


# --- guardrails --------------------------------------------------------------------------------------


@input_guardrail
async def polite(context: RunContextWrapper[Any], agent: Agent[Any], input: Any) -> GuardrailFunctionOutput:
    _seen("polite")
    rude = "idiot" in str(input)
    return GuardrailFunctionOutput(output_info={"rude": rude}, tripwire_triggered=rude)


@output_guardrail
def short_answer(context: RunContextWrapper[Any], agent: Agent[Any], output: Any) -> GuardrailFunctionOutput:
    _seen("short_answer")
    return GuardrailFunctionOutput(output_info={"length": len(str(output))}, tripwire_triggered=False)


@tool_input_guardrail
def no_secrets(data: Any) -> ToolGuardrailFunctionOutput:
    _seen("no_secrets")
    return ToolGuardrailFunctionOutput.allow(output_info="checked")


@tool_output_guardrail
def no_leaks(data: Any) -> ToolGuardrailFunctionOutput:
    _seen("no_leaks")
    return ToolGuardrailFunctionOutput.allow(output_info="clean")


@function_tool(tool_input_guardrails=[no_secrets], tool_output_guardrails=[no_leaks])
def guarded_lookup(key: str) -> str:
    """Look a key up, guarded."""
    return f"value of {key}"


async def test_guardrails_are_calls_under_the_agent_they_guard_and_see_the_session(store: Store) -> None:
    billing = Agent(
        name="Billing",
        tools=[guarded_lookup],
        output_guardrails=[short_answer],
        model=scripted_model([[("guarded_lookup", {"key": "k"})], "refunded"]),
    )
    triage = Agent(
        name="Triage",
        input_guardrails=[polite],
        handoffs=[billing],
        model=scripted_model([[("transfer_to_billing", {})]]),
    )
    async with openprogram.session_context(store=store) as h:
        assert (await Runner.run(triage, "please refund")).final_output == "refunded"
    records = calls(store, h.session_id)
    guards = {r.name: r for r in records if "guardrail" in attributes(r)}
    assert {name: attributes(r)["guardrail"] for name, r in guards.items()} == {
        "polite": "input",
        "short_answer": "output",
        "no_secrets": "tool_input",
        "no_leaks": "tool_output",
    }
    assert parent_of(records, guards["polite"]) == one(records, "Triage", "agent")
    for name in ("short_answer", "no_secrets", "no_leaks"):  # the output guardrail runs after the last agent's turn
        assert parent_of(records, guards[name]) == one(records, "Billing", "agent"), name
    assert guards["polite"].output == {"output_info": {"rude": False}, "tripwire_triggered": False}
    assert guards["short_answer"].output == {"output_info": {"length": 8}, "tripwire_triggered": False}
    assert guards["no_secrets"].output == {"output_info": "checked", "behavior": "allow"}
    assert all(r.framework == "openai_agents" and r.kind == "call" and r.status == "ok" for r in guards.values())
    assert {where: (handle.session_id, call_id) for where, handle, call_id in SEEN} == {
        name: (h.session_id, r.call_id) for name, r in guards.items()
    }


async def test_input_guardrail_tripwire_fails_the_run_with_the_sdk_exception_and_records_the_verdict(
    store: Store,
) -> None:
    agent = Agent(name="Guarded", input_guardrails=[polite], model=scripted_model(["never sent"]))
    async with openprogram.session_context(store=store) as h:
        with pytest.raises(InputGuardrailTripwireTriggered) as raised:
            await Runner.run(agent, "you idiot")
    records = calls(store, h.session_id)
    run = one(records, "Guarded", "agent")
    assert run.status == "error" and "InputGuardrailTripwireTriggered" in (run.error or "")
    verdict = one(records, "polite", "call")
    assert verdict.status == "ok" and verdict.output == {"output_info": {"rude": True}, "tripwire_triggered": True}
    assert raised.value.guardrail_result.guardrail.get_name() == "polite"


# --- sessions --------------------------------------------------------------------------------------------


def test_runs_with_no_session_open_record_into_the_implicit_session_and_say_which(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger="openprogram")
    assert Runner.run_sync(_researcher(), "find a").final_output == "all done"
    session_id = adapter.last_run_session_id()
    assert session_id is not None and session_id in caplog.text
    records = calls(openprogram.open_store(), session_id)
    assert tree(records) == RESEARCHER_TREE
    _assert_tools_saw_their_calls(records, session_id)
    Runner.run_sync(_researcher(), "find a")
    assert adapter.last_run_session_id() == session_id  # no conversation identity: the implicit session
    assert len([r for r in caplog.records if session_id in r.getMessage()]) == 1  # said once


def test_runs_of_one_sdk_session_continue_one_openprogram_session_outside_any_session() -> None:
    conversation = SQLiteSession("conversation-1")
    Runner.run_sync(_researcher(), "find a", session=conversation)
    first = adapter.last_run_session_id()
    Runner.run_sync(_researcher(), "and again", session=conversation)
    assert adapter.last_run_session_id() == first
    Runner.run_sync(_researcher(), "find a", session=SQLiteSession("conversation-2"))
    assert adapter.last_run_session_id() != first
    records = calls(openprogram.open_store(), first or "")
    assert len(by_kind(records, "turn")) == 2 and len(by_kind(records, "agent")) == 2


def test_a_trace_group_id_continues_its_session_like_a_conversation() -> None:
    Runner.run_sync(_researcher(), "find a", run_config=RunConfig(group_id="thread-7"))
    first = adapter.last_run_session_id()
    Runner.run_sync(_researcher(), "find a", run_config=RunConfig(group_id="thread-7"))
    assert adapter.last_run_session_id() == first


async def test_sdk_session_id_is_bound_to_the_open_session(store: Store) -> None:
    async with openprogram.session_context(store=store) as h:
        await Runner.run(_researcher(), "find a", session=SQLiteSession("conversation-9"))
    openprogram.flush()
    assert store.resolve_alias("openai_agents.session", "conversation-9") == h.session_id


def test_no_session_policy_error_raises_for_a_run_outside_any_session() -> None:
    openprogram.configure(no_session="error")
    try:
        with pytest.raises(openprogram.NoSessionError):
            Runner.run_sync(_researcher(), "find a")
    finally:
        openprogram.configure(no_session="auto")


# --- approvals -------------------------------------------------------------------------------------------


@function_tool(needs_approval=True)
def refund(amount: int) -> str:
    """Refund an amount (needs a human's approval)."""
    return f"refunded {amount}"


async def _run(agent: Agent[Any], given: Any, streamed: bool) -> Any:
    if not streamed:
        return await Runner.run(agent, given)
    result = Runner.run_streamed(agent, given)
    async for _ in result.stream_events():
        pass
    return result


@pytest.mark.parametrize("streamed", [False, True], ids=["run", "run_streamed"])
async def test_run_paused_for_an_approval_is_interrupted_and_its_resumption_records_in_the_same_session(
    store: Store, streamed: bool
) -> None:
    agent = Agent(name="Cashier", tools=[refund], model=scripted_model([[("refund", {"amount": 5})], "done"]))
    async with openprogram.session_context(store=store) as h:
        paused = await _run(agent, "refund 5", streamed)
        assert paused.interruptions
        state = paused.to_state()
        state.approve(paused.interruptions[0])
        resumed = await _run(agent, state, streamed)
    assert resumed.final_output == "done"
    records = calls(store, h.session_id)
    first, second = by_kind(records, "agent")
    assert (first.status, second.status) == ("interrupted", "ok")
    assert second.inputs is None  # a resumed run brings no new input
    assert one(records, "refund", "tool").output == "refunded 5"
    assert parent_of(records, one(records, "refund", "tool")) == second


async def test_concurrent_runs_in_one_session_keep_their_calls_apart(store: Store) -> None:
    async with openprogram.session_context(store=store) as h:
        first, second = await asyncio.gather(Runner.run(_researcher(), "find a"), Runner.run(_billing(), "refund"))
    assert (first.final_output, second.final_output) == ("all done", "refunded")
    records = calls(store, h.session_id)
    for agent, tools in (("Researcher", {"lookup", "fetch"}), ("Billing", {"lookup"})):
        run = one(records, agent, "agent")
        children = [r for r in records if r.parent_id == run.call_id]
        assert {r.name for r in children if r.kind == "tool"} == tools, agent
        assert all(r.kind in ("llm", "tool") for r in children)
    assert len(by_kind(records, "llm")) == 5


# --- lifetimes -------------------------------------------------------------------------------------------


async def test_agent_is_collected_right_after_its_run_though_a_task_made_during_it_is_kept(store: Store) -> None:
    # A task copies the context it is made in (the SDK's own tasks too): kept after the run, that copy must not
    # keep the run's agent alive.
    kept: list[asyncio.Future[None]] = []

    class KeepsATask(RunHooks[Any]):
        async def on_agent_start(self, context: Any, agent: Any) -> None:
            kept.append(asyncio.ensure_future(asyncio.sleep(0)))

    agent = Agent(name="Transient", instructions="Answer.", model=scripted_model(["Paris"]))
    collected = weakref.ref(agent)
    async with openprogram.session_context(store=store):
        await Runner.run(agent, "What is the capital of France?", hooks=KeepsATask())
        await asyncio.gather(*kept)
        del agent
        gc.collect()
        assert collected() is None


# --- streamed runs' errors -------------------------------------------------------------------------------


class SessionSaveAborted(BaseException):
    """Not an ``Exception``: the SDK surfaces it only through its own error path, which must stay the one taken."""


async def test_streamed_run_with_an_sdk_session_and_no_session_open_surfaces_its_error_as_the_sdk_does() -> None:
    from agents.result import RunResultStreaming

    if not hasattr(RunResultStreaming, "run_loop_exception"):
        pytest.skip("this release does not surface a run loop's BaseException (the run hangs, plain too)")
    guardrail_failed = False

    class AbortingSession(SQLiteSession):
        async def add_items(self, items: list[Any]) -> None:
            if guardrail_failed:
                raise SessionSaveAborted("session save aborted")
            await super().add_items(items)

    def failing_guardrail(context: RunContextWrapper[Any], agent: Agent[Any], output: Any) -> GuardrailFunctionOutput:
        nonlocal guardrail_failed
        guardrail_failed = True
        raise RuntimeError("guardrail failed")

    agent = Agent(
        name="Saver",
        model=scripted_model(["preamble"]),
        output_guardrails=[OutputGuardrail(guardrail_function=failing_guardrail)],
    )
    # No session open: the run records into the session of its SDK session's id, entered in the SDK's run task.
    result = Runner.run_streamed(agent, "Hello", session=AbortingSession("conversation-aborted"))
    with pytest.raises(SessionSaveAborted) as raised:
        async for _ in result.stream_events():
            pass
    # Stored by the SDK's _check_errors(): the run task ended when it queued its last event, as without openprogram.
    assert result._stored_exception is raised.value
    session_id = adapter.last_run_session_id()
    assert session_id is not None
    run = one(calls(openprogram.open_store(), session_id), "Saver", "agent")
    assert run.status == "error" and "SessionSaveAborted" in (run.error or "")


# --- nothing of ours logged as an error ------------------------------------------------------------------


def test_a_conversations_session_with_no_remote_conversation_yet_records_its_run_with_no_error_logged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    from openprogram._runtime import forget_logged

    forget_logged()  # the log-once rule, as in a new process
    conversation, paths = conversations_session()  # its session_id raises ValueError until the first request
    caplog.set_level(logging.ERROR, logger="openprogram")
    agent = Agent(name="Chatty", model=scripted_model(["hello"]))
    assert Runner.run_sync(agent, "hi", session=conversation).final_output == "hello"
    assert "POST /v1/conversations" in paths and conversation.session_id == "conv_1"
    assert [r.getMessage() for r in caplog.records if r.name == "openprogram"] == []
    session_id = adapter.last_run_session_id()
    assert session_id is not None
    assert one(calls(openprogram.open_store(), session_id), "Chatty", "agent").status == "ok"


async def test_guardrail_whose_function_has_no_name_is_a_call_named_by_its_type_with_no_error_logged(
    store: Store, caplog: pytest.LogCaptureFixture
) -> None:
    from agents import InputGuardrail
    from openprogram._runtime import forget_logged

    class Polite:
        """A callable object: no ``__name__``, so the SDK's ``get_name()`` raises."""

        def __call__(self, context: Any, agent: Any, input: Any) -> GuardrailFunctionOutput:
            return GuardrailFunctionOutput(output_info="fine", tripwire_triggered=False)

    forget_logged()
    caplog.set_level(logging.ERROR, logger="openprogram")
    guardrail: InputGuardrail[Any] = InputGuardrail(guardrail_function=Polite())
    agent = Agent(name="Guarded", model=scripted_model(["ok"]))
    async with openprogram.session_context(store=store) as h:
        result = await guardrail.run(agent, "hello", RunContextWrapper(context=None))
    assert result.output.output_info == "fine"
    assert [r.getMessage() for r in caplog.records if r.name == "openprogram"] == []
    assert one(calls(store, h.session_id), "Polite", "call").output == {
        "output_info": "fine",
        "tripwire_triggered": False,
    }

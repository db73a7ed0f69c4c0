"""LangChain tools with no LangGraph, and model requests and tools nested under whatever called them."""

from __future__ import annotations

import logging
from typing import Any

import openprogram
import pytest
from langchain_core.tools import tool
from langchain_core.utils.function_calling import convert_to_openai_tool

from tests.integrations.langchain.fakes import add, broken, calling, listed, negate
from tests.support import by_kind, calls, one


def test_tool_invoke_is_one_tool_call_with_its_arguments_and_result(store: Any) -> None:
    with openprogram.session_context(store=store) as h:
        assert add.invoke({"a": 2, "b": 3}) == 5
    records = calls(store, h.session_id)
    assert [r.kind for r in records] == ["turn", "tool"]
    call = one(records, "add", "tool")
    assert (call.framework, call.status, call.inputs, call.output) == ("langchain", "ok", {"a": 2, "b": 3}, 5)
    assert call.parent_id == one(records, "main", "turn").call_id


async def test_an_async_tool_is_recorded_too(store: Any) -> None:
    async with openprogram.session_context(store=store) as h:
        assert await negate.ainvoke({"a": 4}) == -4
    call = one(calls(store, h.session_id), "negate", "tool")
    assert (call.framework, call.status, call.output) == ("langchain", "ok", -4)


def test_a_failing_tool_is_an_error_and_its_exception_passes_unchanged(store: Any) -> None:
    with openprogram.session_context(store=store) as h, pytest.raises(ValueError, match="broken tool"):
        broken.invoke({"x": 1})
    call = one(calls(store, h.session_id), "broken", "tool")
    assert call.status == "error" and "broken tool" in (call.error or "")


def test_a_model_asking_for_a_tool_then_answering_gives_llm_tool_llm_under_the_turn(store: Any) -> None:
    model = calling(("add", {"a": 1, "b": 2}), then="3")
    with openprogram.session_context(store=store) as h:
        asked = model.bind(tools=[convert_to_openai_tool(add)]).invoke("1 + 2?")  # the fake has no bind_tools
        result = add.invoke(asked.tool_calls[0])  # a ToolCall: LangChain answers with a ToolMessage
        assert model.invoke(["1 + 2?", asked, result]).content == "3"
    records = calls(store, h.session_id)
    assert [(r.kind, r.name) for r in records[1:]] == [
        ("llm", "FakeMessagesListChatModel"),
        ("tool", "add"),
        ("llm", "FakeMessagesListChatModel"),
    ]
    assert records[1].inputs["tools"] == ["add"]
    assert records[1].output["tool_calls"] == [{"id": "call-0", "name": "add", "arguments": {"a": 1, "b": 2}}]
    assert records[2].output == "3"  # the ToolMessage's content (LangChain makes it text)
    assert [m["role"] for m in records[3].inputs["messages"]] == ["user", "assistant", "tool"]


@openprogram.tool
def research(question: str) -> str:
    """A plain function the program records, using LangChain inside."""
    total = add.invoke({"a": 20, "b": 22})
    return f"{listed('the answer').invoke(question).content} is {total}"


def test_model_requests_and_tools_nest_under_an_openprogram_tool(store: Any) -> None:
    with openprogram.session_context(store=store) as h:
        assert research("what?") == "the answer is 42"
    records = calls(store, h.session_id)
    outer = one(records, "research", "tool")
    assert outer.framework is None and outer.parent_id == one(records, "main", "turn").call_id
    assert one(records, "add", "tool").parent_id == outer.call_id
    (llm,) = by_kind(records, "llm")
    assert (llm.parent_id, llm.framework) == (outer.call_id, "langchain")


@tool
@openprogram.tool
def lookup(city: str) -> str:
    """A LangChain tool built on an @openprogram.tool function."""
    return city.upper()


def test_a_tool_built_on_an_openprogram_tool_is_recorded_once(store: Any) -> None:
    with openprogram.session_context(store=store) as h:
        assert lookup.invoke({"city": "oslo"}) == "OSLO"
    (call,) = by_kind(calls(store, h.session_id), "tool")
    assert (call.name, call.status, call.inputs) == ("lookup", "ok", {"city": "oslo"})


def test_arguments_rejected_before_an_openprogram_tool_ran_are_its_call_ending_error(store: Any) -> None:
    with openprogram.session_context(store=store) as h, pytest.raises(Exception, match="validation error") as info:
        lookup.invoke({"town": "oslo"})  # no `city`: LangChain refuses before the function runs
    (call,) = by_kind(calls(store, h.session_id), "tool")
    assert (call.name, call.framework, call.status, call.inputs) == ("lookup", "langchain", "error", {"town": "oslo"})
    assert type(info.value).__name__ in (call.error or "")


def test_with_no_session_open_calls_join_the_implicit_session(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="openprogram")
    assert listed("fine").invoke("no session here").content == "fine"
    assert add.invoke({"a": 1, "b": 1}) == 2
    implicit = openprogram.implicit_session()
    assert implicit is not None
    openprogram.flush()
    records = calls(openprogram.open_store(), implicit.session_id)
    assert [(r.kind, r.framework) for r in records if r.kind != "turn"] == [("llm", "langchain"), ("tool", "langchain")]
    assert any(implicit.session_id in r.getMessage() for r in caplog.records)  # announced once


def test_with_the_error_policy_a_model_request_with_no_session_raises_and_with_warn_runs_unrecorded() -> None:
    try:
        openprogram.configure(no_session="warn")
        assert listed("unrecorded").invoke("hi").content == "unrecorded"
        assert add.invoke({"a": 1, "b": 2}) == 3
        assert openprogram.implicit_session() is None
        openprogram.configure(no_session="error")
        with pytest.raises(openprogram.NoSessionError):
            add.invoke({"a": 1, "b": 2})
    finally:
        openprogram.configure(no_session="auto")

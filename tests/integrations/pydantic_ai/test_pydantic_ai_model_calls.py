"""Every model request of a run is one ``llm`` call under that run, in the one shape for every framework."""

from __future__ import annotations

import asyncio
from typing import Any

import openprogram
import pytest
from openprogram.stores import Store
from pydantic_ai import Agent
from pydantic_ai.models.test import TestModel
from pydantic_ai.settings import ModelSettings
from pydantic_ai.usage import RunUsage

from tests.integrations.pydantic_ai.fakes import MODEL, ProviderDown, failing, scripted, sent_tokens, words
from tests.integrations.pydantic_ai.helpers import parent_of
from tests.support import attributes, by_kind, calls, one

pytestmark = pytest.mark.usefixtures("instrumented")


def _usage(input_tokens: int, output_tokens: int) -> dict[str, int]:
    return {"input_tokens": input_tokens, "output_tokens": output_tokens, "total_tokens": input_tokens + output_tokens}


def _run_usage(result: Any) -> RunUsage:
    """The usage Pydantic AI accounted for a run (a method in 2.0, a property in later releases)."""
    accounted = result.usage
    return accounted if isinstance(accounted, RunUsage) else accounted()


def _agent(model: Any, **kwargs: Any) -> Agent[None, str]:
    agent = Agent(model, name="asker", instructions="You add numbers.", **kwargs)

    @agent.tool_plain
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    return agent


def test_each_request_is_one_llm_call_with_messages_tools_params_reply_and_reported_usage(store: Store) -> None:
    settings = ModelSettings(temperature=0.2, max_tokens=64, stop_sequences=["END"])
    agent = _agent(scripted([[("add", {"a": 2, "b": 3})]], final="2 + 3 = 5"), model_settings=settings)
    with openprogram.session_context(store=store) as h:
        result = agent.run_sync("What is 2 + 3?")
    records = calls(store, h.session_id)
    asked, answered = by_kind(records, "llm")
    run = one(records, "asker", "agent")
    assert [parent_of(records, r) for r in (asked, answered)] == [run, run]
    assert (asked.name, asked.framework, asked.status) == (MODEL, "pydantic_ai", "ok")
    assert asked.inputs == {
        "messages": [{"role": "system", "content": "You add numbers."}, {"role": "user", "content": "What is 2 + 3?"}],
        "tools": ["add"],
        "params": {"temperature": 0.2, "max_tokens": 64, "stop": ["END"]},
    }
    assert asked.output == {
        "role": "assistant",
        "content": None,
        "finish_reason": "tool_call",
        "tool_calls": [{"id": "call-0-0", "name": "add", "arguments": {"a": 2, "b": 3}}],
    }
    assert answered.inputs["messages"][2:] == [
        {"role": "assistant", "content": None, "tool_calls": asked.output["tool_calls"]},
        {"role": "tool", "content": 5, "tool_call_id": "call-0-0"},
    ]
    assert answered.output == {"role": "assistant", "content": "2 + 3 = 5", "finish_reason": "stop"}
    asked_tokens = sent_tokens(result.all_messages()[:1])
    assert attributes(asked) == {
        "model": MODEL,
        "provider": "function",
        "usage": _usage(asked_tokens, words('{"a": 2, "b": 3}')),
    }
    total = _run_usage(result)
    assert [sum(attributes(r)["usage"][k] for r in (asked, answered)) for k in ("input_tokens", "output_tokens")] == [
        total.input_tokens,
        total.output_tokens,
    ]


def test_test_model_requests_record_the_usage_pydantic_ai_accounted(store: Store) -> None:
    agent = _agent(TestModel())
    with openprogram.session_context(store=store) as h:
        result = agent.run_sync("add something")
    requests = by_kind(calls(store, h.session_id), "llm")
    assert [(r.name, attributes(r)["provider"]) for r in requests] == [("test", "test")] * 2
    total = _run_usage(result)
    assert sum(attributes(r)["usage"]["total_tokens"] for r in requests) == total.input_tokens + total.output_tokens


def test_streamed_request_is_one_llm_call_with_stream_true_and_the_joined_reply(store: Store) -> None:
    agent = _agent(scripted([[("add", {"a": 1, "b": 1})]], final="one and one make two"))

    async def stream() -> tuple[list[str], Any]:
        async with agent.run_stream("1 + 1?") as result:
            pieces = [piece async for piece in result.stream_text(delta=True, debounce_by=None)]
        return pieces, result

    with openprogram.session_context(store=store) as h:
        pieces, result = asyncio.run(stream())
    assert len(pieces) > 1 and "".join(pieces) == "one and one make two"
    records = calls(store, h.session_id)
    asked, answered = by_kind(records, "llm")
    assert [attributes(r)["stream"] for r in (asked, answered)] == [True, True]
    assert asked.output["tool_calls"] == [{"id": "call-0-0", "name": "add", "arguments": {"a": 1, "b": 1}}]
    assert answered.output["content"] == "one and one make two"
    assert answered.status == "ok" and parent_of(records, answered) == one(records, "asker", "agent")
    total = _run_usage(result)
    assert sum(attributes(r)["usage"]["output_tokens"] for r in (asked, answered)) == total.output_tokens


def test_a_stream_left_early_ends_its_llm_call_and_its_run(store: Store) -> None:
    agent = _agent(scripted([], final="a long answer in many small pieces"))

    async def first_piece() -> str:
        async with agent.run_stream("talk") as result:
            async for piece in result.stream_text(delta=True, debounce_by=None):
                return piece
        raise AssertionError("no piece")

    with openprogram.session_context(store=store) as h:
        assert asyncio.run(first_piece()) == "a "
    records = calls(store, h.session_id)
    (request,) = by_kind(records, "llm")
    assert request.status != "running" and one(records, "asker", "agent").status != "running"


@pytest.mark.parametrize("streamed", [False, True], ids=["request", "stream"])
def test_a_failing_request_is_an_llm_error_and_the_providers_exception_reaches_the_caller(
    store: Store, streamed: bool
) -> None:
    agent = _agent(failing())

    async def ask() -> Any:
        if streamed:
            async with agent.run_stream("hello?") as result:
                return await result.get_output()
        return await agent.run("hello?")

    with openprogram.session_context(store=store) as h, pytest.raises(ProviderDown) as raised:
        asyncio.run(ask())
    assert raised.value.status_code == 503
    records = calls(store, h.session_id)
    (request,) = by_kind(records, "llm")
    assert (request.name, request.output, attributes(request).get("stream", False)) == ("gpt-down", None, streamed)
    assert "usage" not in attributes(request)
    if request.status == "interrupted":
        # Newer releases raise a stream's failure in the task consuming it and cancel the request's hooks.
        assert streamed and (request.error or "").startswith("CancelledError")
    else:
        assert request.status == "error" and "ProviderDown" in (request.error or "")
    assert "ProviderDown" in (one(records, "asker", "agent").error or "")


def test_requests_of_one_model_shared_by_a_run_and_a_nested_run_are_each_recorded(store: Store) -> None:
    model = TestModel()
    inner = Agent(model, name="inner")
    outer = Agent(model, name="outer")

    @outer.tool_plain
    async def delegate() -> str:
        return (await inner.run("help")).output

    with openprogram.session_context(store=store) as h:
        outer.run_sync("go")
    records = calls(store, h.session_id)
    inner_run = one(records, "inner", "agent")
    assert [parent_of(records, r).name for r in by_kind(records, "llm")] == ["outer", "inner", "outer"]  # type: ignore[union-attr]
    assert parent_of(records, inner_run) == one(records, "delegate", "tool")

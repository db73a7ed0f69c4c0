"""Chat completion requests as ``llm`` calls: one per round of auto function calling, streamed or not."""

from __future__ import annotations

from typing import Any

import openprogram
import pytest
from openprogram.integrations.semantic_kernel.fakes import (
    ScriptedChatService,
    calls_message,
    text_message,
    tools_then_answer,
)
from semantic_kernel import Kernel
from semantic_kernel.connectors.ai.chat_completion_client_base import ChatCompletionClientBase
from semantic_kernel.connectors.ai.function_choice_behavior import FunctionChoiceBehavior
from semantic_kernel.connectors.ai.open_ai import OpenAIChatPromptExecutionSettings
from semantic_kernel.connectors.ai.prompt_execution_settings import PromptExecutionSettings
from semantic_kernel.contents import ChatHistory
from semantic_kernel.exceptions import KernelInvokeException
from semantic_kernel.filters.auto_function_invocation.auto_function_invocation_context import (
    AutoFunctionInvocationContext,
)
from semantic_kernel.functions import KernelArguments

from tests.integrations.semantic_kernel.fake_openai import ScriptedOpenAI, text, tool_calls
from tests.integrations.semantic_kernel.plugins import Boom, Weather
from tests.support import attributes, by_kind, calls, one

ROUND = "_inner_get_chat_message_contents"
STREAMED_ROUND = "_inner_get_streaming_chat_message_contents"
TWO_CALLS = [("weather", "forecast", {"city": "Oslo"}), ("weather", "temperature", {"city": "Oslo"})]
# SK 1.30's auto-invocation context lacks the model's call: its functions carry no tool_call_id.
TOOL_CALL_IDS = "function_call_content" in AutoFunctionInvocationContext.model_fields


def make_kernel(service: ChatCompletionClientBase) -> Kernel:
    kernel = Kernel()
    kernel.add_plugin(Weather(), "weather")
    kernel.add_service(service)
    return kernel


def auto_settings(**params: Any) -> OpenAIChatPromptExecutionSettings:
    return OpenAIChatPromptExecutionSettings(function_choice_behavior=FunctionChoiceBehavior.Auto(), **params)


def usage_of(request: dict[str, Any]) -> dict[str, int]:
    """The usage attribute for what the scripted service reported for one request."""
    reported = request["usage"]
    total = reported.prompt_tokens + reported.completion_tokens
    return {"input_tokens": reported.prompt_tokens, "output_tokens": reported.completion_tokens, "total_tokens": total}


def children(records: list[Any], parent: Any) -> list[Any]:
    return [r for r in records if r.parent_id == parent.call_id]


@pytest.mark.parametrize("streamed", [False, True], ids=["invoke_prompt", "invoke_prompt_stream"])
async def test_each_round_of_auto_function_calling_is_one_llm_call_before_the_tools_it_asked_for(
    store: Any, instrumented: None, streamed: bool
) -> None:
    service = ScriptedChatService(default_step=tools_then_answer(TWO_CALLS, "sunny and 21"))
    kernel = make_kernel(service)
    arguments = KernelArguments(settings=auto_settings(temperature=0.2, max_tokens=64))
    async with openprogram.session_context(store=store) as h:
        if streamed:
            async for _ in kernel.invoke_prompt_stream("Weather in Oslo?", arguments=arguments):
                pass
        else:
            await kernel.invoke_prompt("Weather in Oslo?", arguments=arguments)
    records = calls(store, h.session_id)
    prompt = one(records, "prompt")
    assert prompt.parent_id == h.root_call_id and prompt.inputs == {"prompt": "Weather in Oslo?"}
    first, f1, f2, second = children(records, prompt)
    assert [r.kind for r in (first, f1, f2, second)] == ["llm", "function", "function", "llm"]
    for llm, request in zip((first, second), service.requests, strict=True):
        assert (llm.name, llm.status, llm.framework) == ("scripted-model", "ok", "semantic_kernel")
        expected = {"model": "scripted-model", "provider": "scripted", "usage": usage_of(request)}
        assert attributes(llm) == ({**expected, "stream": True} if streamed else expected)
        assert set(llm.inputs["tools"]) >= {"weather-forecast", "weather-temperature"}
        assert llm.inputs["params"] == {"temperature": 0.2, "max_tokens": 64}
    assert first.inputs["messages"] == [{"role": "user", "content": "Weather in Oslo?"}]
    asked = first.output["tool_calls"]
    assert first.output["finish_reason"] == "tool_calls"
    assert [(c["name"], c["arguments"]) for c in asked] == [
        ("weather-forecast", {"city": "Oslo"}),
        ("weather-temperature", {"city": "Oslo"}),
    ]
    assert {f1.name, f2.name} == {"weather.forecast", "weather.temperature"}
    if TOOL_CALL_IDS:
        assert {f.attributes["tool_call_id"] for f in (f1, f2)} == {c["id"] for c in asked}
    # the second round is sent the first one's tool calls and their results
    _user, assistant, *results = second.inputs["messages"]
    assert assistant == {"role": "assistant", "content": None, "tool_calls": asked}
    assert sorted((m["role"], m["tool_call_id"], m["content"]) for m in results) == sorted(
        [("tool", asked[0]["id"], "sunny in Oslo"), ("tool", asked[1]["id"], "21")]
    )
    assert second.output["content"].strip() == "sunny and 21" and second.output["finish_reason"] == "stop"


async def test_real_openai_connector_rounds_with_its_usage_and_tool_call_pieces_joined(
    store: Any, instrumented: None
) -> None:
    # The connector overrides both round methods: its own are patched, on its first request.
    fake = ScriptedOpenAI(
        tool_calls(("call_a", "weather-forecast", {"city": "Oslo"})),
        text("snow in Oslo"),
        tool_calls(("call_b", "weather-forecast", {"city": "Rome"})),
        text("warm in Rome"),
    )
    kernel = make_kernel(fake.service())
    arguments = KernelArguments(settings=auto_settings(top_p=0.5))
    async with openprogram.session_context(store=store) as h:
        assert str(await kernel.invoke_prompt("Oslo?", arguments=arguments)) == "snow in Oslo"
        async for _ in kernel.invoke_prompt_stream("Rome?", arguments=arguments):
            pass
    llms = by_kind(calls(store, h.session_id), "llm")
    assert [r.name for r in llms] == ["gpt-4o-mini"] * 4 and {attributes(r)["provider"] for r in llms} == {"openai"}
    assert [attributes(r)["usage"]["input_tokens"] for r in llms] == [10, 20, 30, 40]  # what each reply reported
    assert [attributes(r).get("stream", False) for r in llms] == [False, False, True, True]
    assert llms[2].output["tool_calls"] == [{"id": "call_b", "name": "weather-forecast", "arguments": {"city": "Rome"}}]
    assert llms[3].output["content"].strip() == "warm in Rome"
    assert [r.inputs["params"] for r in llms] == [{"top_p": 0.5}] * 4
    assert fake.bodies[1]["messages"][-1]["tool_call_id"] == "call_a"


async def test_a_failing_service_is_an_error_llm_call_and_its_exception_reaches_the_caller_unchanged(
    store: Any, instrumented: None
) -> None:
    boom, stream_boom = Boom("model down"), Boom("stream down")
    service = ScriptedChatService(script=[boom, stream_boom])
    history = ChatHistory()
    history.add_user_message("hi")
    async with openprogram.session_context(store=store) as h:
        with pytest.raises(Boom) as raised:
            await service.get_chat_message_contents(history, PromptExecutionSettings())
        with pytest.raises(Boom) as stream_raised:
            async for _ in service.get_streaming_chat_message_contents(history, PromptExecutionSettings()):
                pass
    assert raised.value is boom and stream_raised.value is stream_boom
    failed, failed_stream = by_kind(calls(store, h.session_id), "llm")
    assert (failed.status, failed.error) == ("error", "Boom: model down")
    assert (failed_stream.status, failed_stream.error) == ("error", "Boom: stream down")
    assert failed.inputs == {"messages": [{"role": "user", "content": "hi"}]} and failed.output is None


async def test_a_failing_request_inside_invoke_prompt_fails_its_llm_call_and_the_prompt(
    store: Any, instrumented: None
) -> None:
    fake = ScriptedOpenAI(500)
    kernel = make_kernel(fake.service())
    async with openprogram.session_context(store=store) as h:
        with pytest.raises(Exception) as raised:
            await kernel.invoke_prompt("Oslo?")
    records = calls(store, h.session_id)
    prompt, llm = one(records, "prompt"), one(records, "gpt-4o-mini", "llm")
    assert (prompt.status, llm.status, llm.parent_id) == ("error", "error", prompt.call_id)
    cause = raised.value
    while cause.__cause__ is not None:
        cause = cause.__cause__
    assert type(cause).__name__ in (llm.error or "")  # the connector's own exception, as SK chains it


@pytest.mark.parametrize("consumer", ["kernel", "service"])
async def test_an_abandoned_streamed_round_is_interrupted_at_once_with_what_arrived(
    store: Any, instrumented: None, consumer: str
) -> None:
    service = ScriptedChatService(default_step=text_message("one two three four"))
    kernel = make_kernel(service)
    history = ChatHistory()
    history.add_user_message("count")
    async with openprogram.session_context(store=store) as h:
        if consumer == "kernel":
            stream: Any = kernel.invoke_prompt_stream("count")
        else:
            stream = service.get_streaming_chat_message_contents(history, PromptExecutionSettings())
        async for _ in stream:
            break
        await stream.aclose()
        openprogram.flush()  # no loop turn, no garbage collection: SK alone leaves the round's stream open
        llm = one(store.list_calls(h.session_id), "scripted-model", "llm")
    assert llm.status == "interrupted" and llm.ended_at is not None
    assert llm.output["content"] == "one " and "usage" not in attributes(llm)  # usage comes in the last chunk


async def test_a_connector_subclass_calling_super_is_one_request(store: Any, instrumented: None) -> None:
    class Retrying(ScriptedChatService):
        async def _inner_get_chat_message_contents(self, chat_history: Any, settings: Any) -> Any:
            return await super()._inner_get_chat_message_contents(chat_history, settings)

        async def _inner_get_streaming_chat_message_contents(self, *args: Any, **kwargs: Any) -> Any:
            async for chunk in super()._inner_get_streaming_chat_message_contents(*args, **kwargs):
                yield chunk

    service = Retrying(default_step=text_message("fine"))
    kernel = make_kernel(service)
    async with openprogram.session_context(store=store) as h:
        await kernel.invoke_prompt("a")
        async for _ in kernel.invoke_prompt_stream("b"):
            pass
    llms = by_kind(calls(store, h.session_id), "llm")
    assert [(r.status, attributes(r).get("stream", False)) for r in llms] == [("ok", False), ("ok", True)]
    assert all(attributes(r)["usage"] for r in llms)


async def test_content_capture_off_keeps_model_usage_and_status_and_drops_messages(
    store: Any, instrumented: None
) -> None:
    openprogram.configure(capture_content=False)
    service = ScriptedChatService(default_step=tools_then_answer(TWO_CALLS, "secret answer"))
    kernel = make_kernel(service)
    async with openprogram.session_context(store=store) as h:
        await kernel.invoke_prompt("secret question", arguments=KernelArguments(settings=auto_settings()))
        async for _ in kernel.invoke_prompt_stream(
            "secret question", arguments=KernelArguments(settings=auto_settings())
        ):
            pass
    records = calls(store, h.session_id)
    llms = by_kind(records, "llm")
    assert len(llms) == 4 and all(r.status == "ok" for r in llms)
    assert all(r.inputs is None and r.output is None for r in records)
    assert [attributes(r)["usage"] for r in llms] == [usage_of(request) for request in service.requests]
    assert {attributes(r)["model"] for r in llms} == {"scripted-model"}
    assert "secret" not in repr([(r.inputs, r.output, r.attributes) for r in records])


async def test_no_tools_are_listed_for_a_request_that_offers_none(store: Any, instrumented: None) -> None:
    service = ScriptedChatService(script=[calls_message(*TWO_CALLS), text_message("done")])
    kernel = make_kernel(service)
    settings = auto_settings()
    settings.function_choice_behavior.maximum_auto_invoke_attempts = 1  # type: ignore[union-attr]
    async with openprogram.session_context(store=store) as h:
        await kernel.invoke_prompt("go", arguments=KernelArguments(settings=settings))
    first, last = by_kind(calls(store, h.session_id), "llm")
    # SK's last round, after the attempts ran out, is sent without tools
    assert "tools" in first.inputs and "tools" not in last.inputs
    assert service.requests[1]["tools"] is None


async def test_uninstrument_restores_the_round_methods_it_wrapped(store: Any) -> None:
    class Fresh(ScriptedChatService):
        async def _inner_get_chat_message_contents(self, chat_history: Any, settings: Any) -> Any:
            return await super()._inner_get_chat_message_contents(chat_history, settings)

    own = {
        cls: {a: cls.__dict__[a] for a in (ROUND, STREAMED_ROUND) if a in cls.__dict__}
        for cls in (Fresh, ScriptedChatService)
    }
    history = ChatHistory()
    history.add_user_message("hi")
    openprogram.instrument("semantic_kernel")
    try:
        async with openprogram.session_context(store=store) as h:
            await Fresh().get_chat_message_contents(history, PromptExecutionSettings())
        assert Fresh.__dict__[ROUND] is not own[Fresh][ROUND]
        assert ScriptedChatService.__dict__[STREAMED_ROUND] is not own[ScriptedChatService][STREAMED_ROUND]
    finally:
        openprogram.uninstrument("semantic_kernel")
    assert {cls: {a: cls.__dict__[a] for a in attrs} for cls, attrs in own.items()} == own
    async with openprogram.session_context(store=store) as after:
        await Fresh().get_chat_message_contents(history, PromptExecutionSettings())
    assert [r.kind for r in calls(store, h.session_id)] == ["turn", "llm"]
    assert [r.kind for r in calls(store, after.session_id)] == ["turn"]


async def test_a_prompt_that_fails_to_render_is_an_error_prompt_call(store: Any, instrumented: None) -> None:
    kernel = make_kernel(ScriptedChatService())
    async with openprogram.session_context(store=store) as h:
        with pytest.raises(KernelInvokeException) as raised:
            await kernel.invoke_prompt("{{nowhere.nothing}}")
    records = calls(store, h.session_id)
    prompt = one(records, "prompt")
    assert prompt.status == "error" and prompt.inputs is None and not by_kind(records, "llm")
    assert (prompt.error or "").startswith(type(raised.value.__cause__).__name__)  # SK's render error

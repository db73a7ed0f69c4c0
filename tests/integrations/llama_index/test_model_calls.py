"""LLM chat requests as ``llm`` calls: ``chat``, ``achat``, ``stream_chat``, ``astream_chat``, for every LLM class."""

from __future__ import annotations

import asyncio
from typing import Any

import openprogram
import pytest
from llama_index.core.base.llms.types import ChatMessage, CompletionResponse, LLMMetadata
from llama_index.core.llms import MockLLM
from llama_index.core.llms.custom import CustomLLM
from openprogram.integrations.llama_index.fakes import scripted_llm
from openprogram.stores import Store

from tests.support import attributes, by_kind, calls

pytestmark = pytest.mark.usefixtures("instrumented")

QUESTION = [ChatMessage(role="system", content="Be brief."), ChatMessage(role="user", content="weather in Paris?")]


def llm_calls(store: Store, session_id: str) -> list[openprogram.CallRecord]:
    return by_kind(calls(store, session_id), "llm")


def test_chat_and_achat_are_one_llm_call_each_with_messages_reply_and_usage(store: Store) -> None:
    llm = scripted_llm([[("forecast", {"city": "Paris"})]], final="sunny", model="gpt-fake")
    with openprogram.session_context(store=store) as h:
        first = llm.chat(QUESTION)
        second = asyncio.run(llm.achat([*QUESTION, first.message, _tool_result("call-0-0", "Paris: sunny")]))
    assert second.message.content == "sunny"
    asked, answered = llm_calls(store, h.session_id)
    assert asked.name == "gpt-fake"
    assert asked.inputs == {
        "messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "weather in Paris?"}]
    }
    assert asked.output == {
        "role": "assistant",
        "content": "",
        "tool_calls": [{"id": "call-0-0", "name": "forecast", "arguments": {"city": "Paris"}}],
    }
    assert attributes(asked) == {
        "model": "gpt-fake",
        "usage": {"input_tokens": 5, "output_tokens": 4, "total_tokens": 9},
    }
    assert answered.inputs["messages"][2:] == [
        asked.output,
        {"role": "tool", "content": "Paris: sunny", "tool_call_id": "call-0-0"},
    ]
    assert answered.output == {"role": "assistant", "content": "sunny"}


def test_a_streamed_request_is_one_call_ended_with_the_whole_reply(store: Store) -> None:
    llm = scripted_llm([], final="it will be sunny", model="gpt-fake")

    async def both() -> list[str]:
        deltas = [chunk.delta for chunk in llm.stream_chat(QUESTION)]
        deltas += [chunk.delta async for chunk in await llm.astream_chat(QUESTION)]
        return deltas

    with openprogram.session_context(store=store) as h:
        assert "".join(asyncio.run(both())) == "it will be sunny" * 2
    records = llm_calls(store, h.session_id)
    assert [(r.status, r.output, attributes(r)["stream"]) for r in records] == [
        ("ok", {"role": "assistant", "content": "it will be sunny"}, True)
    ] * 2
    assert attributes(records[0])["usage"] == {"input_tokens": 5, "output_tokens": 4, "total_tokens": 9}


def test_a_stream_the_reader_leaves_early_ends_interrupted_with_what_arrived(store: Store) -> None:
    llm = scripted_llm([], final="one two three four", model="gpt-fake")
    with openprogram.session_context(store=store) as h:
        chunks = llm.stream_chat(QUESTION)
        next(chunks)
        chunks.close()
    (record,) = llm_calls(store, h.session_id)
    assert (record.status, record.output) == ("interrupted", {"role": "assistant", "content": "one"})


class Echo(CustomLLM):
    """A user's own LLM class, defined after instrument(): only ``complete`` is its own."""

    @property
    def metadata(self) -> LLMMetadata:
        return LLMMetadata(model_name="echo-1")

    def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        if "fail" in prompt:
            raise RuntimeError("echo is down")
        return CompletionResponse(text=f"echo: {prompt.splitlines()[-2]}")

    def stream_complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> Any:
        yield CompletionResponse(text="echo", delta="echo")


def test_a_users_llm_class_and_mock_llm_record_each_request_once(store: Store) -> None:
    with openprogram.session_context(store=store) as h:
        Echo().chat(QUESTION)
        asyncio.run(Echo().achat(QUESTION))  # CustomLLM.achat calls chat: one request
        MockLLM(max_tokens=3).chat(QUESTION)
    records = llm_calls(store, h.session_id)
    assert [r.name for r in records] == ["echo-1", "echo-1", "MockLLM"]
    assert records[0].output == {"role": "assistant", "content": "echo: user: weather in Paris?"}
    assert records[2].inputs["params"] == {"max_tokens": 3}


def test_a_request_that_raises_is_an_error_call_and_the_users_exception(store: Store) -> None:
    with openprogram.session_context(store=store) as h, pytest.raises(RuntimeError, match="echo is down") as caught:
        Echo().chat([ChatMessage(role="user", content="fail")])
    (record,) = llm_calls(store, h.session_id)
    assert record.status == "error" and "echo is down" in str(record.error)
    assert type(caught.value) is RuntimeError


def test_with_content_capture_off_a_request_keeps_its_model_and_usage_only(store: Store) -> None:
    openprogram.configure(capture_content=False)
    try:
        with openprogram.session_context(store=store) as h:
            scripted_llm([], final="secret answer", model="gpt-fake").chat(QUESTION)
    finally:
        openprogram.configure(capture_content=True)
    (record,) = llm_calls(store, h.session_id)
    assert (record.inputs, record.output) == (None, None)
    assert attributes(record)["usage"]["total_tokens"] == 7


def _tool_result(call_id: str, content: str) -> ChatMessage:
    return ChatMessage(role="tool", content=content, additional_kwargs={"tool_call_id": call_id})


def test_messages_sent_as_tool_call_blocks_are_read_too(store: Store) -> None:
    types = pytest.importorskip("llama_index.core.base.llms.types")
    if not hasattr(types, "ToolCallBlock"):
        pytest.skip("tool call blocks arrived after the lowest supported release")
    asked = ChatMessage(
        role="assistant",
        blocks=[types.ToolCallBlock(tool_call_id="t1", tool_name="forecast", tool_kwargs={"city": "Nice"})],
    )
    with openprogram.session_context(store=store) as h:
        scripted_llm([], final="ok").chat([*QUESTION, asked, _tool_result("t1", "sunny")])
    (record,) = llm_calls(store, h.session_id)
    assert record.inputs["messages"][2]["tool_calls"] == [
        {"id": "t1", "name": "forecast", "arguments": {"city": "Nice"}}
    ]

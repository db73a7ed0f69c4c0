"""The kit's model calls (``llm``): one shape for every framework, streams joined, content capture off."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from typing import Any

import openprogram
import pytest
from openprogram import _kit
from openprogram._kit import (
    ModelCall,
    ModelStream,
    async_steps_under_call,
    message,
    model_inputs,
    reply,
    steps_under_call,
    tool_call,
    usage,
)

from tests.support import attributes, by_kind, calls, one


class Client:
    """A stand-in for a framework's chat model object: what a request is made by."""

    model = "fake-model"


def request(client: object, stream: bool = False, cls: type[ModelCall] = ModelCall) -> Any:
    return cls.request(
        "toy",
        "fake-model",
        lambda: model_inputs([message("human", "hi")], tools=["search"], params={"temperature": 0.2, "top_p": None}),
        provider="fake",
        stream=stream,
        client=client,
    )


def test_the_shapes_are_the_designs() -> None:
    assert message("ai", "x", tool_calls=[tool_call(1, "f", '{"a": 1}')]) == {
        "role": "assistant",
        "content": "x",
        "tool_calls": [{"id": "1", "name": "f", "arguments": {"a": 1}}],
    }
    assert message("function", "42", tool_call_id="c1") == {"role": "tool", "content": "42", "tool_call_id": "c1"}
    assert message("developer", "be brief")["role"] == "system"
    assert tool_call("c", "f", "{not json")["arguments"] == "{not json"  # kept as the model sent it
    assert reply("ok", finish_reason="stop") == {"role": "assistant", "content": "ok", "finish_reason": "stop"}
    assert usage(3, 4) == {"input_tokens": 3, "output_tokens": 4, "total_tokens": 7}
    assert usage(None, None) is None
    assert usage(5, None) == {"input_tokens": 5}
    assert model_inputs([], tools=[None], params={"stop": None}) == {"messages": []}


def test_a_request_is_an_llm_call_under_the_call_that_asked(store: openprogram.Store) -> None:
    client = Client()

    @openprogram.tool
    def ask() -> str:
        call = request(client)
        with call:
            text = "hello"
        call.answered(reply(text, finish_reason="stop"), usage(12, 3))
        return text

    with openprogram.session_context(store=store) as h:
        ask()
    records = calls(store, h.session_id)
    llm = one(records, "fake-model", "llm")
    assert llm.parent_id == one(records, "ask", "tool").call_id
    assert llm.status == "ok" and llm.framework == "toy"
    assert llm.inputs == {
        "messages": [{"role": "user", "content": "hi"}],
        "tools": ["search"],
        "params": {"temperature": 0.2},
    }
    assert llm.output == {"role": "assistant", "content": "hello", "finish_reason": "stop"}
    assert attributes(llm) == {
        "model": "fake-model",
        "provider": "fake",
        "usage": {"input_tokens": 12, "output_tokens": 3, "total_tokens": 15},
    }


def test_a_failed_request_is_an_error_call(store: openprogram.Store) -> None:
    with openprogram.session_context(store=store) as h:
        call = request(Client())
        call.failed(TimeoutError("the model timed out"))
    (llm,) = by_kind(calls(store, h.session_id), "llm")
    assert llm.status == "error" and llm.error == "TimeoutError: the model timed out"


def test_a_request_the_same_client_makes_inside_its_own_is_one_call(store: openprogram.Store) -> None:
    client, other = Client(), Client()
    with openprogram.session_context(store=store) as h:
        outer = request(client)
        with outer:
            assert request(client) is None  # the same request, through a fallback path
            inner = request(other)  # another model asked from inside: a request of its own
            assert inner is not None
            inner.answered(reply("inner"))
        outer.answered(reply("outer"))
        again = request(client)  # the same client later: a new request
        assert again is not None
        again.answered(reply("again"))
    records = by_kind(calls(store, h.session_id), "llm")
    assert [r.output["content"] for r in records] == ["outer", "inner", "again"]
    assert records[1].parent_id == records[0].call_id


def absorb_text(stream: ModelStream, item: Any) -> None:
    kind, *rest = item
    if kind == "text":
        stream.add_text(rest[0])
    elif kind == "tool":
        stream.add_tool_call(*rest)
    elif kind == "usage":
        stream.set_usage(usage(*rest))
        stream.set_finish_reason("tool_calls")


def chunks() -> Iterator[tuple[Any, ...]]:
    yield ("text", "Look")
    yield ("text", "ing up")
    yield ("tool", 0, "c1", "search", '{"q": ')
    yield ("tool", 0, None, None, '"x"}')
    yield ("usage", 9, 4)


def test_a_streamed_request_is_one_call_with_the_joined_reply(store: openprogram.Store) -> None:
    with openprogram.session_context(store=store) as h:
        stream = request(Client(), stream=True, cls=ModelStream)
        stream.absorb = absorb_text
        assert len(list(steps_under_call(chunks(), stream))) == 5
    (llm,) = by_kind(calls(store, h.session_id), "llm")
    assert llm.status == "ok"
    assert llm.output == {
        "role": "assistant",
        "content": "Looking up",
        "tool_calls": [{"id": "c1", "name": "search", "arguments": {"q": "x"}}],
        "finish_reason": "tool_calls",
    }
    assert attributes(llm)["stream"] is True
    assert attributes(llm)["usage"] == {"input_tokens": 9, "output_tokens": 4, "total_tokens": 13}


def test_an_abandoned_stream_ends_interrupted_at_once_with_what_arrived(store: openprogram.Store) -> None:
    with openprogram.session_context(store=store) as h:
        stream = request(Client(), stream=True, cls=ModelStream)
        stream.absorb = absorb_text
        gen = steps_under_call(chunks(), stream)
        assert next(gen) == ("text", "Look")
        gen.close()  # the consumer stops reading
        assert stream.ended
    (llm,) = by_kind(calls(store, h.session_id), "llm")
    assert llm.status == "interrupted" and llm.error is None
    assert llm.output == {"role": "assistant", "content": "Look"}


def test_an_async_stream_that_fails_is_an_error_call_and_the_error_passes_unchanged(
    store: openprogram.Store,
) -> None:
    failure = ConnectionError("stream reset")

    async def broken() -> AsyncIterator[tuple[Any, ...]]:
        yield ("text", "par")
        raise failure

    async def consume() -> None:
        stream = request(Client(), stream=True, cls=ModelStream)
        stream.absorb = absorb_text
        async for _ in async_steps_under_call(broken(), stream):
            pass

    with openprogram.session_context(store=store) as h:
        with pytest.raises(ConnectionError) as raised:
            asyncio.run(consume())
    assert raised.value is failure
    (llm,) = by_kind(calls(store, h.session_id), "llm")
    assert llm.status == "error" and llm.output == {"role": "assistant", "content": "par"}


def test_an_absorb_bug_is_logged_and_the_stream_goes_on(
    store: openprogram.Store, caplog: pytest.LogCaptureFixture
) -> None:
    def broken_absorb(stream: ModelStream, item: Any) -> None:
        raise KeyError("bug of ours")

    with openprogram.session_context(store=store) as h:
        stream = request(Client(), stream=True, cls=ModelStream)
        stream.absorb = broken_absorb
        assert len(list(steps_under_call(chunks(), stream))) == 5
    (llm,) = by_kind(calls(store, h.session_id), "llm")
    assert llm.status == "ok"
    assert "reading a streamed model reply" in caplog.text


@pytest.mark.parametrize("how", ["configure", "environment"])
def test_with_content_off_calls_keep_model_and_usage_but_no_inputs_or_outputs(
    how: str, store: openprogram.Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    if how == "configure":
        openprogram.configure(capture_content=False)
    else:
        monkeypatch.setenv("OPENPROGRAM_CAPTURE_CONTENT", "false")
    built: list[str] = []

    def inputs() -> dict[str, Any]:
        built.append("inputs")
        return model_inputs([message("user", "a secret plan")])

    @openprogram.tool
    def plan(text: str) -> str:
        call = ModelCall.request("toy", "fake-model", inputs, client=Client())
        assert call is not None
        call.answered(reply("the plan"), usage(5, 2))
        return text.upper()

    with openprogram.session_context(store=store) as h:
        plan("a secret plan")
    records = calls(store, h.session_id)
    assert built == []  # nothing is even built
    assert all(r.inputs is None and r.output is None for r in records)
    llm = one(records, "fake-model", "llm")
    assert attributes(llm) == {
        "model": "fake-model",
        "usage": {"input_tokens": 5, "output_tokens": 2, "total_tokens": 7},
    }
    assert one(records, "plan", "tool").status == "ok"


def test_configure_takes_only_a_bool_for_content_capture() -> None:
    with pytest.raises(TypeError, match="capture_content"):
        openprogram.configure(capture_content="no")  # type: ignore[arg-type]


class _Message:
    """A framework's message object (not a dict: those are translated every time)."""

    def __init__(self, text: str) -> None:
        self.text = text


def test_messages_of_translates_each_message_object_once_and_a_list_grown_in_place_stays_apart() -> None:
    translated: list[str] = []

    def translate(item: _Message) -> list[dict[str, Any]]:
        translated.append(item.text)
        return [_kit.message("user", item.text)]

    history = [_Message("a")]
    first = _kit.messages_of(history, translate)
    history.append(_Message("b"))  # the framework's own list, grown after the first request
    second = _kit.messages_of(history, translate)
    history.append(_Message("c"))
    third = _kit.messages_of(history, translate)
    rewritten = _kit.messages_of([history[0], _Message("z"), history[2]], translate)
    assert [[m["content"] for m in made] for made in (first, second, third, rewritten)] == [
        ["a"],
        ["a", "b"],
        ["a", "b", "c"],
        ["a", "z", "c"],
    ]
    assert translated == ["a", "b", "c", "z"]  # each object once
    assert second[0] is first[0] and third[:2] == second  # the same translations: compared by identity

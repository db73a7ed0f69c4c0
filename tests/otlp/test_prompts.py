"""Whole prompts on chat spans: a long conversation's every message, in order, live and by ``export otlp``.

A model call's prompt is stored as a reference to an earlier request plus its new messages;
its span carries the prompt whole (OpenInference ``llm.input_messages.*``, GenAI
``gen_ai.input.messages`` / ``gen_ai.system_instructions``, ``input.value``), the oldest
messages cut past ``OPENPROGRAM_OTLP_MAX_MESSAGES`` with a count of how many were.
"""

from __future__ import annotations

import functools
import json
import logging
from collections.abc import Callable
from typing import Any

import openprogram
import pytest
from openprogram import _otlp
from openprogram._kit import ModelCall, message, model_inputs, reply, tool_call, usage
from openprogram._otlp import messages as otlp_messages

from .conftest import CliRun
from .otlp_agents import Client
from .otlp_receiver import ReceivedSpan, Receiver

SYSTEM = "You plan trips."
# Tool results this long are stored once per session, as texts the records refer to.
RESULT = "r" * 600
OMITTED = "openprogram.prompt.messages_omitted"


def converse(requests: int, *, trim_at: int | None = None, start: int = 0) -> list[list[dict[str, Any]]]:
    """Record ``requests`` model requests of one growing conversation in the current session; each prompt sent.

    Every third reply asks for a tool, whose result joins the history; request ``trim_at`` sends
    a trimmed history (the system message and the last nine messages), as a framework that
    compacts its history does.
    """
    history = [message("system", SYSTEM)]
    for n in range(start):  # what earlier requests added (recorded by an earlier converse())
        history += _turn(n)
    sent = []
    for n in range(start, start + requests):
        history.append(message("user", f"question {n}"))
        prompt = [history[0], *history[-9:]] if n == trim_at else list(history)
        call = ModelCall.request(
            "langgraph",
            "gpt-test",
            functools.partial(model_inputs, prompt, ["search"]),
            provider="openai",
            client=Client(),
        )
        assert call is not None
        with call:
            pass
        answer = _answer(n)
        call.answered(answer, usage(10 * n + 1, 5))
        history += _turn(n)[1:]
        sent.append(prompt)
    return sent


def _answer(n: int) -> dict[str, Any]:
    if n % 3 == 1:
        return reply(None, tool_calls=[tool_call(f"c{n}", "search", {"q": n})], finish_reason="tool_calls")
    return reply(f"answer {n}", finish_reason="stop")


def _turn(n: int) -> list[dict[str, Any]]:
    """What request ``n`` adds to the history: the question, the reply and, after a tool call, its result."""
    added = [message("user", f"question {n}")]
    if n % 3 == 1:
        added.append(message("assistant", None, tool_calls=[tool_call(f"c{n}", "search", {"q": n})]))
        added.append(message("tool", f"results for {n}: {RESULT}", tool_call_id=f"c{n}"))
    else:
        added.append(message("assistant", f"answer {n}"))
    return added


def openinference(span: ReceivedSpan) -> list[dict[str, Any]]:
    """A span's ``llm.input_messages.{i}.message.*`` attributes, back as messages."""
    found: list[dict[str, Any]] = []
    attrs = span.attributes
    while f"llm.input_messages.{len(found)}.message.role" in attrs:
        prefix = f"llm.input_messages.{len(found)}.message"
        made: dict[str, Any] = {"role": attrs[f"{prefix}.role"], "content": attrs.get(f"{prefix}.content")}
        calls: list[dict[str, Any]] = []
        while f"{prefix}.tool_calls.{len(calls)}.tool_call.function.name" in attrs:
            key = f"{prefix}.tool_calls.{len(calls)}.tool_call"
            arguments = json.loads(attrs[f"{key}.function.arguments"])
            calls.append(tool_call(attrs[f"{key}.id"], attrs[f"{key}.function.name"], arguments))
        if calls:
            made["tool_calls"] = calls
        if f"{prefix}.tool_call_id" in attrs:
            made["tool_call_id"] = attrs[f"{prefix}.tool_call_id"]
        found.append(made)
    return found


def genai(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The GenAI conventions' input messages for recorded messages (system messages are instructions)."""
    converted = []
    for sent in messages:
        if sent["role"] == "system":
            continue
        if sent["role"] == "tool":
            parts = [{"type": "tool_call_response", "id": sent["tool_call_id"], "response": sent["content"]}]
        else:
            parts = [{"type": "text", "content": sent["content"]}] if sent["content"] else []
        parts += [
            {"type": "tool_call", "id": c["id"], "name": c["name"], "arguments": c["arguments"]}
            for c in sent.get("tool_calls", ())
        ]
        converted.append({"role": sent["role"], "parts": parts})
    return converted


def chats(spans: list[ReceivedSpan]) -> list[ReceivedSpan]:
    """The chat spans, in the order their requests began."""
    return sorted((s for s in spans if s.name == "chat gpt-test"), key=lambda s: s.start_time)


def assert_whole_prompts(spans: list[ReceivedSpan], sent: list[list[dict[str, Any]]]) -> None:
    """Each chat span carries its request's prompt whole, in order, in each of its forms."""
    found = chats(spans)
    assert len(found) == len(sent)
    for n, (span, prompt) in enumerate(zip(found, sent, strict=True)):
        assert openinference(span) == prompt, n
        assert json.loads(span.attributes["gen_ai.input.messages"]) == genai(prompt), n
        assert json.loads(span.attributes["gen_ai.system_instructions"]) == [{"type": "text", "content": SYSTEM}]
        assert json.loads(span.attributes["input.value"]) == {"messages": prompt, "tools": ["search"]}, n
        assert OMITTED not in span.attributes
        reply_parts = json.loads(span.attributes["gen_ai.output.messages"])
        assert reply_parts[0]["role"] == "assistant" and reply_parts[0]["finish_reason"] == _answer(n)["finish_reason"]


def test_export_otlp_sends_every_message_of_a_long_conversation_in_order(
    store_url: str, receiver: Receiver, export_cli: Callable[..., CliRun]
) -> None:
    with openprogram.session_context(store=store_url) as handle:
        sent = converse(60, trim_at=40)
    assert len(sent[-1]) > 100 and len(sent[40]) == 10  # the history grew; the trimmed request is short

    assert export_cli(handle.session_id, "--endpoint", receiver.url).code == 0
    assert_whole_prompts(receiver.wait_for(61), sent)


def test_live_export_sends_whole_prompts_without_reading_the_store_again(
    store_url: str, receiver: Receiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = openprogram.open_store(store_url)
    reads = count_prompt_reads(store, monkeypatch)
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.url)
    openprogram.configure(export="otlp")

    with openprogram.session_context(store=store):
        sent = converse(60, trim_at=40)
    assert _otlp.flush_export(30)

    assert_whole_prompts(receiver.wait_for(61), sent)
    assert reads == []  # each prompt made from the previous one's, kept in memory, and the messages written


def test_live_export_puts_back_long_texts_stored_once(
    store_url: str, receiver: Receiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    @openprogram.tool
    def search(query: str) -> str:
        return f"{query}: {RESULT}"

    store = openprogram.open_store(store_url)
    reads = count_prompt_reads(store, monkeypatch)
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.url)
    openprogram.configure(export="otlp")
    with openprogram.session_context(store=store):
        search(f"long {RESULT}")
        sent = converse(4)
    assert _otlp.flush_export(30)

    spans = receiver.wait_for(6)
    assert not [s.name for s in spans if "$text" in repr(s.attributes)]
    (tool,) = [s for s in spans if s.name == "execute_tool search"]
    assert json.loads(tool.attributes["input.value"]) == {"query": f"long {RESULT}"}
    assert json.loads(tool.attributes["output.value"]) == f"long {RESULT}: {RESULT}"
    assert_whole_prompts(spans, sent)
    assert reads == []


def test_live_export_started_mid_session_reads_the_earlier_prompt_from_the_store_once(
    store_url: str, receiver: Receiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = openprogram.open_store(store_url)
    reads = count_prompt_reads(store, monkeypatch)
    with openprogram.session_context(store=store) as handle:
        earlier = converse(30)
    openprogram.flush()
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.url)
    openprogram.configure(export="otlp")

    with openprogram.session_context(handle.session_id, store=store):
        later = converse(30, start=30)
    assert _otlp.flush_export(30)

    assert later[0][: len(earlier[-1])] == earlier[-1]  # the first request sent live continues one not exported
    assert_whole_prompts(receiver.wait_for(31), later)
    assert reads == [handle.session_id]  # the one the exporter had not seen: read once


def count_prompt_reads(store: openprogram.Store, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The sessions whose prompts are read from ``store`` from now on, one entry per read."""
    reads: list[str] = []
    read = store.prompt_reader

    def counted(session_id: str) -> Any:
        reads.append(session_id)
        return read(session_id)

    monkeypatch.setattr(store, "prompt_reader", counted)
    return reads


@pytest.mark.parametrize("path", ["live", "export otlp"])
def test_past_the_limit_the_oldest_messages_are_left_out_and_counted(
    path: str,
    store_url: str,
    receiver: Receiver,
    export_cli: Callable[..., CliRun],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENPROGRAM_OTLP_MAX_MESSAGES", "7")
    if path == "live":
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.url)
        openprogram.configure(export="otlp")
    with openprogram.session_context(store=store_url) as handle:
        sent = converse(12)
    if path == "live":
        assert _otlp.flush_export(30)
    else:
        assert export_cli(handle.session_id, "--endpoint", receiver.url).code == 0

    found = chats(receiver.wait_for(13))
    assert [len(openinference(span)) for span in found] == [min(len(prompt), 7) for prompt in sent]
    for span, prompt in zip(found, sent, strict=True):
        kept = prompt[-7:]
        assert openinference(span) == kept  # the newest kept, in order
        assert json.loads(span.attributes["gen_ai.input.messages"]) == genai(kept)
        assert json.loads(span.attributes["input.value"])["messages"] == kept
        if len(prompt) > 7:
            assert span.attributes[OMITTED] == len(prompt) - 7
            assert "gen_ai.system_instructions" not in span.attributes  # the system message was the oldest
        else:
            assert OMITTED not in span.attributes
    assert found[-1].attributes[OMITTED] > 20


def test_the_limit_is_a_count_of_messages_zero_for_all(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    assert otlp_messages.max_messages() == otlp_messages.DEFAULT_MAX_MESSAGES == 1000
    monkeypatch.setenv("OPENPROGRAM_OTLP_MAX_MESSAGES", "0")
    assert otlp_messages.max_messages() == 0
    monkeypatch.setenv("OPENPROGRAM_OTLP_MAX_MESSAGES", "lots")
    with caplog.at_level(logging.WARNING, logger="openprogram"):
        assert otlp_messages.max_messages() == otlp_messages.max_messages() == 1000
    assert [r.getMessage() for r in caplog.records] == [
        "openprogram: OPENPROGRAM_OTLP_MAX_MESSAGES='lots' is not a count of messages (0 for all); using 1000"
    ]


def test_content_off_sends_no_message_text_live_or_by_export(
    store_url: str, receiver: Receiver, export_cli: Callable[..., CliRun], monkeypatch: pytest.MonkeyPatch
) -> None:
    with openprogram.session_context(store=store_url) as recorded_with_content:
        converse(5)
    openprogram.configure(capture_content=False)
    assert export_cli(recorded_with_content.session_id, "--endpoint", receiver.url).code == 0
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.url)
    openprogram.configure(export="otlp")
    with openprogram.session_context(store=store_url):
        converse(5)
    assert _otlp.flush_export(30)

    found = chats(receiver.wait_for(12))
    assert len(found) == 10
    for span in found:
        assert span.attributes["gen_ai.request.model"] == "gpt-test"
        text = [k for k in span.attributes if k.startswith(("llm.input_messages", "llm.output_messages", "input."))]
        assert text == []
        assert not {"gen_ai.input.messages", "gen_ai.output.messages", "gen_ai.system_instructions"} & set(
            span.attributes
        )
        assert "question" not in repr(span.attributes) and SYSTEM not in repr(span.attributes)


def test_spans_of_calls_sends_a_prompt_larger_than_one_captured_value_whole(store_url: str, receiver: Receiver) -> None:
    # Forty messages of 3,000 characters: more than a captured value may hold once encoded as one.
    long_text = "x" * 3000
    with openprogram.session_context(store=store_url) as handle:
        prompt = [message("system", SYSTEM), *(message("user", f"{n} {long_text}") for n in range(40))]
        call = ModelCall.request("langgraph", "gpt-test", lambda: model_inputs(prompt), client=Client())
        assert call is not None
        call.answered(reply("done", finish_reason="stop"))
    store = openprogram.open_store(store_url)
    openprogram.flush()

    spans = _otlp.spans_of_calls(store.iter_calls(handle.session_id), _otlp.default_resource(), content=True)
    sender = _otlp.Sender(receiver.url)
    try:
        assert sender.send(spans) is None
    finally:
        sender.close()

    (chat,) = chats(receiver.wait_for(2))
    assert openinference(chat) == prompt
    assert json.loads(chat.attributes["input.value"])["messages"] == prompt

"""What a span says: model calls (``chat {model}``), content capture off, calls a crash left unfinished."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable

import openprogram
from opentelemetry.proto.trace.v1.trace_pb2 import Span

from tests.support import calls

from .conftest import CliRun, by_name
from .otlp_agents import ask_model, search
from .otlp_receiver import ReceivedSpan, Receiver

SPAN_KIND_CLIENT = Span.SPAN_KIND_CLIENT


def content_keys(span: ReceivedSpan) -> list[str]:
    """Attributes that carry recorded content."""
    return sorted(
        key
        for key in span.attributes
        if key.startswith(("input.", "output.", "llm.input_messages", "llm.output_messages", "llm.invocation"))
        or key
        in (
            "gen_ai.request.temperature",
            "gen_ai.request.max_tokens",
            "gen_ai.response.finish_reasons",
            "gen_ai.input.messages",
            "gen_ai.output.messages",
            "gen_ai.system_instructions",
            "openprogram.prompt.messages_omitted",
        )
    )


def test_model_call_is_a_chat_span_with_model_tokens_messages_and_parameters(
    store_url: str, receiver: Receiver, export_cli: Callable[..., CliRun]
) -> None:
    with openprogram.session_context(store=store_url) as handle:
        ask_model()

    assert export_cli(handle.session_id, "--endpoint", receiver.url).code == 0
    chat = by_name(receiver.wait_for(2))["chat gpt-test"][0]

    assert chat.kind == SPAN_KIND_CLIENT
    model_keys = ("gen_ai.", "llm.token", "llm.model", "llm.provider", "openinference", "openprogram.framework")
    messages_json = ("gen_ai.input.messages", "gen_ai.output.messages", "gen_ai.system_instructions")
    assert {k: v for k, v in chat.attributes.items() if k.startswith(model_keys) and k not in messages_json} == {
        "gen_ai.conversation.id": handle.session_id,
        "gen_ai.operation.name": "chat",
        "gen_ai.request.model": "gpt-test",
        "gen_ai.provider.name": "openai",
        "gen_ai.usage.input_tokens": 412,
        "gen_ai.usage.output_tokens": 37,
        "gen_ai.request.temperature": 0.2,
        "gen_ai.request.max_tokens": 256,
        "gen_ai.request.stop_sequences": ["END"],
        "gen_ai.response.finish_reasons": ["stop"],
        "llm.model_name": "gpt-test",
        "llm.provider": "openai",
        "llm.token_count.prompt": 412,
        "llm.token_count.completion": 37,
        "llm.token_count.total": 449,
        "openinference.span.kind": "LLM",
        "openprogram.framework": "langgraph",
    }
    messages = {k: v for k, v in chat.attributes.items() if k.startswith(("llm.input_messages", "llm.output"))}
    assert messages == {
        "llm.input_messages.0.message.role": "system",
        "llm.input_messages.0.message.content": "You book flights.",
        "llm.input_messages.1.message.role": "user",
        "llm.input_messages.1.message.content": "Lisbon to Oslo, Tuesday.",
        "llm.input_messages.2.message.role": "assistant",
        "llm.input_messages.2.message.tool_calls.0.tool_call.id": "c1",
        "llm.input_messages.2.message.tool_calls.0.tool_call.function.name": "search",
        "llm.input_messages.2.message.tool_calls.0.tool_call.function.arguments": '{"from": "LIS", "to": "OSL"}',
        "llm.input_messages.3.message.role": "tool",
        "llm.input_messages.3.message.content": '[{"flight": "TP1234"}]',
        "llm.input_messages.3.message.tool_call_id": "c1",
        "llm.output_messages.0.message.role": "assistant",
        "llm.output_messages.0.message.content": "Book TP1234.",
        "llm.output_messages.0.message.tool_calls.0.tool_call.id": "c2",
        "llm.output_messages.0.message.tool_calls.0.tool_call.function.name": "book",
        "llm.output_messages.0.message.tool_calls.0.tool_call.function.arguments": '{"flight": "TP1234"}',
    }
    assert json.loads(chat.attributes["gen_ai.system_instructions"]) == [
        {"type": "text", "content": "You book flights."}
    ]
    assert json.loads(chat.attributes["gen_ai.input.messages"]) == [
        {"role": "user", "parts": [{"type": "text", "content": "Lisbon to Oslo, Tuesday."}]},
        {
            "role": "assistant",
            "parts": [{"type": "tool_call", "id": "c1", "name": "search", "arguments": {"from": "LIS", "to": "OSL"}}],
        },
        {"role": "tool", "parts": [{"type": "tool_call_response", "id": "c1", "response": '[{"flight": "TP1234"}]'}]},
    ]
    assert json.loads(chat.attributes["gen_ai.output.messages"]) == [
        {
            "role": "assistant",
            "parts": [
                {"type": "text", "content": "Book TP1234."},
                {"type": "tool_call", "id": "c2", "name": "book", "arguments": {"flight": "TP1234"}},
            ],
            "finish_reason": "stop",
        }
    ]
    assert "openprogram.prompt.messages_omitted" not in chat.attributes
    assert json.loads(chat.attributes["input.value"])["messages"][0] == {
        "role": "system",
        "content": "You book flights.",
    }
    assert '"tools":["search","book"]' in chat.attributes["input.value"]
    assert chat.attributes["output.value"].startswith('{"role":"assistant","content":"Book TP1234."')
    assert chat.attributes["llm.invocation_parameters"] == '{"temperature": 0.2, "max_tokens": 256, "stop": ["END"]}'


def test_content_off_sends_model_and_tokens_but_no_inputs_outputs_or_messages(
    store_url: str,
    receiver: Receiver,
    export_cli: Callable[..., CliRun],
    run_child: Callable[..., subprocess.CompletedProcess[str]],
) -> None:
    # Recorded with content, exported while content capture is off: nothing of it is sent.
    with openprogram.session_context(store=store_url) as recorded_with_content:
        search("LIS-OSL")
        ask_model()
    openprogram.configure(capture_content=False)
    assert export_cli(recorded_with_content.session_id, "--endpoint", receiver.url).code == 0
    # Recorded with content off, exported live from a child process.
    child = run_child(
        """
        import openprogram
        from tests.otlp.otlp_agents import ask_model, search
        with openprogram.session_context() as handle:
            search("LIS-OSL")
            ask_model()
        """,
        OPENPROGRAM_CAPTURE_CONTENT="false",
        OPENPROGRAM_EXPORT="otlp",
        OTEL_EXPORTER_OTLP_ENDPOINT=receiver.url,
    )
    assert child.returncode == 0, child.stderr

    spans = receiver.wait_for(6)
    assert len(spans) == 6
    sessions = {s.attributes["session.id"] for s in spans}
    assert len(sessions) == 2 and recorded_with_content.session_id in sessions
    assert [content_keys(s) for s in spans] == [[]] * 6
    chats = by_name(spans)["chat gpt-test"]
    assert len(chats) == 2
    for chat in chats:
        assert chat.attributes["gen_ai.request.model"] == "gpt-test"
        assert chat.attributes["gen_ai.usage.input_tokens"] == 412
        assert chat.attributes["gen_ai.usage.output_tokens"] == 37
    assert len(by_name(spans)["execute_tool search"]) == 2


def test_calls_a_crash_left_running_are_interrupted_and_end_at_the_last_time_recorded(
    store_url: str,
    receiver: Receiver,
    export_cli: Callable[..., CliRun],
    run_child: Callable[..., subprocess.CompletedProcess[str]],
) -> None:
    child = run_child(
        """
        import os, openprogram

        @openprogram.tool
        def done():
            return "ok"

        @openprogram.tool
        def crash():
            openprogram.flush()  # this call and its turn are written as running
            os._exit(3)

        with openprogram.session_context() as handle:
            print(handle.session_id, flush=True)
            done()
            crash()
        """
    )
    assert child.returncode == 3, child.stderr
    session_id = child.stdout.strip()
    recorded = calls(openprogram.open_store(store_url), session_id)
    assert sorted((c.name, c.status) for c in recorded) == [
        ("crash", "interrupted"),
        ("done", "ok"),
        ("main", "interrupted"),
    ]

    assert export_cli(session_id, "--endpoint", receiver.url).code == 0
    spans = by_name(receiver.wait_for(3))
    last = max(max(c.started_at, c.ended_at or 0.0) for c in recorded)
    for name in ("turn main", "execute_tool crash"):
        (span,) = spans[name]
        assert span.attributes["openprogram.call.interrupted"] is True
        assert span.status_code == 0  # neither ok nor an error
        assert span.end_time == int(last * 1e9) >= span.start_time
    assert "openprogram.call.interrupted" not in spans["execute_tool done"][0].attributes

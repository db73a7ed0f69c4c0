"""Kernel functions: invoke, streaming, prompts, auto function calling, errors, signatures, (un)instrument."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncGenerator
from typing import Any

import openprogram
import pytest
from openprogram.integrations.semantic_kernel import adapter, models
from openprogram.integrations.semantic_kernel.fakes import ScriptedChatService, calls_message, tools_then_answer
from semantic_kernel import Kernel
from semantic_kernel.connectors.ai.function_choice_behavior import FunctionChoiceBehavior
from semantic_kernel.connectors.ai.open_ai import OpenAIChatPromptExecutionSettings
from semantic_kernel.contents import ChatHistory
from semantic_kernel.filters.auto_function_invocation.auto_function_invocation_context import (
    AutoFunctionInvocationContext,
)
from semantic_kernel.filters.filter_types import FilterTypes
from semantic_kernel.filters.kernel_filters_extension import KernelFilterExtension
from semantic_kernel.functions import KernelArguments, kernel_function

from tests.integrations.semantic_kernel.plugins import (
    Weather,
    lookup_inner,
    lookup_outer,
    named,
    otel_errors_alone_and_instrumented,
    with_kernel,
)
from tests.support import calls, one

THREE_CALLS = [
    ("weather", "forecast", {"city": "Oslo"}),
    ("weather", "temperature", {"city": "Oslo"}),
    ("weather", "forecast", {"city": "Rome"}),
]


def make_kernel(service: ScriptedChatService | None = None) -> tuple[Kernel, Weather]:
    kernel = Kernel()
    weather = Weather()
    kernel.add_plugin(weather, "weather")
    if service is not None:
        kernel.add_service(service)
    return kernel, weather


def auto_arguments(**values: Any) -> KernelArguments:
    settings = OpenAIChatPromptExecutionSettings(function_choice_behavior=FunctionChoiceBehavior.Auto())
    return KernelArguments(settings=settings, **values)


async def test_invoke_records_function_with_arguments_and_result(store: Any, instrumented: None) -> None:
    kernel, weather = make_kernel()
    async with openprogram.session_context(store=store) as h:
        result = await kernel.invoke(plugin_name="weather", function_name="forecast", city="Oslo")
    assert str(result) == "sunny in Oslo"
    records = calls(store, h.session_id)
    fn = one(records, "weather.forecast")
    assert (fn.kind, fn.framework, fn.status) == ("function", "semantic_kernel", "ok")
    assert fn.inputs == {"city": "Oslo"} and fn.output == "sunny in Oslo"
    assert fn.parent_id == h.turn_id or fn.parent_id == records[0].call_id
    # the body ran with the session and its own call current
    assert weather.seen == [("forecast Oslo", h.session_id, fn.call_id)]


async def test_kernel_built_before_instrument_and_clones(store: Any) -> None:
    kernel, _ = make_kernel()
    clone = kernel.clone()
    filters_before = list(kernel.function_invocation_filters)
    openprogram.instrument("semantic_kernel")
    openprogram.instrument("semantic_kernel")  # twice wraps once
    try:
        async with openprogram.session_context(store=store) as h:
            await kernel.invoke(plugin_name="weather", function_name="forecast", city="A")
            await clone.invoke(plugin_name="weather", function_name="forecast", city="B")
            await kernel.clone().invoke(plugin_name="weather", function_name="temperature", city="C")
    finally:
        openprogram.uninstrument("semantic_kernel")
    records = calls(store, h.session_id)
    assert [r.inputs for r in named(records, "weather.forecast")] == [{"city": "A"}, {"city": "B"}]
    assert len(named(records, "weather.temperature")) == 1
    assert kernel.function_invocation_filters == filters_before  # nothing added to the kernel


async def test_auto_function_calling_parallel_calls_share_the_chat_parent(store: Any, instrumented: None) -> None:
    service = ScriptedChatService(default_step=tools_then_answer(THREE_CALLS, "it is sunny"))
    kernel, weather = make_kernel(service)
    async with openprogram.session_context(store=store) as h:
        result = await kernel.invoke_prompt("What is the weather?", arguments=auto_arguments())
    assert str(result) == "it is sunny"
    records = calls(store, h.session_id)
    prompt = next(r for r in records if r.kind == "function" and not r.name.startswith("weather."))
    assert prompt.output == "it is sunny" and prompt.parent_id == records[0].call_id
    assert not named(records, "chat:scripted-model")  # the prompt function is the chat call
    functions = [r for r in records if r.name.startswith("weather.")]
    assert len(functions) == 3
    assert {r.parent_id for r in functions} == {prompt.call_id}
    assert all(r.attributes and r.attributes["auto_invoked"] and r.attributes["request_index"] == 0 for r in functions)
    assert sorted(r.attributes["function_index"] for r in functions) == [0, 1, 2]  # type: ignore[index]
    # each body saw its own call, in the session
    by_id = {r.call_id for r in functions}
    assert {s[2] for s in weather.seen} == by_id and {s[1] for s in weather.seen} == {h.session_id}


async def test_functions_run_concurrently_and_keep_their_own_call(store: Any, instrumented: None) -> None:
    order: list[str] = []
    gate = asyncio.Event()

    class Slow:
        from semantic_kernel.functions import kernel_function

        @kernel_function
        async def first(self) -> str:
            order.append("first start")
            await gate.wait()  # only released by `second`, so both must run at once
            order.append(f"first {openprogram.current_call_id()}")
            return "1"

        @kernel_function
        async def second(self) -> str:
            order.append("second start")
            gate.set()
            return "2"

    service = ScriptedChatService(default_step=tools_then_answer([("slow", "first", {}), ("slow", "second", {})]))
    kernel = Kernel()
    kernel.add_plugin(Slow(), "slow")
    kernel.add_service(service)
    async with openprogram.session_context(store=store) as h:
        await asyncio.wait_for(kernel.invoke_prompt("go", arguments=auto_arguments()), 10)
    records = calls(store, h.session_id)
    first = one(records, "slow.first")
    assert order[-1] == f"first {first.call_id}"
    prompt = next(r for r in records if r.kind == "function" and not r.name.startswith("slow."))
    assert first.parent_id == one(records, "slow.second").parent_id == prompt.call_id


async def test_chat_service_called_directly_records_each_round_then_its_functions_under_the_caller(
    store: Any, instrumented: None
) -> None:
    service = ScriptedChatService(script=[calls_message(*THREE_CALLS[:2]), tools_then_answer([], "ok")])
    kernel, _ = make_kernel(service)
    history = ChatHistory()
    history.add_user_message("hi")
    settings = OpenAIChatPromptExecutionSettings(function_choice_behavior=FunctionChoiceBehavior.Auto())
    async with openprogram.session_context(store=store) as h:
        await service.get_chat_message_content(history, settings, kernel=kernel)
    records = calls(store, h.session_id)
    assert [(r.kind, r.parent_id) for r in records[1:]] == [("llm", h.root_call_id)] + [
        ("function", h.root_call_id)
    ] * 2 + [("llm", h.root_call_id)]
    assert not named(records, "chat:scripted-model")


async def test_invoke_function_call_directly(store: Any, instrumented: None) -> None:
    kernel, _ = make_kernel()
    history = ChatHistory()
    call = calls_message(("weather", "forecast", {"city": "Paris"})).items[0]
    async with openprogram.session_context(store=store) as h:
        await kernel.invoke_function_call(call, history)  # type: ignore[arg-type]
    fn = one(calls(store, h.session_id), "weather.forecast")
    assert fn.output == "sunny in Paris" and fn.attributes and fn.attributes["auto_invoked"]
    if "function_call_content" in AutoFunctionInvocationContext.model_fields:  # newer SK only
        assert fn.attributes["tool_call_id"] == call.id  # type: ignore[union-attr]


async def test_streaming_native_function_sees_the_session_in_every_step(store: Any, instrumented: None) -> None:
    kernel, weather = make_kernel()
    got = []
    async with openprogram.session_context(store=store) as h:
        outer = openprogram.current_call_id()
        async for chunk in kernel.invoke_stream(plugin_name="weather", function_name="words", count=3):
            got.append(chunk)
            assert openprogram.current_call_id() == outer  # the consumer's context between steps
    assert [str(c) for c in got] == ["w0", "w1", "w2"]
    fn = one(calls(store, h.session_id), "weather.words")
    assert fn.status == "ok" and fn.output == {"yielded": ["w0", "w1", "w2"], "count": 3}
    assert weather.seen == [(f"words {i}", h.session_id, fn.call_id) for i in range(3)]


async def test_invoke_prompt_stream_with_auto_calls(store: Any, instrumented: None) -> None:
    service = ScriptedChatService(default_step=tools_then_answer(THREE_CALLS, "streamed answer"))
    kernel, weather = make_kernel(service)
    text = ""
    async with openprogram.session_context(store=store) as h:
        async for chunk in kernel.invoke_prompt_stream("weather?", arguments=auto_arguments()):
            text += str(chunk[0]) if isinstance(chunk, list) else str(chunk)
    assert "streamed answer" in text
    records = calls(store, h.session_id)
    prompt = next(r for r in records if r.kind == "function" and not r.name.startswith("weather."))
    assert prompt.status == "ok" and "streamed answer" in prompt.output["text"]
    assert not named(records, "chat:scripted-model")
    functions = [r for r in records if r.name.startswith("weather.")]
    assert len(functions) == 3 and {r.parent_id for r in functions} == {prompt.call_id}
    assert {s[2] for s in weather.seen} == {r.call_id for r in functions}


def kernel_stream(kernel: Kernel, kind: str) -> Any:
    """A kernel stream of five items: a native streaming function's, or a prompt's (the service's answer)."""
    if kind == "native":
        return kernel.invoke_stream(plugin_name="weather", function_name="words", count=5)
    return kernel.invoke_prompt_stream("weather?")


@pytest.mark.parametrize("kind", ["native", "prompt"])
async def test_kernel_stream_closed_early_ends_its_function_at_once(store: Any, instrumented: None, kind: str) -> None:
    service = ScriptedChatService(default_step=tools_then_answer([], "one two three four five"))
    kernel, weather = make_kernel(service)
    async with openprogram.session_context(store=store) as h:
        stream = kernel_stream(kernel, kind)
        async for _ in stream:
            break
        await stream.aclose()  # type: ignore[attr-defined]
        assert openprogram.current_call_id() == h.root_call_id
        openprogram.flush()
        # No loop turn, no garbage collection: SK alone leaves the function's stream running until then.
        function = next(r for r in store.list_calls(h.session_id) if r.kind == "function")
        assert (function.status, function.ended_at is not None) == ("interrupted", True)
    if kind == "native":
        assert function.output == {"yielded": ["w0"], "count": 1}
        assert weather.seen == [("words 0", h.session_id, function.call_id)]


class Tidy:
    @kernel_function(description="streams words, tidying up (with an await) when closed")
    async def words(self, count: int) -> AsyncGenerator[str, None]:
        try:
            for i in range(count):
                yield f"w{i}"
        finally:
            await asyncio.sleep(0)


def test_a_kernel_stream_left_open_is_closed_once_at_loop_shutdown(store: Any, instrumented: None) -> None:
    # asyncio.run closes every async generator still open when it ends. The adapter closes the
    # streams it owns; the loop must not close those too (the two aclose() calls meet and the
    # loop logs "an error occurred during closing of asynchronous generator").
    loop_errors: list[str] = []
    left_open: list[Any] = []

    async def main() -> None:
        asyncio.get_running_loop().set_exception_handler(lambda loop, context: loop_errors.append(context["message"]))
        kernel = Kernel()
        kernel.add_plugin(Tidy(), "tidy")
        for _ in range(5):  # the loop closes them in an order of its own: one would often avoid the collision
            stream = kernel.invoke_stream(plugin_name="tidy", function_name="words", count=5)
            left_open.append(stream)
            async for _ in stream:
                break
        print("GENS", list(asyncio.get_running_loop()._asyncgens))

    with openprogram.session_context(store=store) as h:
        asyncio.run(main())
    assert loop_errors == []
    functions = named(calls(store, h.session_id), "tidy.words")
    assert [(f.status, f.ended_at is not None) for f in functions] == [("interrupted", True)] * 5


@pytest.mark.parametrize("kind", ["native", "prompt"])
async def test_closing_a_kernel_stream_early_adds_no_otel_errors_to_sks_own(
    store: Any, caplog: pytest.LogCaptureFixture, kind: str
) -> None:
    # SK's Kernel.invoke_stream iterates the function's stream, which holds an OpenTelemetry span
    # context (attached even with no tracer provider), with ``async for`` and never closes it: the
    # loop finalises it in a context of its own, and OpenTelemetry logs "Failed to detach context"
    # (SK's own, 1.30 to 1.45). Closing what the kernel stream owns must not add to it.
    async def run() -> None:
        kernel, _ = make_kernel(ScriptedChatService(default_step=tools_then_answer([], "one two three four five")))
        stream = kernel_stream(kernel, kind)
        async for _ in stream:
            break
        await stream.aclose()  # type: ignore[attr-defined]

    sk_alone, with_openprogram, session_id = await otel_errors_alone_and_instrumented(caplog, store, run)
    assert len(with_openprogram) <= len(sk_alone), (with_openprogram, sk_alone)  # fewer would be fine
    function = next(r for r in calls(store, session_id) if r.kind == "function")
    assert function.status == "interrupted" and function.ended_at is not None


async def test_a_kernel_stream_runs_in_the_consumers_context(store: Any, instrumented: None) -> None:
    kernel, weather = make_kernel()
    stream = kernel.invoke_stream(plugin_name="weather", function_name="words", count=2)  # before any session
    async with openprogram.session_context(store=store) as h:
        with openprogram.call_scope("call", "consume") as consume:
            assert [str(c) async for c in stream] == ["w0", "w1"]
    fn = one(calls(store, h.session_id), "weather.words")
    assert fn.parent_id == consume.call_id and fn.status == "ok"
    assert {s[1] for s in weather.seen} == {h.session_id}


async def test_a_nested_kernel_stream_closed_early_ends_at_once_and_others_run_on(
    store: Any, instrumented: None
) -> None:
    service = ScriptedChatService(default_step=tools_then_answer([("weather", "peek", {})], "done"))
    kernel, _ = make_kernel(service)
    in_tool: list[str] = []
    background: list[asyncio.Task[list[str]]] = []
    session: list[str] = []

    async def read_all() -> list[str]:
        return [str(c) async for c in kernel.invoke_stream(plugin_name="weather", function_name="words", count=5)]

    @kernel_function(name="peek")
    async def peek() -> str:
        nested = kernel.invoke_stream(plugin_name="weather", function_name="words", count=5)
        async for _ in nested:
            break
        await nested.aclose()  # type: ignore[attr-defined]
        openprogram.flush()
        in_tool.extend(r.status for r in store.list_calls(session[0]) if r.name == "weather.words")
        background.append(asyncio.create_task(read_all()))  # outlives the prompt stream
        return "peeked"

    kernel.add_function("weather", peek)
    async with openprogram.session_context(store=store) as h:
        session.append(h.session_id)
        async for _ in kernel.invoke_prompt_stream("go", arguments=auto_arguments()):
            pass
        assert await background[0] == [f"w{i}" for i in range(5)]  # not cut short by the prompt stream's end
    assert in_tool == ["interrupted"]  # closed inside the tool: ended there, not when the prompt stream ended
    words = [r for r in calls(store, h.session_id) if r.name == "weather.words"]
    assert [(r.status, r.output["count"]) for r in words] == [("interrupted", 1), ("ok", 5)]


async def test_invoke_prompt_is_a_prompt_call_parenting_its_template_functions_with_the_rendered_text(
    store: Any, instrumented: None
) -> None:
    service = ScriptedChatService(default_step=tools_then_answer([], "templated"))
    kernel, _ = make_kernel(service)
    async with openprogram.session_context(store=store) as h:
        await kernel.invoke_prompt("Forecast: {{weather.forecast city='Lima'}}")
    records = calls(store, h.session_id)
    fn, prompt = one(records, "weather.forecast"), one(records, "prompt")
    # the function invoke_prompt built begins before it renders: the template's function runs under it
    assert prompt.parent_id == h.root_call_id and fn.parent_id == prompt.call_id
    assert prompt.started_at <= fn.started_at and fn.ended_at <= prompt.ended_at
    assert fn.inputs == {"city": "Lima"} and prompt.inputs == {"prompt": "Forecast: sunny in Lima"}
    llm = one(records, "scripted-model", "llm")
    assert llm.parent_id == prompt.call_id and llm.inputs["messages"][0]["content"] == "Forecast: sunny in Lima"


async def test_named_prompt_function_keeps_its_name_arguments_and_template_calls_as_children(
    store: Any, instrumented: None
) -> None:
    service = ScriptedChatService(default_step=tools_then_answer([], "templated"))
    kernel, _ = make_kernel(service)
    kernel.add_function(
        "prompts", function_name="brief", prompt="Forecast for {{$city}}: {{weather.forecast city=$city}}"
    )
    async with openprogram.session_context(store=store) as h:
        await kernel.invoke(plugin_name="prompts", function_name="brief", city="Lima")
        await kernel.invoke_prompt("Hello", function_name="greet")
    records = calls(store, h.session_id)
    brief, fn = one(records, "prompts.brief"), one(records, "weather.forecast")
    assert brief.inputs == {"city": "Lima"} and fn.parent_id == brief.call_id
    greet = one(records, "greet")
    assert greet.kind == "function" and not named(records, "prompt")
    assert [r.parent_id for r in records if r.kind == "llm"] == [brief.call_id, greet.call_id]


async def test_function_exception_reaches_sk_unchanged_and_call_is_error(store: Any, instrumented: None) -> None:
    kernel, weather = make_kernel()
    seen_by_filter: list[BaseException] = []

    async def user_filter(context: Any, next: Any) -> None:
        try:
            await next(context)
        except Exception as exc:
            seen_by_filter.append(exc)
            raise

    kernel.add_filter(FilterTypes.FUNCTION_INVOCATION, user_filter)
    async with openprogram.session_context(store=store) as h:
        with pytest.raises(Exception) as info:
            await kernel.invoke(plugin_name="weather", function_name="broken", city="X")
    raised = weather.raised[0]
    assert seen_by_filter == [raised]  # the same object, through our outer filter
    assert info.value is raised or info.value.__cause__ is raised
    fn = one(calls(store, h.session_id), "weather.broken")
    assert fn.status == "error" and "Boom: no weather for X" in (fn.error or "")


async def test_auto_invoked_function_error_is_recorded_and_sk_recovers(store: Any, instrumented: None) -> None:
    service = ScriptedChatService(default_step=tools_then_answer([("weather", "broken", {"city": "Y"})], "sorry"))
    kernel, _ = make_kernel(service)
    async with openprogram.session_context(store=store) as h:
        result = await kernel.invoke_prompt("?", arguments=auto_arguments())
    assert str(result) == "sorry"
    assert one(calls(store, h.session_id), "weather.broken").status == "error"


async def test_instrumentation_errors_never_break_a_kernel(
    store: Any, instrumented: None, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def broken(*args: Any) -> str:
        raise ValueError("bug in openprogram")

    monkeypatch.setattr(adapter, "_function_name", broken)
    monkeypatch.setattr(models, "_model_of", broken)
    service = ScriptedChatService(default_step=tools_then_answer(THREE_CALLS, "fine"))
    kernel, weather = make_kernel(service)
    with caplog.at_level(logging.ERROR, logger="openprogram"):
        async with openprogram.session_context(store=store):
            assert str(await kernel.invoke(plugin_name="weather", function_name="forecast", city="Z")) == "sunny in Z"
            assert str(await kernel.invoke_prompt("?", arguments=auto_arguments())) == "fine"
    assert len(weather.seen) == 4
    assert any("semantic_kernel instrumentation failed" in r.getMessage() for r in caplog.records)


async def test_uninstrument_restores(store: Any) -> None:
    from semantic_kernel.agents import ChatCompletionAgent
    from semantic_kernel.agents.runtime.in_process.in_process_runtime import InProcessRuntime, SendMessageEnvelope
    from semantic_kernel.connectors.ai.chat_completion_client_base import ChatCompletionClientBase

    targets = [
        (KernelFilterExtension, "construct_call_stack"),
        (ChatCompletionClientBase, "get_chat_message_contents"),
        (Kernel, "invoke_stream"),
        (Kernel, "invoke_prompt_stream"),
        (ChatCompletionAgent, "invoke"),
        (InProcessRuntime, "_process_send"),
        (SendMessageEnvelope, "__init__"),
    ]
    before = [cls.__dict__.get(attr) for cls, attr in targets]
    openprogram.instrument("semantic_kernel")
    assert [cls.__dict__.get(attr) for cls, attr in targets] != before
    openprogram.uninstrument("semantic_kernel")
    openprogram.uninstrument("semantic_kernel")  # idempotent
    assert [cls.__dict__.get(attr) for cls, attr in targets] == before
    kernel, _ = make_kernel()
    async with openprogram.session_context(store=store) as h:
        await kernel.invoke(plugin_name="weather", function_name="forecast", city="Q")
    assert [r.kind for r in calls(store, h.session_id)] == ["turn"]


async def test_outside_any_session_still_recorded_in_implicit_session(instrumented: None) -> None:
    kernel, weather = make_kernel()
    await kernel.invoke(plugin_name="weather", function_name="forecast", city="Nowhere")
    implicit = openprogram.implicit_session()
    assert implicit is not None and weather.seen[0][1] == implicit.session_id


# --- signatures -------------------------------------------------------------------------


def _tool_schemas(service: ScriptedChatService) -> dict[str, Any]:
    tools = service.requests[0]["tools"]
    return {t["function"]["name"]: t["function"]["parameters"] for t in tools}


@pytest.mark.parametrize("function", [lookup_outer, lookup_inner], ids=["tool-outer", "tool-inner"])
async def test_tool_under_kernel_function_keeps_session_out_of_schema(
    store: Any, instrumented: None, function: Any
) -> None:
    name = function.__name__
    service = ScriptedChatService(default_step=tools_then_answer([("lib", name, {"topic": "sk"})], "done"))
    kernel = Kernel()
    kernel.add_service(service)
    kernel.add_function("lib", function)
    metadata = kernel.get_function("lib", name).metadata
    assert [p.name for p in metadata.parameters] == ["topic"]
    async with openprogram.session_context(store=store) as h:
        direct = await kernel.invoke(plugin_name="lib", function_name=name, topic="direct")
        await kernel.invoke_prompt("?", arguments=auto_arguments())
    schema = _tool_schemas(service)[f"lib-{name}"]
    assert "_session" not in json.dumps(schema) and schema["required"] == ["topic"]
    assert str(direct) == f"direct:{h.session_id}"  # invocable without _session; it received the session
    records = calls(store, h.session_id)
    functions = named(records, f"lib.{name}")
    tools = [r for r in records if r.kind == "tool"]
    assert len(functions) == 2 and len(tools) == 2
    assert {t.parent_id for t in tools} == {f.call_id for f in functions}  # function -> tool
    assert functions[1].output == f"sk:{h.session_id}"


async def test_by_name_kernel_and_arguments_parameters_still_work(store: Any, instrumented: None) -> None:
    service = ScriptedChatService(default_step=tools_then_answer([("lib", "with_kernel", {"topic": "t"})], "done"))
    kernel = Kernel()
    kernel.add_service(service)
    kernel.add_function("lib", with_kernel)
    async with openprogram.session_context(store=store) as h:
        result = await kernel.invoke(plugin_name="lib", function_name="with_kernel", topic="x", extra=1)
        await kernel.invoke_prompt("?", arguments=auto_arguments())
    assert str(result) == "x:Kernel:['extra', 'topic']"  # SK passed kernel and arguments by name
    schema = _tool_schemas(service)["lib-with_kernel"]
    # exactly what SK renders for the same function without the tool (and so without _session)
    plain = Kernel()
    plain.add_function("lib", kernel_function(with_kernel.__wrapped__, name="with_kernel"))
    expected = plain.get_function("lib", "with_kernel").metadata.parameters
    assert "_session" not in json.dumps(schema)
    assert set(schema["properties"]) == {p.name for p in expected if p.name != "_session"}
    assert named(calls(store, h.session_id), "lib.with_kernel")[0].status == "ok"


async def test_function_called_by_an_auto_invoked_function_is_its_child(store: Any, instrumented: None) -> None:
    class Outer:
        @kernel_function
        async def plan(self, kernel: Kernel, city: str) -> str:
            inner = await kernel.invoke(plugin_name="weather", function_name="forecast", city=city)
            return f"plan: {inner}"

    service = ScriptedChatService(default_step=tools_then_answer([("outer", "plan", {"city": "Riga"})], "ok"))
    kernel, _ = make_kernel(service)
    kernel.add_plugin(Outer(), "outer")
    # `kernel` must not be offered to the model for SK to auto-invoke the function
    for p in kernel.get_function("outer", "plan").metadata.parameters:
        if p.name == "kernel":
            p.include_in_function_choices = False
            p.is_required = False
    async with openprogram.session_context(store=store) as h:
        await kernel.invoke_prompt("?", arguments=auto_arguments())
    records = calls(store, h.session_id)
    plan, forecast = one(records, "outer.plan"), one(records, "weather.forecast")
    assert plan.output == "plan: sunny in Riga" and plan.attributes and plan.attributes["auto_invoked"]
    assert forecast.parent_id == plan.call_id and not (forecast.attributes or {}).get("auto_invoked")

"""A model's call SK refuses (issue 46) is a ``tool`` call ending ``error``: a function the kernel does not have, or
arguments SK rejects. SK tells the model so instead of a result and goes on; the session counts the error."""

from __future__ import annotations

from typing import Any

import openprogram
from semantic_kernel import Kernel
from semantic_kernel.connectors.ai.function_choice_behavior import FunctionChoiceBehavior
from semantic_kernel.connectors.ai.open_ai import OpenAIChatPromptExecutionSettings
from semantic_kernel.functions import KernelArguments

from tests.integrations.semantic_kernel.fake_openai import ScriptedOpenAI, text, tool_calls
from tests.integrations.semantic_kernel.plugins import Weather
from tests.support import attributes, calls, one


def _kernel(fake: ScriptedOpenAI) -> tuple[Kernel, Weather]:
    kernel, weather = Kernel(), Weather()
    kernel.add_plugin(weather, "weather")
    kernel.add_service(fake.service())
    return kernel, weather


def _arguments() -> KernelArguments:
    return KernelArguments(
        settings=OpenAIChatPromptExecutionSettings(function_choice_behavior=FunctionChoiceBehavior.Auto())
    )


async def test_a_call_of_a_function_the_kernel_does_not_have_is_a_failed_tool_call(
    store: Any, instrumented: None
) -> None:
    fake = ScriptedOpenAI(
        tool_calls(("call_a", "weather-humidity", {"city": "Oslo"}), ("call_b", "weather-forecast", {"city": "Oslo"})),
        text("sunny, humidity unknown"),
    )
    kernel, weather = _kernel(fake)
    async with openprogram.session_context(store=store) as h:
        answer = await kernel.invoke_prompt("Weather in Oslo?", arguments=_arguments())
    assert str(answer) == "sunny, humidity unknown"  # SK went on, as without openprogram
    told = next(m for m in fake.bodies[1]["messages"] if m.get("tool_call_id") == "call_a")["content"]
    assert "`weather-humidity` is not part of the provided tools" in told
    records = calls(store, h.session_id)
    refused = one(records, "weather.humidity")
    assert (refused.kind, refused.status, refused.framework) == ("tool", "error", "semantic_kernel")
    assert refused.error == f"ToolCallRejected: {told}"
    assert refused.inputs == {"arguments": {"city": "Oslo"}} and attributes(refused) == {"tool_call_id": "call_a"}
    prompt = one(records, "prompt")
    assert refused.parent_id == prompt.call_id  # where the functions the model asked for run
    assert one(records, "weather.forecast").status == "ok" and [w for w, *_ in weather.seen] == ["forecast Oslo"]
    assert [c.name for c in records if c.status == "error"] == ["weather.humidity"]


async def test_arguments_sk_rejects_are_a_failed_tool_call_of_that_function(store: Any, instrumented: None) -> None:
    fake = ScriptedOpenAI(
        tool_calls(("call_a", "weather-forecast", {"town": "Oslo"})),
        tool_calls(("call_b", "weather-forecast", {"city": "Oslo"})),
        text("sunny"),
    )
    kernel, weather = _kernel(fake)
    async with openprogram.session_context(store=store) as h:
        assert str(await kernel.invoke_prompt("Weather in Oslo?", arguments=_arguments())) == "sunny"
    records = calls(store, h.session_id)
    rejected, ran = [c for c in records if c.name == "weather.forecast"]
    if rejected.kind == "function":  # older SK (1.30) runs the function, which fails on the missing parameter
        assert (rejected.status, rejected.inputs) == ("error", {"town": "Oslo"})
        assert rejected.error is not None and "Parameter city is required" in rejected.error
    else:  # newer SK refuses the call before running anything: the refusal is the failed call
        assert (rejected.kind, rejected.status, rejected.inputs) == ("tool", "error", {"arguments": {"town": "Oslo"}})
        assert rejected.error is not None and "Missing required argument(s): ['city']" in rejected.error
    assert (ran.kind, ran.status) == ("function", "ok") and len(weather.seen) == 1


async def test_a_function_call_sk_runs_records_no_refusal(store: Any, instrumented: None) -> None:
    fake = ScriptedOpenAI(tool_calls(("call_a", "weather-forecast", {"city": "Oslo"})), text("sunny"))
    kernel, _ = _kernel(fake)
    async with openprogram.session_context(store=store) as h:
        await kernel.invoke_prompt("Weather in Oslo?", arguments=_arguments())
    records = calls(store, h.session_id)
    assert [c.kind for c in records if c.kind in ("tool", "function")] == ["function", "function"]  # prompt, forecast
    assert all(c.status == "ok" for c in records)

"""Every request to a ``Model`` is one ``llm`` call under the agent turn that asked, in the one shape.

The models are the offline :func:`scripted_model` (a ``Model`` subclass) and the SDK's own OpenAI
models over an offline HTTP transport (``fake_openai``); both report usage as the OpenAI API does.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import openprogram
import pytest
from agents import Agent, ModelSettings, Runner, function_tool
from agents.models.interface import Model
from openprogram.integrations.openai_agents.demo import scripted_model
from openprogram.stores import Store
from pydantic import BaseModel

from tests.integrations.openai_agents.fake_openai import chat_model, responses_model
from tests.integrations.openai_agents.helpers import parent_of, tree
from tests.support import attributes, by_kind, calls, one


@function_tool
def lookup(key: str) -> str:
    """Look a key up."""
    return f"value of {key}"


def _counts(reported: Any) -> dict[str, int]:
    return {
        "input_tokens": reported.input_tokens,
        "output_tokens": reported.output_tokens,
        "total_tokens": reported.total_tokens,
    }


def _summed(records: list[openprogram.CallRecord]) -> dict[str, int]:
    return {
        key: sum(attributes(r)["usage"][key] for r in records)
        for key in ("input_tokens", "output_tokens", "total_tokens")
    }


async def test_each_request_is_one_llm_call_in_the_one_shape_with_the_usage_the_sdk_accounted(store: Store) -> None:
    helper = Agent(name="Helper")
    model = scripted_model([[("lookup", {"key": "a"})], "all done"])
    agent = Agent(
        name="Researcher",
        instructions="Use the tools.",
        tools=[lookup],
        handoffs=[helper],
        model=model,
        model_settings=ModelSettings(temperature=0.2, max_tokens=50),
    )
    async with openprogram.session_context(store=store) as h:
        result = await Runner.run(agent, "find a")
    records = calls(store, h.session_id)
    asked, answered = by_kind(records, "llm")
    for request in (asked, answered):
        assert parent_of(records, request) == one(records, "Researcher", "agent")
        assert (request.name, request.framework, request.status) == ("scripted-offline", "openai_agents", "ok")
        assert attributes(request)["model"] == "scripted-offline" and "stream" not in attributes(request)
    assert [attributes(r)["usage"] for r in (asked, answered)] == [_counts(r.usage) for r in result.raw_responses]
    assert _summed([asked, answered]) == _counts(result.context_wrapper.usage)
    assert asked.inputs == {
        "messages": [{"role": "system", "content": "Use the tools."}, {"role": "user", "content": "find a"}],
        "tools": ["lookup", "transfer_to_helper"],
        "params": {"temperature": 0.2, "max_tokens": 50},
    }
    call = asked.output["tool_calls"][0]
    expected_call = {"id": call["id"], "name": "lookup", "arguments": {"key": "a"}}
    assert asked.output == {"role": "assistant", "content": None, "tool_calls": [expected_call]}
    assert answered.inputs["messages"][2:] == [
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "content": "value of a", "tool_call_id": call["id"]},
    ]
    assert answered.output == {"role": "assistant", "content": "all done"}


async def test_streamed_request_is_one_llm_call_joining_text_and_tool_call_pieces(store: Store) -> None:
    agent = Agent(
        name="Researcher",
        tools=[lookup],
        model=scripted_model([[("lookup", {"key": "a"})], "streamed answer, in pieces"]),
    )
    async with openprogram.session_context(store=store) as h:
        result = Runner.run_streamed(agent, "find a")
        async for _ in result.stream_events():
            pass
    records = calls(store, h.session_id)
    asked, answered = by_kind(records, "llm")
    assert all(attributes(r)["stream"] is True for r in (asked, answered))
    assert [(c["name"], c["arguments"]) for c in asked.output["tool_calls"]] == [("lookup", {"key": "a"})]
    assert answered.output == {"role": "assistant", "content": "streamed answer, in pieces"}  # 7 deltas, joined
    assert [attributes(r)["usage"] for r in (asked, answered)] == [_counts(r.usage) for r in result.raw_responses]


class Verdict(BaseModel):
    approved: bool


async def test_structured_output_request_names_its_output_type(store: Store) -> None:
    agent = Agent(name="Judge", output_type=Verdict, model=scripted_model(['{"approved": true}']))
    async with openprogram.session_context(store=store) as h:
        result = await Runner.run(agent, "judge")
    assert result.final_output == Verdict(approved=True)
    (request,) = by_kind(calls(store, h.session_id), "llm")
    assert request.inputs["params"] == {"output_type": "Verdict"}
    assert one(calls(store, h.session_id), "Judge", "agent").output == {"approved": True}


async def test_failing_request_is_an_llm_call_with_its_error_and_the_same_exception_reaches_the_caller(
    store: Store,
) -> None:
    boom = ConnectionError("model unreachable")
    agent = Agent(name="Researcher", model=scripted_model([boom]))
    async with openprogram.session_context(store=store) as h:
        with pytest.raises(ConnectionError) as raised:
            await Runner.run(agent, "find a")
    assert raised.value is boom
    records = calls(store, h.session_id)
    assert [(r.kind, r.status) for r in records[1:]] == [("agent", "error"), ("llm", "error")]
    assert "model unreachable" in (by_kind(records, "llm")[0].error or "")


async def test_openai_responses_model_records_its_model_provider_and_reported_usage(store: Store) -> None:
    model, sent = responses_model([[("lookup", {"key": "a"})], "all done"])
    agent = Agent(name="Researcher", instructions="Be brief.", tools=[lookup], model=model)
    async with openprogram.session_context(store=store) as h:
        result = await Runner.run(agent, "find a")
    assert result.final_output == "all done" and len(sent) == 2
    records = calls(store, h.session_id)
    asked, answered = by_kind(records, "llm")
    for request in (asked, answered):
        assert request.name == "gpt-4o-mini" and attributes(request)["provider"] == "openai"
        assert attributes(request)["usage"] == {"input_tokens": 21, "output_tokens": 7, "total_tokens": 28}
    assert asked.inputs["messages"] == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "find a"},
    ]
    assert asked.output["tool_calls"][0]["name"] == "lookup" and answered.output["content"] == "all done"


async def test_chat_completions_stream_records_the_joined_reply_and_the_usage_of_its_last_chunk(store: Store) -> None:
    model, sent = chat_model([[("lookup", {"key": "a"})], "streamed in pieces"])
    agent = Agent(name="Researcher", tools=[lookup], model=model)
    async with openprogram.session_context(store=store) as h:
        result = Runner.run_streamed(agent, "find a")
        async for _ in result.stream_events():
            pass
    assert result.final_output == "streamed in pieces" and all(body["stream"] for body in sent)
    records = calls(store, h.session_id)
    asked, answered = by_kind(records, "llm")
    assert {attributes(r)["provider"] for r in (asked, answered)} == {"openai"}
    assert all(attributes(r)["stream"] is True for r in (asked, answered))
    assert [(c["name"], c["arguments"]) for c in asked.output["tool_calls"]] == [("lookup", {"key": "a"})]
    assert answered.output["content"] == "streamed in pieces"
    assert [attributes(r)["usage"] for r in (asked, answered)] == [
        {"input_tokens": 13, "output_tokens": 4, "total_tokens": 17}
    ] * 2
    assert one(records, "lookup", "tool").output == "value of a"


async def test_model_class_defined_after_instrument_is_recorded_and_its_super_call_is_the_same_request(
    store: Store,
) -> None:
    base = type(scripted_model(["x"]))

    class Shouting(base):  # type: ignore[misc, valid-type]
        """A user's model, defined after instrument(), whose request wraps the parent's."""

        async def get_response(self, *args: Any, **kwargs: Any) -> Any:
            response = await super().get_response(*args, **kwargs)
            response.output[0].content[0].text = response.output[0].content[0].text.upper()
            return response

    agent = Agent(name="Loud", model=Shouting(["quiet words"], "shouting-model"))
    async with openprogram.session_context(store=store) as h:
        assert (await Runner.run(agent, "speak")).final_output == "QUIET WORDS"
    (request,) = by_kind(calls(store, h.session_id), "llm")
    assert request.name == "shouting-model" and request.output["content"] == "QUIET WORDS"


async def test_direct_request_outside_a_run_is_an_llm_call_under_the_current_call(store: Store) -> None:
    from agents.model_settings import ModelSettings as Settings
    from agents.models.interface import ModelTracing

    model = scripted_model(["hello"])
    async with openprogram.session_context(store=store) as h:
        with openprogram.call_scope("call", "mine"):
            await model.get_response(
                "Be kind.",
                "hi",
                Settings(),
                [],
                None,
                [],
                ModelTracing.DISABLED,
                previous_response_id=None,
                conversation_id=None,
                prompt=None,
            )
    records = calls(store, h.session_id)
    assert tree(records) == ["turn main", "  call mine", "    llm scripted-offline"]
    assert by_kind(records, "llm")[0].output == {"role": "assistant", "content": "hello"}


async def test_stream_abandoned_by_its_consumer_ends_interrupted_with_what_arrived(store: Store) -> None:
    from agents.model_settings import ModelSettings as Settings
    from agents.models.interface import ModelTracing

    model = scripted_model(["one two three four five"])
    async with openprogram.session_context(store=store) as h:
        events: AsyncIterator[Any] = model.stream_response(
            None,
            "hi",
            Settings(),
            [],
            None,
            [],
            ModelTracing.DISABLED,
            previous_response_id=None,
            conversation_id=None,
            prompt=None,
        )
        async for event in events:
            if event.type == "response.output_text.delta":
                break
        await events.aclose()  # type: ignore[attr-defined]
    (request,) = by_kind(calls(store, h.session_id), "llm")
    assert request.status == "interrupted" and request.output == {"role": "assistant", "content": "one "}


async def test_content_capture_off_keeps_names_models_and_usage_and_drops_every_input_and_output(
    store: Store,
) -> None:
    openprogram.configure(capture_content=False)
    agent = Agent(name="Researcher", tools=[lookup], model=scripted_model([[("lookup", {"key": "a"})], "secret"]))
    async with openprogram.session_context(store=store) as h:
        result = await Runner.run(agent, "my secret question")
    records = calls(store, h.session_id)
    assert [r.kind for r in records] == ["turn", "agent", "llm", "tool", "llm"]
    assert all(r.inputs is None and r.output is None for r in records)
    assert [attributes(r)["usage"] for r in by_kind(records, "llm")] == [_counts(r.usage) for r in result.raw_responses]
    assert all(attributes(r)["model"] == "scripted-offline" for r in by_kind(records, "llm"))


def test_every_model_class_defined_before_instrument_has_its_own_request_methods_wrapped() -> None:
    from agents import OpenAIChatCompletionsModel, OpenAIResponsesModel
    from openprogram._kit import ORIGINAL

    for cls in (OpenAIResponsesModel, OpenAIChatCompletionsModel, type(scripted_model(["x"]))):
        assert hasattr(cls.__dict__["get_response"], ORIGINAL), cls
        assert hasattr(cls.__dict__["stream_response"], ORIGINAL), cls
    assert "get_response" not in Model.__dict__ or not hasattr(Model.__dict__["get_response"], ORIGINAL)


async def test_stream_closed_early_raises_the_error_its_provider_close_raised_and_the_request_records_it(
    store: Store,
) -> None:
    from agents import OpenAIChatCompletionsModel
    from agents.model_settings import ModelSettings as Settings
    from agents.models.interface import ModelTracing

    if not hasattr(OpenAIChatCompletionsModel, "_close_stream_allowing_background_completion"):
        pytest.skip("this release does not close the provider's stream, so it surfaces no close error")
    # The SDK closes the provider stream in a shielded task and re-raises its error before the terminal event:
    # on CPython 3.10-3.12 that leaves ag_running set, which must not read as two closes meeting.
    failure = RuntimeError("close-failure")
    model, _ = chat_model(["Hello there"], close_error=failure)
    async with openprogram.session_context(store=store) as h:
        events: Any = model.stream_response(
            None,
            "hi",
            Settings(),
            [],
            None,
            [],
            ModelTracing.DISABLED,
            previous_response_id=None,
            conversation_id=None,
            prompt=None,
        )
        assert (await events.__anext__()).type == "response.created"
        with pytest.raises(RuntimeError) as raised:
            await events.aclose()
    assert raised.value is failure
    (request,) = by_kind(calls(store, h.session_id), "llm")
    assert request.status == "error" and "close-failure" in (request.error or "")

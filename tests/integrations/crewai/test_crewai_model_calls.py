"""Every CrewAI model request is one ``llm`` call under the call that asked, in the one shape for every framework.

The LLMs are CrewAI's own OpenAI provider over an offline HTTP transport (``openai_llm``) and
a scripted ``BaseLLM`` subclass (``scripted_llm``); both report usage the way CrewAI's providers do.
"""

from __future__ import annotations

import asyncio
import contextvars
import threading
from collections.abc import Callable
from typing import Any

import openprogram
import pytest
from crewai import LLM, Agent, Crew, Task
from crewai.llms.base_llm import BaseLLM
from crewai.llms.providers.openai.completion import OpenAICompletion
from crewai.tools import tool
from openprogram._kit import ORIGINAL
from openprogram.integrations.crewai.fakes import answer_offline, openai_llm, scripted_llm
from openprogram.stores import Store
from pydantic import BaseModel

from tests.integrations.crewai.helpers import parent_of
from tests.support import attributes, by_kind, calls, one

RAN: list[str] = []


@tool("echo")
def echo(x: str) -> str:
    """Echo x."""
    RAN.append(x)
    return f"echo:{x}"


class ShoutingLLM(OpenAICompletion):
    """A user's own provider subclass, defined before instrument(), whose call wraps super().call()."""

    def call(self, messages: Any, *args: Any, **kwargs: Any) -> Any:
        answer = super().call(messages, *args, **kwargs)
        return answer.upper() if isinstance(answer, str) else answer


def _kickoff(llm: Any) -> Any:
    agent = Agent(role="Tester", goal="test", backstory="offline", llm=llm, tools=[echo])
    crew = Crew(agents=[agent], tasks=[Task(description="run tools", expected_output="text", agent=agent)])
    return crew.kickoff()


def _usage(record: openprogram.CallRecord) -> dict[str, int]:
    found: dict[str, int] = attributes(record)["usage"]
    return found


def _summed(records: list[openprogram.CallRecord]) -> tuple[int, int, int]:
    usages = [_usage(r) for r in records]
    return tuple(sum(u[key] for u in usages) for key in ("input_tokens", "output_tokens", "total_tokens"))  # type: ignore[return-value]


def _crewai_totals(llm: Any) -> tuple[int, int, int]:
    summary = llm.get_token_usage_summary()
    return summary.prompt_tokens, summary.completion_tokens, summary.total_tokens


@pytest.mark.parametrize("native", [False, True], ids=["react_text", "native_function_calling"])
def test_each_request_of_an_agent_is_one_llm_call_under_that_agent(store: Store, native: bool) -> None:
    llm = scripted_llm([("echo", {"x": "hi"})], native=native, final="all done")
    with openprogram.session_context(store=store) as h:
        assert _kickoff(llm).raw == "all done"
    records = calls(store, h.session_id)
    (agent,) = by_kind(records, "agent")
    asked, answered = by_kind(records, "llm")
    for request in (asked, answered):
        assert parent_of(records, request) == agent
        assert (request.name, request.framework, request.status) == ("scripted-offline", "crewai", "ok")
        assert attributes(request)["model"] == "scripted-offline" and attributes(request)["provider"] == "openai"
        assert "stream" not in attributes(request)
    assert asked.started_at < one(records, "echo", "tool").started_at < answered.started_at
    assert _summed([asked, answered]) == _crewai_totals(llm)  # what CrewAI accounted, request by request
    first, last = asked.inputs, answered.inputs
    assert [m["role"] for m in first["messages"]] == ["system", "user"]
    assert first["params"] == {"stop": ["\nObservation:"]}  # the executor's per-request stop words
    if native:
        assert first["tools"] == ["echo"]
        asked_for = [{"id": "call_0_0", "name": "echo", "arguments": {"x": "hi"}}]
        assert asked.output == {"role": "assistant", "content": None, "tool_calls": asked_for}
        assert last["messages"][-2]["tool_calls"] == asked.output["tool_calls"]
        assert last["messages"][-1]["role"] == "tool" and last["messages"][-1]["tool_call_id"] == "call_0_0"
        assert answered.output == {"role": "assistant", "content": "all done"}
    else:
        assert "tools" not in first  # the ReAct path describes the tools in the prompt
        assert 'Action: echo\nAction Input: {"x": "hi"}' in asked.output["content"]
        assert "Final Answer: all done" in answered.output["content"]


def test_openai_provider_request_records_its_reported_usage_finish_reason_and_params(store: Store) -> None:
    llm = openai_llm([("echo", {"x": "hi"})], final="all done", temperature=0.2, max_tokens=50)
    with openprogram.session_context(store=store) as h:
        assert _kickoff(llm).raw == "all done"
    records = calls(store, h.session_id)
    asked, answered = by_kind(records, "llm")
    assert {r.name for r in (asked, answered)} == {"gpt-4o-mini"}
    assert attributes(asked)["provider"] == "openai" and parent_of(records, asked) == one(records, "Tester", "agent")
    assert asked.output["tool_calls"] == [{"id": "call_0_0", "name": "echo", "arguments": {"x": "hi"}}]
    assert asked.output["finish_reason"] == "tool_calls" and answered.output["finish_reason"] == "stop"
    assert asked.inputs["params"] == {"temperature": 0.2, "max_tokens": 50, "stop": ["\nObservation:"]}
    assert asked.inputs["tools"] == ["echo"]
    assert _summed([asked, answered]) == _crewai_totals(llm) and _usage(asked)["input_tokens"] > 0


def test_streamed_request_is_one_llm_call_with_stream_true_and_the_joined_reply(store: Store) -> None:
    llm = openai_llm([("echo", {"x": "hi"})], final="streamed answer, in pieces", stream=True)
    with openprogram.session_context(store=store) as h:
        assert _kickoff(llm).raw == "streamed answer, in pieces"
        assert llm.call("and once more") == "streamed answer, in pieces"
    records = calls(store, h.session_id)
    asked, answered, direct = by_kind(records, "llm")
    assert all(attributes(r)["stream"] is True for r in (asked, answered, direct))
    assert asked.output["tool_calls"] == [{"id": "call_0_0", "name": "echo", "arguments": {"x": "hi"}}]
    assert answered.output["content"] == "streamed answer, in pieces"  # chunks of 4 characters, joined
    assert direct.inputs == {"messages": [{"role": "user", "content": "and once more"}]}
    assert _summed([asked, answered, direct]) == _crewai_totals(llm)  # the usage of each stream's last chunk


def test_stream_events_of_an_llm_built_without_stream_is_one_streamed_llm_call(store: Store) -> None:
    llm = openai_llm(final="streamed via events")
    with openprogram.session_context(store=store) as h:
        if hasattr(llm, "stream_events"):  # later 1.15.x: streams this request only
            list(llm.stream_events("hi"))
        else:  # 1.15.0: streaming is the LLM's own setting
            llm.stream = True
            llm.call("hi")
    (request,) = by_kind(calls(store, h.session_id), "llm")
    assert attributes(request)["stream"] is True and request.output["content"] == "streamed via events"
    assert _usage(request) == {"input_tokens": 0, "output_tokens": 4, "total_tokens": 4}


def test_direct_call_is_one_llm_call_under_the_current_call(store: Store) -> None:
    llm = openai_llm(final="hello")
    with openprogram.session_context(store=store) as h:
        llm.call("hi")
        with openprogram.call_scope("call", "mine"):
            llm.call([{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi"}])
    records = calls(store, h.session_id)
    top, inner = by_kind(records, "llm")
    assert parent_of(records, top) == by_kind(records, "turn")[0]
    assert parent_of(records, inner) == one(records, "mine", "call")
    assert top.inputs == {"messages": [{"role": "user", "content": "hi"}]}
    assert inner.inputs["messages"] == [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi"}]
    assert top.output == {"role": "assistant", "content": "hello", "finish_reason": "stop"}


def test_acall_is_one_llm_call_on_the_async_path(store: Store) -> None:
    llm = openai_llm(final="async hello")
    scripted = scripted_llm(final="scripted")  # its acall runs its own call: the same request

    async def ask() -> tuple[Any, Any]:
        return await llm.acall("hello there, model"), await scripted.acall("hi there")

    with openprogram.session_context(store=store) as h:
        assert asyncio.run(ask()) == ("async hello", "Thought: I now know the final answer\nFinal Answer: scripted")
    openai_request, scripted_request = by_kind(calls(store, h.session_id), "llm")
    assert openai_request.output["content"] == "async hello" and _usage(openai_request) == {
        "input_tokens": 4,
        "output_tokens": 2,
        "total_tokens": 6,
    }
    assert scripted_request.name == "scripted-offline" and _usage(scripted_request)["input_tokens"] == 2


def test_subclass_defined_before_instrument_calling_super_call_is_one_request(store: Store) -> None:
    llm = answer_offline(ShoutingLLM(model="gpt-4o-mini", api_key="sk-offline"), final="quiet")
    with openprogram.session_context(store=store) as h:
        assert llm.call("hi") == "QUIET"
    (request,) = by_kind(calls(store, h.session_id), "llm")
    assert request.output["content"] == "QUIET"  # what the user's class returned
    assert _usage(request) == {"input_tokens": 0, "output_tokens": 1, "total_tokens": 1}


def test_subclass_defined_after_instrument_overriding_call_is_recorded(store: Store) -> None:
    class Canned(BaseLLM):
        def call(self, messages: Any, *args: Any, **kwargs: Any) -> Any:
            self._track_token_usage_internal({"input_tokens": 3, "output_tokens": 4})  # Anthropic's spelling
            return "canned"

    class Cheerful(Canned):  # a subclass of the user's class, calling its methods through super()
        def call(self, messages: Any, *args: Any, **kwargs: Any) -> Any:
            return super().call(messages, *args, **kwargs) + "!"

        def _track_token_usage_internal(self, usage_data: dict[str, Any]) -> None:
            super()._track_token_usage_internal(usage_data)

    with openprogram.session_context(store=store) as h:
        assert Canned(model="anthropic/claude-offline").call("hi") == "canned"
        assert Cheerful(model="canned-model", provider="mine").call("hi") == "canned!"
    canned, cheerful = by_kind(calls(store, h.session_id), "llm")
    assert (canned.name, cheerful.name) == ("anthropic/claude-offline", "canned-model")
    assert attributes(cheerful)["provider"] == "mine"
    assert _usage(canned) == _usage(cheerful) == {"input_tokens": 3, "output_tokens": 4, "total_tokens": 7}
    assert cheerful.output["content"] == "canned!"


def test_available_functions_run_by_the_llm_record_their_result_as_the_reply(store: Store) -> None:
    parameters = {"type": "object", "properties": {"x": {"type": "string"}}}
    schema = {"type": "function", "function": {"name": "echo", "description": "Echo x.", "parameters": parameters}}
    llm = openai_llm([("echo", {"x": "from the model"})])
    with openprogram.session_context(store=store) as h:
        result = llm.call("use echo", tools=[schema], available_functions={"echo": lambda x: f"ran {x}"})
    assert result == "ran from the model"
    (request,) = by_kind(calls(store, h.session_id), "llm")
    assert request.inputs["tools"] == ["echo"] and request.output["content"] == "ran from the model"


def test_structured_output_request_names_its_response_model(store: Store) -> None:
    class Verdict(BaseModel):
        ok: bool

    llm = openai_llm(final='{"ok": true}')
    with openprogram.session_context(store=store) as h:
        verdict = llm.call("judge", response_model=Verdict)
    assert isinstance(verdict, Verdict) and verdict.ok
    (request,) = by_kind(calls(store, h.session_id), "llm")
    assert request.inputs["params"] == {"response_model": "Verdict"}
    assert request.output["content"] == {"ok": True}


def test_failing_request_is_an_error_llm_call_and_the_same_exception_reaches_the_user(store: Store) -> None:
    error = ConnectionError("model unreachable")
    llm = scripted_llm(error=error)
    with openprogram.session_context(store=store) as h:
        with pytest.raises(ConnectionError) as raised:
            llm.call("hi")
        assert raised.value is error
        with pytest.raises(Exception) as http_error:
            openai_llm(status=500).call("hi")
    failed, http_failed = by_kind(calls(store, h.session_id), "llm")
    assert failed.status == "error" and "model unreachable" in (failed.error or "")
    assert http_failed.status == "error" and "offline error 500" in (http_failed.error or "")
    assert "offline error 500" in str(http_error.value)


def test_failing_llm_in_a_crew_ends_each_request_in_error_under_its_agent(store: Store) -> None:
    llm = scripted_llm(error=ConnectionError("model unreachable"))
    with openprogram.session_context(store=store) as h:
        with pytest.raises(ConnectionError, match="model unreachable"):
            _kickoff(llm)
    records = calls(store, h.session_id)
    requests = by_kind(records, "llm")
    assert requests and {r.status for r in requests} == {"error"}  # CrewAI retries the task: one call per attempt
    assert {parent_of(records, r).kind for r in requests} == {"agent"}  # type: ignore[union-attr]


def test_content_capture_off_keeps_model_usage_and_status_but_no_messages(store: Store) -> None:
    openprogram.configure(capture_content=False)
    llm = openai_llm([("echo", {"x": "secret"})], final="secret answer")
    with openprogram.session_context(store=store) as h:
        _kickoff(llm)
    requests = by_kind(calls(store, h.session_id), "llm")
    assert len(requests) == 2
    for request in requests:
        assert request.inputs is None and request.output is None and request.status == "ok"
        assert attributes(request)["model"] == "gpt-4o-mini" and _usage(request)["total_tokens"] > 0
    assert _summed(requests) == _crewai_totals(llm)


def test_concurrent_requests_on_one_llm_count_only_their_own_usage(store: Store) -> None:
    both_asked = threading.Barrier(2, timeout=10)

    class Shared(BaseLLM):
        def call(self, messages: Any, *args: Any, **kwargs: Any) -> Any:
            both_asked.wait()  # both requests are running before either reports its usage
            self._track_token_usage_internal({"prompt_tokens": len(messages), "completion_tokens": 1})
            both_asked.wait()
            return "ok"

    llm = Shared(model="shared")
    with openprogram.session_context(store=store) as h:
        threads = [threading.Thread(target=contextvars.copy_context().run, args=(llm.call, "x" * n)) for n in (10, 20)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    requests = by_kind(calls(store, h.session_id), "llm")
    assert sorted(_usage(r)["input_tokens"] for r in requests) == [10, 20]
    assert _crewai_totals(llm) == (30, 2, 32)


def test_instrument_twice_records_one_llm_call(store: Store, instrument: Callable[..., set[str]]) -> None:
    instrument("crewai")
    with openprogram.session_context(store=store) as h:
        scripted_llm().call("hi")
    assert len(by_kind(calls(store, h.session_id), "llm")) == 1


def test_uninstrument_restores_every_llm_class_and_patches_new_ones_no_more(store: Store) -> None:
    class Mine(BaseLLM):
        def call(self, messages: Any, *args: Any, **kwargs: Any) -> Any:
            return "mine"

    scripted = type(scripted_llm())  # its call is its mixin's: wrapped on the class itself
    patched = [LLM, OpenAICompletion, ShoutingLLM, Mine]
    assert all(hasattr(cls.__dict__["call"], ORIGINAL) for cls in [*patched, scripted])
    assert hasattr(BaseLLM.__dict__["_track_token_usage_internal"], ORIGINAL)
    openprogram.uninstrument("crewai")

    class Later(BaseLLM):
        def call(self, messages: Any, *args: Any, **kwargs: Any) -> Any:
            return "later"

    for cls in [*patched, Later]:
        assert not hasattr(cls.__dict__["call"], ORIGINAL), cls
    assert "call" not in scripted.__dict__  # its mixin's again
    assert not any(
        hasattr(BaseLLM.__dict__.get(name), ORIGINAL)
        for name in ("_track_token_usage_internal", "_emit_call_completed_event")
    )
    assert "__pydantic_init_subclass__" not in BaseLLM.__dict__
    with openprogram.session_context(store=store) as h:
        assert Mine(model="mine").call("hi") == "mine" and Later(model="later").call("hi") == "later"
        openai_llm(final="plain").call("hi")
    assert by_kind(calls(store, h.session_id), "llm") == []

    openprogram.instrument("crewai")  # again: a class defined while it was off is found
    with openprogram.session_context(store=store) as h:
        Later(model="later").call("hi")
    assert [r.name for r in by_kind(calls(store, h.session_id), "llm")] == ["later"]

"""Each LangChain chat model request is one ``llm`` call under the node, task or tool that asked, in the one shape."""

from __future__ import annotations

import inspect
import logging
from collections.abc import Callable
from typing import Any

import openprogram
import openprogram._runtime
import pytest
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.tools import tool
from langgraph.graph import END, START, StateGraph
from pydantic import BaseModel

from tests.integrations.langgraph.fakes import (
    OPENAI_MODEL,
    Chat,
    FailingChatModel,
    OpenAIStyleChatModel,
    ProviderError,
    add,
    agent_graph,
    multiply,
    one_tool_call_graph,
    openai_model,
    react_graph,
    tool_calls,
    words,
)
from tests.support import attributes, by_kind, calls, one

CHAT_MODEL_METHODS = ("_generate_with_cache", "_agenerate_with_cache", "stream", "astream")


def _one_node_graph(node: Callable[..., Any]) -> Any:
    graph = StateGraph(Chat)
    graph.add_node("agent", node)
    graph.add_edge(START, "agent")
    graph.add_edge("agent", END)
    return graph.compile()


def _usage(input_tokens: int, output_tokens: int) -> dict[str, int]:
    return {"input_tokens": input_tokens, "output_tokens": output_tokens, "total_tokens": input_tokens + output_tokens}


def _joined(chunks: list[Any]) -> Any:
    whole = chunks[0]
    for chunk in chunks[1:]:
        whole = whole + chunk
    return whole


# --- invoke, ainvoke, batch, abatch ----------------------------------------------------


def test_invoke_in_a_node_is_one_llm_call_with_model_provider_messages_tools_params_and_usage(store: Any) -> None:
    model = openai_model(tool_calls(("add", {"a": 2, "b": 3})), temperature=0.2, max_tokens=64)
    graph = _one_node_graph(lambda state: {"messages": [model.bind_tools([add, multiply]).invoke(state["messages"])]})
    asked = [SystemMessage("You add numbers."), HumanMessage("What is 2 + 3?")]
    with openprogram.session_context(store=store) as h:
        graph.invoke({"messages": asked})
    records = calls(store, h.session_id)
    (llm,) = by_kind(records, "llm")
    assert llm.parent_id == one(records, "agent", "node").call_id
    assert (llm.name, llm.framework, llm.status) == (OPENAI_MODEL, "langgraph", "ok")
    assert llm.inputs == {
        "messages": [{"role": "system", "content": "You add numbers."}, {"role": "user", "content": "What is 2 + 3?"}],
        "tools": ["add", "multiply"],
        "params": {"temperature": 0.2, "max_tokens": 64},
    }
    assert llm.output == {
        "role": "assistant",
        "content": "",
        "tool_calls": [{"id": "call-0", "name": "add", "arguments": {"a": 2, "b": 3}}],
        "finish_reason": "tool_calls",
    }
    asked_tokens = words("You add numbers.") + words("What is 2 + 3?")
    assert attributes(llm) == {"model": OPENAI_MODEL, "provider": "openai", "usage": _usage(asked_tokens, 1)}


def test_each_turn_of_a_tool_loop_records_the_tool_calls_and_results_it_was_sent(store: Any) -> None:
    model = openai_model(tool_calls(("add", {"a": 2, "b": 3}), ("multiply", {"a": 2, "b": 3})), AIMessage("5 and 6"))
    graph = agent_graph(model.bind_tools([add, multiply]), [add, multiply])
    with openprogram.session_context(store=store) as h:
        assert graph.invoke({"messages": [HumanMessage("2+3 and 2*3?")]})["messages"][-1].content == "5 and 6"
    records = calls(store, h.session_id)
    agents = [n for n in by_kind(records, "node") if n.name == "agent"]
    llms = by_kind(records, "llm")
    assert [c.parent_id for c in llms] == [n.call_id for n in agents]
    asked = [
        {"id": "call-0", "name": "add", "arguments": {"a": 2, "b": 3}},
        {"id": "call-1", "name": "multiply", "arguments": {"a": 2, "b": 3}},
    ]
    assert llms[1].inputs["messages"] == [
        {"role": "user", "content": "2+3 and 2*3?"},
        {"role": "assistant", "content": "", "tool_calls": asked},
        {"role": "tool", "content": "5", "tool_call_id": "call-0"},
        {"role": "tool", "content": "6", "tool_call_id": "call-1"},
    ]
    assert llms[1].output == {"role": "assistant", "content": "5 and 6", "finish_reason": "stop"}
    assert attributes(llms[1])["usage"] == _usage(words("2+3 and 2*3?") + 2, words("5 and 6"))


async def test_ainvoke_in_an_async_node_is_one_llm_call_under_it(store: Any) -> None:
    model = openai_model(AIMessage("bonjour"))

    async def agent(state: Chat) -> dict[str, Any]:
        return {"messages": [await model.ainvoke(state["messages"])]}

    async with openprogram.session_context(store=store) as h:
        await _one_node_graph(agent).ainvoke({"messages": [HumanMessage("hello in French")]})
    records = calls(store, h.session_id)
    (llm,) = by_kind(records, "llm")
    assert llm.parent_id == one(records, "agent", "node").call_id and llm.status == "ok"
    assert llm.output == {"role": "assistant", "content": "bonjour", "finish_reason": "stop"}
    assert attributes(llm)["usage"] == _usage(3, 1)


def test_batch_is_one_llm_call_per_input_under_the_node(store: Any) -> None:
    model = openai_model(AIMessage("yes"))
    graph = _one_node_graph(lambda state: {"messages": model.batch(["first?", "second?"])})
    with openprogram.session_context(store=store) as h:
        graph.invoke({"messages": []})
    records = calls(store, h.session_id)
    llms = by_kind(records, "llm")
    assert sorted(c.inputs["messages"][0]["content"] for c in llms) == ["first?", "second?"]
    assert {c.parent_id for c in llms} == {one(records, "agent", "node").call_id}
    assert all(attributes(c)["usage"] == _usage(1, 1) for c in llms)


async def test_abatch_is_one_llm_call_per_input_under_the_node(store: Any) -> None:
    model = openai_model(AIMessage("yes"))

    async def agent(state: Chat) -> dict[str, Any]:
        return {"messages": await model.abatch(["first?", "second?", "third?"])}

    async with openprogram.session_context(store=store) as h:
        await _one_node_graph(agent).ainvoke({"messages": []})
    records = calls(store, h.session_id)
    llms = by_kind(records, "llm")
    assert sorted(c.inputs["messages"][0]["content"] for c in llms) == ["first?", "second?", "third?"]
    assert {c.parent_id for c in llms} == {one(records, "agent", "node").call_id}


# --- stream, astream --------------------------------------------------------------------


def test_stream_is_one_llm_call_with_the_joined_reply_and_the_usage_of_the_last_chunk(store: Any) -> None:
    model = openai_model(tool_calls(("add", {"a": 2, "b": 3})), AIMessage("The sum is 5"), streaming=True)
    bound = model.bind_tools([add])
    streamed: list[list[Any]] = []

    def agent(state: Chat) -> dict[str, Any]:
        streamed.append(list(bound.stream(state["messages"])))
        return {"messages": [_joined(streamed[-1])]}

    graph = react_graph(agent, [add])
    with openprogram.session_context(store=store) as h:
        graph.invoke({"messages": [HumanMessage("2 + 3?")]})
    records = calls(store, h.session_id)
    llms = by_kind(records, "llm")
    agents = [n for n in by_kind(records, "node") if n.name == "agent"]
    assert [c.parent_id for c in llms] == [n.call_id for n in agents] and all(len(s) > 3 for s in streamed)
    assert all(attributes(c)["stream"] is True and c.status == "ok" for c in llms)
    assert llms[0].output == {
        "role": "assistant",
        "content": "",
        "tool_calls": [{"id": "call-0", "name": "add", "arguments": {"a": 2, "b": 3}}],
        "finish_reason": "tool_calls",
    }
    assert llms[1].output == {"role": "assistant", "content": "The sum is 5", "finish_reason": "stop"}
    assert llms[1].inputs["tools"] == ["add"]
    assert attributes(llms[1])["usage"] == _usage(words("2 + 3?") + 1, words("The sum is 5"))


async def test_astream_is_one_llm_call_with_the_joined_reply(store: Any) -> None:
    model = openai_model(AIMessage("streamed in pieces"), streaming=True)

    async def agent(state: Chat) -> dict[str, Any]:
        chunks = [chunk async for chunk in model.astream(state["messages"], temperature=0.5)]
        return {"messages": [_joined(chunks)]}

    async with openprogram.session_context(store=store) as h:
        await _one_node_graph(agent).ainvoke({"messages": [HumanMessage("stream please")]})
    records = calls(store, h.session_id)
    (llm,) = by_kind(records, "llm")
    assert llm.parent_id == one(records, "agent", "node").call_id
    assert llm.output == {"role": "assistant", "content": "streamed in pieces", "finish_reason": "stop"}
    assert attributes(llm) == {"model": OPENAI_MODEL, "provider": "openai", "stream": True, "usage": _usage(2, 3)}
    assert llm.inputs == {"messages": [{"role": "user", "content": "stream please"}], "params": {"temperature": 0.5}}


def test_streaming_a_model_that_cannot_stream_is_one_llm_call(store: Any) -> None:
    model = openai_model(tool_calls(("add", {"a": 1, "b": 1})))  # no _stream: stream() falls back to invoke()
    with openprogram.session_context(store=store) as h:
        (only,) = list(model.bind_tools([add]).stream("1 + 1?"))
    (llm,) = by_kind(calls(store, h.session_id), "llm")
    assert only.tool_calls[0]["args"] == {"a": 1, "b": 1}
    assert attributes(llm) == {"model": OPENAI_MODEL, "provider": "openai", "stream": True, "usage": _usage(3, 1)}
    assert llm.output["tool_calls"] == [{"id": "call-0", "name": "add", "arguments": {"a": 1, "b": 1}}]


async def test_astreaming_a_model_that_cannot_stream_is_one_llm_call(store: Any) -> None:
    model = openai_model(AIMessage("whole"))
    async with openprogram.session_context(store=store) as h:
        assert [c.content async for c in model.astream("at once?")] == ["whole"]
    (llm,) = by_kind(calls(store, h.session_id), "llm")
    assert attributes(llm)["stream"] is True and llm.output["content"] == "whole"


def test_an_abandoned_stream_is_interrupted_at_once_with_what_arrived(store: Any) -> None:
    model = openai_model(AIMessage("one two three four"), streaming=True)
    with openprogram.session_context(store=store) as h:
        chunks = model.stream("count to four")
        assert next(chunks).content == "one" and next(chunks).content == " two"
        chunks.close()
        (llm,) = by_kind(calls(store, h.session_id), "llm")
        assert (llm.status, llm.output["content"], llm.ended_at is not None) == ("interrupted", "one two", True)


async def test_an_abandoned_astream_is_interrupted_at_once_with_what_arrived(store: Any) -> None:
    model = openai_model(AIMessage("one two three four"), streaming=True)
    async with openprogram.session_context(store=store) as h:
        chunks = model.astream("count to four")
        assert (await chunks.__anext__()).content == "one"
        await chunks.aclose()
        (llm,) = by_kind(calls(store, h.session_id), "llm")
        assert (llm.status, llm.output["content"]) == ("interrupted", "one")


# --- failures ----------------------------------------------------------------------------


def test_a_failing_model_is_an_error_llm_call_and_its_exception_reaches_the_caller_unchanged(store: Any) -> None:
    model = FailingChatModel(replies=[AIMessage("never")])
    graph = _one_node_graph(lambda state: {"messages": [model.invoke(state["messages"])]})
    with openprogram.session_context(store=store) as h, pytest.raises(ProviderError) as raised:
        graph.invoke({"messages": [HumanMessage("hi")]})
    assert raised.value is model.error
    records = calls(store, h.session_id)
    (llm,) = by_kind(records, "llm")
    assert (llm.status, llm.parent_id) == ("error", one(records, "agent", "node").call_id)
    assert "rate limit" in (llm.error or "") and llm.output is None and "usage" not in attributes(llm)


async def test_a_failing_async_model_is_an_error_llm_call_and_its_exception_reaches_the_caller(store: Any) -> None:
    model = FailingChatModel(replies=[AIMessage("never")])
    async with openprogram.session_context(store=store) as h:
        with pytest.raises(ProviderError) as raised:
            await model.ainvoke("hi")
    assert raised.value is model.error
    (llm,) = by_kind(calls(store, h.session_id), "llm")
    assert llm.status == "error" and "rate limit" in (llm.error or "")


def test_a_stream_failing_midway_is_an_error_llm_call_with_what_arrived(store: Any) -> None:
    model = FailingChatModel(replies=[AIMessage("partial answer here")], streamed=2)
    got: list[Any] = []
    with openprogram.session_context(store=store) as h, pytest.raises(ProviderError) as raised:
        got.extend(model.stream("go"))
    assert raised.value is model.error
    (llm,) = by_kind(calls(store, h.session_id), "llm")
    assert (llm.status, llm.output["content"], attributes(llm)["stream"]) == ("error", "partial answer", True)


async def test_an_astream_failing_midway_is_an_error_llm_call_with_what_arrived(store: Any) -> None:
    model = FailingChatModel(replies=[AIMessage("partial answer here")], streamed=1)
    async with openprogram.session_context(store=store) as h:
        with pytest.raises(ProviderError) as raised:
            _ = [chunk async for chunk in model.astream("go")]
    assert raised.value is model.error
    (llm,) = by_kind(calls(store, h.session_id), "llm")
    assert (llm.status, llm.output["content"]) == ("error", "partial")


# --- what a request is made of ---------------------------------------------------------


class Weather(BaseModel):
    """The weather in a city."""

    city: str
    degrees: int


def test_with_structured_output_is_one_llm_call_offering_the_schema_as_a_tool(store: Any) -> None:
    model = openai_model(tool_calls(("Weather", {"city": "Paris", "degrees": 21})))
    with openprogram.session_context(store=store) as h:
        assert model.with_structured_output(Weather).invoke("Weather in Paris?") == Weather(city="Paris", degrees=21)
    (llm,) = by_kind(calls(store, h.session_id), "llm")
    assert llm.inputs["tools"] == ["Weather"] and llm.inputs["messages"] == [
        {"role": "user", "content": "Weather in Paris?"}
    ]
    assert llm.output["tool_calls"] == [
        {"id": "call-0", "name": "Weather", "arguments": {"city": "Paris", "degrees": 21}}
    ]


@pytest.mark.parametrize("method", ["invoke", "stream"])
def test_every_form_of_request_input_is_recorded_as_messages_in_the_one_shape(store: Any, method: str) -> None:
    model = openai_model(AIMessage("ok"))
    image = [{"type": "text", "text": "see"}, {"type": "image_url", "image_url": {"url": "x"}}]
    prompt = ChatPromptTemplate.from_messages([("system", "You are {who}."), ("human", "{question}")])
    requests: list[Any] = [
        "plain text",
        [("system", "be brief"), ("human", "tuples")],
        [{"role": "user", "content": "a dict"}],
        prompt.invoke({"who": "helpful", "question": "a prompt value"}),
        [HumanMessage(content=[{"type": "text", "text": "text "}, {"type": "text", "text": "blocks"}])],
        [HumanMessage(content=image)],
    ]
    with openprogram.session_context(store=store) as h:
        for request in requests:
            if method == "stream":
                list(model.stream(request))
            else:
                model.invoke(request)
    assert [c.inputs["messages"] for c in by_kind(calls(store, h.session_id), "llm")] == [
        [{"role": "user", "content": "plain text"}],
        [{"role": "system", "content": "be brief"}, {"role": "user", "content": "tuples"}],
        [{"role": "user", "content": "a dict"}],
        [{"role": "system", "content": "You are helpful."}, {"role": "user", "content": "a prompt value"}],
        [{"role": "user", "content": "text blocks"}],
        [{"role": "user", "content": image}],  # not only text: the blocks as they are
    ]


def test_a_reply_of_text_blocks_is_recorded_as_its_text(store: Any) -> None:
    blocks = [
        {"type": "text", "text": "Hello "},
        {"type": "tool_use", "id": "t1", "name": "add", "input": {}},
        {"type": "text", "text": "world"},
    ]
    model = openai_model(AIMessage(content=blocks))
    with openprogram.session_context(store=store) as h:
        model.invoke("greet")
    (llm,) = by_kind(calls(store, h.session_id), "llm")
    assert llm.output == {"role": "assistant", "content": "Hello world", "finish_reason": "stop"}


def test_tools_offered_in_any_format_are_recorded_by_name(store: Any) -> None:
    def weather(city: str) -> str:
        """The weather in a city."""
        return city

    model = openai_model(AIMessage("ok"))
    anthropic_style = {"name": "lookup", "description": "Look up.", "input_schema": {"type": "object"}}
    with openprogram.session_context(store=store) as h:
        model.bind_tools([add, weather, Weather]).invoke("x")  # BaseTool, function, class: as OpenAI dicts
        model.bind(tools=[add, anthropic_style, {"type": "web_search"}]).invoke("y")  # as a provider sends them
    assert [c.inputs["tools"] for c in by_kind(calls(store, h.session_id), "llm")] == [
        ["add", "weather", "Weather"],
        ["add", "lookup", "web_search"],
    ]


# --- where a request is recorded ----------------------------------------------------------


def test_a_model_asked_inside_a_tool_is_an_llm_call_under_that_tool(store: Any) -> None:
    expert = openai_model(AIMessage("42"))

    @tool
    def ask_expert(question: str) -> str:
        """Ask the expert model."""
        return str(expert.invoke(question).content)

    graph = one_tool_call_graph(ask_expert, {"question": "the answer?"}, Chat)
    with openprogram.session_context(store=store) as h:
        graph.invoke({"messages": [HumanMessage("ask")]})
    records = calls(store, h.session_id)
    (llm,) = by_kind(records, "llm")
    assert llm.parent_id == one(records, "ask_expert", "tool").call_id and llm.output["content"] == "42"


def test_a_request_outside_any_graph_is_an_llm_call_of_the_session(store: Any) -> None:
    model = openai_model(AIMessage("hi"))
    with openprogram.session_context(store=store) as h:
        model.invoke("hello")
    records = calls(store, h.session_id)
    (llm,) = by_kind(records, "llm")
    assert llm.parent_id == one(records, "main", "turn").call_id


def test_invoke_streamed_by_stream_mode_messages_is_one_llm_call(store: Any) -> None:
    model = openai_model(AIMessage("word by word reply"), streaming=True)
    graph = _one_node_graph(lambda state: {"messages": [model.invoke(state["messages"])]})
    with openprogram.session_context(store=store) as h:
        pieces = [m.content for m, _ in graph.stream({"messages": [HumanMessage("go")]}, stream_mode="messages")]
    assert "".join(pieces) == "word by word reply" and len(pieces) > 3  # LangGraph streamed the model's tokens
    (llm,) = by_kind(calls(store, h.session_id), "llm")
    assert llm.output["content"] == "word by word reply" and attributes(llm)["usage"] == _usage(1, 4)


async def test_invoke_streamed_by_astream_events_is_one_llm_call(store: Any) -> None:
    model = openai_model(AIMessage("event by event"), streaming=True)

    async def agent(state: Chat) -> dict[str, Any]:
        return {"messages": [await model.ainvoke(state["messages"])]}

    async with openprogram.session_context(store=store) as h:
        events = [e["event"] async for e in _one_node_graph(agent).astream_events({"messages": []}, version="v2")]
    assert events.count("on_chat_model_stream") > 2
    (llm,) = by_kind(calls(store, h.session_id), "llm")
    assert llm.output["content"] == "event by event"


# --- content capture, and the patches themselves -------------------------------------------


@pytest.mark.parametrize("switch", ["configure", "environment"])
def test_without_content_capture_llm_calls_keep_model_usage_and_status_only(
    store: Any, switch: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    if switch == "configure":
        openprogram.configure(capture_content=False)
    else:
        monkeypatch.setenv("OPENPROGRAM_CAPTURE_CONTENT", "false")
    model = openai_model(tool_calls(("add", {"a": 2, "b": 3})), AIMessage("5"), streaming=True)
    graph = agent_graph(model.bind_tools([add]), [add])
    with openprogram.session_context(store=store) as h:
        graph.invoke({"messages": [HumanMessage("secret question")]})
        list(model.stream("secret stream"))
    records = calls(store, h.session_id)
    llms = by_kind(records, "llm")
    assert len(llms) == 3 and all(c.inputs is None and c.output is None and c.status == "ok" for c in llms)
    assert [attributes(c)["usage"]["input_tokens"] for c in llms] == [2, 3, 2]
    assert all(attributes(c)["model"] == OPENAI_MODEL and attributes(c)["provider"] == "openai" for c in llms)
    assert attributes(llms[2])["stream"] is True
    assert one(records, "LangGraph", "graph").output is None
    assert "secret" not in repr([c.to_dict() for c in records])


class UnreadableUsage(dict):  # type: ignore[type-arg]
    """Token counts the adapter cannot read."""

    def get(self, *args: Any) -> Any:
        raise RuntimeError("unreadable usage")


class UnreadableModel(OpenAIStyleChatModel):
    """A model whose replies carry usage our adapter cannot read."""

    def _generate(self, messages: Any, stop: Any = None, run_manager: Any = None, **kwargs: Any) -> Any:
        result = super()._generate(messages, stop, run_manager, **kwargs)
        result.generations[0].message.usage_metadata = UnreadableUsage(input_tokens=1)
        return result


def test_a_reply_the_adapter_cannot_read_is_logged_once_and_its_call_still_ends(
    store: Any, caplog: pytest.LogCaptureFixture
) -> None:
    openprogram._runtime.forget_logged()  # each failure is logged once per process
    caplog.set_level(logging.ERROR, logger="openprogram")
    model = UnreadableModel(replies=[AIMessage("fine")])
    with openprogram.session_context(store=store) as h:
        assert model.invoke("hi").content == model.invoke("again").content == "fine"
    assert len([r for r in caplog.records if "reading a chat model's reply" in r.getMessage()]) == 1
    assert "unreadable usage" in caplog.text
    llms = by_kind(calls(store, h.session_id), "llm")
    assert [(c.name, c.status, c.output) for c in llms] == [(OPENAI_MODEL, "ok", None)] * 2
    assert "usage" not in attributes(llms[0])


def test_the_wrapped_chat_model_methods_keep_their_shape_and_name() -> None:
    for name in CHAT_MODEL_METHODS:
        wrapped = vars(BaseChatModel)[name]
        original = wrapped.__openprogram_original__
        assert wrapped.__wrapped__ is original and wrapped.__name__ == original.__name__ == name
    assert inspect.isgeneratorfunction(BaseChatModel.stream)
    assert inspect.isasyncgenfunction(BaseChatModel.astream)
    assert inspect.iscoroutinefunction(BaseChatModel._agenerate_with_cache)
    assert not inspect.iscoroutinefunction(BaseChatModel._generate_with_cache)


def test_uninstrument_restores_the_chat_model_methods_and_records_no_llm_call(store: Any) -> None:
    originals = {name: vars(BaseChatModel)[name].__openprogram_original__ for name in CHAT_MODEL_METHODS}
    openprogram.uninstrument("langgraph")
    assert {name: vars(BaseChatModel)[name] for name in CHAT_MODEL_METHODS} == originals
    model = openai_model(AIMessage("plain"), streaming=True)
    with openprogram.session_context(store=store) as h:
        assert model.invoke("x").content == "plain" and len(list(model.stream("y"))) > 1
    assert [c.kind for c in calls(store, h.session_id)] == ["turn"]


# --- what the adapter asks of the model ------------------------------------------------


def test_a_request_asks_the_model_for_its_standard_params_once_as_without_openprogram(store: Any) -> None:
    asked: list[dict[str, Any]] = []

    class Counting(OpenAIStyleChatModel):
        def _get_ls_params(self, stop: list[str] | None = None, **kwargs: Any) -> Any:
            asked.append(kwargs)
            return super()._get_ls_params(stop=stop, **kwargs)

    model = Counting(replies=[AIMessage("4")], requests=[], temperature=0.5)
    openprogram.uninstrument()
    model.invoke([HumanMessage("2 + 2?")])
    without = len(asked)
    openprogram.instrument("langgraph")
    with openprogram.session_context(store=store) as h:
        model.invoke([HumanMessage("2 + 2?")], temperature=0.7)
    assert len(asked) == 2 * without  # the adapter reads the params LangChain put in the run's metadata
    (llm,) = by_kind(calls(store, h.session_id), "llm")
    assert (llm.name, llm.inputs["params"]["temperature"]) == (OPENAI_MODEL, 0.7)


class _Extras(BaseModel, extra="allow"):
    field: int = 1

    @property
    def computed(self) -> str:
        return "a property"


@pytest.mark.parametrize(
    "name",
    [
        "field",
        "extra",
        "computed",
        "absent",
        "content",
        "tool_calls",
        "tool_call_id",
        "usage_metadata",
        "response_metadata",
        "role",
        "model_fields_set",
    ],
)
def test_attribute_answers_what_getattr_answers_on_pydantic_models_and_langchain_messages(name: str) -> None:
    from langchain_core.messages import ChatMessage, ToolMessage
    from openprogram._kit import attribute

    asking = AIMessage("a", tool_calls=[{"id": "1", "name": "n", "args": {}}])
    models = [
        _Extras(extra="kept"),
        HumanMessage("hi"),
        asking,
        ToolMessage("r", tool_call_id="1"),
        SystemMessage("s"),
        ChatMessage(role="critic", content="c"),
    ]
    for model in models:
        for _ in range(2):  # the first read learns the class, the second uses what it learned
            assert attribute(model, name) == getattr(model, name, None), (type(model).__name__, name)

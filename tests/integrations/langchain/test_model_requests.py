"""LangChain chat model requests with no LangGraph: each one ``llm`` call, framework ``"langchain"``."""

from __future__ import annotations

from typing import Any

import openprogram
from langchain_core.messages import HumanMessage

from tests.integrations.langchain.fakes import chain, counted, listed
from tests.support import attributes, by_kind, calls, one


def _llm_calls(store: Any, session_id: str) -> list[openprogram.CallRecord]:
    return by_kind(calls(store, session_id), "llm")


def test_an_lcel_chain_is_one_llm_call_under_the_turn_with_its_whole_prompt(store: Any) -> None:
    with openprogram.session_context(store=store) as h:
        answer = chain(listed("Paris.")).invoke({"question": "Capital of France?"})
    assert answer == "Paris."
    records = calls(store, h.session_id)
    assert [r.kind for r in records] == ["turn", "llm"]
    turn, llm = records
    assert (llm.name, llm.framework, llm.status, llm.parent_id) == (
        "FakeListChatModel",
        "langchain",
        "ok",
        turn.call_id,
    )
    assert llm.inputs["messages"] == [
        {"role": "system", "content": "You answer briefly."},
        {"role": "user", "content": "Capital of France?"},
    ]
    assert llm.output == {"role": "assistant", "content": "Paris."}


def test_invoke_reports_the_models_usage(store: Any) -> None:
    with openprogram.session_context(store=store) as h:
        assert counted("four", 7, 2).invoke([HumanMessage("2 + 2?")]).content == "four"
    (llm,) = _llm_calls(store, h.session_id)
    assert llm.framework == "langchain"
    assert attributes(llm)["usage"] == {"input_tokens": 7, "output_tokens": 2, "total_tokens": 9}


def test_stream_is_one_llm_call_marked_stream_with_the_joined_text(store: Any) -> None:
    with openprogram.session_context(store=store) as h:
        pieces = [chunk.content for chunk in listed("hello").stream("Say hello")]
    assert pieces == list("hello")
    (llm,) = _llm_calls(store, h.session_id)
    assert (llm.framework, llm.status, attributes(llm).get("stream")) == ("langchain", "ok", True)
    assert llm.inputs["messages"] == [{"role": "user", "content": "Say hello"}]
    assert llm.output["content"] == "hello"


def test_a_streamed_chain_records_its_one_request(store: Any) -> None:
    with openprogram.session_context(store=store) as h:
        text = "".join(chain(listed("Oslo.")).stream({"question": "Capital of Norway?"}))
    assert text == "Oslo."
    (llm,) = _llm_calls(store, h.session_id)
    assert (llm.framework, llm.output["content"]) == ("langchain", "Oslo.")
    assert [m["role"] for m in llm.inputs["messages"]] == ["system", "user"]


def test_batch_is_one_llm_call_per_request(store: Any) -> None:
    with openprogram.session_context(store=store) as h:
        answers = [m.content for m in listed("a", "b", "c").batch(["one", "two", "three"], {"max_concurrency": 1})]
    assert answers == ["a", "b", "c"]
    records = calls(store, h.session_id)
    llms = by_kind(records, "llm")
    assert sorted(m.inputs["messages"][0]["content"] for m in llms) == ["one", "three", "two"]
    assert {(m.framework, m.parent_id) for m in llms} == {("langchain", one(records, "main", "turn").call_id)}


async def test_ainvoke_astream_and_abatch_are_llm_calls_too(store: Any) -> None:
    model = listed("x", "yz", "p", "q")
    async with openprogram.session_context(store=store) as h:
        assert (await model.ainvoke("first")).content == "x"
        assert [chunk.content async for chunk in model.astream("second")] == ["y", "z"]
        assert [m.content for m in await model.abatch(["third", "fourth"], {"max_concurrency": 1})] == ["p", "q"]
    llms = _llm_calls(store, h.session_id)
    assert sorted(m.inputs["messages"][0]["content"] for m in llms) == ["first", "fourth", "second", "third"]
    assert {m.framework for m in llms} == {"langchain"}
    streamed = next(m for m in llms if m.inputs["messages"][0]["content"] == "second")
    assert attributes(streamed).get("stream") is True and streamed.output["content"] == "yz"


def test_a_failing_request_is_an_error_and_the_exception_passes_unchanged(store: Any) -> None:
    model = listed()  # no reply left: langchain-core's fake raises
    with openprogram.session_context(store=store) as h:
        try:
            model.invoke("anything")
        except Exception as exc:
            raised: BaseException | None = exc
        else:
            raised = None
    assert raised is not None
    (llm,) = _llm_calls(store, h.session_id)
    assert llm.status == "error" and type(raised).__name__ in (llm.error or "")

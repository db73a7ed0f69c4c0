"""Model requests of LangChain v1's ``create_agent`` (the ``langchain`` package, a test dependency)."""

from __future__ import annotations

from typing import Any

import openprogram
import pytest
from langchain.agents import create_agent
from langchain.agents.middleware import ModelFallbackMiddleware
from langchain_core.messages import AIMessage, HumanMessage

from tests.integrations.langgraph.fakes import (
    OPENAI_MODEL,
    FailingChatModel,
    ProviderError,
    add,
    openai_model,
    tool_calls,
)
from tests.support import attributes, by_kind, calls


def _model_nodes(records: list[Any]) -> list[Any]:
    return [c for c in by_kind(records, "node") if c.name == "model"]


def test_create_agent_records_each_model_turn_under_its_model_node(store: Any) -> None:
    model = openai_model(tool_calls(("add", {"a": 20, "b": 22})), AIMessage("42"))
    agent = create_agent(model, [add], system_prompt="You add.")
    with openprogram.session_context(store=store) as h:
        assert agent.invoke({"messages": [HumanMessage("20 + 22?")]})["messages"][-1].content == "42"
    records = calls(store, h.session_id)
    llms = by_kind(records, "llm")
    assert [c.parent_id for c in llms] == [n.call_id for n in _model_nodes(records)] and len(llms) == 2
    assert llms[0].inputs == {
        "messages": [{"role": "system", "content": "You add."}, {"role": "user", "content": "20 + 22?"}],
        "tools": ["add"],
    }
    assert llms[1].inputs["messages"][-1] == {"role": "tool", "content": "42", "tool_call_id": "call-0"}
    assert [c.output["content"] for c in llms] == ["", "42"]
    assert all(attributes(c)["model"] == OPENAI_MODEL and "usage" in attributes(c) for c in llms)


async def test_create_agent_falling_back_to_a_second_model_records_both_requests(store: Any) -> None:
    failing = FailingChatModel(replies=[AIMessage("never")], model_name="gpt-primary")
    fallback = openai_model(AIMessage("from the fallback"), model_name="gpt-fallback")
    agent = create_agent(failing, [], middleware=[ModelFallbackMiddleware(fallback)])
    async with openprogram.session_context(store=store) as h:
        result = await agent.ainvoke({"messages": [HumanMessage("hello")]})
    assert result["messages"][-1].content == "from the fallback"
    records = calls(store, h.session_id)
    (node,) = _model_nodes(records)
    assert [(c.name, c.status, c.parent_id) for c in by_kind(records, "llm")] == [
        ("gpt-primary", "error", node.call_id),
        ("gpt-fallback", "ok", node.call_id),
    ]


def test_a_failing_model_in_create_agent_raises_its_own_exception(store: Any) -> None:
    failing = FailingChatModel(replies=[AIMessage("never")])
    agent = create_agent(failing, [add])
    with openprogram.session_context(store=store) as h, pytest.raises(ProviderError) as raised:
        agent.invoke({"messages": [HumanMessage("hello")]})
    assert raised.value is failing.error
    assert [c.status for c in by_kind(calls(store, h.session_id), "llm")] == ["error"]

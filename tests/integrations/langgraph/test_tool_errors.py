"""A tool call the model got wrong (no such tool, arguments rejected) that LangGraph's ToolNode answers
with an error ToolMessage is a ``tool`` call ending ``error``; what the model is told stays the same."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import openprogram
import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool

from tests.integrations.langgraph.fakes import add, agent_graph, openai_model, scripted_model, tool_calls
from tests.support import by_kind, calls


@tool
@openprogram.tool
def lookup(city: str) -> str:
    """Look a city up (a LangChain tool built on an @openprogram.tool function)."""
    return city.upper()


WRONG_CALLS = (("nope", {"x": 1}), ("add", {"a": "zz", "b": 2}), ("lookup", {"town": "Oslo"}))


def _answers(result: dict[str, Any]) -> list[tuple[str, str]]:
    return [(m.content, m.status) for m in result["messages"] if isinstance(m, ToolMessage)]


def _run(store: Any) -> tuple[list[tuple[str, str]], list[openprogram.CallRecord]]:
    model = scripted_model(tool_calls(*WRONG_CALLS), AIMessage("sorry"))
    with openprogram.session_context(store=store) as h:
        result = agent_graph(model, [add, lookup]).invoke({"messages": [HumanMessage("go")]})
    assert result["messages"][-1].content == "sorry"
    return _answers(result), calls(store, h.session_id)


def test_a_tool_node_answering_an_unknown_tool_or_rejected_arguments_records_error_tool_calls(store: Any) -> None:
    answers, records = _run(store)
    tools_node = next(n for n in by_kind(records, "node") if n.name == "tools")
    tools = {t.name: t for t in by_kind(records, "tool")}
    assert sorted(tools) == ["add", "lookup", "nope"]
    assert {t.status for t in tools.values()} == {"error"}
    assert {t.parent_id for t in tools.values()} == {tools_node.call_id}
    assert {t.framework for t in tools.values()} == {"langgraph"}
    assert tools["nope"].inputs == {"x": 1} and "nope is not a valid tool" in (tools["nope"].error or "")
    assert tools["nope"].output == answers[0][0]
    assert tools["lookup"].inputs == {"town": "Oslo"} and "validation error" in (tools["lookup"].error or "")
    assert tools["add"].inputs == {"a": "zz", "b": 2}
    assert [status for _, status in answers] == ["error", "error", "error"]


def test_the_model_is_told_the_same_as_without_openprogram(store: Any, instrument: Callable[..., set[str]]) -> None:
    instrumented_answers, _ = _run(store)
    openprogram.uninstrument()
    plain_answers, records = _run(store)
    assert plain_answers == instrumented_answers
    assert by_kind(records, "tool") == []
    instrument("langgraph")


def test_create_agent_with_an_unknown_tool_records_it_ending_error(store: Any) -> None:
    pytest.importorskip("langchain.agents")
    from langchain.agents import create_agent

    model = openai_model(tool_calls(("multiply", {"a": 2, "b": 3})), AIMessage("I cannot multiply."))
    agent = create_agent(model, [add])
    with openprogram.session_context(store=store) as h:
        result = agent.invoke({"messages": [HumanMessage("2 * 3?")]})
    assert result["messages"][-1].content == "I cannot multiply."
    (call,) = by_kind(calls(store, h.session_id), "tool")
    assert (call.name, call.status, call.inputs) == ("multiply", "error", {"a": 2, "b": 3})
    assert _answers(result) == [(call.output, "error")]

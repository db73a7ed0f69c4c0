"""``openprogram.testing``'s ``recorded`` fixture (the pytest plugin installed with openprogram) on a LangGraph agent.

What a user's own test of their graph looks like: a scripted chat model, no session opened by the
test, assertions on the recorded tree.
"""

from __future__ import annotations

from typing import Any

from langchain_core.messages import AIMessage
from openprogram.testing import Recorded

from tests.integrations.langgraph.fakes import add, agent_graph, multiply, scripted_model, tool_calls


def _calculator() -> Any:
    model = scripted_model(
        tool_calls(("add", {"a": 2, "b": 3})), tool_calls(("multiply", {"a": 5, "b": 4})), AIMessage("20")
    )
    return agent_graph(model, [add, multiply])


def _check(recorded: Recorded) -> None:
    recorded.assert_order("add", "multiply", kind="tool")
    assert recorded.names("node") == ["agent", "tools", "agent", "tools", "agent"]
    assert len(recorded.calls("llm", under="agent")) == 3
    for llm in recorded.calls("llm"):
        parent = recorded.parent(llm)
        assert parent is not None and (parent.kind, parent.name) == ("node", "agent")
    graph = recorded.one("graph", framework="langgraph")
    assert recorded.one("tool", "multiply", under=graph).output is not None
    recorded.assert_no_errors()


def test_a_graph_run_with_no_session_is_recorded_in_the_tests_store(recorded: Recorded) -> None:
    result = _calculator().invoke({"messages": [("user", "(2 + 3) * 4?")]})
    assert result["messages"][-1].content == "20"
    _check(recorded)
    assert len(recorded.sessions()) == 1


async def test_an_async_run_too(recorded: Recorded) -> None:
    result = await _calculator().ainvoke({"messages": [("user", "(2 + 3) * 4?")]})
    assert result["messages"][-1].content == "20"
    _check(recorded)


def test_each_test_has_its_own_store(recorded: Recorded) -> None:
    assert recorded.calls() == []  # the runs of the tests above are in their own stores

"""Model requests made by LangGraph's prebuilt agent, by functional-API tasks and entrypoints, and by the demo."""

from __future__ import annotations

from typing import Any

import openprogram
import pytest
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.func import entrypoint, task
from langgraph.prebuilt import create_react_agent
from openprogram.integrations.langgraph.demo import run_demo

from tests.integrations.langgraph.fakes import OPENAI_MODEL, add, multiply, openai_model, tool_calls
from tests.support import attributes, by_kind, calls, one

pytestmark = pytest.mark.filterwarnings("ignore:create_react_agent has been moved")  # LangGraph 1.x's own notice


def _nodes(records: list[Any], name: str) -> list[Any]:
    return [c for c in by_kind(records, "node") if c.name == name]


def test_create_react_agent_records_each_model_turn_under_its_agent_node(store: Any) -> None:
    model = openai_model(tool_calls(("add", {"a": 1, "b": 2}), ("multiply", {"a": 3, "b": 4})), AIMessage("3 and 12"))
    agent = create_react_agent(model, [add, multiply], prompt="Use the tools.")
    with openprogram.session_context(store=store) as h:
        assert agent.invoke({"messages": [HumanMessage("1+2, 3*4?")]})["messages"][-1].content == "3 and 12"
    records = calls(store, h.session_id)
    llms = by_kind(records, "llm")
    assert [c.parent_id for c in llms] == [n.call_id for n in _nodes(records, "agent")]
    assert all(c.inputs["tools"] == ["add", "multiply"] and c.name == OPENAI_MODEL for c in llms)
    assert llms[0].inputs["messages"] == [
        {"role": "system", "content": "Use the tools."},
        {"role": "user", "content": "1+2, 3*4?"},
    ]
    assert [m["role"] for m in llms[1].inputs["messages"]] == ["system", "user", "assistant", "tool", "tool"]
    assert [c.output["finish_reason"] for c in llms] == ["tool_calls", "stop"]
    assert all("usage" in attributes(c) for c in llms)


async def test_create_react_agent_streamed_by_messages_records_one_llm_call_per_turn(store: Any) -> None:
    model = openai_model(tool_calls(("add", {"a": 1, "b": 2})), AIMessage("it is 3"), streaming=True)
    agent = create_react_agent(model, [add])
    async with openprogram.session_context(store=store) as h:
        streamed = [m async for m, _ in agent.astream({"messages": [HumanMessage("1+2?")]}, stream_mode="messages")]
    assert len(streamed) > 4
    records = calls(store, h.session_id)
    llms = by_kind(records, "llm")
    assert [c.parent_id for c in llms] == [n.call_id for n in _nodes(records, "agent")]
    assert llms[0].output["tool_calls"] == [{"id": "call-0", "name": "add", "arguments": {"a": 1, "b": 2}}]
    assert llms[1].output["content"] == "it is 3"


def test_a_model_asked_in_a_task_is_under_the_task_and_one_asked_in_the_entrypoint_under_it(store: Any) -> None:
    model = openai_model(AIMessage("draft"), AIMessage("final"))

    @task
    def write(topic: str) -> str:
        return str(model.invoke(f"Write about {topic}").content)

    @entrypoint()
    def essay(topic: str) -> str:
        draft = write(topic).result()
        return str(model.invoke([("human", f"Improve: {draft}")]).content)

    with openprogram.session_context(store=store) as h:
        assert essay.invoke("owls") == "final"
    records = calls(store, h.session_id)
    first, second = by_kind(records, "llm")
    assert first.parent_id == one(records, "write", "node").call_id
    assert second.parent_id == one(records, "essay", "node").call_id
    assert (first.inputs["messages"][0]["content"], second.inputs["messages"][0]["content"]) == (
        "Write about owls",
        "Improve: draft",
    )


async def test_async_tasks_asking_models_in_parallel_are_each_under_their_task(store: Any) -> None:
    model = openai_model(AIMessage("answer"))

    @task
    async def ask(question: str) -> str:
        return str((await model.ainvoke(question)).content)

    @entrypoint()
    async def fan_out(questions: list[str]) -> list[str]:
        return [await future for future in [ask(q) for q in questions]]

    async with openprogram.session_context(store=store) as h:
        assert await fan_out.ainvoke(["a?", "b?", "c?"]) == ["answer"] * 3
    records = calls(store, h.session_id)
    tasks = {c.call_id: c.inputs for c in _nodes(records, "ask")}
    llms = by_kind(records, "llm")
    assert len(llms) == 3 and {c.parent_id for c in llms} == set(tasks)
    for llm in llms:  # each under the task that asked its question
        assert repr(llm.inputs["messages"][0]["content"]) in repr(tasks[llm.parent_id])


def test_the_demo_records_each_model_request_under_its_agent_node(store: Any) -> None:
    with openprogram.session_context(store=store) as h:
        run_demo(lambda line: None)
    records = calls(store, h.session_id)
    llms = by_kind(records, "llm")
    assert [c.parent_id for c in llms] == [n.call_id for n in _nodes(records, "agent")] and len(llms) == 2
    assert all(c.name == "demo-chat" and attributes(c)["usage"]["total_tokens"] > 0 for c in llms)
    assert [len(c.output.get("tool_calls", ())) for c in llms] == [3, 0]

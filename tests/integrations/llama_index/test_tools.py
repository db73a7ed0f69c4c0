"""Tools: ``FunctionTool`` (sync, async, with the workflow ``Context``), query-engine tools, ``@openprogram.tool``."""

# No ``from __future__ import annotations``: LlamaIndex finds a tool's ``Context`` parameter by its annotation.

import asyncio
from typing import Any

import openprogram
import pytest
from llama_index.core.agent.workflow import FunctionAgent
from llama_index.core.query_engine import CustomQueryEngine
from llama_index.core.tools import FunctionTool, QueryEngineTool
from openprogram.integrations.llama_index.fakes import scripted_llm
from openprogram.stores import Store
from workflows import Context

from tests.integrations.llama_index.helpers import without_steps
from tests.support import by_kind, calls, one, tree

pytestmark = pytest.mark.usefixtures("instrumented")


def run_agent(agent: FunctionAgent, question: str) -> str:
    async def main() -> str:
        return str(await agent.run(user_msg=question))

    return asyncio.run(main())


@openprogram.tool
def lookup(city: str, _session: Any = None) -> str:
    """Look a city up."""
    handle = openprogram.get_current_session()
    return f"{city} in {handle.session_id if handle else None}"


def test_an_openprogram_tool_used_as_a_function_tool_records_once_and_hides_session(store: Store) -> None:
    tool = FunctionTool.from_defaults(fn=lookup)
    assert "_session" not in str(tool.metadata.get_parameters_dict())
    assert "_session" not in tool.metadata.fn_schema_str
    agent = FunctionAgent(
        name="finder",
        description="Finds cities.",
        tools=[tool],
        # A model that sends a _session of its own: it is ignored.
        llm=scripted_llm([[("lookup", {"city": "Oslo", "_session": "chosen-by-the-model"})]], final="found"),
    )
    with openprogram.session_context(store=store) as h:
        assert run_agent(agent, "find Oslo") == "found"
    records = calls(store, h.session_id)
    (recorded,) = by_kind(records, "tool")
    assert (recorded.name, recorded.inputs, recorded.output) == ("lookup", {"city": "Oslo"}, f"Oslo in {h.session_id}")
    assert without_steps(tree(records))[1:] == [
        (1, "agent", "finder"),
        (2, "llm", "scripted-model"),
        (2, "tool", "lookup"),
        (2, "llm", "scripted-model"),
    ]


def test_sync_and_async_function_tools_run_in_the_session_and_record_their_results(store: Store) -> None:
    seen: list[str | None] = []

    def note() -> None:
        handle = openprogram.get_current_session()
        seen.append(handle.session_id if handle else None)

    def add(a: int, b: int) -> int:
        """Add two numbers."""
        note()
        return a + b

    async def double(x: int) -> int:
        """Double a number."""
        note()
        return 2 * x

    with openprogram.session_context(store=store) as h:
        assert FunctionTool.from_defaults(fn=add).call(a=1, b=2).content == "3"
        assert asyncio.run(FunctionTool.from_defaults(async_fn=double).acall(x=4)).content == "8"
        assert asyncio.run(FunctionTool.from_defaults(fn=add).acall(a=2, b=2)).content == "4"  # acall -> call: once
    records = by_kind(calls(store, h.session_id), "tool")
    assert [(r.name, r.inputs, r.output) for r in records] == [
        ("add", {"a": 1, "b": 2}, "3"),
        ("double", {"x": 4}, "8"),
        ("add", {"a": 2, "b": 2}, "4"),
    ]
    assert seen == [h.session_id] * 3  # the sync function awaited through acall runs in a worker thread


def test_a_tool_taking_the_workflow_context_records_its_arguments_without_it(store: Store) -> None:
    async def remember(ctx: Context, fact: str) -> str:
        """Remember a fact in the workflow's state."""
        await ctx.store.set("fact", fact)
        return "remembered"

    agent = FunctionAgent(
        name="memo",
        description="Remembers.",
        tools=[FunctionTool.from_defaults(async_fn=remember)],
        llm=scripted_llm([[("remember", {"fact": "sky is blue"})]], final="ok"),
    )
    with openprogram.session_context(store=store) as h:
        assert run_agent(agent, "remember") == "ok"
    recorded = one(calls(store, h.session_id), "remember", "tool")
    assert (recorded.status, recorded.inputs, recorded.output) == ("ok", {"fact": "sky is blue"}, "remembered")


def test_a_failing_tool_is_an_error_call_and_the_agent_carries_on(store: Store) -> None:
    def explode(reason: str) -> str:
        """Always fails."""
        raise RuntimeError(f"exploded: {reason}")

    agent = FunctionAgent(
        name="brave",
        description="Tries.",
        tools=[explode],
        llm=scripted_llm([[("explode", {"reason": "test"})]], final="it failed"),
    )
    with openprogram.session_context(store=store) as h:
        assert run_agent(agent, "try") == "it failed"
    recorded = one(calls(store, h.session_id), "explode", "tool")
    assert recorded.status == "error" and "exploded: test" in str(recorded.error)


class Almanac(CustomQueryEngine):
    """A query engine answering from a dict (no index, no embeddings)."""

    facts: dict[str, str]

    def custom_query(self, query_str: str) -> str:
        return self.facts.get(query_str, "unknown")


def test_a_query_engine_tool_is_a_tool_call(store: Store) -> None:
    tool = QueryEngineTool.from_defaults(
        Almanac(facts={"capital of France": "Paris"}), name="almanac", description="Facts."
    )
    agent = FunctionAgent(
        name="quizzer",
        description="Answers.",
        tools=[tool],
        llm=scripted_llm([[("almanac", {"input": "capital of France"})]], final="Paris"),
    )
    with openprogram.session_context(store=store) as h:
        assert run_agent(agent, "capital of France?") == "Paris"
        assert tool.call("capital of France").content == "Paris"
    records = [r for r in by_kind(calls(store, h.session_id), "tool") if r.name == "almanac"]
    assert [(r.inputs, r.output, r.status) for r in records] == [
        ({"input": "capital of France"}, "Paris", "ok"),
        ("capital of France", "Paris", "ok"),
    ]

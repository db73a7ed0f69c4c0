"""LangChain models and tools, with LangGraph and CrewAI installed: ``"langgraph"`` inside a graph run,
``"langchain"`` outside it, nested under whatever called them; ``instrument("langgraph")`` arms the
LangChain adapter it needs and ``uninstrument("langgraph")`` releases it."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, TypedDict

import pytest

pytest.importorskip("langgraph", reason="needs openprogram[langgraph]")
pytest.importorskip("crewai", reason="needs openprogram[crewai]")

import openprogram
from langchain_core.language_models import BaseChatModel, FakeListChatModel
from langchain_core.tools import BaseTool, tool
from langgraph.graph import END, START, StateGraph
from openprogram.integrations.crewai.fakes import offline_environment

from tests.support import by_kind, calls, one

offline_environment()

PATCHED = [(BaseChatModel, "_generate_with_cache"), (BaseChatModel, "stream"), (BaseTool, "run")]


@pytest.fixture(autouse=True)
def _clean() -> Iterator[None]:
    openprogram.uninstrument()
    yield
    openprogram.uninstrument()


def _wrapped() -> bool:
    return all(hasattr(vars(owner)[name], "__openprogram_original__") for owner, name in PATCHED)


@tool
def double(n: int) -> int:
    """Double a number."""
    return 2 * n


class State(TypedDict):
    text: str


def _graph(model: FakeListChatModel) -> Any:
    def ask(state: State) -> dict[str, str]:
        return {"text": f"{model.invoke(state['text']).content}:{double.invoke({'n': 2})}"}

    builder = StateGraph(State)
    builder.add_node("ask", ask)
    builder.add_edge(START, "ask")
    builder.add_edge("ask", END)
    return builder.compile()


def test_instrument_langgraph_alone_records_langchain_calls_in_graphs_as_langgraph_and_outside_as_langchain(
    store: Any,
) -> None:
    assert openprogram.instrument("langgraph") == {"langgraph"}  # what it needs is armed with it, not named
    assert _wrapped()
    model = FakeListChatModel(responses=["inside", "outside"])
    with openprogram.session_context(store=store) as h:
        assert _graph(model).invoke({"text": "q"}) == {"text": "inside:4"}
        assert model.invoke("after the graph").content == "outside"
    records = calls(store, h.session_id)
    node = one(records, "ask", "node")
    inside, outside = by_kind(records, "llm")
    assert (inside.framework, inside.parent_id) == ("langgraph", node.call_id)
    assert (one(records, "double", "tool").framework, one(records, "double", "tool").parent_id) == (
        "langgraph",
        node.call_id,
    )
    assert (outside.framework, outside.parent_id) == ("langchain", one(records, "main", "turn").call_id)


def test_uninstrument_langgraph_releases_the_langchain_adapter_unless_it_was_named(store: Any) -> None:
    openprogram.instrument("langgraph")
    openprogram.uninstrument("langgraph")
    assert not any(hasattr(vars(owner)[name], "__openprogram_original__") for owner, name in PATCHED)
    assert openprogram.instrumented() == set()

    openprogram.instrument("langchain")
    openprogram.instrument("langgraph")
    openprogram.uninstrument("langgraph")
    assert _wrapped() and openprogram.instrumented() == {"langchain"}
    openprogram.instrument("langgraph")
    openprogram.uninstrument("langchain")  # still needed by LangGraph: kept, for it
    assert _wrapped()
    openprogram.uninstrument("langgraph")
    assert not _wrapped() and openprogram.instrumented() == set()


def test_a_langchain_model_inside_a_crewai_tool_nests_under_it(store: Any) -> None:
    from crewai.tools import tool as crewai_tool

    openprogram.instrument("crewai", "langchain")
    model = FakeListChatModel(responses=["from a model"])

    @crewai_tool("ask_model")
    def ask_model(question: str) -> str:
        """Ask a LangChain model."""
        return str(model.invoke(question).content)

    with openprogram.session_context(store=store) as h:
        assert ask_model.run(question="what?") == "from a model"
    records = calls(store, h.session_id)
    crew_tool = one(records, "ask_model", "tool")
    (llm,) = by_kind(records, "llm")
    assert crew_tool.framework == "crewai"
    assert (llm.framework, llm.parent_id, llm.inputs["messages"]) == (
        "langchain",
        crew_tool.call_id,
        [{"role": "user", "content": "what?"}],
    )

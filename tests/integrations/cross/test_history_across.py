"""One conversation across frameworks: a turn begun by a LangGraph agent is continued by a Pydantic AI agent
given ``openprogram.history()``, and the other way round; the session's history holds each turn once."""

from __future__ import annotations

import copy
from typing import Any

import pytest

pytest.importorskip("langgraph", reason="needs openprogram[langgraph]")
pytest.importorskip("pydantic_ai", reason="needs openprogram[pydantic-ai]")

import openprogram
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import tool
from langgraph.prebuilt import create_react_agent
from openprogram.integrations import langgraph as op_langgraph
from openprogram.integrations import pydantic_ai as op_pydantic_ai
from pydantic import PrivateAttr
from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart, ToolReturnPart, UserPromptPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

pytestmark = pytest.mark.filterwarnings("ignore:create_react_agent has been moved")

FIRST, SECOND = "What is the weather in Paris?", "And in Oslo?"


@pytest.fixture(autouse=True)
def _instrumented(instrument: Any) -> None:
    instrument("langgraph", "pydantic_ai")


def city_of(question: str) -> str:
    return question.rstrip("?").split()[-1]


class LangChainForecaster(BaseChatModel):
    """Offline: asks for the weather of the city named last, then answers with it."""

    _seen: list[list[tuple[str, str]]] = PrivateAttr(default_factory=list)

    @property
    def _llm_type(self) -> str:
        return "forecaster"

    def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
        return self

    def _generate(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kw: Any
    ) -> ChatResult:
        self._seen.append([(m.type, str(m.content)) for m in messages])
        last = messages[-1]
        if isinstance(last, HumanMessage):
            call = {"id": f"lc-call-{len(self._seen)}", "name": "weather", "args": {"city": city_of(str(last.content))}}
            answer = AIMessage("", tool_calls=[call])
        else:
            answer = AIMessage(f"It is {last.content}.")
        return ChatResult(generations=[ChatGeneration(message=answer)])


@tool
def weather(city: str) -> str:
    """The weather in a city."""
    return f"sunny in {city}"


def langgraph_agent() -> tuple[Any, LangChainForecaster]:
    model = LangChainForecaster()
    return create_react_agent(model, [weather]), model


def pydantic_ai_agent(requests: list[list[ModelMessage]]) -> Agent[None, str]:
    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        requests.append(copy.deepcopy(messages))
        last = messages[-1].parts[-1]
        if isinstance(last, ToolReturnPart):
            return ModelResponse(parts=[TextPart(f"It is {last.content}.")])
        call = ToolCallPart("weather", {"city": city_of(str(last.content))}, tool_call_id=f"pa-call-{len(requests)}")
        return ModelResponse(parts=[call])

    agent: Agent[None, str] = Agent(FunctionModel(respond), name="forecaster", instructions="You know the weather.")

    @agent.tool_plain
    def weather(city: str) -> str:
        """The weather in a city."""
        return f"sunny in {city}"

    return agent


def pydantic_ai_texts(messages: list[ModelMessage]) -> list[tuple[str, str]]:
    """Each message's role and text, as in the one shape: tool calls by their ids."""
    texts: list[tuple[str, str]] = []
    for message in messages:
        for part in message.parts:
            if isinstance(part, (UserPromptPart, TextPart, ToolReturnPart)):
                texts.append((part.part_kind, str(part.content)))
            elif isinstance(part, ToolCallPart):
                texts.append((part.part_kind, f"{part.tool_call_id} {part.args}"))
    return texts


def answers(history: list[dict[str, Any]]) -> list[str]:
    return [m["content"] for m in history if m["role"] == "assistant" and m["content"]]


def test_a_conversation_begun_by_langgraph_is_continued_by_pydantic_ai(store: openprogram.Store) -> None:
    graph, _ = langgraph_agent()
    requests: list[list[ModelMessage]] = []
    with openprogram.session_context(store=store) as first:
        graph.invoke({"messages": [HumanMessage(FIRST)]})
    with openprogram.session_context(first.session_id, store=store):
        before = op_pydantic_ai.as_messages(openprogram.history())
        pydantic_ai_agent(requests).run_sync(SECOND, message_history=before)

    assert pydantic_ai_texts(requests[0]) == [
        ("user-prompt", FIRST),
        ("tool-call", "lc-call-1 {'city': 'Paris'}"),
        ("tool-return", "sunny in Paris"),
        ("text", "It is sunny in Paris."),
        ("user-prompt", SECOND),
    ]
    whole = openprogram.history(first.session_id, store=store)
    assert answers(whole) == ["It is sunny in Paris.", "It is sunny in Oslo."]
    assert [m["role"] for m in whole] == ["user", "assistant", "tool", "assistant"] * 2


def test_a_conversation_begun_by_pydantic_ai_is_continued_by_langgraph(store: openprogram.Store) -> None:
    graph, model = langgraph_agent()
    requests: list[list[ModelMessage]] = []
    with openprogram.session_context(store=store) as first:
        pydantic_ai_agent(requests).run_sync(FIRST)
    with openprogram.session_context(first.session_id, store=store):
        before = op_langgraph.as_messages(openprogram.history())
        graph.invoke({"messages": [*before, HumanMessage(SECOND)]})

    assert model._seen[0] == [
        ("human", FIRST),
        ("ai", ""),
        ("tool", "sunny in Paris"),
        ("ai", "It is sunny in Paris."),
        ("human", SECOND),
    ]
    whole = openprogram.history(first.session_id, store=store)
    assert whole[1]["tool_calls"][0]["id"] == "pa-call-1"
    assert answers(whole) == ["It is sunny in Paris.", "It is sunny in Oslo."]
    assert [m["role"] for m in whole] == ["user", "assistant", "tool", "assistant"] * 2

"""The next turn sees the conversation: ``openprogram.history()`` given back to a LangGraph agent."""

from __future__ import annotations

from typing import Any

import openprogram
import pytest
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import tool
from langgraph.prebuilt import create_react_agent
from openprogram.integrations.langgraph import as_messages
from pydantic import PrivateAttr

pytestmark = pytest.mark.filterwarnings("ignore:create_react_agent has been moved")


@tool
def weather(city: str) -> str:
    """The weather in a city."""
    return f"sunny in {city}"


class Forecaster(BaseChatModel):
    """Offline: asks for the weather of the city named last, then answers with it."""

    _requests: list[list[BaseMessage]] = PrivateAttr(default_factory=list)

    @property
    def _llm_type(self) -> str:
        return "forecaster"

    def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
        return self

    def _generate(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kw: Any
    ) -> ChatResult:
        self._requests.append(list(messages))
        last = messages[-1]
        if isinstance(last, HumanMessage):
            city = str(last.content).split()[-1].strip("?")
            call = {"id": f"call-{len(self._requests)}", "name": "weather", "args": {"city": city}}
            answer = AIMessage("", tool_calls=[call])
        else:
            answer = AIMessage(f"It is {last.content}.")
        return ChatResult(generations=[ChatGeneration(message=answer)])


def test_the_second_turn_of_a_react_agent_sees_the_first(store: openprogram.Store) -> None:
    model = Forecaster()
    agent = create_react_agent(model, [weather])
    with openprogram.session_context(store=store) as first:
        agent.invoke({"messages": [HumanMessage("What is the weather in Paris?")]})
    with openprogram.session_context(first.session_id, store=store):
        before = as_messages(openprogram.history())
        agent.invoke({"messages": [*before, HumanMessage("And in Oslo?")]})

    second_request = [(m.type, m.content) for m in model._requests[2]]
    assert second_request[:4] == [
        ("human", "What is the weather in Paris?"),
        ("ai", ""),
        ("tool", "sunny in Paris"),
        ("ai", "It is sunny in Paris."),
    ]
    assert second_request[4] == ("human", "And in Oslo?")
    assert model._requests[2][1].tool_calls[0]["args"] == {"city": "Paris"}
    whole = openprogram.history(first.session_id, store=store)
    assert [m["content"] for m in whole if m["role"] == "assistant" and m["content"]] == [
        "It is sunny in Paris.",
        "It is sunny in Oslo.",
    ]
    assert len(whole) == 8  # two turns of question, tool call, tool result, answer


def test_as_messages_round_trips_the_one_shape() -> None:
    shaped = [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "", "tool_calls": [{"id": "c1", "name": "f", "arguments": '{"a": 1}'}]},
        {"role": "tool", "content": "2", "tool_call_id": "c1"},
        {"role": "assistant", "content": "done"},
    ]
    made = as_messages(shaped)
    assert [m.type for m in made] == ["system", "human", "ai", "tool", "ai"]
    assert made[2].tool_calls[0]["args"] == {"a": 1} and made[3].tool_call_id == "c1"
    with pytest.raises(ValueError, match="not a message"):
        as_messages([{"role": "unknown", "content": "?"}])


def test_a_history_ending_on_an_unanswered_tool_call_is_continued(store: openprogram.Store) -> None:
    """A structured output's call (Pydantic AI ends a run with it) has no result in the record: LangGraph's
    agents refuse such a history, so the call is given one saying so; a dict result becomes JSON text."""
    ended = [
        {"role": "user", "content": "What is the weather in Paris?"},
        {"role": "assistant", "content": "", "tool_calls": [{"id": "w1", "name": "weather", "arguments": {}}]},
        {"role": "tool", "content": {"sky": "clear"}, "tool_call_id": "w1"},
        {"role": "assistant", "content": "", "tool_calls": [{"id": "out", "name": "final_result", "arguments": {}}]},
    ]
    model = Forecaster()
    agent = create_react_agent(model, [weather])
    with openprogram.session_context(store=store):
        agent.invoke({"messages": [*as_messages(ended), HumanMessage("And in Oslo?")]})
    sent = model._requests[0]
    assert [m.type for m in sent] == ["human", "ai", "tool", "ai", "tool", "human"]
    assert sent[2].content == '{"sky": "clear"}'
    assert sent[4].tool_call_id == "out" and "No result was recorded" in str(sent[4].content)

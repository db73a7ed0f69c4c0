"""The next turn sees the conversation: ``openprogram.history()`` given back to a LlamaIndex agent."""

from __future__ import annotations

import asyncio

import openprogram
import pytest
from llama_index.core.agent.workflow import FunctionAgent
from llama_index.core.llms import ChatMessage
from openprogram.integrations.llama_index import as_chat_messages
from openprogram.integrations.llama_index.fakes import scripted_llm

pytestmark = pytest.mark.usefixtures("instrumented")


def weather(city: str) -> str:
    """The weather in a city."""
    return f"sunny in {city}"


def test_a_second_turn_given_the_history_sees_the_first(sqlite_store: openprogram.Store) -> None:
    first_llm = scripted_llm([[("weather", {"city": "Paris"})]], final="It is sunny in Paris.")
    second_llm = scripted_llm([], final="You asked about Paris.")

    async def ask(llm: object, question: str, history: list[ChatMessage] | None = None) -> str:
        agent = FunctionAgent(name="forecaster", description="Weather.", tools=[weather], llm=llm)
        return str(await agent.run(user_msg=question, chat_history=history))

    with openprogram.session_context(store=sqlite_store) as h:
        assert asyncio.run(ask(first_llm, "weather in Paris?")) == "It is sunny in Paris."
    with openprogram.session_context(h.session_id, store=sqlite_store):
        history = as_chat_messages(openprogram.history())
        assert asyncio.run(ask(second_llm, "what did I ask?", history)) == "You asked about Paris."

    (received,) = second_llm.requests
    said = [(m.role.value, m.content) for m in received]
    assert said == [
        ("user", "weather in Paris?"),
        ("assistant", ""),
        ("tool", "sunny in Paris"),
        ("assistant", "It is sunny in Paris."),
        ("user", "what did I ask?"),
    ]
    asked = received[1].additional_kwargs["tool_calls"]
    assert [(c["function"]["name"], c["function"]["arguments"]) for c in asked] == [("weather", '{"city": "Paris"}')]
    assert received[2].additional_kwargs["tool_call_id"] == asked[0]["id"]


def test_a_tool_call_with_no_recorded_result_is_given_one_and_unknown_roles_are_refused() -> None:
    made = as_chat_messages(
        [
            {"role": "user", "content": "go"},
            {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "name": "jump", "arguments": {}}]},
        ]
    )
    assert [m.role.value for m in made] == ["user", "assistant", "tool"]
    assert made[2].additional_kwargs["tool_call_id"] == "c1"
    with pytest.raises(ValueError, match="not a message"):
        as_chat_messages([{"role": "narrator", "content": "meanwhile"}])

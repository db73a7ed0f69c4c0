"""The next turn sees the conversation: ``openprogram.history()`` given back to a Pydantic AI agent."""

from __future__ import annotations

import copy
from typing import Any

import openprogram
import pytest
from openprogram.integrations.pydantic_ai import as_messages
from openprogram.integrations.pydantic_ai.history import NO_RESULT
from pydantic import BaseModel
from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

pytestmark = pytest.mark.usefixtures("instrumented")


def forecaster(requests: list[list[ModelMessage]]) -> Agent[None, str]:
    """An agent whose offline model asks for the weather of each city its question names (at once),
    then answers with what the tool said; ``requests`` gets a copy of each request as it was sent."""

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        requests.append(copy.deepcopy(messages))
        last = messages[-1].parts[-1]
        if isinstance(last, ToolReturnPart):
            returns = [p.content for p in messages[-1].parts if isinstance(p, ToolReturnPart)]
            return ModelResponse(parts=[TextPart(f"It is {' and '.join(returns)}.")])
        cities = str(last.content).rstrip("?").split(" in ")[-1].split(" and ")
        calls = [
            ToolCallPart("weather", {"city": city}, tool_call_id=f"call-{len(requests)}-{n}")
            for n, city in enumerate(cities)
        ]
        return ModelResponse(parts=calls)

    agent: Agent[None, str] = Agent(FunctionModel(respond), name="forecaster", instructions="You know the weather.")

    @agent.tool_plain
    def weather(city: str) -> str:
        """The weather in a city."""
        return f"sunny in {city}"

    return agent


def said(messages: list[ModelMessage]) -> list[tuple[str, list[tuple[Any, ...]]]]:
    """Each message's kind and its parts' kind, content or tool, arguments and tool call id."""
    return [
        (
            m.kind,
            [
                (p.part_kind, getattr(p, "content", None) or getattr(p, "tool_name", None))
                + ((p.tool_name, p.args, p.tool_call_id) if isinstance(p, ToolCallPart) else ())
                + ((p.tool_name, p.tool_call_id) if isinstance(p, ToolReturnPart) else ())
                for p in m.parts
            ],
        )
        for m in messages
    ]


def test_the_second_turn_of_an_agent_sees_the_first_as_pydantic_ai_sent_it(store: openprogram.Store) -> None:
    requests: list[list[ModelMessage]] = []
    agent = forecaster(requests)
    with openprogram.session_context(store=store) as first:
        before = agent.run_sync("What is the weather in Paris and Oslo?")
    with openprogram.session_context(first.session_id, store=store):
        agent.run_sync("And in Rome?", message_history=as_messages(openprogram.history()))

    second_request = requests[2]
    assert said(second_request[:4]) == said(before.all_messages())  # one request for both tool returns
    assert said(second_request[:4]) == [
        ("request", [("user-prompt", "What is the weather in Paris and Oslo?")]),
        (
            "response",
            [
                ("tool-call", "weather", "weather", {"city": "Paris"}, "call-1-0"),
                ("tool-call", "weather", "weather", {"city": "Oslo"}, "call-1-1"),
            ],
        ),
        (
            "request",
            [
                ("tool-return", "sunny in Paris", "weather", "call-1-0"),
                ("tool-return", "sunny in Oslo", "weather", "call-1-1"),
            ],
        ),
        ("response", [("text", "It is sunny in Paris and sunny in Oslo.")]),
    ]
    assert said(second_request[4:]) == [("request", [("user-prompt", "And in Rome?")])]
    whole = openprogram.history(first.session_id, store=store)
    assert [m["content"] for m in whole if m["role"] == "assistant" and m["content"]] == [
        "It is sunny in Paris and sunny in Oslo.",
        "It is sunny in Rome.",
    ]
    assert len(whole) == 9  # the first turn's six messages, then the second's three


def test_as_messages_groups_a_requests_parts_and_names_each_tool_return() -> None:
    made = as_messages(
        [
            {"role": "system", "content": "be brief"},
            {"role": "user", "content": [{"type": "text", "text": "hi"}]},
            {
                "role": "assistant",
                "content": "looking",
                "tool_calls": [
                    {"id": "c1", "name": "f", "arguments": {"a": 1}},
                    {"id": "c2", "name": "g", "arguments": '{"b": 2}'},
                ],
            },
            {"role": "tool", "content": "1", "tool_call_id": "c1"},
            {"role": "tool", "content": "2", "tool_call_id": "c2"},
            {"role": "assistant", "content": "done"},
        ]
    )
    assert [type(m) for m in made] == [ModelRequest, ModelResponse, ModelRequest, ModelResponse]
    assert said(made) == [
        ("request", [("system-prompt", "be brief"), ("user-prompt", "hi")]),
        (
            "response",
            [("text", "looking"), ("tool-call", "f", "f", {"a": 1}, "c1"), ("tool-call", "g", "g", '{"b": 2}', "c2")],
        ),
        ("request", [("tool-return", "1", "f", "c1"), ("tool-return", "2", "g", "c2")]),
        ("response", [("text", "done")]),
    ]
    with pytest.raises(ValueError, match="not a message"):
        as_messages([{"role": "unknown", "content": "?"}])


def test_a_structured_output_run_is_continued_with_its_output_call_closed(store: openprogram.Store) -> None:
    # The run ends with the model's call of the output tool, whose result is never sent, so never recorded.
    class City(BaseModel):
        name: str

    requests: list[list[ModelMessage]] = []

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        requests.append(copy.deepcopy(messages))
        call = ToolCallPart(info.output_tools[0].name, {"name": "Paris"}, tool_call_id=f"out-{len(requests)}")
        return ModelResponse(parts=[call])

    agent: Agent[None, City] = Agent(FunctionModel(respond), output_type=City)
    with openprogram.session_context(store=store) as first:
        agent.run_sync("Which city is sunny?")
    with openprogram.session_context(first.session_id, store=store):
        again = agent.run_sync("And which is rainy?", message_history=as_messages(openprogram.history()))

    assert again.output == City(name="Paris")
    sent = [(p.part_kind, getattr(p, "content", None)) for m in requests[1] for p in m.parts]
    assert sent == [
        ("user-prompt", "Which city is sunny?"),
        ("tool-call", None),
        ("tool-return", NO_RESULT),
        ("user-prompt", "And which is rainy?"),
    ]
    whole = openprogram.history(first.session_id, store=store)
    assert [m["role"] for m in whole] == ["user", "assistant", "tool", "user", "assistant"]  # joined, as sent

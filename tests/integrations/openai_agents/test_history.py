"""The next turn sees the conversation: ``openprogram.history()`` given back to an Agents SDK agent as input items."""

from __future__ import annotations

import openprogram
import pytest
from agents import Agent, Runner, function_tool
from openprogram.integrations.openai_agents import as_input

from tests.integrations.openai_agents.fake_openai import responses_model


@function_tool
def weather(city: str) -> str:
    """The weather in a city."""
    return f"sunny in {city}"


async def test_the_second_turn_of_an_agent_given_the_history_as_input_sees_the_first(store: openprogram.Store) -> None:
    script = [[("weather", {"city": "Paris"})], "It is sunny in Paris.", [("weather", {"city": "Oslo"})], "Sunny too."]
    model, bodies = responses_model(script)
    agent = Agent(name="forecaster", instructions="Answer about the weather.", model=model, tools=[weather])
    async with openprogram.session_context(store=store) as first:
        await Runner.run(agent, "What is the weather in Paris?")
    async with openprogram.session_context(first.session_id, store=store):
        await Runner.run(agent, [*as_input(openprogram.history()), {"role": "user", "content": "And in Oslo?"}])

    asked = next(item for item in bodies[1]["input"] if item.get("type") == "function_call")
    assert bodies[2]["input"] == [
        {"role": "user", "content": "What is the weather in Paris?"},
        {"type": "function_call", "call_id": asked["call_id"], "name": "weather", "arguments": asked["arguments"]},
        {"type": "function_call_output", "call_id": asked["call_id"], "output": "sunny in Paris"},
        {"role": "assistant", "content": "It is sunny in Paris."},
        {"role": "user", "content": "And in Oslo?"},
    ]
    assert bodies[2]["instructions"] == "Answer about the weather."  # the agent's own, not the history's
    assert len(openprogram.history(first.session_id, store=store)) == 8  # two turns of four messages


def test_as_input_keeps_text_beside_tool_calls_and_arguments_as_json_text() -> None:
    shaped = [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": "hi"},
        {
            "role": "assistant",
            "content": "Let me see.",
            "tool_calls": [{"id": "c1", "name": "f", "arguments": {"a": 1}}],
        },
        {"role": "tool", "content": "2", "tool_call_id": "c1"},
        {"role": "assistant", "content": "", "tool_calls": [{"id": "c2", "name": "g", "arguments": "not json"}]},
        {"role": "tool", "content": {"rows": 2}, "tool_call_id": "c2"},
        {"role": "assistant", "content": "done"},
    ]
    assert as_input(shaped) == [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "Let me see."},
        {"type": "function_call", "call_id": "c1", "name": "f", "arguments": '{"a": 1}'},
        {"type": "function_call_output", "call_id": "c1", "output": "2"},
        {"type": "function_call", "call_id": "c2", "name": "g", "arguments": "not json"},
        {"type": "function_call_output", "call_id": "c2", "output": '{"rows": 2}'},
        {"role": "assistant", "content": "done"},
    ]
    with pytest.raises(ValueError, match="not a message"):
        as_input([{"role": "unknown", "content": "?"}])

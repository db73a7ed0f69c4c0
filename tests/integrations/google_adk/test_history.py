"""The next turn sees the conversation: ``openprogram.history()`` given back to an ADK agent as session events."""

from __future__ import annotations

import openprogram
import pytest
from google.adk.agents import LlmAgent
from google.adk.runners import InMemoryRunner
from google.genai import types
from openprogram.integrations.google_adk import as_contents, as_events
from openprogram.integrations.google_adk.fakes import ScriptedLlm

from tests.integrations.google_adk.helpers import ask


def weather(city: str) -> str:
    """The weather in a city."""
    return f"sunny in {city}"


def _agent(model: ScriptedLlm) -> LlmAgent:
    return LlmAgent(name="forecaster", instruction="Answer about the weather.", model=model, tools=[weather])


@pytest.mark.usefixtures("instrumented")
async def test_the_second_turn_of_a_new_runner_given_the_history_as_events_sees_the_first(
    store: openprogram.Store,
) -> None:
    first_model = ScriptedLlm(script=[[("weather", {"city": "Paris"})], "It is sunny in Paris."])
    async with openprogram.session_context(store=store) as first:
        await ask(InMemoryRunner(agent=_agent(first_model), app_name="app"), "What is the weather in Paris?")

    second_model = ScriptedLlm(script=["Sunny too."])
    agent = _agent(second_model)
    runner = InMemoryRunner(agent=agent, app_name="app")  # a new ADK session service: it knows nothing
    async with openprogram.session_context(first.session_id, store=store):
        session = await runner.session_service.create_session(app_name="app", user_id="u")
        for event in as_events(openprogram.history(), author=agent.name):
            await runner.session_service.append_event(session, event)
        assert await ask(runner, "And in Oslo?", session_id=session.id) == "Sunny too."

    sent = second_model.requests[0].contents
    asked = first_model.requests[1].contents[1].parts[0].function_call
    assert [(c.role, _said(c)) for c in sent] == [
        ("user", "What is the weather in Paris?"),
        ("model", f"call weather {asked.id} {{'city': 'Paris'}}"),
        ("user", f"result weather {asked.id} {{'result': 'sunny in Paris'}}"),
        ("model", "It is sunny in Paris."),
        ("user", "And in Oslo?"),
    ]
    assert second_model.requests[0].config.system_instruction.startswith("Answer about the weather.")
    assert len(openprogram.history(first.session_id, store=store)) == 6  # the first turn's four, the second's two


def _said(content: types.Content) -> str:
    part = (content.parts or [])[0]
    if part.function_call:
        return f"call {part.function_call.name} {part.function_call.id} {part.function_call.args}"
    if part.function_response:
        answered = part.function_response
        return f"result {answered.name} {answered.id} {answered.response}"
    return str(part.text)


def test_as_contents_keeps_text_beside_calls_groups_results_and_answers_an_unanswered_call() -> None:
    shaped = [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": "hi"},
        {
            "role": "assistant",
            "content": "Let me see.",
            "tool_calls": [
                {"id": "c1", "name": "f", "arguments": {"a": 1}},
                {"id": "c2", "name": "g", "arguments": '{"b": 2}'},
            ],
        },
        {"role": "tool", "content": "2", "tool_call_id": "c1"},
        {"role": "tool", "content": {"rows": 2}, "tool_call_id": "c2"},
        {"role": "assistant", "content": None, "tool_calls": [{"id": "c3", "name": "h", "arguments": "not json"}]},
    ]
    made = as_contents(shaped)
    assert [c.role for c in made] == ["user", "model", "user", "model", "user"]
    assert made[0].parts[0].text == "hi"  # the system message is left to the agent's own instruction
    said, first, second = made[1].parts
    assert said.text == "Let me see."
    assert (first.function_call.id, first.function_call.name, first.function_call.args) == ("c1", "f", {"a": 1})
    assert second.function_call.args == {"b": 2}
    results = [p.function_response for p in made[2].parts]  # one turn's results together
    assert [(r.id, r.name, r.response) for r in results] == [("c1", "f", {"result": "2"}), ("c2", "g", {"rows": 2})]
    assert made[3].parts[0].function_call.args == {"arguments": "not json"}
    unanswered = made[4].parts[0].function_response
    assert (unanswered.id, unanswered.name) == ("c3", "h")  # given a result saying so: models refuse a bare call
    with pytest.raises(ValueError, match="not a message"):
        as_contents([{"role": "unknown", "content": "?"}])


def test_as_events_authors_the_user_s_text_as_the_user_and_the_rest_as_the_agent() -> None:
    events = as_events(
        [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "name": "f", "arguments": {}}]},
            {"role": "tool", "content": "x", "tool_call_id": "c1"},
            {"role": "assistant", "content": "done"},
        ],
        author="helper",
    )
    assert [e.author for e in events] == ["user", "helper", "helper", "helper"]

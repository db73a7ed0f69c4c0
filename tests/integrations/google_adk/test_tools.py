"""Tools: an ``@openprogram.tool`` used as an ADK function tool records once and keeps ``_session`` out of
the declaration the model sees; a ``_session`` the model sends never chooses the session."""

from __future__ import annotations

import asyncio

import openprogram
import pytest
from google.adk.agents import LlmAgent
from google.adk.runners import InMemoryRunner
from google.adk.tools import FunctionTool, ToolContext
from openprogram.integrations.google_adk.fakes import ScriptedLlm
from openprogram.stores import Store

from tests.integrations.google_adk.helpers import ask
from tests.support import calls, one, tree

pytestmark = pytest.mark.usefixtures("instrumented")


@openprogram.tool
def lookup(city: str) -> str:
    """The weather in a city."""
    handle = openprogram.get_current_session()
    return f"{city}: sunny in {handle.session_id if handle else None}"


@openprogram.tool
async def remember(note: str, tool_context: ToolContext) -> str:
    """Keep a note in the ADK session's state (async, and given ADK's tool context)."""
    tool_context.state["note"] = note
    return "kept"


def test_the_declaration_sent_to_the_model_has_no_session_parameter() -> None:
    for made in (FunctionTool(lookup), FunctionTool(remember)):
        declaration = made._get_declaration()
        assert declaration is not None
        schema = declaration.parameters_json_schema or declaration.parameters
        properties = schema["properties"] if isinstance(schema, dict) else schema.properties
        assert "_session" not in properties
        assert "tool_context" not in properties


async def test_an_openprogram_tool_records_once_with_its_arguments_and_no_tool_context(store: Store) -> None:
    model = ScriptedLlm(
        script=[[("lookup", {"city": "Paris", "_session": "not-this-one"}), ("remember", {"note": "n1"})], "done"]
    )
    agent = LlmAgent(name="forecaster", model=model, tools=[lookup, remember])
    async with openprogram.session_context(store=store) as h:
        await ask(InMemoryRunner(agent=agent, app_name="app"), "weather?")
    records = calls(store, h.session_id)
    assert tree(records) == [
        (0, "turn", "main"),
        (1, "agent", "forecaster"),
        (2, "llm", "scripted-model"),
        (2, "tool", "lookup"),
        (2, "tool", "remember"),
        (2, "llm", "scripted-model"),
    ]
    looked_up = one(records, "lookup", "tool")
    assert looked_up.framework is None  # recorded by @openprogram.tool itself, once
    assert looked_up.inputs == {"city": "Paris"}
    assert looked_up.output == f"Paris: sunny in {h.session_id}"  # the model's _session chose nothing
    assert one(records, "remember", "tool").inputs == {"note": "n1"}  # ADK's tool context is not captured


def test_a_tool_returning_its_error_to_the_model_is_a_tool_call_that_ended_ok(store: Store) -> None:
    def strict(count: int) -> int:
        """Needs a count."""
        return count

    agent = LlmAgent(name="checker", model=ScriptedLlm(script=[[("strict", {})], "ok"]), tools=[strict])
    with openprogram.session_context(store=store) as h:
        asyncio.run(ask(InMemoryRunner(agent=agent, app_name="app"), "go"))
    missing = one(calls(store, h.session_id), "strict", "tool")
    assert missing.status == "ok" and "mandatory input parameters" in str(missing.output)

"""A model's call of a tool the agent does not have, or whose arguments CrewAI rejects, is a ``tool`` call ending
``error`` (issue 46): CrewAI tells the agent and goes on, on the text (ReAct) path and on native tool calling."""

from __future__ import annotations

import warnings
from typing import Any

import openprogram
import pytest
from crewai import Agent, Crew, Task
from crewai.tools import BaseTool
from openprogram.integrations.crewai.fakes import scripted_llm

from tests.integrations.crewai.helpers import chain
from tests.support import attributes, by_kind, calls, one


class Probe(BaseTool):
    name: str = "probe"
    description: str = "Report what it was given."

    def _run(self, x: str) -> str:
        return f"probe:{x}"


def _crew(steps: list[tuple[str, dict[str, Any]]], native: bool, executor: str) -> Crew:
    extra: dict[str, Any] = {}
    if executor == "CrewAgentExecutor":
        crew_agent_executor = pytest.importorskip("crewai.agents.crew_agent_executor", reason="no CrewAgentExecutor")
        extra["executor_class"] = crew_agent_executor.CrewAgentExecutor
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        agent = Agent(
            role="Prober", goal="g", backstory="b", llm=scripted_llm(steps, native=native), tools=[Probe()], **extra
        )
    return Crew(agents=[agent], tasks=[Task(description="probe", expected_output="t", agent=agent)])


@pytest.mark.parametrize("native", [False, True], ids=["text", "native"])
@pytest.mark.parametrize("executor", ["default", "CrewAgentExecutor"])
def test_a_call_of_a_tool_the_agent_does_not_have_is_a_failed_tool_call(
    store: openprogram.Store, native: bool, executor: str
) -> None:
    crew = _crew([("inspect", {"x": "a"}), ("probe", {"x": "b"})], native, executor)
    with openprogram.session_context(store=store) as h:
        assert crew.kickoff().raw == "done"  # CrewAI told the agent and went on, as without openprogram
    records = calls(store, h.session_id)
    refused, ran = by_kind(records, "tool")
    assert (refused.name, refused.status, refused.framework) == ("inspect", "error", "crewai")
    assert refused.error is not None and refused.error.startswith("ToolCallRejected: ")
    told = refused.error.removeprefix("ToolCallRejected: ")
    assert told == "Tool not found" if native else "Action 'inspect' don't exist" in told  # CrewAI's own words
    assert chain(records, refused) == ["tool", "agent", "task", "crew", "turn"]
    assert "x" in str(refused.inputs)  # what the model sent
    assert (ran.name, ran.status, ran.output) == ("probe", "ok", "probe:b")
    assert [c.name for c in records if c.status == "error"] == ["inspect"]
    assert one(records, "Prober", "agent").status == "ok"


@pytest.mark.parametrize("native", [False, True], ids=["text", "native"])
def test_arguments_crewai_rejects_are_one_failed_call_of_that_tool(store: openprogram.Store, native: bool) -> None:
    crew = _crew([("probe", {"y": "a"}), ("probe", {"x": "b"})], native, "default")
    with openprogram.session_context(store=store) as h:
        assert crew.kickoff().raw == "done"
    rejected, ran = by_kind(calls(store, h.session_id), "tool")
    assert (rejected.name, rejected.status, ran.status) == ("probe", "error", "ok")
    assert "validation failed" in (rejected.error or "") and attributes(rejected)["agent"] == "Prober"


def test_a_call_a_hook_blocked_is_not_an_error(store: openprogram.Store) -> None:
    from crewai.hooks import clear_before_tool_call_hooks, register_before_tool_call_hook

    register_before_tool_call_hook(lambda context: False)  # block every tool call
    try:
        crew = _crew([("probe", {"x": "a"})], True, "default")
        with openprogram.session_context(store=store) as h:
            crew.kickoff()
    finally:
        clear_before_tool_call_hooks()
    (blocked,) = by_kind(calls(store, h.session_id), "tool")
    assert (blocked.status, attributes(blocked).get("executed")) == ("ok", False)

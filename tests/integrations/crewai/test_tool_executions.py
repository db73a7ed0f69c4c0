"""One tool call executed by CrewAI's own tool-execution functions, outside the agent wrappers.

Those wrappers put the adapter's tool hooks back when they were cleared; these paths do
not pass through them. Whatever the before-hook opens must end when the execution does,
and leave the caller's context as it was, whether or not the after-hook runs.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import warnings
from collections.abc import Iterator
from typing import Any

import openprogram
import pytest
from crewai import Agent, Crew, Task
from crewai.agents.parser import AgentAction
from crewai.hooks import clear_after_tool_call_hooks
from crewai.tools import BaseTool
from crewai.utilities import agent_utils, tool_utils
from openprogram.integrations.crewai.fakes import scripted_llm

from tests.integrations.crewai.helpers import chain
from tests.support import by_kind, calls, one

SEEN: list[tuple[Any, Any]] = []
_inputs = itertools.count()


class Probe(BaseTool):
    name: str = "probe"
    description: str = "Report the context it runs in."

    def _run(self, x: str) -> str:
        SEEN.append((openprogram.get_current_session(), openprogram.current_call_id()))
        return f"probe:{x}"


@pytest.fixture(autouse=True)
def _clear_seen() -> Iterator[None]:
    SEEN.clear()
    yield


@openprogram.tool
def later() -> str | None:
    """A call made after the tool execution: its parent tells what was current."""
    return openprogram.current_call_id()


def _executor(tool: BaseTool, executor_class: Any = None) -> Any:
    extra = {} if executor_class is None else {"executor_class": executor_class}
    agent = Agent(role="Prober", goal="g", backstory="b", llm=scripted_llm([], native=True), tools=[tool], **extra)
    agent.create_agent_executor(tools=agent.tools, task=Task(description="d", expected_output="t", agent=agent))
    return agent.agent_executor


def _execute(path: str, x: str) -> Any:
    """Run Probe once through ``path``; return the result text CrewAI produced."""
    tool, arguments = Probe(), json.dumps({"x": x})
    if path in ("text", "text async"):
        text = f"Thought: t\nAction: probe\nAction Input: {arguments}"
        action = AgentAction(tool="probe", tool_input=arguments, text=text, thought="t")
        if path == "text":
            return tool_utils.execute_tool_and_check_finality(action, [tool.to_structured_tool()]).result
        return asyncio.run(tool_utils.aexecute_tool_and_check_finality(action, [tool.to_structured_tool()])).result
    call = {"id": "call-1", "type": "function", "function": {"name": "probe", "arguments": arguments}}
    if path == "native":
        return agent_utils.execute_single_native_tool_call(
            call,
            available_functions={"probe": tool.run},
            original_tools=[tool],
            structured_tools=[tool.to_structured_tool()],
            tools_handler=None,
            agent=None,
            task=None,
            crew=None,
            event_source=tool,
        ).result
    if path == "agent executor":
        executor = _executor(tool)
        executor._setup_native_tools()
        return executor._execute_single_native_tool_call(call)["result"]
    crew_agent_executor = pytest.importorskip("crewai.agents.crew_agent_executor", reason="no CrewAgentExecutor")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        executor = _executor(tool, crew_agent_executor.CrewAgentExecutor)
    return executor._execute_single_native_tool_call(
        call_id="call-1", func_name="probe", func_args=arguments, available_functions={"probe": tool.run}
    )["result"]


PATHS = ["text", "text async", "native", "agent executor", "crew agent executor"]


@pytest.mark.parametrize("in_session", [False, True], ids=["no session", "in a session"])
@pytest.mark.parametrize("after_hook", ["cleared", "intact"])
@pytest.mark.parametrize("path", PATHS)
def test_a_tool_whose_after_hook_never_runs_leaks_no_context(
    store: openprogram.Store, path: str, after_hook: str, in_session: bool
) -> None:
    if after_hook == "cleared":
        clear_after_tool_call_hooks()  # CrewAI's public API; nothing on these paths puts it back
    x = f"{path}-{after_hook}-{next(_inputs)}"
    with openprogram.session_context(store=store) if in_session else contextlib.nullcontext():
        before = (openprogram.get_current_session(), openprogram.current_call_id())
        assert _execute(path, x) == f"probe:{x}"
        assert (openprogram.get_current_session(), openprogram.current_call_id()) == before
        parent_of_later = later()
    handle = before[0] or openprogram.implicit_session()
    assert handle is not None
    records = calls(handle.store, handle.session_id)
    (tool_call,) = [r for r in by_kind(records, "tool") if r.name == "probe" and r.inputs == {"x": x}]
    assert (tool_call.status, tool_call.output) == ("ok", f"probe:{x}")
    assert [(handle, tool_call.call_id)] == SEEN  # the tool's body ran as its call, in its session
    parent = before[1] or handle.root_call_id
    assert tool_call.parent_id == parent
    (later_call,) = [r for r in records if r.name == "later" and r.output == parent_of_later]
    assert later_call.parent_id == parent  # not under the tool call


@pytest.mark.parametrize("native", [False, True], ids=["text", "native"])
def test_crew_agent_executor_records_crew_task_agent_tool(store: openprogram.Store, native: bool) -> None:
    crew_agent_executor = pytest.importorskip("crewai.agents.crew_agent_executor", reason="no CrewAgentExecutor")
    llm = scripted_llm([("probe", {"x": "a"}), ("probe", {"x": "b"})], native=native, final="done")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        agent = Agent(
            role="Prober",
            goal="g",
            backstory="b",
            llm=llm,
            tools=[Probe()],
            executor_class=crew_agent_executor.CrewAgentExecutor,
        )
    crew = Crew(agents=[agent], tasks=[Task(description="probe twice", expected_output="t", agent=agent)])
    with openprogram.session_context(store=store) as h:
        assert crew.kickoff().raw == "done"
        assert (openprogram.get_current_session(), openprogram.current_call_id()) == (h, h.root_call_id)
    records = calls(store, h.session_id)
    tools = by_kind(records, "tool")
    assert [(t.inputs, t.status, t.attributes) for t in tools] == [
        ({"x": "a"}, "ok", {"agent": "Prober"}),
        ({"x": "b"}, "ok", {"agent": "Prober"}),
    ]
    assert all(chain(records, t) == ["tool", "agent", "task", "crew", "turn"] for t in tools)
    assert [call for _, call in SEEN] == [t.call_id for t in tools]
    assert one(records, "Prober", "agent").status == "ok"


class Clock(BaseTool):
    name: str = "clock"
    description: str = "Takes no arguments."

    def _run(self) -> str:
        SEEN.append((openprogram.get_current_session(), openprogram.current_call_id()))
        return "tick"


@pytest.mark.parametrize("native", [False, True], ids=["text", "native"])
@pytest.mark.parametrize("executor", ["default", "CrewAgentExecutor"])
def test_a_tool_without_arguments_is_ended_by_its_after_hook(
    store: openprogram.Store, executor: str, native: bool
) -> None:
    # CrewAgentExecutor gives each hook context its own empty dict for a call without arguments.
    extra: dict[str, Any] = {}
    if executor == "CrewAgentExecutor":
        module = pytest.importorskip("crewai.agents.crew_agent_executor", reason="no CrewAgentExecutor")
        extra["executor_class"] = module.CrewAgentExecutor
    llm = scripted_llm([("clock", {})], native=native, final="done")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        agent = Agent(role="Timer", goal="g", backstory="b", llm=llm, tools=[Clock()], **extra)
    crew = Crew(agents=[agent], tasks=[Task(description="tell the time", expected_output="t", agent=agent)])
    with openprogram.session_context(store=store) as h:
        crew.kickoff()
    (clock,) = by_kind(calls(store, h.session_id), "tool")
    assert (clock.name, clock.status, clock.output, clock.attributes) == ("clock", "ok", "tick", {"agent": "Timer"})
    assert [(h, clock.call_id)] == SEEN

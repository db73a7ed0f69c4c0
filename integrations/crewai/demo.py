"""``openprogram demo`` for CrewAI: an offline flow around a crew of two agents.

The flow plans, then kicks off a crew whose first task runs asynchronously and
whose second task is delegated by one agent to the other; every tool reads the
current session, and every model request is an ``llm`` call with its token usage.
The Writer's model is CrewAI's own OpenAI provider answered by an offline HTTP
transport, the Lead's a scripted ``BaseLLM`` (no network, no keys); CrewAI's
telemetry and tracing are switched off before crewai is imported, and its console
panels (printed for every flow, verbose or not) only while the demo runs.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Iterator
from typing import Any

from openprogram import get_current_session

from .fakes import offline_environment, openai_llm, scripted_llm

__all__ = ["prepare", "run_demo"]


def prepare() -> None:
    """Keep CrewAI offline: set its telemetry/tracing switches, only if crewai is not imported yet.

    ``openprogram demo`` calls this before ``instrument()`` imports crewai; values the user set win.
    """
    if "crewai" not in sys.modules:
        offline_environment()


@contextlib.contextmanager
def _quiet_console() -> Iterator[None]:
    """No CrewAI console output in this context (CrewAI's own context-variable switch, restored after)."""
    try:
        from crewai.events.utils.console_formatter import (
            set_suppress_console_output,
            should_suppress_console_output,
        )
    except ImportError:  # a CrewAI without the switch: its panels show
        yield
        return
    before = should_suppress_console_output()
    set_suppress_console_output(True)
    try:
        yield
    finally:
        set_suppress_console_output(before)


def run_demo(emit: Callable[[str], None]) -> None:
    """Run the offline CrewAI demo in the current session and report what happened through ``emit``."""
    prepare()  # a no-op when crewai is already imported (its switches were read then)
    from crewai import Agent, Crew, Flow, Task
    from crewai.flow.flow import listen, start
    from crewai.tools import tool

    sessions: set[str] = set()

    @tool("lookup")  # type: ignore[untyped-decorator, unused-ignore]
    def lookup(topic: str) -> str:
        """Look a topic up in a tiny offline encyclopedia."""
        handle = get_current_session()
        sessions.add(handle.session_id if handle else "<none>")
        facts = {
            "sessions": "a session is a durable record of an agent's calls",
            "crews": "a crew runs tasks with agents and tools",
        }
        return facts.get(topic, f"nothing known about {topic}")

    writer_llm = openai_llm([("lookup", {"topic": "crews"})], final="crews run tasks with agents")
    lead_llm = scripted_llm(
        [("delegate_work_to_coworker", {"task": "explain crews", "context": "one sentence", "coworker": "Writer"})],
        final="report: sessions record crews",
    )
    writer = Agent(
        role="Writer",
        goal="write short notes",
        backstory="offline",
        llm=writer_llm,
        tools=[lookup],
        allow_delegation=False,
    )
    lead = Agent(role="Lead", goal="coordinate", backstory="offline", llm=lead_llm, allow_delegation=True)
    notes = Task(description="note what crews are", expected_output="a note", agent=writer, async_execution=True)
    report = Task(description="write the report", expected_output="a report", agent=lead, context=[notes])
    crew = Crew(name="demo crew", agents=[writer, lead], tasks=[notes, report], cache=False)

    class ReportFlow(Flow):  # type: ignore[type-arg, misc, unused-ignore]
        @start()  # type: ignore[misc, untyped-decorator, unused-ignore]
        def plan(self) -> str:
            return "sessions"

        @listen(plan)  # type: ignore[misc, untyped-decorator, unused-ignore]
        def run_crew(self, topic: str) -> str:
            output: Any = crew.kickoff(inputs={"topic": topic})  # not streaming: a CrewOutput
            return str(output.raw)

    with _quiet_console():
        result: Any = ReportFlow().kickoff()
    emit(f"crewai: flow -> crew (async task, delegation Lead -> Writer): {result}")
    emit(f"crewai: tools ran in session(s): {', '.join(sorted(sessions))}")
    tokens = sum(llm.get_token_usage_summary().total_tokens for llm in (writer_llm, lead_llm))
    emit(f"crewai: model requests used {tokens} tokens, each recorded as an llm call with its usage")

"""``openprogram demo`` for LlamaIndex: an agent workflow that hands off, then a plain two-step workflow.

The researcher agent calls a sync tool and an async tool, then hands off to the writer agent,
which answers; a small workflow then drafts and polishes a line in two steps. The LLMs are
:func:`.fakes.scripted_llm`: scripted replies, no network, no keys, reporting token usage as a
provider does. Every tool and step reads the current session.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from openprogram import get_current_session

from .fakes import scripted_llm

__all__ = ["run_demo"]


def run_demo(emit: Callable[[str], None]) -> None:
    """Run the offline LlamaIndex demo in the current session and report what happened through ``emit``."""
    from llama_index.core.agent.workflow import AgentWorkflow, FunctionAgent  # type: ignore[import-not-found, unused-ignore]

    sessions: set[str] = set()

    def note_session() -> None:
        handle = get_current_session()
        sessions.add(handle.session_id if handle else "<none>")

    def lookup(topic: str) -> str:
        """Look a topic up in a tiny offline encyclopedia."""
        note_session()
        return {"sessions": "a session is a durable record of calls"}.get(topic, "unknown")

    async def fetch(topic: str) -> str:
        """Fetch a page about a topic (async)."""
        await asyncio.sleep(0)
        note_session()
        return f"a page about {topic}"

    researcher = FunctionAgent(
        name="researcher",
        description="Finds facts.",
        tools=[lookup, fetch],
        llm=scripted_llm(
            [
                [("lookup", {"topic": "sessions"}), ("fetch", {"topic": "context"})],
                [("handoff", {"to_agent": "writer", "reason": "the facts are in"})],
            ],
            model="demo-model",
        ),
        can_handoff_to=["writer"],
    )
    writer = FunctionAgent(
        name="writer",
        description="Writes the answer.",
        llm=scripted_llm([], final="sessions keep every call; context follows tasks", model="demo-model"),
    )
    team = AgentWorkflow(agents=[researcher, writer], root_agent="researcher")

    async def ask() -> str:
        return str(await team.run(user_msg="what is a session?"))

    emit(f"llama_index: agent workflow -> tools (sync and async) -> hand-off -> agent: {asyncio.run(ask())}")
    emit(f"llama_index: two-step workflow: {asyncio.run(_two_steps(note_session))}")
    emit(f"llama_index: tools and steps ran in session(s): {', '.join(sorted(sessions))}")


async def _two_steps(note_session: Callable[[], None]) -> Any:
    """A workflow of two steps: an async one, then a sync one (which LlamaIndex runs in a thread)."""
    from workflows import Workflow, step  # type: ignore[import-not-found, unused-ignore]
    from workflows.events import Event, StartEvent, StopEvent  # type: ignore[import-not-found, unused-ignore]

    class Drafted(Event):  # type: ignore[misc, valid-type, unused-ignore]
        text: str

    class Polish(Workflow):  # type: ignore[misc, valid-type, unused-ignore]
        @step
        async def draft(self, ev: StartEvent) -> Drafted:
            note_session()
            return Drafted(text=f"{ev.get('topic')}: one tree per run")

        @step
        def polish(self, ev: Drafted) -> StopEvent:
            note_session()
            return StopEvent(result=ev.text.capitalize())

    return await Polish(timeout=30).run(topic="workflows")

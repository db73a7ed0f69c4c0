"""``openprogram demo`` for Google ADK: a coordinator that asks a helper agent, then hands over to a specialist.

The coordinator calls an ``AgentTool`` (the helper agent runs a model request of its own),
then transfers to its sub-agent, which calls a sync tool and an async tool in one turn and
answers; a second run streams its answer (``StreamingMode.SSE``). The models are openprogram's
scripted ``BaseLlm`` (no network, no keys), reporting token usage as Gemini does. Every tool
reads the current session.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

from openprogram import get_current_session

__all__ = ["run_demo"]


def run_demo(emit: Callable[[str], None]) -> None:
    """Run the offline ADK demo in the current session and report what happened through ``emit``."""
    # ADK advises on context caching for apps that transfer between agents: moot for a scripted model.
    adk_logger = logging.getLogger("google_adk")
    level = adk_logger.level
    adk_logger.setLevel(logging.ERROR)
    try:
        _run(emit)
    finally:
        adk_logger.setLevel(level)


def _run(emit: Callable[[str], None]) -> None:
    # (ignores: openprogram's type check may run without the framework installed)
    from google.adk.agents import LlmAgent, RunConfig  # type: ignore[import-not-found, unused-ignore]
    from google.adk.runners import InMemoryRunner  # type: ignore[import-not-found, unused-ignore]
    from google.adk.tools.agent_tool import AgentTool  # type: ignore[import-not-found, unused-ignore]
    from google.genai import types  # type: ignore[import-not-found, unused-ignore]

    from .fakes import ScriptedLlm

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

    helper = LlmAgent(
        name="note_taker",
        description="Takes notes on a topic.",
        model=ScriptedLlm(model="demo-model", script=["sessions: 2 facts"]),
    )
    specialist = LlmAgent(
        name="researcher",
        description="Researches a topic with its tools.",
        model=ScriptedLlm(
            model="demo-model",
            script=[
                [("lookup", {"topic": "sessions"}), ("fetch", {"topic": "context"})],
                "sessions keep every call; context follows tasks",
            ],
        ),
        tools=[lookup, fetch],
    )
    coordinator = LlmAgent(
        name="coordinator",
        instruction="Ask the note taker, then hand the question to the researcher.",
        model=ScriptedLlm(
            model="demo-model",
            script=[[("note_taker", {"request": "sessions"})], [("transfer_to_agent", {"agent_name": "researcher"})]],
        ),
        tools=[AgentTool(helper)],
        sub_agents=[specialist],
    )
    runner = InMemoryRunner(agent=coordinator, app_name="openprogram_demo")

    def ask(question: str, run_config: Any = None) -> str:
        async def session_id() -> str:
            made = await runner.session_service.create_session(app_name="openprogram_demo", user_id="demo")
            return str(made.id)

        answer = ""
        message = types.Content(role="user", parts=[types.Part(text=question)])
        for event in runner.run(
            user_id="demo", session_id=asyncio.run(session_id()), new_message=message, run_config=run_config
        ):
            if event.content and event.content.parts and not event.partial:
                answer = "".join(part.text or "" for part in event.content.parts) or answer
        return answer

    emit(f"google_adk: agent -> agent tool -> transfer -> tools (sync and async): {ask('what is a session?')}")

    streamer = LlmAgent(name="summarizer", model=ScriptedLlm(model="demo-model", script=["one tree per run, streamed"]))
    runner = InMemoryRunner(agent=streamer, app_name="openprogram_demo")
    emit(f"google_adk: streamed run: {ask('summarize', RunConfig.model_validate({'streaming_mode': 'sse'}))}")
    emit(f"google_adk: tools ran in session(s): {', '.join(sorted(sessions))}")

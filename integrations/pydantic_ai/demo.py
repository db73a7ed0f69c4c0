"""``openprogram demo`` for Pydantic AI: an offline agent that delegates to another, then streams a summary.

The lead agent calls a sync tool and an async tool in parallel, then a tool that runs a
helper agent with a structured output; a second run streams its answer. The models are
Pydantic AI's own ``FunctionModel`` with scripted replies (no network, no keys), reporting
token usage as a provider does. Every tool reads the current session.
"""

# No ``from __future__ import annotations``: Pydantic AI reads the tools' annotations (``RunContext``,
# imported inside run_demo so that importing this module imports no framework) when they are registered.

import asyncio
from collections.abc import Callable, Sequence
from typing import Any

from openprogram import get_current_session

__all__ = ["run_demo"]


def _scripted(steps: Sequence[Sequence[tuple[str, dict[str, Any]]]], final: str) -> Any:
    """A ``FunctionModel`` making each step's tool calls in turn, then answering ``final``."""
    # (ignores: openprogram's type check may run without the framework installed)
    from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart  # type: ignore[import-not-found, unused-ignore]
    from pydantic_ai.models.function import AgentInfo, FunctionModel  # type: ignore[import-not-found, unused-ignore]
    from pydantic_ai.usage import RequestUsage  # type: ignore[import-not-found, unused-ignore]

    answered = [0]

    def parts(info: AgentInfo) -> list[Any]:
        index = answered[0]
        answered[0] += 1
        if index < len(steps):
            return [
                ToolCallPart(name, args, tool_call_id=f"demo-{index}-{n}")
                for n, (name, args) in enumerate(steps[index])
            ]
        if info.output_tools and not info.allow_text_output:
            return [ToolCallPart(info.output_tools[0].name, {"topic": "sessions", "facts": 2})]
        return [TextPart(final)]

    def respond(messages: list[Any], info: AgentInfo) -> ModelResponse:
        made = parts(info)
        sent = sum(len(str(getattr(p, "content", "")).split()) for m in messages for p in m.parts)
        return ModelResponse(parts=made, usage=RequestUsage(input_tokens=sent, output_tokens=4 * len(made)))

    async def stream(messages: list[Any], info: AgentInfo) -> Any:
        for part in parts(info):
            for word in str(getattr(part, "content", "")).split(" "):
                yield word + " "

    return FunctionModel(respond, stream_function=stream, model_name="demo-model")


def run_demo(emit: Callable[[str], None]) -> None:
    """Run the offline Pydantic AI demo in the current session and report what happened through ``emit``."""
    from pydantic import BaseModel
    from pydantic_ai import Agent, RunContext  # type: ignore[import-not-found, unused-ignore]

    sessions: set[str] = set()

    def note_session() -> None:
        handle = get_current_session()
        sessions.add(handle.session_id if handle else "<none>")

    class Notes(BaseModel):
        topic: str
        facts: int

    helper = Agent(_scripted([], final=""), output_type=Notes, name="note-taker")

    def lookup(topic: str) -> str:
        """Look a topic up in a tiny offline encyclopedia (runs in a worker thread)."""
        note_session()
        return {"sessions": "a session is a durable record of calls"}.get(topic, "unknown")

    async def fetch(topic: str) -> str:
        """Fetch a page about a topic (async)."""
        await asyncio.sleep(0)
        note_session()
        return f"a page about {topic}"

    async def take_notes(ctx: RunContext[None], topic: str) -> str:
        """Ask the note-taker agent for structured notes."""
        note_session()
        notes = (await helper.run(f"notes on {topic}", usage=ctx.usage)).output
        return f"{notes.facts} facts on {notes.topic}"

    script = [
        [("lookup", {"topic": "sessions"}), ("fetch", {"topic": "context"})],
        [("take_notes", {"topic": "sessions"})],
    ]
    lead = Agent(
        _scripted(script, final="sessions keep every call; context follows tasks"),
        name="researcher",
        tools=[lookup, fetch, take_notes],
    )

    answer = lead.run_sync("what is a session?").output
    emit(f"pydantic_ai: agent -> tools (parallel, sync and async) -> nested agent: {answer}")

    summarizer = Agent(_scripted([], final="one tree per run, streamed"), name="summarizer")

    async def summarize() -> str:
        async with summarizer.run_stream("summarize") as result:
            return "".join([piece async for piece in result.stream_text(delta=True, debounce_by=None)]).strip()

    emit(f"pydantic_ai: streamed run: {asyncio.run(summarize())}")
    emit(f"pydantic_ai: tools ran in session(s): {', '.join(sorted(sessions))}")

"""A live run (``Runner.run_live``) over a scripted live connection: its agent is an ``agent`` call in the session,
ended when its consumer closes the stream."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncGenerator, AsyncIterator
from typing import Any

import openprogram
import pytest
from google.adk.agents import LlmAgent, RunConfig
from google.adk.agents.live_request_queue import LiveRequestQueue
from google.adk.models.base_llm_connection import BaseLlmConnection
from google.adk.models.llm_response import LlmResponse
from google.adk.runners import InMemoryRunner
from google.genai import types
from openprogram.integrations.google_adk.fakes import ScriptedLlm
from openprogram.stores import Store

from tests.integrations.google_adk.helpers import user
from tests.support import calls

pytestmark = pytest.mark.usefixtures("instrumented")


class _Connection(BaseLlmConnection):
    """Answers each content sent with one text reply, then a completed turn."""

    def __init__(self) -> None:
        self.sent: asyncio.Queue[Any] = asyncio.Queue()

    async def send_history(self, history: Any) -> None:
        pass

    async def send_content(self, content: Any) -> None:
        await self.sent.put(content)

    async def send_realtime(self, blob: Any) -> None:
        pass

    async def receive(self) -> AsyncGenerator[LlmResponse, None]:
        await self.sent.get()
        yield LlmResponse(content=types.Content(role="model", parts=[types.Part(text="live hello")]))
        yield LlmResponse(turn_complete=True)

    async def close(self) -> None:
        pass


class _LiveLlm(ScriptedLlm):
    @contextlib.asynccontextmanager
    async def connect(self, llm_request: Any) -> AsyncIterator[_Connection]:
        yield _Connection()


async def test_a_live_run_records_its_agent_until_its_consumer_closes_it(store: Store) -> None:
    runner = InMemoryRunner(agent=LlmAgent(name="speaker", model=_LiveLlm()), app_name="app")
    session = await runner.session_service.create_session(app_name="app", user_id="u")
    queue = LiveRequestQueue()
    queue.send_content(user("hello"))
    config = RunConfig(response_modalities=["TEXT"])
    async with openprogram.session_context(store=store) as h:
        events = runner.run_live(user_id="u", session_id=session.id, live_request_queue=queue, run_config=config)
        async with contextlib.aclosing(events):
            async for event in events:
                if event.turn_complete:
                    break
    agent = [r for r in calls(store, h.session_id) if r.kind == "agent"]
    assert [(r.name, r.status, r.output) for r in agent] == [("speaker", "interrupted", "live hello")]

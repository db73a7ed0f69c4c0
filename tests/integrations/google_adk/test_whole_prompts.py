"""Each model request keeps the whole prompt its model was sent, however long the run, stored once.

An agent whose scripted model reads one file a request: what each request's record reads back
is compared with what the model received (ADK's ``LlmRequest``, copied as it arrived), translated
to the one message shape here, independently of the adapter.
"""

from __future__ import annotations

import asyncio
from typing import Any

import openprogram
import pytest
from google.adk.agents import LlmAgent
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.adk.runners import InMemoryRunner
from google.genai import types
from openprogram.integrations.google_adk.fakes import ScriptedLlm

from tests.integrations.google_adk.helpers import ask
from tests.integrations.prompts import (
    MESSAGE_BOUND,
    assert_cut_inside,
    assert_stored_once,
    recorded_prompts,
    stored_rows,
)
from tests.support import calls

pytestmark = pytest.mark.usefixtures("instrumented")

INSTRUCTION = "Read files until you find it."
QUESTION = "Find where the answer is."


def file_text(index: int, size: int = 1_500) -> str:
    line = f"# file {index}: nothing here yet\n"
    return (line * (size // len(line) + 1))[:size]


def shape(request: LlmRequest) -> list[dict[str, Any]]:
    """One request as the model received it, in the one message shape: its system instruction first."""
    shaped: list[dict[str, Any]] = []
    system = request.config.system_instruction if request.config else None
    if system:
        shaped.append({"role": "system", "content": system})
    for content in request.contents:
        parts = content.parts or []
        if content.role == "model":
            texts = [p.text for p in parts if p.text]
            said: dict[str, Any] = {"role": "assistant", "content": "".join(texts) or None}
            called = [
                {"id": p.function_call.id, "name": p.function_call.name, "arguments": p.function_call.args}
                for p in parts
                if p.function_call
            ]
            if called:
                said["tool_calls"] = called
            shaped.append(said)
            continue
        for part in parts:
            if part.function_response:
                result = part.function_response.response or {}
                answered = part.function_response.id
                shaped.append({"role": "tool", "content": result.get("result"), "tool_call_id": answered})
        texts = [p.text for p in parts if p.text is not None]
        if texts:
            shaped.append({"role": "user", "content": "".join(texts)})
    return shaped


def reader(steps: int) -> ScriptedLlm:
    """A model asking for file n at its n-th request, then answering."""

    def step(request: LlmRequest) -> LlmResponse:
        done = sum(1 for c in request.contents for p in c.parts or [] if p.function_response)
        if done < steps:
            called = types.FunctionCall(id=f"call_{done}", name="read_file", args={"path": f"src/file_{done}.py"})
            return LlmResponse(content=types.Content(role="model", parts=[types.Part(function_call=called)]))
        return LlmResponse(content=types.Content(role="model", parts=[types.Part(text="found it")]))

    model = ScriptedLlm(model="reader-model")
    model.script.extend([step] * (steps + 1))
    return model


def reading_agent(steps: int, sizes: dict[int, int] | None = None) -> tuple[LlmAgent, ScriptedLlm]:
    def read_file(path: str) -> str:
        """Read a file of the repository."""
        index = int(path.removeprefix("src/file_").removesuffix(".py"))
        return file_text(index, (sizes or {}).get(index, 1_500))

    model = reader(steps)
    return LlmAgent(name="reader", model=model, instruction=INSTRUCTION, tools=[read_file]), model


def test_every_request_of_a_31_request_run_is_recorded_as_the_model_received_it(
    sqlite_store: openprogram.Store,
) -> None:
    agent, model = reading_agent(30)
    with openprogram.session_context(store=sqlite_store) as h:
        assert asyncio.run(ask(InMemoryRunner(agent=agent, app_name="app"), QUESTION)) == "found it"
    prompts = recorded_prompts(sqlite_store, h.session_id)
    expected = [shape(request) for request in model.requests]
    assert len(prompts) == 31 and prompts == expected
    assert prompts[0][0]["role"] == "system" and INSTRUCTION in prompts[0][0]["content"]
    assert [len(p) for p in prompts] == [2 + 2 * n for n in range(31)]  # the newest of each is there
    assert prompts[-1][-1] == {"role": "tool", "content": file_text(29), "tool_call_id": "call_29"}
    assert_stored_once(sqlite_store, h.session_id, prompts)


def test_a_2_mb_tool_result_is_cut_inside_its_message_and_the_messages_after_it_are_whole(
    sqlite_store: openprogram.Store,
) -> None:
    agent, model = reading_agent(6, sizes={2: 2_000_000})
    with openprogram.session_context(store=sqlite_store) as h:
        asyncio.run(ask(InMemoryRunner(agent=agent, app_name="app"), QUESTION))
    huge = {"role": "tool", "content": file_text(2, 2_000_000), "tool_call_id": "call_2"}
    at = 7  # the instruction, the question, then two messages a step
    expected = [shape(request) for request in model.requests]
    assert expected[-1][at] == huge  # the model was sent all of it
    prompts = recorded_prompts(sqlite_store, h.session_id)
    for recorded, model_received in zip(prompts, expected, strict=True):
        assert len(recorded) == len(model_received)
        if len(model_received) > at:
            assert_cut_inside(recorded[at], huge)
        assert [m for i, m in enumerate(recorded) if i != at] == [m for i, m in enumerate(model_received) if i != at]
    assert all(len(row) <= MESSAGE_BOUND for row in stored_rows(sqlite_store, h.session_id))


def test_with_content_capture_off_a_request_keeps_its_model_and_usage_but_no_text(store: openprogram.Store) -> None:
    openprogram.configure(capture_content=False)
    agent = LlmAgent(name="quiet", model=ScriptedLlm(script=["secret answer"]))
    with openprogram.session_context(store=store) as h:
        asyncio.run(ask(InMemoryRunner(agent=agent, app_name="app"), "secret question"))
    records = calls(store, h.session_id)
    request = next(r for r in records if r.kind == "llm")
    assert request.inputs is None and request.output is None
    assert request.attributes is not None and request.attributes["usage"]["total_tokens"] > 0
    agent_call = next(r for r in records if r.kind == "agent")
    assert agent_call.inputs is None and agent_call.output is None

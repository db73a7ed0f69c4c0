"""Each model request keeps the whole prompt its model was sent, however long the run, stored once.

A FunctionAgent reads one file per request for 30 requests; what each request's record reads back
is compared with what the scripted LLM received (copied as it arrived), translated to the one
message shape here, independently of the adapter.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import openprogram
import pytest
from llama_index.core.agent.workflow import FunctionAgent
from openprogram.integrations.llama_index.fakes import scripted_llm

from tests.integrations.prompts import assert_stored_once, recorded_prompts, stored_references

pytestmark = pytest.mark.usefixtures("instrumented")

READS = 29


def read_file(path: str) -> str:
    """Read a file of the repository."""
    return f"# {path}\n" + "x = 1\n" * 200


def shape(message: Any) -> dict[str, Any]:
    """A ``ChatMessage`` as the model received it, in the one message shape."""
    shaped: dict[str, Any] = {"role": message.role.value, "content": message.content}
    calls = message.additional_kwargs.get("tool_calls")
    if calls:
        shaped["tool_calls"] = [
            {"id": c["id"], "name": c["function"]["name"], "arguments": json.loads(c["function"]["arguments"])}
            for c in calls
        ]
    if "tool_call_id" in message.additional_kwargs:
        shaped["tool_call_id"] = message.additional_kwargs["tool_call_id"]
    return shaped


def test_every_request_of_a_30_request_run_is_recorded_as_the_model_received_it(
    sqlite_store: openprogram.Store,
) -> None:
    llm = scripted_llm([[("read_file", {"path": f"src/file_{n}.py"})] for n in range(READS)], final="found it")
    agent = FunctionAgent(
        name="reader", description="Reads.", tools=[read_file], llm=llm, system_prompt="Read until you find it."
    )

    async def main() -> str:
        return str(await agent.run(user_msg="Where is the answer?", max_iterations=100))

    with openprogram.session_context(store=sqlite_store) as h:
        assert asyncio.run(main()) == "found it"
    prompts = recorded_prompts(sqlite_store, h.session_id)
    sent = [[shape(m) for m in request] for request in llm.requests]
    assert len(prompts) == READS + 1 and prompts == sent
    assert [len(p) for p in prompts] == [2 + 2 * n for n in range(READS + 1)]  # the newest of each is there
    assert prompts[-1][-1]["role"] == "tool" and prompts[-1][-1]["content"].startswith(f"# src/file_{READS - 1}.py")
    assert_stored_once(sqlite_store, h.session_id, prompts)
    references = stored_references(sqlite_store, h.session_id)
    assert all(r is not None and r["keep"] >= 2 for r in references[1:])  # each repeats what came before

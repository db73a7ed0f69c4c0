"""Each model request of a run keeps the whole prompt sent, however long the run, stored once.

The SDK's own ``OpenAIResponsesModel`` answers offline (``fake_openai``), calling a tool that
reads one file a request: what each request's record reads back is compared with the request
body that went over the wire (its instructions and input items), translated to the one message
shape here. The SDK rebuilds its input items (dicts) at every turn: the adapter translates them
afresh.
"""

from __future__ import annotations

import json
from typing import Any

import openprogram
from agents import Agent, RunConfig, Runner, function_tool

from tests.integrations.openai_agents.fake_openai import responses_model
from tests.integrations.prompts import (
    MESSAGE_BOUND,
    assert_cut_inside,
    assert_stored_once,
    recorded_prompts,
    stored_references,
    stored_rows,
)

INSTRUCTIONS = "Read files until you find it."
QUESTION = "Find where the answer is."


def file_text(index: int, size: int = 1_500) -> str:
    """A deterministic file of ``size`` characters, different for every index."""
    line = f"def function_{index}(value):  # file {index}: returns value scaled by {index}\n"
    return (line * (size // len(line) + 1))[:size]


def text_of(content: Any) -> Any:
    """A message's content: its text when it is a list of text parts."""
    if isinstance(content, list):
        return "".join(part.get("text") or part.get("refusal") or "" for part in content)
    return content


def shape(body: dict[str, Any]) -> list[dict[str, Any]]:
    """A Responses API request body in the one message shape: its instructions, then its input items,
    a function call joining the assistant message before it."""
    shaped: list[dict[str, Any]] = (
        [{"role": "system", "content": body["instructions"]}] if body.get("instructions") else []
    )
    for item in body["input"]:
        kind = item.get("type")
        if kind == "function_call":
            call = {"id": item["call_id"], "name": item["name"], "arguments": json.loads(item["arguments"])}
            if shaped and shaped[-1]["role"] == "assistant":
                shaped[-1].setdefault("tool_calls", []).append(call)
            else:
                shaped.append({"role": "assistant", "content": None, "tool_calls": [call]})
        elif kind == "function_call_output":
            shaped.append({"role": "tool", "content": item["output"], "tool_call_id": item["call_id"]})
        else:
            shaped.append({"role": item["role"], "content": text_of(item["content"])})
    return shaped


async def read(
    store: openprogram.Store, files: int, sizes: dict[int, int] | None = None, **run: Any
) -> tuple[list[list[dict[str, Any]]], str]:
    """A run whose model reads ``files`` files, one a request, then answers: what went over the wire, the session."""

    @function_tool
    def read_file(index: int) -> str:
        """Read file number ``index`` of the repository."""
        return file_text(index, (sizes or {}).get(index, 1_500))

    model, bodies = responses_model([*([("read_file", {"index": n})] for n in range(files)), "All read."])
    agent = Agent(name="reader", instructions=INSTRUCTIONS, model=model, tools=[read_file])
    async with openprogram.session_context(store=store) as h:
        result = await Runner.run(agent, QUESTION, max_turns=files + 5, **run)
    assert result.final_output == "All read."
    return [shape(body) for body in bodies], h.session_id


async def test_every_request_of_a_31_request_run_is_recorded_as_sent(sqlite_store: openprogram.Store) -> None:
    sent, session_id = await read(sqlite_store, 30)
    prompts = recorded_prompts(sqlite_store, session_id)
    assert len(prompts) == 31 and prompts == sent
    assert [len(p) for p in prompts] == [2 + 2 * n for n in range(31)]  # the newest of each is there
    assert prompts[-1][-1]["content"] == file_text(29)
    assert_stored_once(sqlite_store, session_id, prompts)


async def test_input_a_call_model_input_filter_trims_is_recorded_as_sent_and_shares_its_question(
    sqlite_store: openprogram.Store,
) -> None:
    def recent(data: Any) -> Any:
        # The question, then the last two steps (each tool call with its output): what the model is sent.
        items = data.model_data.input
        trimmed = [items[0], *items[-4:]] if len(items) > 5 else items
        return type(data.model_data)(input=trimmed, instructions=data.model_data.instructions)

    sent, session_id = await read(sqlite_store, 30, run_config=RunConfig(call_model_input_filter=recent))
    prompts = recorded_prompts(sqlite_store, session_id)
    assert len(prompts) == 31 and prompts == sent
    assert max(len(p) for p in prompts) == 6
    assert_stored_once(sqlite_store, session_id, prompts)
    references = stored_references(sqlite_store, session_id)
    assert all(r is not None and r["keep"] >= 2 for r in references[1:])  # the instructions and the question


async def test_a_2_mb_tool_output_is_cut_inside_its_message_and_the_messages_after_it_are_whole(
    sqlite_store: openprogram.Store,
) -> None:
    sent, session_id = await read(sqlite_store, 6, {3: 2_000_000})
    at = 9  # the instructions, the question, then two messages a step
    assert sent[-1][at]["content"] == file_text(3, 2_000_000)  # all of it went over the wire
    prompts = recorded_prompts(sqlite_store, session_id)
    for recorded, body in zip(prompts, sent, strict=True):
        assert len(recorded) == len(body)
        if len(body) > at:
            assert_cut_inside(recorded[at], body[at])
        assert [m for i, m in enumerate(recorded) if i != at] == [m for i, m in enumerate(body) if i != at]
    assert all(len(row) <= MESSAGE_BOUND for row in stored_rows(sqlite_store, session_id))

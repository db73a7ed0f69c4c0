"""Each model request keeps the whole prompt its model was sent, however long the run, stored once.

An agent whose offline model (``fakes.reader``) reads one file a request: what each request's
record reads back is compared with what the model received (copied as it arrived), translated
to the one message shape here, independently of the adapter.
"""

from __future__ import annotations

from typing import Any

import openprogram
import pytest
from pydantic_ai import Agent
from pydantic_ai.capabilities import ProcessHistory
from pydantic_ai.messages import ModelMessage

from tests.integrations.prompts import (
    MESSAGE_BOUND,
    assert_cut_inside,
    assert_stored_once,
    recorded_prompts,
    stored_references,
    stored_rows,
)
from tests.integrations.pydantic_ai.fakes import file_text, reader

pytestmark = pytest.mark.usefixtures("instrumented")

INSTRUCTIONS = "Read files until you find it."
QUESTION = "Find where the answer is."
Received = list[tuple[list[ModelMessage], str | None]]


def shape(messages: list[ModelMessage], instructions: str | None) -> list[dict[str, Any]]:
    """One request as the model received it, in the one message shape: its instructions first."""
    shaped: list[dict[str, Any]] = [{"role": "system", "content": instructions}] if instructions else []
    for past in messages:
        if past.kind == "response":
            texts = [p.content for p in past.parts if p.part_kind == "text"]
            reply: dict[str, Any] = {"role": "assistant", "content": "".join(texts) if texts else None}
            calls = [
                {"id": p.tool_call_id, "name": p.tool_name, "arguments": p.args}
                for p in past.parts
                if p.part_kind == "tool-call"
            ]
            if calls:
                reply["tool_calls"] = calls
            shaped.append(reply)
            continue
        for part in past.parts:
            if part.part_kind == "system-prompt":
                shaped.append({"role": "system", "content": part.content})
            elif part.part_kind == "user-prompt":
                shaped.append({"role": "user", "content": part.content})
            elif part.part_kind == "tool-return":
                shaped.append({"role": "tool", "content": part.content, "tool_call_id": part.tool_call_id})
    return shaped


def sent(received: Received) -> list[list[dict[str, Any]]]:
    return [shape(messages, instructions) for messages, instructions in received]


def reading_agent(
    steps: int, received: Received, sizes: dict[int, int] | None = None, answers: tuple[int, ...] = (), **agent: Any
) -> Agent[None, str]:
    """An agent whose model reads ``steps`` files (file n of ``sizes[n]`` characters where given), then answers."""
    model = reader(steps, received, answers)
    reading: Agent[None, str] = Agent(model, name="reader", instructions=INSTRUCTIONS, **agent)

    @reading.tool_plain
    def read_file(path: str) -> str:
        """Read a file of the repository."""
        index = int(path.removeprefix("src/file_").removesuffix(".py"))
        return file_text(index, (sizes or {}).get(index, 1_500))

    return reading


def test_every_request_of_a_35_request_run_is_recorded_as_the_model_received_it(
    sqlite_store: openprogram.Store,
) -> None:
    received: Received = []
    with openprogram.session_context(store=sqlite_store) as h:
        reading_agent(34, received).run_sync(QUESTION)
    prompts = recorded_prompts(sqlite_store, h.session_id)
    assert len(prompts) == 35 and prompts == sent(received)
    assert [len(p) for p in prompts] == [2 + 2 * n for n in range(35)]  # the newest of each is there
    assert prompts[-1][-1] == {"role": "tool", "content": file_text(33), "tool_call_id": "call_33"}
    assert_stored_once(sqlite_store, h.session_id, prompts)


def test_a_dynamic_system_prompt_rerun_for_a_continued_conversation_is_recorded_as_sent(
    sqlite_store: openprogram.Store,
) -> None:
    # Continuing a conversation re-runs a dynamic system prompt on the messages it is given: the
    # system prompt part of its first request is replaced (in place, in some releases), and every
    # later record must say what the model was then sent.
    received: Received = []
    day = ["Monday"]
    agent = reading_agent(40, received, answers=(19,))

    @agent.system_prompt(dynamic=True)
    def today() -> str:
        return f"Today is {day[0]}."

    with openprogram.session_context(store=sqlite_store) as h:
        first = agent.run_sync(QUESTION)  # 20 requests: the model reads 19 files, then answers
        assert len(received) == 20
        day[0] = "Tuesday"
        agent.run_sync("And the next ones?", message_history=first.all_messages())
    prompts = recorded_prompts(sqlite_store, h.session_id)
    assert len(prompts) == 41 and prompts == sent(received)
    assert {"role": "system", "content": "Today is Monday."} in prompts[0]
    assert {"role": "system", "content": "Today is Tuesday."} in prompts[-1]
    assert {"role": "system", "content": "Today is Monday."} not in prompts[-1]
    assert_stored_once(sqlite_store, h.session_id, prompts)


def test_a_history_processor_trimming_each_request_is_recorded_as_sent_and_shares_its_question(
    sqlite_store: openprogram.Store,
) -> None:
    def recent(messages: list[ModelMessage]) -> list[ModelMessage]:
        # The question, then the last two steps, each tool call with its result.
        return [messages[0], *messages[-4:]] if len(messages) > 5 else messages

    received: Received = []
    with openprogram.session_context(store=sqlite_store) as h:
        reading_agent(34, received, capabilities=[ProcessHistory(recent)]).run_sync(QUESTION)
    prompts = recorded_prompts(sqlite_store, h.session_id)
    assert len(prompts) == 35 and prompts == sent(received)
    assert max(len(p) for p in prompts) == 6
    opening = [{"role": "system", "content": INSTRUCTIONS}, {"role": "user", "content": QUESTION}]
    assert all(p[:2] == opening for p in prompts)
    assert_stored_once(sqlite_store, h.session_id, prompts)
    references = stored_references(sqlite_store, h.session_id)
    assert all(r is not None and r["keep"] >= 2 for r in references[1:])  # the instructions and the question


def test_a_2_mb_tool_result_is_cut_inside_its_message_and_the_messages_after_it_are_whole(
    sqlite_store: openprogram.Store,
) -> None:
    received: Received = []
    with openprogram.session_context(store=sqlite_store) as h:
        reading_agent(8, received, sizes={3: 2_000_000}).run_sync(QUESTION)
    huge = {"role": "tool", "content": file_text(3, 2_000_000), "tool_call_id": "call_3"}
    at = 9  # the instructions, the question, then two messages a step
    expected = sent(received)
    assert expected[-1][at] == huge  # the model was sent all of it
    prompts = recorded_prompts(sqlite_store, h.session_id)
    for recorded, model_received in zip(prompts, expected, strict=True):
        assert len(recorded) == len(model_received)
        if len(model_received) > at:
            assert_cut_inside(recorded[at], huge)
        assert [m for i, m in enumerate(recorded) if i != at] == [m for i, m in enumerate(model_received) if i != at]
    assert all(len(row) <= MESSAGE_BOUND for row in stored_rows(sqlite_store, h.session_id))

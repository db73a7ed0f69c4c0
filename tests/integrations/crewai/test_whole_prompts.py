"""Each model request of an agent keeps the whole prompt sent, however long its task, stored once.

An agent whose offline LLM (``scripted_llm``) reads one file a request with native function
calling: what each request's record reads back is compared with the messages the LLM was sent
(copied as they arrived), translated to the one message shape here. CrewAI's messages are
dicts, which the adapter translates afresh at every request.
"""

from __future__ import annotations

from typing import Any

import openprogram
from crewai import Agent, Crew, Task
from crewai.crews.crew_output import CrewOutput
from crewai.tools import tool
from openprogram.integrations.crewai.fakes import scripted_llm

from tests.integrations.prompts import (
    MESSAGE_BOUND,
    assert_cut_inside,
    assert_stored_once,
    openai_shape,
    recorded_prompts,
    stored_rows,
)

SIZES: dict[int, int] = {}  # file n has SIZES[n] characters where given


def file_text(index: int, size: int = 1_500) -> str:
    """A deterministic file of ``size`` characters, different for every index."""
    line = f"def function_{index}(value):  # file {index}: returns value scaled by {index}\n"
    return (line * (size // len(line) + 1))[:size]


@tool("read_file")
def read_file(index: int) -> str:
    """Read file number ``index`` of the repository."""
    return file_text(index, SIZES.get(index, 1_500))


def read(store: openprogram.Store, files: int, **llm: Any) -> tuple[list[list[dict[str, Any]]], str]:
    """An agent reading ``files`` files, one a request, then answering: what its LLM was sent, and the session."""
    received: list[list[dict[str, Any]]] = []
    steps = [("read_file", {"index": n}) for n in range(files)]
    reader = scripted_llm(steps, final="All read.", native=True, received=received, **llm)
    agent = Agent(role="Reader", goal="read", backstory="offline", llm=reader, tools=[read_file], max_iter=files + 5)
    task = Task(description=f"Read files 0 to {files - 1}.", expected_output="what they hold", agent=agent)
    with openprogram.session_context(store=store) as h:
        output = Crew(agents=[agent], tasks=[task]).kickoff()
    assert isinstance(output, CrewOutput) and output.raw == "All read."
    return [[openai_shape(m) for m in messages] for messages in received], h.session_id


def test_every_request_of_a_31_request_task_is_recorded_as_sent(sqlite_store: openprogram.Store) -> None:
    sent, session_id = read(sqlite_store, 30)
    prompts = recorded_prompts(sqlite_store, session_id)
    assert len(prompts) == 31 and prompts == sent
    assert prompts[-1][-1] == {"role": "tool", "content": file_text(29), "tool_call_id": "call_29_0"}
    assert_stored_once(sqlite_store, session_id, prompts)


def test_a_2_mb_tool_result_is_cut_inside_its_message_and_the_messages_after_it_are_whole(
    sqlite_store: openprogram.Store,
) -> None:
    SIZES[3] = 2_000_000
    try:
        # A context window of 10M tokens: later CrewAI releases keep a tool result of over a quarter
        # of it as a file and send the model a note of it; the model is sent these 2 MB themselves.
        sent, session_id = read(sqlite_store, 6, context_window=10_000_000)
    finally:
        SIZES.clear()
    at = next(i for i, m in enumerate(sent[-1]) if m.get("tool_call_id") == "call_3_0")
    huge = {"role": "tool", "content": file_text(3, 2_000_000), "tool_call_id": "call_3_0"}
    assert sent[-1][at] == huge  # all of it went over the wire
    prompts = recorded_prompts(sqlite_store, session_id)
    for recorded, body in zip(prompts, sent, strict=True):
        assert len(recorded) == len(body)
        if len(body) > at:
            assert_cut_inside(recorded[at], huge)
        assert [m for i, m in enumerate(recorded) if i != at] == [m for i, m in enumerate(body) if i != at]
    assert all(len(row) <= MESSAGE_BOUND for row in stored_rows(sqlite_store, session_id))

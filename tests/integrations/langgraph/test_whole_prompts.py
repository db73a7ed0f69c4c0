"""Each model call keeps the whole prompt its model was sent, however long the conversation, stored once.

A ReAct agent (``create_react_agent``) whose offline model reads one file a step: what each
request's record reads back is compared with what the model received, translated to the one
message shape here, independently of the adapter.
"""

from __future__ import annotations

import json
import time
from typing import Any

import openprogram
import pytest
from langchain_core.messages import BaseMessage, HumanMessage, RemoveMessage, ToolMessage, trim_messages
from langgraph.prebuilt import create_react_agent

from tests.integrations.langgraph.fakes import FileReader, file_text, read_file_tool
from tests.integrations.prompts import (
    MESSAGE_BOUND,
    assert_cut_inside,
    assert_stored_once,
    recorded_prompts,
    stored_messages,
    stored_references,
    stored_rows,
)

pytestmark = pytest.mark.filterwarnings("ignore:create_react_agent has been moved")  # LangGraph 1.x's own notice

QUESTION = "Find where the answer is."
ROLES = {"human": "user", "ai": "assistant", "tool": "tool", "system": "system"}


def shape(message: BaseMessage) -> dict[str, Any]:
    """A LangChain message as the one message shape says it is recorded."""
    shaped: dict[str, Any] = {"role": ROLES[message.type], "content": message.content}
    calls = getattr(message, "tool_calls", None)
    if calls:
        shaped["tool_calls"] = [{"id": c["id"], "name": c["name"], "arguments": c["args"]} for c in calls]
    if isinstance(message, ToolMessage):
        shaped["tool_call_id"] = message.tool_call_id
    return shaped


def sent(model: FileReader) -> list[list[dict[str, Any]]]:
    """What the model received, request by request, in the one shape."""
    return [[shape(m) for m in request] for request in model.requests]


def run(
    store: openprogram.Store, steps: int, sizes: dict[int, int] | None = None, **agent: Any
) -> tuple[FileReader, str]:
    """Run the reading agent for ``steps`` files (``steps + 1`` requests) in a session of ``store``."""
    model = FileReader(steps=steps)
    graph = create_react_agent(model, [read_file_tool(sizes)], **agent)
    with openprogram.session_context(store=store) as handle:
        graph.invoke({"messages": [HumanMessage(QUESTION)]}, {"recursion_limit": 4 * steps + 10})
    assert len(model.requests) == steps + 1
    return model, handle.session_id


def test_every_request_of_a_40_request_conversation_is_recorded_as_the_model_received_it(
    sqlite_store: openprogram.Store,
) -> None:
    model, session_id = run(sqlite_store, 39, prompt="Read files until you find it.")
    prompts = recorded_prompts(sqlite_store, session_id)
    assert prompts == sent(model)
    assert [len(p) for p in prompts] == [2 + 2 * n for n in range(40)]  # the newest of each is there
    assert prompts[-1][-1] == {"role": "tool", "content": file_text(38), "tool_call_id": "call_38"}
    assert_stored_once(sqlite_store, session_id, prompts)


def test_a_history_trimmed_before_each_request_is_recorded_as_sent_and_shares_its_question(
    sqlite_store: openprogram.Store,
) -> None:
    def recent(state: dict[str, Any]) -> dict[str, Any]:
        # The question, then the last 6 messages from an AI message on: what the model is sent.
        window = trim_messages(state["messages"][1:], strategy="last", token_counter=len, max_tokens=6, start_on="ai")
        return {"llm_input_messages": [state["messages"][0], *window]}

    model, session_id = run(sqlite_store, 35, pre_model_hook=recent)
    prompts = recorded_prompts(sqlite_store, session_id)
    assert prompts == sent(model)
    assert max(len(p) for p in prompts) == 7 and all(p[0] == {"role": "user", "content": QUESTION} for p in prompts)
    assert_stored_once(sqlite_store, session_id, prompts)
    # Each later request refers to the one before for the question it repeats; the window is by message id.
    references = stored_references(sqlite_store, session_id)
    assert all(r is not None and r["keep"] >= 1 for r in references[1:])


def test_messages_removed_from_the_state_are_not_in_later_records_and_the_rest_is_stored_once(
    sqlite_store: openprogram.Store,
) -> None:
    def forget(state: dict[str, Any]) -> dict[str, Any]:
        # Keep the question and the last two steps in the graph's state itself.
        messages = state["messages"]
        return {"messages": [RemoveMessage(id=m.id) for m in messages[1:-4]]} if len(messages) > 5 else {}

    model, session_id = run(sqlite_store, 32, pre_model_hook=forget)
    prompts = recorded_prompts(sqlite_store, session_id)
    assert prompts == sent(model)
    assert [len(p) for p in prompts] == [1, 3, 5] + [5] * 30
    assert_stored_once(sqlite_store, session_id, prompts)


def test_a_500_request_conversation_keeps_its_last_request_whole_and_stores_each_message_once(
    sqlite_store: openprogram.Store,
) -> None:
    began = time.perf_counter()
    model, session_id = run(sqlite_store, 500)
    ran = time.perf_counter() - began
    prompts = recorded_prompts(sqlite_store, session_id)
    last = prompts[-1]
    assert len(prompts) == 501 and len(last) == 1_001
    assert last == sent(model)[-1]  # all 1,001 messages intact, in order, the newest included
    assert last[-1] == {"role": "tool", "content": file_text(499), "tool_call_id": "call_499"}
    rows = stored_rows(sqlite_store, session_id)
    assert len(rows) == len(set(rows))  # nothing stored twice
    stored = [json.dumps(m, sort_keys=True) for m in stored_messages(sqlite_store, session_id)]
    assert len(stored) == 1_001  # each distinct message once: the question, then 500 steps of two
    assert set(stored) == {json.dumps(m, sort_keys=True) for m in last}
    assert ran < 60, f"500 requests took {ran:.1f} s"  # about 8 s here: a request's cost must not grow with history


def test_a_2_mb_tool_result_is_cut_inside_its_message_and_the_messages_after_it_are_whole(
    sqlite_store: openprogram.Store,
) -> None:
    model, session_id = run(sqlite_store, 8, sizes={3: 2_000_000})
    huge = {"role": "tool", "content": file_text(3, 2_000_000), "tool_call_id": "call_3"}
    assert model.requests[-1][8].content == huge["content"]  # the model was sent all of it
    prompts = recorded_prompts(sqlite_store, session_id)
    for recorded, received in zip(prompts, sent(model), strict=True):
        assert len(recorded) == len(received)
        if len(received) > 8:  # every request from the one the result went out with
            assert_cut_inside(recorded[8], huge)
        assert [m for i, m in enumerate(recorded) if i != 8] == [m for i, m in enumerate(received) if i != 8]
    assert all(len(row) <= MESSAGE_BOUND for row in stored_rows(sqlite_store, session_id))

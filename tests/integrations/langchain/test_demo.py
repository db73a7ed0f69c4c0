"""``openprogram demo``'s LangChain part runs offline, with no LangGraph, and records a chain and a tool."""

from __future__ import annotations

from typing import Any

import openprogram
from openprogram.integrations.langchain.demo import run_demo

from tests.support import calls


def test_demo_records_the_chains_model_call_and_the_tool_under_the_turn(store: Any) -> None:
    lines: list[str] = []
    with openprogram.session_context(store=store) as h:
        run_demo(lines.append)
    assert lines == ["langchain: the chain planned 'distance_km from Oslo to Bergen'; the tool says 463 km"]
    records = calls(store, h.session_id)
    assert [(r.kind, r.name, r.framework) for r in records] == [
        ("turn", "main", None),
        ("llm", "FakeListChatModel", "langchain"),
        ("tool", "distance_km", "langchain"),
    ]
    assert {r.parent_id for r in records[1:]} == {records[0].call_id}
    assert records[1].inputs["messages"][1] == {"role": "user", "content": "How far is Bergen from Oslo?"}

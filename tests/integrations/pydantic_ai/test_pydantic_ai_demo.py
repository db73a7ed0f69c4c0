"""``openprogram demo``'s Pydantic AI part runs offline and records its agents, model requests and tools."""

from __future__ import annotations

import openprogram
import pytest
from openprogram.integrations.pydantic_ai.demo import run_demo
from openprogram.stores import Store

from tests.support import calls, tree


@pytest.mark.usefixtures("instrumented")
def test_demo_runs_offline_and_records_one_tree_in_the_demo_session(store: Store) -> None:
    lines: list[str] = []
    with openprogram.session_context(store=store) as h:
        run_demo(lines.append)
    assert lines == [
        "pydantic_ai: agent -> tools (parallel, sync and async) -> nested agent: "
        "sessions keep every call; context follows tasks",
        "pydantic_ai: streamed run: one tree per run, streamed",
        f"pydantic_ai: tools ran in session(s): {h.session_id}",
    ]
    assert tree(calls(store, h.session_id)) == [
        (0, "turn", "main"),
        (1, "agent", "researcher"),
        (2, "llm", "demo-model"),
        (2, "tool", "lookup"),
        (2, "tool", "fetch"),
        (2, "llm", "demo-model"),
        (2, "tool", "take_notes"),
        (3, "agent", "note-taker"),
        (4, "llm", "demo-model"),
        (2, "llm", "demo-model"),
        (1, "agent", "summarizer"),
        (2, "llm", "demo-model"),
    ]

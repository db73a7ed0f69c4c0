"""``openprogram demo``'s LlamaIndex part runs offline and records its agents, hand-off, tools and workflow."""

from __future__ import annotations

import openprogram
import pytest
from openprogram.integrations.llama_index.demo import run_demo
from openprogram.stores import Store

from tests.integrations.llama_index.helpers import without_steps
from tests.support import calls, tree


@pytest.mark.usefixtures("instrumented")
def test_demo_runs_offline_and_records_one_tree_in_the_demo_session(store: Store) -> None:
    lines: list[str] = []
    with openprogram.session_context(store=store) as h:
        run_demo(lines.append)
    assert lines == [
        "llama_index: agent workflow -> tools (sync and async) -> hand-off -> agent: "
        "sessions keep every call; context follows tasks",
        "llama_index: two-step workflow: Workflows: one tree per run",
        f"llama_index: tools and steps ran in session(s): {h.session_id}",
    ]
    shown = tree(calls(store, h.session_id))
    assert without_steps(shown) == [
        (0, "turn", "main"),
        (1, "agent", "AgentWorkflow"),
        (2, "agent", "researcher"),
        (3, "llm", "demo-model"),
        (3, "tool", "lookup"),
        (3, "tool", "fetch"),
        (3, "llm", "demo-model"),
        (3, "tool", "handoff"),
        (4, "agent", "writer"),
        (5, "llm", "demo-model"),
        (1, "flow", "Polish"),
    ]
    assert shown[-2:] == [(2, "node", "draft"), (2, "node", "polish")]

"""``openprogram demo``'s ADK part runs offline and records its agents, model requests and tools."""

from __future__ import annotations

import openprogram
import pytest
from openprogram.integrations.google_adk.demo import run_demo
from openprogram.stores import Store

from tests.support import calls, tree


@pytest.mark.usefixtures("instrumented")
def test_demo_runs_offline_and_records_one_tree_in_the_demo_session(store: Store) -> None:
    lines: list[str] = []
    with openprogram.session_context(store=store) as h:
        run_demo(lines.append)
    assert lines == [
        "google_adk: agent -> agent tool -> transfer -> tools (sync and async): "
        "sessions keep every call; context follows tasks",
        "google_adk: streamed run: one tree per run, streamed",
        f"google_adk: tools ran in session(s): {h.session_id}",
    ]
    assert tree(calls(store, h.session_id)) == [
        (0, "turn", "main"),
        (1, "agent", "coordinator"),
        (2, "llm", "demo-model"),
        (2, "tool", "note_taker"),
        (3, "agent", "note_taker"),
        (4, "llm", "demo-model"),
        (2, "llm", "demo-model"),
        (2, "tool", "transfer_to_agent"),
        (2, "agent", "researcher"),
        (3, "llm", "demo-model"),
        (3, "tool", "lookup"),
        (3, "tool", "fetch"),
        (3, "llm", "demo-model"),
        (1, "agent", "summarizer"),
        (2, "llm", "demo-model"),
    ]


def test_demo_is_registered_for_openprogram_demo() -> None:
    from openprogram.integrations import DEMOS, INTEGRATIONS

    assert DEMOS["google_adk"] == "openprogram.integrations.google_adk.demo"
    assert INTEGRATIONS["google_adk"].endswith(":GoogleADKIntegration")

"""A suite giving each test its own store: a no-session graph run records into the store in effect."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import openprogram
import pytest

from tests.integrations.langgraph.fakes import add, agent_graph, scripted_model, seen, tool_calls
from tests.support import by_kind


def _graph() -> Any:
    from langchain_core.messages import AIMessage

    return agent_graph(scripted_model(tool_calls(("add", {"a": 1, "b": 2})), AIMessage("3")), [add])


def test_a_no_session_run_records_into_the_store_set_for_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    seen.clear()
    stores = []
    for name in ("first-test", "second-test"):  # as a suite's per-test fixture sets it
        url = f"sqlite:///{tmp_path / name / 'sessions.db'}"
        monkeypatch.setenv("OPENPROGRAM_STORE", url)
        _graph().invoke({"messages": [("user", "1 + 2?")]})
        stores.append(openprogram.open_store(url))
    openprogram.flush()
    first, second = ([s.session_id for s in store.list_sessions()] for store in stores)
    assert len(first) == 1 and len(second) == 1, (first, second)
    assert first != second
    for store, [session_id] in zip(stores, (first, second), strict=True):
        records = store.list_calls(session_id)
        assert [c.name for c in by_kind(records, "graph")] == ["LangGraph"]
        assert [c.name for c in by_kind(records, "tool")] == ["add"]
    assert [sid for where, sid in seen if where == "tool:add"] == [first[0], second[0]]

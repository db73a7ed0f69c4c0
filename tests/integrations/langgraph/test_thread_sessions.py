"""With no session open, a thread's runs share a session only when they share its checkpointer's saved state."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import openprogram
import pytest
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, StateGraph
from langgraph.types import RetryPolicy

from tests.integrations.langgraph.fakes import Log, one_node_graph, seen
from tests.support import attributes, by_kind, calls


def setup_function() -> None:
    seen.clear()


def _sessions() -> list[str | None]:
    return [sid for _, sid in seen]


_PROGRAM = textwrap.dedent(
    """
    import json, sys
    import openprogram
    from langgraph.checkpoint.memory import InMemorySaver
    sys.path[:0] = [{root!r}]  # the repository, for the tests package
    from tests.integrations.langgraph.fakes import one_node_graph, seen
    openprogram.instrument("langgraph")
    if sys.argv[1] == "memory":
        graph = one_node_graph(InMemorySaver())
        for _ in range(2):
            graph.invoke({{"log": []}}, {{"configurable": {{"thread_id": "1"}}}})
    else:
        from langgraph.checkpoint.sqlite import SqliteSaver
        with SqliteSaver.from_conn_string(sys.argv[2]) as saver:
            one_node_graph(saver).invoke({{"log": []}}, {{"configurable": {{"thread_id": "1"}}}})
    openprogram.flush()
    print(json.dumps([sid for _, sid in seen]))
    """
)


def _program(tmp_path: Path, *args: str) -> list[str]:
    script = tmp_path / "program.py"
    script.write_text(_PROGRAM.format(root=str(Path(__file__).parents[3])))
    done = subprocess.run(
        [sys.executable, str(script), *args], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    sessions: list[str] = json.loads(done.stdout.strip().splitlines()[-1])
    return sessions


def test_two_programs_with_in_memory_savers_and_the_same_thread_id_get_two_sessions(tmp_path: Path) -> None:
    first, second = _program(tmp_path, "memory"), _program(tmp_path, "memory")
    assert first[0] == first[1]  # one program's thread: one conversation
    assert second[0] == second[1]
    assert first[0] != second[0]  # was one session, "langgraph-1", for both


def test_one_sqlite_thread_continues_its_session_in_another_process(tmp_path: Path) -> None:
    checkpoints = str(tmp_path / "checkpoints.db")
    first, second = _program(tmp_path, "sqlite", checkpoints), _program(tmp_path, "sqlite", checkpoints)
    assert first == second
    records = openprogram.open_store().list_calls(first[0])
    assert [c.kind for c in records if c.kind in ("turn", "graph")] == ["turn", "graph", "turn", "graph"]


def test_two_sqlite_files_with_the_same_thread_id_are_two_sessions(tmp_path: Path) -> None:
    first = _program(tmp_path, "sqlite", str(tmp_path / "a.db"))
    second = _program(tmp_path, "sqlite", str(tmp_path / "b.db"))
    assert first != second  # was one session, "langgraph-1", for both


def test_two_in_memory_savers_in_one_process_are_two_conversations() -> None:
    config = {"configurable": {"thread_id": "1"}}
    one, other = one_node_graph(InMemorySaver()), one_node_graph(InMemorySaver())
    one.invoke({"log": []}, config)
    other.invoke({"log": []}, config)
    one.invoke({"log": []}, config)
    first, second, again = _sessions()
    assert first == again != second and None not in (first, second)


def test_a_state_update_between_runs_keeps_the_thread_in_its_session() -> None:
    graph = one_node_graph(InMemorySaver())
    config = {"configurable": {"thread_id": "updated"}}
    graph.invoke({"log": []}, config)
    graph.update_state(config, {"log": ["edited by a human"]})  # a checkpoint no recorded run ended at
    graph.invoke({"log": []}, config)
    first, second = _sessions()
    assert first == second


async def test_async_runs_find_their_thread_by_its_saved_state() -> None:
    config = {"configurable": {"thread_id": "1"}}
    one, other = one_node_graph(InMemorySaver()), one_node_graph(InMemorySaver())
    await one.ainvoke({"log": []}, config)
    await one.ainvoke({"log": []}, config)
    await other.ainvoke({"log": []}, config)
    first, again, second = _sessions()
    assert first == again != second and None not in (first, second)


def test_runs_without_a_checkpointer_share_the_implicit_session() -> None:
    graph = one_node_graph()
    graph.invoke({"log": []}, {"configurable": {"thread_id": "1"}})  # nothing is kept: no conversation
    one_node_graph().invoke({"log": []}, {"configurable": {"thread_id": "2"}})
    graph.invoke({"log": []})
    implicit = openprogram.implicit_session()
    assert implicit is not None
    assert _sessions() == [implicit.session_id] * 3


def test_a_thread_session_is_announced_once_at_warning(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="openprogram")
    graph = one_node_graph(InMemorySaver())
    for _ in range(3):
        graph.invoke({"log": []}, {"configurable": {"thread_id": "announced"}})
    (session_id,) = set(_sessions())
    assert session_id is not None
    said = [r for r in caplog.records if session_id in r.getMessage()]
    assert [r.levelno for r in said] == [logging.WARNING]  # once per session, not once per run
    message = said[0].getMessage()
    assert f"openprogram show {session_id}" in message and "thread 'announced'" in message
    assert "session_context" in message and "configure(no_session=" in message


def test_entrypoints_are_named_after_their_functions(store: Any) -> None:
    from langgraph.func import entrypoint

    @entrypoint()
    def plan(topic: str) -> str:
        return f"plan {topic}"

    @entrypoint()
    def review(draft: str) -> str:
        return f"reviewed {draft}"

    with openprogram.session_context(store=store) as h:
        review.invoke(plan.invoke("x"))
    assert [c.name for c in by_kind(calls(store, h.session_id), "graph")] == ["plan", "review"]  # was "LangGraph"


def test_retried_attempts_are_numbered_with_no_session_open() -> None:
    tries: list[int] = []

    def flaky(state: Log) -> dict[str, Any]:
        tries.append(1)
        if len(tries) < 3:
            raise ConnectionError("try again")
        return {"log": ["ok"]}

    g = StateGraph(Log)
    g.add_node("flaky", flaky, retry_policy=RetryPolicy(max_attempts=3, initial_interval=0.0, jitter=False))
    g.add_edge(START, "flaky")
    g.compile().invoke({"log": []})
    implicit = openprogram.implicit_session()
    assert implicit is not None
    nodes = [c for c in calls(openprogram.open_store(), implicit.session_id) if c.name == "flaky"]
    assert [(attributes(n).get("attempt"), n.status) for n in nodes] == [(1, "error"), (2, "error"), (3, "ok")]

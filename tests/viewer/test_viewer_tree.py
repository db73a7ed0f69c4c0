"""The session tree the viewer serves, the cache that keeps it fresh, and one call's captures from each store."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import openprogram
import pytest
from openprogram._runtime import process_owner
from openprogram._viewer import SessionTree, TreeCache, find_captures
from openprogram.stores import CallRow, Store
from openprogram.stores.memory import MemoryStore

from tests.stores.store_support import Backends

T0 = 1_800_000_000.0


def _row(
    call_id: str,
    parent: str | None,
    kind: str = "tool",
    name: str = "",
    *,
    at: float = 0.0,
    took: float | None = 1.0,
    status: str = "ok",
    error: str | None = None,
    attributes: Any = None,
    inputs: Any = None,
    output: Any = None,
    session: str = "s1",
) -> CallRow:
    encode = lambda value: None if value is None else json.dumps(value)  # noqa: E731
    return (
        call_id,
        session,
        "turn-1",
        parent,
        kind,
        name or call_id,
        None,
        status,
        encode(inputs),
        encode(output),
        error,
        encode(attributes),
        T0 + at,
        None if took is None else T0 + at + took,
        process_owner(),
    )


def _usage(total: int) -> dict[str, Any]:
    return {"model": "m", "usage": {"input_tokens": total - 1, "output_tokens": 1, "total_tokens": total}}


ROWS = [
    _row("turn", None, "turn", "main", took=10.0),
    _row("agent", "turn", "agent", "Planner", at=1.0, took=5.0),
    _row("llm-1", "agent", "llm", "gpt", at=1.5, attributes=_usage(30)),
    _row("tool", "agent", "tool", "lookup", at=2.0, status="error", error="ValueError: nope\nTraceback ..."),
    _row("llm-2", "agent", "llm", "gpt", at=3.0, attributes=_usage(12)),
    _row("stray", "a-call-of-another-session", "tool", "orphan", at=4.0),
]


def test_children_descendants_tokens_and_errors_below_are_counted_for_every_call() -> None:
    tree = SessionTree("s1", ROWS)
    turn, agent = tree.index["turn"], tree.index["agent"]
    assert [tree.ids[i] for i in tree.roots] == ["turn", "stray"]  # an unknown parent makes a root
    assert [tree.ids[i] for i in tree.children[agent]] == ["llm-1", "tool", "llm-2"]
    assert (tree.descendants[turn], tree.descendants[agent]) == (4, 3)
    assert (tree.tokens[turn], tree.tokens[agent], tree.tokens[tree.index["llm-1"]]) == (42, 42, 30)
    assert (tree.errors_below[turn], tree.errors_below[agent], tree.errors_below[tree.index["tool"]]) == (1, 1, 0)
    assert [tree.ids[i] for i in tree.error_calls] == ["tool"]


def test_a_node_is_offset_within_its_turn_and_names_its_model_usage_and_first_error_line() -> None:
    tree = SessionTree("s1", ROWS)
    node = tree.node(tree.index["tool"], now=T0 + 100)
    assert (node["offset"], node["duration"], node["span"]) == (2.0, 1.0, 10.0)
    assert node["error"] == "ValueError: nope" and "llm" not in node
    llm = tree.node(tree.index["llm-1"], now=T0 + 100)
    assert llm["llm"] == {"model": "m", "usage": _usage(30)["usage"], "tokens": 30}
    assert tree.node(tree.index["turn"], now=T0)["turn_number"] == 1


def test_a_child_recorded_before_its_parent_is_still_counted_under_it() -> None:
    early_child = _row("child", "parent", at=0.5)
    tree = SessionTree("s1", [early_child, _row("parent", None, "turn", at=1.0)])
    assert [tree.ids[i] for i in tree.roots] == ["parent"]
    assert tree.descendants[tree.index["parent"]] == 1


def test_children_come_in_pages_and_nest_to_the_depth_asked() -> None:
    rows = [_row("turn", None, "turn", took=100.0)] + [_row(f"c{i}", "turn", at=i * 0.1) for i in range(450)]
    rows += [_row("grandchild", "c3", at=0.35, took=0.01)]
    tree = SessionTree("s1", rows)
    page = tree.children_of(tree.index["turn"], offset=200, limit=200, now=T0)
    assert (page["total"], page["offset"], len(page["nodes"]), page["nodes"][0]["id"]) == (450, 200, 200, "c200")
    nested = tree.children_of(None, 0, 1, now=T0, depth=3)
    (turn,) = nested["nodes"]
    assert len(turn["page"]["nodes"]) == 200  # a nested page has the usual size, whatever the top limit
    assert [n["id"] for n in turn["page"]["nodes"][3]["page"]["nodes"]] == ["grandchild"]


def test_a_path_names_each_call_from_the_root_with_its_position_among_siblings() -> None:
    rows = (
        [_row("turn", None, "turn")] + [_row(f"c{i}", "turn", at=i) for i in range(300)] + [_row("x", "c250", at=251)]
    )
    tree = SessionTree("s1", rows)
    assert tree.path(tree.index["x"]) == [
        {"id": "turn", "position": 0},
        {"id": "c250", "position": 250},
        {"id": "x", "position": 0},
    ]


def test_search_matches_names_kinds_models_errors_and_ids_in_any_case() -> None:
    tree = SessionTree("s1", ROWS)

    def found(text: str) -> list[str]:
        return [tree.ids[i] for i in tree.search(text, 10)[1]]

    assert found("LOOKUP") == ["tool"]
    assert found("valueerror") == ["tool"]
    assert found("gpt") == ["llm-1", "llm-2"]
    assert found("AGENT") == ["agent"]
    assert found("stray") == ["stray"]
    assert tree.search("gpt", 1) == (2, [tree.index["llm-1"]])  # the count of all, the first ones listed


def test_the_summary_names_the_first_call_of_the_first_turn_and_the_worst_status() -> None:
    tree = SessionTree("s1", ROWS)
    summary = tree.summary()
    assert summary["root"] == {"id": "agent", "kind": "agent", "name": "Planner"}
    assert (summary["status"], summary["errors"], summary["turns"], summary["duration"]) == ("ok", 1, 1, 10.0)
    running = SessionTree("s1", [_row("turn", None, "turn", took=None, status="running")])
    assert (running.summary()["status"], running.summary()["duration"]) == ("running", None)
    failed = SessionTree("s1", [_row("turn", None, "turn", status="error", error="boom")])
    assert failed.summary()["status"] == "error"
    assert SessionTree("empty", []).summary()["root"] is None


def test_the_version_changes_when_a_call_is_added_ends_or_fails() -> None:
    base = [_row("turn", None, "turn", took=None, status="running"), _row("a", "turn", took=None, status="running")]
    versions = {
        SessionTree("s1", base).version,
        SessionTree("s1", [*base, _row("b", "turn", at=2)]).version,
        SessionTree("s1", [base[0], _row("a", "turn")]).version,
        SessionTree("s1", [base[0], _row("a", "turn", status="error", error="x")]).version,
    }
    assert len(versions) == 4


class CountingStore(MemoryStore):
    """A memory store that counts how often a session's calls are read."""

    def __init__(self) -> None:
        super().__init__()
        self.reads = 0
        self.changed_reads = 0

    def _iter_call_rows(self, session_id: str, captures: bool = True) -> Iterator[CallRow]:
        self.reads += 1
        return super()._iter_call_rows(session_id, captures)

    def _changed_call_rows(
        self, session_id: str, calls: Sequence[tuple[str, float]], since: float
    ) -> Iterator[CallRow]:
        self.changed_reads += 1
        return super()._changed_call_rows(session_id, calls, since)


def test_the_cache_reads_a_tree_once_and_again_only_when_its_session_changed() -> None:
    store = CountingStore()
    clock = [0.0]
    cache = TreeCache(store, recheck=1.0, clock=lambda: clock[0])
    store.write([("s1", "main", T0, T0)], ROWS[:2])
    first = cache.get("s1")
    assert first is not None and cache.get("s1") is first and store.reads == 1
    clock[0] = 5.0
    assert cache.get("s1") is first and store.reads == 1  # listed the same: not read again
    store.write([("s1", "main", T0, T0 + 1)], [ROWS[2]])
    assert cache.get("s1") is first  # trusted for `recheck` seconds
    clock[0] = 10.0
    second = cache.get("s1")
    assert second is not first and second is not None and len(second) == 3 and store.reads == 2
    assert cache.get("unknown") is None


def test_the_cache_rereads_what_changed_in_a_tree_with_running_calls_each_time_it_is_rechecked() -> None:
    store = CountingStore()
    clock = [0.0]
    cache = TreeCache(store, recheck=1.0, clock=lambda: clock[0])
    store.write([("s1", "main", T0, T0)], [_row("turn", None, "turn", took=None, status="running")])
    assert cache.get("s1") is not None
    store.write([], [_row("turn", None, "turn")])  # its end changes neither the update time nor the count
    clock[0] = 2.0
    tree = cache.get("s1")
    assert tree is not None and tree.statuses == ("ok",) and (store.reads, store.changed_reads) == (1, 1)


def test_the_cache_keeps_trees_up_to_a_number_of_calls_in_all() -> None:
    store = MemoryStore()
    cache = TreeCache(store, max_calls=5, recheck=0.0)
    for session in ("a", "b", "c"):
        store.write([(session, "main", T0, T0)], [_row(f"{session}{i}", None, session=session) for i in range(2)])
        cache.get(session)
    assert list(cache._entries) == ["b", "c"]


@pytest.fixture
def backends(tmp_path: Path) -> Iterator[Backends]:
    made = Backends(tmp_path)
    yield made
    made.cleanup()


@pytest.mark.parametrize("backend", ["memory", "sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def test_one_calls_captures_are_found_in_every_store(backends: Backends, backend: str) -> None:
    store: Store = openprogram.open_store(backends.url(backend))
    wanted = _row(
        "llm-1",
        "turn",
        "llm",
        inputs={"messages": [{"role": "user", "content": "hi"}]},
        output={"role": "assistant", "content": "hello"},
        attributes=_usage(3),
        at=time.time() % 1000,
    )
    other_session = _row("llm-1b", None, session="s2", inputs="other")
    store.write(
        [("s1", "main", T0, T0), ("s2", "main", T0, T0)],
        [_row("turn", None, "turn"), wanted, _row("failed", "turn", error="Boom", status="error"), other_session],
    )
    assert find_captures(store, "s1", "llm-1", wanted[12]) == (
        {"messages": [{"role": "user", "content": "hi"}]},
        {"role": "assistant", "content": "hello"},
        None,
        _usage(3),
    )
    assert find_captures(store, "s1", "failed", T0)[2] == "Boom"  # type: ignore[index]
    assert find_captures(store, "s1", "llm-1b", T0) is None  # another session's call
    assert find_captures(store, "s1", "nothing", T0) is None

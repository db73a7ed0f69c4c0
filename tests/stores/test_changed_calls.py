"""Re-reading what changed in a running session: the calls running at the last read and those started since."""

from __future__ import annotations

import json
import os

import openprogram
from openprogram.stores import CallRow, Store


def _call(
    call_id: str,
    started: float,
    *,
    status: str = "ok",
    kind: str = "tool",
    owner: str = "",
    attributes: str | None = None,
) -> CallRow:
    return (
        call_id,
        "s1",
        "turn1",
        None if call_id == "turn" else "turn",
        kind,
        call_id,
        None,
        status,
        '{"big": "input"}',
        '"output"',
        None,
        attributes,
        started,
        None if status == "running" else started + 0.5,
        owner or openprogram._runtime.process_owner(),
    )


def _changed(store: Store, calls: list[tuple[str, float]], since: float) -> dict[str, CallRow]:
    return {row[0]: row for row in store.iter_changed_tree_rows("s1", calls, since)}


def test_changed_tree_rows_are_the_calls_running_at_the_last_read_and_those_started_since(store: Store) -> None:
    usage = json.dumps({"model": "m", "usage": {"total_tokens": 7}})
    store.write(
        [("s1", "a", 1.0, 1.0)],
        [
            _call("turn", 1.0, status="running"),
            _call("early", 2.0),
            _call("slow", 3.0, status="running"),
            _call("late", 4.0),
            _call("model", 5.0, kind="llm", attributes=usage),
        ],
    )
    another_session = ("elsewhere", "other", *_call("elsewhere", 9.0)[2:])
    store.write([("other", "a", 1.0, 1.0)], [another_session])  # type: ignore[list-item]
    found = _changed(store, [("turn", 1.0), ("slow", 3.0)], since=4.0)
    assert sorted(found) == ["late", "model", "slow", "turn"]
    # Tree rows: no captures, but a model call's attributes.
    assert {(row[8], row[9]) for row in found.values()} == {(None, None)}
    assert found["model"][11] == usage and found["late"][11] is None
    assert _changed(store, [], since=100.0) == {}


def test_a_running_call_of_a_dead_owner_is_reread_as_interrupted(store: Store) -> None:
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    os.waitpid(pid, 0)
    dead = f"{openprogram._runtime.process_owner().split(':')[0]}:{pid}:x"
    store.write([("s1", "a", 1.0, 1.0)], [_call("orphan", 1.0, status="running", owner=dead)])
    assert _changed(store, [("orphan", 1.0)], since=2.0)["orphan"][7] == "interrupted"

"""Records this library never writes (imported, written by hand or by another program into a shared store):
every page and endpoint of the viewer answers them, fast, skipping or escaping what it cannot use."""

from __future__ import annotations

import json
import math
import sqlite3
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import openprogram
from openprogram._runtime import process_owner
from openprogram.stores import CallRows, Store
from openprogram.stores.memory import MemoryStore

SESSION = "hostile"


def _get(base: str, path: str) -> tuple[int, bytes]:
    """Status and body of a GET, failing the test if no answer comes within 10 seconds."""
    try:
        with urllib.request.urlopen(base.rstrip("/") + path, timeout=10) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


def _store_with_rows(path: Path, rows: list[dict[str, Any]]) -> Store:
    """A SQLite store holding ``rows`` of session SESSION, inserted with plain SQL (no writer checks them)."""
    store = openprogram.open_store(f"sqlite:///{path}")
    store.write([("normal", "main", 1.0, 2.0)], [])  # creates the schema
    with sqlite3.connect(path) as db:
        db.execute("INSERT INTO sessions VALUES (?, 'main', 1.0, 2.0)", (SESSION,))
        for row in rows:
            call = {"parent": "turn", "kind": "tool", "name": "step", "status": "ok", "start": 1.5, "end": 1.6, **row}
            db.execute(
                "INSERT INTO calls VALUES (?, ?, 'turn', ?, ?, ?, NULL, ?, ?, ?, ?, ?, ?, ?, 'elsewhere:1:x')",
                (
                    call["id"],
                    SESSION,
                    call["parent"],
                    call["kind"],
                    call["name"],
                    call["status"],
                    call.get("inputs"),
                    call.get("output"),
                    call.get("error"),
                    call.get("attributes"),
                    call["start"],
                    call["end"],
                ),
            )
    return store


def _every_endpoint(base: str, session_id: str, call_ids: list[str]) -> dict[str, tuple[int, bytes]]:
    paths = ["/api/sessions", f"/sessions/{session_id}", f"/api/sessions/{session_id}"]
    for call_id in call_ids:
        quoted = urllib.parse.quote(call_id)
        paths += [
            f"/api/sessions/{session_id}/call?id={quoted}",
            f"/api/sessions/{session_id}/path?id={quoted}",
            f"/api/sessions/{session_id}/children?parent={quoted}&depth=12",
        ]
    for rest in ("children?depth=12", "conversation", "conversation?offset=0", "search?q=s", "state"):
        paths.append(f"/api/sessions/{session_id}/{rest}")
    paths.append(f"/api/summaries?id={session_id}")
    return {path: _get(base, path) for path in paths}


def test_a_call_that_is_its_own_parent_or_in_a_parent_cycle_is_shown_once_and_every_page_answers(
    tmp_path: Path, ui_process: Callable[[Store], str]
) -> None:
    usage = json.dumps({"model": "m", "usage": {"total_tokens": 5}})
    store = _store_with_rows(
        tmp_path / "cycles.db",
        [
            {"id": "turn", "parent": None, "kind": "turn", "name": "main", "start": 1.0, "end": 2.0},
            {"id": "self", "parent": "self", "kind": "llm", "attributes": usage, "status": "error", "error": "x"},
            {"id": "a", "parent": "b", "start": 1.6},
            {"id": "b", "parent": "a", "start": 1.7},
            {"id": "below", "parent": "a", "kind": "llm", "attributes": usage, "start": 1.8},
        ],
    )
    base = ui_process(store)  # a process of its own: a viewer stuck in a cycle is killed with it
    answers = _every_endpoint(base, SESSION, ["turn", "self", "a", "b", "below"])
    assert {path: status for path, (status, _) in answers.items() if status != 200} == {}
    roots = json.loads(answers[f"/api/sessions/{SESSION}"][1])["roots"]["nodes"]
    assert sum(1 + root["descendants"] for root in roots) == 5  # each call once
    assert {root["id"] for root in roots} == {"turn", "self", "a"}  # a cycle is cut at its first call
    path = json.loads(answers[f"/api/sessions/{SESSION}/path?id=below"][1])["path"]
    assert [step["id"] for step in path] == ["a", "below"]
    assert _get(base, "/api/sessions/normal")[0] == 200  # and every other session still answers


def test_hostile_captures_times_kinds_and_token_counts_are_answered_on_every_page(
    tmp_path: Path, serve: Callable[[Store], str]
) -> None:
    huge = json.dumps({"model": "m", "usage": {"total_tokens": 2**70, "input_tokens": 10**300}})
    rows = [
        {"id": "turn", "parent": None, "kind": "turn", "name": "main", "start": 1.0, "end": 2.0},
        {"id": "bad-json", "inputs": "{not json", "output": "[1,", "attributes": "{bad"},
        {"id": "bad-model", "kind": "llm", "attributes": "{bad", "inputs": '{"messages": [', "output": "{"},
        {"id": "nul\x00id", "name": "na\x00me", "error": "boom\x00", "inputs": json.dumps({"a": "\x00"})},
        {"id": "far", "start": 1e308, "end": math.inf},
        {"id": "before", "start": -1e308, "end": None, "status": "running"},
        {"id": "text-times", "start": "yesterday", "end": "today"},
        {"id": "unknown-kind", "kind": "<b>weird</b>", "name": "<script>alert(1)</script>"},
        {"id": "tokens", "kind": "llm", "attributes": huge},
        {"id": "deep", "inputs": "[" * 100_000 + "]" * 100_000, "output": "{" * 50_000},
    ]
    base = serve(_store_with_rows(tmp_path / "hostile.db", rows))
    answers = _every_endpoint(base, SESSION, [row["id"] for row in rows])
    assert {path: status for path, (status, _) in answers.items() if status != 200} == {}
    for path, (_, body) in answers.items():
        if path.startswith("/api/"):
            json.loads(body)  # strict JSON: no NaN, no Infinity
    tree = json.loads(answers[f"/api/sessions/{SESSION}/children?parent=turn&depth=12"][1])
    nodes = {node["id"]: node for node in tree["nodes"]}
    assert set(nodes) == {row["id"] for row in rows[1:]}
    assert nodes["text-times"]["started_at"] == nodes["far"]["started_at"] == 0.0  # not a time: drawn at 0
    assert nodes["far"]["duration"] is None
    assert nodes["tokens"]["tokens"] == 0  # not a token count (the stores count 0 to 10**15): left out
    deep = json.loads(answers[f"/api/sessions/{SESSION}/call?id=deep"][1])
    # Nested too deep to decode: shown as the stored text.
    assert isinstance(deep["inputs"], str) and deep["inputs"].startswith("[[[") and deep["node"]["id"] == "deep"


def test_a_store_handing_back_values_of_the_wrong_type_does_not_break_a_page(serve: Callable[[Store], str]) -> None:
    store = MemoryStore()  # keeps whatever it is given, unchecked
    owner = process_owner()
    odd: list[Any] = [
        ("turn", SESSION, "t", None, "turn", "main\ud800", None, "ok", None, None, None, None, 1.0, 2.0, owner),
        (
            "bytes",
            SESSION,
            "t",
            "turn",
            b"tool",
            b"\xff\xfe",
            7,
            "error",
            '"\ud800"',
            None,
            b"err",
            None,
            1.1,
            1.2,
            owner,
        ),
        (
            "nan",
            SESSION,
            "t",
            "turn",
            "tool",
            None,
            None,
            "ok",
            None,
            None,
            None,
            {"not": "text"},
            math.nan,
            1.3,
            owner,
        ),
        ("big", SESSION, "t", 12, "llm", "m", None, "ok", None, None, None, None, 1.4, 10**400, owner),
    ]
    store.write([(SESSION, "main", 1.0, 2.0)], odd)
    base = serve(store)
    answers = _every_endpoint(base, SESSION, ["turn", "bytes", "nan", "big"])
    assert {path: status for path, (status, _) in answers.items() if status != 200} == {}
    names = {n["id"]: n["name"] for n in json.loads(answers[f"/api/sessions/{SESSION}/children?depth=12"][1])["nodes"]}
    assert names["turn"] == "main\ud800"


def test_a_session_whose_calls_the_store_cannot_read_leaves_the_list_of_sessions_answering(
    tmp_path: Path, serve: Callable[[Store], str]
) -> None:
    path = tmp_path / "undecodable.db"
    store = _store_with_rows(path, [{"id": "turn", "parent": None, "kind": "turn", "start": 1.0, "end": 2.0}])
    with sqlite3.connect(path) as db:  # a name that is not UTF-8: SQLite keeps it, Python cannot decode it
        db.execute("UPDATE calls SET name = CAST(X'FF00FE' AS TEXT) WHERE session_id = ?", (SESSION,))
    base = serve(store)
    status, body = _get(base, "/api/sessions")
    assert status == 200
    listed = {s["session_id"]: s for s in json.loads(body)["sessions"]}
    assert set(listed) == {SESSION, "normal"} and listed["normal"]["summary"]["status"] == "ok"
    assert _get(base, f"/api/summaries?id={SESSION}&id=normal")[0] == 200


def test_a_chain_of_calls_nested_fifty_thousand_deep_answers_every_page_in_seconds(
    tmp_path: Path, ui_process: Callable[[Store], str]
) -> None:
    store = openprogram.open_store(f"sqlite:///{tmp_path / 'deep.db'}")
    usage = json.dumps({"model": "m", "usage": {"total_tokens": 1}})
    rows = CallRows()
    depth = 50_000
    for k in range(depth):  # each call the child of the one before; half of them model calls, some failing
        kind = "turn" if k == 0 else ("llm" if k % 2 else "tool")
        status = "error" if k % 1000 == 999 else "ok"
        parent = f"c{k - 1:05}" if k else None
        rows.append((f"c{k:05}", SESSION, "t", parent, kind, "step", None, status, None, None, None,
                     usage if kind == "llm" else None, 1.0 + k * 1e-5, 3.0 - k * 1e-5, process_owner()))  # fmt: skip
    store.write([(SESSION, "main", 1.0, 3.0)], rows)
    base = ui_process(store)
    answers = _every_endpoint(base, SESSION, ["c00000", f"c{depth - 1:05}"])
    assert {path: status for path, (status, _) in answers.items() if status != 200} == {}
    (root,) = json.loads(answers[f"/api/sessions/{SESSION}"][1])["roots"]["nodes"]
    assert (root["descendants"], root["tokens"], root["errors_below"]) == (depth - 1, depth // 2, depth // 1000)
    path = json.loads(answers[f"/api/sessions/{SESSION}/path?id=c{depth - 1:05}"][1])["path"]
    assert len(path) == depth

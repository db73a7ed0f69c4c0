"""Readers never fail for what a store holds: rows another process wrote into a shared store, with
SQL of its own, answer every read (skipped or escaped where they cannot be used), and the sessions
beside them are listed as before."""

from __future__ import annotations

import json
import math
import sqlite3
from collections.abc import Sequence
from typing import Any

import openprogram
import pytest
from openprogram.stores import CallRow, EffectRow, Store
from openprogram.stores.memory import MemoryStore
from openprogram.stores.sqlite import SQLiteStore
from store_support import postgres_base_url

LATEST = 253_402_300_799.0  # the end of year 9999: a time no reader gets past
NAN, INF = float("nan"), float("inf")


def _call(
    call_id: str,
    *,
    kind: str = "llm",
    attributes: str | None = None,
    inputs: str | None = '{"messages": []}',
    output: str | None = '"x"',
    status: str = "ok",
    started: float = 1.0,
    ended: float | None = 2.0,
    session: str = "bad",
) -> CallRow:
    return (call_id, session, "turn1", None, kind, "m", None, status, inputs, output, None, attributes,
            started, ended, "elsewhere:1:x")  # fmt: skip


# Model calls' attributes as another process (or an LLM gateway passing names on) may leave them,
# and the tokens each counts: a count is a whole number from 0 below 10**15, else absent.
_ATTRIBUTES = {
    "nul": (r'{"model": "a\u0000b", "provider": "\ud800", "usage": {"input_tokens": 2, "total_tokens": 5}}', 5),
    "huge": ('{"usage": {"total_tokens": 9223372036854775808, "input_tokens": 1e400, "output_tokens": -1}}', 0),
    "odd": ('{"usage": {"total_tokens": "12", "input_tokens": 1.5, "output_tokens": 7}}', 7),
    "nan": ('{"usage": {"total_tokens": NaN, "input_tokens": 3}}', 0),
    "broken": ('{"usage": {"total_tokens": 4', 0),
    "array": ("[1, 2]", 0),
    "usage-list": ('{"usage": [4]}', 0),
    "none": (None, 0),
}
_DEEP = "[" * 100_000 + "]" * 100_000  # valid JSON, nested deeper than any decoder recurses


def _hostile_calls(backend: str) -> list[CallRow]:
    rows = [_call(call_id, attributes=text) for call_id, (text, _) in _ATTRIBUTES.items()]
    rows += [
        _call("deep", kind="tool", inputs=_DEEP, output="not json {"),
        _call("attempt-surrogate", kind="tool", attributes=r'{"attempt": 2, "note": "\ud800"}'),
        _call("attempt-broken", kind="tool", attributes='{"attempt": 2'),
        _call("kind", kind="kind-?", status="exploded", inputs=None, output=None),
        _call("texts", kind="tool", output='{"$text": "t-missing"}', inputs='{"$text": 5}'),
        _call("self", inputs='{"messages": {"$prompt": {"after": "self", "keep": 1000000000, "add": ["zz"]}}}'),
        _call("inf", kind="tool", started=INF, ended=INF),
        _call("absurd", kind="tool", started=1e300, ended=-5.0),
        _call("running", kind="tool", status="running", ended=None),
    ]
    if backend == "postgresql":  # SQLite keeps no NaN (it stores NULL, refused in a NOT NULL column)
        rows.append(_call("nan-time", kind="tool", started=NAN, ended=NAN))
    return rows


def _insert(store: Store, table: str, rows: Sequence[tuple[Any, ...]]) -> None:
    """Rows written with SQL of another process's own (the memory store: through write, which checks nothing)."""
    if isinstance(store, MemoryStore):
        if table == "calls":
            store.write([], rows)  # type: ignore[arg-type]
        elif table == "sessions":
            store.write(rows, [])  # type: ignore[arg-type]
        elif table == "messages":
            store.write([], [], [], rows)  # type: ignore[arg-type]
        elif table == "effects":
            store.add_effects(rows)  # type: ignore[arg-type]
        else:
            for owner, at in rows:
                store.heartbeat(owner, at)
        return
    marks = ", ".join(["?"] * len(rows[0]))
    if isinstance(store, SQLiteStore):
        with sqlite3.connect(store.path) as conn:
            conn.executemany(f"INSERT INTO {table} VALUES ({marks})", rows)
        return
    import psycopg

    with psycopg.connect(postgres_base_url(), autocommit=True) as conn, conn.cursor() as cursor:
        cursor.executemany(f'INSERT INTO "{store.schema}".{table} VALUES ({marks.replace("?", "%s")})', rows)  # type: ignore[attr-defined]


def _effect(effect_id: str, started: float) -> EffectRow:
    return (effect_id, "nul", "bad", "turn1", "file", "w", None, "weird-state", "not json", None, started, None,
            "elsewhere:1:x", None, None, None, None)  # fmt: skip


@pytest.fixture
def hostile(store: Store, backend: str) -> Store:
    """A store holding a healthy session ``good`` (7 tokens) beside a session ``bad`` of hostile rows."""
    store.write(
        [("good", "agent", 1.0, 2.0)], [_call("g1", session="good", attributes='{"usage": {"total_tokens": 7}}')]
    )
    _insert(store, "sessions", [("bad", "agent", 1e300, INF)])
    if backend == "postgresql":
        _insert(store, "sessions", [("nan-session", "agent", NAN, NAN)])
    _insert(store, "calls", _hostile_calls(backend))
    _insert(store, "messages", [("bad", "zz", _DEEP), ("bad", "m2", "not json")])
    _insert(store, "effects", [_effect("e1", INF), _effect("e2", 1.0)])
    _insert(store, "heartbeats", [("elsewhere:1:x", NAN if backend == "postgresql" else 1e300)])
    return store


def _readable(value: float | None) -> bool:
    return value is None or (math.isfinite(value) and 0 <= value <= LATEST)


def test_hostile_rows_never_break_a_reader(hostile: Store, backend: str) -> None:
    store = hostile
    infos = {info.session_id: info for info in store.list_sessions()}
    assert {"good", "bad"} <= set(infos)
    assert infos["good"].tokens == 7 and infos["good"].call_count == 1
    assert infos["bad"].tokens == sum(tokens for _, tokens in _ATTRIBUTES.values())
    assert store.get_session("bad") == infos["bad"] and store.get_session("good") == infos["good"]
    assert all(_readable(info.created_at) and _readable(info.updated_at) for info in infos.values())
    assert [info.session_id for info in store.list_sessions(limit=1)]

    records = list(store.iter_calls("bad"))
    assert {r.call_id for r in records} == {row[0] for row in _hostile_calls(backend)}
    for record in records:
        json.dumps(record.to_dict(), allow_nan=False)  # what the viewer and export send on: no NaN, no infinity
        assert _readable(record.started_at) and _readable(record.ended_at)
        assert store.get_call("bad", record.call_id, record.started_at) == record
    by_id = {r.call_id: r for r in records}
    assert by_id["deep"].inputs == _DEEP and by_id["deep"].output == "not json {"  # as stored
    assert by_id["nul"].attributes["model"] == "a\x00b"  # type: ignore[index]
    assert by_id["running"].status == "interrupted"  # its owner's heartbeat is no time at all
    assert by_id["self"].inputs["messages"][0]["missing"] == 1000000000

    tree = list(store.iter_tree_rows("bad"))
    assert len(tree) == len(records)
    json.dumps(tree, allow_nan=False)
    assert all(_readable(row[12]) and _readable(row[13]) for row in tree)
    assert next(row for row in tree if row[0] == "attempt-broken")[11] is None

    assert {row[0] for row in store.list_effects("bad")} == {"e1", "e2"}
    assert set(store.messages("bad")) == {"zz", "m2"}
    reader = store.prompt_reader("bad")
    assert reader.links()["self"] == ("self", 1000000000)
    assert [c.call_id for c in store.iter_calls("good")] == ["g1"]


def test_a_model_name_with_a_nul_or_lone_surrogate_and_huge_usage_never_break_the_list(store_url: str) -> None:
    """What openprogram's own writer stores for such a call: written (not lost with its batch), and read."""
    from openprogram._kit import ModelCall, message, model_inputs, reply, usage

    with openprogram.session_context(store=store_url) as h:
        call = ModelCall.request(
            "toy", "gpt\x00\ud800", lambda: model_inputs([message("user", "hi")]), provider="p\udc80"
        )
        assert call is not None
        call.answered(reply("hello"), usage(2**63, 5))
    with openprogram.session_context(store=store_url) as later:
        openprogram.tool(lambda: 1)()
    assert openprogram.flush()
    store = openprogram.open_store(store_url)
    infos = {info.session_id: info for info in store.list_sessions()}
    assert infos[h.session_id].tokens == 5  # a total past 10**15 is no count: the output's 5 is
    assert infos[later.session_id].call_count == 2
    [model] = [c for c in store.iter_calls(h.session_id) if c.kind == "llm"]
    assert model.attributes is not None and model.attributes["model"] == "gpt\x00\ud800"
    assert model.attributes["provider"] == "p\udc80"


@pytest.mark.parametrize("backend", ["sqlite"])
def test_sqlite_text_that_is_not_utf8_is_read_escaped(store: Store) -> None:
    store.write([("s1", "agent", 1.0, 2.0)], [_call(f"c{i}", session="s1", kind="tool") for i in range(2500)])
    _insert(store, "messages", [("s1", "m1", "x")])
    with sqlite3.connect(store.path) as conn:  # type: ignore[attr-defined]
        conn.execute("UPDATE calls SET name = CAST(X'61ff62' AS TEXT) WHERE call_id = 'c2400'")
        conn.execute("UPDATE messages SET body = CAST(X'22ff22' AS TEXT)")
        conn.execute("UPDATE sessions SET agent_id = CAST(X'ff' AS TEXT)")
    records = list(store.iter_calls("s1"))  # past the first fetched batch: read on from where it began
    assert len(records) == 2500 and len({r.call_id for r in records}) == 2500
    assert next(r for r in records if r.call_id == "c2400").name == "a\\xffb"
    assert store.get_call("s1", "c2400") == next(r for r in records if r.call_id == "c2400")
    assert len(list(store.iter_tree_rows("s1"))) == 2500
    assert store.messages("s1") == {"m1": '"\\xff"'}
    [info] = store.list_sessions()
    assert info.agent_id == "\\xff" and store.get_session("s1") == info

"""Every builder of a call record follows the one layout of ``openprogram._recording`` (its ``record`` module).

The hot paths build records as literal tuples; these tests build one through each
builder and check its width and the value at each named slot, at its start (what
``inflight`` holds) and at its end (the entry queued for the writer), and that
the writer decodes it into the right columns. The writer is held off the queue
meanwhile (its cycle lock is taken), so each entry can be read where it was put.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import openprogram
import pytest
from openprogram import _recording, _sessions
from openprogram._calls import call_scope, close_call, detach_call, open_call
from openprogram._capture import PRECAPTURED, parameter_shape
from openprogram._recording import (
    ATTRIBUTES,
    CALL_ID,
    KIND,
    KWARGS,
    NAME,
    NAMES,
    SESSION,
    SessionHandle,
    begin_call,
    call_var,
    end_call,
    inflight,
    queue,
    record,
    session_var,
)
from openprogram._runtime import as_text
from openprogram.stores import CALL_COLUMNS

Record = tuple[Any, ...]


@contextlib.contextmanager
def writer_paused() -> Iterator[None]:
    """Nothing queued meanwhile is taken by the writer (no flush may be waited on inside)."""
    with _recording.writer._cycle_lock:
        yield


@contextlib.contextmanager
def appending() -> Iterator[list[Record]]:
    """The calls' entries appended to the queue in the block (the writer's own entries left out)."""
    entries: list[Record] = []
    start = len(queue)
    yield entries
    items = queue[start:]
    assert len(items) % record.RECORD_WIDTH == 0, f"{len(items)} items appended: not whole entries"
    for i in range(0, len(items), record.RECORD_WIDTH):
        if type(items[i]) is not _recording.writer._Tag:
            entries.append(tuple(items[i : i + record.RECORD_WIDTH]))


def appended(action: Callable[[], Any]) -> list[Record]:
    """The calls' entries ``action`` appended to the queue."""
    with appending() as entries:
        action()
    return entries


def only(entries: list[Record]) -> Record:
    assert len(entries) == 1, entries
    return entries[0]


def check(
    start: Record,
    end: Record,
    *,
    session: SessionHandle,
    parent: str | int | None,
    kind: str,
    name: str,
    framework: str | None = None,
    status: str = "ok",
    error: str | None = None,
) -> dict[str, Any]:
    """Check a record's start and end at the named slots; return the row the writer makes of it."""
    assert len(start) == record.START_WIDTH
    assert len(end) == record.RECORD_WIDTH
    assert end[:ATTRIBUTES] == start[:ATTRIBUTES] and end[record.STARTED_AT] == start[record.STARTED_AT]
    assert type(start[CALL_ID]) in (str, int)
    assert start[SESSION] is session
    assert start[record.PARENT] == parent
    assert (start[KIND], start[NAME], start[record.FRAMEWORK]) == (kind, name, framework)
    assert type(start[record.STARTED_AT]) is float
    assert (end[record.STATUS], end[record.ERROR]) == (status, error)
    assert type(end[record.ENDED_AT]) is float and end[record.ENDED_AT] >= start[record.STARTED_AT]
    row = dict(zip(CALL_COLUMNS, _recording.writer._encode(end, "owner"), strict=True))
    assert row["call_id"] == as_text(start[CALL_ID])
    assert (row["session_id"], row["turn_id"]) == (session.session_id, session.turn_id)
    assert row["parent_id"] == as_text(parent)
    assert (row["kind"], row["name"], row["status"], row["error"]) == (kind, name, status, error)
    return row


def running_start() -> Record:
    """The start record of the call now current (what inflight holds for it)."""
    return inflight[call_var.get()]


def test_the_layout_names_every_slot() -> None:
    assert len(record.FIELDS) == record.RECORD_WIDTH == 15 and record.START_WIDTH == 11
    for index, field in enumerate(record.FIELDS):
        assert getattr(record, field.upper()) == index
    assert record.FIELDS[record.START_WIDTH] == "status"
    # The writer unpacks a record under the layout's names, in its order.
    assert _recording.writer._encode.__code__.co_varnames[2 : 2 + record.RECORD_WIDTH] == record.FIELDS
    assert record.START_WIDTH + len(_recording.writer._RUNNING) == record.RECORD_WIDTH


def test_begin_call_and_end_call(store: openprogram.Store) -> None:
    with openprogram.session_context(store=store) as h, writer_paused():
        rec = begin_call(h, "parent-1", "node", "agent", "langgraph", {"state": [1]}, {"step": 3})
        assert inflight[rec[CALL_ID]] is rec
        assert (rec[NAMES], rec[record.ARGS], rec[KWARGS]) == (PRECAPTURED, '{"state":[1]}', None)
        assert rec[ATTRIBUTES] == {"step": 3}
        end = only(appended(lambda: end_call(rec, None, {"answer": 42}, {"cached": True})))
        row = check(rec, end, session=h, parent="parent-1", kind="node", name="agent", framework="langgraph")
        assert end[ATTRIBUTES] == {"step": 3, "cached": True} and end[record.OUTPUT] == ('{"answer":42}',)
        assert (row["inputs"], row["output"]) == ('{"state":[1]}', '{"answer":42}')
        assert rec[CALL_ID] not in inflight

        failed = begin_call(h, None, "call", "plain")
        assert (failed[NAMES], failed[record.ARGS], failed[ATTRIBUTES]) == (None, None, None)
        end = only(appended(lambda: end_call(failed, ValueError("boom"))))
        check(failed, end, session=h, parent=None, kind="call", name="plain", status="error", error="ValueError: boom")
        assert appended(lambda: end_call(failed)) == []  # ended once


def test_open_call_and_close_call(store: openprogram.Store, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENPROGRAM_STORE", "memory://")
    with openprogram.session_context(store=store) as h, writer_paused():
        opened = open_call("node", "plan", "crewai")
        assert opened is not None
        start, _, session_token = opened
        assert session_token is None  # the current session: nothing to install
        assert call_var.get() == start[CALL_ID] and (start[NAMES], start[record.ARGS]) == (None, None)
        end = only(appended(lambda: close_call(opened, output="done")))
        row = check(start, end, session=h, parent=h.root_call_id, kind="node", name="plan", framework="crewai")
        assert end[record.OUTPUT] == "done" and row["output"] == '"done"'

        opened = open_call("tool", "lookup", "crewai", {"q": "x"}, '{"id":"7"}')
        assert opened is not None
        start = opened[0]  # (the record, the call token, the session token)
        assert (start[NAMES], start[record.ARGS], start[ATTRIBUTES]) == (PRECAPTURED, '{"q":"x"}', '{"id":"7"}')
        end = only(appended(lambda: close_call(opened, KeyError("k"))))
        check(
            start,
            end,
            session=h,
            parent=h.root_call_id,
            kind="tool",
            name="lookup",
            framework="crewai",
            status="error",
            error="KeyError: 'k'",
        )

        def with_no_session() -> tuple[Record, Record, SessionHandle]:
            opened = open_call("node", "orphan")
            assert opened is not None
            start, _, session_token = opened
            implicit = session_var.get()
            assert implicit is not None and session_token is not None  # the implicit session, installed
            return start, only(appended(lambda: close_call(opened))), implicit

        start, end, implicit = contextvars.Context().run(with_no_session)
        check(start, end, session=implicit, parent=implicit.root_call_id, kind="node", name="orphan")


def test_call_scope_and_detach_call(store: openprogram.Store) -> None:
    with openprogram.session_context(store=store) as h, writer_paused():
        with (
            appending() as ended,
            call_scope("graph", "g", framework="langgraph", inputs={"n": 1}, attributes={"a": 1}) as scope,
        ):
            start = scope.rec
            assert start is not None and (start[NAMES], start[record.ARGS]) == (PRECAPTURED, '{"n":1}')
            scope.set_output(["out"])
            scope.set_attributes(b=2)
        end = only(ended)
        check(start, end, session=h, parent=h.root_call_id, kind="graph", name="g", framework="langgraph")
        assert end[ATTRIBUTES] == {"a": 1, "b": 2} and end[record.OUTPUT] == ('["out"]',)

        other = SessionHandle("other", "turn", None, False, "main", store, "other-root")
        scope = call_scope("node", "n", session=other, parent_id="p-9").enter()
        start = scope.rec
        assert start is not None
        end = only(appended(lambda: scope.exit(RuntimeError("paused"), status="interrupted")))
        check(
            start,
            end,
            session=other,
            parent="p-9",
            kind="node",
            name="n",
            status="interrupted",
            error="RuntimeError: paused",
        )

        opened = open_call("function", "stream")
        assert opened is not None
        start = detach_call(opened)
        assert start is opened[0] and call_var.get() == h.root_call_id and start[CALL_ID] in inflight
        end = only(appended(lambda: end_call(start, None, "tail")))
        check(start, end, session=h, parent=h.root_call_id, kind="function", name="stream")


def test_every_tool_path(store: openprogram.Store) -> None:
    starts: dict[str, Record] = {}

    @openprogram.tool
    def compiled(query: str, limit: int) -> str:
        starts["compiled"] = running_start()
        return query

    @openprogram.tool
    def compiled_fails(query: str) -> str:
        starts["compiled_fails"] = running_start()
        raise ValueError(query)

    @openprogram.tool
    def generic(*items: Any, **named: Any) -> int:
        starts["generic"] = running_start()
        return len(items)

    @openprogram.tool
    async def coroutine(x: int) -> int:
        starts["coroutine"] = running_start()
        return x

    @openprogram.tool
    def generator(n: int) -> Iterator[int]:
        starts["generator"] = running_start()
        yield from range(n)

    @openprogram.tool
    async def async_generator(n: int) -> AsyncIterator[int]:
        starts["async_generator"] = running_start()
        for i in range(n):
            yield i

    class Helper:
        @openprogram.tool
        def method(self, x: int) -> int:
            starts["method"] = running_start()
            return x

    async def drain() -> list[int]:
        return [i async for i in async_generator(2)]

    with openprogram.session_context(store=store) as h, writer_paused():
        root = h.root_call_id
        end = only(appended(lambda: compiled("q", 5)))
        start = starts["compiled"]
        row = check(start, end, session=h, parent=root, kind="tool", name="compiled")
        assert type(start[CALL_ID]) is int  # the counter value, spelled out by the writer
        assert (start[NAMES], start[record.ARGS], start[KWARGS]) == (
            parameter_shape(("query", "limit")),
            ("q", 5),
            None,
        )
        assert end[record.OUTPUT] == "q" and (row["inputs"], row["output"]) == ('{"query":"q","limit":5}', '"q"')

        def fail() -> None:
            with pytest.raises(ValueError):
                compiled_fails("bad")

        end = only(appended(fail))
        check(
            starts["compiled_fails"],
            end,
            session=h,
            parent=root,
            kind="tool",
            name="compiled_fails",
            status="error",
            error="ValueError: bad",
        )
        assert end[record.OUTPUT] is None

        end = only(appended(lambda: generic(1, 2, flag=True)))  # a keyword argument: the general path
        start = starts["generic"]
        check(start, end, session=h, parent=root, kind="tool", name="generic")
        assert type(start[CALL_ID]) is str
        assert (start[NAMES], start[record.ARGS], start[KWARGS]) == ((), (1, 2), {"flag": True})

        end = only(appended(lambda: generic([1], {"k": "v"})))  # mutable arguments: captured at the call
        start = starts["generic"]
        check(start, end, session=h, parent=root, kind="tool", name="generic")
        captured = '{"*args[0]":[1],"*args[1]":{"k":"v"}}'
        assert (start[NAMES], start[record.ARGS], start[KWARGS]) == (PRECAPTURED, captured, None)

        end = only(appended(lambda: Helper().method(3)))  # a method: self is left out
        start = starts["method"]
        check(start, end, session=h, parent=root, kind="tool", name="method")
        assert (start[NAMES], start[record.ARGS], start[KWARGS]) == (("x",), (3,), {})

        end = only(appended(lambda: asyncio.run(coroutine(7))))
        check(starts["coroutine"], end, session=h, parent=root, kind="tool", name="coroutine")
        assert end[record.OUTPUT] == 7

        end = only(appended(lambda: list(generator(2))))
        row = check(starts["generator"], end, session=h, parent=root, kind="tool", name="generator")
        assert row["output"] == '{"yielded":[0,1],"count":2}'

        end = only(appended(lambda: asyncio.run(drain())))
        row = check(starts["async_generator"], end, session=h, parent=root, kind="tool", name="async_generator")
        assert row["output"] == '{"yielded":[0,1],"count":2}'

        other = SessionHandle("explicit", "turn", None, False, "main", store, "explicit-root")
        end = only(appended(lambda: compiled("q", 1, _session=other)))  # an explicit session: the general path
        check(starts["compiled"], end, session=other, parent="explicit-root", kind="tool", name="compiled")


def test_session_turns(store: openprogram.Store) -> None:
    with openprogram.session_context(store=store) as outer, writer_paused():
        with appending() as ended, openprogram.session_context(store=store, runtime={"model": "m"}) as inner:
            start = inflight[inner.root_call_id]
        end = only(ended)
        check(start, end, session=inner, parent=None, kind="turn", name="main")
        assert start[CALL_ID] == inner.root_call_id
        assert (start[NAMES], start[record.ARGS], start[ATTRIBUTES]) == (
            PRECAPTURED,
            '{"runtime":{"model":"m"}}',
            {"created": True},
        )

        again = openprogram.session_context(outer.session_id, store=store, agent_id="second")
        entered = again.__enter__()
        start = inflight[entered.root_call_id]
        end = only(appended(lambda: again.__exit__(None, None, None)))
        check(start, end, session=entered, parent=outer.root_call_id, kind="turn", name="second")
        assert (start[NAMES], start[ATTRIBUTES]) == (None, {"created": False})


def test_the_implicit_sessions_turn(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENPROGRAM_STORE", "memory://")
    with writer_paused():
        handle = _sessions.implicit_session("tool 'orphan'")
        assert handle is not None
        start = _sessions.policy._implicit_rec
        assert start is not None and inflight[handle.root_call_id] is start
        end = only(appended(_sessions.policy._close_implicit))
        check(start, end, session=handle, parent=None, kind="turn", name="main")
        assert start[CALL_ID] == handle.root_call_id and start[ATTRIBUTES] == {"implicit": True, "created": True}


def test_the_writers_own_entries(store: openprogram.Store) -> None:
    handle = SessionHandle("s", "t", None, True, "main", store, "root")
    start = begin_call(handle, None, "call", "running")
    try:
        row = dict(
            zip(CALL_COLUMNS, _recording.writer._encode(start + _recording.writer._RUNNING, "owner"), strict=True)
        )
        assert (row["status"], row["output"], row["ended_at"]) == ("running", None, None)
    finally:
        end_call(start)
    with pytest.raises(ValueError, match="15 fields"):
        _recording.enqueue(start)  # a start alone would shift every later entry


def test_names_a_store_cannot_take_are_made_safe_every_time_and_plain_ones_pass(tmp_path: Any) -> None:
    store = openprogram.open_store(f"sqlite:///{tmp_path}/names.db")
    odd = ["nul\x00name", "lone\ud800surrogate", "x" * 5000, 42]
    with openprogram.session_context(store=store) as h:
        for _ in range(2):  # a name seen before is judged again unless it was plain
            for name in ["agent", *odd]:
                opened = open_call("node", name, "langgraph")  # type: ignore[arg-type]
                assert opened is not None
                close_call(opened, None, 1)
    assert openprogram.flush()
    names = [call.name for call in store.list_calls(h.session_id) if call.kind == "node"]
    assert names.count("agent") == 2 and names.count("42") == 2
    assert names.count("nul\\x00name") == 2 and names.count("lone\\ud800surrogate") == 2
    assert sum(name.startswith("x" * 1024) and name.endswith("...[truncated]") for name in names) == 2

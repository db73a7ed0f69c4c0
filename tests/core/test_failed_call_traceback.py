"""A call that ends ``error`` keeps its exception's traceback, bounded and redacted, in ``attributes["traceback"]``
(issue 46, "Errors keep Type: message only"): whichever way it was recorded, into any store, through a spill file."""

from __future__ import annotations

import asyncio
import json
import linecache
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import openprogram
import pytest
from openprogram._kit import LaterCall, close_call, open_call
from openprogram._recording import ATTRIBUTES, MAX_FRAMES, MAX_TRACEBACK, PendingTraceback, append_spill, failed_record

from tests.support import attributes, calls, one


class OrderMissing(LookupError):
    pass


def _look_up(order: int) -> None:
    raise OrderMissing(f"no such order: {order}")  # the raising line


def _traceback(record: openprogram.CallRecord) -> str:
    text = (record.attributes or {}).get("traceback")
    assert isinstance(text, str), (record.name, record.attributes)
    return text


def _is_this_failure(text: str) -> None:
    assert text.startswith("Traceback (most recent call last):\n  File "), text
    # the frame that raised, with its line, and the exception last, as Python prints them
    assert f'"{__file__}", line ' in text and ", in _look_up\n" in text
    assert '    raise OrderMissing(f"no such order: {order}")  # the raising line\n' in text
    assert text.endswith(f"{__name__}.OrderMissing: no such order: 7\n"), text
    assert "openprogram/_" not in text and "<openprogram.tool" not in text  # not the recording wrapper's frame


@openprogram.tool
def compiled(order: int) -> None:
    _look_up(order)


@openprogram.tool
async def awaited(order: int) -> None:
    await asyncio.sleep(0)
    _look_up(order)


@openprogram.tool
def generated(order: int) -> Iterator[int]:
    yield 1
    _look_up(order)


def test_every_way_of_recording_a_failed_call_keeps_its_traceback(store: openprogram.Store) -> None:
    with openprogram.session_context(store=store) as h:
        with pytest.raises(OrderMissing):
            compiled(7)
        with pytest.raises(OrderMissing):
            compiled(order=7, _session=h)  # the general wrapper
        with pytest.raises(OrderMissing):
            asyncio.run(awaited(7))
        with pytest.raises(OrderMissing):
            list(generated(7))
        with pytest.raises(OrderMissing), openprogram.call_scope("node", "scoped", attributes={"step": 3}):
            _look_up(7)
        opened = open_call("tool", "opened", None, None, '{"tool_call_id":"c1"}')
        assert opened is not None
        try:
            _look_up(7)
        except OrderMissing as exc:
            close_call(opened, exc)
        later = LaterCall.begin("task", "later", "crewai")
        assert later is not None
        try:
            _look_up(7)
        except OrderMissing as exc:
            later.end(exc)
    records = calls(store, h.session_id)
    failed = [c for c in records if c.status == "error"]
    assert sorted(c.name for c in failed) == [
        "awaited",
        "compiled",
        "compiled",
        "generated",
        "later",
        "opened",
        "scoped",
    ]
    for record in failed:
        _is_this_failure(_traceback(record))
        assert record.error == "OrderMissing: no such order: 7"
    # what a call's attributes held already is kept beside it
    assert attributes(one(records, "scoped"))["step"] == 3
    assert attributes(one(records, "opened"))["tool_call_id"] == "c1"


def test_a_turn_that_raises_keeps_the_traceback_of_its_exception(store: openprogram.Store) -> None:
    with pytest.raises(OrderMissing), openprogram.session_context(store=store) as h:
        _look_up(7)
    turn = [c for c in calls(store, h.session_id) if c.kind == "turn"]
    assert [c.status for c in turn] == ["error"]
    _is_this_failure(_traceback(turn[0]))


def test_a_call_that_does_not_fail_keeps_no_traceback(store: openprogram.Store) -> None:
    @openprogram.tool
    def fine(x: int) -> int:
        return x

    with openprogram.session_context(store=store) as h:
        fine(1)
        with openprogram.call_scope("node", "scoped", attributes={"step": 1}):
            pass
        with pytest.raises(asyncio.CancelledError), openprogram.call_scope("node", "cancelled"):
            raise asyncio.CancelledError  # interrupted, not an error
    for record in calls(store, h.session_id):
        assert "traceback" not in (record.attributes or {}), record


def test_a_chained_exception_keeps_its_cause_as_python_prints_it(store: openprogram.Store) -> None:
    @openprogram.tool
    def wraps(order: int) -> None:
        try:
            _look_up(order)
        except OrderMissing as exc:
            raise RuntimeError("the order could not be shipped") from exc

    with openprogram.session_context(store=store) as h, pytest.raises(RuntimeError):
        wraps(7)
    text = _traceback(one(calls(store, h.session_id), "wraps"))
    cause, _, effect = text.partition("\nThe above exception was the direct cause of the following exception:\n\n")
    assert cause.endswith("OrderMissing: no such order: 7\n") and "in _look_up" in cause
    assert effect.startswith("Traceback (most recent call last):") and effect.endswith(
        "RuntimeError: the order could not be shipped\n"
    )


def test_a_traceback_is_redacted_as_any_captured_text(store: openprogram.Store) -> None:
    secret = "ghp_" + "a1b2c3d4e5" * 4

    @openprogram.tool
    def leaks(x: int) -> None:
        raise PermissionError(f"refused Authorization: Bearer {secret}")  # api_key=sk-proj-Zx9Yw8Vu7TZx9Yw8Vu7TZx9Yw8

    with openprogram.session_context(store=store) as h, pytest.raises(PermissionError):
        leaks(1)
    record = one(calls(store, h.session_id), "leaks")
    text = _traceback(record)
    assert secret not in text and "Zx9Yw8Vu7T" not in text
    assert text.endswith("PermissionError: refused Authorization: [redacted]\n")  # as the error column
    assert "# api_key=[redacted]\n" in text  # the raising line's source


def test_a_traceback_is_bounded_and_keeps_the_most_recent_frames(store: openprogram.Store) -> None:
    @openprogram.tool
    def recurses(n: int) -> None:
        _nest(n)

    @openprogram.tool
    def deep(n: int) -> None:
        _deeper(n)

    with openprogram.session_context(store=store) as h:
        with pytest.raises(ValueError):
            recurses(100)
        with pytest.raises(RecursionError):
            deep(0)
    records = calls(store, h.session_id)
    huge = _traceback(one(records, "recurses"))
    assert len(huge) <= MAX_TRACEBACK + 100
    assert huge.startswith("...[") and " earlier chars]\n" in huge[:40]  # the cut is marked, the tail kept
    assert huge.endswith("...[truncated]\n")  # the message too is bounded, as the error column's
    recursion = _traceback(one(records, "deep"))
    assert "earlier frames]\n" in recursion and "[Previous line repeated " in recursion
    assert recursion.count('  File "') <= MAX_FRAMES
    assert "\nRecursionError: maximum recursion depth exceeded" in recursion


def _nest(n: int) -> None:
    if n:
        _nest_again(n - 1)  # two functions in turn: no line repeated, which Python would fold
        return
    _fail()


def _nest_again(n: int) -> None:
    _nest(n)


def _fail() -> None:
    try:
        raise KeyError("k" * 50_000)
    except KeyError:
        try:
            raise TypeError("t" * 50_000)  # the context Python prints, each message bounded
        except TypeError:
            raise ValueError("x" * 50_000)  # noqa: B904


def _deeper(n: int) -> None:
    _deeper(n + 1)


def test_a_traceback_survives_sqlite_and_a_spill_file_imported_later(tmp_path: Path, isolated_home: Path) -> None:
    memory = openprogram.open_store("memory://")
    with openprogram.session_context("spilled", store=memory), pytest.raises(OrderMissing):
        compiled(7)
    records = calls(memory, "spilled")
    failed = one(records, "compiled")
    rows: list[Any] = [
        (c.call_id, "spilled", c.turn_id, c.parent_id, c.kind, c.name, c.framework, c.status,
         None if c.inputs is None else json.dumps(c.inputs), None, c.error,
         None if not c.attributes else json.dumps(c.attributes), c.started_at, c.ended_at, "host:1:abc")
        for c in records
    ]  # fmt: skip
    spill = tmp_path / "x.spill"
    append_spill(spill, "sqlite:///x.db", [("spilled", "main", time.time() - 1, time.time())], rows, [], [])
    target = tmp_path / "imported.db"
    done = subprocess.run(
        [sys.executable, "-m", "openprogram", "--store", str(target), "import", str(spill)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    imported = openprogram.open_store(f"sqlite:///{target}")
    text = _traceback(one(imported.list_calls("spilled"), "compiled"))
    assert text == _traceback(failed)
    _is_this_failure(text)


def _show(url: str, *args: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "openprogram", "--store", url, "show", *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_show_all_prints_the_traceback_under_the_failed_call(sqlite_url: str) -> None:
    @openprogram.tool
    def fine(x: int) -> int:
        return x

    with openprogram.session_context("failing", store=sqlite_url):
        with pytest.raises(OrderMissing), openprogram.call_scope("node", "shipping"):
            fine(1)
            _look_up(7)
        with pytest.raises(OrderMissing):
            compiled(7)
        fine(2)
    openprogram.flush()
    lines = _show(sqlite_url, "failing", "--all").splitlines()
    for name in ("node shipping", "tool compiled"):
        at = next(n for n, line in enumerate(lines) if f"{name} [error]" in line)
        call, below = lines[at], lines[at + 1 : at + 6]
        assert call.endswith("!! OrderMissing: no such order: 7")
        column = call.index(name) + 4  # drawn under the call, inside its branch
        assert below[0][column:] == "Traceback (most recent call last):", lines
        assert below[1][column:].startswith(f'  File "{__file__}", line ')
        stack = "\n".join(line[column:] for line in lines[at + 1 :])
        assert '    raise OrderMissing(f"no such order: {order}")  # the raising line\n' in stack
        assert f"\n{__name__}.OrderMissing: no such order: 7\n" in stack
    # the node's children are drawn after its stack, still inside its branch
    node = next(n for n, line in enumerate(lines) if "node shipping [error]" in line)
    child = next(n for n, line in enumerate(lines) if "tool fine [ok]" in line)
    assert child > node + 4 and all(line[lines[node].index("node")] in "|│" for line in lines[node + 1 : child])
    # folded, the tree stays one line a call
    assert "Traceback" not in _show(sqlite_url, "failing")


def test_the_failing_call_reads_no_source_file_the_writer_lays_the_traceback_out(tmp_path: Path) -> None:
    # A first read of a source file is blocking I/O (on an event loop, too): never on the caller's thread.
    source = tmp_path / "agent_code.py"
    source.write_text("def fail():\n    raise KeyError('gone')  # the line\n")
    namespace: dict[str, Any] = {}
    exec(compile(source.read_text(), str(source), "exec"), namespace)
    linecache.checkcache(str(source))
    try:
        namespace["fail"]()
    except KeyError as exc:
        raised = exc
    start = ("c1", None, None, "tool", "fail", None, None, None, None, {"step": 2}, 0.0)
    ended = failed_record(start, raised)
    assert str(source) not in linecache.cache  # only the frames' file, line and name were taken
    pending = ended[ATTRIBUTES]
    assert isinstance(pending, PendingTraceback)
    laid_out = json.loads(pending.json())  # what the writer does
    assert laid_out["step"] == 2
    assert laid_out["traceback"].endswith("    raise KeyError('gone')  # the line\nKeyError: 'gone'\n")

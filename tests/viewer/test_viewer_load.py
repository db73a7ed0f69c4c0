"""The viewer under load: reads per session, a running session re-read where it changed, idle connections closed."""

from __future__ import annotations

import json
import socket
import threading
import time
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from openprogram._runtime import process_owner
from openprogram._viewer import SessionTree, TreeCache, ViewerServer
from openprogram.stores import CallRow, CallRows, Store
from openprogram.stores.sqlite import SQLiteStore

RUNNING_CALLS = 5_000


class SlowSessionStore(SQLiteStore):
    """A SQLite store whose reads of one session's calls wait until ``release`` is set, counted."""

    def __init__(self, path: Path, slow_session: str) -> None:
        super().__init__(path)
        self.slow_session = slow_session
        self.release = threading.Event()
        self.slow_reads = 0

    def _iter_call_rows(self, session_id: str, captures: bool = True) -> Iterator[CallRow]:
        if session_id == self.slow_session:
            self.slow_reads += 1
            self.release.wait(30)
        return super()._iter_call_rows(session_id, captures)


class CountingStore(SQLiteStore):
    """A SQLite store that counts the call rows read from it, whole or changed only."""

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self.rows_read = 0
        self.whole_reads = 0

    def _iter_call_rows(self, session_id: str, captures: bool = True) -> Iterator[CallRow]:
        self.whole_reads += 1
        for row in super()._iter_call_rows(session_id, captures):
            self.rows_read += 1
            yield row

    def _changed_call_rows(
        self, session_id: str, calls: Sequence[tuple[str, float]], since: float
    ) -> Iterator[CallRow]:
        for row in super()._changed_call_rows(session_id, calls, since):
            self.rows_read += 1
            yield row


def _call(session_id: str, call_id: str, parent: str | None, started: float, ended: float | None) -> CallRow:
    kind = "turn" if parent is None else "tool"
    status = "running" if ended is None else "ok"
    return (call_id, session_id, "turn", parent, kind, call_id, None, status, None, None, None, None, started, ended,
            process_owner())  # fmt: skip


def _json(base: str, path: str, timeout: float = 10) -> Any:
    with urllib.request.urlopen(base.rstrip("/") + path, timeout=timeout) as response:
        return json.loads(response.read())


def test_a_session_being_read_does_not_delay_another_sessions_answer(
    tmp_path: Path, serve: Callable[[Store], str]
) -> None:
    store = SlowSessionStore(tmp_path / "two.db", slow_session="large")
    for session_id in ("large", "small"):
        store.write([(session_id, "main", 1.0, 2.0)], [_call(session_id, "turn", None, 1.0, 2.0)])
    base = serve(store)
    answers: list[Any] = []
    readers = [threading.Thread(target=lambda: answers.append(_json(base, "/api/sessions/large", 30))) for _ in "ab"]
    try:
        for reader in readers:
            reader.start()
        while store.slow_reads == 0:  # the first read of "large" is under way (and stuck)
            time.sleep(0.01)
        started = time.monotonic()
        assert _json(base, "/api/sessions/small/state", timeout=5)["calls"] == 1
        assert time.monotonic() - started < 2
    finally:
        store.release.set()
        for reader in readers:
            reader.join(30)
    assert [answer["session"]["session_id"] for answer in answers] == ["large", "large"]
    assert store.slow_reads == 1  # the two readers of one session shared its read


def test_a_running_session_is_reread_only_where_it_changed(tmp_path: Path) -> None:
    store = CountingStore(tmp_path / "running.db")
    t0 = time.time() - 100
    rows = CallRows([_call("s", "turn", None, t0, None), _call("s", "graph", "turn", t0 + 0.001, None)])
    for i in range(RUNNING_CALLS - 2):
        rows.append(_call("s", f"step-{i:05}", "graph", t0 + 0.01 + i * 0.01, t0 + 0.015 + i * 0.01))
    store.write([("s", "main", t0, t0 + 60)], rows)
    clock = [0.0]
    cache = TreeCache(store, recheck=1.0, clock=lambda: clock[0])
    assert cache.get("s") is not None and store.rows_read == RUNNING_CALLS

    def poll(new_rows: list[CallRow]) -> tuple[SessionTree, int]:
        store.write([("s", "main", t0, time.time())], new_rows)
        before, clock[0] = store.rows_read, clock[0] + 2
        tree = cache.get("s")
        assert tree is not None
        return tree, store.rows_read - before

    newest = t0 + 0.01 * RUNNING_CALLS
    tree, read = poll(
        [_call("s", "new-1", "graph", newest, None), _call("s", "new-2", "graph", newest + 1, newest + 2)]
    )
    assert read <= 5 and store.whole_reads == 1  # the 2 running calls, the 2 new ones (and the newest seen again)
    tree, read = poll([_call("s", "new-1", "graph", newest, newest + 3)])
    assert read <= 5 and tree.statuses[tree.index["new-1"]] == "ok"
    _same_tree(tree, SessionTree.read(store, "s"))

    # A row with an earlier start written late (another process's clock): the count says so, and all is read.
    whole_reads = store.whole_reads
    tree, read = poll([_call("s", "late", "graph", t0 + 0.002, t0 + 0.003)])
    assert store.whole_reads == whole_reads + 1 and read > RUNNING_CALLS and "late" in tree.index
    _same_tree(tree, SessionTree.read(store, "s"))


def _same_tree(tree: SessionTree, whole: SessionTree) -> None:
    assert (tree.ids, tree.statuses, tree.ends, tree.parents) == (whole.ids, whole.statuses, whole.ends, whole.parents)
    assert (tree.version, tree.descendants, tree.roots) == (whole.version, whole.descendants, whole.roots)


@pytest.mark.parametrize("sent", [b"", b"GET /api/sessions HTTP/1.1\r\nHost: 127.0.0.1\r\n"], ids=["nothing", "half"])
def test_a_connection_that_sends_nothing_or_half_a_request_is_closed_after_the_timeout(
    tmp_path: Path, serve: Callable[[Store], str], monkeypatch: pytest.MonkeyPatch, sent: bytes
) -> None:
    monkeypatch.setattr(ViewerServer, "request_timeout", 0.5, raising=False)
    address = urllib.parse.urlsplit(serve(SQLiteStore(tmp_path / "idle.db")))
    with socket.create_connection((address.hostname or "127.0.0.1", address.port or 80), timeout=10) as client:
        client.sendall(sent)
        started = time.monotonic()
        assert client.recv(1024) == b""  # closed by the server, not by our 10-second timeout
        assert time.monotonic() - started < 5

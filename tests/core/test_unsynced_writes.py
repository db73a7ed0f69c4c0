"""The writer's cycles that nobody waits on commit without an fsync; ``flush()`` still returns only when durable."""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Sequence
from pathlib import Path

import openprogram
from openprogram.stores import AliasRow, CallRow, CallRows, SessionRow
from openprogram.stores.sqlite import SQLiteStore


@openprogram.tool
def ping(n: int) -> int:
    return n


class CountingStore(SQLiteStore):
    """A SQLite store that notes which kind of commit each batch of calls got."""

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self.commits: list[str] = []
        self.written = threading.Event()

    def write(self, sessions: Sequence[SessionRow], calls: Sequence[CallRow], aliases: Sequence[AliasRow] = ()) -> None:
        super().write(sessions, calls, aliases)
        self.commits.append("synced")
        self.written.set()

    def write_unsynced(
        self, sessions: Sequence[SessionRow], calls: Sequence[CallRow], aliases: Sequence[AliasRow] = ()
    ) -> None:
        super().write_unsynced(sessions, calls, aliases)
        self.commits.append("unsynced")
        self.written.set()


def test_a_background_cycle_commits_unsynced_and_flush_syncs(tmp_path: Path) -> None:
    store = CountingStore(tmp_path / "calls.db")
    with openprogram.session_context(store=store):
        assert openprogram.flush()
        store.commits.clear()
        store.written.clear()
        ping(1)
        assert store.written.wait(10.0), "the writer wrote nothing"
        assert store.commits[0] == "unsynced"  # no flush was waiting on that cycle
        assert openprogram.flush()
        assert store.commits[-1] == "synced"  # flush() returned after a synced commit
        reader = sqlite3.connect(store.path)
        try:
            assert reader.execute("SELECT count(*) FROM calls WHERE name = 'ping'").fetchone() == (1,)
        finally:
            reader.close()


def test_flush_syncs_even_when_nothing_is_left_to_write(tmp_path: Path) -> None:
    store = CountingStore(tmp_path / "calls.db")
    with openprogram.session_context(store=store):
        assert openprogram.flush()
        store.commits.clear()
        store.written.clear()
        ping(1)
        assert store.written.wait(10.0)
        deadline = time.monotonic() + 10.0
        while store.commits[-1:] != ["unsynced"] and time.monotonic() < deadline:
            time.sleep(0.01)
        store.commits.clear()
        assert openprogram.flush()
        assert store.commits == ["synced"]  # an empty synced write: it syncs the earlier commit
        assert openprogram.flush()
        assert store.commits == ["synced"]  # and once synced, flush() writes nothing more


def _row(call_id: str) -> CallRow:
    return (call_id, "s1", "t1", None, "tool", "ping", None, "ok", "{}", "1", None, None, 1.0, 2.0, "owner")


def test_unsynced_rows_are_committed_and_visible(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "calls.db")
    store.write_unsynced([("s1", "main", 1.0, 1.0)], CallRows([_row("c1")]))
    reader = sqlite3.connect(store.path)
    try:
        assert reader.execute("SELECT call_id FROM calls").fetchall() == [("c1",)]
    finally:
        reader.close()


def test_the_connection_is_back_to_full_synchronous_after_an_unsynced_write(tmp_path: Path) -> None:
    # Effects and heartbeats are autocommitted on the same connection and must stay synced.
    store = SQLiteStore(tmp_path / "calls.db")
    statements: list[str] = []
    store.write([("s1", "main", 1.0, 1.0)], CallRows())
    conn = store._writer()
    conn.set_trace_callback(statements.append)
    store.write_unsynced((), CallRows([_row("c1")]))
    assert statements[0] == "PRAGMA synchronous = NORMAL"
    assert statements[-1] == "PRAGMA synchronous = FULL"
    assert conn.execute("PRAGMA synchronous").fetchone() == (2,)  # FULL


def test_a_synced_write_after_unsynced_ones_commits_even_with_nothing_to_write(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "calls.db")
    store.write([("s1", "main", 1.0, 1.0)], CallRows())
    statements: list[str] = []
    store._writer().set_trace_callback(statements.append)
    store.write((), CallRows())
    assert not any("synced_at" in sql for sql in statements)  # nothing unsynced: nothing to sync
    store.write_unsynced((), CallRows([_row("c1")]))
    statements.clear()
    store.write((), CallRows())
    assert any("synced_at" in sql for sql in statements)  # a FULL commit, which syncs the WAL

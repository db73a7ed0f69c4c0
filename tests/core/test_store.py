"""Store location, file permissions, flush semantics, unusable stores, spill files."""

from __future__ import annotations

import logging
import re
import sqlite3
import stat
import time
from collections.abc import Sequence
from pathlib import Path

import openprogram
import pytest
from openprogram import _recording
from openprogram._cli import main as cli
from openprogram.stores import AliasRow, CallRow, SessionRow
from openprogram.stores.memory import MemoryStore

from .conftest import one


@openprogram.tool
def ping(n: int) -> int:
    return n


def raw_rows(db: Path, sql: str, *args: object) -> list[tuple[object, ...]]:
    """Read with a plain sqlite3 connection: what is durable, independent of openprogram."""
    conn = sqlite3.connect(db)
    try:
        return conn.execute(sql, args).fetchall()
    finally:
        conn.close()


def test_default_store_is_sqlite_under_openprogram_home(isolated_home: Path) -> None:
    assert not isolated_home.exists()
    store = openprogram.open_store()
    assert store.url == f"sqlite:///{isolated_home / 'sessions.db'}"
    with openprogram.session_context() as h:
        ping(1)
    db = isolated_home / "sessions.db"
    assert db.exists()
    assert stat.S_IMODE(isolated_home.stat().st_mode) == 0o700
    assert stat.S_IMODE(db.stat().st_mode) == 0o600
    for sidecar in (Path(f"{db}-wal"), Path(f"{db}-shm")):
        if sidecar.exists():  # WAL files carry the database's permissions
            assert stat.S_IMODE(sidecar.stat().st_mode) & 0o077 == 0
    assert raw_rows(db, "SELECT name FROM calls WHERE session_id = ? AND kind = 'tool'", h.session_id) == [("ping",)]


def test_nested_store_directory_is_private(tmp_path: Path) -> None:
    db = tmp_path / "a" / "b" / "s.db"
    with openprogram.session_context(store=f"sqlite:///{db}"):
        ping(1)
    assert stat.S_IMODE(db.parent.stat().st_mode) == 0o700
    assert stat.S_IMODE(db.stat().st_mode) == 0o600


def test_environment_is_read_when_the_store_is_opened(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    first, second = tmp_path / "one", tmp_path / "two"
    monkeypatch.setenv("OPENPROGRAM_HOME", str(first))
    assert openprogram.open_store().url == f"sqlite:///{first / 'sessions.db'}"
    monkeypatch.setenv("OPENPROGRAM_HOME", str(second))
    assert openprogram.open_store().url == f"sqlite:///{second / 'sessions.db'}"


def test_openprogram_store_overrides_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, isolated_home: Path) -> None:
    db = tmp_path / "elsewhere.db"
    monkeypatch.setenv("OPENPROGRAM_STORE", f"sqlite:///{db}")
    with openprogram.session_context() as h:
        ping(2)
    assert raw_rows(db, "SELECT count(*) FROM calls WHERE session_id = ?", h.session_id) == [(2,)]
    assert not (isolated_home / "sessions.db").exists()


def test_a_default_memory_store_is_one_store_for_the_process(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENPROGRAM_STORE", "memory://")
    with openprogram.session_context() as first:
        ping(1)
    with openprogram.session_context(first.session_id) as again:  # continues: the same store
        ping(2)
    assert not again.created and again.store is first.store is openprogram.open_store()
    assert [c.output for c in openprogram.open_store().list_calls(first.session_id) if c.kind == "tool"] == [1, 2]
    assert openprogram.open_store("memory://") is not openprogram.open_store("memory://")  # opened by URL: a throwaway


def test_relative_sqlite_url(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    store = openprogram.open_store("sqlite:///rel/x.db")
    assert store.url == f"sqlite:///{tmp_path / 'rel' / 'x.db'}"
    with openprogram.session_context(store="sqlite:///rel/x.db"):
        ping(1)
    assert (tmp_path / "rel" / "x.db").exists()


def test_session_context_store_argument_wins(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENPROGRAM_STORE", f"sqlite:///{tmp_path / 'env.db'}")
    named = openprogram.open_store("memory://named-for-test")
    with openprogram.session_context(store=named) as h:
        ping(3)
    assert openprogram.open_store("memory://named-for-test") is named
    assert one(named, h.session_id, "ping").output == 3
    assert not (tmp_path / "env.db").exists()


def test_memory_urls() -> None:
    assert openprogram.open_store("memory://") is not openprogram.open_store("memory://")
    assert openprogram.open_store("memory://x1") is openprogram.open_store("memory://x1")
    assert isinstance(openprogram.open_store("memory://"), MemoryStore)


def test_bad_store_urls_give_clear_errors() -> None:
    with pytest.raises(openprogram.StoreError, match="unknown store URL scheme 'bogus'"):
        openprogram.open_store("bogus://x")
    with pytest.raises(openprogram.StoreError, match=re.escape("sqlite:///relative.db")):
        openprogram.open_store("sqlite://no-slash.db")


def test_flush_makes_records_durable(tmp_path: Path) -> None:
    db = tmp_path / "flush.db"
    with openprogram.session_context(store=f"sqlite:///{db}") as h:
        for i in range(100):
            ping(i)
        assert openprogram.flush() is True
        # Visible to an independent connection while the session is still open.
        assert raw_rows(db, "SELECT count(*) FROM calls WHERE kind = 'tool'") == [(100,)]
        # The open turn is durable too, as running.
        assert raw_rows(db, "SELECT status FROM calls WHERE kind = 'turn'") == [("running",)]
    # Leaving the outermost session_context makes its end durable.
    assert raw_rows(db, "SELECT status FROM calls WHERE kind = 'turn'") == [("ok",)]
    assert raw_rows(db, "SELECT session_id FROM sessions") == [(h.session_id,)]


async def test_flush_async_and_async_exit(tmp_path: Path) -> None:
    db = tmp_path / "flush-async.db"
    async with openprogram.session_context(store=f"sqlite:///{db}"):
        ping(1)
        assert await openprogram.flush_async() is True
        assert raw_rows(db, "SELECT count(*) FROM calls WHERE kind = 'tool'") == [(1,)]
    assert raw_rows(db, "SELECT status FROM calls WHERE kind = 'turn'") == [("ok",)]


def test_reads_see_own_writes_without_flush(store: openprogram.Store) -> None:
    with openprogram.session_context(store=store) as h:
        ping(7)
        calls = store.list_calls(h.session_id)
    assert [c.name for c in calls] == ["main", "ping"]
    # The turn was still running at that moment, in this live process: not "interrupted".
    assert calls[0].status == "running"


def test_list_sessions_most_recent_first(store: openprogram.Store) -> None:
    with openprogram.session_context("s-first", store=store):
        pass
    with openprogram.session_context("s-second", store=store):
        pass
    assert [s.session_id for s in store.list_sessions()] == ["s-second", "s-first"]
    with openprogram.session_context("s-first", store=store):
        ping(1)
    infos = store.list_sessions()
    assert [s.session_id for s in infos] == ["s-first", "s-second"]
    assert infos[0].call_count == 3
    assert store.get_session("nope") is None
    assert store.list_calls("nope") == []


class FlakyStore(MemoryStore):
    """A real in-memory store whose writes fail while ``down`` is set (a server outage)."""

    def __init__(self) -> None:
        super().__init__("memory://flaky")
        self.down = True

    def write(self, sessions: Sequence[SessionRow], calls: Sequence[CallRow], aliases: Sequence[AliasRow] = ()) -> None:
        if self.down:
            raise openprogram.StoreError("cannot reach flaky-host:5432")
        super().write(sessions, calls, aliases)


def test_unusable_sqlite_path_never_stops_the_agent(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, discard_stores: list[openprogram.Store]
) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    url = f"sqlite:///{blocker / 'sessions.db'}"
    discard_stores.append(openprogram.open_store(url))
    caplog.set_level(logging.WARNING, logger="openprogram")
    with openprogram.session_context(store=url) as h:
        assert ping(5) == 5
        assert openprogram.flush() is False
        assert ping(6) == 6
        assert openprogram.flush() is False
    assert h.session_id
    warnings = [r.getMessage() for r in caplog.records if "cannot write to store" in r.getMessage()]
    assert len(warnings) == 1, "one warning per outage"
    assert str(blocker / "sessions.db") in warnings[0]


def test_outage_buffers_then_recovers(
    caplog: pytest.LogCaptureFixture, discard_stores: list[openprogram.Store]
) -> None:
    flaky = FlakyStore()
    discard_stores.append(flaky)
    with openprogram.session_context("outage", store=flaky):
        ping(1)
        assert openprogram.flush() is False
        ping(2)
    assert "flaky-host:5432" in caplog.text
    flaky.down = False
    _recording.writer._states[id(flaky)].retry_at = 0.0  # skip the back-off wait
    assert openprogram.flush() is True
    assert [c.output for c in flaky.list_calls("outage") if c.name == "ping"] == [1, 2]


def test_spill_file_and_import(
    isolated_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, discard_stores: list[openprogram.Store]
) -> None:
    monkeypatch.setattr(_recording.writer, "MAX_PENDING_ROWS", 5)
    flaky = FlakyStore()
    discard_stores.append(flaky)
    with openprogram.session_context("spilled", store=flaky):
        for i in range(20):
            ping(i)
        openprogram.flush()
    files = sorted((isolated_home / "spill").glob("*.jsonl"))
    assert len(files) == 1
    assert stat.S_IMODE((isolated_home / "spill").stat().st_mode) == 0o700
    assert stat.S_IMODE(files[0].stat().st_mode) == 0o600
    target = f"sqlite:///{tmp_path / 'recovered.db'}"
    from io import StringIO

    out = StringIO()
    assert cli(["--store", target, "import", str(files[0])], out=out) == 0
    assert "imported" in out.getvalue()
    recovered = openprogram.open_store(target)
    pings = [c for c in recovered.list_calls("spilled") if c.name == "ping"]
    assert sorted(c.output for c in pings) == list(range(20))
    assert recovered.get_session("spilled") is not None
    # Importing twice changes nothing.
    assert cli(["--store", target, "import", str(files[0])], out=StringIO()) == 0
    assert len([c for c in recovered.list_calls("spilled") if c.name == "ping"]) == 20


def test_import_of_a_bad_file_is_a_clear_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text("{not json\n")
    assert cli(["--store", "memory://", "import", str(bad)]) == 1
    assert "bad.jsonl:1" in capsys.readouterr().err
    assert cli(["--store", "memory://", "import", str(tmp_path / "missing.jsonl")]) == 1
    assert "missing.jsonl" in capsys.readouterr().err


@pytest.mark.parametrize(
    "line",
    [
        '{"call": ["c1", "s1", "t1"]}',  # too short: used to fail with a traceback
        '{"session": ["s1", "main", "yesterday", "today"]}',  # text times: used to be written, breaking reads
        '{"call": ["c1", "s1", "t1", null, "tool", "x", null, "ok", null, null, null, null, 1.0, 2.0, 7]}',
        "[1, 2]",
    ],
)
def test_import_of_a_malformed_record_is_a_clear_error_and_writes_nothing(
    line: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text(line + "\n")
    target = f"sqlite:///{tmp_path / 'target.db'}"
    assert cli(["--store", target, "import", str(bad)]) == 1
    assert "bad.jsonl:1: not a spill record" in capsys.readouterr().err
    # A read of a store never created is an error (issue 46), of one created empty a "no sessions".
    assert cli(["--store", target, "sessions"]) == (0 if (tmp_path / "target.db").exists() else 1)
    assert openprogram.open_store(target).list_sessions() == []


def test_back_pressure_loses_nothing(sqlite_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # With a tiny high-water mark, recording threads wait for the writer every 4096 calls.
    monkeypatch.setattr(_recording.writer, "QUEUE_HIGH_WATER", 100)
    with openprogram.session_context("pressure", store=sqlite_url):
        for i in range(10_000):
            ping(i)
    pings = [c for c in openprogram.open_store(sqlite_url).iter_calls("pressure") if c.name == "ping"]
    assert len(pings) == 10_000
    assert sorted(c.output for c in pings) == list(range(10_000))


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("postgresql://u:pw@h/db", "postgresql://u:***@h/db"),
        ("postgresql://u:p%40ss@h:5432/db?sslmode=require", "postgresql://u:***@h:5432/db?sslmode=require"),
        ("postgresql://h/db?user=u&password=pw", "postgresql://h/db?user=u&password=***"),
        ("postgresql://u@h/db", "postgresql://u@h/db"),
        ("sqlite:////tmp/x.db", "sqlite:////tmp/x.db"),
        ("postgresql://u:p@ss@h/db", "postgresql://u:***@h/db"),  # unencoded "@": masked whole
        ("postgresql://u:a@b@c@h/db?x=a@b", "postgresql://u:***@h/db?x=a@b"),
        ("postgresql://h:5432/db", "postgresql://h:5432/db"),
        ("sqlite:////tmp/a@b.db", "sqlite:////tmp/a@b.db"),
    ],
)
def test_urls_are_shown_without_passwords(url: str, shown: str) -> None:
    from openprogram.stores import safe_url

    assert safe_url(url) == shown


def test_store_errors_never_show_a_password(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli(["--store", "nosuch://user:hunter2@host/db", "sessions"]) == 1
    err = capsys.readouterr().err
    assert "hunter2" not in err
    assert "nosuch" in err


def test_sqlite_binds_none_as_null(tmp_path: Path) -> None:
    import openprogram.stores.sqlite  # noqa: F401  (registers the NoneType adapter)

    # Registered at import: binding a NULL is a dict hit instead of a failed attribute lookup.
    assert (type(None), sqlite3.PrepareProtocol) in sqlite3.adapters
    conn = sqlite3.connect(tmp_path / "n.db")
    assert conn.execute("SELECT ? IS NULL, ?", (None, "x")).fetchone() == (1, "x")
    conn.close()


_V1_CALLS = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
INSERT INTO meta VALUES ('schema_version', '1');
CREATE TABLE calls (
    call_id TEXT PRIMARY KEY, session_id TEXT NOT NULL, turn_id TEXT NOT NULL, parent_id TEXT,
    kind TEXT NOT NULL, name TEXT NOT NULL, framework TEXT, status TEXT NOT NULL, inputs TEXT,
    output TEXT, error TEXT, attributes TEXT, started_at REAL NOT NULL, ended_at REAL, owner TEXT NOT NULL
);
CREATE INDEX calls_by_session ON calls (session_id, started_at, call_id);
CREATE TABLE sessions (session_id TEXT PRIMARY KEY, agent_id TEXT NOT NULL, created_at REAL NOT NULL,
                       updated_at REAL NOT NULL);
INSERT INTO sessions VALUES ('old', 'main', 1.0, 2.0);
INSERT INTO calls VALUES ('c1', 'old', 't1', NULL, 'turn', 'main', NULL, 'ok', NULL, NULL, NULL, NULL, 1.0, 2.0, 'h');
INSERT INTO calls VALUES ('c2', 'old', 't1', 'c1', 'tool', 'f', NULL, 'running', '{"x":1}', NULL, NULL, NULL, 1.5,
                          NULL, 'h');
"""


def test_a_schema_1_store_is_migrated_keeping_every_call(tmp_path: Path) -> None:
    from openprogram.stores.sqlite import SCHEMA_VERSION

    path = tmp_path / "v1.db"
    conn = sqlite3.connect(path)
    conn.executescript(_V1_CALLS)
    conn.close()
    store = openprogram.open_store(f"sqlite:///{path}")
    assert [(c.call_id, c.parent_id, c.inputs) for c in store.list_calls("old")] == [
        ("c1", None, None),
        ("c2", "c1", {"x": 1}),
    ]
    # The running row can still be replaced by its final row, as before.
    store.write([], [("c2", "old", "t1", "c1", "tool", "f", None, "ok", '{"x":1}', "2", None, None, 1.5, 1.6, "h")])
    assert [c.status for c in store.list_calls("old")] == ["ok", "ok"]
    conn = sqlite3.connect(path)
    assert conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone() == (str(SCHEMA_VERSION),)
    assert conn.execute("SELECT count(*) FROM sqlite_master WHERE name = 'calls_v1'").fetchone() == (0,)
    conn.close()


def test_a_store_with_a_newer_schema_is_refused_clearly(tmp_path: Path) -> None:
    path = tmp_path / "future.db"
    conn = sqlite3.connect(path)
    conn.executescript(
        "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);"
        "INSERT INTO meta VALUES ('schema_version', '99');"
    )
    conn.close()
    with pytest.raises(openprogram.StoreError, match="newer than this openprogram"):
        openprogram.open_store(f"sqlite:///{path}").list_sessions()


def test_a_reader_does_not_wait_for_a_writer_holding_the_lock(tmp_path: Path) -> None:
    from openprogram.stores.sqlite import SQLiteStore

    path = tmp_path / "busy.db"
    first = SQLiteStore(path)
    first.write([("s", "main", 1.0, 1.0)], [])
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")  # another process mid-batch
    try:
        reader = SQLiteStore(path)  # a fresh object: it checks the schema on first use
        reader.busy_timeout_ms = 100
        assert [s.session_id for s in reader.list_sessions()] == ["s"]
    finally:
        holder.execute("ROLLBACK")
        holder.close()


def test_the_outage_bound_is_read_from_the_environment(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("OPENPROGRAM_MAX_PENDING_ROWS", "20_000")
    assert _recording.writer._env_rows("OPENPROGRAM_MAX_PENDING_ROWS", 50_000) == 20_000
    monkeypatch.setenv("OPENPROGRAM_MAX_PENDING_ROWS", "3")
    assert _recording.writer._env_rows("OPENPROGRAM_MAX_PENDING_ROWS", 50_000) == 100  # a floor, not a spill per call
    monkeypatch.setenv("OPENPROGRAM_MAX_PENDING_ROWS", "lots")
    assert _recording.writer._env_rows("OPENPROGRAM_MAX_PENDING_ROWS", 50_000) == 50_000
    assert "not a whole number" in caplog.text
    monkeypatch.delenv("OPENPROGRAM_MAX_PENDING_ROWS")
    assert _recording.writer._env_rows("OPENPROGRAM_MAX_PENDING_ROWS", 50_000) == 50_000


def test_running_calls_keep_their_owner_beating_without_a_beat_per_batch(
    sqlite_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """While a call runs, its owner's heartbeat is refreshed every HEARTBEAT_EVERY / 2 seconds,
    with or without new records; batches written in between add no heartbeat transaction."""
    monkeypatch.setattr(_recording.writer, "HEARTBEAT_EVERY", 60.0)
    store = openprogram.open_store(sqlite_url)
    beats: list[float] = []
    real = store.heartbeat
    monkeypatch.setattr(store, "heartbeat", lambda owner, at: (beats.append(at), real(owner, at))[1])
    owner = openprogram._runtime.process_owner()
    with openprogram.session_context(store=store) as h:  # the turn call runs until the block ends
        assert openprogram.flush()
        assert len(beats) == 1  # the turn's running row went out with a beat
        for i in range(5):  # five batches, well within the interval
            ping(i)
            assert openprogram.flush()
        assert len(beats) == 1
        monkeypatch.setattr(_recording.writer, "HEARTBEAT_EVERY", 0.2)
        first = store._heartbeats()[owner]  # type: ignore[attr-defined]
        deadline = time.monotonic() + 10
        while store._heartbeats()[owner] == first and time.monotonic() < deadline:  # type: ignore[attr-defined]
            time.sleep(0.05)  # no records: the writer's own cycle beats
        assert store._heartbeats()[owner] > first  # type: ignore[attr-defined]
        assert [c.status for c in store.list_calls(h.session_id) if c.kind == "turn"] == ["running"]
    assert openprogram.flush()
    assert [c.status for c in store.list_calls(h.session_id) if c.kind == "turn"] == ["ok"]


def test_a_store_without_its_own_claim_checks_then_writes() -> None:
    """Stores written before claim_session existed get the check-then-write default."""

    class Older(MemoryStore):
        claim_session = openprogram.Store.claim_session

    store = Older("memory://older")
    assert store.claim_session("s", "a", 1.0) is True
    assert store.claim_session("s", "a", 2.0) is False
    assert store.get_session("s") is not None
    with openprogram.session_context("s2", store=store) as h:
        pass
    assert h.created is True


def test_a_malformed_queued_entry_is_dropped_alone(store: openprogram.Store, caplog: pytest.LogCaptureFixture) -> None:
    @openprogram.tool
    def kept(i: int) -> int:
        return i

    with openprogram.session_context(store=store) as h:
        kept(1)
        # A record whose session handle is missing: what a bug of ours would queue.
        _recording.enqueue(("bad-call", None, None, "tool", "broken", *(None,) * 10))
        kept(2)
        with caplog.at_level(logging.ERROR, logger="openprogram"):
            assert openprogram.flush(timeout=10)
    assert sorted(c.output for c in store.list_calls(h.session_id) if c.name == "kept") == [1, 2]
    assert "dropped a malformed queued entry" in caplog.text


def test_a_deleted_store_file_is_recreated_and_later_records_are_kept(tmp_path: Path) -> None:
    # The writer used to go on writing into the unlinked file: later records were lost while
    # flush() returned True.
    url = f"sqlite:///{tmp_path}/gone.db"
    store = openprogram.open_store(url)
    with openprogram.session_context(store=store):
        pass
    assert openprogram.flush()
    for path in tmp_path.glob("gone.db*"):
        path.unlink()
    with openprogram.session_context(store=store) as second:
        ping(1)
    assert openprogram.flush()
    assert store.get_session(second.session_id) is not None
    assert [c.name for c in store.list_calls(second.session_id)] == ["main", "ping"]
    assert (tmp_path / "gone.db").stat().st_mode & 0o777 == 0o600

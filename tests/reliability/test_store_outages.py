"""Store outages: a locked or hung store costs the agent's thread one short wait per outage, memory stays
bounded when the spill fails too, one error per outage, and recording resumes when the store is back."""

from __future__ import annotations

import logging
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import openprogram
import pytest
from openprogram import _recording
from openprogram.stores.sqlite import SQLiteStore
from reliability_faults import read_only
from reliability_support import ROOT

from bench.reliability_workloads import leaf

# Generous for a noisy 2-core machine: the fix costs about one CALLER_WAIT (1 s) per outage, where
# each entry cost SQLite's 30 s busy timeout (or a 10 s exit flush), and PostgreSQL 5 s or more.
BOUND = 8.0
ENTRIES = 6


def _recover(store: openprogram.Store, deadline: float = 60.0) -> None:
    """Flush until the store has been written again (its back-off cut short: test speed)."""
    end = time.monotonic() + deadline
    state = _recording.writer._state(store)
    while True:
        state.retry_at = 0.0
        openprogram.flush()
        if not state.failing and not _recording.in_outage(store):
            return
        if time.monotonic() > end:
            raise AssertionError("the store never recovered")
        time.sleep(0.2)


def _lines(caplog: pytest.LogCaptureFixture, store: openprogram.Store) -> list[tuple[int, str]]:
    """(level, message) of the lines logged about ``store``."""
    return [(r.levelno, r.getMessage()) for r in caplog.records if store.url in r.getMessage()]


def _tools(store: openprogram.Store, session_id: str) -> list[str]:
    return sorted(str(c.inputs["path"]) for c in store.list_calls(session_id) if c.name == "leaf")


@pytest.fixture
def locked_sqlite(tmp_path: Path) -> Iterator[tuple[openprogram.Store, subprocess.Popen[str]]]:
    """A SQLite store with two sessions recorded by another process's view of it, then locked by a second
    process (``BEGIN EXCLUSIVE``) until the test releases it."""
    path = tmp_path / "locked.db"
    other = SQLiteStore(path)  # not the store the agent uses: these sessions are not known to it
    for n in range(2):
        assert other.claim_session(f"existing-{n}", "main", time.time())
    other.close()
    store = openprogram.open_store(f"sqlite:///{path}")
    locker = subprocess.Popen(
        [sys.executable, "-m", "bench.reliability_workloads", "locker", str(path), "120"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert locker.stdout is not None and locker.stdout.readline().strip() == "locked"
        yield store, locker
    finally:
        locker.terminate()
        locker.wait(30)


def test_entering_sessions_by_id_on_a_locked_sqlite_store_waits_once_per_outage(
    locked_sqlite: tuple[openprogram.Store, subprocess.Popen[str]], tmp_path: Path
) -> None:
    store, locker = locked_sqlite
    target = tmp_path / "notes.txt"
    target.write_text("v0")

    @openprogram.tool
    def edit(n: int) -> str:
        with openprogram.file_effect(target) as path:  # an undoable change: its effect is journaled first
            path.write_text(f"v{n}")
        return str(n)

    started = time.monotonic()
    entered = []
    for n in range(ENTRIES):  # existing sessions and new ones, each entered by its id
        session_id = f"existing-{n}" if n < 2 else f"new-{n}"
        with openprogram.session_context(session_id, store=store) as h:
            assert leaf("o", str(n)) == str(n)
            assert edit(n) == str(n)
        entered.append(h)
        if time.monotonic() - started > BOUND:
            break
    elapsed = time.monotonic() - started
    assert elapsed < BOUND, f"{len(entered)} entries took {elapsed:.1f}s"
    assert _recording.in_outage(store)
    # During the outage an id is entered as a continuing session: nothing claimed, nothing waited for.
    assert [h.created for h in entered] == [False] * ENTRIES

    locker.terminate()  # the store comes back
    locker.wait(30)
    _recover(store)
    with openprogram.session_context("after", store=store) as h:  # claimed as usual again
        for n in range(5):
            leaf("o", f"after-{n}")
    assert h.created
    assert openprogram.flush()
    assert _tools(store, "after") == [f"after-{n}" for n in range(5)]
    assert _tools(store, "existing-1") == ["1"]  # written once the lock was gone
    assert _tools(store, "new-5") == ["5"]
    # An effect journaled during the outage is written in the background once the store is back: undoable.
    deadline = time.monotonic() + 30
    while not store.list_effects("new-5") and time.monotonic() < deadline:
        time.sleep(0.2)
    (effect,) = openprogram.undo("new-5", dry_run=True, store=store)
    assert effect.kind == "file" and effect.state == "applied"


class SilentServer:
    """A TCP server that accepts connections and never answers: a PostgreSQL that hangs."""

    def __init__(self) -> None:
        self.listener = socket.socket()
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(64)
        self.port = self.listener.getsockname()[1]
        self.held: list[socket.socket] = []
        self.thread = threading.Thread(target=self._accept, daemon=True)
        self.thread.start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:  # closed
                return
            self.held.append(conn)

    def close(self) -> None:
        self.listener.close()
        for conn in self.held:
            conn.close()


@pytest.fixture
def hung_postgres() -> Iterator[openprogram.Store]:
    server = SilentServer()
    store = openprogram.open_store(f"postgresql://postgres@127.0.0.1:{server.port}/test")
    try:
        yield store
    finally:
        server.close()  # refused from now on: the writer's last retry fails at once
        openprogram.flush(5.0)
        _forget(store)


def _forget(store: openprogram.Store) -> None:
    """Forget a store a test left failing (its outage would make every later flush report False)."""
    _recording.writer.discard_store(store)
    _recording.outage.note_recovery(store)


def test_a_hung_postgresql_costs_entries_and_undoable_calls_one_short_wait(
    hung_postgres: openprogram.Store, tmp_path: Path
) -> None:
    store = hung_postgres
    target = tmp_path / "notes.txt"
    target.write_text("v0")

    @openprogram.tool
    def edit(n: int) -> str:
        with openprogram.file_effect(target) as path:
            path.write_text(f"v{n}")
        return str(n)

    started = time.monotonic()
    done = 0
    for n in range(ENTRIES):
        with openprogram.session_context(f"chat-{n}", store=store):
            assert edit(n) == str(n)
            assert edit(n + 100) == str(n + 100)
        done += 1
        if time.monotonic() - started > BOUND:
            break
    elapsed = time.monotonic() - started
    assert elapsed < BOUND, f"{done} requests took {elapsed:.1f}s"
    assert target.read_text() == f"v{ENTRIES - 1 + 100}"
    assert _recording.in_outage(store)


def test_store_and_spill_both_failing_keep_memory_bounded_and_log_one_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(_recording.writer, "MAX_PENDING_ROWS", 100)
    caplog.set_level(logging.INFO, logger="openprogram")
    directory, spill = tmp_path / "store", tmp_path / "home" / "spill"
    with read_only(directory) as store_switch, read_only(spill) as spill_switch:
        store_switch.on()
        spill_switch.on()
        store = openprogram.open_store(f"sqlite:///{directory / 'gone.db'}")
        state = _recording.writer._state(store)
        held = []
        with openprogram.session_context(store=store):
            for n in range(2_000):
                leaf("m", str(n))
                if n % 200 == 199:
                    assert openprogram.flush() is False
                    held.append(len(state.pending_calls))
        assert max(held) <= 100 + 200, held  # the bound, plus at most what one cycle took in
        assert state.dropped > 1_000
        # This store's lines only (an earlier test's store may still be retried in the background).
        errors = [m for m in _lines(caplog, store) if m[0] >= logging.ERROR]
        assert len(errors) == 1 and "cannot spill" in errors[0][1], errors
        warnings = [m for m in _lines(caplog, store) if m[0] == logging.WARNING]
        assert len(warnings) == 1 and "cannot write to store" in warnings[0][1], warnings
        caplog.clear()
        store_switch.off()
        _recover(store)
    back = [m for level, m in _lines(caplog, store) if "writable again" in m]
    assert len(back) == 1 and "records of the outage were dropped" in back[0], back
    with openprogram.session_context(store=store) as h:  # recorded after recovery: durable
        for n in range(50):
            leaf("m", f"after-{n}")
    assert openprogram.flush()
    assert _tools(store, h.session_id) == sorted(f"after-{n}" for n in range(50))

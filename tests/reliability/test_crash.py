"""Crash safety: writers SIGKILLed at seeded random moments lose nothing they flushed."""

from __future__ import annotations

import signal
from pathlib import Path

import openprogram
import pytest
from openprogram.stores.sqlite import SQLiteStore
from reliability_support import scaled

from bench.reliability_workloads import check_after_crashes, crash_once

pytestmark = pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs SIGKILL (POSIX)")


def test_sigkill_at_random_points_loses_no_flushed_record(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'crash.db'}"
    session_id = "crash-session"
    progress = tmp_path / "progress.jsonl"
    rounds = scaled(3)
    for seed in range(rounds):
        crash_once(url, session_id, seed, progress, tmp_path / "home")
    store = openprogram.open_store(url)
    assert isinstance(store, SQLiteStore)
    figures = check_after_crashes(store, session_id, progress, rounds)
    assert figures["interrupted"] >= rounds  # at least every turn

    # The next process appends to the same session.
    with openprogram.session_context(session_id, store=store) as h:
        assert h.created is False
        openprogram.call_scope("call", "after-crash").enter().exit()
    assert openprogram.flush()
    after = store.list_calls(session_id)
    assert len(after) == figures["calls"] + 2
    assert len([c for c in after if c.kind == "turn"]) == rounds + 1
    assert store.integrity_check() == "ok"

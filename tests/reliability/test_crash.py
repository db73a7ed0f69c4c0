"""Crash safety: writers SIGKILLed at seeded random moments lose nothing they flushed."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import ROOT, scaled

import openprogram
from openprogram.stores.sqlite import SQLiteStore

pytestmark = pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs SIGKILL (POSIX)")


def crash_once(url: str, session_id: str, seed: int, progress: Path, home: Path) -> None:
    """Start a recording child, wait until it has flushed something, SIGKILL it at a seeded moment."""
    rng = random.Random(seed)
    env = dict(os.environ, OPENPROGRAM_HOME=str(home), PYTHONPATH=str(ROOT))
    before = progress.read_text().count("\n") if progress.exists() else 0
    child = subprocess.Popen(
        [sys.executable, "-m", "bench.reliability_workloads", "crash", url, session_id, str(seed), str(progress)],
        cwd=ROOT, env=env, stderr=subprocess.PIPE,
    )  # fmt: skip
    deadline = time.monotonic() + 60
    while (progress.read_text().count("\n") if progress.exists() else 0) <= before:
        if child.poll() is not None:
            raise AssertionError(f"crash child exited early: {child.stderr.read().decode() if child.stderr else ''}")
        if time.monotonic() > deadline:
            child.kill()
            raise AssertionError("crash child never flushed")
        time.sleep(0.01)
    time.sleep(rng.uniform(0.0, 0.6))
    child.send_signal(signal.SIGKILL)
    child.wait()  # reaped: its pid is gone, so its running calls read as interrupted
    assert child.returncode == -signal.SIGKILL


def check_after_crashes(store: SQLiteStore, session_id: str, progress: Path, rounds: int) -> dict[str, int]:
    assert store.integrity_check() == "ok"
    calls = store.list_calls(session_id)
    ids = [c.call_id for c in calls]
    assert len(ids) == len(set(ids)), "duplicate calls"
    turns = [c for c in calls if c.kind == "turn"]
    assert len(turns) == rounds, f"{len(turns)} turns for {rounds} processes"
    assert all(t.status == "interrupted" for t in turns), [t.status for t in turns]
    assert [c for c in calls if c.status == "running"] == [], "a killed process left calls running"
    by_turn: dict[str, set[int]] = {t.turn_id: set() for t in turns}
    for c in calls:
        if c.kind == "tool" and c.name == "leaf":
            assert c.status == "ok"
            by_turn[c.turn_id].add(int(c.inputs["path"]))
    # Every leaf flushed before the last progress line of its process is in the store.
    durable: dict[str, int] = {}
    for line in progress.read_text().splitlines():
        entry = json.loads(line)
        durable[entry["turn"]] = entry["durable_leafs_upto"]
    assert set(durable) == set(by_turn)
    lost = 0
    for turn_id, upto in durable.items():
        missing = set(range(1, upto + 1)) - by_turn[turn_id]
        lost += len(missing)
    assert lost == 0, f"{lost} flushed records lost"
    interrupted = sum(1 for c in calls if c.status == "interrupted")
    return {"calls": len(calls), "interrupted": interrupted, "turns": len(turns)}


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

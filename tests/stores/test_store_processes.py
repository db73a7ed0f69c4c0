"""Several processes, one store: concurrent writers, durability across a crash, the CLI."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time

import openprogram
import pytest
from store_support import WORKER, worker_env

WORKERS = 4
BRANCHES = 150
CALLS_PER_WORKER = 1 + BRANCHES * 4  # a turn, and per branch the branch and 3 leaves


def test_workers_write_one_session_at_once(durable_url: str) -> None:
    session_id = f"shared-{time.time_ns()}"
    start_at = time.time() + 1.5  # every worker starts recording at the same moment
    procs = [
        subprocess.Popen(
            [sys.executable, str(WORKER), durable_url, session_id, str(BRANCHES), str(start_at)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=worker_env(),
        )
        for _ in range(WORKERS)
    ]
    turns = set()
    for proc in procs:
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
        turn_id, flushed = out.split()
        assert flushed == "True", err
        assert "Traceback" not in err, err
        turns.add(turn_id)
    assert len(turns) == WORKERS

    store = openprogram.open_store(durable_url)
    calls = store.list_calls(session_id)
    assert len(calls) == WORKERS * CALLS_PER_WORKER  # no record lost
    assert len({c.call_id for c in calls}) == len(calls)
    by_id = {c.call_id: c for c in calls}
    roots = [c for c in calls if c.parent_id is None]
    assert sorted(c.turn_id for c in roots) == sorted(turns) and all(c.kind == "turn" for c in roots)
    for call in calls:  # parent links intact: every call hangs under its own turn, at the right level
        assert call.status == "ok"
        if call.kind == "turn":
            continue
        parent = by_id[call.parent_id]  # type: ignore[index]
        assert parent.turn_id == call.turn_id
        assert parent.name == {"branch": "worker", "leaf": "branch"}[call.name]
        if call.name == "leaf":
            assert call.output.split(".")[0] == str(parent.inputs["n"])
    # A stable order: start time, then call id, the same on every read.
    keys = [(c.started_at, c.call_id) for c in calls]
    assert keys == sorted(keys)
    assert [c.call_id for c in store.list_calls(session_id)] == [c.call_id for c in calls]
    info = store.get_session(session_id)
    assert info is not None and info.call_count == len(calls)
    assert [s.session_id for s in store.list_sessions()].count(session_id) == 1


def test_flushed_records_survive_a_killed_process(durable_url: str) -> None:
    session_id = f"killed-{time.time_ns()}"
    proc = subprocess.Popen(
        [sys.executable, str(WORKER), durable_url, session_id, "5", "0", "hold"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=worker_env(),
    )
    try:
        assert proc.stdout is not None
        turn_id, flushed = proc.stdout.readline().split()
        assert flushed == "True"
    finally:
        proc.send_signal(signal.SIGKILL)  # no exit hooks, no final flush
        proc.wait()
    calls = openprogram.open_store(durable_url).list_calls(session_id)
    assert len(calls) == 1 + 5 * 4
    turn = calls[0]
    assert (turn.kind, turn.turn_id, turn.ended_at) == ("turn", turn_id, None)
    assert turn.status == "interrupted"  # it was running when its (now dead) process was killed
    assert {c.status for c in calls[1:]} == {"ok"}


def _cli(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "openprogram", *args], check=False, capture_output=True, text=True, env=env, timeout=60
    )


@pytest.mark.parametrize("how", ["--store", "OPENPROGRAM_STORE"])
def test_cli_reads_the_store(durable_url: str, how: str) -> None:
    @openprogram.tool
    def lookup(q: str) -> str:
        return q.upper()

    with openprogram.session_context(store=durable_url, agent_id="cli-agent") as h:
        lookup("abc")
    assert openprogram.flush()
    if how == "--store":
        env, head = worker_env(), ["--store", durable_url]
    else:
        env, head = worker_env(OPENPROGRAM_STORE=durable_url), []

    listed = _cli(*head, "sessions", env=env)
    assert listed.returncode == 0, listed.stderr
    assert h.session_id in listed.stdout and "cli-agent" in listed.stdout

    shown = _cli(*head, "show", h.session_id, env=env)
    assert shown.returncode == 0, shown.stderr
    assert "turn cli-agent [ok]" in shown.stdout and "tool lookup [ok]" in shown.stdout

    as_json = json.loads(_cli(*head, "show", h.session_id, "--json", env=env).stdout)
    assert [(c["kind"], c["name"], c["output"]) for c in as_json["calls"]] == [
        ("turn", "cli-agent", None),
        ("tool", "lookup", "ABC"),
    ]

    missing = _cli(*head, "show", "no-such-session", env=env)
    assert missing.returncode == 1 and "no session 'no-such-session'" in missing.stderr

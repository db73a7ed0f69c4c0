"""Crossing process boundaries: a child joining the session, SIGKILL after flush, two writers at once."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import openprogram
import pytest

from .conftest import calls_by_name, one, python_env, run_python

CHILD_TOOL = """
import openprogram

@openprogram.tool
def child_tool(x):
    return grandchild(x) * 2

@openprogram.tool
def grandchild(x):
    return x + 1

print(child_tool(20))
"""


def test_subprocess_joins_the_parents_session_under_the_parents_call(sqlite_url: str) -> None:
    results: list[str] = []

    @openprogram.tool
    def spawn() -> None:
        env = python_env(**openprogram.export_context())
        done = run_python(CHILD_TOOL, env=env)
        assert done.returncode == 0, done.stderr
        results.append(done.stdout.strip())

    with openprogram.session_context(store=sqlite_url) as h:
        spawn()
    assert results == ["42"]
    store = openprogram.open_store(sqlite_url)
    parent_call = one(store, h.session_id, "spawn")
    child = one(store, h.session_id, "child_tool")
    assert child.parent_id == parent_call.call_id
    assert child.turn_id == h.turn_id
    assert child.status == "ok" and child.output == 42
    assert one(store, h.session_id, "grandchild").parent_id == child.call_id
    # The child opened no session of its own.
    assert [s.session_id for s in store.list_sessions()] == [h.session_id]


def test_export_context_outside_a_session_is_empty() -> None:
    assert openprogram.export_context() == {}
    assert openprogram.export_context({"A": "1"}) == {"A": "1"}


def test_export_context_contents(sqlite_url: str) -> None:
    with openprogram.session_context("exp", store=sqlite_url, turn_id="t1", agent_id="ag") as h:
        env = openprogram.export_context({"KEEP": "x"})
    assert env["KEEP"] == "x"
    assert env["OPENPROGRAM_SESSION_ID"] == "exp"
    assert env["OPENPROGRAM_TURN_ID"] == "t1"
    assert env["OPENPROGRAM_PARENT_CALL"] == h.root_call_id
    assert env["OPENPROGRAM_AGENT_ID"] == "ag"
    assert openprogram.open_store(env["OPENPROGRAM_STORE"]) is openprogram.open_store(sqlite_url)


KILLED_CHILD = """
import sys
import openprogram

@openprogram.tool
def finished(i):
    return i

@openprogram.tool
def hangs():
    for i in range(__N__):
        finished(i)
    ok = openprogram.flush()
    print("flushed" if ok else "flush failed", flush=True)
    sys.stdin.readline()  # blocks until the parent kills us

with openprogram.session_context("killed", store=__URL__) as h:
    hangs()
"""


JOINED_CHILD = """
import sys, time
import openprogram

@openprogram.tool
def quick():
    return 1

@openprogram.tool
def hangs():
    print("hanging", flush=True)
    time.sleep(120)

quick()
hangs()
"""


@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs SIGKILL")
def test_a_child_joined_from_the_environment_writes_while_it_runs(sqlite_url: str) -> None:
    # A child that joins through export_context() writes as it goes, like any process: its
    # calls are in the store while it runs (no flush), and survive a SIGKILL.
    with openprogram.session_context(store=sqlite_url) as h:
        env = python_env(**openprogram.export_context())
    child = subprocess.Popen([sys.executable, "-c", JOINED_CHILD], env=env, stdout=subprocess.PIPE, text=True)
    store = openprogram.open_store(sqlite_url)
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "hanging"
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            names = {c.name for c in store.list_calls(h.session_id)}
            if {"quick", "hangs"} <= names:
                break
            time.sleep(0.05)
    finally:
        child.kill()
        child.wait(30)
        if child.stdout is not None:
            child.stdout.close()
    by_name = {c.name: c for c in store.list_calls(h.session_id)}
    assert by_name["quick"].status == "ok"
    assert by_name["hangs"].status == "interrupted"  # its writer is dead
    assert by_name["quick"].turn_id == h.turn_id


@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs SIGKILL")
def test_sigkill_after_flush_loses_nothing_and_running_calls_read_interrupted(sqlite_url: str) -> None:
    n = 500
    code = textwrap.dedent(KILLED_CHILD).replace("__N__", str(n)).replace("__URL__", repr(sqlite_url))
    child = subprocess.Popen(
        [sys.executable, "-c", code],
        env=python_env(),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout is not None
        line = child.stdout.readline().strip()
        assert line == "flushed", child.stderr.read() if child.stderr else line
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait(30)
        for pipe in (child.stdin, child.stdout, child.stderr):
            if pipe is not None:
                pipe.close()
    assert child.returncode == -signal.SIGKILL
    store = openprogram.open_store(sqlite_url)
    assert store.integrity_check() == "ok"  # type: ignore[attr-defined]
    by_name = calls_by_name(store, "killed")
    assert sorted(c.output for c in by_name["finished"]) == list(range(n))
    assert {c.status for c in by_name["finished"]} == {"ok"}
    # Still "running" in the file, reported as interrupted: the writer is dead.
    assert [c.status for c in by_name["hangs"]] == ["interrupted"]
    assert [c.status for c in by_name["main"]] == ["interrupted"]
    assert by_name["finished"][0].parent_id == by_name["hangs"][0].call_id
    # The store stays fully usable: the session continues.
    with openprogram.session_context("killed", store=store) as again:
        pass
    assert again.created is False
    assert len([c for c in store.list_calls("killed") if c.kind == "turn"]) == 2


WRITER = """
import sys
import openprogram

@openprogram.tool
def write(proc, i, payload):
    return i

sys.stdin.readline()  # start together
with openprogram.session_context("shared", store=__URL__, agent_id="w" + __PROC__):
    for i in range(__N__):
        write(__PROC__, i, {"text": "x" * 50})
        if i % 500 == 0:
            openprogram.flush()
print("done", flush=True)
"""


def test_two_processes_writing_one_store_lose_nothing(sqlite_url: str) -> None:
    n = 3000
    procs = []
    for p in ("0", "1"):
        code = (
            textwrap.dedent(WRITER)
            .replace("__PROC__", repr(p))
            .replace("__N__", str(n))
            .replace("__URL__", repr(sqlite_url))
        )
        procs.append(
            subprocess.Popen(
                [sys.executable, "-c", code],
                env=python_env(),
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
        )
    for proc in procs:  # both are started and waiting: release them together
        assert proc.stdin is not None
        proc.stdin.write("go\n")
        proc.stdin.flush()
    for proc in procs:
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
        assert out.strip() == "done"
    store = openprogram.open_store(sqlite_url)
    by_name = calls_by_name(store, "shared")
    writes = by_name["write"]
    assert len(writes) == 2 * n
    for p in ("0", "1"):
        assert sorted(c.output for c in writes if c.inputs["proc"] == p) == list(range(n))
    assert len(by_name["w0"]) == len(by_name["w1"]) == 1
    turns = {t.call_id for t in by_name["w0"] + by_name["w1"]}
    assert {c.parent_id for c in writes} == turns
    assert all(c.status == "ok" for c in store.list_calls("shared"))
    assert store.integrity_check() == "ok"  # type: ignore[attr-defined]


@pytest.mark.filterwarnings("ignore:This process .* is multi-threaded:DeprecationWarning")
def test_forked_child_records_into_the_parents_session(sqlite_url: str) -> None:
    if not hasattr(os, "fork"):
        pytest.skip("needs fork")

    @openprogram.tool
    def in_child() -> int:
        return os.getpid()

    with openprogram.session_context("forked", store=sqlite_url) as h:
        openprogram.flush()
        pid = os.fork()
        if pid == 0:  # the child: record, flush, leave without running the parent's cleanup
            code = 0
            try:
                in_child()
                code = 0 if openprogram.flush() else 3
            except BaseException:
                code = 4
            os._exit(code)
        _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    call = one(openprogram.open_store(sqlite_url), "forked", "in_child")
    assert call.output == pid
    assert call.parent_id == h.root_call_id
    assert call.status == "ok"


LIVE_CHILD = """
import sys
import openprogram

@openprogram.tool
def waiting():
    print("flushed" if openprogram.flush() else "flush failed", flush=True)
    sys.stdin.readline()  # until the parent says go
    return "done"

with openprogram.session_context("live", store=__URL__):
    waiting()
"""


def test_running_calls_of_a_live_process_stay_running(sqlite_url: str) -> None:
    code = textwrap.dedent(LIVE_CHILD).replace("__URL__", repr(sqlite_url))
    child = subprocess.Popen(
        [sys.executable, "-c", code],
        env=python_env(),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert child.stdin is not None and child.stdout is not None
    try:
        assert child.stdout.readline().strip() == "flushed"
        store = openprogram.open_store(sqlite_url)
        assert {c.name: c.status for c in store.list_calls("live")} == {"main": "running", "waiting": "running"}
    finally:
        child.stdin.write("go\n")
        child.stdin.flush()
        _, err = child.communicate(timeout=60)
    assert child.returncode == 0, err
    assert {c.name: (c.status, c.output) for c in store.list_calls("live")} == {
        "main": ("ok", None),
        "waiting": ("ok", "done"),
    }


def test_liveness_of_writers_on_other_hosts_follows_their_heartbeat(store: openprogram.Store) -> None:
    import time

    now = time.time()

    def row(call_id: str, owner: str) -> tuple[object, ...]:
        return (
            call_id,
            "remote",
            "t",
            None,
            "tool",
            call_id,
            None,
            "running",
            "{}",
            None,
            None,
            None,
            now,
            None,
            owner,
        )

    store.write(
        [("remote", "main", now, now)],
        [row("fresh", "other-host:1:aaaa"), row("stale", "other-host:2:bbbb"), row("silent", "other-host:3:cccc")],  # type: ignore[list-item]
    )
    store.heartbeat("other-host:1:aaaa", now)
    store.heartbeat("other-host:2:bbbb", now - 3600)
    statuses = {c.call_id: c.status for c in store.list_calls("remote")}
    assert statuses == {"fresh": "running", "stale": "interrupted", "silent": "interrupted"}


def test_calls_still_running_at_exit_are_recorded_interrupted(sqlite_url: str) -> None:
    result = run_python(
        f"""
        import threading
        import openprogram

        started = threading.Event()

        @openprogram.tool
        def forever():
            started.set()
            threading.Event().wait()

        @openprogram.tool
        def quick(i):
            return i

        with openprogram.session_context("exiting", store={sqlite_url!r}) as h:
            threading.Thread(target=openprogram.propagate(forever), daemon=True).start()
            started.wait()
            for i in range(10):
                quick(i)
        # no flush: leaving the session and the interpreter make it durable
        """
    )
    assert result.returncode == 0, result.stderr
    by_name = calls_by_name(openprogram.open_store(sqlite_url), "exiting")
    assert sorted(c.output for c in by_name["quick"]) == list(range(10))
    [forever] = by_name["forever"]
    assert forever.status == "interrupted"
    assert forever.error == "process exited while the call was running"
    assert forever.ended_at is not None
    assert [c.status for c in by_name["main"]] == ["ok"]


def test_records_of_an_unwritable_store_are_spilled_at_exit_and_imported(tmp_path: Path, isolated_home: Path) -> None:
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("x")
    broken_url = f"sqlite:///{blocker / 'sessions.db'}"
    result = run_python(
        f"""
        import openprogram

        @openprogram.tool
        def kept(i):
            return i

        with openprogram.session_context("outage", store={broken_url!r}):
            for i in range(25):
                kept(i)
        print("agent finished")
        """
    )
    assert result.returncode == 0, result.stderr
    assert "agent finished" in result.stdout
    assert str(blocker / "sessions.db") in result.stderr  # the warning names the store
    spills = sorted((isolated_home / "spill").glob("*.jsonl"))
    assert len(spills) == 1
    assert "openprogram import" in result.stderr
    target = f"sqlite:///{tmp_path / 'recovered.db'}"
    done = subprocess.run(
        [sys.executable, "-m", "openprogram", "--store", target, "import", str(spills[0])],
        env=python_env(),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    by_name = calls_by_name(openprogram.open_store(target), "outage")
    assert sorted(c.output for c in by_name["kept"]) == list(range(25))
    assert [t.status for t in by_name["main"]] == ["ok"]


@pytest.mark.filterwarnings("ignore:This process .* is multi-threaded:DeprecationWarning")
def test_forked_child_does_not_inherit_the_parents_store_lock_or_connection(sqlite_url: str) -> None:
    if not hasattr(os, "fork"):
        pytest.skip("needs fork")
    store = openprogram.open_store(sqlite_url)

    @openprogram.tool
    def in_child() -> int:
        return 1

    with openprogram.session_context("fork-lock", store=store):
        openprogram.flush()
        # Fork while the store is busy, as when the writer thread is in the middle of a batch.
        with store._lock:  # type: ignore[attr-defined]
            pid = os.fork()
            if pid == 0:
                code = 5
                try:
                    in_child()
                    code = 0 if openprogram.flush(timeout=10) else 3
                finally:
                    os._exit(code)
        _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0, "the child could not write: it inherited a held lock"
    assert one(store, "fork-lock", "in_child").status == "ok"


OPENER = """
import sys, time
from openprogram.stores.sqlite import SQLiteStore
path, at = sys.argv[1], float(sys.argv[2])
while time.time() < at:
    pass
# The first write creates the file, switches it to WAL and makes the schema.
SQLiteStore(path).write([("s-" + sys.argv[3], "main", 1.0, 1.0)], [])
print("ok")
"""


def test_processes_opening_a_new_store_at_the_same_instant_all_succeed(tmp_path: Path) -> None:
    import time

    for trial in range(10):
        path = tmp_path / f"new-{trial}.db"
        at = time.time() + 0.5  # all four are started and spinning by then (startup takes ~0.3 s)
        procs = [
            subprocess.Popen(
                [sys.executable, "-c", OPENER, str(path), str(at), str(n)],
                env=python_env(),
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for n in range(4)
        ]
        for proc in procs:
            out, err = proc.communicate(timeout=60)
            assert proc.returncode == 0 and out.strip() == "ok", err
        assert len(openprogram.open_store(f"sqlite:///{path}").list_sessions()) == 4


CLAIMER = """
import os, sys, time
import openprogram
go, done = sys.argv[1], sys.argv[2]
while not os.path.exists(go):
    time.sleep(0.001)
with openprogram.session_context("raced-id", store=sys.argv[3]) as h:
    print(h.created, flush=True)
    while not os.path.exists(done):  # no exit flush until every process has entered
        time.sleep(0.01)
"""


def test_processes_entering_one_new_id_at_once_report_created_once(sqlite_url: str, tmp_path: Path) -> None:
    """Of several processes entering the same new session id at the same moment, exactly one
    reports created=True: the store records the session at the first entry, atomically."""
    go, done = tmp_path / "go", tmp_path / "done"
    command = [sys.executable, "-c", CLAIMER, str(go), str(done), sqlite_url]
    children = [
        subprocess.Popen(command, env=python_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for _ in range(6)
    ]
    openprogram.open_store(sqlite_url).list_sessions()  # the file and schema exist before the race
    time.sleep(1.0)  # every child imported openprogram and is waiting
    go.touch()
    created = [child.stdout.readline().strip() for child in children if child.stdout is not None]
    done.touch()
    outputs = [child.communicate(timeout=60) for child in children]
    assert [child.returncode for child in children] == [0] * 6, [err for _, err in outputs]
    assert sorted(created) == ["False"] * 5 + ["True"]
    store = openprogram.open_store(sqlite_url)
    assert len([c for c in store.list_calls("raced-id") if c.kind == "turn"]) == 6
    info = store.get_session("raced-id")
    assert info is not None and info.call_count == 6

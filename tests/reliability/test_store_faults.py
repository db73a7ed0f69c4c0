"""Store faults: the agent keeps running, records are kept and written later or spilled, one warning."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import openprogram
import pytest
from openprogram import _recording
from openprogram.stores.sqlite import SQLiteStore
from reliability_faults import fill, read_only, small_filesystem
from reliability_support import ROOT, WarningCounter

from bench.reliability_workloads import leaf


def _record(store: openprogram.Store, calls: int, tag: str = "f") -> str:
    """An agent turn of ``calls`` tool calls; every tool must return normally."""
    with openprogram.session_context(store=store) as h:
        for n in range(calls):
            assert leaf(tag, str(n)) == str(n)
    return h.session_id


def _wait_durable(deadline: float = 60.0) -> None:
    """Flush until the failing store has been retried successfully (back-off is 1 s, 2 s, 4 s...)."""
    end = time.monotonic() + deadline
    for state in list(_recording.writer._states.values()):  # retry now rather than after the back-off (test speed)
        state.retry_at = 0.0
    while not openprogram.flush():
        if time.monotonic() > end:
            raise AssertionError("the store never recovered")
        time.sleep(0.2)


def _assert_complete(store: openprogram.Store, session_id: str, calls: int) -> None:
    records = store.list_calls(session_id)
    assert sorted(int(c.inputs["path"]) for c in records if c.kind == "tool") == list(range(calls))
    assert len(records) == calls + 1


def _store_warnings(log: WarningCounter) -> list[str]:
    return [m for m in log.messages if "store" in m]


def test_read_only_directory_then_recovery(tmp_path: Path, warnings_log: WarningCounter) -> None:
    directory = tmp_path / "ro"
    with read_only(directory) as switch:
        switch.on()
        store = openprogram.open_store(f"sqlite:///{directory / 'sub' / 'ro.db'}")
        session_id = _record(store, 200)
        assert openprogram.flush() is False  # not durable, and says so
        switch.off()
        _wait_durable()
    _assert_complete(store, session_id, 200)
    warnings = _store_warnings(warnings_log)
    assert len(warnings) == 1, warnings
    assert str(directory / "sub" / "ro.db") in warnings[0]


def test_read_only_database_file_then_recovery(tmp_path: Path, warnings_log: WarningCounter) -> None:
    directory = tmp_path / "rofile"
    directory.mkdir()
    store = openprogram.open_store(f"sqlite:///{directory / 'ro.db'}")
    first = _record(store, 10)
    assert openprogram.flush()
    assert isinstance(store, SQLiteStore)
    store.close()  # the next write reconnects to a file we cannot write
    with read_only(directory) as switch:
        switch.on()
        with openprogram.session_context(first, store=store) as h:  # continue the session meanwhile
            for n in range(10, 60):
                leaf("f", str(n))
        assert openprogram.flush() is False
        switch.off()
        _wait_durable()
    assert h.session_id == first
    records = store.list_calls(first)
    assert sorted(int(c.inputs["path"]) for c in records if c.kind == "tool") == list(range(60))
    warnings = _store_warnings(warnings_log)
    assert len(warnings) == 1, warnings


def test_disk_full_then_recovery(tmp_path: Path, warnings_log: WarningCounter) -> None:
    with small_filesystem(tmp_path / "small") as mount:
        store = openprogram.open_store(f"sqlite:///{mount / 'full.db'}")
        _record(store, 5)
        assert openprogram.flush()
        filler = fill(mount)
        # Large captures so that the batch cannot fit anywhere in what is left.
        with openprogram.session_context(store=store) as h:
            for n in range(300):
                assert leaf("x" * 3000, str(n)) == str(n)
        assert openprogram.flush() is False
        filler.unlink()
        _wait_durable()
        records = store.list_calls(h.session_id)
        assert sorted(int(c.inputs["path"]) for c in records if c.kind == "tool") == list(range(300))
        assert isinstance(store, SQLiteStore) and store.integrity_check() == "ok"
        store.close()
    warnings = _store_warnings(warnings_log)
    assert len(warnings) == 1, warnings
    assert "full" in warnings[0].lower()


def test_locked_beyond_busy_timeout_then_recovery(tmp_path: Path, warnings_log: WarningCounter) -> None:
    path = tmp_path / "locked.db"
    store = openprogram.open_store(f"sqlite:///{path}")
    assert isinstance(store, SQLiteStore)
    _record(store, 1)
    assert openprogram.flush()
    store.close()
    store.busy_timeout_ms = 200  # this instance only: "beyond the busy timeout" in a fraction of a second
    locker = subprocess.Popen(
        [sys.executable, "-m", "bench.reliability_workloads", "locker", str(path), "3"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert locker.stdout is not None and locker.stdout.readline().strip() == "locked"
        session_id = _record(store, 300)
        assert openprogram.flush() is False
    finally:
        locker.wait(60)
    _wait_durable()
    _assert_complete(store, session_id, 300)
    warnings = _store_warnings(warnings_log)
    assert len(warnings) == 1, warnings
    assert "locked" in warnings[0]


def test_backlog_past_the_memory_bound_is_spilled_and_imported(
    tmp_path: Path, warnings_log: WarningCounter, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_recording.writer, "MAX_PENDING_ROWS", 100)
    directory = tmp_path / "spilling"
    with read_only(directory) as switch:
        switch.on()
        store = openprogram.open_store(f"sqlite:///{directory / 'spill.db'}")
        session_id = _record(store, 1_000)
        for _ in range(3):  # let the writer run a few cycles past the bound
            openprogram.flush()
        switch.off()
        _wait_durable()
    spills = sorted((tmp_path / "home" / "spill").glob("*.jsonl"))
    assert spills, "nothing spilled"
    stored = {c.call_id for c in store.list_calls(session_id)}
    assert len(stored) < 1_001  # some went to the spill file, not the store
    from openprogram._cli import main as cli_main

    for spill in spills:
        assert cli_main(["--store", store.url, "import", str(spill)]) == 0
    _assert_complete(store, session_id, 1_000)
    spill_warnings = [m for m in warnings_log.messages if "openprogram import" in m]
    assert len(spill_warnings) == 1 and str(spills[0]) in spill_warnings[0]


def test_spilled_model_calls_keep_their_messages_and_import_whole(
    tmp_path: Path, warnings_log: WarningCounter, monkeypatch: pytest.MonkeyPatch
) -> None:
    from openprogram import _kit

    monkeypatch.setattr(_recording.writer, "MAX_PENDING_ROWS", 20)
    directory = tmp_path / "spilling"
    history = [_kit.message("system", "You read files.")]
    sent = []
    with read_only(directory) as switch:
        switch.on()
        store = openprogram.open_store(f"sqlite:///{directory / 'spill.db'}")
        with openprogram.session_context(store=store) as h:
            for step in range(80):
                history.append(_kit.message("user", f"read file {step}"))
                sent.append(list(history))
                call = _kit.ModelCall.request("tests", "fake-model", lambda: _kit.model_inputs(list(history)))
                assert call is not None
                with call:
                    pass
                call.answered(_kit.reply(f"file {step} read"))
                history.append(_kit.message("assistant", f"file {step} read"))
                if step % 10 == 9:
                    openprogram.flush()  # the writer runs past the bound and spills
        switch.off()
        _wait_durable()
    spills = sorted((tmp_path / "home" / "spill").glob("*.jsonl"))
    assert spills and any('{"message": [' in spill.read_text() for spill in spills)
    from openprogram._cli import main as cli_main

    for spill in spills:
        assert cli_main(["--store", store.url, "import", str(spill)]) == 0
    recorded = [c.inputs["messages"] for c in store.list_calls(h.session_id) if c.kind == "llm"]
    assert recorded == sent


def test_exit_with_an_unwritable_store_spills_everything(tmp_path: Path) -> None:
    """A process that ends while its store is unusable writes its records to a spill file."""
    directory = tmp_path / "gone"
    home = tmp_path / "childhome"
    with read_only(directory) as switch:
        switch.on()
        url = f"sqlite:///{directory / 'never.db'}"
        env = dict(os.environ, OPENPROGRAM_HOME=str(home), PYTHONPATH=str(ROOT))
        child = subprocess.run(
            [sys.executable, "-m", "bench.reliability_workloads", "writer", url, "500", "c"],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        switch.off()
    assert child.returncode == 0, child.stderr
    result = json.loads(child.stdout.strip().splitlines()[-1])
    assert result["ok"] is False
    warnings = [line for line in child.stderr.splitlines() if "openprogram" in line]
    assert any(str(directory / "never.db") in w for w in warnings)
    assert len([w for w in warnings if "cannot write to store" in w]) == 1, warnings
    spills = sorted((home / "spill").glob("*.jsonl"))
    assert len(spills) == 1
    store = openprogram.open_store(url)
    from openprogram._cli import main as cli_main

    assert cli_main(["--store", url, "import", str(spills[0])]) == 0
    _assert_complete(store, str(result["session_id"]), 500)
    # Importing twice changes nothing (idempotent).
    assert cli_main(["--store", url, "import", str(spills[0])]) == 0
    _assert_complete(store, str(result["session_id"]), 500)


@pytest.mark.skipif(sys.platform == "win32", reason="RLIMIT_FSIZE is POSIX")
def test_disk_full_by_file_size_limit_then_recovery(tmp_path: Path) -> None:
    """Disk full as any user: a child process whose RLIMIT_FSIZE stops the store file from growing."""
    url = f"sqlite:///{tmp_path / 'fsize.db'}"
    env = dict(os.environ, OPENPROGRAM_HOME=str(tmp_path / "fhome"), PYTHONPATH=str(ROOT))
    child = subprocess.run(
        [sys.executable, "-m", "bench.reliability_workloads", "fsize", url, "300"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert child.returncode == 0, child.stderr
    result = json.loads(child.stdout.strip().splitlines()[-1])
    assert result == {"session_id": result["session_id"], "failed": True, "recovered": True}
    warnings = [line for line in child.stderr.splitlines() if "cannot write to store" in line]
    assert len(warnings) == 1, child.stderr
    store = openprogram.open_store(url)
    _assert_complete(store, result["session_id"], 300)
    assert isinstance(store, SQLiteStore) and store.integrity_check() == "ok"


def test_many_sessions_on_an_unusable_store_give_one_warning(tmp_path: Path) -> None:
    directory = tmp_path / "many"
    url = f"sqlite:///{directory / 'many.db'}"
    env = dict(os.environ, OPENPROGRAM_HOME=str(tmp_path / "mhome"), PYTHONPATH=str(ROOT))
    code = (
        "import sys, openprogram; from bench.reliability_workloads import leaf\n"
        "store = openprogram.open_store(sys.argv[1])\n"
        "for n in range(20):\n"
        "    with openprogram.session_context(f's{n}', store=store):\n"
        "        leaf('m', str(n))\n"
        "print('agent finished', flush=True)\n"
    )
    first = subprocess.run(
        [sys.executable, "-c", code, url], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120, check=True
    )
    assert "agent finished" in first.stdout and "openprogram:" not in first.stderr
    with read_only(directory) as switch:
        switch.on()
        second = subprocess.run(
            [sys.executable, "-c", code, url],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        switch.off()
    assert second.returncode == 0 and "agent finished" in second.stdout, second.stderr
    lines = [line for line in second.stderr.splitlines() if line.startswith("openprogram:")]
    outage = [line for line in lines if "cannot" in line]
    assert len(outage) == 1, lines
    assert str(directory / "many.db") in outage[0]
    spilled = [line for line in lines if "openprogram import" in line]
    assert len(spilled) == 1  # at exit, with the file to load

"""pytest plugin: run a framework's own test suite with openprogram instrumented (``nox -s upstream``).

Loaded with ``-p openprogram_plugin`` (this folder on ``PYTHONPATH``): the upstream suite has its own
``tests`` package, so this module cannot be imported as ``tests.upstream...`` there. The file name does
not match ``test_*.py``, so the project's own pytest runs never collect or load it.

Every pytest process (each xdist worker too) gets its own OPENPROGRAM_HOME, so nothing touches
``~/.openprogram`` and the default SQLite store is what the adapters write to. With
``OPENPROGRAM_UPSTREAM_STATS`` set to a folder, each process writes what it recorded there, so the
comparison can prove the instrumented run really recorded calls.
"""

from __future__ import annotations

import atexit
import json
import os
import shutil
import tempfile
from pathlib import Path

import pytest

_home: Path | None = None
_enabled: set[str] = set()


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    global _home, _enabled
    # Before openprogram is imported, so the default store resolves under the temporary home.
    _home = Path(tempfile.mkdtemp(prefix="openprogram-upstream-"))
    # Registered before openprogram exists, so it runs after openprogram's own exit hooks (LIFO), which
    # still write (the implicit session's turn ends at exit): removing the home earlier recreates it.
    atexit.register(shutil.rmtree, _home, ignore_errors=True)
    os.environ["OPENPROGRAM_HOME"] = str(_home)
    os.environ.pop("OPENPROGRAM_STORE", None)
    import openprogram

    _enabled = openprogram.instrument()
    if not _enabled:
        # An "instrumented" run that instruments nothing would compare two plain runs.
        raise pytest.UsageError("openprogram.instrument() enabled no framework adapter")


def pytest_unconfigure(config: pytest.Config) -> None:
    if _home is None:
        return
    import openprogram

    openprogram.flush()
    openprogram.uninstrument()
    _write_stats()


def _write_stats() -> None:
    target = os.environ.get("OPENPROGRAM_UPSTREAM_STATS")
    if not target:
        return
    import openprogram

    store = openprogram.open_store()
    sessions = store.list_sessions()
    calls = sum(info.call_count for info in sessions)
    # The xdist controller runs no tests; only count processes that did.
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    stats = {"worker": worker, "enabled": sorted(_enabled), "sessions": len(sessions), "calls": calls}
    out = Path(target)
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{worker}-{os.getpid()}.json").write_text(json.dumps(stats), encoding="utf-8")

"""Fixtures for the core tests: no-session state reset, leak checks, explicit stores.

No framework is needed or imported here. The isolated home and ``store`` come
from the root conftest; the process-wide no-session state is reset around each test.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import openprogram
import pytest
from openprogram import _recording, _sessions
from openprogram._recording import call_var, session_var


@pytest.fixture(autouse=True)
def no_session_state() -> Iterator[None]:
    """Each test starts with the default policy and no implicit session; its implicit turn is closed after."""
    _sessions.reset()
    yield
    _sessions.reset()
    openprogram.flush()


@pytest.fixture(autouse=True)
def no_leaked_context() -> Iterator[None]:
    """Nothing a test did may leave the session or call var set in the test's own context."""
    yield
    assert session_var.get() is None, "a session was left installed"
    assert call_var.get() is None, "a call was left current"


@pytest.fixture
def sqlite_url(tmp_path: Path) -> str:
    """URL of a fresh SQLite store in the test's tmp dir (absolute form)."""
    return f"sqlite:///{tmp_path / 'db' / 'sessions.db'}"


@pytest.fixture
def discard_stores() -> Iterator[list[openprogram.Store]]:
    """Stores appended here are forgotten by the writer after the test (for deliberately failing stores)."""
    stores: list[openprogram.Store] = []
    yield stores
    for s in stores:
        _recording.discard_store(s)


def calls_by_name(store: openprogram.Store, session_id: str) -> dict[str, list[openprogram.CallRecord]]:
    """The session's calls grouped by name."""
    out: dict[str, list[openprogram.CallRecord]] = {}
    for call in store.list_calls(session_id):
        out.setdefault(call.name, []).append(call)
    return out


def one(store: openprogram.Store, session_id: str, name: str) -> openprogram.CallRecord:
    """The only call named ``name`` in the session."""
    found = calls_by_name(store, session_id).get(name, [])
    assert len(found) == 1, f"expected one call {name!r}, found {len(found)}"
    return found[0]


def openprogram_command() -> list[str]:
    """The installed console script next to this interpreter (else ``python -m openprogram``)."""
    script = Path(sys.executable).with_name("openprogram")
    if script.exists():
        return [str(script)]
    found = shutil.which("openprogram")
    return [found] if found else [sys.executable, "-m", "openprogram"]


def python_env(**extra: str) -> dict[str, str]:
    """The environment for a child Python: the test's environment plus ``extra``."""
    env = dict(os.environ)
    env.update(extra)
    return env


def run_python(
    code: str, *, env: dict[str, str] | None = None, timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    """Run ``code`` in a fresh interpreter of this venv; returns the completed process."""
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        env=python_env() if env is None else env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )

"""Fixtures for the viewer: recorded sessions, a viewer serving them, and a real headless Chromium.

The framework sessions are recorded once per test run by the adapters' own offline demos, the
conversations by a scripted LangGraph agent (``coder``); the 100,000-call session is written
straight into a SQLite store (recording it call by call would take minutes and prove nothing about
the viewer).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import openprogram
import pytest
from openprogram._viewer import ViewerServer, make_server
from openprogram.stores import Store

from .coder import Conversations, record_conversations
from .viewer_support import (
    CHROMEDRIVER,
    CHROMIUM,
    Recorded,
    record_demo_sessions,
    start_chromium,
    write_big_session,
    write_plain_session,
)


@contextlib.contextmanager
def _fresh_store(directory: Path) -> Iterator[Store]:
    """A new SQLite store in ``directory``, recorded into with no OPENPROGRAM_* setting of the caller's."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("OPENPROGRAM_HOME", str(directory / "home"))
        for name in [n for n in os.environ if n.startswith("OPENPROGRAM_") and n != "OPENPROGRAM_HOME"]:
            patch.delenv(name)
        yield openprogram.open_store(f"sqlite:///{directory / 'sessions.db'}")


@pytest.fixture(scope="session")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Recorded]:
    """A SQLite store holding one demo session of each framework, and a plain one."""
    with _fresh_store(tmp_path_factory.mktemp("recorded")) as store:
        sessions = record_demo_sessions(store)
        sessions["plain"] = write_plain_session(store)
        openprogram.flush()
        yield Recorded(store, sessions)


@pytest.fixture(scope="session")
def conversations(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Conversations]:
    """A SQLite store holding the coding agent's three-turn chat and its 500-step run."""
    with _fresh_store(tmp_path_factory.mktemp("conversations")) as store:
        yield record_conversations(store)


@pytest.fixture(scope="session")
def big_store(tmp_path_factory: pytest.TempPathFactory) -> Store:
    """A SQLite store with one session of 100,000 calls (see :func:`write_big_session`)."""
    store = openprogram.open_store(f"sqlite:///{tmp_path_factory.mktemp('big') / 'big.db'}")
    write_big_session(store)
    return store


def _serve(server: ViewerServer) -> Iterator[str]:
    thread = threading.Thread(target=server.serve_forever, name="viewer-under-test", daemon=True)
    thread.start()
    try:
        yield server.url
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


@pytest.fixture
def serve() -> Iterator[Callable[[Store], str]]:
    """``serve(store)`` starts a viewer of ``store`` on a free loopback port and returns its URL."""
    servers: list[Iterator[str]] = []

    def start(store: Store) -> str:
        running = _serve(make_server(store, "127.0.0.1", 0))
        servers.append(running)
        return next(running)

    yield start
    for running in servers:
        next(running, None)


@pytest.fixture
def ui_process() -> Iterator[Callable[[Store], str]]:
    """``ui_process(store)`` runs ``openprogram ui`` on ``store`` in a process of its own, as a user would,
    and returns the URL it printed."""
    started: list[subprocess.Popen[str]] = []

    def start(store: Store) -> str:
        command = [sys.executable, "-m", "openprogram", "--store", store.url, "ui", "--no-browser", "--port", "0"]
        process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        started.append(process)
        line = process.stdout.readline() if process.stdout else ""
        assert line.startswith("openprogram ui: http://"), (line, process.stderr.read() if process.stderr else "")
        return line.split()[2]

    yield start
    for process in started:
        process.terminate()
        process.communicate(timeout=10)


@pytest.fixture(scope="session")
def chromium() -> Iterator[Any]:
    """Debian's headless Chromium driven by Selenium through Debian's chromedriver (no browser download)."""
    missing = [path for path in (CHROMIUM, CHROMEDRIVER) if not shutil.which(path)]
    if missing:
        pytest.fail(f"the viewer tests need {' and '.join(missing)}: apt-get install -y chromium chromium-driver")
    driver = start_chromium()
    try:
        yield driver
    finally:
        driver.quit()


@pytest.fixture
def browser(chromium: Any) -> Iterator[Any]:
    """The shared Chromium, on a blank page; fails the test if a page logged a JavaScript error."""
    chromium.get("about:blank")
    chromium.get_log("browser")  # drop what earlier tests left
    yield chromium
    severe = [entry for entry in chromium.get_log("browser") if entry["level"] == "SEVERE"]
    # A 404 the test asked for is logged by the browser as a failed resource; anything else is a bug.
    assert [e for e in severe if "status of 404" not in e["message"]] == []


@pytest.fixture
def demo_viewer(recorded: Recorded, serve: Callable[[Store], str]) -> str:
    """A viewer of the recorded demo sessions."""
    return serve(recorded.store)


@pytest.fixture
def talk_viewer(conversations: Conversations, serve: Callable[[Store], str]) -> str:
    """A viewer of the coding agent's conversations."""
    return serve(conversations.store)

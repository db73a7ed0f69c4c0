"""``openprogram ui``: prints its URL, serves the store it was given, binds loopback unless told otherwise."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path

import openprogram
import pytest
from openprogram.stores import describe_store

from .viewer_support import wait_for


@pytest.fixture
def store_url(tmp_path: Path) -> str:
    url = f"sqlite:///{tmp_path / 'ui.db'}"

    @openprogram.tool
    def greet() -> str:
        return "hello"

    with openprogram.session_context("ui-session", store=url):
        greet()
    openprogram.flush()
    return url


class _Ui:
    def __init__(self, process: subprocess.Popen[str]) -> None:
        self.process = process
        self.first_line = process.stdout.readline() if process.stdout else ""

    @property
    def url(self) -> str:
        return self.first_line.split()[2]


RunUi = Callable[..., _Ui]


@pytest.fixture
def run_ui() -> Iterator[RunUi]:
    started: list[subprocess.Popen[str]] = []

    def run(*args: str, env: dict[str, str] | None = None) -> _Ui:
        process = subprocess.Popen(
            [sys.executable, "-m", "openprogram", *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, **(env or {})},
        )
        started.append(process)
        return _Ui(process)

    yield run
    for process in started:
        process.terminate()
        process.communicate(timeout=10)


def _sessions(url: str) -> list[str]:
    with urllib.request.urlopen(url + "api/sessions", timeout=10) as response:
        return [s["session_id"] for s in json.load(response)["sessions"]]


def test_ui_prints_its_url_and_serves_the_store_it_was_given(run_ui: RunUi, store_url: str) -> None:
    ui = run_ui("--store", store_url, "ui", "--no-browser", "--port", "0")
    assert ui.first_line.startswith("openprogram ui: http://127.0.0.1:")
    assert f"(store {describe_store(store_url)}; Ctrl-C to stop)" in ui.first_line  # its path, for a person
    assert _sessions(ui.url) == ["ui-session"]


def test_ui_takes_the_store_after_the_command_too(run_ui: RunUi, store_url: str) -> None:
    ui = run_ui("ui", "--store", store_url, "--no-browser", "--port", "0")
    assert _sessions(ui.url) == ["ui-session"]


def test_ui_opens_the_browser_unless_told_not_to(run_ui: RunUi, store_url: str, tmp_path: Path) -> None:
    opened = tmp_path / "opened.txt"
    browser = tmp_path / "browser.py"
    browser.write_text(f"import sys, pathlib; pathlib.Path({str(opened)!r}).write_text(sys.argv[1])\n")
    # webbrowser runs $BROWSER with the URL for %s: a stand-in that notes which URL it was given.
    ui = run_ui("--store", store_url, "ui", "--port", "0", env={"BROWSER": f"{sys.executable} {browser} %s"})
    wait_for(opened.exists, what="the browser to be started")
    assert opened.read_text() == ui.url
    assert _sessions(ui.url) == ["ui-session"]


def test_ui_warns_when_it_listens_beyond_this_machine(run_ui: RunUi, store_url: str) -> None:
    ui = run_ui("--store", store_url, "ui", "--no-browser", "--host", "0.0.0.0", "--port", "0")
    assert ui.first_line.startswith("openprogram ui: http://127.0.0.1:")  # what to open on this machine
    assert _sessions(ui.url) == ["ui-session"]
    ui.process.terminate()
    _, err = ui.process.communicate(timeout=10)
    assert "warning: listening on 0.0.0.0, not only on this machine" in err


def test_ui_on_a_port_in_use_says_so_and_fails(store_url: str) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = subprocess.run(
            [sys.executable, "-m", "openprogram", "--store", store_url, "ui", "--no-browser", "--port", str(port)],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    assert result.returncode == 1
    assert (
        f"openprogram ui: cannot listen on 127.0.0.1:{port}" in result.stderr and "try another --port" in result.stderr
    )


def test_ui_stops_cleanly_on_ctrl_c(run_ui: RunUi, store_url: str) -> None:
    import signal

    ui = run_ui("--store", store_url, "ui", "--no-browser", "--port", "0")
    assert _sessions(ui.url) == ["ui-session"]
    ui.process.send_signal(signal.SIGINT)
    deadline = time.monotonic() + 10
    while ui.process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert ui.process.returncode == 0
    assert "Traceback" not in (ui.process.stderr.read() if ui.process.stderr else "")


def test_ui_help_describes_every_option() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "openprogram", "ui", "--help"], capture_output=True, text=True, timeout=60, check=False
    )
    text = result.stdout
    for option in ("--store", "--host", "--port", "--no-browser"):
        line = next(line for line in text.splitlines() if line.strip().startswith(option))
        assert len(line.split()) > 2, line

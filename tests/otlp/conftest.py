"""OTLP export tests: a real OTLP/HTTP receiver on 127.0.0.1, the CLI run in-process, agents in child processes.

No ``OTEL_*`` or ``OPENPROGRAM_EXPORT`` variable leaks in from the caller; live export is
back to "as the environment says" after each test. CrewAI's offline switches are set
before anything imports crewai (as in tests/integrations/crewai).
"""

from __future__ import annotations

import io
import os
import subprocess
import sys
import tempfile
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import NamedTuple

import pytest
from openprogram.integrations.crewai.fakes import CREWAI_OFFLINE_ENV  # imports no crewai

from .otlp_receiver import ReceivedSpan, Receiver

# CrewAI reads these at import time (and creates ~/.config/crewai): set before anything imports crewai.
_home = tempfile.mkdtemp(prefix="openprogram_otlp_home_")
os.environ.update(
    {
        "HOME": _home,
        "XDG_DATA_HOME": f"{_home}/.local/share",
        "CREWAI_STORAGE_DIR": f"{_home}/crewai",
        **CREWAI_OFFLINE_ENV,
    }
)

import openprogram  # noqa: E402
from openprogram import _cli, _otlp  # noqa: E402

ROOT = str(Path(__file__).resolve().parents[2])  # children import tests.otlp helpers from here

_EXPORT_ENV = (
    "OPENPROGRAM_EXPORT",
    "OTEL_EXPORTER_OTLP_ENDPOINT",
    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
    "OTEL_EXPORTER_OTLP_HEADERS",
    "OTEL_EXPORTER_OTLP_TRACES_HEADERS",
    "OTEL_EXPORTER_OTLP_TIMEOUT",
    "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT",
    "OTEL_EXPORTER_OTLP_COMPRESSION",
    "OTEL_EXPORTER_OTLP_TRACES_COMPRESSION",
    "OTEL_SERVICE_NAME",
    "OTEL_RESOURCE_ATTRIBUTES",
)


@pytest.fixture(autouse=True)
def no_export_environment(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """No inherited export settings; live export as the (now empty) environment says, before and after."""
    for name in _EXPORT_ENV:
        monkeypatch.delenv(name, raising=False)
    _otlp.set_export(None)
    yield
    _otlp.set_export(None)


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    """An OTLP/HTTP receiver that accepts everything."""
    running = Receiver().start()
    yield running
    running.stop()


@pytest.fixture
def make_receiver() -> Iterator[Callable[..., Receiver]]:
    """``make_receiver(status=401, delay=0.0)``: receivers that refuse or are slow, stopped after the test."""
    made: list[Receiver] = []

    def make(status: int = 200, delay: float = 0.0) -> Receiver:
        made.append(Receiver(status=status, delay=delay).start())
        return made[-1]

    yield make
    for running in made:
        running.stop()


@pytest.fixture
def unreachable_url() -> str:
    """A loopback URL nobody listens on."""
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return f"http://127.0.0.1:{port}"


@pytest.fixture
def store_url(tmp_path: Path) -> str:
    """A fresh SQLite store (the CLI opens it by URL, like a user would)."""
    return f"sqlite:///{tmp_path / 'sessions.db'}"


class CliRun(NamedTuple):
    code: int
    out: str
    err: str


@pytest.fixture
def export_cli(store_url: str, capsys: pytest.CaptureFixture[str]) -> Callable[..., CliRun]:
    """``export_cli("SESSION", "--endpoint", url)``: ``openprogram --store URL export otlp ...`` in this process."""

    def run(*args: str) -> CliRun:
        openprogram.flush()
        capsys.readouterr()
        out = io.StringIO()
        code = _cli.main(["--store", store_url, "export", "otlp", *args], out=out)
        printed = capsys.readouterr()
        return CliRun(code, out.getvalue() + printed.out, printed.err)

    return run


@pytest.fixture
def run_child(store_url: str) -> Callable[..., subprocess.CompletedProcess[str]]:
    """``run_child(code, **env)``: run ``code`` in a fresh interpreter recording into the test's store."""

    def run(code: str, timeout: float = 90, **env: str) -> subprocess.CompletedProcess[str]:
        child_env = {**os.environ, "OPENPROGRAM_STORE": store_url, "PYTHONPATH": ROOT, **env}
        return subprocess.run(
            [sys.executable, "-c", textwrap.dedent(code)],
            env=child_env,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )

    return run


def by_name(spans: list[ReceivedSpan]) -> dict[str, list[ReceivedSpan]]:
    """Spans grouped by span name."""
    found: dict[str, list[ReceivedSpan]] = {}
    for span in spans:
        found.setdefault(span.name, []).append(span)
    return found


def tree_is_whole(spans: list[ReceivedSpan]) -> bool:
    """Every span's parent is a span of the same trace, but for one root per trace."""
    ids = {(s.trace_id, s.span_id) for s in spans}
    roots = [s for s in spans if not s.parent_span_id]
    return all(not s.parent_span_id or (s.trace_id, s.parent_span_id) in ids for s in spans) and len(roots) == len(
        {s.trace_id for s in spans}
    )

"""Fixtures shared by every test directory.

Every test gets its own ``OPENPROGRAM_HOME`` (so nothing touches
``~/.openprogram``) and no inherited openprogram variables; ``store`` is a
private in-memory store; ``instrument(*names)`` enables adapters for one test.
Helpers for reading calls back are in :mod:`tests.support`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import openprogram
import pytest
from openprogram import _capture, _sessions

_ENV_VARS = (
    "OPENPROGRAM_STORE",
    "OPENPROGRAM_NO_SESSION",
    "OPENPROGRAM_SESSION_ID",
    "OPENPROGRAM_TURN_ID",
    "OPENPROGRAM_PARENT_CALL",
    "OPENPROGRAM_AGENT_ID",
    "OPENPROGRAM_CAPTURE_CONTENT",
    "OPENPROGRAM_EXPORT",
)


@pytest.fixture(autouse=True)
def isolated_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh ``OPENPROGRAM_HOME`` (not yet created) and no inherited openprogram variables."""
    home = tmp_path / "ophome"
    monkeypatch.setenv("OPENPROGRAM_HOME", str(home))
    for name in _ENV_VARS:
        monkeypatch.delenv(name, raising=False)
    return home


@pytest.fixture(autouse=True)
def no_implicit_session() -> Iterator[None]:
    """Each test starts as a process does: no implicit session yet, nothing announced (its home is new)."""
    _sessions.reset()
    yield
    _sessions.reset()


@pytest.fixture(autouse=True)
def content_captured() -> Iterator[None]:
    """Content capture as a process starts (the environment decides), before and after each test."""
    _capture.set_content_capture(None)
    yield
    _capture.set_content_capture(None)


@pytest.fixture
def store() -> openprogram.Store:
    """A private in-memory store."""
    return openprogram.open_store("memory://")


@pytest.fixture
def instrument() -> Iterator[Callable[..., set[str]]]:
    """``instrument("crewai")`` enables adapters for this test; they are disabled after it."""
    enabled: list[str] = []

    def enable(*names: str) -> set[str]:
        result = openprogram.instrument(*names)
        enabled.extend(names or result)
        return result

    yield enable
    openprogram.uninstrument(*enabled)

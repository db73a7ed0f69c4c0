"""CrewAI adapter tests: real crewai, an offline scripted LLM, no telemetry, storage in a tmp dir."""

from __future__ import annotations

import os
import tempfile

from openprogram.integrations.crewai_fakes import CREWAI_OFFLINE_ENV  # imports no crewai

# CrewAI reads these at import time: set them before anything imports crewai.
_home = tempfile.mkdtemp(prefix="openprogram_crewai_home_")
os.environ.update(
    {
        "HOME": _home,
        "XDG_DATA_HOME": f"{_home}/.local/share",
        "CREWAI_STORAGE_DIR": f"{_home}/crewai_storage",
        "OPENPROGRAM_HOME": f"{_home}/openprogram",
        **CREWAI_OFFLINE_ENV,
    }
)

from collections.abc import Iterator  # noqa: E402

import pytest  # noqa: E402

pytest.importorskip("crewai")

import openprogram  # noqa: E402
from openprogram.stores import Store  # noqa: E402


@pytest.fixture(autouse=True)
def _isolated(tmp_path: object, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("OPENPROGRAM_HOME", str(tmp_path))
    monkeypatch.setenv("OPENPROGRAM_STORE", f"sqlite:///{tmp_path}/sessions.db")
    openprogram.instrument("crewai")
    yield
    openprogram.uninstrument()


@pytest.fixture
def store() -> Store:
    return openprogram.open_store("memory://")

"""Fixtures for the store suite: one test body, run against every backend (see store_support)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import openprogram
import pytest
from openprogram.stores import Store
from store_support import Backends


@pytest.fixture(autouse=True)
def _isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENPROGRAM_HOME", str(tmp_path / "home"))
    for name in ("OPENPROGRAM_STORE", "OPENPROGRAM_SESSION_ID", "OPENPROGRAM_TURN_ID", "OPENPROGRAM_PARENT_CALL"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def backends(tmp_path: Path) -> Iterator[Backends]:
    made = Backends(tmp_path)
    yield made
    made.cleanup()


def _params(*names: str) -> list[object]:
    return [pytest.param(n, marks=[pytest.mark.postgres] if n == "postgresql" else [], id=n) for n in names]


ALL = _params("memory", "sqlite", "postgresql")
DURABLE = _params("sqlite", "postgresql")


@pytest.fixture(params=ALL)
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture(params=DURABLE)
def durable_backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def store_url(backend: str, backends: Backends) -> str:
    return backends.url(backend)


@pytest.fixture
def durable_url(durable_backend: str, backends: Backends) -> str:
    return backends.url(durable_backend)


@pytest.fixture
def store(store_url: str) -> Store:
    return openprogram.open_store(store_url)


@pytest.fixture
def pg_url(backends: Backends) -> str:
    """A PostgreSQL store URL with a schema of its own (skips when no server answers)."""
    return backends.url("postgresql")

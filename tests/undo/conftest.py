"""Fixtures for the undo tests: a fresh store of each backend, and compensations declared per test.

Stores come from the store suite's helpers: PostgreSQL at ``$OPENPROGRAM_TEST_POSTGRES``
(default ``postgresql://postgres@127.0.0.1:5432/test``), a schema of its own per test, dropped
afterwards; with ``CI=true`` an unreachable server fails the test, else it skips with the reason.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import openprogram
import pytest
from openprogram import _sessions, _undo

from tests.stores.store_support import Backends


def _params(*names: str) -> list[object]:
    return [pytest.param(n, marks=[pytest.mark.postgres] if n == "postgresql" else [], id=n) for n in names]


@pytest.fixture
def stores(tmp_path: Path) -> Iterator[Backends]:
    made = Backends(tmp_path)
    yield made
    made.cleanup()


@pytest.fixture(params=_params("memory", "sqlite", "postgresql"))
def store_url(request: pytest.FixtureRequest, stores: Backends) -> str:
    """A fresh store of every backend."""
    return stores.url(str(request.param))


@pytest.fixture(params=_params("sqlite", "postgresql"))
def shared_url(request: pytest.FixtureRequest, stores: Backends) -> str:
    """A fresh store that other processes can reach."""
    return stores.url(str(request.param))


@pytest.fixture
def store(store_url: str) -> openprogram.Store:
    return openprogram.open_store(store_url)


@pytest.fixture(autouse=True)
def declared_here() -> Iterator[None]:
    """Compensations a test declares are forgotten after it; the no-session state is reset around it."""
    saved = dict(_undo.compensations._compensations)
    _sessions.reset()
    yield
    _sessions.reset()
    openprogram.flush()
    _undo.compensations._compensations.clear()
    _undo.compensations._compensations.update(saved)

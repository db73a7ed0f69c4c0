"""Fixtures for the reliability suite: a private OPENPROGRAM_HOME and stores per test."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import openprogram
import pytest
from openprogram import _recording
from openprogram.stores.sqlite import SQLiteStore
from reliability_support import WarningCounter


@pytest.fixture(autouse=True)
def _private_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("OPENPROGRAM_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("OPENPROGRAM_STORE", raising=False)
    monkeypatch.delenv("OPENPROGRAM_SESSION_ID", raising=False)
    monkeypatch.setenv("OPENPROGRAM_NO_SESSION", "warn")
    yield
    # A store a test left failing must not make later flushes report False, nor spill
    # into the real home at interpreter exit.
    for key, state in list(_recording.writer._states.items()):
        if state.failing:
            _recording.writer._states.pop(key, None)


@pytest.fixture
def sqlite_store(tmp_path: Path) -> Iterator[SQLiteStore]:
    store = openprogram.open_store(f"sqlite:///{tmp_path / 'rel.db'}")
    assert isinstance(store, SQLiteStore)
    yield store
    openprogram.flush()
    store.close()


@pytest.fixture(params=["memory", "sqlite"])
def any_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[openprogram.Store]:
    """Every store this branch has; PostgreSQL joins here when its module is merged."""
    if request.param == "memory":
        yield openprogram.open_store("memory://")
    else:
        store = openprogram.open_store(f"sqlite:///{tmp_path / 'any.db'}")
        yield store
        openprogram.flush()
        store.close()


@pytest.fixture
def warnings_log() -> Iterator[WarningCounter]:
    handler = WarningCounter()
    logger = logging.getLogger("openprogram")
    logger.addHandler(handler)
    try:
        yield handler
    finally:
        logger.removeHandler(handler)

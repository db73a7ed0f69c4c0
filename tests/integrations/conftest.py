"""Fixtures shared by the framework tests (home isolation, ``store`` and ``instrument`` are the root's)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import openprogram
import pytest


@pytest.fixture
def sqlite_store(tmp_path: Path) -> Iterator[openprogram.Store]:
    """A private SQLite store (``sessions.db`` in the test's directory): it keeps each distinct message once."""
    store = openprogram.open_store(f"sqlite:///{tmp_path / 'sessions.db'}")
    yield store
    store.close()

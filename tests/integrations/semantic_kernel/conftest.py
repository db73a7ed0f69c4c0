"""Fixtures: a private OPENPROGRAM_HOME, a memory store, the adapter enabled around each test."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import openprogram
import pytest
from openprogram.stores import Store


@pytest.fixture(autouse=True)
def _home(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENPROGRAM_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("OPENPROGRAM_STORE", raising=False)


@pytest.fixture
def store() -> Store:
    return openprogram.open_store("memory://")


@pytest.fixture
def instrumented() -> Iterator[None]:
    openprogram.instrument("semantic_kernel")
    yield
    openprogram.uninstrument("semantic_kernel")

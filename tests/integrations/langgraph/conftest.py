"""Fixtures for the LangGraph adapter tests: a private store per test, the adapter on, offline models."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import openprogram
import pytest
from openprogram import CallRecord, Store

pytest.importorskip("langgraph")


@pytest.fixture(autouse=True)
def _private_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Never write to ~/.openprogram: the default store (used for thread sessions) lives in tmp."""
    monkeypatch.setenv("OPENPROGRAM_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("OPENPROGRAM_STORE", f"sqlite:///{tmp_path / 'default.db'}")


@pytest.fixture(autouse=True)
def instrumented() -> Iterator[None]:
    openprogram.instrument("langgraph")
    yield
    openprogram.uninstrument()


@pytest.fixture
def store() -> Store:
    return openprogram.open_store("memory://")


def calls(store: Store, session_id: str) -> list[CallRecord]:
    openprogram.flush()
    return store.list_calls(session_id)


def by_kind(records: list[CallRecord], kind: str) -> list[CallRecord]:
    return [c for c in records if c.kind == kind]


def one(records: list[CallRecord], kind: str, name: str) -> CallRecord:
    found = [c for c in records if c.kind == kind and c.name == name]
    assert len(found) == 1, (kind, name, [(c.kind, c.name) for c in records])
    return found[0]


def attributes(record: CallRecord) -> dict[str, Any]:
    return dict(getattr(record, "attributes", None) or {})

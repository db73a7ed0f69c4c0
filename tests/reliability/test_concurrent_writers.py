"""Concurrent writers: several processes record into one store; no record lost or duplicated."""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Iterator
from pathlib import Path

import openprogram
import pytest
from reliability_support import scaled

from bench.reliability_workloads import check_writers, run_writers

PROCESSES = 4


@pytest.fixture
def schemas() -> Iterator[list[str]]:
    """PostgreSQL schemas a test made; dropped after it, so runs leave nothing behind in the database."""
    made: list[str] = []
    yield made
    if made:
        import psycopg

        with psycopg.connect(_postgres_base(), autocommit=True) as conn:
            for schema in made:
                conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


def _postgres_base() -> str:
    return os.environ.get("OPENPROGRAM_TEST_POSTGRES", "postgresql://postgres@127.0.0.1:5432/test")


def store_url(backend: str, tmp_path: Path, schemas: list[str]) -> str:
    """A URL for ``backend``; skips with the reason when this branch or machine lacks it."""
    if backend == "sqlite":
        return f"sqlite:///{tmp_path / 'shared.db'}"
    if importlib.util.find_spec("openprogram.stores.postgres") is None:
        pytest.skip("the PostgreSQL store is not merged into this branch yet")
    base = _postgres_base()
    if "schema=" in base:
        return base
    schemas.append(f"op_rel_{os.urandom(6).hex()}")
    return f"{base}{'&' if '?' in base else '?'}schema={schemas[-1]}"


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_four_processes_one_store(backend: str, tmp_path: Path, schemas: list[str]) -> None:
    url = store_url(backend, tmp_path, schemas)
    calls = scaled(2_500)
    results = run_writers(url, PROCESSES, calls, tmp_path / "home")
    store = openprogram.open_store(url)
    assert check_writers(store, results, calls) == PROCESSES * (calls + 1)
    if hasattr(store, "integrity_check"):
        assert store.integrity_check() == "ok"

"""Concurrent writers: several processes record into one store; no record lost or duplicated."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import openprogram
import pytest
from reliability_support import scaled

from bench.reliability_workloads import check_writers, run_writers

PROCESSES = 4


def store_url(backend: str, tmp_path: Path) -> str:
    """A URL for ``backend``; skips with the reason when this branch or machine lacks it."""
    if backend == "sqlite":
        return f"sqlite:///{tmp_path / 'shared.db'}"
    if importlib.util.find_spec("openprogram.stores.postgres") is None:
        pytest.skip("the PostgreSQL store is not merged into this branch yet")
    return os.environ.get("OPENPROGRAM_TEST_POSTGRES", "postgresql://postgres@127.0.0.1:5432/test")


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_four_processes_one_store(backend: str, tmp_path: Path) -> None:
    url = store_url(backend, tmp_path)
    calls = scaled(2_500)
    results = run_writers(url, PROCESSES, calls, tmp_path / "home")
    store = openprogram.open_store(url)
    assert check_writers(store, results, calls) == PROCESSES * (calls + 1)
    if hasattr(store, "integrity_check"):
        assert store.integrity_check() == "ok"

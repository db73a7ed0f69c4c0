"""Helpers for the store suite: backends, PostgreSQL availability, a TCP proxy, worker processes.

PostgreSQL tests use ``$OPENPROGRAM_TEST_POSTGRES`` (default
``postgresql://postgres@127.0.0.1:5432/test``); each test gets a schema of its
own, dropped afterwards. With ``CI=true`` an unreachable server fails the run;
otherwise those tests skip with the reason.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Iterator
from pathlib import Path

import pytest

import openprogram
from openprogram import _writer
from openprogram.stores import Store

DEFAULT_POSTGRES = "postgresql://postgres@127.0.0.1:5432/test"
_reachable: str | None = None  # "" when reachable, else the reason


def postgres_base_url() -> str:
    return os.environ.get("OPENPROGRAM_TEST_POSTGRES") or DEFAULT_POSTGRES


def require_postgres() -> str:
    """The base URL of a reachable server; skips (or, under CI, fails) when there is none."""
    global _reachable
    url = postgres_base_url()
    if _reachable is None:
        try:
            import psycopg

            with psycopg.connect(url, connect_timeout=3) as conn:
                conn.execute("SELECT 1")
            _reachable = ""
        except Exception as exc:  # ImportError or any connection failure
            _reachable = f"no PostgreSQL server at {openprogram.stores.safe_url(url)} ({type(exc).__name__}: {exc})"
    if _reachable:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"CI=true but {_reachable}; set OPENPROGRAM_TEST_POSTGRES", pytrace=False)
        pytest.skip(f"{_reachable}; set OPENPROGRAM_TEST_POSTGRES to run these tests")
    return url


def with_schema(base: str, schema: str) -> str:
    return f"{base}{'&' if '?' in base else '?'}schema={schema}"


def drop_schema(schema: str) -> None:
    import psycopg

    with psycopg.connect(postgres_base_url(), autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


class Backends:
    """Makes store URLs for one test and cleans up every store it opened."""

    def __init__(self, tmp_path: Path) -> None:
        self.tmp_path = tmp_path
        self.schemas: list[str] = []
        self.urls: list[str] = []

    def url(self, backend: str) -> str:
        if backend == "memory":
            url = f"memory://t{secrets.token_hex(6)}"
        elif backend == "sqlite":
            url = f"sqlite:///{self.tmp_path / f's{secrets.token_hex(4)}.db'}"
        elif backend == "postgresql":
            schema = self.new_schema()
            url = with_schema(require_postgres(), schema)
        else:
            raise ValueError(backend)
        self.urls.append(url)
        return url

    def new_schema(self) -> str:
        schema = f"op_test_{secrets.token_hex(6)}"
        self.schemas.append(schema)
        return schema

    def cleanup(self) -> None:
        openprogram.flush(timeout=5)
        for url in self.urls:
            self.forget(openprogram.open_store(url))
        for schema in self.schemas:
            drop_schema(schema)

    @staticmethod
    def forget(store: Store) -> None:
        _writer.discard_store(store)
        store.close()
        with openprogram.stores._lock:
            for key, value in list(openprogram.stores._open.items()):
                if value is store:
                    del openprogram.stores._open[key]



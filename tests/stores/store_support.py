"""Helpers for the store suite: backends, PostgreSQL availability, a TCP proxy, worker processes.

PostgreSQL tests use ``$OPENPROGRAM_TEST_POSTGRES`` (default
``postgresql://postgres@127.0.0.1:5432/test``); each test gets a schema of its
own, dropped afterwards. With ``CI=true`` an unreachable server fails the run;
otherwise those tests skip with the reason.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import socket
import threading
import time
from pathlib import Path

import openprogram
import pytest
from openprogram import _recording
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
            detail = " ".join(str(exc).split())
            _reachable = f"no PostgreSQL server at {openprogram.stores.safe_url(url)} ({type(exc).__name__}: {detail})"
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
            base = require_postgres()
            url = with_schema(base, self.new_schema())
        else:
            raise ValueError(backend)
        self.urls.append(url)
        return url

    def new_schema(self) -> str:
        require_postgres()
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
        _recording.discard_store(store)
        store.close()
        with openprogram.stores._lock:
            for key, value in list(openprogram.stores._open.items()):
                if value is store:
                    del openprogram.stores._open[key]


class TcpProxy:
    """A TCP forwarder on 127.0.0.1 that a test starts and stops, to take a database away and back.

    Stopping closes the listening socket and every forwarded connection, as a
    network partition or a server restart would; the real server is untouched.
    """

    def __init__(self, target: tuple[str, int]) -> None:

        self.target = target
        probe = socket.socket()
        probe.bind(("127.0.0.1", 0))
        self.port: int = probe.getsockname()[1]
        probe.close()  # nothing listens here until start()
        self._listener: socket.socket | None = None
        self._sockets: list[socket.socket] = []
        self._lock = threading.Lock()
        self._running = False

    def start(self) -> None:

        listener = socket.socket()
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", self.port))
        listener.listen(64)
        listener.settimeout(0.05)
        self._listener, self._running = listener, True
        threading.Thread(target=self._accept, args=(listener,), daemon=True).start()

    def _accept(self, listener: socket.socket) -> None:

        while self._running and self._listener is listener:
            try:
                client, _ = listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            client.settimeout(None)
            try:
                upstream = socket.create_connection(self.target)
            except OSError:
                client.close()
                continue
            with self._lock:
                self._sockets += [client, upstream]
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(a, b), daemon=True).start()

    @staticmethod
    def _pump(src: socket.socket, dst: socket.socket) -> None:

        try:
            while data := src.recv(65536):
                dst.sendall(data)
        except OSError:
            pass
        for s in (src, dst):
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)

    def stop(self) -> None:

        self._running = False
        listener, self._listener = self._listener, None
        if listener is not None:
            listener.close()
        with self._lock:
            sockets, self._sockets = self._sockets, []
        for s in sockets:
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)
            s.close()


WORKER = Path(__file__).with_name("store_worker.py")


def worker_env(**extra: str) -> dict[str, str]:
    """The environment for a worker subprocess: this one, with the openprogram variables given."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENPROGRAM_") or k == "OPENPROGRAM_HOME"}
    env.update(extra)
    return env


def proxied_url(base: str, port: int, schema: str, password: str | None = None) -> str:
    """``base`` re-pointed at 127.0.0.1:``port`` (a :class:`TcpProxy`), with a password if given."""
    from urllib.parse import urlsplit, urlunsplit

    parts = urlsplit(base)
    user = parts.username or "postgres"
    auth = f"{user}:{password}" if password else user
    return with_schema(urlunsplit(parts._replace(netloc=f"{auth}@127.0.0.1:{port}")), schema)


def postgres_target() -> tuple[str, int]:
    from urllib.parse import urlsplit

    parts = urlsplit(postgres_base_url())
    return parts.hostname or "127.0.0.1", parts.port or 5432


def wait_for_flush(timeout: float = 60.0) -> bool:
    """Flush until it reports everything durable (the writer retries with back-off)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if openprogram.flush(timeout=10):
            return True
        time.sleep(0.2)
    return False

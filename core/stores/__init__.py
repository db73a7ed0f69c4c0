"""Stores: where sessions are kept. ``open_store`` picks a backend from a URL.

``sqlite:///relative.db``, ``sqlite:////absolute.db`` (or a bare path),
``memory://`` (``memory://name`` is shared by name within the process; an unnamed
one is new at each ``open_store("memory://")``, but as the default store, set by
``OPENPROGRAM_STORE=memory://``, it is one store for the process) and
``postgresql://...`` (needs ``openprogram[postgres]``). With no URL, the
``OPENPROGRAM_STORE`` environment variable wins, else
``$OPENPROGRAM_HOME/sessions.db`` (``~/.openprogram``); the environment is read
at each call, not at import.
"""

from __future__ import annotations

import importlib
import os
import re
import threading
from collections.abc import Callable
from pathlib import Path

from ._base import (
    AliasRow,
    CallRecord,
    CallRow,
    CallRows,
    EffectRow,
    SessionInfo,
    SessionRow,
    Store,
    StoreError,
    on_read,
)

__all__ = [
    "AliasRow",
    "CallRecord",
    "CallRow",
    "CallRows",
    "EffectRow",
    "SessionInfo",
    "SessionRow",
    "Store",
    "StoreError",
    "default_store_url",
    "on_read",
    "open_store",
    "safe_url",
]

_BACKENDS: dict[str, str] = {
    "sqlite": "openprogram.stores.sqlite:SQLiteStore",
    "memory": "openprogram.stores.memory:MemoryStore",
    "postgresql": "openprogram.stores.postgres:PostgresStore",
    "postgres": "openprogram.stores.postgres:PostgresStore",
}
_open: dict[str, Store] = {}
_lock = threading.Lock()
# The password runs to the authority's last "@": one that holds an unencoded "@" is masked whole.
_PASSWORD = re.compile(r"(?P<head>[a-z][a-z0-9+.-]*://[^:/@]*:)[^/?#]*(?P<tail>@)", re.IGNORECASE)
_PASSWORD_PARAM = re.compile(r"(?P<head>[?&](?:password|sslpassword)=)[^&]*", re.IGNORECASE)


def safe_url(url: str) -> str:
    """``url`` with any password replaced by ``***``: safe to log or print."""
    url = _PASSWORD.sub(r"\g<head>***\g<tail>", url)
    return _PASSWORD_PARAM.sub(r"\g<head>***", url)


def openprogram_home() -> Path:
    """``$OPENPROGRAM_HOME`` or ``~/.openprogram``."""
    return Path(os.environ.get("OPENPROGRAM_HOME") or Path.home() / ".openprogram").expanduser()


def default_store_url() -> str:
    """The store used when none is named: ``$OPENPROGRAM_STORE`` or the SQLite default."""
    return os.environ.get("OPENPROGRAM_STORE") or f"sqlite:///{openprogram_home() / 'sessions.db'}"


def path_from_url(url: str) -> Path:
    """``sqlite:///rel.db`` -> ``rel.db``; ``sqlite:////abs.db`` -> ``/abs.db``; a bare path as is."""
    if url.startswith("sqlite://"):
        rest = url[len("sqlite://") :]
        if not rest.startswith("/") or rest == "/":
            raise StoreError(f"bad SQLite URL {url!r}: use sqlite:///relative.db or sqlite:////absolute.db")
        return Path(rest[1:]).expanduser()
    return Path(url).expanduser()


def _backend(scheme: str, url: str) -> Callable[[str], Store]:
    target = _BACKENDS.get(scheme)
    if target is None:
        raise StoreError(
            f"unknown store URL scheme {scheme!r} in {safe_url(url)!r}; use sqlite:, memory: or postgresql:"
        )
    module_name, _, attr = target.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise StoreError(f"the {scheme} store needs an extra: pip install 'openprogram[postgres]' ({exc})") from exc
    cls: Callable[[str], Store] = getattr(module, attr)
    return cls  # every backend's constructor takes its URL (or, for SQLite, its path)


def open_store(url: str | os.PathLike[str] | Store | None = None) -> Store:
    """Return the store for ``url`` (a URL, a path, a store, or None for the default).

    Opening is lazy: nothing touches the disk or network until the first read
    or write, so an unusable store never fails here. The same URL returns the
    same store object within a process (``memory://`` without a name is always new,
    except as the default store: one for the process, so a session continues in it).
    """
    if isinstance(url, Store):
        return url
    text = default_store_url() if url is None else os.fspath(url)
    scheme, sep, _ = text.partition("://")
    if not sep:
        scheme = "sqlite"
    scheme = scheme.lower()
    if scheme == "memory" and text.rstrip("/") == "memory:" and url is not None:
        return _backend("memory", text)(text)  # a throwaway store, each time
    key = f"sqlite:///{path_from_url(text).absolute()}" if scheme == "sqlite" else text
    with _lock:
        store = _open.get(key)
        if store is None:
            cls = _backend(scheme, text)
            store = _open[key] = cls(key[len("sqlite:///") :]) if scheme == "sqlite" else cls(text)
        return store

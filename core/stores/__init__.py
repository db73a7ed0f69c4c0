"""Stores: where sessions are kept. ``open_store`` picks a backend from a URL.

``sqlite:///relative.db``, ``sqlite:////absolute.db`` (SQLAlchemy's forms), ``sqlite:relative.db``,
``sqlite:/absolute.db`` (a URL's path with no host part: one slash, absolute) or a bare path;
``memory://`` (``memory://name`` is shared by name within the process; an unnamed
one is new at each ``open_store("memory://")``, but as the default store, set by
``OPENPROGRAM_STORE=memory://``, it is one store for the process) and
``postgresql://...`` (needs ``openprogram[postgres]``). With no URL, the
``OPENPROGRAM_STORE`` environment variable wins, else
``$OPENPROGRAM_HOME/sessions.db`` (``~/.openprogram``); the environment is read
at each call, not at import.

A store that can never work is refused when opened, with a :class:`StoreError`: an
unknown scheme, a malformed SQLite URL, a PostgreSQL URL without psycopg installed.
A SQLite path that can never hold a store (a directory, or a path under a plain
file) is named in a warning when opened; a directory that is not writable now is an
outage that may end, warned of at the first write. Either way a recording agent keeps
running and its records wait, then spill. ``open_store(url, strict=True)`` raises a
:class:`StoreError` for both, for a command that can do nothing without its store, and
``existing=True`` a :class:`NoSuchStore` for a SQLite file that is not there (a command
that only reads, where a mistyped path must not read as an empty store).
"""

from __future__ import annotations

import asyncio
import importlib
import logging
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .._runtime import StoreError, install_hint
from ._base import (
    HEARTBEAT_STALE_SECONDS,
    CallRecord,
    SessionInfo,
    Store,
    effect_state,
    on_read,
    owner_alive,
    tokens_of,
)
from ._prompts import PROMPT, TEXT, PromptReader, holds_texts, prompt_json, prompt_reference
from ._rows import (
    CALL_COLUMNS,
    AliasRow,
    CallRow,
    CallRows,
    EffectOutcome,
    EffectRow,
    MessageRow,
    SessionRow,
    StoredRow,
)
from ._urls import safe_url

__all__ = [
    "CALL_COLUMNS",
    "HEARTBEAT_STALE_SECONDS",
    "PROMPT",
    "AliasRow",
    "CallRecord",
    "CallRow",
    "CallRows",
    "EffectOutcome",
    "EffectRow",
    "MessageRow",
    "NoSuchStore",
    "PromptReader",
    "SessionInfo",
    "SessionRow",
    "Store",
    "StoreError",
    "StoredRow",
    "TEXT",
    "default_store_key",
    "default_store_url",
    "describe_store",
    "effect_state",
    "holds_texts",
    "is_default_store",
    "on_read",
    "open_store",
    "openprogram_home",
    "owner_alive",
    "path_from_url",
    "prompt_json",
    "prompt_reference",
    "safe_url",
    "tokens_of",
]

_BACKENDS: dict[str, str] = {
    "sqlite": "openprogram.stores.sqlite:SQLiteStore",
    "memory": "openprogram.stores.memory:MemoryStore",
    "postgresql": "openprogram.stores.postgres:PostgresStore",
    "postgres": "openprogram.stores.postgres:PostgresStore",
}
logger = logging.getLogger("openprogram")

_open: dict[str, Store] = {}
_lock = threading.Lock()
_warned_paths: set[Path] = set()  # one warning per unusable SQLite path and process


def openprogram_home() -> Path:
    """``$OPENPROGRAM_HOME`` or ``~/.openprogram``."""
    return Path(os.environ.get("OPENPROGRAM_HOME") or Path.home() / ".openprogram").expanduser()


# What decides the default store. Read from the dict behind ``os.environ`` where CPython has one: a lookup
# there costs ~20 ns, where ``os.environ.get`` of an unset name raises and catches a KeyError (~0.7 us), and
# this is read at every call made with no session open.
_DEFAULT_STORE_VARIABLES = ("OPENPROGRAM_STORE", "OPENPROGRAM_HOME", "HOME")
_environ_keys: tuple[Any, ...] = ()  # (os.environ, the lookup of its dict, the variables' keys in it)


def default_store_key() -> tuple[object, ...]:
    """A cheap value that changes whenever the default store may: the variables that decide it, as set now.

    Equal keys mean ``open_store(None)`` opens the same store; a different key means it may not.
    """
    global _environ_keys
    environ = os.environ
    found = _environ_keys
    if not found or found[0] is not environ:
        data = getattr(environ, "_data", None)
        if not isinstance(data, dict):  # not CPython's os.environ (a program replaced it)
            return tuple([environ.get(name) for name in _DEFAULT_STORE_VARIABLES])
        found = _environ_keys = (environ, data.get, *map(environ.encodekey, _DEFAULT_STORE_VARIABLES))
    get = found[1]
    return (get(found[2]), get(found[3]), get(found[4]))


def default_store_url() -> str:
    """The store used when none is named: ``$OPENPROGRAM_STORE`` or the SQLite default."""
    return os.environ.get("OPENPROGRAM_STORE") or f"sqlite:///{openprogram_home() / 'sessions.db'}"


class NoSuchStore(StoreError):
    """A command that only reads was given a store that does not exist (``open_store(url, existing=True)``)."""


_SQLITE = "sqlite:"
_BAD_SQLITE_URL = "use sqlite:///relative.db or sqlite:////absolute.db (or sqlite:relative.db, sqlite:/absolute.db)"


def path_from_url(url: str) -> Path:
    """The file of a SQLite URL or path.

    ``sqlite:///rel.db`` -> ``rel.db`` and ``sqlite:////abs.db`` -> ``/abs.db`` (as SQLAlchemy reads them:
    the three slashes end an empty host part); without ``//`` the rest is the path as written, as in any
    URL with no host part: ``sqlite:rel.db`` -> ``rel.db``, ``sqlite:/abs.db`` -> ``/abs.db``. A bare path
    as is.
    """
    if url[: len(_SQLITE)].lower() != _SQLITE:
        return Path(url).expanduser()
    rest = url[len(_SQLITE) :]
    if rest.startswith("//"):
        rest = rest[2:]
        if not rest.startswith("/") or rest == "/":  # a host part (sqlite://host/...) or no path at all
            raise StoreError(f"bad SQLite URL {url!r}: {_BAD_SQLITE_URL}")
        rest = rest[1:]
    if not rest or rest == "/":
        raise StoreError(f"bad SQLite URL {url!r}: {_BAD_SQLITE_URL}")
    return Path(rest).expanduser()


def _scheme(text: str) -> str:
    scheme, sep, _ = text.partition("://")
    if sep:
        return scheme.lower()
    return "sqlite"  # a bare path, or sqlite:path


def _canonical_url(text: str) -> str:
    """The URL a store opened from ``text`` reports as its ``url`` (SQLite: the absolute path; no password)."""
    if _scheme(text) == "sqlite":
        return f"sqlite:///{path_from_url(text).absolute()}"
    return safe_url(text)


def describe_store(store: str | os.PathLike[str] | Store | None = None) -> str:
    """A person's name for a store: a SQLite store's file path, ``~`` for the home directory; else its URL, no password.

    ``None`` names the default store.
    """
    url = store.url if isinstance(store, Store) else default_store_url() if store is None else os.fspath(store)
    if _scheme(url) != "sqlite":
        return safe_url(url)
    path = path_from_url(url).absolute()
    try:
        return f"~{os.sep}{path.relative_to(Path.home())}"
    except (ValueError, RuntimeError):  # not under the home directory, or no home directory known
        return str(path)


def is_default_store(store: Store) -> bool:
    """Whether ``store`` is the one ``open_store(None)`` would open now, so naming it again is not needed."""
    try:
        return store.url == _canonical_url(default_store_url())
    except StoreError:  # a malformed $OPENPROGRAM_STORE: no store is the default
        return False


def _unusable_path(path: Path) -> tuple[str, bool] | None:
    """Why SQLite could not create or open a file at ``path`` now, and whether that lasts; None if nothing stops it.

    A directory, or a path under a plain file, can never hold a store; a directory
    that is not writable may become so (a remount, a permission fixed).
    """
    try:
        if path.is_dir():
            return "it is a directory", True
        if path.exists():
            return None  # an existing file: the first read or write says whether it is a store
        existing = path.parent
        while not existing.exists():  # the directories the store would create, up to one that exists
            existing = existing.parent
        if not existing.is_dir():
            return f"{existing} is not a directory", True
        if not os.access(existing, os.W_OK | os.X_OK):
            return f"cannot create files in {existing}", False
    except OSError as exc:
        return str(exc), False
    return None


def _check_sqlite_path(path: Path, *, strict: bool) -> None:
    found = _unusable_path(path)
    if found is None:
        return
    reason, lasting = found
    message = f"cannot use the SQLite store at {path}: {reason}"
    if strict:
        raise StoreError(message)
    if not lasting:
        return  # an outage that may end: the writer warns of it at the first write, once
    with _lock:
        if path in _warned_paths:
            return
        _warned_paths.add(path)
    logger.warning("openprogram: %s; records wait in memory (then spill) until it can be written", message)


def _in_event_loop() -> bool:
    """Whether this thread is running an event loop (where a blocking call stalls every coroutine)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


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
        raise StoreError(f"the {scheme} store needs an extra: {install_hint('postgres')} ({exc})") from exc
    cls: Callable[[str], Store] = getattr(module, attr)
    return cls  # every backend's constructor takes its URL (or, for SQLite, its path)


def open_store(
    url: str | os.PathLike[str] | Store | None = None, *, strict: bool = False, existing: bool = False
) -> Store:
    """Return the store for ``url`` (a URL, a path, a store, or None for the default).

    Opening connects to nothing and creates no file: that waits for the first read
    or write. A URL that can never work raises :class:`StoreError` here (unknown
    scheme, missing ``openprogram[postgres]``); a SQLite path that can never hold a
    store is named in one warning, and writes to it wait as for any unavailable store
    (``strict=True``: a :class:`StoreError` for it, and for a directory not writable
    now). ``existing=True``: a :class:`NoSuchStore` for a SQLite file that does not
    exist (a command that only reads creates nothing). The same URL returns the same
    store object within a process (``memory://`` without a name is always new,
    except as the default store: one for the process, so a session continues in it).
    """
    if isinstance(url, Store):
        return url
    text = default_store_url() if url is None else os.fspath(url)
    scheme = _scheme(text)
    if scheme == "memory" and text.rstrip("/") == "memory:" and url is not None:
        return _backend("memory", text)(text)  # a throwaway store, each time
    key = f"sqlite:///{path_from_url(text).absolute()}" if scheme == "sqlite" else text
    if scheme == "sqlite" and existing and not Path(key[len("sqlite:///") :]).exists():
        raise NoSuchStore(f"no store at {describe_store(key)}: there is no such file")
    if scheme == "sqlite" and (strict or key not in _open):  # checked once, when first opened
        path = Path(key[len("sqlite:///") :])
        if strict or not _in_event_loop():
            _check_sqlite_path(path, strict=strict)
        else:  # only a warning to give, after a stat or two: never on a coroutine's event loop
            threading.Thread(target=_check_sqlite_path, args=(path,), kwargs={"strict": False}, daemon=True).start()
    with _lock:
        store = _open.get(key)
        if store is None:
            cls = _backend(scheme, text)
            store = _open[key] = cls(key[len("sqlite:///") :]) if scheme == "sqlite" else cls(text)
        return store

"""Loading spill files: records written aside while a store was unavailable."""

from __future__ import annotations

import json
import os
from typing import Any

from ..stores import AliasRow, CallRow, MessageRow, SessionRow, Store, StoreError

__all__ = ["load_spill"]

_BATCH = 5000

# What each column of a spilled row may hold: "s" text, "s?" text or null, "n" a number, "n?" a number or null.
_SESSION = ("s", "s", "n", "n")
_CALL = ("s", "s", "s", "s?", "s", "s", "s?", "s", "s?", "s?", "s?", "s?", "n", "n?", "s")
_ALIAS = ("s", "s", "s", "n")
_MESSAGE = ("s", "s", "s")


def _checked(row: Any, shape: tuple[str, ...], path: str | os.PathLike[str], number: int) -> Any:
    """The row as a tuple if it has ``shape``; a StoreError naming the line if not (a malformed
    row written into a store would break every later read of it)."""
    if not isinstance(row, list) or len(row) != len(shape):
        raise StoreError(f"{path}:{number}: not a spill record (expected {len(shape)} fields)")
    for column, (value, kind) in enumerate(zip(row, shape, strict=True)):
        if value is None and kind.endswith("?"):
            continue
        ok = isinstance(value, str) if kind[0] == "s" else type(value) in (int, float)
        if not ok:
            raise StoreError(f"{path}:{number}: not a spill record (field {column + 1} is {type(value).__name__})")
    return tuple(row)


def load_spill(path: str | os.PathLike[str], store: Store) -> int:
    """Write every record of a spill file into ``store``; returns how many were written.

    Loading is idempotent: a record already in the store is left as it is
    (a final record still replaces a ``running`` one).
    """
    sessions: list[SessionRow] = []
    calls: list[CallRow] = []
    aliases: list[AliasRow] = []
    messages: list[MessageRow] = []
    written = 0
    try:
        fh = open(path, encoding="utf-8")  # noqa: SIM115 - closed below
    except OSError as exc:
        raise StoreError(f"cannot read spill file {path}: {exc}") from exc
    with fh:
        for number, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                entry: dict[str, Any] = json.loads(line)
            except ValueError as exc:
                raise StoreError(f"{path}:{number}: not a spill record ({exc})") from exc
            if not isinstance(entry, dict):
                raise StoreError(f"{path}:{number}: not a spill record (not an object)")
            if "session" in entry:
                sessions.append(_checked(entry["session"], _SESSION, path, number))
            elif "call" in entry:
                calls.append(_checked(entry["call"], _CALL, path, number))
            elif "alias" in entry:
                aliases.append(_checked(entry["alias"], _ALIAS, path, number))
            elif "message" in entry:
                if not store.keeps_messages:
                    raise StoreError(
                        f"{path}:{number}: the spill file holds model calls' messages, which {store.url} cannot keep"
                    )
                messages.append(_checked(entry["message"], _MESSAGE, path, number))
            if len(calls) + len(messages) >= _BATCH:
                written += _write(store, sessions, calls, aliases, messages)
                sessions, calls, aliases, messages = [], [], [], []
    if sessions or calls or aliases or messages:
        written += _write(store, sessions, calls, aliases, messages)
    return written


def _write(
    store: Store,
    sessions: list[SessionRow],
    calls: list[CallRow],
    aliases: list[AliasRow],
    messages: list[MessageRow],
) -> int:
    if messages:
        store.write(sessions, calls, aliases, messages)
    else:
        store.write(sessions, calls, aliases)
    return len(sessions) + len(calls) + len(aliases) + len(messages)

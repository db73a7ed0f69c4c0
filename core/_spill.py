"""Loading spill files: records written aside while a store was unavailable."""

from __future__ import annotations

import json
import os
from typing import Any

from .stores import AliasRow, CallRow, SessionRow, Store, StoreError

__all__ = ["load_spill"]

_BATCH = 5000


def load_spill(path: str | os.PathLike[str], store: Store) -> int:
    """Write every record of a spill file into ``store``; returns how many were written.

    Loading is idempotent: a record already in the store is left as it is
    (a final record still replaces a ``running`` one).
    """
    sessions: list[SessionRow] = []
    calls: list[CallRow] = []
    aliases: list[AliasRow] = []
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
            if "session" in entry:
                sessions.append(tuple(entry["session"]))
            elif "call" in entry:
                calls.append(tuple(entry["call"]))
            elif "alias" in entry:
                aliases.append(tuple(entry["alias"]))
            if len(calls) >= _BATCH:
                store.write(sessions, calls, aliases)
                written += len(sessions) + len(calls) + len(aliases)
                sessions, calls, aliases = [], [], []
    if sessions or calls or aliases:
        store.write(sessions, calls, aliases)
        written += len(sessions) + len(calls) + len(aliases)
    return written

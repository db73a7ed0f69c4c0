"""Helpers for reading back what a test recorded (``from tests.support import calls, one``)."""

from __future__ import annotations

from typing import Any

import openprogram


def calls(store: openprogram.Store, session_id: str) -> list[openprogram.CallRecord]:
    """Every call of the session, in start order, after making what was recorded durable."""
    openprogram.flush()
    return store.list_calls(session_id)


def by_kind(records: list[openprogram.CallRecord], kind: str) -> list[openprogram.CallRecord]:
    """The records of one kind."""
    return [c for c in records if c.kind == kind]


def one(records: list[openprogram.CallRecord], name: str, kind: str | None = None) -> openprogram.CallRecord:
    """The only record named ``name`` (of ``kind``, when given)."""
    found = [c for c in records if c.name == name and (kind is None or c.kind == kind)]
    assert len(found) == 1, (kind, name, [(c.kind, c.name) for c in records])
    return found[0]


def attributes(record: openprogram.CallRecord) -> dict[str, Any]:
    """A record's attributes as a dict (empty when it has none), but the traceback the core keeps for a
    failed call (``tests/core/test_failed_call_traceback.py`` checks that one)."""
    found = dict(getattr(record, "attributes", None) or {})
    found.pop("traceback", None)
    return found


def tree(records: list[openprogram.CallRecord]) -> list[tuple[int, str, str]]:
    """(depth, kind, name) of every call, in start order: the call tree as ``openprogram show`` prints it."""
    index = {r.call_id: r for r in records}
    shown = []
    for rec in records:
        depth, parent = 0, index.get(rec.parent_id) if rec.parent_id else None
        while parent is not None:
            depth += 1
            parent = index.get(parent.parent_id) if parent.parent_id else None
        shown.append((depth, rec.kind, rec.name))
    return shown

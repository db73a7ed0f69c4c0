"""Small helpers for the CrewAI adapter tests."""

from __future__ import annotations

from typing import Any

import openprogram
from openprogram.stores import CallRecord, Store


def calls(store: Store, session_id: str) -> list[CallRecord]:
    openprogram.flush()
    return store.list_calls(session_id)


def by_kind(records: list[CallRecord], kind: str) -> list[CallRecord]:
    return [r for r in records if r.kind == kind]


def parent_of(records: list[CallRecord], rec: CallRecord) -> CallRecord | None:
    index = {r.call_id: r for r in records}
    return index.get(rec.parent_id) if rec.parent_id else None


def chain(records: list[CallRecord], rec: CallRecord) -> list[str]:
    """Kinds from the record up to the root, e.g. ['tool', 'agent', 'task', 'crew', 'turn']."""
    out: list[str] = []
    current: Any = rec
    while current is not None:
        out.append(current.kind)
        current = parent_of(records, current)
    return out

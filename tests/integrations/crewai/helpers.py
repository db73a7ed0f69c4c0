"""Small helpers for the CrewAI adapter tests (the shared ones are in ``tests.support``)."""

from __future__ import annotations

from typing import Any

import openprogram


def parent_of(records: list[openprogram.CallRecord], rec: openprogram.CallRecord) -> openprogram.CallRecord | None:
    index = {r.call_id: r for r in records}
    return index.get(rec.parent_id) if rec.parent_id else None


def chain(records: list[openprogram.CallRecord], rec: openprogram.CallRecord) -> list[str]:
    """Kinds from the record up to the root, e.g. ['tool', 'agent', 'task', 'crew', 'turn']."""
    out: list[str] = []
    current: Any = rec
    while current is not None:
        out.append(current.kind)
        current = parent_of(records, current)
    return out

"""Reading a recorded Pydantic AI run back (the shared helpers are in ``tests.support``)."""

from __future__ import annotations

import openprogram


def parent_of(records: list[openprogram.CallRecord], rec: openprogram.CallRecord) -> openprogram.CallRecord | None:
    index = {r.call_id: r for r in records}
    return index.get(rec.parent_id) if rec.parent_id else None


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

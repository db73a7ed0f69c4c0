"""Small helpers for the OpenAI Agents SDK adapter tests (the shared ones are in ``tests.support``)."""

from __future__ import annotations

import openprogram


def parent_of(records: list[openprogram.CallRecord], rec: openprogram.CallRecord) -> openprogram.CallRecord | None:
    index = {r.call_id: r for r in records}
    return index.get(rec.parent_id) if rec.parent_id else None


def tree(records: list[openprogram.CallRecord]) -> list[str]:
    """The call tree as indented ``kind name`` lines, children in start order (the turn at depth 0)."""
    children: dict[str | None, list[openprogram.CallRecord]] = {}
    for rec in records:
        children.setdefault(rec.parent_id, []).append(rec)
    ids = {r.call_id for r in records}
    lines: list[str] = []

    def walk(rec: openprogram.CallRecord, depth: int) -> None:
        lines.append("  " * depth + f"{rec.kind} {rec.name}")
        for child in children.get(rec.call_id, []):
            walk(child, depth + 1)

    for rec in records:
        if rec.parent_id not in ids:
            walk(rec, 0)
    return lines

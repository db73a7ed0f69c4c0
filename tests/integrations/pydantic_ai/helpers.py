"""Reading a recorded Pydantic AI run back (the shared helpers are in ``tests.support``)."""

from __future__ import annotations

import openprogram


def parent_of(records: list[openprogram.CallRecord], rec: openprogram.CallRecord) -> openprogram.CallRecord | None:
    index = {r.call_id: r for r in records}
    return index.get(rec.parent_id) if rec.parent_id else None

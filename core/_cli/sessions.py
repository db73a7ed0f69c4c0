"""The sessions ``openprogram sessions`` lists: the store's listing with the viewer's summary of each."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from typing import Any, TextIO

from .._viewer import SessionTree
from ..stores import Store
from .json_output import json_text
from .printable import printable
from .tree import seconds, when

__all__ = ["listed_sessions", "write_json", "write_jsonl", "write_table"]

_ROOT_TEXT = 40  # characters of a root's kind and name in the table


def listed_sessions(store: Store, limit: int | None) -> list[dict[str, Any]]:
    """The most recently updated sessions (all of them for None), each with status, root, start and duration."""
    listed = []
    for info in store.list_sessions(limit=limit):
        summary = SessionTree.read(store, info.session_id, info).summary()
        listed.append({**dataclasses.asdict(info), **summary})
    return listed


def _root(entry: dict[str, Any]) -> str:
    root = entry["root"]
    if not root:
        return "-"
    text = f"{root['kind']} {root['name']}"
    return text if len(text) <= _ROOT_TEXT else text[: _ROOT_TEXT - 3] + "..."


def _duration(entry: dict[str, Any]) -> str:
    duration = entry["duration"]
    return "-" if duration is None or not math.isfinite(duration) else seconds(duration)


#: (heading, right-aligned, the cell of a session)
_COLUMNS: tuple[tuple[str, bool, Callable[[dict[str, Any]], str]], ...] = (
    ("SESSION", False, lambda e: str(e["session_id"])),
    ("STATUS", False, lambda e: str(e["status"])),
    ("AGENT", False, lambda e: str(e["agent_id"])),
    ("ROOT", False, _root),
    ("CALLS", True, lambda e: str(e["call_count"])),
    ("TOKENS", True, lambda e: str(e["tokens"])),
    ("STARTED", False, lambda e: when(e["started_at"] if e["started_at"] is not None else e["created_at"])),
    ("DURATION", True, _duration),
)


def write_table(sessions: list[dict[str, Any]], out: TextIO) -> None:
    """One line per session; every column as wide as its widest cell (ids run to 48 characters and more)."""
    cells = [[printable(cell(entry)) for _, _, cell in _COLUMNS] for entry in sessions]
    widths = [max([len(heading), *(len(row[n]) for row in cells)]) for n, (heading, _, _) in enumerate(_COLUMNS)]
    for row in [[heading for heading, _, _ in _COLUMNS], *cells]:
        padded = (
            text.rjust(width) if right else text.ljust(width)
            for text, width, (_, right, _) in zip(row, widths, _COLUMNS, strict=True)
        )
        out.write("  ".join(padded).rstrip() + "\n")


def write_json(sessions: list[dict[str, Any]], out: TextIO) -> None:
    """A JSON list of the sessions."""
    out.write(json_text(sessions, indent=1) + "\n")


def write_jsonl(sessions: list[dict[str, Any]], out: TextIO) -> None:
    """One JSON object per session, one per line."""
    for entry in sessions:
        out.write(json_text(entry) + "\n")

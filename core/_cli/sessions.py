"""The sessions ``openprogram sessions`` lists, and the head of ``openprogram show``: a store's listing of a
session with the viewer's summary of it, what its turns ran and the time they took."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from typing import Any, TextIO

from .._viewer import SessionTree
from ..stores import SessionInfo, Store
from .json_output import json_text
from .printable import printable
from .tree import seconds, when

__all__ = ["listed_sessions", "ran_text", "session_entry", "write_json", "write_jsonl", "write_table"]

_RAN_TEXT = 48  # characters of the TURNS cell


def _ran(tree: SessionTree) -> list[dict[str, Any]]:
    """What the session's turns ran: the calls right under each turn (a call outside any turn, itself), alike
    ones once with their count, in the order first run."""
    counts: dict[tuple[str, str], int] = {}
    for root in tree.roots:
        top = tree.children.get(root, []) if tree.kinds[root] == "turn" else [root]  # a turn that ran nothing: none
        for i in top:
            key = (tree.kinds[i], tree.names[i])
            counts[key] = counts.get(key, 0) + 1
    return [{"kind": kind, "name": name, "count": count} for (kind, name), count in counts.items()]


def _time_in_turns(tree: SessionTree) -> float | None:
    """Seconds during which a turn (or a call outside any turn) was running: the idle time between turns left
    out, and turns that overlap counted once. None while the session runs, or when nothing ended."""
    # An end before its start can only come from a row another process wrote: it counts as no time.
    spans = sorted((tree.starts[i], max(end, tree.starts[i])) for i in tree.roots if (end := tree.ends[i]) is not None)
    if tree.running or not spans:
        return None
    total, (start, stop) = 0.0, spans[0]
    for begin, end in spans[1:]:
        if begin > stop:
            total += stop - start
            start = begin
        stop = max(stop, end)
    return total + stop - start


def session_entry(tree: SessionTree, info: SessionInfo) -> dict[str, Any]:
    """A session as ``sessions --json`` lists it and ``show --json`` heads it: the store's listing; status,
    turns and errors; what the turns ran; the time spent in turns (``duration``) and from the first start to
    the last end (``span``)."""
    summary = tree.summary()
    summary.pop("root", None)  # the first call says little of a session: ``ran`` says what every turn ran
    ends = [end for i in tree.roots if (end := tree.ends[i]) is not None]
    span = None if tree.running or not ends else max(0.0, max(ends) - min(tree.starts[i] for i in tree.roots))
    return {**dataclasses.asdict(info), **summary, "ran": _ran(tree), "duration": _time_in_turns(tree), "span": span}


def listed_sessions(store: Store, limit: int | None) -> list[dict[str, Any]]:
    """The most recently updated sessions (all of them for None), each as :func:`session_entry` makes it."""
    return [
        session_entry(SessionTree.read(store, info.session_id, info), info) for info in store.list_sessions(limit=limit)
    ]


def ran_text(entry: dict[str, Any], limit: int | None = _RAN_TEXT) -> str:
    """``3 turns: graph LangGraph (2), crew Crew``: how many turns, and what ran in them."""
    turns = entry.get("turns") or 0
    head = f"{turns} turn{'s' * (turns != 1)}" if turns else ""
    ran = ", ".join(
        f"{item['kind']} {item['name']}" + (f" ({item['count']})" if item["count"] > 1 else "")
        for item in entry.get("ran") or ()
    )
    text = f"{head}: {ran}" if head and ran else head or ran or "-"
    return text if limit is None or len(text) <= limit else text[: limit - 3] + "..."


def _seconds(value: Any) -> str:
    return "-" if not isinstance(value, (int, float)) or not math.isfinite(value) else seconds(value)


#: (heading, right-aligned, the cell of a session)
_COLUMNS: tuple[tuple[str, bool, Callable[[dict[str, Any]], str]], ...] = (
    ("SESSION", False, lambda e: str(e["session_id"])),
    ("STATUS", False, lambda e: str(e["status"])),
    ("ERRORS", True, lambda e: str(e["errors"])),
    ("AGENT", False, lambda e: str(e["agent_id"])),
    ("TURNS", False, ran_text),
    ("CALLS", True, lambda e: str(e["call_count"])),
    ("TOKENS", True, lambda e: str(e["tokens"])),
    ("STARTED", False, lambda e: when(e["started_at"] if e["started_at"] is not None else e["created_at"])),
    ("DURATION", True, lambda e: _seconds(e["duration"])),
)


def write_table(sessions: list[dict[str, Any]], out: TextIO) -> None:
    """One line per session; every column as wide as its widest cell (ids run to 48 characters and more).

    DURATION is the time spent in turns (``sessions --json`` has the span from first start to last end too).
    """
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

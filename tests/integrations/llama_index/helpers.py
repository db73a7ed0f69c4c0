"""Reading a recorded LlamaIndex run back (the shared helpers are in ``tests.support``)."""

from __future__ import annotations

import openprogram


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


def without_steps(shown: list[tuple[int, str, str]]) -> list[tuple[int, str, str]]:
    """The tree without its step nodes (each deeper call one level up per node above it): agents, tools, models."""
    kept: list[tuple[int, str, str]] = []
    nodes: list[int] = []  # depths of the nodes enclosing the current call
    for depth, kind, name in shown:
        while nodes and nodes[-1] >= depth:
            nodes.pop()
        if kind == "node":
            nodes.append(depth)
            continue
        kept.append((depth - len(nodes), kind, name))
    return kept

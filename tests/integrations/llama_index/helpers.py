"""Reading a recorded LlamaIndex run back (the shared helpers are in ``tests.support``)."""

from __future__ import annotations


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

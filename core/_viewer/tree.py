"""The call tree of one session as the viewer serves it: read once, then children, paths and matches per call.

A session of 100,000 calls is read with one pass over :meth:`Store.iter_tree_rows` into column tuples
(no object per call); the browser then asks for the children of the calls it expands, a page at a time.
"""

from __future__ import annotations

import gc
import itertools
import json
import operator
from collections.abc import Iterable, Sequence
from typing import Any, TypeVar

from ..stores import CALL_COLUMNS, CallRow, SessionInfo, Store, tokens_of

T = TypeVar("T")

__all__ = ["MAX_DEPTH_NODES", "NESTED_PAGE", "SessionTree"]

#: A nested children answer (``depth`` > 1) stops adding calls after this many.
MAX_DEPTH_NODES = 500
#: Children listed per call in a nested answer.
NESTED_PAGE = 200

_ERROR_TEXT = 300  # characters of an error message shown on a tree row


def _llm_facts(attributes: Any) -> dict[str, Any] | None:
    """Model, provider, stream flag and usage of an ``llm`` call's attributes (JSON text in a tree row)."""
    if isinstance(attributes, str):
        try:
            attributes = json.loads(attributes)
        except ValueError:
            return None
    if not isinstance(attributes, dict):
        return None
    facts = {key: attributes[key] for key in ("model", "provider", "stream") if key in attributes}
    usage = attributes.get("usage")
    if isinstance(usage, dict):
        facts["usage"] = {k: v for k, v in usage.items() if k in ("input_tokens", "output_tokens", "total_tokens")}
        facts["tokens"] = tokens_of(attributes)
    return facts


def _shared(values: tuple[T, ...]) -> tuple[T, ...]:
    """``values`` with equal ones made one object."""
    first: dict[T, T] = {}
    return tuple(map(first.setdefault, values, values))


class SessionTree:
    """The calls of one session without their captures, indexed by position in start order."""

    def __init__(self, session_id: str, rows: Iterable[CallRow], info: SessionInfo | None = None) -> None:
        self.session_id = session_id
        #: The store's listing of the session when it was read.
        self.info = info
        # Column tuples made by one transpose in C, and C-level passes over them wherever one will do:
        # the Python-level work per call is what decides how fast 100,000 calls open.
        columns: list[tuple[Any, ...]] = list(zip(*rows, strict=True)) or [()] * len(CALL_COLUMNS)
        self.ids: tuple[str, ...] = columns[0]
        # Each row brings its own copy of a repeated value (turn, kind, name, ...): one kept per value
        # halves the memory a tree holds.
        self.turn_ids: tuple[str, ...] = _shared(columns[2])
        self.kinds: tuple[str, ...] = _shared(columns[4])
        self.names: tuple[str, ...] = _shared(columns[5])
        self.frameworks: tuple[str | None, ...] = _shared(columns[6])
        self.statuses: tuple[str, ...] = _shared(columns[7])
        self.errors: tuple[str | None, ...] = columns[10]
        self.starts: tuple[float, ...] = columns[12]
        self.ends: tuple[float | None, ...] = columns[13]
        count = len(self.ids)
        self.index: dict[str, int] = dict(zip(self.ids, range(count), strict=True))
        # A parent the session does not hold (another session's call, a lost row) makes its child a root.
        self.parents: list[int] = list(map(self.index.get, columns[3], itertools.repeat(-1)))
        self.llm: dict[int, dict[str, Any]] = {}
        # Tree rows carry the attributes of llm calls only.
        for i in itertools.compress(range(count), map(operator.is_not, columns[11], itertools.repeat(None))):
            facts = _llm_facts(columns[11][i]) if self.kinds[i] == "llm" else None
            if facts:
                self.llm[i] = facts
        del columns
        self.roots: list[int] = []
        self.children: dict[int, list[int]] = {}
        by_parent = sorted(range(count), key=self.parents.__getitem__)  # stable: siblings stay in start order
        for parent, group in itertools.groupby(by_parent, key=self.parents.__getitem__):
            if parent < 0:
                self.roots = list(group)
            else:
                self.children[parent] = list(group)
        self._summarise(count)
        self._folded_ids: tuple[str, ...] | None = None

    @classmethod
    def read(cls, store: Store, session_id: str, info: SessionInfo | None = None) -> SessionTree:
        """The tree of a session as the store holds it now (``info``: its listing, read just before)."""
        # Reading 100,000 rows makes 1.5 million objects, and the collector would scan the growing
        # heap again and again while none of them can be garbage: a third of the time.
        was_enabled = gc.isenabled()
        gc.disable()
        try:
            return cls(session_id, store.iter_tree_rows(session_id), info)
        finally:
            if was_enabled:
                gc.enable()

    def _summarise(self, count: int) -> None:
        """Descendants, subtree tokens and errors below every call; the counts a page polls for."""
        parents = self.parents
        order: Sequence[int] = range(count)  # start order lists a parent before its children...
        if any(map(operator.ge, parents, range(count))):
            # ... unless a child was recorded before it (the clocks of two processes): walk top-down.
            walked = list(self.roots)
            for i in walked:  # grows while walked
                walked.extend(self.children.get(i, ()))
            order = walked
        self.descendants = descendants = [0] * count
        for i in reversed(order):  # children before parents
            parent = parents[i]
            if parent >= 0:
                descendants[parent] += descendants[i] + 1
        # Tokens and errors are few: each is added to the calls above it.
        self.tokens = [0] * count
        for i, facts in self.llm.items():
            self._add_up(self.tokens, i, facts.get("tokens", 0))
        self.error_calls = list(itertools.compress(range(count), map("error".__eq__, self.statuses)))
        self.errors_below = [0] * count
        for i in self.error_calls:
            self._add_up(self.errors_below, parents[i], 1)
        self.running = self.statuses.count("running")
        self.turn_number = {i: n for n, i in enumerate((i for i in self.roots if self.kinds[i] == "turn"), 1)}
        ended = count - self.ends.count(None)
        self.last_end = max(filter(None, self.ends), default=0.0)
        # Changes whenever a call is added, ends or fails: what the browser polls for.
        self.version = f"{count}.{ended}.{len(self.error_calls)}.{self.last_end:.6f}"

    def _add_up(self, totals: list[int], i: int, amount: int) -> None:
        parents = self.parents
        while i >= 0:
            totals[i] += amount
            i = parents[i]

    def root_of(self, i: int) -> int:
        """The root (usually the turn) above call ``i``."""
        parents = self.parents
        while parents[i] >= 0:
            i = parents[i]
        return i

    def __len__(self) -> int:
        return len(self.ids)

    # --- what the browser asks for --------------------------------------------
    def node(self, i: int, now: float) -> dict[str, Any]:
        """One call as a tree row draws it; offsets are from the start of its root (its turn)."""
        root = self.root_of(i)
        root_start = self.starts[root]
        start, end = self.starts[i], self.ends[i]
        root_end = self.ends[root]
        if root_end is None:  # running, or left unfinished by a process that died
            root_end = now if self.statuses[root] == "running" else max(self.last_end, root_start)
        node: dict[str, Any] = {
            "id": self.ids[i],
            "kind": self.kinds[i],
            "name": self.names[i],
            "framework": self.frameworks[i],
            "status": self.statuses[i],
            "started_at": start,
            "offset": start - root_start,
            "duration": None if end is None else end - start,
            "span": max(root_end - root_start, 1e-9),
            "children": len(self.children.get(i, ())),
            "descendants": self.descendants[i],
            "tokens": self.tokens[i],
            "errors_below": self.errors_below[i],
        }
        if end is None and self.statuses[i] == "running":
            node["elapsed"] = max(0.0, now - start)
        error = self.errors[i]
        if error:
            node["error"] = (error.strip().splitlines() or [error])[0][:_ERROR_TEXT]
        facts = self.llm.get(i)
        if facts:
            node["llm"] = facts
        number = self.turn_number.get(i)
        if number is not None:
            node["turn_number"] = number
        return node

    def children_of(self, parent: int | None, offset: int, limit: int, now: float, depth: int = 1) -> dict[str, Any]:
        """A page of a call's children (of the roots for None); ``depth`` > 1 nests their children too."""
        budget = [MAX_DEPTH_NODES]
        return self._page(parent, max(0, offset), max(1, limit), now, max(1, depth), budget)

    def _page(
        self, parent: int | None, offset: int, limit: int, now: float, depth: int, budget: list[int]
    ) -> dict[str, Any]:
        kids = self.roots if parent is None else self.children.get(parent, [])
        nodes = []
        for i in kids[offset : offset + limit]:
            node = self.node(i, now)
            budget[0] -= 1
            if depth > 1 and node["children"] and budget[0] > 0:
                node["page"] = self._page(i, 0, NESTED_PAGE, now, depth - 1, budget)
            nodes.append(node)
        return {
            "parent": None if parent is None else self.ids[parent],
            "total": len(kids),
            "offset": offset,
            "nodes": nodes,
        }

    def path(self, i: int) -> list[dict[str, Any]]:
        """The calls from the root down to call ``i``, each with its position among its siblings."""
        steps = []
        while i >= 0:
            parent = self.parents[i]
            siblings = self.roots if parent < 0 else self.children[parent]
            steps.append({"id": self.ids[i], "position": siblings.index(i)})
            i = parent
        steps.reverse()
        return steps

    def search(self, text: str, limit: int) -> tuple[int, list[int]]:
        """Calls whose kind, name, id, framework, model or error contains ``text`` (any case): (count, first ones)."""
        needle = text.casefold()
        count = len(self.ids)
        hits: set[int] = set()
        # Names, kinds and errors repeat: each distinct one is tested once, then its calls picked in C.
        for column in (self.kinds, self.names, self.frameworks, self.errors):
            found = {value for value in set(column) if value and needle in value.casefold()}
            if found:
                hits.update(itertools.compress(range(count), map(found.__contains__, column)))
        hits.update(i for i, facts in self.llm.items() if needle in str(facts.get("model", "")).casefold())
        if self._folded_ids is None:
            self._folded_ids = tuple(map(str.casefold, self.ids))
        hits.update(i for i, call_id in enumerate(self._folded_ids) if needle in call_id)
        ordered = sorted(hits)
        return len(ordered), ordered[:limit]

    def summary(self) -> dict[str, Any]:
        """What the sessions list shows beside a store's own listing: root, status, errors, start and duration."""
        if not self.ids:
            return {"status": "ok", "turns": 0, "errors": 0, "root": None, "started_at": None, "duration": None}
        first = self.roots[0]
        entry = self.children.get(first, [first])[0] if self.kinds[first] == "turn" else first
        statuses = {self.statuses[i] for i in self.roots}
        status = next((s for s in ("running", "error", "interrupted") if s in statuses), "ok")
        if self.running:
            status = "running"
        started = min(self.starts[i] for i in self.roots)
        finished = [end for end in (self.ends[i] for i in self.roots) if end is not None]
        return {
            "status": status,
            "turns": len(self.turn_number),
            "errors": len(self.error_calls),
            "root": {"id": self.ids[entry], "kind": self.kinds[entry], "name": self.names[entry]},
            "started_at": started,
            "duration": None if self.running or not finished else max(finished) - started,
        }

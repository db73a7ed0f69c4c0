"""The call tree of one session as the viewer serves it: read once, then children, paths and matches per call.

A session of 100,000 calls is read with one pass over :meth:`Store.iter_tree_rows` into column tuples
(no object per call); the browser then asks for the children of the calls it expands, a page at a time.

Rows are taken as any store hands them back, whoever wrote them: values of the wrong type, times that are
not times and parent cycles are made harmless on reading, so that every walk up or down a tree ends.
"""

from __future__ import annotations

import contextlib
import gc
import itertools
import json
import math
import operator
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, TypeVar

from ..stores import CALL_COLUMNS, CallRow, SessionInfo, Store, tokens_of

T = TypeVar("T")

__all__ = ["MAX_DEPTH_NODES", "NESTED_PAGE", "SessionTree"]

#: A nested children answer (``depth`` > 1) stops adding calls after this many.
MAX_DEPTH_NODES = 500
#: Children listed per call in a nested answer.
NESTED_PAGE = 200

_ERROR_TEXT = 300  # characters of an error message shown on a tree row
#: Seconds: a time further from 1970 than this (about 31,000 years) is not a time a call was recorded at.
_FAR = 1e12
_TEXT_COLUMNS = (0, 2, 4, 5, 7)  # id, turn, kind, name, status
_OPTIONAL_TEXT_COLUMNS = (3, 6, 10)  # parent, framework, error
_ATTRIBUTES, _STARTED, _ENDED = 11, 12, 13


def _llm_facts(attributes: Any) -> dict[str, Any] | None:
    """Model, provider, stream flag and usage of an ``llm`` call's attributes (JSON text in a tree row)."""
    if isinstance(attributes, str):
        try:
            attributes = json.loads(attributes)
        except (ValueError, RecursionError):
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


def _text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return "" if value is None else str(value)


def _time(value: Any) -> float | None:
    """A time as a float, or None for what is not one (text, NaN, infinities, absurdly far)."""
    try:
        found = float(value)
    except (TypeError, ValueError, OverflowError):
        return None
    return found if math.isfinite(found) and -_FAR <= found <= _FAR else None


def _times_fit(values: Sequence[Any]) -> bool:
    """True if every value is a finite number within :data:`_FAR` (a few passes in C)."""
    try:
        total = sum(values, 0.0)  # raises for text; NaN or an infinity makes it non-finite
    except (TypeError, OverflowError):
        return False
    return math.isfinite(total) and (not values or (min(values) >= -_FAR and max(values) <= _FAR))


def _cleaned(columns: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    """The columns of a store's tree rows with what a tree cannot use replaced: text that is not text, times
    that are not times (a start becomes 0, an end none), attributes that are not JSON text.

    Whatever a store holds (written by another process, imported, edited by hand) must not break a page; each
    check is a pass in C, and a column is rebuilt only when it fails.
    """
    for k in _TEXT_COLUMNS:
        if not set(map(type, columns[k])) <= {str}:
            columns[k] = tuple(map(_text, columns[k]))
    for k in _OPTIONAL_TEXT_COLUMNS:
        if not set(map(type, columns[k])) <= {str, type(None)}:
            columns[k] = tuple(None if v is None else _text(v) for v in columns[k])
    if not set(map(type, columns[_ATTRIBUTES])) <= {str, dict, type(None)}:
        columns[_ATTRIBUTES] = tuple(v if isinstance(v, (str, dict)) else None for v in columns[_ATTRIBUTES])
    if not _times_fit(columns[_STARTED]):
        columns[_STARTED] = tuple(_time(v) or 0.0 for v in columns[_STARTED])
    ends = columns[_ENDED]
    if not _times_fit(tuple(itertools.compress(ends, map(operator.is_not, ends, itertools.repeat(None))))):
        columns[_ENDED] = tuple(map(_time, ends))
    return columns


def _cut_cycles(parents: list[int]) -> None:
    """Make one call of each parent cycle (the first recorded) a root: a call that is its own parent, or
    its own ancestor, can only come from a record not written by this library, and every walk up or
    down the tree must end."""
    state = bytearray(len(parents))  # 0: not reached yet, 1: on the walk under way, 2: walked
    for start in range(len(parents)):
        walk = []
        i = start
        while i >= 0 and not state[i]:
            state[i] = 1
            walk.append(i)
            i = parents[i]
        if i >= 0 and state[i] == 1:  # the walk came back to a call of its own
            parents[min(walk[walk.index(i) :])] = -1
        for j in walk:
            state[j] = 2


@contextlib.contextmanager
def _collector_paused() -> Iterator[None]:
    # Reading 100,000 rows makes 1.5 million objects, and the collector would scan the growing
    # heap again and again while none of them can be garbage: a third of the time.
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


class SessionTree:
    """The calls of one session without their captures, indexed by position in start order."""

    def __init__(self, session_id: str, rows: Iterable[CallRow], info: SessionInfo | None = None) -> None:
        self.session_id = session_id
        #: The store's listing of the session when it was read.
        self.info = info
        # Column tuples made by one transpose in C, and C-level passes over them wherever one will do:
        # the Python-level work per call is what decides how fast 100,000 calls open.
        columns = _cleaned(list(zip(*rows, strict=True)) or [()] * len(CALL_COLUMNS))
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
        #: The parent ids as stored (a parent read later, another process's row, is found then).
        self.parent_ids: tuple[str | None, ...] = _shared(columns[3])
        # A parent the session does not hold (another session's call, a lost row) makes its child a root.
        self.parents: list[int] = list(map(self.index.get, columns[3], itertools.repeat(-1)))
        if any(map(operator.ge, self.parents, range(count))):  # a parent recorded after its child, or a cycle
            _cut_cycles(self.parents)
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
        self._root_of: dict[int, int] = {}
        self._positions: list[int] | None = None  # each call's place among its siblings, made on first need

    @classmethod
    def read(cls, store: Store, session_id: str, info: SessionInfo | None = None) -> SessionTree:
        """The tree of a session as the store holds it now (``info``: its listing, read just before)."""
        with _collector_paused():
            return cls(session_id, store.iter_tree_rows(session_id), info)

    def open_calls(self) -> list[tuple[str, float]]:
        """(id, start) of the calls with no end yet: the rows a later read must look at again."""
        missing = map(operator.is_, self.ends, itertools.repeat(None))
        return [(self.ids[i], self.starts[i]) for i in itertools.compress(range(len(self.ids)), missing)]

    @property
    def newest_start(self) -> float:
        """The latest start of a call (from the store's clocks): calls started from then on are new."""
        return max(self.starts, default=0.0)

    def updated(self, changed: Iterable[CallRow], info: SessionInfo | None) -> SessionTree:
        """This tree with ``changed`` rows in place of the rows of the same call, the others added, in start order."""
        with _collector_paused():
            fresh = SessionTree(self.session_id, changed)
            kept = bytearray(b"\x01") * len(self.ids)
            for call_id, start in zip(fresh.ids, fresh.starts, strict=True):
                i = self.index.get(call_id)
                if i is not None and self.starts[i] == start:
                    kept[i] = 0
            rows = [*itertools.compress(self._rows(), kept), *fresh._rows()]
            rows.sort(key=operator.itemgetter(_STARTED, 0))
            return SessionTree(self.session_id, rows, info)

    def _rows(self) -> Iterator[tuple[Any, ...]]:
        """The tree's calls as tree rows (made in C), an ``llm`` call's facts in place of its attributes."""
        count = len(self.ids)
        return zip(
            self.ids,
            itertools.repeat(self.session_id, count),
            self.turn_ids,
            self.parent_ids,
            self.kinds,
            self.names,
            self.frameworks,
            self.statuses,
            itertools.repeat(None, count),
            itertools.repeat(None, count),
            self.errors,
            map(self.llm.get, range(count)),
            self.starts,
            self.ends,
            itertools.repeat("", count),
            strict=True,
        )

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
        self.tokens = self._totals({i: facts.get("tokens", 0) for i, facts in self.llm.items()}, order)
        self.error_calls = list(itertools.compress(range(count), map("error".__eq__, self.statuses)))
        errors_at: dict[int, int] = {}
        for i in self.error_calls:
            if parents[i] >= 0:
                errors_at[parents[i]] = errors_at.get(parents[i], 0) + 1
        self.errors_below = self._totals(errors_at, order)
        self.running = self.statuses.count("running")
        self.turn_number = {i: n for n, i in enumerate((i for i in self.roots if self.kinds[i] == "turn"), 1)}
        ended = count - self.ends.count(None)
        self.last_end = max(filter(None, self.ends), default=0.0)
        # Changes whenever a call is added, ends or fails: what the browser polls for.
        self.version = f"{count}.{ended}.{len(self.error_calls)}.{self.last_end:.6f}"

    def _totals(self, amounts: dict[int, int], order: Sequence[int]) -> list[int]:
        """Each call's amount plus the amounts of every call below it."""
        parents = self.parents
        totals = [0] * len(parents)
        # Tokens and errors are few: each is added to the calls above it...
        steps = len(parents) + 1000
        for call, amount in amounts.items():
            i = call
            while i >= 0:
                totals[i] += amount
                i = parents[i]
                steps -= 1
            if steps < 0:
                break
        else:
            return totals
        # ... unless the tree is deep (a chain of calls each below the last): one pass, children before parents.
        totals = [0] * len(parents)
        for i, amount in amounts.items():
            totals[i] = amount
        for i in reversed(order):
            parent = parents[i]
            if parent >= 0:
                totals[parent] += totals[i]
        return totals

    def root_of(self, i: int) -> int:
        """The root (usually the turn) above call ``i``."""
        parents, known = self.parents, self._root_of
        walked = []
        while i not in known and parents[i] >= 0:
            walked.append(i)
            i = parents[i]
        root = known.get(i, i)
        if walked:  # remembered: a deep tree would make every row of a page walk all the way up again
            known.update(dict.fromkeys(walked, root))
        return root

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
        if self._positions is None:
            self._positions = positions = [0] * len(self.ids)
            for siblings in (self.roots, *self.children.values()):
                for position, sibling in enumerate(siblings):
                    positions[sibling] = position
        steps = []
        while i >= 0:
            steps.append({"id": self.ids[i], "position": self._positions[i]})
            i = self.parents[i]
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

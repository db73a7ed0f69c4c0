"""The call tree ``openprogram show`` draws, from stored rows.

Turns and top-level runs are never folded; past the line limit the newest turns are
drawn whole and the oldest left out, so the run just made is always on screen. Every call
is drawn once, whatever its parents say (a call its own ancestor, from an import or a
shared store, is drawn as a top-level call), and recorded text is escaped (see ``printable``).
The tree is drawn with box-drawing lines (ASCII ones where the output cannot encode them);
on a terminal, failed calls are red (never with ``NO_COLOR`` set, nor into a pipe or file).
"""

from __future__ import annotations

import datetime as _dt
import itertools
import json
import math
import os
import re
import sys
import time
from collections.abc import Iterable, Iterator
from typing import Any, NamedTuple, Protocol, TextIO

from ..stores import Store, StoredRow, tokens_of
from .printable import printable

__all__ = [
    "COLLAPSE_AFTER",
    "MAX_LINES",
    "NEVER_FOLDED",
    "Drawable",
    "Tokens",
    "colour_wanted",
    "red",
    "render_tree",
    "usage_of",
    "when",
    "with_tracebacks",
]

#: Runs of more than this many alike siblings (same kind, name and status) are folded.
COLLAPSE_AFTER = 4
#: ``show`` draws at most this many lines unless told otherwise.
MAX_LINES = 2000
#: Kinds of call never folded: each is a turn or a run someone asked for, and the newest matters most.
NEVER_FOLDED = frozenset({"turn", "agent", "graph", "crew", "flow"})

_ERROR_TEXT = 200  # characters of an error message drawn on a line
# What an exception recorded without a message means to someone reading the tree.
_MESSAGELESS = {
    "GeneratorExit": "abandoned: the consumer stopped reading",
    "CancelledError": "cancelled",
    "KeyboardInterrupt": "interrupted by Ctrl-C",
}
_BARE_ERROR = re.compile(r"([\w.]+):?")


class _Style(NamedTuple):
    """The pieces a tree is drawn with: one style for a whole drawing."""

    branch: str
    last: str
    through: str
    dot: str  # between the parts of a turn's line


_BOXES = _Style("├── ", "└── ", "│   ", "·")
_ASCII = _Style("|-- ", "`-- ", "|   ", "-")


def _style_for(out: TextIO) -> _Style:
    """Box-drawing lines, unless ``out`` cannot encode them (an ASCII-only terminal)."""
    encoding = getattr(out, "encoding", None) or "utf-8"
    try:
        "".join(_BOXES).encode(encoding)
    except (UnicodeError, LookupError):
        return _ASCII
    return _BOXES


def colour_wanted(out: TextIO) -> bool:
    """Whether to colour what goes to ``out``: a terminal, and neither ``NO_COLOR`` nor ``TERM=dumb`` set."""
    if os.environ.get("NO_COLOR") or os.environ.get("TERM") == "dumb":
        return False
    try:
        return out.isatty()
    except (AttributeError, ValueError):  # no terminal behind it, or a closed stream
        return False


def red(text: str) -> str:
    """``text`` in red on a terminal (call only when :func:`colour_wanted`)."""
    return f"\x1b[31m{text}\x1b[0m"


def when(ts: float) -> str:
    """A timestamp as local date and time, to the second (``?`` for a time no clock gives)."""
    try:
        return _dt.datetime.fromtimestamp(ts).strftime("%Y-%m-%d %H:%M:%S")
    except (OverflowError, OSError, ValueError, TypeError):  # a row from another process may hold any number
        return "?"


def seconds(d: float) -> str:
    """A duration, in ms below a second (``?`` for one that is not a finite number)."""
    if not isinstance(d, (int, float)) or not math.isfinite(d):
        return "?"
    return f"{d * 1000:.1f}ms" if d < 1 else f"{d:.2f}s"


class Drawable(Protocol):
    """What a tree line needs of a call: a stored row (``StoredRow``) or a ``CallRecord``."""

    @property
    def call_id(self) -> str: ...
    @property
    def turn_id(self) -> str: ...
    @property
    def parent_id(self) -> str | None: ...
    @property
    def kind(self) -> str: ...
    @property
    def name(self) -> str: ...
    @property
    def framework(self) -> str | None: ...
    @property
    def status(self) -> str: ...
    @property
    def error(self) -> str | None: ...
    @property
    def started_at(self) -> float: ...
    @property
    def duration(self) -> float | None: ...


class Tokens(NamedTuple):
    """Tokens reported by model calls: input, output and total."""

    input: int = 0
    output: int = 0
    total: int = 0

    def __add__(self, other: object) -> Tokens:
        if not isinstance(other, Tokens):
            return NotImplemented
        return Tokens(self.input + other.input, self.output + other.output, self.total + other.total)

    def describe(self) -> str:
        return f"tokens {self.total} (in {self.input}, out {self.output})"


def _attributes(call: Drawable) -> dict[str, Any] | None:
    """A call's attributes (JSON text in a tree row, a dict in a record), or None."""
    found = getattr(call, "attributes", None)
    if isinstance(found, str):
        try:
            found = json.loads(found)
        except ValueError:
            return None
    return found if isinstance(found, dict) else None


def usage_of(call: Drawable) -> Tokens | None:
    """The token usage an ``llm`` call's attributes report, or None."""
    found = _attributes(call) if call.kind == "llm" else None
    usage = found.get("usage") if found else None
    if not isinstance(usage, dict):
        return None
    counts = [usage.get(key) for key in ("input_tokens", "output_tokens")]
    entered, produced = (value if isinstance(value, int) else 0 for value in counts)
    return Tokens(entered, produced, tokens_of({"usage": usage}))


def _error_text(error: str) -> str:
    first = (error.strip().splitlines() or [""])[0][:_ERROR_TEXT]
    bare = _BARE_ERROR.fullmatch(first)
    if not first:
        return "an error with no message"
    if bare is None:
        return first
    name = bare.group(1).rpartition(".")[2]
    return _MESSAGELESS.get(name, f"{name} (no message)")


class _Fold(NamedTuple):
    """Alike siblings drawn as one line."""

    kind: str
    name: str
    status: str
    hidden: int
    total: float
    nested: int

    def text(self) -> str:
        note = f", {self.nested} nested calls" if self.nested else ""
        return printable(
            f"... {self.hidden} more {self.kind} {self.name} [{self.status}] ({self.total * 1000:.1f}ms in all{note})"
        )


class _Line(NamedTuple):
    item: Drawable | _Fold
    prefix: str
    last: bool


def _weight(line: _Line) -> int:
    """Calls a line stands for."""
    item = line.item
    return item.hidden + item.nested if isinstance(item, _Fold) else 1


class _Tree:
    """The calls as a forest: each drawn once, under the first row of its parent's id.

    Calls are placed from the roots down, so parents that loop (a call its own ancestor, from an
    import or a shared store) cannot make a walk endless: the first call of such a loop is drawn
    as a top-level call. Everything is keyed by the row object (``id()``): ids may repeat.
    """

    def __init__(self, calls: Iterable[Drawable], style: _Style = _BOXES) -> None:
        self.style = style
        self.ordered = list(calls)  # keeps the rows alive: their id() are the keys below
        first: dict[str, Drawable] = {}
        for call in self.ordered:
            first.setdefault(call.call_id, call)
        waiting: dict[str, list[Drawable]] = {}
        roots: list[Drawable] = []
        for call in self.ordered:
            if call.parent_id in first:
                waiting.setdefault(call.parent_id, []).append(call)
            else:
                roots.append(call)
        self.children: dict[int, list[Drawable]] = {}
        self.parent_of: dict[int, Drawable] = {}
        placed: set[int] = set()

        def place(root: Drawable) -> None:
            placed.add(id(root))
            todo = [root]
            while todo:
                call = todo.pop()
                if first[call.call_id] is not call:
                    continue  # a repeated id: its children go under the first row
                kids = [kid for kid in waiting.get(call.call_id, ()) if id(kid) not in placed]
                if kids:
                    self.children[id(call)] = kids
                    for kid in kids:
                        placed.add(id(kid))
                        self.parent_of[id(kid)] = call
                    todo.extend(kids)

        for root in roots:
            place(root)
        if len(placed) < len(self.ordered):  # calls whose parents loop
            position = {id(call): n for n, call in enumerate(self.ordered)}
            for call in self.ordered:
                if id(call) not in placed:
                    roots.append(call)
                    place(call)
            roots.sort(key=lambda call: position[id(call)])
        self.roots = roots
        self.below = self._subtree_sizes()
        self.tokens = self._tokens_by_call()
        turns = [id(call) for call in self.roots if call.kind == "turn"]
        self.turn_number = {key: n for n, key in enumerate(turns, 1)}
        self.turn_count = len(turns)

    def _tokens_by_call(self) -> dict[int, Tokens]:
        """Each ``llm`` call's usage, and for every call the sum of the usage reported below it."""
        totals: dict[int, Tokens] = {}
        for call in self.ordered:
            usage = usage_of(call)
            if usage is None:
                continue
            totals[id(call)] = usage
            parent = self.parent_of.get(id(call))
            while parent is not None:  # a model call's usage counts for every call above it
                totals[id(parent)] = totals.get(id(parent), Tokens()) + usage
                parent = self.parent_of.get(id(parent))
        return totals

    def _subtree_sizes(self) -> dict[int, int]:
        """Number of calls below each call, in one pass."""
        order: list[Drawable] = []
        todo = list(self.roots)
        get_kids = self.children.get
        while todo:
            call = todo.pop()
            order.append(call)
            todo.extend(get_kids(id(call), ()))
        sizes: dict[int, int] = {}
        for call in reversed(order):  # children before parents
            kids = get_kids(id(call))
            if kids:
                sizes[id(call)] = len(kids) + sum(sizes.get(id(k), 0) for k in kids)
        return sizes

    def size(self, call: Drawable) -> int:
        """The call and every call below it."""
        return 1 + self.below.get(id(call), 0)

    def groups(self, parent: Drawable, unfold: bool) -> list[Drawable | _Fold]:
        """A call's children as drawn: long runs of alike leaf-ish siblings folded, the newest kept."""
        kids = self.children.get(id(parent), [])
        if unfold:
            return list(kids)
        groups: list[Drawable | _Fold] = []
        i = 0
        while i < len(kids):
            key = (kids[i].kind, kids[i].name, kids[i].status)
            j = i
            while j + 1 < len(kids) and (kids[j + 1].kind, kids[j + 1].name, kids[j + 1].status) == key:
                j += 1
            if j - i + 1 > COLLAPSE_AFTER and key[0] not in NEVER_FOLDED:
                hidden = kids[i + 2 : j]
                total = sum(c.duration or 0.0 for c in hidden)
                nested = sum(self.below.get(id(c), 0) for c in hidden)
                groups.extend([kids[i], kids[i + 1], _Fold(*key, len(hidden), total, nested), kids[j]])
            else:
                groups.extend(kids[i : j + 1])
            i = j + 1
        return groups

    def walk(self, root: Drawable, last: bool, unfold: bool) -> Iterator[_Line]:
        """The lines of one root's subtree, top-down."""
        stack = [_Line(root, "", last)]
        while stack:
            line = stack.pop()
            yield line
            if isinstance(line.item, _Fold):
                continue
            groups = self.groups(line.item, unfold)
            prefix = line.prefix + ("    " if line.last else self.style.through)
            stack.extend(_Line(groups[n], prefix, n == len(groups) - 1) for n in range(len(groups) - 1, -1, -1))


class _Labeller:
    def __init__(self, tree: _Tree, now: float) -> None:
        self.tree, self.now, self.dot = tree, now, tree.style.dot

    def duration(self, call: Drawable) -> str:
        d = call.duration
        if d is not None:
            return seconds(d)
        if call.status == "running":
            return f"{seconds(max(0.0, self.now - call.started_at))} so far"
        return "-"

    def where(self, call: Drawable, root: Drawable) -> str:
        """A root's place among the turns and its wall-clock start; any other call's offset into its turn."""
        if call is not root:
            text = f"at {call.started_at - root.started_at:+.3f}s"
            return f"{text} {self.dot} id {call.turn_id}" if call.kind == "turn" else text
        number = self.tree.turn_number.get(id(call))
        if number is None:
            return f"started {when(call.started_at)}"
        dot = self.dot
        return f"turn {number} of {self.tree.turn_count} {dot} {when(call.started_at)} {dot} id {call.turn_id}"

    def label(self, call: Drawable, root: Drawable) -> str:
        """The call's line, its recorded text escaped; a row whose fields are not of their types says so."""
        try:
            return printable(self._label(call, root))
        except (TypeError, ValueError, OverflowError):  # a row another process wrote: a time that is text, ...
            return printable(f"{call.kind} {call.name} [{call.status}]  (a row that cannot be read whole)")

    def _label(self, call: Drawable, root: Drawable) -> str:
        fw = f" ({call.framework})" if call.framework else ""
        text = f"{call.kind} {call.name}{fw} [{call.status}] {self.duration(call)}  {self.where(call, root)}"
        attributes = _attributes(call)
        attempt = attributes.get("attempt") if attributes else None
        if isinstance(attempt, int) and not isinstance(attempt, bool):
            text += f"  attempt {attempt}"
        tokens = self.tree.tokens.get(id(call)) if call.kind in ("turn", "llm") else None
        if tokens is not None and (tokens.total or call.kind == "llm"):
            text += f"  {tokens.describe()}"
        effect = attributes.get("effect") if attributes and call.kind != "llm" else None
        if effect:  # an undoable call's or turn's "effect": "undoable", "undone", "outcome unknown", ...
            text += f"  ({effect})"
        if call.error is not None:
            text += f"  !! {_error_text(call.error)}"
        return text


def render_tree(
    calls: Iterable[Drawable],
    out: TextIO,
    max_lines: int = MAX_LINES,
    *,
    unfold: bool = False,
    now: float | None = None,
    colour: bool = False,
) -> int:
    """Draw the call tree; returns the lines written.

    Past ``max_lines`` the oldest turns are left out (one line says how many), and a newest
    turn too long alone is cut (one line says how much is left). ``unfold`` folds nothing and
    draws every line; ``now`` is the time running calls have run until; ``colour`` draws failed calls in red
    (see :func:`colour_wanted`).
    """
    style = _style_for(out)
    tree = _Tree(calls, style)
    labeller = _Labeller(tree, time.time() if now is None else now)
    roots = tree.roots
    kept: list[tuple[Drawable, list[_Line]]] = []
    cut: Iterator[_Line] | None = None
    budget = sys.maxsize - 1 if unfold else max(1, max_lines)
    for index in range(len(roots) - 1, -1, -1):  # newest first
        walked = tree.walk(roots[index], index == len(roots) - 1, unfold)
        lines = list(itertools.islice(walked, budget + 1))
        if len(lines) > budget:
            if not kept:  # the newest turn alone is too long: its head, then what is left
                kept.append((roots[index], lines[:budget]))
                cut = itertools.chain(lines[budget:], walked)
            break
        kept.append((roots[index], lines))
        budget -= len(lines)
    left_out = roots[: len(roots) - len(kept)]
    if left_out and sum(len(lines) for _, lines in kept) >= max_lines:  # room for the note
        if len(kept) > 1:
            left_out = roots[: len(roots) - len(kept) + 1]
            kept.pop()
        else:
            root, lines = kept[0]
            cut = itertools.chain(lines[-1:], cut or ())
            kept[0] = (root, lines[:-1])
    written = 0
    if left_out:
        out.write(_left_out_note(tree, left_out))
        written += 1
    for root, lines in reversed(kept):
        for line in lines:
            branch = style.last if line.last else style.branch
            item = line.item
            text = item.text() if isinstance(item, _Fold) else labeller.label(item, root)
            if colour and item.status == "error":
                text = red(text)
            out.write(f"{line.prefix}{branch}{text}\n")
            if unfold and not isinstance(item, _Fold):
                written += _write_traceback(tree, item, line, out)
        written += len(lines)
    if cut is not None:
        more_lines = more_calls = 0
        for line in cut:
            more_lines += 1
            more_calls += _weight(line)
        out.write(
            f"... output stopped after {written} lines: {more_lines} more lines ({more_calls} calls) not shown; "
            "use --all to see everything, or --json\n"
        )
        written += 1
    return written


def _left_out_note(tree: _Tree, left_out: list[Drawable]) -> str:
    turns = sum(1 for root in left_out if root.kind == "turn")
    others = len(left_out) - turns
    parts = [f"{turns} earlier turn{'s' * (turns != 1)}"] if turns else []
    parts += [f"{others} earlier top-level call{'s' * (others != 1)}"] if others else []
    calls = sum(map(tree.size, left_out))
    return f"... {' and '.join(parts)} ({calls} calls) left out; see them with --all (or a larger --max-lines)\n"


def with_tracebacks(store: Store, rows: list[StoredRow]) -> list[StoredRow]:
    """The rows with the traceback each failed call kept (tree rows leave attributes out), for ``show --all``."""
    found = []
    for row in rows:
        record = store.get_call(row.session_id, row.call_id, row.started_at) if row.status == "error" else None
        stack = record.attributes.get("traceback") if record is not None and record.attributes else None
        if isinstance(stack, str):
            found.append(row._replace(attributes={**(_attributes(row) or {}), "traceback": stack}))
        else:
            found.append(row)
    return found


def _write_traceback(tree: _Tree, call: Drawable, line: _Line, out: TextIO) -> int:
    """Under a failed call's line (``show --all``): the traceback it kept, escaped; returns the lines written."""
    attributes = _attributes(call) if call.status == "error" else None
    stack = attributes.get("traceback") if attributes else None
    if not isinstance(stack, str):
        return 0
    through = tree.style.through
    indent = line.prefix + ("    " if line.last else through) + (through if tree.children.get(id(call)) else "    ")
    lines = stack.rstrip("\n").split("\n")
    for text in lines:
        out.write(f"{indent}{printable(text)}\n")
    return len(lines)

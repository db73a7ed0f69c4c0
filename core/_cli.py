"""The ``openprogram`` command: ``sessions``, ``show``, ``demo``, ``import``, ``export``, ``undo``, ``ui``."""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import logging
import sys
from collections.abc import Iterable, Sequence
from typing import NamedTuple, Protocol, TextIO

from ._demo import run_demo
from ._ids import InvalidSessionId, validate_session_id
from ._spill import load_spill
from .stores import Store, StoreError, open_store, safe_url
from .stores._base import StoredRow, tokens_of

__all__ = ["main", "render_tree"]

#: Runs of more than this many alike siblings (same kind, name and status) are collapsed.
COLLAPSE_AFTER = 3
#: ``show`` draws at most this many lines before summarising the rest.
MAX_LINES = 2000


def _when(ts: float) -> str:
    return _dt.datetime.fromtimestamp(ts).strftime("%Y-%m-%d %H:%M:%S")


class _Drawable(Protocol):
    @property
    def call_id(self) -> str: ...
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
    def duration(self) -> float | None: ...


def _duration(call: _Drawable) -> str:
    d = call.duration
    if d is None:
        return "-"
    return f"{d * 1000:.1f}ms" if d < 1 else f"{d:.2f}s"


class _Tokens(NamedTuple):
    """Tokens reported by model calls: input, output and total."""

    input: int = 0
    output: int = 0
    total: int = 0

    def __add__(self, other: object) -> _Tokens:
        if not isinstance(other, _Tokens):
            return NotImplemented
        return _Tokens(self.input + other.input, self.output + other.output, self.total + other.total)

    def describe(self) -> str:
        return f"tokens {self.total} (in {self.input}, out {self.output})"


def _usage_of(call: _Drawable) -> _Tokens | None:
    """The token usage an ``llm`` call's attributes report (JSON text in a tree row), or None."""
    attributes = getattr(call, "attributes", None)
    if call.kind != "llm" or not attributes:
        return None
    try:
        found = (json.loads(attributes) if isinstance(attributes, str) else attributes).get("usage")
    except (ValueError, AttributeError):
        return None
    if not isinstance(found, dict):
        return None
    counts = [found.get(key) for key in ("input_tokens", "output_tokens")]
    entered, produced = (value if isinstance(value, int) else 0 for value in counts)
    return _Tokens(entered, produced, tokens_of({"usage": found}))


def _label(call: _Drawable, tokens: _Tokens | None = None) -> str:
    fw = f" ({call.framework})" if call.framework else ""
    text = f"{call.kind} {call.name}{fw} [{call.status}] {_duration(call)}"
    if tokens is not None and (tokens.total or call.kind == "llm"):
        text += f"  {tokens.describe()}"
    attributes = getattr(call, "attributes", None) if call.kind != "llm" else None
    if attributes:  # an undoable call's or turn's "effect": "undoable", "undone", "outcome unknown", ...
        found = json.loads(attributes) if isinstance(attributes, str) else attributes
        text += f"  ({found['effect']})" if isinstance(found, dict) and found.get("effect") else ""
    if call.error:
        text += f"  !! {call.error.splitlines()[0][:200] if call.error.strip() else call.error}"
    return text


def render_tree(calls: Iterable[_Drawable], out: TextIO, max_lines: int = MAX_LINES) -> int:
    """Draw the call tree (of CallRecords); runs of alike siblings collapse into one line. Returns lines drawn."""
    children: dict[str | None, list[_Drawable]] = {}
    ids: set[str] = set()
    ordered: list[_Drawable] = []
    for call in calls:
        ordered.append(call)
        ids.add(call.call_id)
    for call in ordered:
        parent = call.parent_id if call.parent_id in ids else None
        children.setdefault(parent, []).append(call)
    below = _subtree_sizes(children)
    tokens = _tokens_by_call(ordered, children)
    lines = 0
    stack: list[tuple[_Drawable | str, str, bool]] = []

    def push_children(parent: str | None, prefix: str) -> None:
        kids = children.get(parent, [])
        groups: list[_Drawable | str] = []
        i = 0
        while i < len(kids):
            j = i
            key = (kids[i].kind, kids[i].name, kids[i].status)
            while j + 1 < len(kids) and (kids[j + 1].kind, kids[j + 1].name, kids[j + 1].status) == key:
                j += 1
            run = j - i + 1
            if run > COLLAPSE_AFTER:
                groups.extend(kids[i : i + 2])
                hidden = kids[i + 2 : j + 1]
                total = sum(c.duration or 0.0 for c in hidden)
                nested = sum(below.get(c.call_id, 0) for c in hidden)
                note = f", {nested} nested calls" if nested else ""
                summary = f"... {len(hidden)} more {key[0]} {key[1]} [{key[2]}] ({total * 1000:.1f}ms in all{note})"
                groups.append(summary)
            else:
                groups.extend(kids[i : j + 1])
            i = j + 1
        for n in range(len(groups) - 1, -1, -1):
            stack.append((groups[n], prefix, n == len(groups) - 1))

    push_children(None, "")
    while stack:
        item, prefix, last = stack.pop()
        if lines >= max_lines:
            remaining = 1 + len(stack)
            out.write(f"... output stopped after {max_lines} lines ({remaining}+ more entries); use --json for all\n")
            lines += 1
            break
        branch = "`-- " if last else "|-- "
        if isinstance(item, str):
            out.write(f"{prefix}{branch}{item}\n")
        else:
            shown = tokens.get(item.call_id) if item.kind in ("turn", "llm") else None
            out.write(f"{prefix}{branch}{_label(item, shown)}\n")
            push_children(item.call_id, prefix + ("    " if last else "|   "))
        lines += 1
    return lines


def _tokens_by_call(ordered: list[_Drawable], children: dict[str | None, list[_Drawable]]) -> dict[str, _Tokens]:
    """Each ``llm`` call's usage, and for every call the sum of the usage reported below it."""
    totals: dict[str, _Tokens] = {}
    parents = {kid.call_id: parent for parent, kids in children.items() for kid in kids}
    for call in ordered:
        usage = _usage_of(call)
        if usage is None:
            continue
        totals[call.call_id] = usage
        parent = parents.get(call.call_id)
        while parent is not None:  # a model call's usage counts for every call above it
            totals[parent] = totals.get(parent, _Tokens()) + usage
            parent = parents.get(parent)
    return totals


def _subtree_sizes(children: dict[str | None, list[_Drawable]]) -> dict[str, int]:
    """Number of calls below each call, in one pass (counting per collapsed run was quadratic-ish)."""
    order: list[str] = []
    todo = [c.call_id for c in children.get(None, ())]
    get_kids = children.get
    while todo:
        call_id = todo.pop()
        order.append(call_id)
        kids = get_kids(call_id)
        if kids:
            todo.extend([k.call_id for k in kids])
    sizes: dict[str, int] = {}
    get_size = sizes.get
    for call_id in reversed(order):  # children before parents
        kids = get_kids(call_id)
        if kids:
            total = len(kids)
            for kid in kids:
                total += get_size(kid.call_id, 0)
            sizes[call_id] = total
    return sizes


def _stream_json(store: Store, session_id: str, out: TextIO) -> None:
    info = store.get_session(session_id)
    head = {} if info is None else {"session_id": info.session_id, "agent_id": info.agent_id,
                                    "created_at": info.created_at, "updated_at": info.updated_at}  # fmt: skip
    out.write('{"session": ' + json.dumps(head) + ', "calls": [')
    first = True
    for call in store.iter_calls(session_id):
        out.write(("\n" if first else ",\n") + json.dumps(call.to_dict()))
        first = False
    out.write("\n]}\n")


def _cmd_sessions(store: Store, args: argparse.Namespace, out: TextIO) -> int:
    sessions = store.list_sessions(limit=args.limit)
    if args.json:
        out.write(json.dumps([vars(s) for s in sessions], indent=1) + "\n")
        return 0
    if not sessions:
        out.write(f"no sessions in {store.url}\n")
        return 0
    out.write(f"{'SESSION':<34} {'AGENT':<12} {'CALLS':>7} {'TOKENS':>9}  {'CREATED':<19}  UPDATED\n")
    for s in sessions:
        out.write(f"{s.session_id:<34} {s.agent_id:<12} {s.call_count:>7} {s.tokens:>9}  {_when(s.created_at)}  "
                  f"{_when(s.updated_at)}\n")  # fmt: skip
    return 0


def _cmd_show(store: Store, args: argparse.Namespace, out: TextIO) -> int:
    session_id = validate_session_id(args.session_id)
    info = store.get_session(session_id)
    if info is None:
        sys.stderr.write(f"openprogram: no session {session_id!r} in {store.url}\n"
                         "  (list them with `openprogram sessions`)\n")  # fmt: skip
        return 1
    if args.json:
        _stream_json(store, session_id, out)
        return 0
    rows = [StoredRow._make(row) for row in store.iter_tree_rows(session_id)]
    used = sum(filter(None, map(_usage_of, rows)), _Tokens())
    usage = f"  {used.describe()}" if used.total else ""
    out.write(f"session {info.session_id}  agent {info.agent_id}  {info.call_count} calls{usage}  "
              f"created {_when(info.created_at)}  updated {_when(info.updated_at)}\n")  # fmt: skip
    render_tree(rows, out, max_lines=args.max_lines)
    return 0


def _cmd_demo(store: Store, args: argparse.Namespace, out: TextIO) -> int:
    if args.session is not None:
        validate_session_id(args.session)
    return run_demo(store, args.session, out)


def _cmd_import(store: Store, args: argparse.Namespace, out: TextIO) -> int:
    written = load_spill(args.file, store)
    out.write(f"imported {written} records from {args.file} into {store.url}\n")
    return 0


def _cmd_export(store: Store, args: argparse.Namespace, out: TextIO) -> int:
    from ._otlp_cli import export_command

    return export_command(store, args.session_ids, all_sessions=args.all, since=args.since, endpoint=args.endpoint,
                          out=out, err=sys.stderr)  # fmt: skip


def _cmd_undo(store: Store, args: argparse.Namespace, out: TextIO) -> int:
    from ._undo_cli import run

    return run(store, args, out)


def _cmd_ui(store: Store, args: argparse.Namespace, out: TextIO) -> int:
    from ._viewer import serve

    return serve(store, args.host, args.port, open_browser=not args.no_browser, out=out)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="openprogram", description="Sessions recorded by openprogram.")
    parser.add_argument("--store", help="store URL (default: $OPENPROGRAM_STORE or $OPENPROGRAM_HOME/sessions.db)")
    parser.add_argument("-v", "--verbose", action="store_true", help="log debug messages")
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("sessions", help="list sessions, most recent first")
    p.add_argument("--limit", type=int, default=50)
    p.add_argument("--json", action="store_true")
    p = sub.add_parser("show", help="draw the call tree of a session")
    p.add_argument("session_id")
    p.add_argument("--json", action="store_true", help="stream every call as JSON")
    p.add_argument("--max-lines", type=int, default=MAX_LINES)
    p = sub.add_parser("demo", help="run the offline demo agents and record them")
    p.add_argument("--session", help="continue this session (append a turn)")
    p = sub.add_parser("import", help="load records spilled while a store was unavailable")
    p.add_argument("file")
    p = sub.add_parser("export", help="send recorded sessions to a tracing backend")
    p = p.add_subparsers(dest="format", required=True).add_parser(
        "otlp", help="as OpenTelemetry spans over OTLP/HTTP (endpoint and headers from OTEL_EXPORTER_OTLP_*)"
    )
    p.add_argument("session_ids", nargs="*", metavar="SESSION_ID")
    p.add_argument("--all", action="store_true", help="every session in the store")
    p.add_argument("--since", help="sessions updated since a duration ago (30m, 2h, 7d) or a date/time")
    p.add_argument("--endpoint", help="OTLP/HTTP traces URL (a bare http://host:port gets /v1/traces)")
    p = sub.add_parser("undo", help="compensate what a session's (or a turn's) tools did, newest first")
    p.add_argument("session_id")
    p.add_argument("--turn", dest="turn_id", help="undo this turn only (default: the whole session)")
    p.add_argument("--dry-run", action="store_true", help="print the plan and change nothing")
    p.add_argument("--import", dest="imports", action="append", default=[], metavar="MODULE",
                   help="import MODULE first: it declares the compensations (repeatable)")  # fmt: skip
    p.add_argument("--unknown", choices=("stop", "undo", "skip"), default="stop",
                   help="an effect of unknown outcome (its process died mid-call): stop, undo or skip it")  # fmt: skip
    p.add_argument("-y", "--yes", action="store_true", help="do not ask for confirmation")
    # "resolve": an option every command may gain later (--store) must not make this parser fail.
    p = sub.add_parser("ui", help="browse the sessions in a local, read-only web viewer", conflict_handler="resolve")
    p.add_argument("--store", default=argparse.SUPPRESS, help="store URL (as before the command)")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default: 127.0.0.1, this machine only)")
    p.add_argument("--port", type=int, default=8765, help="port to listen on (default: 8765; 0: any free port)")
    p.add_argument("--no-browser", action="store_true", help="print the viewer's URL without opening a browser")
    return parser


def main(argv: Sequence[str] | None = None, out: TextIO | None = None) -> int:
    """Run the CLI; returns the exit status."""
    args = _parser().parse_args(argv)
    out = out or sys.stdout
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.WARNING,
                        format="%(levelname)s %(name)s: %(message)s")  # fmt: skip
    commands = {"sessions": _cmd_sessions, "show": _cmd_show, "demo": _cmd_demo, "import": _cmd_import,
                "export": _cmd_export, "undo": _cmd_undo, "ui": _cmd_ui}  # fmt: skip
    try:
        store = open_store(args.store)
        return commands[args.command](store, args, out)
    except InvalidSessionId as exc:
        sys.stderr.write(f"openprogram: {exc}\n")
        return 2
    except StoreError as exc:
        sys.stderr.write(f"openprogram: {exc}\n")
        return 1
    except BrokenPipeError:
        return 0
    except OSError as exc:
        target = safe_url(args.store) if args.store else "the store"
        sys.stderr.write(f"openprogram: {exc} ({target})\n")
        return 1

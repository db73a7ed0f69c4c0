"""The ``openprogram`` command: ``sessions``, ``show``, ``demo``, ``import``, ``export``, ``undo``, ``ui``."""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence
from importlib import metadata
from typing import TextIO

from .._recording import load_spill
from .._runtime import InvalidSessionId, validate_session_id
from ..stores import Store, StoredRow, StoreError, describe_store, open_store, safe_url
from .demo import run_demo
from .json_output import json_text
from .printable import printable
from .sessions import listed_sessions, write_json, write_jsonl, write_table
from .tree import MAX_LINES, Tokens, render_tree, usage_of, when

__all__ = ["build_parser", "main", "render_tree"]


def _stream_json(store: Store, session_id: str, out: TextIO) -> None:
    info = store.get_session(session_id)
    head = (
        {}
        if info is None
        else {
            "session_id": info.session_id,
            "agent_id": info.agent_id,
            "created_at": info.created_at,
            "updated_at": info.updated_at,
        }
    )
    out.write('{"session": ' + json_text(head) + ', "calls": [')
    first = True
    for call in store.iter_calls(session_id):
        out.write(("\n" if first else ",\n") + json_text(call.to_dict()))
        first = False
    out.write("\n]}\n")


def _cmd_sessions(store: Store, args: argparse.Namespace, out: TextIO) -> int:
    sessions = listed_sessions(store, args.limit or None)
    if args.json or args.jsonl:
        (write_json if args.json else write_jsonl)(sessions, out)
    elif sessions:
        write_table(sessions, out)
    else:
        out.write(f"no sessions in {describe_store(store)}\n")
    return 0


def _cmd_show(store: Store, args: argparse.Namespace, out: TextIO) -> int:
    session_id = validate_session_id(args.session_id)
    info = store.get_session(session_id)
    if info is None:
        sys.stderr.write(
            f"openprogram: no session {session_id!r} in {describe_store(store)}\n"
            "  (list them with `openprogram sessions`)\n"
        )
        return 1
    if args.json:
        _stream_json(store, session_id, out)
        return 0
    if args.jsonl:
        for call in store.iter_calls(session_id):
            out.write(json_text(call.to_dict()) + "\n")
        return 0
    rows = [StoredRow._make(row) for row in store.iter_tree_rows(session_id)]
    used = sum(filter(None, map(usage_of, rows)), Tokens())
    usage = f"  {used.describe()}" if used.total else ""
    head = (
        f"session {info.session_id}  agent {info.agent_id}  {info.call_count} calls{usage}  "
        f"created {when(info.created_at)}  updated {when(info.updated_at)}"
    )
    out.write(printable(head) + "\n")
    render_tree(rows, out, max_lines=args.max_lines, unfold=args.all)
    return 0


def _cmd_demo(store: Store, args: argparse.Namespace, out: TextIO) -> int:
    if args.session is not None:
        validate_session_id(args.session)
    return run_demo(store, args.session, out)


def _cmd_import(store: Store, args: argparse.Namespace, out: TextIO) -> int:
    done = load_spill(args.file, store)
    rejected = f"; {done.rejected} line{'s' * (done.rejected != 1)} rejected" if done.rejected else ""
    out.write(f"imported {done.written} records from {printable(args.file)} into {describe_store(store)}{rejected}\n")
    for reason in done.reasons:
        sys.stderr.write(f"openprogram: {printable(reason)}\n")
    if done.rejected > len(done.reasons):
        more = done.rejected - len(done.reasons)
        sys.stderr.write(f"openprogram: ... and {more} more line{'s' * (more != 1)} rejected\n")
    return 1 if done.rejected else 0


def _cmd_export(store: Store, args: argparse.Namespace, out: TextIO) -> int:
    from .export import export_command

    return export_command(
        store,
        args.session_ids,
        all_sessions=args.all,
        since=args.since,
        endpoint=args.endpoint,
        out=out,
        err=sys.stderr,
    )


def _cmd_undo(store: Store, args: argparse.Namespace, out: TextIO) -> int:
    from .undo import run

    return run(store, args, out)


def _cmd_ui(store: Store, args: argparse.Namespace, out: TextIO) -> int:
    from .._viewer import serve

    return serve(store, args.host, args.port, open_browser=not args.no_browser, out=out)


def _version() -> str:
    try:
        return metadata.version("openprogram")
    except metadata.PackageNotFoundError:  # run from a source tree that was never installed
        from .. import __version__

        return __version__


def _count(text: str) -> int:
    """A ``--limit``: 0 or more."""
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 (no limit) or more, not {value}")
    return value


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be 1 or more, not {value}")
    return value


def _output_options(parser: argparse.ArgumentParser, what: str) -> None:
    formats = parser.add_mutually_exclusive_group()
    formats.add_argument("--json", action="store_true", help=f"print {what} as one JSON document")
    formats.add_argument("--jsonl", action="store_true", help=f"print {what} as JSON Lines: one object a line")


def build_parser() -> argparse.ArgumentParser:
    """The parser of the ``openprogram`` command and its subcommands."""
    # Options every command takes, before or after its name (`openprogram sessions --store URL`).
    # SUPPRESS: one given before the command is not overwritten by the command's absent one.
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--store",
        default=argparse.SUPPRESS,
        metavar="URL",
        help="store URL (default: $OPENPROGRAM_STORE or $OPENPROGRAM_HOME/sessions.db)",
    )
    common.add_argument("-v", "--verbose", action="store_true", default=argparse.SUPPRESS, help="log debug messages")
    parser = argparse.ArgumentParser(
        prog="openprogram", description="Sessions recorded by openprogram.", parents=[common]
    )
    parser.add_argument(
        "--version", action="version", version=f"openprogram {_version()}", help="print the version and exit"
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    p = sub.add_parser("sessions", parents=[common], help="list sessions, most recently updated first")
    p.add_argument("--limit", type=_count, default=50, help="list at most this many (default: 50; 0: all)")
    _output_options(p, "the sessions")
    p = sub.add_parser("show", parents=[common], help="draw the call tree of a session")
    p.add_argument("session_id", metavar="SESSION_ID", help="the session to draw")
    p.add_argument(
        "--max-lines",
        type=_positive,
        default=MAX_LINES,
        help=f"draw at most this many lines, the newest turns first (default: {MAX_LINES})",
    )
    p.add_argument("--all", action="store_true", help="fold nothing and draw every line (no --max-lines limit)")
    _output_options(p, "every call with its captures, streamed,")
    p = sub.add_parser("demo", parents=[common], help="run the offline demo agents and record them")
    p.add_argument("--session", metavar="SESSION_ID", help="continue this session (append a turn)")
    p = sub.add_parser(
        "import",
        parents=[common],
        help="load records spilled while a store was unavailable (a line the writer could not have written is "
        "skipped and reported, and the exit status is 1)",
    )
    p.add_argument("file", metavar="SPILL_FILE", help="the spill file the warning named")
    p = sub.add_parser("export", parents=[common], help="send recorded sessions to a tracing backend")
    p = p.add_subparsers(dest="format", required=True, metavar="FORMAT").add_parser(
        "otlp",
        parents=[common],
        help="as OpenTelemetry spans over OTLP/HTTP (endpoint and headers from OTEL_EXPORTER_OTLP_*)",
    )
    p.add_argument("session_ids", nargs="*", metavar="SESSION_ID", help="the sessions to send")
    p.add_argument("--all", action="store_true", help="every session in the store")
    p.add_argument("--since", help="sessions updated since a duration ago (30m, 2h, 7d) or a date/time")
    p.add_argument("--endpoint", help="OTLP/HTTP traces URL (a bare http://host:port gets /v1/traces)")
    p = sub.add_parser(
        "undo", parents=[common], help="compensate what a session's (or a turn's) tools did, newest first"
    )
    p.add_argument("session_id", metavar="SESSION_ID", help="the session whose effects to undo")
    p.add_argument(
        "--turn",
        dest="turn_id",
        metavar="TURN_ID",
        help="undo this turn only (default: the whole session; `show` prints each turn's id)",
    )
    p.add_argument("--dry-run", action="store_true", help="print the plan and change nothing")
    p.add_argument(
        "--import",
        dest="imports",
        action="append",
        default=[],
        metavar="MODULE",
        help="import MODULE first: it declares the compensations (repeatable)",
    )
    p.add_argument(
        "--unknown",
        choices=("stop", "undo", "skip"),
        default="stop",
        help="an effect of unknown outcome (its process died mid-call): stop, undo or skip it",
    )
    p.add_argument("-y", "--yes", action="store_true", help="do not ask for confirmation")
    p = sub.add_parser("ui", parents=[common], help="browse the sessions in a local, read-only web viewer")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default: 127.0.0.1, this machine only)")
    p.add_argument("--port", type=int, default=8765, help="port to listen on (default: 8765; 0: any free port)")
    p.add_argument("--no-browser", action="store_true", help="print the viewer's URL without opening a browser")
    return parser


def main(argv: Sequence[str] | None = None, out: TextIO | None = None) -> int:
    """Run the CLI; returns the exit status."""
    args = build_parser().parse_args(argv)
    out = out or sys.stdout
    store_url: str | None = getattr(args, "store", None)
    logging.basicConfig(
        level=logging.DEBUG if getattr(args, "verbose", False) else logging.WARNING,
        format="%(levelname)s %(name)s: %(message)s",
    )
    commands = {
        "sessions": _cmd_sessions,
        "show": _cmd_show,
        "demo": _cmd_demo,
        "import": _cmd_import,
        "export": _cmd_export,
        "undo": _cmd_undo,
        "ui": _cmd_ui,
    }
    try:
        store = open_store(store_url, strict=True)  # an unusable store is an error before the command runs
        return commands[args.command](store, args, out)
    except InvalidSessionId as exc:
        sys.stderr.write(f"openprogram: {printable(str(exc))}\n")
        return 2
    except StoreError as exc:
        sys.stderr.write(f"openprogram: {printable(str(exc))}\n")
        return 1
    except BrokenPipeError:
        return 0
    except OSError as exc:
        target = safe_url(store_url) if store_url else "the store"
        sys.stderr.write(f"openprogram: {printable(str(exc))} ({target})\n")
        return 1

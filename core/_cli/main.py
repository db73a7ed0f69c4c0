"""The ``openprogram`` command: ``sessions``, ``show``, ``demo``, ``import``, ``export``, ``undo``, ``ui``."""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Sequence
from importlib import metadata
from typing import Any, TextIO

from .._recording import load_spill
from .._runtime import InvalidSessionId, validate_session_id
from .._viewer import SessionTree
from ..stores import NoSuchStore, Store, StoredRow, StoreError, describe_store, open_store, safe_url
from .demo import add_demo_arguments, run_demo
from .json_output import json_text
from .printable import printable
from .session_ids import SessionNotFound, find_session
from .sessions import listed_sessions, session_entry, write_json, write_jsonl, write_table
from .tree import MAX_LINES, Tokens, colour_wanted, red, render_tree, seconds, usage_of, when, with_tracebacks

__all__ = ["build_parser", "main", "render_tree"]

#: Commands that only read the store (``undo`` reads first): a store that does not exist is an error for them,
#: never an empty store, and they create no file. The viewer (``ui``) may be started before anything records:
#: it says so, and shows the sessions once there are some.
_READING = frozenset({"sessions", "show", "export", "undo"})


def _stream_json(store: Store, head: dict[str, Any], out: TextIO) -> None:
    session_id = head["session_id"]
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


def _show_head(entry: dict[str, Any], used: Tokens, colour: bool) -> str:
    """``show``'s first line: the session, its status and errors, tokens, and its time in turns and overall."""
    errors = entry["errors"]
    status, counted = f"status {entry['status']}", f"{errors} error{'s' * (errors != 1)}"
    if colour and errors:
        status, counted = red(status), red(counted)
    turns = entry["turns"]
    time = f"{turns} turn{'s' * (turns != 1)}"
    if entry["duration"] is not None:
        time += f", {seconds(entry['duration'])} in turns"
        if entry["span"] is not None and entry["span"] - entry["duration"] >= 0.01:
            time += f" over {seconds(entry['span'])} from first start to last end"
    usage = f"  {used.describe()}" if used.total else ""
    return (
        f"session {printable(entry['session_id'])}  agent {printable(entry['agent_id'])}  {status}  "
        f"{entry['call_count']} calls  {counted}{usage}  {time}  "
        f"created {when(entry['created_at'])}  updated {when(entry['updated_at'])}"
    )


def _cmd_show(store: Store, args: argparse.Namespace, out: TextIO) -> int:
    info = find_session(store, args.session_id)
    session_id = info.session_id
    tree_rows = list(store.iter_tree_rows(session_id))
    entry = session_entry(SessionTree(session_id, tree_rows, info), info)
    if args.json:
        _stream_json(store, entry, out)
        return 0
    if args.jsonl:
        out.write(json_text(entry) + "\n")  # the session first, as `sessions --jsonl` prints it
        for call in store.iter_calls(session_id):
            out.write(json_text(call.to_dict()) + "\n")
        return 0
    rows = [StoredRow._make(row) for row in tree_rows]
    if args.all:  # each failed call's traceback, drawn under it
        rows = with_tracebacks(store, rows)
    colour = colour_wanted(out)
    out.write(_show_head(entry, sum(filter(None, map(usage_of, rows)), Tokens()), colour) + "\n")
    render_tree(rows, out, max_lines=args.max_lines, unfold=args.all, colour=colour)
    return 0


def _cmd_demo(store: Store, args: argparse.Namespace, out: TextIO) -> int:
    session_id = args.session
    if session_id is not None:
        validate_session_id(session_id)
        if store.get_session(session_id) is None:
            # The unique session it starts, as `show` takes it; a start no session has: a new session of that id.
            found = [info.session_id for info in store.list_sessions() if info.session_id.startswith(session_id)]
            if len(found) > 1:
                find_session(store, session_id)  # raises, listing them
            if found:
                session_id = found[0]
    return run_demo(store, session_id, out, args.frameworks)


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


def _whole(text: str, least: int, what: str) -> int:
    # argparse names the type function in its own message ("invalid _count value"): say it here instead.
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number: give {what}") from None
    if value < least:
        raise argparse.ArgumentTypeError(f"must be {what}, not {value}")
    return value


def _count(text: str) -> int:
    """A ``--limit``: 0 or more."""
    return _whole(text, 0, "0 (no limit) or more")


def _positive(text: str) -> int:
    return _whole(text, 1, "1 or more")


def _port(text: str) -> int:
    value = _whole(text, 0, "a port number from 0 (any free port) to 65535")
    if value > 65535:
        raise argparse.ArgumentTypeError(f"must be a port number from 0 (any free port) to 65535, not {value}")
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
    common.add_argument(
        "-v",
        "--verbose",
        action="count",
        default=argparse.SUPPRESS,
        help="log openprogram's debug messages (-vv: every library's too)",
    )
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
    p.add_argument("session_id", metavar="SESSION_ID", help="the session to draw (its id, or a unique start of it)")
    p.add_argument(
        "--max-lines",
        type=_positive,
        default=MAX_LINES,
        help=f"draw at most this many lines, the newest turns first (default: {MAX_LINES})",
    )
    p.add_argument("--all", action="store_true", help="fold nothing and draw every line (no --max-lines limit)")
    formats = p.add_mutually_exclusive_group()
    formats.add_argument(
        "--json",
        action="store_true",
        help="print the session (as `sessions --json` lists it) and every call with its captures, streamed, "
        "as one JSON document",
    )
    formats.add_argument(
        "--jsonl",
        action="store_true",
        help="print JSON Lines: the session first (as `sessions --jsonl` prints it), then one call a line",
    )
    p = sub.add_parser("demo", parents=[common], help="run the offline demo agents and record them")
    p.add_argument("--session", metavar="SESSION_ID", help="continue this session (append a turn)")
    add_demo_arguments(p)
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
    p.add_argument(
        "session_ids", nargs="*", metavar="SESSION_ID", help="the sessions to send (ids, or unique starts of them)"
    )
    p.add_argument("--all", action="store_true", help="every session in the store")
    p.add_argument("--since", help="sessions updated since a duration ago (30m, 2h, 7d) or a date/time")
    p.add_argument("--endpoint", help="OTLP/HTTP traces URL (a bare http://host:port gets /v1/traces)")
    p = sub.add_parser(
        "undo", parents=[common], help="compensate what a session's (or a turn's) tools did, newest first"
    )
    p.add_argument(
        "session_id", metavar="SESSION_ID", help="the session whose effects to undo (its id, or a unique start of it)"
    )
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
    p.add_argument(
        "-y", "--yes", action="store_true", help="do not ask for confirmation (needed when stdin is not a terminal)"
    )
    p = sub.add_parser("ui", parents=[common], help="browse the sessions in a local, read-only web viewer")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default: 127.0.0.1, this machine only)")
    p.add_argument("--port", type=_port, default=8765, help="port to listen on (default: 8765; 0: any free port)")
    p.add_argument("--no-browser", action="store_true", help="print the viewer's URL without opening a browser")
    return parser


def _typed_ids(args: argparse.Namespace) -> list[str]:
    """The session ids (or starts of them) typed as the command's positional arguments."""
    typed: str | list[str] | None = getattr(args, "session_id", None) or getattr(args, "session_ids", None)
    return [typed] if isinstance(typed, str) else list(typed or ())


def _missing_store_hint(store_url: str | None) -> str:
    if store_url is None and not os.environ.get("OPENPROGRAM_STORE"):
        return "nothing has been recorded in the default store yet: `openprogram demo` records a few sessions"
    return (
        "check the path or URL given: sqlite:////abs.db, sqlite:/abs.db and a bare /abs.db are absolute, "
        "sqlite:///rel.db and sqlite:rel.db relative"
    )


def _note_a_missing_store(store_url: str | None) -> None:
    try:
        open_store(store_url, existing=True)
    except NoSuchStore as exc:
        sys.stderr.write(
            f"openprogram: {printable(str(exc))} yet; the viewer shows its sessions once something records there\n"
            f"  ({_missing_store_hint(store_url)})\n"
        )


def main(argv: Sequence[str] | None = None, out: TextIO | None = None) -> int:
    """Run the CLI; returns the exit status."""
    args = build_parser().parse_args(argv)
    out = out or sys.stdout
    store_url: str | None = getattr(args, "store", None)
    verbosity: int = getattr(args, "verbose", 0)
    logging.basicConfig(
        level=logging.DEBUG if verbosity > 1 else logging.WARNING, format="%(levelname)s %(name)s: %(message)s"
    )
    if verbosity:  # openprogram's own messages; every library's only with -vv
        logging.getLogger("openprogram").setLevel(logging.DEBUG)
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
        # A typed id that no session id could be is a usage error, whatever the store holds.
        for typed in _typed_ids(args):
            validate_session_id(typed)
        # An unusable store is an error before the command runs; so is a missing one for a command that reads.
        store = open_store(store_url, strict=True, existing=args.command in _READING)
        if args.command == "ui":
            _note_a_missing_store(store_url)
        return commands[args.command](store, args, out)
    except NoSuchStore as exc:
        sys.stderr.write(f"openprogram: {printable(str(exc))}\n  ({_missing_store_hint(store_url)})\n")
        return 1
    except SessionNotFound as exc:
        sys.stderr.write(f"openprogram: {exc}\n")
        return 1
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

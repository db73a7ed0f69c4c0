"""Spill files: records written aside while a store was unavailable, and loading them back.

A spill file holds whole JSON lines only: a write cut short (a full disk) is taken back, and
when it cannot be, the next write starts on a line of its own. Loading applies the writer's
rules to every line (ids, bounds, finite times, valid JSON, known statuses, no call its own
ancestor): a line that breaks one is left out and reported; every other line is written.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, BinaryIO

from .._runtime import InvalidSessionId, validate_session_id
from ..stores import AliasRow, CallRow, MessageRow, SessionRow, Store, StoreError

__all__ = ["MAX_LINE", "SpillImport", "append_spill", "load_spill"]

_BATCH = 5000
_CHUNK = 1 << 20  # bytes encoded and written at a time

#: The longest line a spill file may hold (a call with three captures at their largest, escaped).
MAX_LINE = 16 << 20
# The writer's bounds, and generous ones where a capture's size depends on the agent's
# set_limits() or on a model call's whole prompt.
_MAX_TEXT = 1024 + len("...[truncated]")  # a name, framework or owner, as the writer cuts it
_MAX_ERROR = 8192 + len("...[truncated]")
_MAX_CAPTURE = 4 << 20  # characters of JSON in one column
_MAX_DEPTH = 100  # nesting of a capture: the writer's is 8 deep, readers recurse on it
_MAX_TIME = 32503680000.0  # the year 3000: a time past it is no clock's
_INT64 = 1 << 63  # the writer turns a larger number in attributes into text
_STATUSES = frozenset({"running", "ok", "error", "interrupted"})
_REASONS = 5  # rejected lines described one by one


class _Rejected(ValueError):
    """Why a line is not a record the writer could have written."""


@dataclasses.dataclass
class SpillImport:
    """What loading a spill file did: records written, lines rejected, and why the first few were."""

    written: int = 0
    rejected: int = 0
    reasons: list[str] = dataclasses.field(default_factory=list)

    def reject(self, where: str, why: str) -> None:
        self.rejected += 1
        if len(self.reasons) < _REASONS:
            self.reasons.append(f"{where}: not a spill record ({why})")


# --- appending -------------------------------------------------------------------------


def append_spill(
    path: str | os.PathLike[str],
    store_url: str,
    sessions: Iterable[SessionRow],
    calls: Iterable[CallRow],
    aliases: Iterable[AliasRow],
    messages: Iterable[MessageRow],
) -> None:
    """Append rows to a spill file (created ``0600``) and sync it; raises :class:`OSError` with the file as it was.

    ``store_url`` names the store they were meant for (no password in it).
    """
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        size = os.fstat(fd).st_size
        fresh = b""
        if size:  # an earlier write torn where it could not be taken back: start on a line of our own
            os.lseek(fd, size - 1, os.SEEK_SET)
            fresh = b"" if os.read(fd, 1) == b"\n" else b"\n"
        try:
            for chunk in _encoded(fresh, store_url, sessions, calls, aliases, messages):
                view = memoryview(chunk)
                while view:
                    view = view[os.write(fd, view) :]
            os.fsync(fd)
        except OSError:
            try:  # a full disk: the file as it was, not a torn line
                os.ftruncate(fd, size)
            except OSError:
                pass
            raise
    finally:
        os.close(fd)


def _encoded(
    head: bytes,
    store_url: str,
    sessions: Iterable[SessionRow],
    calls: Iterable[CallRow],
    aliases: Iterable[AliasRow],
    messages: Iterable[MessageRow],
) -> Iterator[bytes]:
    lines = [json.dumps({"store": store_url})]
    size = 0
    for key, rows in (("session", sessions), ("call", calls), ("alias", aliases), ("message", messages)):
        for row in rows:
            line = json.dumps({key: list(row)})
            lines.append(line)
            size += len(line)
            if size >= _CHUNK:
                yield head + ("\n".join(lines) + "\n").encode()
                head, lines, size = b"", [], 0
    if lines:
        yield head + ("\n".join(lines) + "\n").encode()


# --- the writer's rules ---------------------------------------------------------------


def _identifier(value: Any) -> None:
    try:
        validate_session_id(value, what="id")
    except InvalidSessionId as exc:
        raise _Rejected(str(exc) if isinstance(value, str) else f"an id is {type(value).__name__}") from None


def _text(limit: int) -> Callable[[Any], None]:
    def check(value: Any) -> None:
        if not isinstance(value, str):
            raise _Rejected(f"text is {type(value).__name__}")
        if len(value) > limit:
            raise _Rejected(f"text of {len(value)} characters; the writer cuts it at {limit}")
        if "\x00" in value:
            raise _Rejected("a NUL in text (the writer escapes it)")
        if not value.isascii():
            try:
                value.encode("utf-8")
            except UnicodeEncodeError:
                raise _Rejected("a lone surrogate in text (the writer escapes it)") from None

    return check


def _kind(value: Any) -> None:
    if not isinstance(value, str) or not value or len(value) > 128 or not value.isprintable():
        raise _Rejected("a kind is 1-128 printable characters")


def _status(value: Any) -> None:
    if not isinstance(value, str) or value not in _STATUSES:
        raise _Rejected(f"status is not one of {', '.join(sorted(_STATUSES))}")


def _time(value: Any) -> None:
    if type(value) not in (int, float):
        raise _Rejected(f"a time is {type(value).__name__}")
    if not 0 <= value < _MAX_TIME:  # NaN fails this too
        raise _Rejected("a time that is no clock's (not finite, negative, or past the year 3000)")


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError("a number out of range")
    return value


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _decoded(value: Any) -> Any:
    if not isinstance(value, str):
        raise _Rejected(f"a capture is {type(value).__name__}, not JSON text")
    if len(value) > _MAX_CAPTURE:
        raise _Rejected(f"a capture of {len(value)} characters (at most {_MAX_CAPTURE})")
    if not value.isascii():  # the writer's JSON is ASCII: a raw lone surrogate would fail the store's whole batch
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            raise _Rejected("a lone surrogate in a capture (the writer escapes it)") from None
    try:
        decoded = json.loads(value, parse_float=_finite, parse_constant=_no_constant)
    except (ValueError, RecursionError) as exc:
        raise _Rejected(f"a capture is not valid JSON: {str(exc)[:80]}") from None
    todo: list[tuple[Any, int]] = [(decoded, 1)]
    while todo:  # no recursion: a hostile capture may be nested deeper than Python recurses
        item, depth = todo.pop()
        if depth > _MAX_DEPTH:
            raise _Rejected(f"a capture nested more than {_MAX_DEPTH} deep")
        if isinstance(item, dict):
            todo.extend((inner, depth + 1) for inner in item.values())
        elif isinstance(item, list):
            todo.extend((inner, depth + 1) for inner in item)
    return decoded


def _capture(value: Any) -> None:
    _decoded(value)


def _attributes(value: Any) -> None:
    decoded = _decoded(value)
    if not isinstance(decoded, dict):
        raise _Rejected("attributes are not a JSON object")
    todo = list(decoded.values())
    while todo:
        item = todo.pop()
        if type(item) is int and not -_INT64 <= item < _INT64:
            raise _Rejected("a number in attributes past 64 bits (the writer keeps it as text)")
        if isinstance(item, dict):
            todo.extend(item.values())
        elif isinstance(item, list):
            todo.extend(item)


def _or_null(check: Callable[[Any], None]) -> Callable[[Any], None]:
    def checked(value: Any) -> None:
        if value is not None:
            check(value)

    return checked


_Rules = Sequence[tuple[str, Callable[[Any], None]]]

_SESSION: _Rules = (
    ("session id", _identifier),
    ("agent id", _identifier),
    ("created_at", _time),
    ("updated_at", _time),
)
_CALL: _Rules = (
    ("call id", _identifier),
    ("session id", _identifier),
    ("turn id", _identifier),
    ("parent id", _or_null(_identifier)),
    ("kind", _kind),
    ("name", _text(_MAX_TEXT)),
    ("framework", _or_null(_text(_MAX_TEXT))),
    ("status", _status),
    ("inputs", _or_null(_capture)),
    ("output", _or_null(_capture)),
    ("error", _or_null(_text(_MAX_ERROR))),
    ("attributes", _or_null(_attributes)),
    ("started_at", _time),
    ("ended_at", _or_null(_time)),
    ("owner", _text(_MAX_TEXT)),
)
_ALIAS: _Rules = (
    ("namespace", _text(_MAX_TEXT)),
    ("key", _text(_MAX_ERROR)),
    ("session id", _identifier),
    ("bound_at", _time),
)
_MESSAGE: _Rules = (("session id", _identifier), ("message id", _identifier), ("body", _capture))
_KINDS: dict[str, _Rules] = {"session": _SESSION, "call": _CALL, "alias": _ALIAS, "message": _MESSAGE}


def _row(line: bytes) -> tuple[str, tuple[Any, ...]] | None:
    """The kind and row of one line (None for the header naming the store); :class:`_Rejected` if it breaks a rule."""
    try:
        entry = json.loads(line.decode("utf-8"), parse_float=_finite, parse_constant=_no_constant)
    except UnicodeDecodeError:
        raise _Rejected("not UTF-8") from None
    except (ValueError, RecursionError) as exc:
        raise _Rejected(f"not valid JSON: {str(exc)[:80]}") from None
    if not isinstance(entry, dict) or len(entry) != 1:
        raise _Rejected("not an object of one record")
    ((key, row),) = entry.items()
    if key == "store":
        return None
    rules = _KINDS.get(key)
    if rules is None:
        raise _Rejected(f"unknown record {key[:40]!r}")
    if not isinstance(row, list) or len(row) != len(rules):
        raise _Rejected(f"expected {len(rules)} fields")
    for column, (value, (name, check)) in enumerate(zip(row, rules, strict=True), 1):
        try:
            check(value)
        except _Rejected as exc:
            raise _Rejected(f"field {column}, {name}: {exc}") from None
    if key == "call" and row[3] == row[0]:
        raise _Rejected("a call that is its own parent")
    return key, tuple(row)


# --- loading --------------------------------------------------------------------------


def _lines(fh: BinaryIO) -> Iterator[tuple[int, bytes | None]]:
    """(number, line) for each non-blank line; None for one longer than :data:`MAX_LINE` (never held whole)."""
    number = 0
    while True:
        line = fh.readline(MAX_LINE + 1)
        if not line:
            return
        number += 1
        if len(line) > MAX_LINE:
            while line and not line.endswith(b"\n"):  # the rest of it, a bounded piece at a time
                line = fh.readline(MAX_LINE)
            yield number, None
        elif line.strip():
            yield number, line


def _valid_rows(path: str | os.PathLike[str], report: SpillImport | None) -> Iterator[tuple[int, str, tuple[Any, ...]]]:
    """(line number, kind, row) of every line that keeps the writer's rules; the others are added to ``report``."""
    try:
        fh = open(path, "rb")  # noqa: SIM115 - closed below
    except OSError as exc:
        raise StoreError(f"cannot read spill file {path}: {exc}") from exc
    with fh:
        for number, line in _lines(fh):
            try:
                if line is None:
                    raise _Rejected(f"a line longer than {MAX_LINE} bytes")
                found = _row(line)
            except _Rejected as exc:
                if report is not None:
                    report.reject(f"{path}:{number}", str(exc))
                continue
            if found is not None:
                yield number, *found


def _looping_calls(path: str | os.PathLike[str]) -> dict[tuple[str, str], str]:
    """The calls of the file whose parents lead back to themselves (session, call id), and why; and a row of a call
    naming another parent than its first row did."""
    parent_of: dict[tuple[str, str], str | None] = {}
    bad: dict[tuple[str, str], str] = {}
    for _, kind, row in _valid_rows(path, None):
        if kind != "call":
            continue
        call = (row[1], row[0])
        if parent_of.setdefault(call, row[3]) != row[3]:
            bad[call] = "rows of one call name different parents"
    done: set[tuple[str, str]] = set()
    for start in parent_of:
        path_taken: list[tuple[str, str]] = []
        on_path: set[tuple[str, str]] = set()
        key: tuple[str, str] | None = start
        while key is not None and key in parent_of and key not in done:
            if key in on_path:  # a loop: every call from its first appearance on is in it
                for looped in path_taken[path_taken.index(key) :]:
                    bad.setdefault(looped, "its parents lead back to it (a loop)")
                break
            path_taken.append(key)
            on_path.add(key)
            parent = parent_of[key]
            key = None if parent is None else (key[0], parent)
        done.update(path_taken)
    return bad


def load_spill(path: str | os.PathLike[str], store: Store) -> SpillImport:
    """Write every record of a spill file that keeps the writer's rules into ``store``; the others are reported.

    Loading is idempotent: a record already in the store is left as it is
    (a final record still replaces a ``running`` one).
    """
    report = SpillImport()
    looping = _looping_calls(path)
    sessions: list[SessionRow] = []
    calls: list[CallRow] = []
    aliases: list[AliasRow] = []
    messages: list[MessageRow] = []
    for number, kind, row in _valid_rows(path, report):
        if kind == "session":
            sessions.append(row)
        elif kind == "call":
            why = looping.get((row[1], row[0]))
            if why is not None:
                report.reject(f"{path}:{number}", why)
                continue
            calls.append(row)
        elif kind == "alias":
            aliases.append(row)
        else:
            if not store.keeps_messages:
                raise StoreError(
                    f"{path}:{number}: the spill file holds model calls' messages, which {store.url} cannot keep"
                )
            messages.append(row)
        if len(calls) + len(messages) >= _BATCH:
            report.written += _write(store, sessions, calls, aliases, messages)
            sessions, calls, aliases, messages = [], [], [], []
    if sessions or calls or aliases or messages:
        report.written += _write(store, sessions, calls, aliases, messages)
    return report


def _write(
    store: Store,
    sessions: list[SessionRow],
    calls: list[CallRow],
    aliases: list[AliasRow],
    messages: list[MessageRow],
) -> int:
    if messages:
        store.write(sessions, calls, aliases, messages)
    else:
        store.write(sessions, calls, aliases)
    return len(sessions) + len(calls) + len(aliases) + len(messages)

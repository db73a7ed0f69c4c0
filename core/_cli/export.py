"""``openprogram export otlp``: recorded sessions sent as spans, one session after another, with a progress line."""

from __future__ import annotations

import datetime as _dt
import re
import time
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any, TextIO

from .._capture import content_captured, dumps
from .._otlp import MAX_BATCH, Sender, require_otlp, safe_endpoint
from .._runtime import DidNotEnable
from ..stores import CallRecord, CallRow, SessionInfo, Store, describe_store
from .session_ids import find_session

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import ReadableSpan

__all__ = ["export_command", "parse_since", "row_of"]


def row_of(call: CallRecord) -> CallRow:
    """A stored row (JSON text captures) for a call read back as a record."""
    return (
        call.call_id,
        call.session_id,
        call.turn_id,
        call.parent_id,
        call.kind,
        call.name,
        call.framework,
        call.status,
        _json(call.inputs),
        _json(call.output),
        call.error,
        _json(call.attributes),
        call.started_at,
        call.ended_at,
        "",
    )


def _json(value: Any) -> str | None:
    return None if value is None else dumps(value)


_DURATION = re.compile(r"(\d+(?:\.\d+)?)\s*([smhdw])")
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


def parse_since(text: str, now: float | None = None) -> float:
    """``30m``, ``2h``, ``7d`` (ago) or an ISO date/time (``2026-12-01``, ``2026-12-01T09:30``, local time
    unless it names a zone) as a Unix time."""
    found = _DURATION.fullmatch(text.strip())
    if found is not None:
        return (time.time() if now is None else now) - float(found.group(1)) * _UNITS[found.group(2)]
    try:
        return _dt.datetime.fromisoformat(text.strip()).timestamp()
    except ValueError:
        raise ValueError(
            f"--since {text!r}: give a duration (30m, 2h, 7d) or a date/time (2026-12-01, 2026-12-01T09:30)"
        ) from None


def _chunks(spans: list[ReadableSpan]) -> Iterator[list[ReadableSpan]]:
    for start in range(0, len(spans), MAX_BATCH):
        yield spans[start : start + MAX_BATCH]


class _Progress:
    """A progress line on stderr when several sessions are exported: rewritten in place on a terminal,
    else a line every tenth of the way."""

    def __init__(self, total: int, err: TextIO) -> None:
        self.total, self.err = total, err
        self.shown = total > 1
        self.tty = self.shown and err.isatty()
        self.every = max(1, total // 10)

    def update(self, done: int, spans: int) -> None:
        if not self.shown:
            return
        line = f"exporting: {done}/{self.total} sessions, {spans} spans"
        if self.tty:
            self.err.write(f"\r{line}")
            self.err.flush()
        elif done % self.every == 0 or done == self.total:
            self.err.write(line + "\n")

    def end(self) -> None:
        if self.tty:
            self.err.write("\n")


def _selected(store: Store, session_ids: Sequence[str], since: float | None) -> list[SessionInfo]:
    """The named sessions (whole ids or unique prefixes: see :func:`find_session`), else all (oldest first),
    updated since ``since``."""
    if session_ids:
        chosen = [find_session(store, session_id) for session_id in session_ids]
    else:
        chosen = sorted(store.list_sessions(), key=lambda s: s.updated_at)
    return [s for s in chosen if since is None or s.updated_at >= since]


def export_command(
    store: Store,
    session_ids: Sequence[str],
    *,
    all_sessions: bool,
    since: str | None,
    endpoint: str | None,
    out: TextIO,
    err: TextIO,
) -> int:
    """``openprogram export otlp``: send sessions as spans; the exit status (1 when the backend did not take them)."""
    if not (session_ids or all_sessions or since):
        err.write("openprogram: name the sessions to export, or use --all or --since\n")
        return 2
    try:
        cutoff = None if since is None else parse_since(since)
    except ValueError as exc:
        err.write(f"openprogram: {exc}\n")
        return 2
    try:
        require_otlp("openprogram export otlp")
    except DidNotEnable as exc:
        err.write(f"openprogram: {exc}\n")
        return 1
    from .._otlp import default_resource, spans_of_calls

    sessions = _selected(store, session_ids, cutoff)
    if not sessions:
        out.write(f"no sessions to export in {describe_store(store)}\n")
        return 0
    sender = Sender(endpoint)
    refused = sender.unreachable()
    if refused is not None:  # at once: the exporter would retry a refused connection for its whole timeout
        sender.close()
        err.write(f"openprogram: {refused}; 0 of {len(sessions)} sessions were sent\n")
        return 1
    resource, content = default_resource(), content_captured()
    progress = _Progress(len(sessions), err)
    sent = running = 0
    try:
        for done, info in enumerate(sessions, 1):
            calls = list(store.iter_calls(info.session_id))
            running += sum(1 for call in calls if call.status == "running")
            spans = spans_of_calls(calls, resource, content=content)
            for chunk in _chunks(spans):
                failure = sender.send(chunk)
                if failure is not None:
                    progress.end()
                    err.write(
                        f"openprogram: {failure}; {done - 1} of {len(sessions)} sessions were sent "
                        "(sending again is safe: the spans keep their ids)\n"
                    )
                    return 1
            sent += len(spans)
            progress.update(done, sent)
    finally:
        sender.close()
    progress.end()
    out.write(
        f"exported {len(sessions)} session{'s' if len(sessions) != 1 else ''} ({sent} spans) "
        f"to {safe_endpoint(sender.endpoint)}\n"
    )
    if running:
        out.write(f"{running} calls still running were left out; export again once they end\n")
    return 0

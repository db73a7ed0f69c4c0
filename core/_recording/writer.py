"""The background writer: takes recorded calls off the hot path and into stores.

The hot path only appends a record's items to a list (and keeps running calls in a
dict). One daemon thread wakes every :data:`INTERVAL` seconds, encodes what
arrived, and writes it per store in one transaction; a store that can commit
without waiting for the disk (``write_unsynced``) does so in cycles nobody waits
on. ``flush()`` puts a marker in the same list and waits until everything before
it is durable (or, if a store is failing, safely buffered). A failing store never raises into user
code: its rows wait in a bounded buffer and are retried with back-off; past
:data:`MAX_PENDING_ROWS` they are appended to a spill file that
``openprogram import`` loads later, and when the spill file cannot be written either the
oldest are dropped (counted, and said when the store is back). One warning per outage names
the store, one line says when it is back; the outage is shared with the agent's own paths
into the store (see :mod:`.outage`).
"""

from __future__ import annotations

import asyncio
import atexit
import logging
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .._capture import (
    ATOMIC_TYPES,
    PRECAPTURED,
    arguments_json,
    capture_json,
    content_captured,
    dumps,
    mapping_json,
    scalar_json,
)
from .._runtime import as_text, run_blocking
from .._runtime import ids as _ids
from ..stores import (
    CALL_COLUMNS,
    AliasRow,
    CallRow,
    CallRows,
    MessageRow,
    SessionRow,
    Store,
    on_read,
    openprogram_home,
    safe_url,
)
from .outage import CALLER_WAIT, in_outage, note_outage, note_recovery
from .record import (
    CALL_ID,
    ENDED_AT,
    ERROR,
    FRAMEWORK,
    KIND,
    NAME,
    PARENT,
    RECORD_WIDTH,
    SESSION,
    START_WIDTH,
    STARTED_AT,
    STATUS,
    inflight,
    queue,
)
from .spill import append_spill
from .stack import PendingTraceback
from .texts import LONG, SessionTexts

__all__ = [
    "INTERVAL",
    "MAX_PENDING_ROWS",
    "QUEUE_HIGH_WATER",
    "BATCH_ROWS",
    "RECORD_WIDTH",
    "enqueue",
    "enqueue_messages",
    "ensure_started",
    "flush",
    "flush_async",
    "flush_before_exit",
    "flush_before_exit_async",
    "flush_store",
    "inflight",
    "on_calls_written",
    "on_exit",
    "queue",
    "spill_directory",
]

logger = logging.getLogger("openprogram")

INTERVAL = 0.05
"""Seconds between writer cycles when nobody is waiting on a flush."""


def _env_rows(name: str, default: int) -> int:
    text = os.environ.get(name, "").strip()
    if not text:
        return default
    try:
        return max(int(text.replace("_", "")), 100)
    except ValueError:
        logger.warning("openprogram: %s=%r is not a whole number; using %d", name, text, default)
        return default


MAX_PENDING_ROWS = _env_rows("OPENPROGRAM_MAX_PENDING_ROWS", 50_000)
"""Rows kept in memory per failing store before they are spilled to a file (about 20 MB at the
default 50,000; ``OPENPROGRAM_MAX_PENDING_ROWS`` sets it, at least 100)."""
QUEUE_HIGH_WATER = 50_000
"""Recorded calls not yet encoded past which recording threads wait for the writer (~15 MB)."""
BATCH_ROWS = 5_000
"""Rows encoded and written per transaction; a cycle writes as many batches as are queued."""
HEARTBEAT_EVERY = 10.0
_RETRY_MAX = 30.0

# The queue (openprogram._recording.record.queue) holds each finished call's record; the writer's
# own entries are a tag object, the payload and padding, RECORD_WIDTH items as well.


class _Tag:
    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"<{self.name}>"


# A writer's entry: its tag (where a call's record has its id), its payload, padding.
_SESSION, _ALIAS, _MARKER, _MESSAGES = _Tag("session"), _Tag("alias"), _Tag("marker"), _Tag("messages")
_PAYLOAD = 1
_PADDING = (None,) * (RECORD_WIDTH - 2)


class _Marker:
    __slots__ = ("callbacks", "done", "ok")

    def __init__(self) -> None:
        self.done = threading.Event()
        self.ok = True
        self.callbacks: list[Callable[[bool], None]] = []


class _StoreState:
    """What the writer knows about one store: its outage and its backlog."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.unsynced = False  # committed with write_unsynced since the last write (see Store.syncs_later)
        self.pending_sessions: list[SessionRow] = []
        self.pending_calls = CallRows()  # flat: no tuple per row for the GC to track
        self.pending_aliases: list[AliasRow] = []
        self.pending_messages: list[MessageRow] = []
        # Long texts stored once per session, for a store that keeps message rows (see texts).
        self.texts = SessionTexts() if store.keeps_messages else None
        self.failing = False
        self.retry_at = 0.0
        self.backoff = 1.0
        self.running: set[str] = set()  # call ids written as running, not yet final
        self.last_beat = 0.0
        self.spilled = 0
        # This outage's: whether it and a failed spill were warned of, rows spilled and dropped, when to
        # try the spill again.
        self.warned = False
        self.spill_failed = False
        self.outage_spilled = 0
        self.dropped = 0
        self.spill_retry_at = 0.0


_states: dict[int, _StoreState] = {}
_wake = threading.Event()
_cycle_lock = threading.Lock()
_thread: threading.Thread | None = None
_thread_lock = threading.Lock()
_stopping = False
# The store the writer is writing to now and since when (time.monotonic()): a store that keeps the
# writer longer than the agent would wait for it is in an outage (see flush_before_exit).
_busy: tuple[Store, float] | None = None


def spill_directory() -> Path:
    """Where rows that could not be stored are appended (``$OPENPROGRAM_HOME/spill``)."""
    return openprogram_home() / "spill"


def ensure_started() -> None:
    """Start the writer thread if it is not running (cheap when it is)."""
    global _thread
    if _thread is not None and _thread.is_alive():
        return
    with _thread_lock:
        if _thread is None or not _thread.is_alive():
            _thread = threading.Thread(target=_run, name="openprogram-writer", daemon=True)
            _thread.start()


def enqueue(item: Any) -> None:
    """Queue, from outside the hot path, a session row (a list ``[id, agent, created, updated, store]``),
    an alias (a dict ``{"alias": AliasRow, "store": store}``) or an end record (a tuple)."""
    if type(item) is tuple:
        if len(item) != RECORD_WIDTH:  # a short entry would shift every later one
            raise ValueError(f"an end record has {RECORD_WIDTH} fields, not {len(item)}")
        queue.extend(item)
    elif type(item) is list:
        queue.extend((_SESSION, item, *_PADDING))
    else:
        queue.extend((_ALIAS, item, *_PADDING))


def enqueue_messages(store: Store, rows: list[MessageRow]) -> None:
    """Queue the message rows a model call's prompt refers to (queued before the call's own record)."""
    queue.extend((_MESSAGES, (store, rows), *_PADDING))


def _enqueue_marker(marker: _Marker) -> None:
    queue.extend((_MARKER, marker, *_PADDING))


def _run() -> None:
    while not _stopping:
        _wake.wait(INTERVAL)
        _wake.clear()
        try:
            _cycle(synced=False)
        except Exception:  # the writer must survive its own bugs
            logger.exception("openprogram: writer cycle failed; will retry")


def _throttle() -> None:
    """Back-pressure: when the writer falls far behind, recording threads wait for it.

    Not while the writer is stuck in a store that does not answer, up to four times the high
    water: waiting then would hand the store's outage to the agent's thread.
    """
    high_water = QUEUE_HIGH_WATER * RECORD_WIDTH
    if len(queue) <= high_water or threading.current_thread() is _thread:
        return
    if len(queue) <= 4 * high_water and _stuck_store() is not None:
        return
    _wake.set()
    deadline = time.monotonic() + 5.0
    while len(queue) > QUEUE_HIGH_WATER * RECORD_WIDTH // 2 and time.monotonic() < deadline:
        time.sleep(0.001)


_ids.set_pressure_check(_throttle)


# --- encoding ---------------------------------------------------------------------


_MAX_NAME = 1024


def _text(value: Any, limit: int = _MAX_NAME) -> Any:
    """A text column as every store can take it: valid UTF-8 (lone surrogates escaped), no NUL, bounded.

    A lone surrogate in one name or message would make the whole batch unwritable.
    """
    if value is None:
        return None
    if type(value) is not str:
        value = str(value)
    if len(value) > limit:
        value = value[:limit] + "...[truncated]"
    if not value.isascii():
        value = value.encode("utf-8", "backslashreplace").decode("utf-8")
    if "\x00" in value:  # PostgreSQL's text cannot hold NUL: one such error made every later write fail
        value = value.replace("\x00", "\\x00")
    return value


_RUNNING = ("running", None, None, None)  # completes a start record (from inflight) as a running row
assert START_WIDTH + len(_RUNNING) == RECORD_WIDTH


# Whether inputs and outputs are written, read once per batch (see _capture.content_captured).
_content = [True]


def _encode(rec: tuple[Any, ...], owner: str) -> CallRow:
    # Unpacked in the order of _record.FIELDS, under the same names.
    (
        call_id,
        session,
        parent,
        kind,
        name,
        framework,
        names,
        args,
        kwargs,
        attributes,
        started_at,
        status,
        output,
        error,
        ended_at,
    ) = rec
    if type(call_id) is int:  # the compiled tool wrapper's: spelled out here, off the caller's thread
        call_id = as_text(call_id)
    if type(parent) is int:
        parent = as_text(parent)
    if not _content[0]:  # content capture off: no inputs or outputs are written, for any kind
        inputs = output = None
    elif names is None:
        inputs = None if args is None else capture_json(args)
    elif names is PRECAPTURED:  # captured on the hot path: JSON text already
        inputs = args if type(args) is str else dumps(args)
    else:  # the recorder only keeps arguments by reference when all are scalars
        inputs = arguments_json(names, args, kwargs)
    # ids, kinds and frameworks are ours; names and errors may hold any text.
    if type(name) is not str or name not in _plain_names:
        name = _stored_name(name)
    # Outputs arrive as scalars or as JSON text captured on the hot path (in a 1-tuple).
    out_type = type(output)
    if out_type is tuple:
        output = output[0]
    elif output is None:
        pass
    elif out_type in ATOMIC_TYPES:
        output = scalar_json(output)
    else:
        output = capture_json(output)
    if error is not None:
        error = _text(error, 8192)
    if attributes is not None and type(attributes) is not str:
        # a failed call's: its traceback is laid out here, off the caller's thread (see .stack)
        attributes = attributes.json() if type(attributes) is PendingTraceback else mapping_json(attributes)
    # the row layout (CALL_COLUMNS), kept as a table
    return (call_id, session.session_id, session.turn_id, parent, kind, name, framework, status, inputs, output,
            error, attributes, started_at, ended_at, owner)  # fmt: skip


_plain_names: set[str] = set()  # names seen that a store takes as they are: most calls repeat a name
_MAX_PLAIN_NAMES = 4096


def _stored_name(name: Any) -> Any:
    """A call's name as a store takes it (see :func:`_text`); a plain one is remembered."""
    if type(name) is str and len(name) <= _MAX_NAME and name.isascii() and "\x00" not in name:
        if len(_plain_names) < _MAX_PLAIN_NAMES:
            _plain_names.add(name)
        return name
    return _text(name)


def _encode_safely(rec: tuple[Any, ...], owner: str) -> CallRow:
    """Encode a record; on an encoding bug keep the call with its captures replaced, never drop it."""
    try:
        return _encode(rec, owner)
    except Exception as exc:
        logger.exception("openprogram: could not encode call %s; recording it without captures", rec[CALL_ID])
        note = dumps(f"<capture failed: {type(exc).__name__}>") if _content[0] else None
        final = rec[STATUS] != "running"
        session = rec[SESSION]
        return (
            as_text(rec[CALL_ID]),
            session.session_id,
            session.turn_id,
            _text(as_text(rec[PARENT])),
            _text(rec[KIND]),
            _text(rec[NAME]),
            _text(rec[FRAMEWORK]),
            rec[STATUS] if final else "running",
            note,
            note if final else None,
            _text(rec[ERROR], 8192) if final else None,
            None,
            rec[STARTED_AT],
            rec[ENDED_AT] if final else None,
            owner,
        )


def _with_shared_texts(state: _StoreState, row: CallRow) -> CallRow:
    """The row with the long texts of its inputs and output stored once (their rows pending in ``state``)."""
    texts = state.texts
    if texts is None:
        return row
    session_id, pending = row[1], state.pending_messages
    inputs = row[8] if row[8] is None else texts.shared(session_id, row[8], pending)
    output = row[9] if row[9] is None else texts.shared(session_id, row[9], pending)
    return (*row[:8], inputs, output, *row[10:])


def _state(store: Store) -> _StoreState:
    state = _states.get(id(store))
    if state is None:
        state = _states[id(store)] = _StoreState(store)
    return state


def _cycle(synced: bool = True) -> None:
    """Write what is queued; durably if ``synced`` or a flush marker is among it."""
    with _cycle_lock:
        _cycle_locked(synced)


def _cycle_locked(synced: bool) -> None:
    # What is queued now is taken in batches of BATCH_ROWS, each written before the next is
    # encoded: taking it all at once held the whole queue twice (records, then encoded rows),
    # 150+ MB for a 1,000,000-call session.
    owner = _ids.process_owner()
    remaining = len(queue) // RECORD_WIDTH  # whole entries only: each was appended atomically
    while True:
        take = min(remaining, BATCH_ROWS)
        remaining -= take
        markers = _drain(take, owner)
        if remaining <= 0:
            _note_running(owner)
        all_ok = _write_all(owner, synced or bool(markers))
        for marker in markers:
            marker.ok = all_ok
            marker.done.set()
            for callback in marker.callbacks:
                try:
                    callback(all_ok)
                except Exception:
                    pass
        if remaining <= 0:
            return


def _drain(count: int, owner: str) -> list[_Marker]:
    """Encode ``count`` queued entries into their stores' pending rows; return the flush markers among them."""
    markers: list[_Marker] = []
    last_store: Store | None = None
    state: _StoreState | None = None
    # Taken and regrouped in C: a slice of whole entries, then RECORD_WIDTH-tuples.
    taken = count * RECORD_WIDTH
    items = iter(queue[:taken])
    del queue[:taken]
    append: Callable[[CallRow], object] | None = None
    running: set[str] = set()
    _content[0] = content_captured()
    encode = _encode
    for item in zip(*(items,) * RECORD_WIDTH, strict=True):
        head = item[CALL_ID]
        try:
            if type(head) is not _Tag:  # a call: its id is text or a counter value (see _ids.as_text)
                store = item[SESSION].store
                if store is not last_store or append is None:
                    state, last_store = _state(store), store
                    append, running = state.pending_calls.flat.extend, state.running  # _encode gives 15 fields
                try:
                    row = encode(item, owner)
                except Exception:
                    row = _encode_safely(item, owner)
                if (row[8] is not None and len(row[8]) >= LONG) or (row[9] is not None and len(row[9]) >= LONG):
                    row = _with_shared_texts(state, row)  # type: ignore[arg-type]
                append(row)
                if running:
                    running.discard(row[0])
            elif head is _SESSION:
                session_id, agent_id, created_at, updated_at, session_store = item[_PAYLOAD]
                _state(session_store).pending_sessions.append((session_id, agent_id, created_at, updated_at))
            elif head is _ALIAS:
                alias = item[_PAYLOAD]
                _state(alias["store"]).pending_aliases.append(alias["alias"])
            elif head is _MESSAGES:
                message_store, rows = item[_PAYLOAD]
                message_state = _state(message_store)
                texts = message_state.texts
                if texts is None:
                    message_state.pending_messages.extend(rows)
                else:
                    pending = message_state.pending_messages
                    for session_id, message_id, body in rows:
                        pending.append((session_id, message_id, texts.shared(session_id, body, pending)))
            elif head is _MARKER:
                markers.append(item[_PAYLOAD])
        except Exception:
            # A malformed entry (a bug of ours) is dropped alone: the rest of the batch, taken
            # off the queue already, would otherwise be lost with it, and flush() would hang.
            logger.exception("openprogram: dropped a malformed queued entry %.200r", item)
            append = None  # the store state may be half-switched: look it up again
    return markers


def _note_running(owner: str) -> None:
    """Calls still running are written as such, so a crash leaves them visible."""
    for rec in list(inflight.values()):
        call_id = as_text(rec[CALL_ID])
        state = _state(rec[SESSION].store)
        if call_id not in state.running:
            state.running.add(call_id)
            state.pending_calls.append(_with_shared_texts(state, _encode_safely(rec + _RUNNING, owner)))


def _write_all(owner: str, synced: bool) -> bool:
    now = time.time()
    all_ok = True
    for state in list(_states.values()):
        # A failing store is probed even with nothing pending (e.g. all spilled), else it
        # would count as failing, and flush() return False, until the next record.
        if not state.failing and in_outage(state.store):
            state.failing = True  # an outage the agent's thread met (see outage): probe the store now
        due = (
            state.pending_calls
            or state.pending_sessions
            or state.pending_aliases
            or state.pending_messages
            or state.failing
            or (state.running and now - state.last_beat > HEARTBEAT_EVERY)
            or (synced and state.unsynced)
        )
        if due and not _write(state, owner, now, synced):
            all_ok = False
    return all_ok


def _write(state: _StoreState, owner: str, now: float, synced: bool = True) -> bool:
    global _busy
    if state.failing and time.monotonic() < state.retry_at:
        _bound(state)
        return False
    store = state.store
    _busy = (store, time.monotonic())
    try:
        # Running rows are judged live while their owner's beat is under a minute old: a beat
        # every HEARTBEAT_EVERY / 2 seconds is enough (a beat with every batch was a second
        # transaction per batch).
        if state.failing or (state.running and now - state.last_beat > HEARTBEAT_EVERY / 2):
            store.heartbeat(owner, now)
            state.last_beat = now
        pending = (state.pending_sessions, state.pending_calls, state.pending_aliases)
        messages = state.pending_messages
        if synced and state.unsynced:  # a write() makes the earlier unsynced commits durable too
            store.write(*pending, messages) if messages else store.write(*pending)
            state.unsynced = False
        elif any(pending) or messages or state.failing:
            if synced or not store.syncs_later:
                store.write(*pending, messages) if messages else store.write(*pending)
            else:
                store.write_unsynced(*pending, messages) if messages else store.write_unsynced(*pending)
                state.unsynced = True
    except Exception as exc:
        _busy = None
        note_outage(store, _one_line(exc))
        if not state.warned:
            state.warned = True
            logger.warning(
                "openprogram: cannot write to store %s (%s); recording continues and %s will be "
                "retried (up to %d kept in memory, the rest spilled under %s)",
                store.url,
                _one_line(exc),
                "these records",
                MAX_PENDING_ROWS,
                spill_directory(),
            )
        state.failing = True
        state.retry_at = time.monotonic() + state.backoff
        state.backoff = min(state.backoff * 2, _RETRY_MAX)
        _bound(state)
        return False
    _busy = None
    if state.failing or in_outage(store):
        _say_recovered(state)
    written = state.pending_calls
    state.failing = False
    state.backoff = 1.0
    state.pending_calls = CallRows()
    state.pending_sessions = []
    state.pending_aliases = []
    state.pending_messages = []
    if (written or messages) and written_hooks:
        _hand_over(store, written, messages)
    return True


written_hooks: list[Callable[[Store, CallRows, list[MessageRow]], None]] = []
"""Given each batch of rows a store has written (see :func:`on_calls_written`)."""


def on_calls_written(hook: Callable[[Store, CallRows, list[MessageRow]], None]) -> None:
    """Hand ``hook(store, calls, messages)`` each batch of call rows, with the message rows written in the same
    transaction (what model calls' prompts refer to), once ``store`` has written it (spilled rows never are).

    It runs on the writer's thread, so it must only queue the batch. A batch holds final rows
    and the rows of calls still running (status ``running``), whose final rows come later; it
    may hold message rows only (written before the call that refers to them).
    """
    written_hooks.append(hook)


def _hand_over(store: Store, rows: CallRows, messages: list[MessageRow]) -> None:
    for hook in written_hooks:
        try:
            hook(store, rows, messages)
        except Exception:  # a hook's bug never fails the write
            logger.exception("openprogram: a hook on written calls failed")


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split())[:300] or type(exc).__name__


def _say_recovered(state: _StoreState) -> None:
    """The one line that ends an outage: how much of it was written, spilled and dropped."""
    note_recovery(state.store)
    spilled, dropped = state.outage_spilled, state.dropped
    if dropped:  # records were lost: a warning, not an info
        logger.warning(
            "openprogram: store %s is writable again; %d records of the outage were dropped (neither the store "
            "nor the spill file could take them)%s",
            state.store.url,
            dropped,
            f", {spilled} were spilled" if spilled else "",
        )
    else:
        # Info, not a warning: an outage without losses gives exactly one warning (its start).
        logger.info(
            "openprogram: store %s is writable again; buffered records were written%s",
            state.store.url,
            f" ({spilled} spilled before, see `openprogram import`)" if spilled else "",
        )
    state.warned = state.spill_failed = False
    state.outage_spilled = state.dropped = 0
    state.spill_retry_at = 0.0


def _bound(state: _StoreState) -> None:
    """Keep a failing store's backlog under MAX_PENDING_ROWS: spilled, else (no spill file either) dropped."""
    if len(state.pending_calls) <= MAX_PENDING_ROWS and len(state.pending_messages) <= MAX_PENDING_ROWS:
        return
    if time.monotonic() >= state.spill_retry_at and _spill(state):
        return
    # A failed spill is tried again at the store's pace, not every cycle (each tries to write the whole backlog).
    state.spill_retry_at = state.retry_at
    _drop_oldest(state)


_CALL_WIDTH = len(CALL_COLUMNS)


def _drop_oldest(state: _StoreState) -> None:
    """Drop the oldest pending rows past MAX_PENDING_ROWS (per kind), counted in ``state.dropped``."""
    calls = state.pending_calls
    excess = len(calls) - MAX_PENDING_ROWS
    if excess > 0:
        del calls.flat[: excess * _CALL_WIDTH]
        state.dropped += excess
    for rows in (state.pending_sessions, state.pending_aliases, state.pending_messages):
        excess = len(rows) - MAX_PENDING_ROWS
        if excess > 0:
            del rows[:excess]
            state.dropped += excess
            if rows is state.pending_messages and state.texts is not None:
                state.texts = SessionTexts()  # texts dropped unwritten are written again by the next call holding them


def _spill(state: _StoreState) -> bool:
    """Append the backlog to a JSON-lines file; ``openprogram import`` loads it later."""
    directory = spill_directory()
    path = directory / f"spill-{os.getpid()}-{_ids.process_owner().rsplit(':', 1)[-1]}.jsonl"
    try:
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        append_spill(
            path,
            safe_url(state.store.url),
            state.pending_sessions,
            state.pending_calls,
            state.pending_aliases,
            state.pending_messages,
        )
    except OSError as exc:
        if not state.spill_failed:  # once per outage: a cycle would repeat it 20 times a second
            state.spill_failed = True
            logger.error(
                "openprogram: cannot spill records to %s (%s); keeping the newest %d in memory and dropping older "
                "ones until store %s is back",
                path,
                exc,
                MAX_PENDING_ROWS,
                state.store.url,
            )
        return False
    if not state.spilled:
        logger.warning(
            "openprogram: store %s is still unavailable; records are being spilled to %s "
            "(load them with `openprogram import %s`)",
            state.store.url,
            path,
            path,
        )
    state.spilled += len(state.pending_calls)
    state.outage_spilled += len(state.pending_calls)
    state.pending_calls = CallRows()
    state.pending_sessions = []
    state.pending_aliases = []
    state.pending_messages = []
    return True


# --- flushing ------------------------------------------------------------------------


def flush(timeout: float | None = 30.0) -> bool:
    """Block until everything recorded so far is durable; False if a store is failing or time ran out."""
    if _thread is None or not _thread.is_alive() or threading.current_thread() is _thread:
        _cycle()
        return not any(s.failing for s in _states.values())
    marker = _Marker()
    _enqueue_marker(marker)
    _wake.set()
    if not marker.done.wait(timeout):
        logger.warning("openprogram: flush did not finish within %ss; records stay queued", timeout)
        return False
    return marker.ok


async def flush_async() -> bool:
    """``flush()`` for coroutines: waits without blocking the event loop."""
    if _thread is None or not _thread.is_alive():
        return await run_blocking(flush)
    loop = asyncio.get_running_loop()
    future: asyncio.Future[bool] = loop.create_future()
    marker = _Marker()
    marker.callbacks.append(_resolver(loop, future))
    _enqueue_marker(marker)
    _wake.set()
    return await future


STUCK_AFTER = max(5 * CALLER_WAIT, 5.0)
"""Seconds the writer may spend in one store call before the store counts as not answering: longer than
the agent's thread waits for its own calls, as a healthy write of a large batch on a loaded machine
can take a second or more, and an exit that gave up on it would leave its records not yet durable."""


def _stuck_store() -> Store | None:
    """The store the writer has been writing to for longer than :data:`STUCK_AFTER`, if any."""
    busy = _busy
    if busy is None or time.monotonic() - busy[1] <= STUCK_AFTER:
        return None
    return busy[0]


def _stuck() -> bool:
    """Whether the writer is stuck in a store (which is then in an outage)."""
    store = _stuck_store()
    if store is None:
        return False
    note_outage(store, f"a write took more than {STUCK_AFTER:g}s")
    return True


def flush_before_exit(store: Store, timeout: float) -> bool:
    """``flush()`` for the end of an agent's turn, which must not wait on a store that does not answer.

    False at once during an outage of ``store`` (the writer keeps retrying in the background), and
    as soon as the writer has been inside one store call for :data:`STUCK_AFTER` seconds
    (that store is then in an outage); else as :func:`flush`.
    """
    if in_outage(store):
        _wake.set()
        return False
    if _thread is None or not _thread.is_alive() or threading.current_thread() is _thread:
        return flush(timeout)
    marker = _Marker()
    _enqueue_marker(marker)
    _wake.set()
    deadline = time.monotonic() + timeout
    while not marker.done.wait(_STUCK_POLL):
        if _stuck():
            return False
        if time.monotonic() > deadline:
            logger.warning("openprogram: flush did not finish within %ss; records stay queued", timeout)
            return False
    return marker.ok


async def flush_before_exit_async(store: Store, timeout: float) -> bool:
    """:func:`flush_before_exit` for coroutines: waits without blocking the event loop."""
    if in_outage(store):
        _wake.set()
        return False
    if _thread is None or not _thread.is_alive():
        return await run_blocking(flush_before_exit, store, timeout)
    loop = asyncio.get_running_loop()
    future: asyncio.Future[bool] = loop.create_future()
    marker = _Marker()
    marker.callbacks.append(_resolver(loop, future))
    _enqueue_marker(marker)
    _wake.set()
    deadline = time.monotonic() + timeout
    while True:
        done, _ = await asyncio.wait({future}, timeout=_STUCK_POLL)
        if done:
            return future.result()
        if _stuck():
            return False
        if time.monotonic() > deadline:
            logger.warning("openprogram: flush did not finish within %ss; records stay queued", timeout)
            return False


_STUCK_POLL = 0.05
"""Seconds between looks at whether the writer is stuck while a turn's end waits for it."""


def _resolver(loop: asyncio.AbstractEventLoop, future: asyncio.Future[bool]) -> Callable[[bool], None]:
    """A marker callback (run on the writer's thread) that resolves ``future`` on its loop."""

    def resolve(ok: bool) -> None:
        def set_result() -> None:
            if not future.done():
                future.set_result(ok)

        try:
            loop.call_soon_threadsafe(set_result)
        except RuntimeError:  # the loop closed meanwhile
            pass

    return resolve


def flush_store(store: Store) -> None:
    """Make this process's records durable before a read, so reads see their own writes."""
    if (
        queue
        or inflight
        or any(
            s.pending_calls or s.pending_sessions or s.pending_aliases or s.pending_messages for s in _states.values()
        )
    ):
        flush()


on_read(flush_store)


def discard_store(store: Store) -> None:
    """Forget a store (used by tests that close a store): its outage, and its state with the records
    still queued for it (taken first: a turn left during an outage does not wait for them)."""
    flush(timeout=5.0)
    _states.pop(id(store), None)
    note_recovery(store)


# --- process lifecycle ---------------------------------------------------------------

exit_hooks: list[Callable[[], None]] = []
"""Run at interpreter exit before the final flush (e.g. to close implicit sessions)."""


def on_exit(hook: Callable[[], None]) -> None:
    """Run ``hook()`` at interpreter exit, before the final flush."""
    exit_hooks.append(hook)


def _at_exit() -> None:
    global _stopping
    for hook in exit_hooks:
        try:
            hook()
        except Exception:
            logger.exception("openprogram: exit hook failed")
    # Calls still running now (daemon threads) will never finish: record that.
    now = time.time()
    for call_id, rec in list(inflight.items()):
        if inflight.pop(call_id, None) is not None:
            queue.extend(rec + ("interrupted", None, "process exited while the call was running", now))
    _stopping = True
    _wake.set()
    thread = _thread
    if thread is not None and thread.is_alive():
        thread.join(5.0)
    for state in _states.values():
        state.retry_at = 0.0  # a failing store gets one last try, whatever its back-off, before the spill
    _cycle()
    for state in _states.values():
        if state.pending_calls or state.pending_sessions or state.pending_aliases:
            _spill(state)
        if state.dropped:
            logger.warning(
                "openprogram: %d records were dropped while store %s was unavailable (neither the store nor the "
                "spill file could take them)",
                state.dropped,
                state.store.url,
            )


atexit.register(_at_exit)


def _after_fork_in_child() -> None:
    global _thread, _stopping, _cycle_lock
    # The parent's queue, running calls and backlog belong to the parent.
    queue.clear()
    inflight.clear()
    _states.clear()
    _cycle_lock = threading.Lock()
    _stopping = False
    had_writer, _thread = _thread is not None, None
    if had_writer:
        ensure_started()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)

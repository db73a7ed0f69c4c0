"""The store interface every backend implements, and the records it returns."""

from __future__ import annotations

import abc
import dataclasses
import json
import os
import socket
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from .._runtime import StoreError, process_owner
from ._prompts import PromptReader, holds_texts, loads_or_text, prompt_reference
from ._rows import (
    Aliases,
    CallRow,
    Calls,
    EffectOutcome,
    EffectRow,
    Messages,
    Sessions,
)

__all__ = [
    "CallRecord",
    "HEARTBEAT_STALE_SECONDS",
    "SessionInfo",
    "Store",
    "effect_state",
    "on_read",
    "owner_alive",
    "session_info",
    "tokens_of",
]

#: A writer that has not refreshed its heartbeat for this long is presumed dead.
HEARTBEAT_STALE_SECONDS = 60.0


@dataclasses.dataclass(frozen=True)
class SessionInfo:
    """One session as listed by a store."""

    session_id: str
    agent_id: str
    created_at: float
    updated_at: float
    call_count: int = 0
    #: Tokens used by the session's model (``llm``) calls, as their ``usage`` attributes report them.
    tokens: int = 0


@dataclasses.dataclass(frozen=True)
class CallRecord:
    """One recorded call. ``inputs``/``output``/``attributes`` are decoded JSON."""

    call_id: str
    session_id: str
    turn_id: str
    parent_id: str | None
    kind: str
    name: str
    framework: str | None
    status: str
    inputs: Any
    output: Any
    error: str | None
    started_at: float
    ended_at: float | None
    attributes: dict[str, Any] | None = None

    @property
    def duration(self) -> float | None:
        """Seconds from start to end, or None while running."""
        return None if self.ended_at is None else self.ended_at - self.started_at

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict of every field."""
        return dataclasses.asdict(self)


_RECORD_FIELDS = tuple(f.name for f in dataclasses.fields(CallRecord))
assert _RECORD_FIELDS[-3:] == ("started_at", "ended_at", "attributes")
_new_record = object.__new__


#: The latest time a reader takes as one (the end of year 9999, in seconds since the epoch).
LATEST_TIME = 253_402_300_799.0


def readable_time(value: Any) -> float | None:
    """A time as read from a row: a number from the epoch to :data:`LATEST_TIME`, else None.

    Another process sharing a store may write NaN, infinities or absurd times, which no
    reader could format, sort or encode as JSON.
    """
    if (type(value) is float or type(value) is int) and 0 <= value <= LATEST_TIME:
        return value
    return None


def _readable_times(row: CallRow) -> CallRow:
    """``row`` with an unreadable start read as 0 (the epoch) and an unreadable end as None."""
    return (*row[:12], readable_time(row[12]) or 0.0, readable_time(row[13]), *row[14:])


def _times_readable(row: CallRow) -> bool:
    started, ended = row[12], row[13]
    return (
        type(started) is float
        and 0.0 <= started <= LATEST_TIME
        and (ended is None or (type(ended) is float and 0.0 <= ended <= LATEST_TIME))
    )


def _record_of(
    row: CallRow,
    liveness: _Liveness,
    captures: bool,
    merged: Callable[[CallRow, Any], Any] | None,
    prompts: Callable[[], PromptReader],
) -> CallRecord:
    if not _times_readable(row):
        row = _readable_times(row)
    status = row[7]
    if status == "running" and not liveness.alive(row[14]):
        status = "interrupted"
    if captures:
        inputs, output, attributes = _loads(row[8]), _loads(row[9]), _loads(row[11])
        if holds_texts(row[8]):
            inputs = prompts().with_texts(inputs)
        if holds_texts(row[9]):
            output = prompts().with_texts(output)
        if row[4] == "llm" and prompt_reference(inputs) is not None:
            inputs = prompts().whole_inputs(row[0], inputs)
        if merged is not None:
            attributes = merged(row, attributes)
    else:
        inputs = output = attributes = None
    # A frozen dataclass's __init__ runs one object.__setattr__ per field, most of reading a
    # large session; filling __dict__ builds the same record for a fraction of that.
    record = _new_record(CallRecord)
    record.__dict__.update(
        zip(
            _RECORD_FIELDS,
            (
                row[0],
                row[1],
                row[2],
                row[3],
                row[4],
                row[5],
                row[6],
                status,
                inputs,
                output,
                row[10],
                row[12],
                row[13],
                attributes,
            ),
            strict=True,
        )
    )
    return record


def session_info(row: Sequence[Any]) -> SessionInfo:
    """A SessionInfo from a SQL listing's row (id, agent, created, updated, call count, tokens).

    Times no reader could use read as 0 (see :func:`readable_time`).
    """
    return SessionInfo(
        str(row[0]),
        str(row[1]),
        float(readable_time(row[2]) or 0.0),
        float(readable_time(row[3]) or 0.0),
        int(row[4] or 0),
        _whole(row[5]),
    )


def _whole(value: Any) -> int:
    """A count summed by SQL (an int, a float or a Decimal); 0 for anything else."""
    try:
        return int(value or 0)
    except (TypeError, ValueError, OverflowError):
        return 0


#: A token count is a whole number below this; anything else a row says is not counted.
TOKEN_LIMIT = 10**15


def _count(value: Any) -> int | None:
    kind = type(value)
    if kind is int and 0 <= value < TOKEN_LIMIT:
        return int(value)
    if kind is float and 0 <= value < TOKEN_LIMIT and value.is_integer():
        return int(value)
    return None


def tokens_of(attributes: Any) -> int:
    """The tokens a model call's attributes report: their ``usage`` total, else input plus output.

    A count is a whole number from 0 below :data:`TOKEN_LIMIT`; any other value (negative, a
    fraction, a string, or huge, from another process sharing a store) counts as absent. The
    SQL stores compute the same sum in their session listings.
    """
    found = attributes.get("usage") if isinstance(attributes, dict) else None
    if not isinstance(found, dict):
        return 0
    total = _count(found.get("total_tokens"))
    if total is not None:
        return total
    return sum(v for v in (_count(found.get("input_tokens")), _count(found.get("output_tokens"))) if v is not None)


def tokens_in(attributes: str | None) -> int:
    """:func:`tokens_of` for attributes as stored (JSON text); 0 for text that is not JSON."""
    return tokens_of(_loads(attributes))


def _loads(text: str | None) -> Any:
    return None if text is None else loads_or_text(text)


_before_read: list[Callable[[Store], None]] = []


def on_read(hook: Callable[[Store], None]) -> None:
    """Have ``hook(store)`` run before each read of a store's calls.

    The background writer registers here to make this process's records durable
    first, so that a read sees the process's own writes.
    """
    _before_read.append(hook)


class Store(abc.ABC):
    """Where sessions and calls are kept.

    Backends implement the abstract methods; writes arrive in batches from the
    background writer (never from the caller's thread), reads come from user
    code and the CLI. ``url`` is safe to print: it never contains a password.
    """

    url: str = ""

    #: Whether the store keeps message rows (:meth:`write`'s ``messages``), so that a model call's
    #: prompt can be stored as a reference to them. A store that does not (a subclass written
    #: before they existed) gets every prompt whole in the call's inputs instead.
    keeps_messages = False

    # --- writing (called by the background writer only) -------------------
    @abc.abstractmethod
    def write(self, sessions: Sessions, calls: Calls, aliases: Aliases = (), messages: Messages = ()) -> None:
        """Persist one batch atomically.

        A call row replaces a ``running`` row of the same id (a final row is
        never replaced); a session row keeps the first ``created_at`` and the
        latest ``updated_at``; an alias row replaces the alias of the same key;
        a message row whose (session, id) is stored already is left as it is
        (its id is a hash of its text). ``messages`` come only to a store that
        :attr:`keeps_messages`.
        """

    #: Whether :meth:`write_unsynced` commits without syncing, so that a later :meth:`write` must follow.
    syncs_later = False

    def write_unsynced(self, sessions: Sessions, calls: Calls, aliases: Aliases = (), messages: Messages = ()) -> None:
        """:meth:`write` for a batch nobody waits on: a backend may leave it durable only once a later
        :meth:`write` returns (atomic and visible all the same). The default is :meth:`write`."""
        if messages:
            self.write(sessions, calls, aliases, messages)
        else:
            self.write(sessions, calls, aliases)

    def heartbeat(self, owner: str, at: float) -> None:  # noqa: B027 - optional for backends
        """Note that ``owner`` (host:pid:nonce) is alive and has calls running."""

    def claim_session(self, session_id: str, agent_id: str, at: float) -> bool:
        """Record the session now if it is absent; True if this call recorded it.

        Called on a session's entry (not by the writer) when its id was not found, so
        that of several processes entering one new id at once exactly one reports
        ``created=True``. The built-in stores claim atomically; this default checks,
        then writes.
        """
        if self.session_exists(session_id):
            return False
        self.write([(session_id, agent_id, at, at)], [])
        return True

    # --- reading -----------------------------------------------------------
    @abc.abstractmethod
    def session_exists(self, session_id: str) -> bool:
        """True if the session has been recorded (durably) in this store."""

    @abc.abstractmethod
    def list_sessions(self, limit: int | None = None) -> list[SessionInfo]:
        """Sessions, most recently updated first."""

    @abc.abstractmethod
    def get_session(self, session_id: str) -> SessionInfo | None:
        """One session, or None if this store has never seen it."""

    @abc.abstractmethod
    def resolve_alias(self, namespace: str, key: str) -> str | None:
        """The session bound to a framework run identity, or None."""

    # --- effects: the undo journal (see openprogram._undo.effects) ----------------
    def add_effects(self, rows: Sequence[EffectRow]) -> None:
        """Journal effects, durably before returning; a row whose ``effect_id`` is present already is left as is."""
        raise StoreError(f"{type(self).__name__} keeps no effects: nothing recorded in {self.url} can be undone")

    def list_effects(self, session_id: str) -> list[EffectRow]:
        """The effects journaled in a session, oldest first (by ``started_at``, then ``effect_id``)."""
        for hook in _before_read:
            hook(self)
        return self._effect_rows(session_id)

    def _effect_rows(self, session_id: str) -> list[EffectRow]:
        """The backend's part of :meth:`list_effects` (none, for a store that keeps no effects)."""
        return []

    def move_effect(self, effect_id: str, state: str, claimed_by: str | None, changes: dict[str, Any]) -> bool:
        """Compare-and-set: apply ``changes`` (see :data:`EFFECT_CHANGES`) only to an effect in ``state`` and
        claimed by ``claimed_by``; True if this call changed it. Of any number of racing callers, across
        processes, one wins."""
        raise StoreError(f"{type(self).__name__} keeps no effects: nothing recorded in {self.url} can be undone")

    def drop_effect(self, effect_id: str, state: str) -> bool:
        """Delete the effect if it is in ``state`` (a journaled call that failed has nothing to undo)."""
        raise StoreError(f"{type(self).__name__} keeps no effects: nothing recorded in {self.url} can be undone")

    def settle_effects(self, outcomes: Sequence[EffectOutcome]) -> None:
        """Record how ``pending`` effects ended (each applies only to an effect still pending); the SQL stores
        write them in one transaction."""
        for effect_id, state, output, ended_at in outcomes:
            if state is None:
                self.drop_effect(effect_id, "pending")
            else:
                self.move_effect(effect_id, "pending", None, {"state": state, "output": output, "ended_at": ended_at})

    @abc.abstractmethod
    def _iter_call_rows(self, session_id: str, captures: bool = True) -> Iterator[CallRow]:
        """Rows of one session in start order (ties broken by call id).

        With ``captures=False`` a backend may leave ``inputs``, ``output`` and
        ``attributes`` out (None) so they are never read, except the attributes of
        ``llm`` calls (their model and token usage, drawn on a call tree).
        """

    @abc.abstractmethod
    def _heartbeats(self) -> dict[str, float]:
        """Last heartbeat time of every owner that recorded one."""

    def messages(self, session_id: str) -> dict[str, str]:
        """Every message row of a session: message id -> its JSON text (none in a store that keeps none)."""
        return {}

    def prompt_reader(self, session_id: str) -> PromptReader:
        """Whole prompts for the session's model calls as read from raw rows (their inputs hold references)."""
        return PromptReader(
            lambda: self.messages(session_id),
            lambda: ((call_id, _loads(inputs)) for call_id, inputs in self._model_call_inputs(session_id)),
        )

    def _model_call_inputs(self, session_id: str) -> Iterator[tuple[str, str | None]]:
        """(call id, inputs JSON) of the session's ``llm`` calls; the SQL stores read only those rows."""
        return ((row[0], row[8]) for row in self._iter_call_rows(session_id, True) if row[4] == "llm")

    def iter_calls(self, session_id: str, *, captures: bool = True) -> Iterator[CallRecord]:
        """Stream the calls of one session in start order (constant memory).

        ``captures=False`` leaves ``inputs``, ``output`` and ``attributes`` as None
        without decoding them: what a call tree needs, at a third of the cost.
        """
        for hook in _before_read:
            hook(self)
        liveness = _Liveness(self)
        notes = _EffectNotes(self, session_id, liveness) if captures else None
        merged = notes.merged if notes else None
        prompts = _Lazy(lambda: self.prompt_reader(session_id))
        for row in self._iter_call_rows(session_id, captures):
            yield _record_of(row, liveness, captures, merged, prompts)

    def get_call(self, session_id: str, call_id: str, started_at: float | None = None) -> CallRecord | None:
        """One call of a session with its captures, or None. ``started_at`` (its start as read back)
        lets a store find it by key; without it, or in a store with no such lookup, the session is scanned."""
        for hook in _before_read:
            hook(self)
        row = self._call_row(session_id, call_id, started_at)
        if row is None:
            return None
        liveness = _Liveness(self)
        notes = _EffectNotes(self, session_id, liveness)
        prompts = _Lazy(lambda: self.prompt_reader(session_id))
        return _record_of(row, liveness, True, notes.merged if notes else None, prompts)

    def _call_row(self, session_id: str, call_id: str, started_at: float | None) -> CallRow | None:
        """The row of one call (captures included); backends with a key lookup override this scan."""
        return next((row for row in self._iter_call_rows(session_id, True) if row[0] == call_id), None)

    def iter_tree_rows(self, session_id: str) -> Iterator[CallRow]:
        """Raw rows for drawing a call tree: captures left out (None) but for the attributes
        (JSON text) of ``llm`` calls and the ``{"attempt": n}`` of a retried call, ``interrupted``
        resolved. A call or turn with journaled effects has ``"effect": note`` too (see :class:`_EffectNotes`).

        The cheapest way to read a large session: no record object per call.
        """
        for hook in _before_read:
            hook(self)
        liveness = _Liveness(self)
        notes = _EffectNotes(self, session_id, liveness)
        marked = notes.marked if notes else None
        for stored in self._iter_call_rows(session_id, False):
            found = stored if _times_readable(stored) else _readable_times(stored)
            dead = found[7] == "running" and not liveness.alive(found[14])
            row = (*found[:7], "interrupted", *found[8:]) if dead else found
            yield row if marked is None else marked(row)

    def list_calls(self, session_id: str) -> list[CallRecord]:
        """Every call of one session, in start order."""
        return list(self.iter_calls(session_id))

    def close(self) -> None:  # noqa: B027 - optional for backends
        """Release connections. The store may be reopened by ``open_store``."""

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.url}>"

    # --- re-reading what changed in a running session (the viewer's polls) ------------------
    def iter_changed_tree_rows(
        self, session_id: str, calls: Sequence[tuple[str, float]], since: float
    ) -> Iterator[CallRow]:
        """Tree rows, as :meth:`iter_tree_rows` gives them, of the session's calls that may have changed
        since an earlier read, in no particular order: those named in ``calls`` (call id and start, the
        ones running then) and those started at or after ``since``.

        A row written late with an earlier start (another process's clock) is not among them: a reader
        compares the session's call count to notice one.
        """
        for hook in _before_read:
            hook(self)
        liveness = _Liveness(self)
        notes = _EffectNotes(self, session_id, liveness)
        marked = notes.marked if notes else None
        for found in self._changed_call_rows(session_id, calls, since):
            dead = found[7] == "running" and not liveness.alive(found[14])
            row = (*found[:7], "interrupted", *found[8:]) if dead else found
            yield row if marked is None else marked(row)

    def _changed_call_rows(
        self, session_id: str, calls: Sequence[tuple[str, float]], since: float
    ) -> Iterator[CallRow]:
        """The backend's part of :meth:`iter_changed_tree_rows`: raw tree rows. This default scans the session."""
        named = set(calls)
        for row in self._iter_call_rows(session_id, False):
            start = row[12]
            # A start that is not a number cannot be compared: it is read again (as SQL compares text after numbers).
            if not isinstance(start, (int, float)) or not start < since or (row[0], start) in named:
                yield row


class _Lazy:
    """A prompt reader made the first time a record needs one (most sessions' reads never do)."""

    __slots__ = ("_made", "_make")

    def __init__(self, make: Callable[[], PromptReader]) -> None:
        self._make = make
        self._made: PromptReader | None = None

    def __call__(self) -> PromptReader:
        if self._made is None:
            self._made = self._make()
        return self._made


def owner_alive(store: Store) -> Callable[[str], bool]:
    """Whether the process ``owner`` (host:pid:nonce) that wrote to ``store`` is still alive (answers cached)."""
    return _Liveness(store).alive


def effect_state(row: EffectRow, alive: Callable[[str], bool]) -> str:
    """An effect's state as its owners' liveness makes it: a ``pending`` effect is ``running`` while the process
    that journaled it lives, else ``unknown`` (it died mid-call); an ``undoing`` one whose undo process died is
    ``interrupted`` (to be resumed)."""
    state = row[7]
    if state == "pending":
        return "running" if alive(row[12]) else "unknown"
    if state == "undoing" and not alive(row[13] or ""):
        return "interrupted"
    return state


# How a call with effects is marked, from its effects' states (the first that applies).
_NOTES = (
    ("undoing", "undoing"),
    ("interrupted", "undo interrupted"),
    ("unknown", "outcome unknown"),
    ("running", "effect pending"),
)


def _note(states: list[str], turn: bool) -> str | None:
    if all(s == "undone" for s in states):
        return "undone"
    if "undone" in states:
        return "partly undone"
    if turn:
        return None  # a turn is marked once undo has begun on it
    return next((note for state, note in _NOTES if state in states), "undoable")


def attempt_only(attributes: str | None) -> str | None:
    """A non-``llm`` call's attributes as a tree row keeps them: only the attempt number of a retried call."""
    if not attributes or '"attempt"' not in attributes:
        return None
    found = _loads(attributes)
    attempt = found.get("attempt") if type(found) is dict else None
    return None if attempt is None else json.dumps({"attempt": attempt})


class _EffectNotes:
    """How the calls and turns of one session stand with their effects, for reads to show.

    A call with journaled effects is noted ``undoable``, ``effect pending``, ``outcome unknown``,
    ``undoing``, ``undo interrupted``, ``partly undone`` or ``undone``; a turn ``partly undone`` or
    ``undone``. Reads put the note in the call's attributes, as ``"effect"``.
    """

    def __init__(self, store: Store, session_id: str, liveness: _Liveness) -> None:
        try:
            rows = store._effect_rows(session_id)  # the read's hooks have run
        except Exception:  # a read never fails for want of the journal
            rows = []
        by_call: dict[str, list[str]] = {}
        by_turn: dict[str, list[str]] = {}
        self.undone_by: dict[str, list[str]] = {}
        for row in rows:
            if not all(type(row[i]) is str for i in (1, 3, 7, 12)):
                continue  # not a row any process of ours wrote: it notes nothing
            state = effect_state(row, liveness.alive)
            by_call.setdefault(row[1], []).append(state)
            by_turn.setdefault(row[3], []).append(state)
            if state == "undone" and type(row[15]) is str:
                self.undone_by.setdefault(row[1], []).append(row[15])
        self.calls = {call_id: note for call_id, states in by_call.items() if (note := _note(states, False))}
        self.turns = {turn_id: note for turn_id, states in by_turn.items() if (note := _note(states, True))}

    def __bool__(self) -> bool:
        return bool(self.calls)

    def note(self, row: CallRow) -> str | None:
        note = self.calls.get(row[0])
        if note is None and row[4] == "turn":
            note = self.turns.get(row[2])
        return note

    def merged(self, row: CallRow, attributes: Any) -> Any:
        """A record's attributes with its effect note (and the undo calls that undid it)."""
        note = self.note(row)
        if note is None:
            return attributes
        merged = dict(attributes) if isinstance(attributes, dict) else {}
        merged["effect"] = note
        if row[0] in self.undone_by:
            merged["undone_by"] = self.undone_by[row[0]]
        return merged

    def marked(self, row: CallRow) -> CallRow:
        """A tree row with its effect note added to its attributes (an ``llm`` call keeps its own)."""
        note = self.note(row)
        if note is None or row[4] == "llm":
            return row
        found = _loads(row[11])
        return (*row[:11], json.dumps({**(found if type(found) is dict else {}), "effect": note}), *row[12:])


class _Liveness:
    """Decides whether the process that left a call ``running`` is still alive."""

    def __init__(self, store: Store) -> None:
        self._store = store
        self._host = socket.gethostname()
        self._me = process_owner()
        self._beats: dict[str, float] | None = None
        self._cache: dict[str, bool] = {}

    def alive(self, owner: str) -> bool:
        known = self._cache.get(owner)
        if known is None:
            known = self._cache[owner] = self._check(owner)
        return known

    def _check(self, owner: str) -> bool:
        if owner == self._me:
            return True
        if type(owner) is not str:
            return False  # not an owner any writer records
        host, _, rest = owner.partition(":")
        pid_text, _, _ = rest.partition(":")
        if host == self._host and pid_text.isdigit():
            try:
                os.kill(int(pid_text), 0)
            except ProcessLookupError:
                return False
            except OSError:
                pass  # exists but is not ours to signal
        if self._beats is None:
            try:
                self._beats = self._store._heartbeats()
            except Exception:
                self._beats = {}
        beat = readable_time(self._beats.get(owner))
        return beat is not None and time.time() - beat < HEARTBEAT_STALE_SECONDS

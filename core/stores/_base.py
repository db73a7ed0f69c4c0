"""The store interface every backend implements, and the records it returns."""

from __future__ import annotations

import abc
import dataclasses
import json
import os
import socket
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, overload

from .._ids import process_owner

__all__ = [
    "CALL_COLUMNS",
    "AliasRow",
    "CallRecord",
    "CallRow",
    "CallRows",
    "HEARTBEAT_STALE_SECONDS",
    "SessionInfo",
    "SessionRow",
    "Store",
    "StoreError",
    "on_read",
    "session_info",
    "tokens_of",
]

#: Columns of a call row, in the order of :data:`CallRow` tuples.
CALL_COLUMNS = (
    "call_id", "session_id", "turn_id", "parent_id", "kind", "name", "framework", "status",
    "inputs", "output", "error", "attributes", "started_at", "ended_at", "owner",
)  # fmt: skip

#: (call_id, session_id, turn_id, parent_id, kind, name, framework, status,
#:  inputs_json, output_json, error, attributes_json, started_at, ended_at, owner)
CallRow = tuple[
    str, str, str, "str | None", str, str, "str | None", str,
    "str | None", "str | None", "str | None", "str | None", float, "float | None", str,
]  # fmt: skip

_WIDTH = len(CALL_COLUMNS)


class CallRows(Sequence[CallRow]):
    """Call rows kept flat: the fields of every row back to back in one list (:attr:`flat`).

    The background writer collects rows this way because a tuple per row is an object the
    garbage collector must track and scan (a tenth of the writer's work); a flat list is one
    object however many rows it holds. It is a read-only ``Sequence[CallRow]`` for any store;
    a store that binds parameters in bulk (SQLite) slices :attr:`flat` directly.
    """

    __slots__ = ("flat",)

    def __init__(self, rows: Iterable[CallRow] = ()) -> None:
        self.flat: list[Any] = []
        for row in rows:
            self.append(row)

    def append(self, row: CallRow) -> None:
        if len(row) != _WIDTH:  # a short row would shift every later one
            raise ValueError(f"a call row has {_WIDTH} fields, not {len(row)}")
        self.flat.extend(row)

    def __len__(self) -> int:
        return len(self.flat) // _WIDTH

    def __iter__(self) -> Iterator[CallRow]:
        fields = iter(self.flat)
        return zip(*(fields,) * _WIDTH, strict=True)

    @overload
    def __getitem__(self, index: int) -> CallRow: ...
    @overload
    def __getitem__(self, index: slice) -> list[CallRow]: ...
    def __getitem__(self, index: int | slice) -> CallRow | list[CallRow]:
        if isinstance(index, slice):
            return list(self)[index]
        n = len(self)
        if index < 0:
            index += n
        if not 0 <= index < n:
            raise IndexError("call row index out of range")
        return tuple(self.flat[index * _WIDTH : (index + 1) * _WIDTH])

    def __repr__(self) -> str:
        return f"CallRows({len(self)} rows)"


#: (session_id, agent_id, created_at, updated_at)
SessionRow = tuple[str, str, float, float]

#: (namespace, key, session_id, bound_at): a framework's run identity bound to a session.
AliasRow = tuple[str, str, str, float]

#: A writer that has not refreshed its heartbeat for this long is presumed dead.
HEARTBEAT_STALE_SECONDS = 60.0


class StoreError(RuntimeError):
    """A store could not be opened or used. The message names the path or host."""


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


def session_info(row: Sequence[Any]) -> SessionInfo:
    """A SessionInfo from a SQL listing's row (id, agent, created, updated, call count, tokens)."""
    return SessionInfo(str(row[0]), str(row[1]), float(row[2]), float(row[3]), int(row[4] or 0), int(row[5] or 0))


def tokens_of(attributes: Any) -> int:
    """The tokens a model call's attributes report: their ``usage`` total, else input plus output.

    The SQL stores compute the same sum in their session listings.
    """
    found = attributes.get("usage") if isinstance(attributes, dict) else None
    if not isinstance(found, dict):
        return 0
    total = found.get("total_tokens")
    if isinstance(total, int):
        return total
    return sum(v for v in (found.get("input_tokens"), found.get("output_tokens")) if isinstance(v, int))


def _loads(text: str | None) -> Any:
    if text is None:
        return None
    try:
        return json.loads(text)
    except ValueError:
        return text


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

    # --- writing (called by the background writer only) -------------------
    @abc.abstractmethod
    def write(self, sessions: Sequence[SessionRow], calls: Sequence[CallRow], aliases: Sequence[AliasRow] = ()) -> None:
        """Persist one batch atomically.

        A call row replaces a ``running`` row of the same id (a final row is
        never replaced); a session row keeps the first ``created_at`` and the
        latest ``updated_at``; an alias row replaces the alias of the same key.
        """

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

    def iter_calls(self, session_id: str, *, captures: bool = True) -> Iterator[CallRecord]:
        """Stream the calls of one session in start order (constant memory).

        ``captures=False`` leaves ``inputs``, ``output`` and ``attributes`` as None
        without decoding them: what a call tree needs, at a third of the cost.
        """
        for hook in _before_read:
            hook(self)
        liveness = _Liveness(self)
        for row in self._iter_call_rows(session_id, captures):
            status = row[7]
            if status == "running" and not liveness.alive(row[14]):
                status = "interrupted"
            if captures:
                inputs, output, attributes = _loads(row[8]), _loads(row[9]), _loads(row[11])
            else:
                inputs = output = attributes = None
            # A frozen dataclass's __init__ costs ~4 us (one object.__setattr__ per field), most
            # of reading a 100,000-call session; filling __dict__ builds the same record 3x faster.
            record = _new_record(CallRecord)
            record.__dict__.update(zip(_RECORD_FIELDS, (
                row[0], row[1], row[2], row[3], row[4], row[5], row[6], status,
                inputs, output, row[10], row[12], row[13], attributes,
            ), strict=True))  # fmt: skip
            yield record

    def iter_tree_rows(self, session_id: str) -> Iterator[CallRow]:
        """Raw rows for drawing a call tree: captures left out (None) but for the attributes
        (JSON text) of ``llm`` calls, ``interrupted`` resolved.

        The cheapest way to read a large session: no record object per call.
        """
        for hook in _before_read:
            hook(self)
        liveness = _Liveness(self)
        for row in self._iter_call_rows(session_id, False):
            if row[7] == "running" and not liveness.alive(row[14]):
                yield (*row[:7], "interrupted", *row[8:])
            else:
                yield row

    def list_calls(self, session_id: str) -> list[CallRecord]:
        """Every call of one session, in start order."""
        return list(self.iter_calls(session_id))

    def close(self) -> None:  # noqa: B027 - optional for backends
        """Release connections. The store may be reopened by ``open_store``."""

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.url}>"


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
        beat = self._beats.get(owner)
        return beat is not None and time.time() - beat < HEARTBEAT_STALE_SECONDS

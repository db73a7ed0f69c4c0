"""The rows a store keeps, in one place: their columns and the tuples the writer and the backends pass.

A call row, a session row, an alias row (a framework run bound to a session) and an effect row
(the undo journal); each backend's schema and every reader follow these column lists.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Any, NamedTuple, overload

__all__ = [
    "CALL_COLUMNS",
    "EFFECT_CHANGES",
    "EFFECT_COLUMNS",
    "AliasRow",
    "Aliases",
    "CallRow",
    "CallRows",
    "Calls",
    "EffectOutcome",
    "EffectRow",
    "MessageRow",
    "Messages",
    "SessionRow",
    "Sessions",
    "StoredRow",
    "effect_changes",
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


class StoredRow(NamedTuple):
    """A call row read by field name, without building a CallRecord (captures as stored: JSON text or None)."""

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
    attributes: Any
    started_at: float
    ended_at: float | None
    owner: str

    @property
    def duration(self) -> float | None:
        return None if self.ended_at is None else self.ended_at - self.started_at


assert StoredRow._fields == CALL_COLUMNS, "StoredRow must list CALL_COLUMNS in order"


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

#: (session_id, message_id, body_json): one distinct message of a session's model calls, stored once;
#: its id is a hash of its JSON text (see ``_prompts``).
MessageRow = tuple[str, str, str]

#: (namespace, key, session_id, bound_at): a framework's run identity bound to a session.
AliasRow = tuple[str, str, str, float]

#: Columns of an effect row (the undo journal), in the order of :data:`EffectRow` tuples.
EFFECT_COLUMNS = (
    "effect_id", "call_id", "session_id", "turn_id", "kind", "name", "framework", "state",
    "inputs", "output", "started_at", "ended_at", "owner", "claimed_by", "claimed_at", "undo_call_id", "error",
)  # fmt: skip

#: (effect_id, call_id, session_id, turn_id, kind, name, framework, state, inputs_json, output_json,
#:  started_at, ended_at, owner, claimed_by, claimed_at, undo_call_id, error)
#: ``state`` is ``pending`` (journaled, its call not ended), ``applied``, ``unknown``, ``undoing``
#: (claimed by the undo process ``claimed_by``) or ``undone``.
EffectRow = tuple[
    str, str, str, str, str, str, "str | None", str, "str | None", "str | None",
    float, "float | None", str, "str | None", "float | None", "str | None", "str | None",
]  # fmt: skip

#: (effect_id, state, output_json, ended_at): how a ``pending`` effect ended; state None drops it (its call failed).
EffectOutcome = tuple[str, "str | None", "str | None", float]

#: The columns :meth:`Store.move_effect` may change; the others are fixed when an effect is journaled.
EFFECT_CHANGES = ("state", "output", "ended_at", "claimed_by", "claimed_at", "undo_call_id", "error")


def effect_changes(changes: dict[str, Any]) -> tuple[list[str], list[Any]]:
    """The columns and values of a :meth:`Store.move_effect` change, checked (column names go into SQL)."""
    unknown = set(changes) - set(EFFECT_CHANGES)
    if unknown or not changes:
        raise ValueError(f"an effect change sets some of {', '.join(EFFECT_CHANGES)}, not {sorted(unknown)}")
    columns = [c for c in EFFECT_CHANGES if c in changes]
    return columns, [changes[c] for c in columns]


# What a store's ``write`` takes: one batch of each kind of row.
Sessions = Sequence[SessionRow]
Calls = Sequence[CallRow]
Aliases = Sequence[AliasRow]
Messages = Sequence[MessageRow]

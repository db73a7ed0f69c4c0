"""The undo plan: the effects of a turn (or of a whole session) still to compensate, newest first.

Effects come from the journal (undoable ``@openprogram.tool`` calls and file effects) and from
the recorded calls of tools declared with :func:`openprogram.register_undo`. Each is planned
with the state it was read in, which the undo's compare-and-set expects: an effect another
process moved meanwhile is not compensated twice. Effects of compensations are never planned.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator, Sequence
from typing import overload

from .._runtime import process_owner
from ..stores import CallRecord, EffectRow, Store, effect_state, owner_alive
from .compensations import derived_names
from .effects import Effect
from .signing import sealed

__all__ = ["Planned", "UndoPlan", "plan_effects"]

_OUTCOME_OF_STATUS = {"ok": "applied", "error": "failed"}  # else (interrupted) unknown

#: Kinds of recorded calls whose names :func:`openprogram.register_undo` may declare.
DERIVED_KINDS = frozenset({"tool", "function"})


@dataclasses.dataclass(frozen=True)
class Planned:
    """One planned effect: what it is, the journal state a claim expects, and the row to journal first
    (an effect read from a recorded call, not journaled yet)."""

    effect: Effect
    state: str
    claimed_by: str | None
    row: EffectRow | None = None


class UndoPlan(Sequence[Effect]):
    """The effects an undo compensates, newest first (a sequence: ``len()``, iteration, indexing).

    From ``undo(..., dry_run=True)``: the effects still to compensate (empty once everything is
    undone); one whose outcome is unknown is in it, with ``state == "unknown"``. From an undo that
    ran: the effects it compensated, in order, recorded in the turn ``undo_turn_id``.
    ``running`` lists effects whose calls are still running (not planned).
    """

    def __init__(
        self,
        session_id: str,
        turn_id: str | None,
        planned: Sequence[Planned],
        running: Sequence[Effect] = (),
        undo_turn_id: str | None = None,
    ) -> None:
        self.session_id = session_id
        self.turn_id = turn_id
        self.planned = tuple(planned)
        self.running = tuple(running)
        self.undo_turn_id = undo_turn_id

    def __len__(self) -> int:
        return len(self.planned)

    @overload
    def __getitem__(self, index: int) -> Effect: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[Effect]: ...
    def __getitem__(self, index: int | slice) -> Effect | Sequence[Effect]:
        if isinstance(index, slice):
            return [p.effect for p in self.planned[index]]
        return self.planned[index].effect

    def __iter__(self) -> Iterator[Effect]:
        return (p.effect for p in self.planned)

    def __repr__(self) -> str:
        scope = f"turn {self.turn_id}" if self.turn_id else "session"
        return f"<UndoPlan {self.session_id} {scope}: {len(self)} effects>"


def _effect_of_call(call: CallRecord, state: str) -> Planned:
    row: EffectRow = sealed(
        (
            call.call_id,
            call.call_id,
            call.session_id,
            call.turn_id,
            "tool",
            call.name,
            call.framework,
            state,
            json.dumps(call.inputs),
            json.dumps(call.output) if state == "applied" else None,
            call.started_at,
            call.ended_at,
            process_owner(),
            None,
            None,
            None,
            None,
        )
    )  # signed: once journaled by the claim, a later undo reads it as this home's
    return Planned(Effect.from_row(row), state, None, row)


def _under_undo(calls: list[CallRecord]) -> set[str]:
    """Ids of the calls compensations made (below an ``undo`` call): the undo, not effects to undo.

    ``calls`` are in start order, so a call's parent comes before it.
    """
    below: set[str] = set()
    for call in calls:
        if call.kind == "undo" or call.parent_id in below:
            below.add(call.call_id)
    return below


def plan_effects(store: Store, session_id: str, turn_id: str | None = None) -> UndoPlan:
    """What undoing the turn (or, with no ``turn_id``, the session) would compensate, newest first."""
    journal = store.list_effects(session_id)
    rows = [r for r in journal if turn_id is None or r[3] == turn_id]
    names = derived_names()
    needs_calls = bool(names) or any(r[7] == "pending" for r in rows)
    calls = list(store.iter_calls(session_id)) if needs_calls else []
    by_id = {c.call_id: c for c in calls}
    alive = owner_alive(store)
    planned: list[Planned] = []
    running: list[Effect] = []
    for row in rows:
        state = effect_state(row, alive)
        if state == "undone":
            continue
        if row[7] == "pending":
            call = by_id.get(row[1])
            if call is not None and call.status != "running":
                # Its call ended, its outcome is not written (yet, or the store failed then): the call tells it.
                # A file effect's block has ended with its call: what is there now, the snapshot undoes.
                state = "applied" if row[4] == "file" else _OUTCOME_OF_STATUS.get(call.status, "unknown")
            if state == "failed":
                continue
            if state == "running":
                running.append(Effect.from_row(row, state))
                continue
        effect = Effect.from_row(row, state)
        if row[7] == "pending" and row[4] == "tool" and state == "applied" and call is not None:
            effect = dataclasses.replace(effect, output=call.output)
        planned.append(Planned(effect, row[7], row[13]))
    journaled = {r[0] for r in journal}  # undone ones too: an effect read from a call is undone once
    if names:
        compensations = _under_undo(calls)
        for call in calls:
            if (
                call.name not in names
                or call.kind not in DERIVED_KINDS
                or call.call_id in journaled
                or call.call_id in compensations
                or (turn_id is not None and call.turn_id != turn_id)
            ):
                continue
            if call.status == "ok":
                planned.append(_effect_of_call(call, "applied"))
            elif call.status == "interrupted":
                planned.append(_effect_of_call(call, "unknown"))
            elif call.status == "running":
                running.append(_effect_of_call(call, "running").effect)
    planned.sort(key=lambda p: (p.effect.started_at, p.effect.effect_id), reverse=True)
    return UndoPlan(session_id, turn_id, planned, running)

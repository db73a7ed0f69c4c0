"""``undo()``: compensate the effects of a turn, or of a whole session, newest first.

Each compensation runs as a call of kind ``undo`` in a new turn of the same session (agent
``undo``), under which anything it calls is recorded. Before it runs, its effect is claimed
by compare-and-set (``applied`` -> ``undoing``), so of two undos racing, in any processes,
one compensates it and the other stops there; after it, the effect is ``undone``. A
compensation that raises puts its effect back, is recorded ``error`` and stops the undo: the
older effects stay applied, and a later ``undo()`` resumes with it. An effect of unknown
outcome (its process died mid-call) stops the undo too, unless ``unknown`` says otherwise.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import inspect
import time
from contextlib import ExitStack
from typing import Any

from .._calls import call_scope
from .._capture import capture
from .._recording import describe_error
from .._runtime import UndoError, process_owner, validate_session_id
from .._sessions import session_context
from ..stores import Store, open_store
from .compensations import compensation_for, register_undo
from .effects import Effect, compensating
from .files import RefusedRestore, file_effect, forget_snapshot, restore
from .plan import Planned, UndoPlan, plan_effects

# The public undo API is exported from here: what declares, journals, plans and runs it.
__all__ = [
    "UNDO_AGENT",
    "Effect",
    "UndoPlan",
    "describe_effect",
    "file_effect",
    "register_undo",
    "run_plan",
    "undo",
]

UNDO_AGENT = "undo"
"""The agent of the turns undo records its compensations in."""

_UNKNOWN = ("stop", "undo", "skip")


def describe_effect(effect: Effect) -> str:
    """``tool create_ticket (call ...)``, ``file /path (call ...)``, for messages and plans (the path a file
    effect's restore acts on; what a refused row claims, marked as such)."""
    if effect.refused:
        return f"unverified effect {effect.effect_id} ({effect.kind} {effect.name!r}, call {effect.call_id})"
    if effect.kind == "file":
        return f"file {effect.inputs['path']} (call {effect.call_id})"
    framework = f" ({effect.framework})" if effect.framework else ""
    return f"tool {effect.name}{framework} (call {effect.call_id})"


def _missing(plan: UndoPlan) -> list[Effect]:
    return [e for e in plan if e.kind != "file" and not e.refused and compensation_for(e.name) is None]


def undo(
    session_id: str,
    turn_id: str | None = None,
    *,
    dry_run: bool = False,
    unknown: str = "stop",
    store: Store | str | None = None,
) -> UndoPlan:
    """Compensate the effects of turn ``turn_id`` (or, without it, of the whole session), newest first.

    Returns the plan: with ``dry_run=True``, the effects still to compensate (nothing is changed);
    otherwise the effects compensated, in order, recorded in the new turn ``plan.undo_turn_id``.
    ``unknown`` decides an effect whose outcome is unknown (its process died mid-call): ``"stop"``
    there (the default), ``"undo"`` it as if it happened, or ``"skip"`` it (it stays planned).
    ``store`` is the session's store (default: the default store). Raises :class:`UndoError` when
    it stops early, and before compensating anything if a planned tool has no compensation
    declared in this process (import the module that declares it).
    """
    validate_session_id(session_id)
    if turn_id is not None:
        validate_session_id(turn_id, what="turn id")
    if unknown not in _UNKNOWN:
        raise ValueError(f"unknown must be one of {', '.join(_UNKNOWN)}, not {unknown!r}")
    target = open_store(store)
    plan = plan_effects(target, session_id, turn_id)
    if dry_run:
        return plan
    return run_plan(target, plan, unknown)


def run_plan(store: Store, plan: UndoPlan, unknown: str = "stop") -> UndoPlan:
    """Compensate exactly the effects of ``plan`` (from a dry run, as it was shown), as :func:`undo` does.

    An effect another process moved since the plan was read is left to it (its claim fails).
    """
    if unknown not in _UNKNOWN:
        raise ValueError(f"unknown must be one of {', '.join(_UNKNOWN)}, not {unknown!r}")
    missing = _missing(plan)
    if missing:
        names = ", ".join(sorted({e.name for e in missing}))
        raise UndoError(
            f"no compensation is declared in this process for {names}: import the module that "
            "declares it (`openprogram undo --import MODULE`)",
            missing[0],
        )
    return _run(store, plan, unknown)


def _run(store: Store, plan: UndoPlan, unknown: str) -> UndoPlan:
    me = process_owner()
    done: list[Planned] = []
    turn_id: str | None = None
    if plan.planned:
        # Seen alive by undos on other hosts from now on (the writer beats while the undo turn runs).
        store.heartbeat(me, time.time())
    with ExitStack() as turn:
        for planned in plan.planned:
            effect = planned.effect
            if effect.refused:  # whatever `unknown` says: nothing vouches for what the row asks
                raise UndoError(f"undo refuses {describe_effect(effect)}: {effect.refused}", effect, _effects(done))
            if effect.state == "unknown" and unknown != "undo":
                if unknown == "skip":
                    continue
                raise UndoError(
                    f"the outcome of {describe_effect(effect)} is unknown: it was interrupted, or its process "
                    "died, mid-call. If it happened, undo it with unknown='undo' (CLI: --unknown undo); else "
                    "skip it with unknown='skip'",
                    effect,
                    _effects(done),
                )
            claimed = "busy" if effect.state == "undoing" else _claim(store, planned, me)
            if claimed == "undone":
                continue  # another undo did it meanwhile
            if claimed == "busy":
                raise UndoError(
                    f"{describe_effect(effect)} is being undone by another process; try again once it has finished",
                    effect,
                    _effects(done),
                )
            if turn_id is None:
                turn_id = turn.enter_context(session_context(plan.session_id, agent_id=UNDO_AGENT, store=store)).turn_id
            _compensate(store, planned, me, _effects(done))
            done.append(planned)
    return UndoPlan(plan.session_id, plan.turn_id, done, undo_turn_id=turn_id)


def _effects(done: list[Planned]) -> tuple[Effect, ...]:
    return tuple(p.effect for p in done)


def _claim(store: Store, planned: Planned, me: str) -> str:
    """``claimed`` (this undo compensates it), ``undone`` (another did meanwhile) or ``busy`` (another is at it)."""
    effect = planned.effect
    if planned.row is not None:
        store.add_effects([planned.row])  # read from its call: journaled now (a no-op if another undo did)
    state, claimed_by = planned.state, planned.claimed_by
    for _ in range(2):
        if store.move_effect(
            effect.effect_id, state, claimed_by, {"state": "undoing", "claimed_by": me, "claimed_at": time.time()}
        ):
            return "claimed"
        now = next((row for row in store.list_effects(effect.session_id) if row[0] == effect.effect_id), None)
        if now is None or now[7] == "undone":
            return "undone"
        if now[7] != effect.state:  # not a pending outcome landing meanwhile (pending -> as planned)
            return "busy"
        state, claimed_by = now[7], now[13]
    return "busy"


def _compensate(store: Store, planned: Planned, me: str, done: tuple[Effect, ...]) -> None:
    effect = planned.effect
    # A compensation that failed puts the effect back as it was planned (a stale claim as applied).
    prior = "unknown" if effect.state == "unknown" else "applied"
    inputs = {"effect": effect.effect_id, "idempotency_key": effect.idempotency_key}
    attributes = {"undoes": effect.call_id, "turn": effect.turn_id, "framework": effect.framework}
    scope = call_scope("undo", effect.name, inputs=inputs, attributes={k: v for k, v in attributes.items() if v})
    token = compensating.set(True)
    try:
        with scope:
            scope.set_output(capture(_run_compensation(effect)))
    except BaseException as exc:  # Ctrl-C included: the claim is released, a later undo retries it
        released = {"state": prior, "claimed_by": None, "claimed_at": None, "error": describe_error(exc)}
        store.move_effect(effect.effect_id, "undoing", me, released)
        if not isinstance(exc, Exception):
            raise
        if isinstance(exc, RefusedRestore):
            raise UndoError(f"undo refuses {describe_effect(effect)}: {exc}", effect, done) from exc
        raise UndoError(
            f"the compensation of {describe_effect(effect)} failed: {describe_error(exc)}", effect, done
        ) from exc
    finally:
        compensating.reset(token)
    store.move_effect(
        effect.effect_id, "undoing", me, {"state": "undone", "undo_call_id": scope.call_id, "error": None}
    )
    if effect.kind == "file":
        forget_snapshot(effect)


def _run_compensation(effect: Effect) -> Any:
    if effect.kind == "file":
        return restore(effect)
    found = compensation_for(effect.name)
    if found is None:  # checked before the undo began; declared away meanwhile
        raise LookupError(f"no compensation is declared for {effect.name!r}")
    result = found.undo(effect)
    if inspect.isawaitable(result):
        result = _await(result)
    return result


def _await(awaitable: Any) -> Any:
    """Run a coroutine compensation to its end, also when this thread is running an event loop."""

    async def main() -> Any:
        return await awaitable

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(main())
    # asyncio.run cannot nest: a thread of its own (the context, with `compensating`, goes along).
    context = contextvars.copy_context()

    def in_thread() -> Any:
        return context.run(asyncio.run, main())

    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(in_thread).result()

"""The undo journal: what undoable calls changed, written to the session's store before their bodies run.

An undoable tool (``@openprogram.tool`` with ``.undo``) runs its body as
:mod:`openprogram._undo.journaled` makes it: before the body starts, a ``pending`` effect
naming its call is durable in the store. The outcome is written in the background: when the
body returns the effect is ``applied``, with the call's output; when it raises, the effect is
dropped (a failed call has nothing to undo); when it is interrupted (cancelled, Ctrl-C) its
outcome is ``unknown``. When the process dies meanwhile the effect stays ``pending``, which
readers resolve to ``unknown`` once that process is gone. Only undoable calls write here:
every other call costs what it did. Compensations record no effects: they are the undo.
"""

from __future__ import annotations

import atexit
import dataclasses
import hashlib
import json
import logging
import os
import threading
import time
from collections.abc import Callable
from contextvars import ContextVar
from typing import Any

from .._capture import capture_json
from .._recording import StoreUnavailable, call_briefly, call_later, call_var, session_var, status_of
from .._runtime import as_text, process_owner
from ..stores import EffectOutcome, EffectRow, Store, on_read
from .signing import column_text, key_path, refusal, sealed, sealed_output

__all__ = [
    "Effect",
    "Pending",
    "compensating",
    "journal",
    "pending_row",
    "settle",
    "write_outcomes",
    "write_pending",
]

logger = logging.getLogger("openprogram")


@dataclasses.dataclass(frozen=True)
class Effect:
    """One effect of a recorded call, as its compensation receives it.

    ``inputs`` and ``output`` are the call's arguments and result as captured (JSON values:
    bounded, secrets redacted). ``idempotency_key`` is the same for this effect in every
    process and every attempt: hand it to an external API so a retried compensation is
    applied once. ``state`` is ``applied``, or ``unknown`` when the call's process died (or
    the call was interrupted) mid-call, so ``output`` is missing and the effect may or may
    not have happened. ``kind`` is ``tool`` (undone by the tool's compensation) or ``file``
    (a :func:`openprogram.file_effect` snapshot, restored by openprogram). ``refused`` says why
    undo will not act on it (its journal row was not signed in this ``$OPENPROGRAM_HOME``), else None.
    """

    call_id: str
    name: str
    inputs: Any
    output: Any
    idempotency_key: str
    session_id: str
    turn_id: str
    kind: str = "tool"
    state: str = "applied"
    framework: str | None = None
    started_at: float = 0.0
    effect_id: str = ""
    refused: str | None = None

    @property
    def outcome_unknown(self) -> bool:
        """True when the call's process died (or the call was interrupted) before its outcome was known."""
        return self.state == "unknown"

    @classmethod
    def from_row(cls, row: EffectRow, state: str | None = None) -> Effect:
        """The effect a journal row holds (``state`` as resolved by the reader, else the row's), ``refused``
        unless its signature is this home's."""
        refused = refusal(row)
        try:
            inputs, output = _loads(column_text(row[8], "inputs")), _loads(column_text(row[9], "output"))
        except ValueError:
            inputs, output, refused = None, None, refused or "its inputs or output are not JSON"
        return cls(
            call_id=row[1],
            name=row[5],
            inputs=inputs,
            output=output,
            idempotency_key=idempotency_key(row[0]),
            session_id=row[2],
            turn_id=row[3],
            kind=row[4],
            state=state or row[7],
            framework=row[6],
            started_at=row[10],
            effect_id=row[0],
            refused=refused,
        )


def idempotency_key(effect_id: str) -> str:
    """A key derived from the effect's id only: the same wherever and however often it is computed."""
    return "openprogram-undo-" + hashlib.sha256(effect_id.encode()).hexdigest()[:32]


def _loads(text: str | None) -> Any:
    try:
        return None if text is None else json.loads(text)
    except RecursionError as exc:  # nested past what the parser takes: unusable, as bad JSON is
        raise ValueError("nested too deep") from exc


compensating: ContextVar[bool] = ContextVar("openprogram.compensating", default=False)
"""True while a compensation runs: the undoable calls and file changes it makes are not journaled."""


# --- writing the journal --------------------------------------------------------------------

#: A journaled effect: the store holding it and its id.
Pending = tuple[Store, str]

_warned: set[tuple[str, str]] = set()  # (store url, what failed)
_warned_lock = threading.Lock()


def pending_row(kind: str, name: str, inputs_json: Callable[[], str], effect_id: str | None = None) -> EffectRow | None:
    """The signed ``pending`` row of an effect of the call now running, or None outside a session, in a
    compensation, or when the undo key is unusable (warned once: the call runs, it cannot be undone).

    Read in the caller's context (the current session and call); ``inputs_json()`` only when there is a row.
    """
    handle = session_var.get()
    if handle is None or compensating.get():
        return None
    call_id = as_text(call_var.get()) or handle.root_call_id
    row: EffectRow = (
        effect_id or call_id,
        call_id,
        handle.session_id,
        handle.turn_id,
        kind,
        name,
        None,
        "pending",
        inputs_json(),
        None,
        time.time(),
        None,
        process_owner(),
        None,
        None,
        None,
        None,
    )
    try:
        return sealed(row)
    except OSError as exc:
        _warn(
            handle.store,
            "key",
            f"cannot sign the effect of {name!r} with the undo key {key_path()} ({exc}); the call runs, but it "
            "cannot be undone",
        )
        return None


def write_pending(store: Store, row: EffectRow) -> Pending | None:
    """Make the ``pending`` row durable; None when the store cannot take it (warned once per store).

    During an outage of the store, or when it does not answer within ``CALLER_WAIT`` seconds, the
    call is not held up: the row is written in the background once the store answers, and the
    call is undoable from then on (its outcome read from its call, see ``plan_effects``), but not
    if this process ends before that.
    """
    try:
        call_briefly(store, store.add_effects, [row])
    except StoreUnavailable as exc:
        call_later(store, store.add_effects, [row])  # the insert ignores a row already there
        _warn(
            store,
            "journal later",
            f"store {store.url} is unavailable ({exc}); effects of undoable calls are journaled once it "
            "answers, and cannot be undone if this process ends before that",
        )
        return store, row[0]
    except Exception as exc:
        _warn(
            store,
            "journal",
            f"cannot journal the effect of {row[5]!r} in store {store.url} ({exc}); the call "
            "runs, but it cannot be undone",
        )
        return None
    return store, row[0]


def journal(kind: str, name: str, inputs_json: Callable[[], str], effect_id: str | None = None) -> Pending | None:
    """Journal an effect of the call now running, durably; None when nothing is journaled."""
    handle = session_var.get()
    row = pending_row(kind, name, inputs_json, effect_id)
    if handle is None or row is None:
        return None
    return write_pending(handle.store, row)


def settle(pending: Pending, exc: BaseException | None, output: Any = None) -> None:
    """End a journaled effect: ``applied`` with ``output``, ``unknown`` if interrupted, dropped if the call failed.

    Written in the background (:func:`write_outcomes`): what must precede a tool's body is its
    pending effect; an outcome lost in a crash leaves it pending, read as its call's outcome
    (or ``unknown``).
    """
    store, effect_id = pending
    outcome = "ok" if exc is None or isinstance(exc, GeneratorExit) else status_of(exc)
    if outcome == "ok":
        _outcomes.put(store, (effect_id, "applied", _signed_output(effect_id, capture_json(output)), time.time()))
    elif outcome == "interrupted":
        _outcomes.put(store, (effect_id, "unknown", None, time.time()))
    else:
        _outcomes.put(store, (effect_id, None, None, time.time()))


def _signed_output(effect_id: str, output: str) -> str:
    try:
        return sealed_output(effect_id, output)
    except OSError:  # the key went away since the effect was signed: undo will refuse it as unsigned
        return output


OUTCOMES_INTERVAL = 0.05
"""Seconds the outcomes thread gathers outcomes before writing them (reads write them at once)."""


class _Outcomes:
    """Outcomes of journaled effects, written by one daemon thread in a transaction per store and batch."""

    def __init__(self) -> None:
        self.queued: list[tuple[Store, EffectOutcome]] = []
        self.writing = threading.Lock()
        self.wake = threading.Event()
        self.thread: threading.Thread | None = None

    def put(self, store: Store, outcome: EffectOutcome) -> None:
        self.queued.append((store, outcome))
        if self.thread is None or not self.thread.is_alive():
            with self.writing:
                if self.thread is None or not self.thread.is_alive():
                    self.thread = threading.Thread(target=self._run, name="openprogram-effects", daemon=True)
                    self.thread.start()
        self.wake.set()

    def _run(self) -> None:
        while True:
            self.wake.wait()
            time.sleep(OUTCOMES_INTERVAL)  # a batch a cycle: one commit for the outcomes of many calls
            self.wake.clear()
            self.write()

    def write(self) -> None:
        """Write every outcome queued so far; first wait for any the thread is writing."""
        with self.writing:
            taken = self.queued[:]  # what is appended meanwhile lies past this slice
            del self.queued[: len(taken)]
            by_store: dict[int, tuple[Store, list[EffectOutcome]]] = {}
            for store, outcome in taken:
                by_store.setdefault(id(store), (store, []))[1].append(outcome)
            for store, outcomes in by_store.values():
                try:
                    store.settle_effects(outcomes)
                except Exception as error:  # they stay pending: read as their calls' outcomes
                    failed = f"cannot record the outcome of {len(outcomes)} effect(s) in store {store.url}"
                    _warn(store, "outcomes", f"{failed} ({error}); they are read from their calls")


_outcomes = _Outcomes()


def write_outcomes(store: Store | None = None) -> None:
    """Make the outcomes of this process's journaled effects durable now (before the journal is read)."""
    _outcomes.write()


on_read(write_outcomes)
atexit.register(write_outcomes)


def _after_fork_in_child() -> None:
    global _outcomes
    _outcomes = _Outcomes()  # the parent's queue and thread are the parent's


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


def _warn(store: Store, what: str, message: str) -> None:
    """A warning the first time ``what`` fails for this store, debug messages after it (a busy agent's log
    stays readable)."""
    with _warned_lock:
        first = (store.url, what) not in _warned
        _warned.add((store.url, what))
    logger.log(logging.WARNING if first else logging.DEBUG, "openprogram: %s", message)

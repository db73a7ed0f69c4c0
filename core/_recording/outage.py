"""Store outages: what this process knows about the stores it cannot use, shared by every path into them.

The writer notes an outage when a write fails and its end when a write succeeds again (it keeps
retrying in the background). A call the agent's own thread makes into a store goes through
:func:`call_briefly`: during a known outage it is not made at all, and otherwise it waits at most
:data:`CALLER_WAIT` seconds; a store that has not answered by then is in an outage from that
moment (the call goes on on a thread of its own, its result unused). So a locked or hung store
costs the agent's thread one short wait per outage, not a busy timeout per call. What must still
reach the store is handed to :func:`call_later`, made once the store answers again.
"""

from __future__ import annotations

import collections
import logging
import os
import queue
import threading
import weakref
from collections.abc import Callable
from typing import Any, TypeVar

from ..stores import Store

__all__ = [
    "CALLER_WAIT",
    "MAX_LATER",
    "StoreUnavailable",
    "call_briefly",
    "call_later",
    "in_outage",
    "note_outage",
    "note_recovery",
]

logger = logging.getLogger("openprogram")

T = TypeVar("T")


def _env_seconds(name: str, default: float) -> float:
    text = os.environ.get(name, "").strip()
    if not text:
        return default
    try:
        return max(float(text), 0.01)
    except ValueError:
        logger.warning("openprogram: %s=%r is not a number of seconds; using %s", name, text, default)
        return default


CALLER_WAIT = _env_seconds("OPENPROGRAM_STORE_WAIT", 1.0)
"""Seconds the agent's thread waits for a store's answer before taking the store as unavailable
(``OPENPROGRAM_STORE_WAIT`` sets it)."""


class StoreUnavailable(Exception):
    """The store is in an outage, or did not answer within :data:`CALLER_WAIT` seconds."""


# store -> why it is unavailable; the writer's retries end it (see note_recovery). Weak: a store
# dropped is forgotten (an id() key could be reused by a new store, taken as unavailable).
_outages: weakref.WeakKeyDictionary[Store, str] = weakref.WeakKeyDictionary()


def in_outage(store: Store) -> bool:
    """Whether ``store`` is known to be unavailable now (cheap: one dict lookup)."""
    return store in _outages


def note_outage(store: Store, reason: str) -> bool:
    """Remember that ``store`` is unavailable; True when this begins the outage."""
    begun = store not in _outages
    _outages[store] = reason
    return begun


def note_recovery(store: Store) -> bool:
    """Forget the outage of ``store`` (the writer has written to it again); True when there was one."""
    ended = _outages.pop(store, None) is not None
    if ended and _later:
        _later_wake.set()
    return ended


def call_briefly(store: Store, call: Callable[..., T], *args: Any, wait: float | None = None) -> T:
    """``call(*args)``, a call into ``store``, made for the agent's thread with a bounded wait.

    Raises :class:`StoreUnavailable` at once during a known outage of ``store``, and after
    ``wait`` seconds (default :data:`CALLER_WAIT`) when the store has not answered; the call then
    goes on in the background, so whatever it writes is still written when the store answers.
    An exception of the call itself is raised as it is (and begins an outage: the store cannot be used).
    """
    reason = _outages.get(store)
    if reason is not None:
        raise StoreUnavailable(reason)
    outcome: list[Any] = []
    done, late = threading.Event(), threading.Event()

    def run() -> None:
        try:
            outcome.append((True, call(*args)))
        except BaseException as exc:  # handed to the waiting thread, if it still waits
            outcome.append((False, exc))
        done.set()
        if outcome[0][0] and late.is_set():
            # It answered after all (a slow answer on a loaded machine, not a dead store): no outage.
            note_recovery(store)

    _submit(store, run)
    seconds = CALLER_WAIT if wait is None else wait
    if not done.wait(seconds):
        note_outage(store, f"no answer within {seconds:g}s")
        late.set()
        if done.is_set() and outcome[0][0]:  # it answered as the outage was noted
            note_recovery(store)
        raise StoreUnavailable(f"no answer within {seconds:g}s")
    ok, value = outcome[0]
    if not ok:
        note_outage(store, " ".join(str(value).split())[:300] or type(value).__name__)
        raise value
    return value  # type: ignore[no-any-return]


#: Seconds a store's caller worker waits for work before it ends (a new call starts another).
WORKER_IDLE = 30.0


class _Worker:
    """The thread that makes one store's calls for the agent's threads (one handoff, no thread started a call)."""

    __slots__ = ("alive", "jobs")

    def __init__(self) -> None:
        self.jobs: queue.SimpleQueue[Callable[[], None]] = queue.SimpleQueue()
        self.alive = True
        threading.Thread(target=self._run, name="openprogram-store-call", daemon=True).start()

    def _run(self) -> None:
        while True:
            try:
                job = self.jobs.get(timeout=WORKER_IDLE)
            except queue.Empty:
                with _workers_lock:  # ends only if no job came in meanwhile (jobs are put under the lock)
                    if self.jobs.empty():
                        self.alive = False
                        return
                continue
            job()


_workers: weakref.WeakKeyDictionary[Store, _Worker] = weakref.WeakKeyDictionary()
_workers_lock = threading.Lock()


def _submit(store: Store, job: Callable[[], None]) -> None:
    """Run ``job`` on ``store``'s worker: its calls are made one at a time, apart from other stores'."""
    with _workers_lock:
        worker = _workers.get(store)
        if worker is None or not worker.alive:
            worker = _workers[store] = _Worker()
        worker.jobs.put(job)


MAX_LATER = 10_000
"""Store calls kept for later at most; past it the oldest are dropped (counted, said once)."""
LATER_RETRY = 1.0
"""Seconds between tries of the calls kept for later (an outage's end wakes them at once)."""

_later: collections.deque[tuple[Store, Callable[..., Any], tuple[Any, ...]]] = collections.deque()
_later_wake = threading.Event()
_later_thread: threading.Thread | None = None
_later_lock = threading.Lock()
_dropped_later = [0]


def call_later(store: Store, call: Callable[..., Any], *args: Any) -> None:
    """Make ``call(*args)`` in the background once ``store`` answers, retried until it succeeds.

    For writes that may be repeated (an insert that ignores a row already there). Past
    :data:`MAX_LATER` waiting calls the oldest is dropped.
    """
    global _later_thread
    if len(_later) >= MAX_LATER:
        _later.popleft()
        _dropped_later[0] += 1
        if _dropped_later[0] == 1:
            logger.warning(
                "openprogram: more than %d writes wait for unavailable stores; the oldest are dropped", MAX_LATER
            )
    _later.append((store, call, args))
    if _later_thread is None or not _later_thread.is_alive():
        with _later_lock:
            if _later_thread is None or not _later_thread.is_alive():
                _later_thread = threading.Thread(target=_run_later, name="openprogram-store-later", daemon=True)
                _later_thread.start()


def _run_later() -> None:
    while True:
        _later_wake.wait(LATER_RETRY)
        _later_wake.clear()
        for _ in range(len(_later)):  # each waiting call once per round; a failed one goes to the back
            try:
                item = _later.popleft()
            except IndexError:
                break
            store, call, args = item
            if store in _outages:
                _later.append(item)
                continue
            try:
                call(*args)
            except Exception as exc:  # still unavailable: the writer's retries will end the outage
                note_outage(store, " ".join(str(exc).split())[:300] or type(exc).__name__)
                _later.append(item)


def _after_fork_in_child() -> None:
    global _later_thread, _workers_lock
    _later.clear()  # the parent's calls are the parent's to make
    _later_thread = None
    _workers.clear()  # their threads do not exist in the child
    _workers_lock = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)

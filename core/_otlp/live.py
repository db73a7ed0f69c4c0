"""Live OTLP export: every call its store has written is sent as a span, from one background thread.

``configure(export="otlp")`` or ``OPENPROGRAM_EXPORT=otlp`` turns it on. The writer hands
over each batch it wrote, which costs it an append; the exporter's thread puts back what the
rows refer to (prompts, long texts: see :mod:`.prompts`), builds the spans and sends them in
batches, taking at most :data:`CPU_SHARE` of the process's time. A backend that refuses or
cannot be reached is warned about once per outage and retried with back-off; what waits is
bounded (past :data:`MAX_QUEUED_CALLS` the oldest calls are dropped from export), and the
store keeps everything for ``openprogram export otlp``. At exit what is waiting is sent within
:data:`EXIT_SECONDS`; what is still not sent then is named in one warning, with the command that
sends it later.
"""

from __future__ import annotations

import atexit
import logging
import math
import os
import shlex
import threading
import time
from collections import deque
from typing import TYPE_CHECKING

from .._capture import content_captured
from .._recording import flush, flush_before_exit, on_calls_written
from ..stores import CallRows, MessageRow, Store, is_default_store
from .prompts import LivePrompts
from .sender import MAX_BATCH, Sender, require_otlp, safe_endpoint, traces_endpoint, unreachable

if TYPE_CHECKING:
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import ReadableSpan

__all__ = ["ENV_EXPORT", "EXIT_SECONDS", "MAX_QUEUED_CALLS", "export_choice", "flush_export", "set_export"]

logger = logging.getLogger("openprogram")

ENV_EXPORT = "OPENPROGRAM_EXPORT"
MAX_QUEUED_CALLS = 20_000
"""Calls waiting to be exported (beyond one writer batch) past which the oldest are dropped from export."""
EXIT_SECONDS = 3.0
"""How long an exiting process waits for its last spans to be sent."""
BATCH_DELAY = 0.2
"""Seconds the exporter waits after a batch arrives, so that one request carries what follows it."""
CPU_SHARE = 0.1
"""The most of the process's time the exporter's thread takes: after each batch it rests nine times the CPU time
the batch took (building and encoding spans holds the GIL the agent's threads need). Not while the process exits."""
_RETRY_MAX = 30.0
_OFF = frozenset({"", "none", "off", "false", "0", "no"})

_choice: str | None = None  # configured; None: OPENPROGRAM_EXPORT decides, when first needed
_decided = False
_live: _LiveExport | None = None
_lock = threading.Lock()


def set_export(choice: str | None) -> None:
    """Export live over OTLP (``"otlp"``), or not (``"none"``), or as ``OPENPROGRAM_EXPORT`` says (None).

    ``"otlp"`` raises :class:`openprogram.DidNotEnable` when ``openprogram[otlp]`` is not installed.
    """
    global _choice, _decided
    if choice is not None:
        if not isinstance(choice, str) or choice.strip().lower() not in ("otlp", "none"):
            raise ValueError(f"export must be 'otlp' or 'none', not {choice!r}")
        choice = choice.strip().lower()
        if choice == "otlp":
            require_otlp("configure(export='otlp')")
    with _lock:
        _choice, _decided = choice, False
    _decide()


def export_choice() -> str:
    """``"otlp"`` while calls are exported live, else ``"none"``."""
    _decide()
    live = _live
    return "otlp" if live is not None and live.enabled else "none"


def flush_export(timeout: float = 30.0) -> bool:
    """Block until every call recorded so far has been exported live; False if the backend is failing or time ran
    out. (Nothing else waits for the export: ``openprogram.flush()`` waits for the store only.)"""
    flush(timeout)
    live = _live
    return True if live is None else live.wait_sent(timeout)


def _decide() -> None:
    """Turn live export on or off as configured, else as the environment says."""
    global _decided, _live
    with _lock:
        if _decided:
            return
        _decided = True
        choice = _choice
        if choice is None:
            raw = os.environ.get(ENV_EXPORT, "")
            choice = raw.strip().lower()
            if choice not in _OFF and choice != "otlp":
                logger.warning("openprogram: %s=%r is not 'otlp' or 'none'; exporting nothing", ENV_EXPORT, raw)
                choice = "none"
        on = choice == "otlp"
        if on and _choice is None:
            try:
                require_otlp(f"{ENV_EXPORT}=otlp")
            except Exception as exc:  # from the environment: said once, never raised into the program
                logger.error("openprogram: %s; exporting nothing", exc)
                on = False
        if on and (_live is None or not _live.enabled):
            _live = _LiveExport()  # reads the OTEL_EXPORTER_OTLP_* variables anew
            _live.start()
        elif not on and _live is not None:
            _live.stop()


def _written(store: Store, rows: CallRows, messages: list[MessageRow]) -> None:
    """The writer's hook: a batch its store has written (on the writer's thread: queue it, nothing more)."""
    if not _decided:
        _decide()
    live = _live
    if live is not None and live.enabled:
        live.take(store, rows, messages)


class _LiveExport:
    """The calls waiting to be exported, and the thread that sends them."""

    def __init__(self) -> None:
        self.enabled = True
        self._lock = threading.Lock()
        self._batches: deque[tuple[Store, CallRows, list[MessageRow]]] = deque()
        self._queued = 0  # call rows in _batches
        self._spans: list[ReadableSpan] = []  # built, not sent yet (the head is the batch being retried)
        self._dropped = 0
        self._total_dropped = 0  # never reset: what the exit warning counts
        self._work = threading.Event()
        self._idle = threading.Event()
        self._idle.set()
        self._closing = threading.Event()
        self._deadline = 0.0
        self._sender: Sender | None = None
        self._resource: Resource | None = None
        self._failing = False
        self._failure = ""  # why the last send failed
        self._backoff = 1.0
        self._prompts = LivePrompts()  # the exporter thread's only
        self._began = time.time()
        self._store: Store | None = None  # the store of the latest batch: where what was not sent can be read
        self._unsent: dict[str, None] = {}  # sessions of the calls dropped from export, in order

    # --- the writer's side --------------------------------------------------------

    def take(self, store: Store, rows: CallRows, messages: list[MessageRow]) -> None:
        """Queue a written batch (its running rows are skipped later); past the bound the oldest are dropped."""
        with self._lock:
            self._store = store
            self._batches.append((store, rows, messages))
            self._queued += len(rows)
            if self._queued + len(self._spans) > MAX_QUEUED_CALLS:
                self._drop_oldest()
            self._idle.clear()
        self._work.set()
        if self._closing.is_set():  # the writer's last batches at exit: sent before the process ends
            self._wait_until_deadline()

    def _drop_oldest(self) -> None:
        dropped = 0
        while self._queued + len(self._spans) > MAX_QUEUED_CALLS and len(self._batches) > 1:
            _, rows, _ = self._batches.popleft()
            self._queued -= len(rows)
            dropped += len(rows)
            self._unsent.update(dict.fromkeys(row[1] for row in rows))
        if dropped and not self._dropped:
            logger.warning(
                "openprogram: more than %d calls are waiting to be exported; the oldest are left to the "
                "store (send them with `openprogram export otlp SESSION_ID`)",
                MAX_QUEUED_CALLS,
            )
        self._dropped += dropped
        self._total_dropped += dropped

    def stop(self) -> None:
        """Export nothing more; what was handed over is still sent, then the thread ends."""
        self.enabled = False
        self._work.set()

    def start(self) -> None:
        """Start the exporter's thread, which first loads the exporter (so that a short program's calls are sent
        at its exit without importing anything then)."""
        threading.Thread(target=self._run, name="openprogram-otlp-export", daemon=True).start()

    # --- waiting for it -------------------------------------------------------------

    def waiting(self) -> int:
        """Calls handed over and not sent yet (bounded by :data:`MAX_QUEUED_CALLS` plus one writer batch)."""
        with self._lock:
            return self._queued + len(self._spans)

    def wait_sent(self, timeout: float) -> bool:
        """Wait until nothing waits to be sent; False at once while the backend is failing, or when time ran out."""
        self._work.set()
        deadline = time.monotonic() + timeout
        while not self._idle.wait(0.05):
            if self._failing or time.monotonic() > deadline:
                return False
        return not self._failing

    def close(self) -> None:
        """At exit: send what waits, for :data:`EXIT_SECONDS` at most; then say what was not sent, once."""
        self._deadline = time.monotonic() + EXIT_SECONDS
        store = self._store
        if store is not None:  # the writer's last batches first, so that the count below holds them
            flush_before_exit(store, EXIT_SECONDS)  # at once during an outage of the store
        self._closing.set()
        self._work.set()
        sender = self._sender  # None while the thread still loads the exporter (a short program)
        refused = unreachable(sender.endpoint if sender else traces_endpoint()) if self.waiting() else None
        if refused is None:  # a backend that refuses connections takes nothing in the time left: no wait
            self._wait_until_deadline()
        self._report_unsent(refused)

    def _report_unsent(self, refused: str | None) -> None:
        """One warning naming how many spans of how many sessions were not exported, and how to send them."""
        with self._lock:
            sessions = dict(self._unsent)
            unsent = len(self._spans) + self._total_dropped
            for _, rows, _ in self._batches:
                ended = [row for row in rows if row[7] != "running"]  # a running row is never a span
                unsent += len(ended)
                sessions.update(dict.fromkeys(row[1] for row in ended))
            for span in self._spans:
                sessions[str((span.attributes or {}).get("session.id", ""))] = None
            sessions.pop("", None)
            store = self._store
        if not unsent or not sessions:
            return
        named = store is not None and (os.environ.get("OPENPROGRAM_STORE") or not is_default_store(store))
        where = f"--store {shlex.quote(store.url)} " if named and store is not None else ""
        if len(sessions) <= 3:
            which = " ".join(sessions)
        else:  # sessions updated since this process began (sending one again is safe: spans keep their ids)
            which = f"--since {math.ceil((time.time() - self._began) / 60) + 1}m"
        why = refused or self._failure or f"not sent within the {EXIT_SECONDS:g} s an exiting process waits"
        logger.warning(
            "openprogram: live export: %d span%s of %d session%s not exported (%s); they are in the store: "
            "send them with `openprogram %sexport otlp %s`",
            unsent,
            "s" * (unsent != 1),
            len(sessions),
            "s" * (len(sessions) != 1),
            why,
            where,
            which,
        )

    def _wait_until_deadline(self) -> None:
        remaining = self._deadline - time.monotonic()
        if remaining > 0:
            self._idle.wait(remaining)

    # --- the exporter's thread -------------------------------------------------------

    def _run(self) -> None:
        try:
            from .spans import default_resource

            self._resource = default_resource()
            self._sender = Sender()
        except Exception as exc:  # e.g. a broken install: said once, and nothing is exported
            logger.error("openprogram: live OTLP export cannot start (%s); exporting nothing", exc)
            self.enabled = False
            with self._lock:
                self._batches.clear()
                self._queued = 0
            self._idle.set()
            return
        while True:
            self._work.wait()
            if not self._closing.is_set():
                self._closing.wait(BATCH_DELAY)  # let the batch gather what follows it; cut short at exit
            self._work.clear()
            gave_up = False
            try:
                gave_up = self._send_waiting()
            except Exception:  # the exporter must survive its own bugs; the calls stay in the store
                logger.exception("openprogram: live OTLP export failed; dropping the calls it was sending")
                with self._lock:
                    self._spans.clear()
            with self._lock:
                if gave_up or (not self._batches and not self._spans):
                    self._caught_up()
                    if not self.enabled:
                        return

    def _send_waiting(self) -> bool:
        """Send until nothing waits; True when it gave up (exiting with the backend failing)."""
        while True:
            if self._failing and (self._closing.is_set() or not self.enabled):
                return True  # exiting, or turned off: no more tries; the store has every call
            started = time.thread_time()
            batch = self._next_batch()
            if not batch:
                return False
            assert self._sender is not None, "set when the thread started"
            failure = self._sender.send(batch)
            worked = time.thread_time() - started
            if failure is None:
                with self._lock:
                    del self._spans[: len(batch)]
                self._recovered()
                self._closing.wait(worked * (1 / CPU_SHARE - 1))  # cut short at exit
                continue
            self._failed(failure)
            self._closing.wait(max(self._backoff, worked * (1 / CPU_SHARE - 1)))
            self._backoff = min(self._backoff * 2, _RETRY_MAX)

    def _next_batch(self) -> list[ReadableSpan]:
        from .spans import spans_of

        assert self._resource is not None, "set when the thread started"
        while len(self._spans) < MAX_BATCH:
            with self._lock:
                if not self._batches:
                    break
                store, rows, messages = self._batches.popleft()
                self._queued -= len(rows)
            content = content_captured()
            if content:
                self._prompts.add_messages(messages)
            prompts = self._prompts.resolver(store) if content else None
            built = spans_of(rows, self._resource, content=content, prompts=prompts)
            with self._lock:
                self._spans.extend(built)
                excess = len(self._spans) - MAX_QUEUED_CALLS
                if excess > 0:
                    for span in self._spans[:excess]:
                        self._unsent[str((span.attributes or {}).get("session.id", ""))] = None
                    del self._spans[:excess]
                    self._dropped += excess
                    self._total_dropped += excess
        return self._spans[:MAX_BATCH]

    def _failed(self, failure: str) -> None:
        self._failure = failure
        if not self._failing:
            logger.warning(
                "openprogram: live export: %s; retrying in the background with back-off (the calls stay in the "
                "store: send them later with `openprogram export otlp SESSION_ID`)",
                failure,
            )
        self._failing = True

    def _recovered(self) -> None:
        if self._failing:
            sender = self._sender
            logger.info(
                "openprogram: exporting to %s again", safe_endpoint(sender.endpoint) if sender else "the OTLP endpoint"
            )
        self._failing = False
        self._backoff = 1.0

    def _caught_up(self) -> None:
        """Nothing waits (or nothing more will be tried): wake who waits; say what was dropped since the last time."""
        if self._dropped:
            logger.info("openprogram: %d calls were not exported live; they are in the store", self._dropped)
            self._dropped = 0
        self._idle.set()


def _close_at_exit() -> None:
    live = _live
    if live is not None and live.enabled:
        live.close()


def _forget_after_fork() -> None:
    global _live, _decided, _lock
    # The parent's queue and thread are the parent's; the child decides (and starts) anew.
    _live, _decided, _lock = None, False, threading.Lock()


# Registered after the writer's own exit handler, so run before it: the writer's final batches
# then reach a closing exporter, which sends them before the process ends.
atexit.register(_close_at_exit)
on_calls_written(_written)
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_after_fork)

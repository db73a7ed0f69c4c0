"""LangGraph's retry attempts: under a ``RetryPolicy``, each attempt of a node is its own ``node`` call.

LangGraph's retry loop (``run_with_retry`` / ``arun_with_retry``) runs the task's ``proc``
once per attempt. :func:`attempts_for` hands the loop a copy of the task whose ``proc`` is
an :class:`Attempts`: each of its ``invoke`` / ``ainvoke`` / ``astream`` calls is one attempt,
recorded with the adapter's :class:`NodeCalls`, so whatever an attempt runs nests under it.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import AsyncGenerator, Callable
from typing import Any, NamedTuple

from openprogram import get_current_session
from openprogram._kit import LaterCall, Opened, call_id_of, close_call, log_once

__all__ = ["Attempts", "NodeCalls", "attempts_for"]

FRAMEWORK = "langgraph"

_TIMED_OUT = TimeoutError("the attempt timed out (TimeoutPolicy)")


class NodeCalls(NamedTuple):
    """How the adapter records a node call (LangGraph's naming and capture stay in the adapter)."""

    begin: Callable[[Any, int], Opened | None]
    """``begin(task, attempt)``: the attempt's call (1-indexed; 0: the task as one call), made current."""
    end: Callable[[Opened, Any, BaseException | None], None]
    """``end(opened, task, exc)``: end it with the task's outcome and restore the context."""
    handoff: tuple[type[BaseException], ...]
    """What LangGraph decides about after the attempt (``ParentCommand``): left for the wrapper to end."""
    reserved: tuple[str, ...]
    """LangGraph's internal nodes (``__start__``): run as they are."""


def attempts_for(task: Any, args: tuple[Any, ...], kwargs: dict[str, Any], calls: NodeCalls) -> Attempts | None:
    """The stand-in for ``task``'s ``proc`` when a retry policy is in effect for it, else None.

    A policy is in effect by LangGraph's rule: the task's own, else the graph's. None also for an
    internal node, and when no session is current (the loop is then recorded as one call, under
    the no-session policy).
    """
    if not (getattr(task, "retry_policy", None) or (args[1] if len(args) > 1 else kwargs.get("retry_policy"))):
        return None
    try:
        if task.name in calls.reserved or get_current_session() is None:
            return None
        return Attempts(task, args, kwargs, calls)
    except Exception as exc:
        log_once(FRAMEWORK, "run_with_retry (preparing per-attempt calls)", exc)
        return None


def _after_timeout(exc: BaseException) -> bool:
    """Whether ``exc`` was raised while LangGraph handled a node's timeout (waiting to retry)."""
    seen = exc.__context__
    for _ in range(8):
        if seen is None:
            return False
        if type(seen).__name__ == "NodeTimeoutError":
            return True
        seen = seen.__context__
    return False


class Attempts:
    """Stands in for the ``proc`` of a task run under a retry policy, so that every attempt is its own
    ``node`` call: LangGraph's retry loop runs ``proc.invoke`` (async: ``ainvoke`` or, for
    ``astream_events`` / ``astream_log``, ``astream``) once per attempt.

    What an attempt's ending means is sometimes decided by the loop, outside the attempt: a
    ``CancelledError`` may be the run being cancelled (``interrupted``) or, in LangGraph 1.2, a
    node's own cancellation turned into a ``NodeCancelledError`` (a failure, retried or not); an
    attempt cut short by a ``TimeoutPolicy`` is given up on (``NodeTimeoutError``) while its
    cancellation is still on its way. Such attempts are settled when the next attempt begins
    (LangGraph retried: a failure) or when the loop ends (with the loop's own exception).
    """

    __slots__ = (
        "_args",
        "_calls",
        "_kwargs",
        "cancelled",
        "count",
        "loop_task",
        "pending",
        "proc",
        "running",
        "settled",
        "task",
    )

    def __init__(self, task: Any, args: tuple[Any, ...], kwargs: dict[str, Any], calls: NodeCalls) -> None:
        self.task = task
        self.proc = task.proc
        self._calls = calls
        self.count = 0  # attempts begun
        self.pending: Opened | None = None  # an attempt's call left for the wrapper to end
        self.running: Opened | None = None  # the attempt whose proc call has not returned
        self.cancelled: LaterCall | None = None  # an attempt ended by a CancelledError, left open
        self.settled: set[str] = set()  # ids of attempts ended here rather than by themselves
        self.loop_task: asyncio.Task[Any] | None = None  # the task running LangGraph's async retry loop
        # The task is a dataclass: its copy shares ``writes`` (the deque the runner reads) and every
        # other field; only the loop sees it.
        proxied = dataclasses.replace(task, proc=self)
        self._args, self._kwargs = ((proxied, *args[1:]), kwargs) if args else (args, {**kwargs, "task": proxied})

    def __getattr__(self, name: str) -> Any:
        if name in Attempts.__slots__:
            raise AttributeError(name)  # not set yet (a copy being built): never recurse
        return getattr(self.proc, name)  # anything else LangGraph may read off the runnable

    def run(self, loop: Callable[..., Any]) -> Any:
        """Run LangGraph's retry ``loop`` over the attempts."""
        try:
            result = loop(*self._args, **self._kwargs)
        except BaseException as exc:
            self.finish(exc)
            raise
        self.finish(None)
        return result

    async def arun(self, loop: Callable[..., Any]) -> Any:
        """Run LangGraph's async retry ``loop`` over the attempts."""
        self.loop_task = asyncio.current_task()
        try:
            result = await loop(*self._args, **self._kwargs)
        except BaseException as exc:
            self.finish(exc)
            raise
        self.finish(None)
        return result

    def _begin(self) -> Opened | None:
        self._settle(None)  # a new attempt: LangGraph retried whatever it left undecided
        self.count += 1
        opened = self._calls.begin(self.task, self.count)
        self.running = opened
        return opened

    def _settle(self, exc: BaseException | None) -> None:
        """End the attempts the loop decided about: ``exc`` is the loop's exception (None: it retried)."""
        try:
            # Retried (LangGraph retries no cancellation but its timeout's), or the run failed
            # while it waited to retry after a timeout: the attempt timed out.
            timed_out = exc is None or (isinstance(exc, asyncio.CancelledError) and _after_timeout(exc))
            outcome = _TIMED_OUT if timed_out else exc
            running, self.running = self.running, None
            if running is not None:  # given up on and not ended yet: its own task restores its context
                self.settled.add(call_id_of(running))
                LaterCall.of(running, FRAMEWORK).end(outcome)
            cancelled, self.cancelled = self.cancelled, None
            if cancelled is not None:
                cancelled.end(outcome)
        except Exception as error:
            log_once(FRAMEWORK, "run_with_retry (ending an attempt)", error)

    def _end(self, opened: Opened, exc: BaseException | None) -> None:
        if self.running is opened:
            self.running = None
        if call_id_of(opened) in self.settled:  # already ended by _settle: restore the context only
            close_call(opened, exc)
            return
        if exc is not None and isinstance(exc, self._calls.handoff):
            # LangGraph decides after the attempt: a Command for this graph runs the node's
            # writers (the node's output, as today), any other is passed on. The wrapper ends it.
            self.pending = opened
            return
        if isinstance(exc, asyncio.CancelledError):
            if self._timed_out():
                close_call(opened, _TIMED_OUT)  # a failure: "error", with the reason
                return
            # The run cancelled, or (LangGraph 1.2) the node's own cancellation, a failure: the loop decides.
            self.cancelled = LaterCall.of(opened, FRAMEWORK, detach=True)
            return
        # A failure LangGraph retries ends its attempt "error"; an interrupt ends the loop, as today.
        self._calls.end(opened, self.task, exc)

    def _timed_out(self) -> bool:
        """The attempt's own task was cancelled (LangGraph 1.2 runs an attempt with a timeout in a
        task of its own and cancels it on timeout) while the retry loop's task was not: the
        timeout's doing, not the run's cancellation nor the node's own ``CancelledError``."""
        loop_task = self.loop_task
        current = asyncio.current_task() if loop_task is not None else None
        if current is None or current is loop_task:
            return False
        own = getattr(current, "cancelling", None)  # Python >= 3.11; before: the loop decides
        return own is not None and own() > 0 and loop_task.cancelling() == 0  # type: ignore[union-attr]

    def finish(self, exc: BaseException | None) -> None:
        """After LangGraph's loop: end what it left undecided or pending, or record the task as one
        call when it ended before any attempt began (e.g. a sync node with a timeout policy)."""
        try:
            if self.running is not None or self.cancelled is not None:
                self._settle(exc)  # None: the loop succeeded after them, so it retried them
            opened = self.pending
            if opened is None and self.count == 0:
                opened = self._calls.begin(self.task, 0)
            if opened is not None:
                self.pending = None
                self._calls.end(opened, self.task, exc)
        except Exception as error:
            log_once(FRAMEWORK, "run_with_retry (ending the node call)", error)

    def invoke(self, input: Any, config: Any = None, **kwargs: Any) -> Any:
        opened = self._begin()
        if opened is None:
            return self.proc.invoke(input, config, **kwargs)
        try:
            result = self.proc.invoke(input, config, **kwargs)
        except BaseException as exc:
            self._end(opened, exc)
            raise
        self._end(opened, None)
        return result

    async def ainvoke(self, input: Any, config: Any = None, **kwargs: Any) -> Any:
        opened = self._begin()
        if opened is None:
            return await self.proc.ainvoke(input, config, **kwargs)
        try:
            result = await self.proc.ainvoke(input, config, **kwargs)
        except BaseException as exc:
            self._end(opened, exc)
            raise
        self._end(opened, None)
        return result

    async def astream(self, input: Any, config: Any = None, **kwargs: Any) -> AsyncGenerator[Any, None]:
        opened = self._begin()
        if opened is None:
            async for chunk in self.proc.astream(input, config, **kwargs):
                yield chunk
            return
        try:
            async for chunk in self.proc.astream(input, config, **kwargs):
                yield chunk
        except BaseException as exc:
            self._end(opened, exc)
            raise
        self._end(opened, None)

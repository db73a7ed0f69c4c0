"""Blocking work a coroutine awaits (a store lookup, a flush), run on openprogram's own threads.

An event loop's default executor belongs to the program: starting its threads, or
queueing behind its work, changes how that program schedules. openprogram never
uses it; a few daemon threads of its own, started on first need, do this work.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import os
import queue
import threading
from collections.abc import Callable
from typing import Any, TypeVar

__all__ = ["MAX_THREADS", "run_blocking"]

T = TypeVar("T")

MAX_THREADS = 4
"""Threads at most; more work waits for one to be free."""

_Job = tuple["concurrent.futures.Future[Any]", Callable[..., Any], tuple[Any, ...]]


class _Threads:
    """Daemon threads taking jobs from one queue; one more is started while none is idle."""

    def __init__(self) -> None:
        self.jobs: queue.SimpleQueue[_Job] = queue.SimpleQueue()
        self.idle = threading.Semaphore(0)  # released by a thread each time it is free
        self.started = 0
        self.lock = threading.Lock()

    def submit(self, fn: Callable[..., T], args: tuple[Any, ...]) -> concurrent.futures.Future[T]:
        future: concurrent.futures.Future[T] = concurrent.futures.Future()
        self.jobs.put((future, fn, args))
        if not self.idle.acquire(blocking=False):
            with self.lock:
                if self.started < MAX_THREADS:
                    self.started += 1
                    name = f"openprogram-blocking-{self.started}"
                    threading.Thread(target=self._work, name=name, daemon=True).start()
        return future

    def _work(self) -> None:
        while True:
            _run(self.jobs.get())  # the job is not kept alive while this thread waits for the next
            self.idle.release()


def _run(job: _Job) -> None:
    future, fn, args = job
    if not future.set_running_or_notify_cancel():
        return  # the awaiting coroutine was cancelled first
    try:
        result = fn(*args)
    except BaseException as exc:  # delivered to the awaiting coroutine
        future.set_exception(exc)
    else:
        future.set_result(result)


_threads = _Threads()


async def run_blocking(fn: Callable[..., T], *args: Any) -> T:
    """``fn(*args)`` on one of openprogram's threads, awaited without blocking the event loop."""
    return await asyncio.wrap_future(_threads.submit(fn, args))


def _after_fork_in_child() -> None:
    global _threads
    _threads = _Threads()  # the parent's threads do not exist in the child


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)

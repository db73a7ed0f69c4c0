"""Carrying the current session into threads and executors.

The current session is visible inside a function wrapped by
:func:`propagate`, wherever and however often it runs. Every adapter uses
these helpers and nothing else to copy context.
"""

from __future__ import annotations

import concurrent.futures
import contextvars
import functools
from collections.abc import Callable
from typing import Any, ParamSpec, TypeVar

__all__ = ["ContextThreadPoolExecutor", "propagate"]

P = ParamSpec("P")
R = TypeVar("R")


def propagate(fn: Callable[P, R]) -> Callable[P, R]:
    """Return ``fn`` bound to the context current now (session, current call, any other var).

    Use it for a ``threading.Thread`` target, ``executor.submit`` or
    ``loop.run_in_executor``. Each run gets its own copy of that context, so the
    wrapped function may run many times, even concurrently.
    """
    context = contextvars.copy_context()

    @functools.wraps(fn)
    def run_in_context(*args: P.args, **kwargs: P.kwargs) -> R:
        return context.copy().run(fn, *args, **kwargs)

    return run_in_context


class ContextThreadPoolExecutor(concurrent.futures.ThreadPoolExecutor):
    """A ``ThreadPoolExecutor`` whose tasks run in the submitter's context."""

    def submit(self, fn: Callable[..., R], /, *args: Any, **kwargs: Any) -> concurrent.futures.Future[R]:
        return super().submit(contextvars.copy_context().run, fn, *args, **kwargs)

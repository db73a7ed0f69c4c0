"""Carrying the current session into threads and executors.

The current session is visible inside a function wrapped by
:func:`propagate`, wherever and however often it runs. Every adapter uses
these helpers and nothing else to copy context.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import functools
import inspect
from collections.abc import AsyncGenerator, Awaitable, Callable, Generator
from typing import Any, ParamSpec, TypeVar

__all__ = [
    "ContextThreadPoolExecutor",
    "drive_async_generator",
    "drive_generator",
    "close_inner",
    "propagate",
]

P = ParamSpec("P")
R = TypeVar("R")
Y = TypeVar("Y")


def propagate(fn: Callable[P, R]) -> Callable[P, R]:
    """Return ``fn`` bound to the context current now (session, current call, any other var).

    Use it for a ``threading.Thread`` target, ``executor.submit`` or
    ``loop.run_in_executor``. Each run gets its own copy of that context, so the
    wrapped function may run many times, even concurrently. An ``async def``,
    generator or async generator function keeps its kind, and its body runs in
    that context at every step, wherever it is awaited or iterated (another
    thread's event loop, a task of another session).
    """
    context = contextvars.copy_context()
    wrapper: Callable[..., Any]
    if inspect.iscoroutinefunction(fn):

        async def wrapper(*args: Any, **kwargs: Any) -> Any:
            run = context.copy()
            return await _in_context(run, run.run(fn, *args, **kwargs))

    elif inspect.isasyncgenfunction(fn):

        def start(*args: Any, **kwargs: Any) -> tuple[AsyncGenerator[Any, Any], contextvars.Context]:
            run = context.copy()
            return run.run(fn, *args, **kwargs), run

        wrapper = _async_generator_function(start)

    elif inspect.isgeneratorfunction(fn):

        def wrapper(*args: Any, **kwargs: Any) -> Any:  # a generator function, as fn is
            run = context.copy()
            return (yield from drive_generator(run.run(fn, *args, **kwargs), run))

    else:

        def wrapper(*args: Any, **kwargs: Any) -> Any:
            return context.copy().run(fn, *args, **kwargs)

    return functools.wraps(fn)(wrapper)


class ContextThreadPoolExecutor(concurrent.futures.ThreadPoolExecutor):
    """A ``ThreadPoolExecutor`` whose tasks run in the submitter's context."""

    def submit(self, fn: Callable[..., R], /, *args: Any, **kwargs: Any) -> concurrent.futures.Future[R]:
        return super().submit(contextvars.copy_context().run, fn, *args, **kwargs)


def drive_generator(gen: Generator[Y, Any, R], context: contextvars.Context) -> Generator[Y, Any, R]:
    """Iterate ``gen`` with every step (and its close) run inside ``context``.

    For lazy generators created in one context and iterated in another: pass
    ``contextvars.copy_context()`` taken when the generator was created, and
    the generator's body sees that context however and wherever it is iterated.
    Changes the body makes to context variables stay in ``context``.
    """
    method: Callable[[Any], Y] = gen.send
    arg: Any = None
    while True:
        try:
            item = context.run(method, arg)
        except StopIteration as stop:
            return stop.value  # type: ignore[no-any-return]
        try:
            arg = yield item
            method = gen.send
        except GeneratorExit:
            context.run(gen.close)
            raise
        except BaseException as exc:
            method, arg = gen.throw, exc


class _InContext:
    """Await ``coro`` with each of its steps run inside ``context`` (works without 3.11's Task ``context=``)."""

    __slots__ = ("context", "coro")

    def __init__(self, context: contextvars.Context, coro: Any) -> None:
        self.context, self.coro = context, coro

    def __await__(self) -> Generator[Any, Any, Any]:
        coro = self.coro
        method, arg = coro.send, None
        while True:
            try:
                yielded = self.context.run(method, arg)
            except StopIteration as stop:
                return stop.value
            try:
                arg = yield yielded
                method = coro.send
            except BaseException as exc:  # thrown in by the task (cancellation): forward it
                method, arg = coro.throw, exc


def _in_context(context: contextvars.Context, awaitable: Awaitable[R]) -> Awaitable[R]:
    return _InContext(context, awaitable.__await__())


def drive_async_generator(agen: AsyncGenerator[Y, Any], context: contextvars.Context) -> AsyncGenerator[Y, Any]:
    """The async twin of :func:`drive_generator`: every step of ``agen`` runs inside ``context``.

    Tasks the body creates copy ``context`` too. Cancellation and ``aclose()``
    reach ``agen`` unchanged.
    """
    return _async_generator_function(lambda: (agen, context))()


def _loop_is_closing(agen: Any) -> bool:
    """True while the running event loop's ``shutdown_asyncgens()`` closes ``agen`` itself.

    asyncio's loop keeps every async generator begun under it in ``_asyncgens``; its
    shutdown takes them all out of that set and closes them at once. A generator begun
    after the shutdown (a loop may run on) is in the set again, and its driver closes it.
    Another loop (no such flag or set): not known, so never.
    """
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        return False
    if getattr(loop, "_asyncgens_shutdown_called", False) is not True:
        return False
    registered = getattr(loop, "_asyncgens", None)
    return registered is not None and agen not in registered


async def close_inner(agen: AsyncGenerator[Any, Any], context: contextvars.Context | None = None) -> None:
    """Close ``agen``, an async generator a driving generator iterates, as the driver is closed.

    Not while another close of it is under way (two ``aclose()`` calls meeting fail with
    "aclose(): asynchronous generator is already running", which the loop logs): not
    while it runs, and not while ``asyncio.run`` ends by closing every open async
    generator at once (``loop.shutdown_asyncgens()``). ``context``: run the close in it
    (else in the caller's), so that its cleanup is recorded where its steps were.
    """
    if getattr(agen, "ag_running", False) or _loop_is_closing(agen):
        return  # being closed: by the loop, or by whoever runs it now
    try:
        await (agen.aclose() if context is None else _in_context(context, agen.aclose()))
    except RuntimeError as exc:
        if _raised_inside(agen, exc):
            raise  # the generator's own cleanup failed: its error, for its caller
        # else aclose() refused to start: another close got there first ("already running")


def _raised_inside(agen: Any, exc: BaseException) -> bool:
    """True when ``exc`` came out of ``agen``'s own frame (its cleanup), not from ``aclose()`` refusing to start.

    Not ``ag_running``: on CPython 3.10-3.12 it stays set after a cleanup that awaited a task and then raised.
    A generator that is not a native one (no ``ag_code``): counted as raised inside, so the error is never lost.
    """
    code = getattr(agen, "ag_code", None)
    if code is None:
        return True
    frame = exc.__traceback__
    while frame is not None:
        if frame.tb_frame.f_code is code:
            return True
        frame = frame.tb_next
    return False


def _async_generator_function(
    start: Callable[..., tuple[AsyncGenerator[Any, Any], contextvars.Context]],
) -> Callable[..., AsyncGenerator[Any, Any]]:
    """An async generator function driving, step by step in its context, what ``start`` returns."""

    async def driven(*args: Any, **kwargs: Any) -> AsyncGenerator[Any, Any]:
        agen, context = start(*args, **kwargs)
        method: Callable[[Any], Awaitable[Any]] = agen.asend
        arg: Any = None
        while True:
            try:
                item = await _in_context(context, method(arg))
            except StopAsyncIteration:
                return
            try:
                arg = yield item
                method = agen.asend
            except GeneratorExit:
                await close_inner(agen, context)
                raise
            except BaseException as exc:
                method, arg = agen.athrow, exc

    return driven

"""Driving a generator step by step under a call: the kit's one step driver.

Two semantics, named for what the generator's body sees:

- **in a context** (:func:`steps_in_context`): every step runs inside one
  ``contextvars.Context`` captured when the stream was made; what the body sets
  stays in that context (for lazy streams iterated somewhere else). These are
  :func:`openprogram.propagate`'s drivers.
- **under a call** (:func:`steps_under_call`): every step runs in the consumer's own
  context with the call's session and id set around it, and the call ends when
  the stream does (for a framework that iterates a stream in its own context and
  expects to see what the body sets there).

Both forward ``send``/``throw``/``close`` (and their async twins) to the inner generator.
:func:`frameless_steps_in_current_context` is the first semantics driven from C only, for
entry points whose generator warns about its caller (``stacklevel``).
"""

from __future__ import annotations

import contextvars
import functools
import operator
from collections.abc import AsyncGenerator, Callable, Generator
from types import TracebackType
from typing import Any, Protocol, TypeVar, cast

from .propagation import close_inner, drive_async_generator, drive_generator

__all__ = [
    "SteppedCall",
    "async_frameless_steps_in_current_context",
    "async_steps_in_context",
    "async_steps_in_current_context",
    "async_steps_under_call",
    "frameless_steps_in_current_context",
    "steps_in_context",
    "steps_in_current_context",
    "steps_under_call",
]

Y = TypeVar("Y")
R = TypeVar("R")


class SteppedCall(Protocol):
    """A call kept open over a stream (a ``StreamCall``, a ``ModelStream``): current inside ``with``,
    given each item, finished with the stream's outcome."""

    def __enter__(self) -> Any: ...
    def __exit__(self, et: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None: ...
    def add(self, item: Any) -> None: ...
    def finish(self, exc: BaseException | None) -> None: ...


steps_in_context = drive_generator
"""``steps_in_context(gen, context)``: every step of ``gen`` runs inside ``context``."""

async_steps_in_context = drive_async_generator
"""``async_steps_in_context(agen, context)``: the async twin of :func:`steps_in_context`."""


def steps_in_current_context(gen: Generator[Y, Any, Any]) -> Generator[Y, Any, Any]:
    """A lazy stream made now keeps the context current now, wherever it is iterated."""
    return drive_generator(gen, contextvars.copy_context())


def async_steps_in_current_context(agen: AsyncGenerator[Y, Any]) -> AsyncGenerator[Y, Any]:
    """The async twin of :func:`steps_in_current_context`."""
    return drive_async_generator(agen, contextvars.copy_context())


def steps_under_call(gen: Generator[Y, Any, Any], call: SteppedCall) -> Generator[Y, Any, Any]:
    """Iterate ``gen`` with ``call`` current around each step; each item is added to the call, which ends with it."""
    method: Callable[[Any], Y] = gen.send
    arg: Any = None
    while True:
        try:
            with call:
                item = method(arg)
        except StopIteration as stop:
            call.finish(None)
            return stop.value
        except BaseException as exc:
            call.finish(exc)
            raise
        call.add(item)
        try:
            arg = yield item
            method = gen.send
        except GeneratorExit as exc:
            # No exception kept in a local: it would hold this frame (its traceback) in a cycle, and the
            # generator it drives would then be finalized by the garbage collector, in any thread.
            try:
                with call:
                    gen.close()
            except BaseException as error:  # its cleanup failed: the call ends with what its caller gets
                call.finish(error)
                raise
            call.finish(exc)
            raise
        except BaseException as exc:
            method, arg = gen.throw, exc


async def async_steps_under_call(agen: AsyncGenerator[Y, Any], call: SteppedCall) -> AsyncGenerator[Y, Any]:
    """The async twin of :func:`steps_under_call`."""
    method: Callable[[Any], Any] = agen.asend
    arg: Any = None
    while True:
        try:
            with call:
                item = await method(arg)
        except StopAsyncIteration:
            call.finish(None)
            return
        except BaseException as exc:
            call.finish(exc)
            raise
        call.add(item)
        try:
            arg = yield item
            method = agen.asend
        except GeneratorExit as exc:
            try:  # no exception kept in a local (see steps_under_call)
                with call:
                    await close_inner(agen)
            except BaseException as error:  # its cleanup failed: the call ends with what its caller gets
                call.finish(error)
                raise
            call.finish(exc)
            raise
        except BaseException as exc:
            method, arg = agen.athrow, exc


# --- in a context, with no frame of ours on the stack --------------------------------


def frameless_steps_in_current_context(gen: Generator[Y, Any, R]) -> Generator[Y, Any, R]:
    """:func:`steps_in_current_context` with no Python frame of openprogram's on the stack while ``gen`` runs.

    Each step is ``context.run(gen.send, value)`` called from C, so the frame that resumes
    ``gen`` is the consumer's: a warning ``gen`` issues about its caller (``stacklevel=2``)
    names the consumer's line, as without openprogram. The result stands in for ``gen``
    (iteration, ``send``, ``throw``, ``close``; dropped, it closes ``gen`` in the context)
    but is not a generator object.
    """
    return cast("Generator[Y, Any, R]", _GeneratorInContext(gen, contextvars.copy_context()))


def async_frameless_steps_in_current_context(agen: AsyncGenerator[Y, Any]) -> AsyncGenerator[Y, Any]:
    """The async twin of :func:`frameless_steps_in_current_context`.

    Each awaited step (``__anext__``, ``asend``, ``athrow``, ``aclose``) is driven from C inside
    the context. Dropped unclosed, ``agen`` is finalised by its event loop, as without openprogram.
    """
    return cast("AsyncGenerator[Y, Any]", _AsyncGeneratorInContext(agen, contextvars.copy_context()))


def _called_in_context(name: str) -> Any:
    """The inner iterator's method ``name``, bound to run inside the context (a C callable)."""

    def bound(self: _CalledInContext) -> Any:
        return functools.partial(self._context.run, getattr(self._inner, name))

    return property(bound)


class _CalledInContext:
    """Stands for an iterator; every call runs it inside a context, from C (``context.run(inner.send, v)``)."""

    __slots__ = ("__weakref__", "_context", "_inner", "_next")

    # Special methods are looked up on the type: the property hands out the C callable bound once.
    __next__ = property(operator.attrgetter("_next"))
    send = _called_in_context("send")
    throw = _called_in_context("throw")
    close = _called_in_context("close")

    def __init__(self, inner: Any, context: contextvars.Context) -> None:
        self._inner = inner
        self._context = context
        self._next = functools.partial(context.run, inner.__next__)

    def __iter__(self) -> Any:
        return self


class _GeneratorInContext(_CalledInContext):
    """A generator's stand-in; dropped, it closes the generator inside the context, as a driver would."""

    __slots__ = ()

    def __del__(self) -> None:
        if not getattr(self._inner, "gi_running", False):
            self.close()


class _AwaitedInContext(_CalledInContext):
    """One awaited step of an async generator (``agen.asend(v)`` and the like), driven inside the context."""

    __slots__ = ()

    def __await__(self) -> Any:
        return self


class _AsyncGeneratorInContext:
    """An async generator's stand-in whose every step is an :class:`_AwaitedInContext`."""

    __slots__ = ("__weakref__", "_context", "_inner")

    def __init__(self, inner: AsyncGenerator[Any, Any], context: contextvars.Context) -> None:
        self._inner = inner
        self._context = context

    def __aiter__(self) -> _AsyncGeneratorInContext:
        return self

    def __anext__(self) -> _AwaitedInContext:
        return _AwaitedInContext(self._inner.__anext__(), self._context)

    def asend(self, value: Any) -> _AwaitedInContext:
        return _AwaitedInContext(self._inner.asend(value), self._context)

    def athrow(self, *args: Any) -> _AwaitedInContext:
        return _AwaitedInContext(self._inner.athrow(*args), self._context)

    def aclose(self) -> _AwaitedInContext:
        return _AwaitedInContext(self._inner.aclose(), self._context)

"""The body of an undoable tool: its function with the effect journaled around it, in the function's shape.

``@some_tool.undo`` makes the tool's wrapper run :func:`journaled` in place of the function, so
the body runs inside the tool's recorded call: the current call is the tool's.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Awaitable, Callable, Generator
from typing import Any

from .._capture import bind_arguments, capture, capture_json
from .._recording import session_var
from .._runtime import run_blocking
from .effects import journal, pending_row, settle, write_pending

__all__ = ["journaled"]

_MAX_YIELDS = 100


def journaled(func: Callable[..., Any], name: str, names: tuple[str, ...], skip: int, shape: str) -> Callable[..., Any]:
    """``func`` with its effect journaled around it, in ``func``'s shape (``function``, ``coroutine``,
    ``generator`` or ``async_generator``); ``names`` are the parameters its arguments bind to,
    after ``skip`` (``self``)."""

    def inputs(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Callable[[], str]:
        def captured() -> str:
            bound = bind_arguments(names, args[skip:] if skip else args, kwargs)
            bound.pop("_session", None)
            return capture_json(bound)

        return captured

    if shape == "coroutine":
        return _journaled_coroutine(func, name, inputs)
    if shape == "generator":
        return _journaled_generator(func, name, inputs)
    if shape == "async_generator":
        return _journaled_async_generator(func, name, inputs)

    def body(*args: Any, **kwargs: Any) -> Any:
        pending = journal("tool", name, inputs(args, kwargs))
        if pending is None:
            return func(*args, **kwargs)
        try:
            result = func(*args, **kwargs)
        except BaseException as exc:
            settle(pending, exc)
            raise
        settle(pending, None, result)
        return result

    return body


Inputs = Callable[[tuple[Any, ...], dict[str, Any]], Callable[[], str]]


def _journaled_coroutine(func: Callable[..., Awaitable[Any]], name: str, inputs: Inputs) -> Callable[..., Any]:
    async def body(*args: Any, **kwargs: Any) -> Any:
        handle = session_var.get()
        row = pending_row("tool", name, inputs(args, kwargs))
        # The durable write blocks: on openprogram's threads, never on the event loop.
        pending = None if handle is None or row is None else await run_blocking(write_pending, handle.store, row)
        if pending is None:
            return await func(*args, **kwargs)
        try:
            result = await func(*args, **kwargs)
        except BaseException as exc:
            settle(pending, exc)
            raise
        settle(pending, None, result)
        return result

    return body


def _journaled_generator(
    func: Callable[..., Generator[Any, Any, Any]], name: str, inputs: Inputs
) -> Callable[..., Any]:
    def body(*args: Any, **kwargs: Any) -> Generator[Any, Any, Any]:
        pending = journal("tool", name, inputs(args, kwargs))
        gen = func(*args, **kwargs)
        if pending is None:
            return (yield from gen)
        yielded: list[Any] = []
        try:
            returned = yield from _watched(gen, yielded)
        except BaseException as exc:
            settle(pending, exc, {"yielded": yielded})
            raise
        settle(pending, None, {"yielded": yielded, "returned": capture(returned)})
        return returned

    return body


def _watched(gen: Generator[Any, Any, Any], yielded: list[Any]) -> Generator[Any, Any, Any]:
    """``yield from gen``, keeping a bounded capture of what it yields."""
    method: Callable[[Any], Any] = gen.send
    arg: Any = None
    while True:
        try:
            item = method(arg)
        except StopIteration as stop:
            return stop.value
        if len(yielded) < _MAX_YIELDS:
            yielded.append(capture(item))
        try:
            arg = yield item
            method = gen.send
        except GeneratorExit:
            gen.close()
            raise
        except BaseException as exc:
            method, arg = gen.throw, exc


def _journaled_async_generator(
    func: Callable[..., AsyncGenerator[Any, Any]], name: str, inputs: Inputs
) -> Callable[..., Any]:
    async def body(*args: Any, **kwargs: Any) -> AsyncGenerator[Any, Any]:
        handle = session_var.get()
        row = pending_row("tool", name, inputs(args, kwargs))
        pending = None if handle is None or row is None else await run_blocking(write_pending, handle.store, row)
        agen = func(*args, **kwargs)
        yielded: list[Any] = []
        method: Callable[[Any], Any] = agen.asend
        arg: Any = None
        try:
            while True:
                try:
                    item = await method(arg)
                except StopAsyncIteration:
                    break
                if pending is not None and len(yielded) < _MAX_YIELDS:
                    yielded.append(capture(item))
                try:
                    arg = yield item
                    method = agen.asend
                except GeneratorExit:
                    await agen.aclose()
                    raise
                except BaseException as exc:
                    method, arg = agen.athrow, exc
        except BaseException as exc:
            if pending is not None:
                settle(pending, exc, {"yielded": yielded})
            raise
        if pending is not None:
            settle(pending, None, {"yielded": yielded})

    return body

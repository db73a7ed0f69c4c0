"""``recorded(...)``: the one wrapper that records each call of a framework method.

A target's wrap is usually ``recorded(kind, describe)``. At patch time it is
specialised to the original's shape — function, coroutine function, generator
function or async generator function — so the replacement keeps that shape
(frameworks inspect it) and the original's metadata (``functools.update_wrapper``:
name, docstring, ``__dict__`` markers, ``__wrapped__``). While the adapter is
off, the replacement's first line passes straight through.

``describe(*args, **kwargs)`` returns ``(name, inputs)`` or ``(name, inputs,
attributes)`` for the call about to run, or None to run it unrecorded;
``output(result)`` what to record as its output. Both run under the guard: an
error in them is logged once and the call runs as if unrecorded. The user's
exceptions pass through unchanged.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import AsyncGenerator, Callable, Generator
from typing import TYPE_CHECKING, Any

from .._calls import Opened, StreamCall, close_call, detach_call, open_call
from .._runtime import async_steps_under_call, close_inner, log_once, steps_under_call

if TYPE_CHECKING:
    from .._sessions import RunEntry, session_context
    from .integration import Integration, Wrap

__all__ = ["Describe", "RunSession", "recorded", "shape_of", "wraps_like"]

Describe = Callable[..., "tuple[str, Any] | tuple[str, Any, Any] | None"]
RunSession = Callable[..., "session_context | RunEntry | None"]


def shape_of(fn: Callable[..., Any]) -> str:
    """``"async_generator"``, ``"generator"``, ``"coroutine"`` or ``"function"``."""
    if inspect.isasyncgenfunction(fn):
        return "async_generator"
    if inspect.isgeneratorfunction(fn):
        return "generator"
    if inspect.iscoroutinefunction(fn):
        return "coroutine"
    return "function"


def wraps_like(original: Callable[..., Any]) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """``functools.wraps`` that also tolerates originals without the usual attributes."""

    def apply(wrapper: Callable[..., Any]) -> Callable[..., Any]:
        return functools.update_wrapper(wrapper, original)

    return apply


def _identity(result: Any) -> Any:
    return result


def recorded(
    kind: str,
    describe: Describe,
    *,
    output: Callable[[Any], Any] = _identity,
    run_session: RunSession | None = None,
    text_of: Callable[[Any], str | None] | None = None,
) -> Wrap:
    """A target's wrap recording each call of the original as a ``kind`` call (see the module docstring).

    ``run_session(*args, **kwargs)``, for a framework entry point, returns the
    ``session_context`` to enter when the run starts with no session open (see
    :func:`openprogram._sessions.runs.run_session`), or None. ``text_of``, for a generator shape,
    becomes the :class:`StreamCall`'s hook recognising chunks of text among the items.
    """

    def wrap(original: Callable[..., Any], integration: Integration) -> Callable[..., Any]:
        shape = shape_of(original)
        framework = integration.framework or integration.identifier
        where = f"{getattr(original, '__qualname__', original)!s}"
        replacement: Callable[..., Any]  # one of four shapes, below

        def begin(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Opened | None:
            try:
                described = describe(*args, **kwargs)
                if described is None:
                    return None
                name, inputs, *rest = described
                attributes = rest[0] if rest else None
            except Exception as exc:
                log_once(framework, f"{where} (describing the call)", exc)
                return None
            return open_call(kind, name, framework, inputs, attributes)  # logs its own errors

        def finish(opened: Opened, result: Any) -> None:
            try:
                value = output(result)
            except Exception as exc:
                log_once(framework, f"{where} (capturing the result)", exc)
                value = None
            close_call(opened, None, value)

        def entered(args: tuple[Any, ...], kwargs: dict[str, Any]) -> session_context | RunEntry | None:
            if run_session is None:
                return None
            try:
                return run_session(*args, **kwargs)
            except Exception as exc:
                log_once(framework, f"{where} (finding the run's session)", exc)
                return None

        if shape == "coroutine":

            async def call(*args: Any, **kwargs: Any) -> Any:
                opened = begin(args, kwargs)
                if opened is None:
                    return await original(*args, **kwargs)
                try:
                    result = await original(*args, **kwargs)
                except BaseException as exc:
                    close_call(opened, exc)
                    raise
                finish(opened, result)
                return result

            async def in_run(*args: Any, **kwargs: Any) -> Any:
                run = entered(args, kwargs)
                if run is None:
                    return await call(*args, **kwargs)
                async with run:
                    return await call(*args, **kwargs)

            body = call if run_session is None else in_run

            async def replacement(*args: Any, **kwargs: Any) -> Any:
                if not integration.active:
                    return await original(*args, **kwargs)
                return await body(*args, **kwargs)

        elif shape == "function":

            def sync_call(*args: Any, **kwargs: Any) -> Any:
                opened = begin(args, kwargs)
                if opened is None:
                    return original(*args, **kwargs)
                try:
                    result = original(*args, **kwargs)
                except BaseException as exc:
                    close_call(opened, exc)
                    raise
                finish(opened, result)
                return result

            def sync_in_run(*args: Any, **kwargs: Any) -> Any:
                run = entered(args, kwargs)
                if run is None:
                    return sync_call(*args, **kwargs)
                with run:
                    return sync_call(*args, **kwargs)

            sync_body = sync_call if run_session is None else sync_in_run

            def replacement(*args: Any, **kwargs: Any) -> Any:
                if not integration.active:
                    return original(*args, **kwargs)
                return sync_body(*args, **kwargs)

        elif shape == "generator":

            def replacement(*args: Any, **kwargs: Any) -> Generator[Any, Any, Any]:
                gen = original(*args, **kwargs)
                stream = _stream(begin(args, kwargs), framework, text_of) if integration.active else None
                if stream is None:
                    return (yield from gen)
                return (yield from steps_under_call(gen, stream))

        else:

            async def replacement(*args: Any, **kwargs: Any) -> AsyncGenerator[Any, Any]:
                agen = original(*args, **kwargs)
                stream = _stream(begin(args, kwargs), framework, text_of) if integration.active else None
                inner = agen if stream is None else async_steps_under_call(agen, stream)
                # What `yield from` does for a generator: every asend/athrow/aclose reaches inner.
                method: Callable[[Any], Any] = inner.asend
                arg: Any = None
                while True:
                    try:
                        item = await method(arg)
                    except StopAsyncIteration:
                        return
                    try:
                        arg = yield item
                        method = inner.asend
                    except GeneratorExit:
                        await close_inner(inner)
                        raise
                    except BaseException as exc:
                        method, arg = inner.athrow, exc

        return functools.update_wrapper(replacement, original)

    return wrap


def _stream(opened: Opened | None, framework: str, text_of: Callable[[Any], str | None] | None) -> StreamCall | None:
    if opened is None:
        return None
    stream = StreamCall(detach_call(opened), framework)
    stream.text_of = text_of
    return stream

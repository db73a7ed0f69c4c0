"""The server side: each tool the server runs a ``tool`` call, in the session its client's request names.

A request carrying openprogram's context (:mod:`.context`) is recorded in that session and turn, under the
client's call, in this process's own store; what the tool does nests under it. A request without it follows
this process's no-session policy. The tool's calls are written before its answer goes back (waiting at most
:data:`WRITTEN_WITHIN`). Two hook points, one per SDK generation:

- SDK 1: the function registered with ``Server.call_tool()`` (``FastMCP`` registers its own there), wrapped
  when it is registered: a server built before ``instrument()`` is not recorded;
- SDK 2: a middleware, the SDK's own extension point, added to each ``Server``'s ``middleware`` list when the
  server is built.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from typing import Any

from openprogram import NoSessionError, flush_async, get_current_session, implicit_session
from openprogram._kit import (
    Integration,
    close_call,
    join_session,
    log_once,
    open_call,
    run_blocking,
    run_with_session,
    wraps_like,
)

from .client import FRAMEWORK
from .context import requester_of
from .results import error_of

__all__ = ["WRITTEN_WITHIN", "serve_tool", "wrap_call_tool_registration", "wrap_server_init"]

WRITTEN_WITHIN = 1.0
"""Seconds a tool's answer waits at most for the tool's calls to be written."""


async def serve_tool(server_name: Any, tool: Any, arguments: Any, meta: Any, run: Callable[[], Awaitable[Any]]) -> Any:
    """``await run()``, the tool's execution, recorded as a ``tool`` call in the session ``meta`` names."""
    try:
        requester = requester_of(meta)
        handle = await run_blocking(join_session, *requester) if requester is not None else None
        if handle is None and get_current_session() is None:
            await run_blocking(implicit_session, f"mcp tool {tool!r}")  # opens the store: off the event loop
    except NoSessionError:
        raise  # the "error" no-session policy, as for every recorded call
    except Exception:
        log_once(FRAMEWORK, "serving a tool call (finding its session)")
        return await run()
    with run_with_session(handle) if handle is not None else contextlib.nullcontext():
        opened = open_call(
            "tool", str(tool), FRAMEWORK, arguments, {"mcp.server": str(server_name), "mcp.side": "server"}
        )
        if opened is None:
            return await run()
        try:
            result = await run()
        except BaseException as exc:
            close_call(opened, exc)
            await _written()
            raise
        close_call(opened, error_of(result), output=result)
        await _written()
        return result


async def _written() -> None:
    """Wait, a bounded time, for the tool's calls to be written before its answer goes back: a client may end its
    server as soon as it has the answer (a stdio client's process is killed when it is collected)."""
    try:
        await asyncio.wait_for(flush_async(), WRITTEN_WITHIN)
    except Exception:  # a slow or failing store: the writer reports it, and the answer waits no longer
        pass


def wrap_call_tool_registration(original: Callable[..., Any], integration: Integration) -> Callable[..., Any]:
    """SDK 1: ``Server.call_tool(...)`` returns the decorator that registers the tool function; the function it
    registers is wrapped to record each call."""

    @wraps_like(original)
    def call_tool(self: Any, *args: Any, **kwargs: Any) -> Any:
        register = original(self, *args, **kwargs)
        if not integration.active:
            return register

        @wraps_like(register)
        def register_recorded(func: Callable[..., Awaitable[Any]]) -> Any:
            return register(_recorded(self, func, integration))

        return register_recorded

    return call_tool


def _recorded(server: Any, func: Callable[..., Awaitable[Any]], integration: Integration) -> Callable[..., Any]:
    @wraps_like(func)
    async def run_tool(tool: Any, arguments: Any, *args: Any, **kwargs: Any) -> Any:
        if not integration.active:
            return await func(tool, arguments, *args, **kwargs)
        try:
            meta = server.request_context.meta
        except LookupError:  # called outside a request (a test calling the handler itself)
            meta = None
        return await serve_tool(server.name, tool, arguments, meta, lambda: func(tool, arguments, *args, **kwargs))

    return run_tool


def wrap_server_init(original: Callable[..., Any], integration: Integration) -> Callable[..., Any]:
    """SDK 2: each ``Server`` built gets openprogram's middleware after the SDK's own."""

    @wraps_like(original)
    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        original(self, *args, **kwargs)
        middleware = getattr(self, "middleware", None)
        if integration.active and isinstance(middleware, list):
            middleware.append(_ToolCalls(self, integration))

    return __init__


class _ToolCalls:
    """SDK 2 middleware: records each ``tools/call`` request the server answers."""

    def __init__(self, server: Any, integration: Integration) -> None:
        self._server = server
        self._integration = integration

    async def __call__(self, ctx: Any, call_next: Callable[[Any], Awaitable[Any]]) -> Any:
        if not self._integration.active or ctx.method != "tools/call":
            return await call_next(ctx)
        params = ctx.params or {}
        return await serve_tool(
            self._server.name, params.get("name"), params.get("arguments"), ctx.meta, lambda: call_next(ctx)
        )

"""The client side: each ``ClientSession.call_tool`` a ``tool`` call whose request carries the session.

The call is named after the tool, with the server's name (from its answer to ``initialize``) and the
transport (from the transport that made the session's streams) in its attributes; its ``_meta`` gets
openprogram's context and a ``traceparent`` (:mod:`.context`). A result the server marks ``isError`` ends the
call in error with the result's text; the caller gets the result unchanged.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Mapping
from types import TracebackType
from typing import Any

from openprogram import get_current_session, implicit_session
from openprogram._kit import (
    Integration,
    Opened,
    attribute,
    call_id_of,
    close_call,
    log_once,
    open_call,
    run_blocking,
    wraps_like,
)

from .context import outgoing_meta
from .results import error_of

__all__ = ["FRAMEWORK", "wrap_call_tool", "wrap_initialize", "wrap_session_init", "wrap_transport"]

FRAMEWORK = "mcp"
UNKNOWN = "unknown"  # a transport openprogram did not see open (one entered before instrument())

# The read stream of each transport open now, by id (SDK 2's streams take no weak reference) -> the stream
# itself and the transport's name; a ClientSession -> its transport, its server's name.
_open_streams: dict[int, tuple[Any, str]] = {}
_session_transports: weakref.WeakKeyDictionary[Any, str] = weakref.WeakKeyDictionary()
_server_names: weakref.WeakKeyDictionary[Any, str] = weakref.WeakKeyDictionary()


def wrap_transport(transport: str) -> Callable[[Callable[..., Any], Integration], Callable[..., Any]]:
    """A transport's ``async with`` (``stdio_client(...)``, ...): its read stream is remembered as ``transport``."""

    def wrap(original: Callable[..., Any], integration: Integration) -> Callable[..., Any]:
        @wraps_like(original)
        def open_transport(*args: Any, **kwargs: Any) -> Any:
            manager = original(*args, **kwargs)
            return _Named(manager, transport) if integration.active else manager

        return open_transport

    return wrap


class _Named:
    """A transport's async context manager that names the streams it yields."""

    def __init__(self, manager: Any, transport: str) -> None:
        self._manager = manager
        self._transport = transport
        self._stream: Any = None

    async def __aenter__(self) -> Any:
        streams = await self._manager.__aenter__()
        try:
            self._stream = streams[0]
            _open_streams[id(self._stream)] = (self._stream, self._transport)
        except Exception:  # not the usual tuple: the transport stays unknown
            log_once(FRAMEWORK, f"naming the {self._transport} transport's streams")
        return streams

    async def __aexit__(
        self, et: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> bool | None:
        if self._stream is not None:
            _open_streams.pop(id(self._stream), None)
            self._stream = None
        result: bool | None = await self._manager.__aexit__(et, exc, tb)
        return result


def wrap_session_init(original: Callable[..., Any], integration: Integration) -> Callable[..., Any]:
    """``ClientSession(read_stream, ...)``: the session's transport is its read stream's."""

    @wraps_like(original)
    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        original(self, *args, **kwargs)
        if integration.active:
            try:
                stream = args[0] if args else kwargs.get("read_stream")
                opened = _open_streams.get(id(stream))
                if opened is not None and opened[0] is stream:
                    _session_transports[self] = opened[1]
            except Exception:
                log_once(FRAMEWORK, "ClientSession.__init__ (finding its transport)")

    return __init__


def wrap_initialize(original: Callable[..., Any], integration: Integration) -> Callable[..., Any]:
    """``ClientSession.initialize()``: the server's name, from its answer."""

    @wraps_like(original)
    async def initialize(self: Any, *args: Any, **kwargs: Any) -> Any:
        result = await original(self, *args, **kwargs)
        if integration.active:
            info = attribute(result, "server_info") or attribute(result, "serverInfo")
            name = attribute(info, "name")
            if isinstance(name, str):
                try:
                    _server_names[self] = name
                except TypeError:  # a session that takes no weak reference
                    pass
        return result

    return initialize


def wrap_call_tool(original: Callable[..., Any], integration: Integration) -> Callable[..., Any]:
    """``ClientSession.call_tool(name, arguments, ..., meta=...)``: a ``tool`` call whose request carries it."""

    @wraps_like(original)
    async def call_tool(self: Any, name: Any, *args: Any, **kwargs: Any) -> Any:
        if not integration.active:
            return await original(self, name, *args, **kwargs)
        opened = await _begin(self, name, args, kwargs)
        if opened is None:
            return await original(self, name, *args, **kwargs)
        try:
            result = await original(self, name, *args, **kwargs)
        except BaseException as exc:
            close_call(opened, exc)
            raise
        close_call(opened, error_of(result), output=result)
        return result

    return call_tool


async def _begin(session: Any, name: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Opened | None:
    """Open the call and put the context in ``kwargs["meta"]``; None (and ``kwargs`` untouched) when unrecorded."""
    try:
        if get_current_session() is None:
            # The implicit session opens the store: off the event loop.
            await run_blocking(implicit_session, f"mcp tool {name!r}")
        arguments = args[0] if args else kwargs.get("arguments")
        attributes = {"mcp.server": _server_name(session), "mcp.transport": _session_transports.get(session, UNKNOWN)}
        opened = open_call("tool", str(name), FRAMEWORK, arguments, {**attributes, "mcp.side": "client"})
    except Exception:
        log_once(FRAMEWORK, "ClientSession.call_tool (opening the call)")
        return None
    if opened is None:
        return None
    handle = get_current_session()
    meta = kwargs.get("meta")
    if handle is not None and (meta is None or isinstance(meta, Mapping)):
        kwargs["meta"] = outgoing_meta(meta, handle, call_id_of(opened))
    return opened


def _server_name(session: Any) -> str:
    name = _server_names.get(session)
    if name is None:  # SDK 2 keeps it (from initialize or discover) where anyone can read it
        name = attribute(attribute(session, "server_info"), "name")
    return name if isinstance(name, str) else UNKNOWN

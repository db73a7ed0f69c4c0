"""Recording calls: the primitives every wrapper and adapter uses.

A call is begun (kept in :data:`_writer.inflight` and made the current call)
and ended (its final record queued for the background writer). Adapters use
:class:`call_scope`; ``@openprogram.tool`` inlines the same steps for speed.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from contextvars import Token
from types import TracebackType
from typing import Any

from . import _ids
from ._capture import ATOMIC_TYPES, PRECAPTURED, capture_json, redact_error_text
from ._context import NoSessionError, SessionHandle, call_var, session_var
from ._ids import new_call_id
from ._writer import inflight, queue

__all__ = [
    "begin_call",
    "call_scope",
    "close_call",
    "describe_error",
    "detach_call",
    "end_call",
    "open_call",
    "register_control_flow",
    "status_of",
]

logger = logging.getLogger("openprogram")

_INTERRUPTING = (asyncio.CancelledError, KeyboardInterrupt, GeneratorExit, SystemExit)
_MAX_ERROR = 4096


# A framework's control-flow exceptions (a human-in-the-loop pause, a hand-off to a parent
# graph), registered by its adapter: the status a call ends with when one passes through it.
_control_flow: dict[type[BaseException], str] = {}
_CONTROL_FLOW: tuple[type[BaseException], ...] = ()


def register_control_flow(exc_type: type[BaseException], status: str) -> None:
    """Record a call through which ``exc_type`` (or a subclass) passes as ``status``, without an error.

    For exceptions a framework raises to steer a run rather than to fail it: a call
    paused by a human-in-the-loop interrupt is ``interrupted``; one that handed control
    elsewhere is ``ok``. Applies to every recorded call, ``@openprogram.tool`` included.
    """
    global _CONTROL_FLOW
    if status not in ("ok", "interrupted"):
        raise ValueError(f"a control-flow status is 'ok' or 'interrupted', not {status!r}")
    _control_flow[exc_type] = status
    _CONTROL_FLOW = tuple(_control_flow)


def status_of(exc: BaseException | None) -> str:
    """``ok``, ``interrupted`` (cancellation, Ctrl-C, generator close, a registered pause) or ``error``."""
    if exc is None:
        return "ok"
    if isinstance(exc, _INTERRUPTING):
        return "interrupted"
    if _CONTROL_FLOW and isinstance(exc, _CONTROL_FLOW):
        # The most specific registration wins (a subclass may be registered apart from its base).
        return next(_control_flow[kind] for kind in type(exc).__mro__ if kind in _control_flow)
    return "error"


def describe_error(exc: BaseException) -> str | None:
    """``Type: message``, bounded and never raising; None for registered control flow (not an error)."""
    if _CONTROL_FLOW and isinstance(exc, _CONTROL_FLOW):
        return None
    try:
        text = f"{type(exc).__qualname__}: {exc}"
    except Exception:
        text = f"{type(exc).__qualname__}: <str() failed>"
    if len(text) <= _MAX_ERROR:
        return redact_error_text(text)
    # A bounded head (the rest is cut anyway), never shown up to its last stretch, where a
    # secret cut in two may have been missed.
    text = redact_error_text(text[: 4 * _MAX_ERROR])
    return text[: min(_MAX_ERROR, len(text) - _MAX_ERROR)] + "...[truncated]"


def begin_call(
    handle: SessionHandle,
    parent_id: str | int | None,
    kind: str,
    name: str,
    framework: str | None = None,
    inputs: Any = None,
    attributes: dict[str, Any] | str | None = None,
    call_id: str | None = None,
) -> tuple[Any, ...]:
    """Record the start of a call and return its record (not yet made current).

    ``inputs`` are captured now (a snapshot: later mutation does not change the record).
    ``attributes`` is a dict, or its JSON text when the caller built it already.
    """
    if call_id is None:
        call_id = new_call_id()
    if inputs is None:
        names = None
    else:
        names, inputs = PRECAPTURED, capture_json(inputs)
    rec = (call_id, handle, parent_id, kind, name, framework, names, inputs, None, attributes or None, time.time())
    inflight[call_id] = rec
    return rec


def end_call(
    rec: tuple[Any, ...],
    exc: BaseException | None = None,
    output: Any = None,
    attributes: dict[str, Any] | None = None,
    status: str | None = None,
) -> None:
    """Record the end of a call begun with :func:`begin_call` (idempotent).

    ``status`` overrides the one derived from ``exc`` (for framework control
    flow, e.g. a human-in-the-loop pause raised as an exception).
    """
    if inflight.pop(rec[0], None) is None:
        return
    if attributes:
        start = rec[9]
        merged = dict(json.loads(start) if type(start) is str else start or {})
        merged.update(attributes)
        rec = rec[:9] + (merged,) + rec[10:]
    if output is not None and type(output) not in ATOMIC_TYPES:
        output = (capture_json(output),)  # a snapshot, as for inputs; the 1-tuple marks it as JSON text
    if exc is None:
        queue.extend(rec + (status or "ok", output, None, time.time()))
    else:
        queue.extend(rec + (status or status_of(exc), output, describe_error(exc), time.time()))


#: What :func:`open_call` returns: the call's record, the current-call token, the session token (or None).
Opened = tuple[tuple[Any, ...], Token[Any], "Token[Any] | None"]


def open_call(
    kind: str,
    name: str,
    framework: str | None = None,
    inputs: Any = None,
    attributes: dict[str, Any] | str | None = None,
) -> Opened | None:
    """Begin a call under the current call of the current session and make it current.

    The lean twin of ``call_scope(...).enter()`` for adapters' per-node and per-tool
    hooks: no scope object, no explicit session or parent. With no session the
    no-session policy applies (an implicit session is opened and made current
    until :func:`close_call`). Returns None when the call runs unrecorded; never
    raises, except the "error" policy's RuntimeError.
    """
    try:
        handle = session_var.get()
        if handle is None:
            from ._session import implicit_session

            handle = implicit_session(f"{kind} {name!r}")
            if handle is None:
                return None
            rec = begin_call(handle, handle.root_call_id, kind, name, framework, inputs, attributes)
            return rec, call_var.set(rec[0]), session_var.set(handle)
        # begin_call(), inlined: this runs for every node, tool and function an adapter records.
        n = next(_ids.counter)
        if not n & 0xFFF:
            _ids.every_4096_calls()
        call_id = _ids.prefix + hex(n)
        if inputs is None:
            rec = (call_id, handle, call_var.get() or handle.root_call_id, kind, name, framework, None, None, None,
                   attributes or None, time.time())  # fmt: skip
        else:
            rec = (call_id, handle, call_var.get() or handle.root_call_id, kind, name, framework, PRECAPTURED,
                   capture_json(inputs), None, attributes or None, time.time())  # fmt: skip
        inflight[call_id] = rec
        return rec, call_var.set(call_id), None
    except NoSessionError:
        raise  # the "error" no-session policy, by the user's choice
    except Exception:
        logger.exception("openprogram: could not begin recording %s %r", kind, name)
        return None


def close_call(
    opened: Opened,
    exc: BaseException | None = None,
    output: Any = None,
    status: str | None = None,
    attributes: dict[str, Any] | None = None,
) -> None:
    """End a call begun with :func:`open_call` and restore the context. Never raises."""
    rec, c_token, s_token = opened
    _reset(call_var, c_token)
    if s_token is not None:
        _reset(session_var, s_token)
    if exc is None and status is None and attributes is None:
        # end_call(), inlined for the common case (capture_json never raises).
        if inflight.pop(rec[0], None) is not None:
            if output is not None and type(output) not in ATOMIC_TYPES:
                output = (capture_json(output),)
            queue.extend(rec + ("ok", output, None, time.time()))
        return
    try:
        end_call(rec, exc, output, attributes, status)
    except Exception:
        logger.exception("openprogram: could not record the end of %s %r", rec[3], rec[4])


def detach_call(opened: Opened) -> tuple[Any, ...]:
    """Restore the context :func:`open_call` changed but keep its call open; return its record.

    For a call that outlives the block that opened it (a stream, an outcome decided later):
    end it with :func:`end_call`.
    """
    rec, c_token, s_token = opened
    _reset(call_var, c_token)
    if s_token is not None:
        _reset(session_var, s_token)
    return rec


def _reset(var: Any, token: Token[Any]) -> None:
    try:
        var.reset(token)
    except ValueError:
        # Ended in another context (e.g. an async generator finalised by the loop):
        # that context is gone, so there is nothing left to restore.
        logger.debug("openprogram: context token reset from another context; ignored")


class call_scope:
    """Record one call around a block: ``with call_scope("node", "agent") as scope:``.

    On entry the session is resolved (explicit ``session`` > the current one >
    the no-session policy), the call is begun under the current call (or
    ``parent_id``) and made current; on exit it is ended with the block's
    outcome and the context is restored. Usable with ``with`` and ``async
    with``. Exceptions always propagate unchanged. ``scope.recording`` is False
    when the policy let the block run unrecorded.
    """

    __slots__ = (
        "_extra",
        "_parent",
        "_session",
        "_tokens",
        "attributes",
        "framework",
        "handle",
        "inputs",
        "kind",
        "name",
        "output",
        "rec",
    )  # fmt: skip

    def __init__(
        self,
        kind: str,
        name: str,
        *,
        framework: str | None = None,
        inputs: Any = None,
        attributes: dict[str, Any] | str | None = None,
        session: SessionHandle | None = None,
        parent_id: str | None = None,
    ) -> None:
        self.kind = kind
        self.name = name
        self.framework = framework
        self.inputs = inputs
        self.attributes = attributes
        self._session = session
        self._parent = parent_id
        self.output: Any = None
        self.rec: tuple[Any, ...] | None = None
        self.handle: SessionHandle | None = None
        self._tokens: tuple[Token[Any], ...] = ()
        self._extra: dict[str, Any] | None = None

    @property
    def recording(self) -> bool:
        return self.rec is not None

    @property
    def call_id(self) -> str | None:
        return None if self.rec is None else self.rec[0]

    def set_output(self, value: Any) -> None:
        """The value to record as this call's output."""
        self.output = value

    def set_attributes(self, **values: Any) -> None:
        """Extra attributes recorded with the call's end (merged into its start attributes)."""
        if self._extra is None:
            self._extra = {}
        self._extra.update(values)

    def enter(self) -> call_scope:
        """Begin the call (what ``__enter__`` does), for hook pairs that cannot use ``with``."""
        try:
            current = session_var.get()
            handle = self._session or current
            if handle is None:
                from ._session import implicit_session

                handle = implicit_session(f"{self.kind} {self.name!r}")
                if handle is None:
                    return self
            parent: str | int
            if self._parent is not None:
                parent = self._parent
            elif current is handle or (current is not None and current.session_id == handle.session_id):
                parent = call_var.get() or handle.root_call_id
            else:
                parent = handle.root_call_id
            rec = begin_call(handle, parent, self.kind, self.name, self.framework, self.inputs, self.attributes)
            self.rec, self.handle = rec, handle
            if current is handle:
                self._tokens = (call_var.set(rec[0]),)
            else:
                self._tokens = (call_var.set(rec[0]), session_var.set(handle))
        except NoSessionError:
            raise  # the "error" no-session policy, by the user's choice
        except Exception:
            logger.exception("openprogram: could not begin recording %s %r", self.kind, self.name)
        return self

    def exit(self, exc: BaseException | None = None, status: str | None = None) -> None:
        """End the call (what ``__exit__`` does). Never raises. ``status`` overrides the derived one."""
        tokens, self._tokens = self._tokens, ()
        if len(tokens) == 2:
            _reset(session_var, tokens[1])
        if tokens:
            _reset(call_var, tokens[0])
        rec = self.rec
        if rec is not None:
            try:
                end_call(rec, exc, self.output, self._extra, status)
            except Exception:
                logger.exception("openprogram: could not record the end of %s %r", self.kind, self.name)

    def __enter__(self) -> call_scope:
        return self.enter()

    def __exit__(self, et: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.exit(exc)

    async def __aenter__(self) -> call_scope:
        return self.enter()

    async def __aexit__(
        self, et: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.exit(exc)

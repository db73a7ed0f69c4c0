"""Recording a call around a block: resolve its session, begin the call, make it current, end it.

A call's session is the explicit one, else the current one, else what the
no-session policy gives; its parent is the current call when that belongs to the
same session, else the session's root call. Adapters use :class:`call_scope`, or
the lean :func:`open_call` / :func:`close_call` pair in their per-call hooks;
``@openprogram.tool`` resolves with :func:`resolve` and records inline.
"""

from __future__ import annotations

import logging
import time
from contextvars import Token
from types import TracebackType
from typing import Any

from .._capture import ATOMIC_TYPES, PRECAPTURED, capture_json
from .._recording import (
    CALL_ID,
    KIND,
    NAME,
    SessionHandle,
    begin_call,
    call_var,
    end_call,
    inflight,
    queue,
    reset_var,
    session_var,
)
from .._runtime import NoSessionError
from .._runtime import ids as _ids
from .._sessions import implicit_session

__all__ = ["Opened", "call_scope", "close_call", "detach_call", "open_call", "resolve"]

logger = logging.getLogger("openprogram")


def resolve(explicit: SessionHandle | None, entry: str) -> tuple[SessionHandle, str | int, bool] | None:
    """Where a call is recorded: its session, its parent, and whether that session must be installed.

    The session is ``explicit``, else the current one, else the no-session policy's
    (``entry`` names the call for its messages). None: the call runs unrecorded.
    Raises only the ``error`` policy's :class:`NoSessionError`.
    """
    current = session_var.get()
    handle = explicit or current
    if handle is None:
        handle = implicit_session(entry)
        if handle is None:
            return None
        return handle, handle.root_call_id, True
    if current is handle:
        return handle, call_var.get() or handle.root_call_id, False
    if current is not None and current.session_id == handle.session_id:
        return handle, call_var.get() or handle.root_call_id, True
    return handle, handle.root_call_id, True


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
            handle = implicit_session(f"{kind} {name!r}")
            if handle is None:
                return None
            rec = begin_call(handle, handle.root_call_id, kind, name, framework, inputs, attributes)
            return rec, call_var.set(rec[CALL_ID]), session_var.set(handle)
        # begin_call(), inlined: this runs for every node, tool and function an adapter records.
        n = next(_ids.counter)
        if not n & 0xFFF:
            _ids.every_4096_calls()
        call_id = _ids.prefix + hex(n)
        # the record layout (record.FIELDS), kept as a table
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
    try:
        call_var.reset(c_token)  # reset_var(), inlined: this runs for every call an adapter records
    except ValueError:
        reset_var(call_var, c_token)  # a token of another context: reset_var logs it
    if s_token is not None:
        reset_var(session_var, s_token)
    if exc is None and status is None and attributes is None:
        # end_call(), inlined for the common case (capture_json never raises).
        if inflight.pop(rec[CALL_ID], None) is not None:
            if output is not None and type(output) not in ATOMIC_TYPES:
                output = (capture_json(output),)
            queue.extend(rec + ("ok", output, None, time.time()))
        return
    try:
        end_call(rec, exc, output, attributes, status)
    except Exception:
        logger.exception("openprogram: could not record the end of %s %r", rec[KIND], rec[NAME])


def detach_call(opened: Opened) -> tuple[Any, ...]:
    """Restore the context :func:`open_call` changed but keep its call open; return its record.

    For a call that outlives the block that opened it (a stream, an outcome decided later):
    end it with :func:`end_call`.
    """
    rec, c_token, s_token = opened
    reset_var(call_var, c_token)
    if s_token is not None:
        reset_var(session_var, s_token)
    return rec


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
    )

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
        return None if self.rec is None else self.rec[CALL_ID]

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
            resolved = resolve(self._session, f"{self.kind} {self.name!r}")
            if resolved is None:
                return self
            handle, parent, install = resolved
            if self._parent is not None:
                parent = self._parent
            rec = begin_call(handle, parent, self.kind, self.name, self.framework, self.inputs, self.attributes)
            self.rec, self.handle = rec, handle
            if install:
                self._tokens = (call_var.set(rec[CALL_ID]), session_var.set(handle))
            else:
                self._tokens = (call_var.set(rec[CALL_ID]),)
        except NoSessionError:
            raise  # the "error" no-session policy, by the user's choice
        except Exception:
            logger.exception("openprogram: could not begin recording %s %r", self.kind, self.name)
        return self

    def exit(self, exc: BaseException | None = None, status: str | None = None) -> None:
        """End the call (what ``__exit__`` does). Never raises. ``status`` overrides the derived one."""
        tokens, self._tokens = self._tokens, ()
        if len(tokens) == 2:
            reset_var(session_var, tokens[1])
        if tokens:
            reset_var(call_var, tokens[0])
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

"""Calls that outlive the block that began them.

- :class:`LaterCall`: a call begun now whose outcome is decided later (an
  orchestration's result, a retried attempt); never current except inside
  ``with call.current():``.
- :class:`StreamCall`: a call kept open while a stream made under it is iterated;
  it keeps a bounded summary of what the stream yields.
- :class:`CallsByKey`: calls begun in one framework callback and ended in another,
  matched by an object both callbacks receive.

Beginning one changes no context variable: a framework callback never installs
context it could not be sure to reset.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from contextvars import Token
from types import TracebackType
from typing import Any, TypeVar

from .._capture import PRECAPTURED, capture_json
from .._recording import (
    CALL_ID,
    KIND,
    KWARGS,
    NAME,
    NAMES,
    SESSION,
    SessionHandle,
    call_var,
    end_call,
    inflight,
    reset_var,
    session_var,
)
from .._runtime import log_once
from .scope import Opened, detach_call, open_call

__all__ = ["CallsByKey", "LaterCall", "StreamCall"]

_MAX_ITEMS = 100
_MAX_TEXT_PARTS = 1000

_Later = TypeVar("_Later", bound="LaterCall")


class LaterCall:
    """A recorded call, begun under the current call, ended by :meth:`end` (once) from anywhere."""

    __slots__ = ("_tokens", "ended", "framework", "rec")

    def __init__(self, rec: tuple[Any, ...], framework: str) -> None:
        self.rec = rec
        self.framework = framework
        self.ended = False
        self._tokens: list[tuple[Token[Any], Token[Any]]] = []

    @classmethod
    def begin(
        cls: type[_Later],
        kind: str,
        name: str,
        framework: str,
        inputs: Any = None,
        attributes: dict[str, Any] | str | None = None,
    ) -> _Later | None:
        """Begin a call under the current one (no-session policy applied); None when it runs unrecorded."""
        opened = open_call(kind, name, framework, inputs, attributes)
        if opened is None:
            return None
        return cls(detach_call(opened), framework)

    @classmethod
    def of(cls: type[_Later], opened: Opened, framework: str, *, detach: bool = False) -> _Later:
        """The call begun by :func:`open_call` as ``opened``, to be ended later from anywhere.

        ``detach=True``: its block leaves it open, and the context ``open_call`` changed is
        restored now. Otherwise the context stays with the block, whose ``close_call``
        restores it (and records nothing more once the call has ended here).
        """
        return cls(detach_call(opened) if detach else opened[0], framework)

    @property
    def call_id(self) -> str:
        call_id: str = self.rec[CALL_ID]
        return call_id

    @property
    def handle(self) -> SessionHandle:
        handle: SessionHandle = self.rec[SESSION]
        return handle

    def set_inputs(self, inputs: Any) -> None:
        """The call's inputs, known only after it began (captured now, as at its begin); until it ends.

        For a call ended through :meth:`end` (a ``LaterCall.of`` call left to its block keeps its begin's).
        """
        if self.ended:
            return
        try:
            names, args = (None, None) if inputs is None else (PRECAPTURED, capture_json(inputs))
            self.rec = self.rec[:NAMES] + (names, args, None) + self.rec[KWARGS + 1 :]
            if self.rec[CALL_ID] in inflight:
                inflight[self.rec[CALL_ID]] = self.rec  # what a flush writes of a running call
        except Exception as error:
            log_once(self.framework, f"the inputs of {self.rec[KIND]} {self.rec[NAME]!r}", error)

    def current(self) -> _Current:
        """``with call.current():`` — the call and its session are current inside the block, restored after.

        A new block each time: tasks running concurrently may each make the call current.
        """
        return _Current(self.rec)

    def __enter__(self) -> LaterCall:
        self._tokens.append((session_var.set(self.rec[SESSION]), call_var.set(self.rec[CALL_ID])))
        return self

    def __exit__(self, et: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        s_token, c_token = self._tokens.pop()
        reset_var(call_var, c_token)
        reset_var(session_var, s_token)

    def end(
        self,
        exc: BaseException | None = None,
        output: Any = None,
        attributes: dict[str, Any] | None = None,
        status: str | None = None,
    ) -> None:
        """Record the call's end; later calls do nothing. Never raises."""
        if self.ended:
            return
        self.ended = True
        try:
            end_call(self.rec, exc, output, attributes, status)
        except Exception as error:
            log_once(self.framework, f"ending {self.rec[KIND]} {self.rec[NAME]!r}", error)


class _Current:
    """One ``with call.current():`` block: the tokens it must reset are its own."""

    __slots__ = ("_rec", "_tokens")

    def __init__(self, rec: tuple[Any, ...]) -> None:
        self._rec = rec
        self._tokens: tuple[Token[Any], Token[Any]] | None = None

    def __enter__(self) -> _Current:
        self._tokens = (session_var.set(self._rec[SESSION]), call_var.set(self._rec[CALL_ID]))
        return self

    def __exit__(self, et: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        if self._tokens is not None:
            s_token, c_token = self._tokens
            self._tokens = None
            reset_var(call_var, c_token)
            reset_var(session_var, s_token)


class StreamCall(LaterCall):
    """A call open while a stream made under it is iterated; :meth:`add` each item it yields.

    Its output is ``{"yielded": [first items], "count": n}``, or ``{"text": ..., "count": n}``
    when ``text_of`` recognises the items as chunks of text.
    """

    __slots__ = ("count", "items", "text", "text_of")

    def __init__(self, rec: tuple[Any, ...], framework: str) -> None:
        super().__init__(rec, framework)
        self.items: list[Any] = []
        self.text: list[str] | None = None
        self.count = 0
        self.text_of: Callable[[Any], str | None] | None = None

    def add(self, item: Any) -> None:
        self.count += 1
        text = self.text_of(item) if self.text_of is not None else None
        if text is not None or self.text is not None:
            if self.text is None:
                self.text = []
            if len(self.text) < _MAX_TEXT_PARTS:
                self.text.append(text or "")
        elif len(self.items) < _MAX_ITEMS:
            self.items.append(item)

    def output(self) -> dict[str, Any]:
        if self.text is not None:
            return {"text": "".join(self.text), "count": self.count}
        return {"yielded": self.items, "count": self.count}

    def finish(self, exc: BaseException | None) -> None:
        """End the call with what the stream yielded."""
        self.end(exc, self.output())


class CallsByKey:
    """Calls begun in one callback and ended in another, matched by the identity of ``key``.

    For before/after hook pairs that receive the same object (a tool-call context's
    input dict): :meth:`begin` in the first, :meth:`take` in the second. Nothing is
    made current; a wrapper that runs the body in between makes the call current with
    ``with call.current():``.
    """

    def __init__(self) -> None:
        self._calls: dict[int, tuple[object, LaterCall]] = {}
        self._lock = threading.Lock()

    def begin(self, key: object, call: LaterCall) -> None:
        with self._lock:
            self._calls[id(key)] = (key, call)  # the key is kept: its id is not reused while it waits

    def peek(self, key: object) -> LaterCall | None:
        found = self._calls.get(id(key))
        return found[1] if found is not None and found[0] is key else None

    def take(self, key: object) -> LaterCall | None:
        with self._lock:
            found = self._calls.get(id(key))
            if found is None or found[0] is not key:
                return None
            del self._calls[id(key)]
            return found[1]

    def __len__(self) -> int:
        return len(self._calls)

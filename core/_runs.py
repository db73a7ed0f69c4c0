"""Which session a framework run records into: "this framework run belongs to that session".

A framework run with an identity of its own (a LangGraph ``thread_id``, a CrewAI
flow id or execution id) is bound to the session it runs in; started with no
session open, it continues the session bound to that identity, from any
process. :func:`run_session` gives the adapter the ``session_context`` to enter
around such a run, or None when the run records where it is.
"""

from __future__ import annotations

import logging
import uuid
from types import TracebackType
from typing import Any

from ._context import SessionHandle, session_var
from ._guard import log_once
from ._session import session_context, session_for_run

__all__ = ["RunEntry", "last_run_session_id", "run_session"]

logger = logging.getLogger("openprogram")

_last: dict[str, str] = {}  # framework -> the session its last run begun with no session open recorded into


def last_run_session_id(framework: str) -> str | None:
    """The session the most recent ``framework`` run started with no session open recorded into."""
    return _last.get(framework)


class RunEntry:
    """A ``session_context`` for one run, which logs the session it opened (``with`` / ``async with``).

    ``log=False``: it opens the session silently (a run whose identity already names its
    session, such as a LangGraph thread, where one log line per run would be noise).
    """

    __slots__ = ("context", "framework", "log", "what")

    def __init__(self, context: session_context, framework: str, what: str, log: bool = True) -> None:
        self.context, self.framework, self.what, self.log = context, framework, what, log

    def _opened(self, handle: SessionHandle) -> SessionHandle:
        _last[self.framework] = handle.session_id
        if not self.log:
            return handle
        logger.info(
            "openprogram: %s %s ran with no session open; recorded in session %s (see it with `openprogram show %s`)",
            self.framework, self.what, handle.session_id, handle.session_id,
        )  # fmt: skip
        return handle

    def __enter__(self) -> SessionHandle:
        return self._opened(self.context.__enter__())

    def __exit__(self, et: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.context.__exit__(et, exc, tb)

    async def __aenter__(self) -> SessionHandle:
        return self._opened(await self.context.__aenter__())

    async def __aexit__(
        self, et: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.context.__aexit__(et, exc, tb)


def run_session(
    framework: str,
    what: str,
    key: Any = None,
    *,
    namespace: str | None = None,
    runtime: Any = None,
    log: bool = True,
) -> RunEntry | None:
    """The session to enter around a ``framework`` run (``what`` names it in the log), or None.

    Inside a session: ``key`` (the run's identity, if it has one) is bound to it and None
    is returned. Outside: the session bound to ``key`` earlier, or one derived from it;
    with no ``key``, a new session for this run. ``namespace`` scopes the key (default:
    the framework); ``runtime`` becomes the opened session's ``runtime``; ``log=False``
    opens it without the log line (see :class:`RunEntry`). Never raises:
    a failure is logged once and the run records as if no run identity were known.
    """
    try:
        if session_var.get() is not None:
            if key is not None:
                session_for_run(namespace or framework, str(key))
            return None
        context = session_for_run(namespace or framework, str(key) if key is not None else uuid.uuid4().hex)
    except Exception as exc:
        log_once(framework, "finding the run's session", exc)
        return None
    if context is None:
        return None
    if runtime is not None:
        context.runtime = runtime
    return RunEntry(context, framework, what, log)

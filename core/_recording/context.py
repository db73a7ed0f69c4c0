"""The context variables: which session and which call are current.

The current session is visible inside every call made in the same thread or
asyncio task, and in every thread or task that copies the context (see
:mod:`openprogram._runtime.propagation`). This module knows no store backend, no CLI
and no framework.
"""

from __future__ import annotations

import dataclasses
import logging
from contextvars import ContextVar, Token
from typing import TYPE_CHECKING, Any

from .._runtime import as_text

if TYPE_CHECKING:
    from ..stores import Store

__all__ = [
    "SessionHandle",
    "call_var",
    "current_call_id",
    "get_current_session",
    "require_current_session",
    "reset_var",
    "session_var",
]

logger = logging.getLogger("openprogram")


@dataclasses.dataclass(frozen=True, eq=False)
class SessionHandle:
    """An open session as seen by the code running in it. Immutable.

    ``created`` is True when the entry that made this handle created the
    session; ``root_call_id`` is the call new top-level calls attach to (the
    turn, or the parent's call for a process that joined from its environment).
    """

    session_id: str
    turn_id: str
    runtime: Any
    created: bool
    agent_id: str
    store: Store
    root_call_id: str

    def __repr__(self) -> str:
        return (
            f"SessionHandle(session_id={self.session_id!r}, turn_id={self.turn_id!r}, "
            f"agent_id={self.agent_id!r}, created={self.created})"
        )


session_var: ContextVar[SessionHandle | None] = ContextVar("openprogram.session", default=None)
"""The session of the code now running, or None."""

call_var: ContextVar[str | int | None] = ContextVar("openprogram.call", default=None)
"""The id of the call now running: the parent of any call that starts here (an int is an id
not yet spelled out: see ``_ids.as_text``)."""


def get_current_session() -> SessionHandle | None:
    """The session of the code now running, or None outside any session."""
    return session_var.get()


def require_current_session() -> SessionHandle:
    """The current session; raise RuntimeError naming the fix when there is none."""
    handle = session_var.get()
    if handle is None:
        raise RuntimeError(
            "no openprogram session is active here: wrap the entry point in "
            "`with openprogram.session_context(...)` (or `async with`), or re-install an "
            "existing handle with `openprogram.run_with_session(handle)`"
        )
    return handle


def current_call_id() -> str | None:
    """The id of the call now running, or None."""
    return as_text(call_var.get())


def reset_var(var: ContextVar[Any], token: Token[Any]) -> None:
    """``var.reset(token)``, where a token set in another context is ignored.

    A call ended in another context (an async generator finalised by the loop) has
    nothing left to restore: the context it changed is gone.
    """
    try:
        var.reset(token)
    except ValueError:
        logger.debug("openprogram: context token reset from another context; ignored")

"""Calls made with no session open: the no-session policy and the implicit session.

Under the default policy, ``auto``, such a call joins the session a parent process
exported (see ``export_context``) or else the process's implicit session; ``warn``
runs it unrecorded; ``error`` raises. The implicit session lives in the default store
in effect: when that changes (``OPENPROGRAM_STORE`` or ``OPENPROGRAM_HOME`` set anew, as
a test suite does per test), the next such call opens a new implicit session there.
Every session a process records into with no session open is announced once, at
WARNING (:func:`announce`): the implicit one, and each conversation session a framework
run continues (see ``openprogram._sessions.runs``).
"""

from __future__ import annotations

import logging
import os
import threading
import time
from typing import Any

from .._recording import SessionHandle, begin_call, end_call, ensure_started, on_exit
from .._runtime import InvalidSessionId, NoSessionError, new_call_id, new_session_id, validate_session_id
from ..stores import Store, default_store_key, open_store
from .known import note_session

__all__ = [
    "ENV_AGENT_ID",
    "ENV_NO_SESSION",
    "ENV_PARENT_CALL",
    "ENV_SESSION_ID",
    "ENV_TURN_ID",
    "announce",
    "current_policy",
    "forget_implicit",
    "implicit_session",
    "set_policy",
]

logger = logging.getLogger("openprogram")

# What a parent process exports for its children to join its session.
ENV_SESSION_ID = "OPENPROGRAM_SESSION_ID"
ENV_TURN_ID = "OPENPROGRAM_TURN_ID"
ENV_PARENT_CALL = "OPENPROGRAM_PARENT_CALL"
ENV_AGENT_ID = "OPENPROGRAM_AGENT_ID"
ENV_NO_SESSION = "OPENPROGRAM_NO_SESSION"
_POLICIES = ("auto", "warn", "error")

_policy: str | None = None
# The implicit session, with the default store's key (see default_store_key) it was opened under: one
# tuple, read at once, so a call never pairs one store's key with another's session.
_implicit: tuple[tuple[object, ...], SessionHandle] | None = None
_implicit_lock = threading.Lock()
_implicit_rec: tuple[Any, ...] | None = None
_warned = False
_announced: set[str] = set()  # sessions this process said it records into with no session open
_announce_lock = threading.Lock()


def set_policy(no_session: str) -> None:
    """Set the no-session policy (see :func:`openprogram.configure`)."""
    global _policy
    if no_session not in _POLICIES:
        raise ValueError(f"no_session must be one of {', '.join(_POLICIES)}, not {no_session!r}")
    _policy = no_session


def current_policy() -> str:
    """The no-session policy in force: the configured one, else the environment's, else ``auto``."""
    if _policy is not None:
        return _policy
    value = os.environ.get(ENV_NO_SESSION, "auto").strip().lower()
    return value if value in _POLICIES else "auto"


def implicit_session(entry: str | None = None) -> SessionHandle | None:
    """The session used for calls made with no session open, per the policy.

    With ``entry`` (what is about to run) it is created on first need; without,
    it is only returned if it exists — so code can read the id that was logged.
    """
    global _implicit, _warned
    implicit = _implicit
    if implicit is not None and implicit[0] == default_store_key():
        if entry is None or _policy is None or _policy == "auto":
            return implicit[1]
    elif entry is None:
        return None  # none yet, or one kept in a store that is no longer the default
    # A policy configured after the implicit session was opened still applies to later calls.
    policy = current_policy()
    if policy == "error":
        raise NoSessionError(
            f"openprogram: {entry} ran with no session open (policy 'error'): wrap the entry point in "
            "`openprogram.session_context(...)` or re-install a handle with `openprogram.run_with_session`"
        )
    if policy == "warn":
        if not _warned:
            _warned = True
            logger.warning(
                "openprogram: %s ran with no session open; it is not recorded "
                "(policy 'warn'; use openprogram.session_context)",
                entry,
            )
        return None
    with _implicit_lock:
        key = default_store_key()
        if _implicit is None or _implicit[0] != key:
            try:
                store = open_store()
                handle = _kept_or_joined(store) or _open_implicit(store, entry)
            except Exception as exc:  # a misconfigured store never stops the agent: run unrecorded
                if not _warned:
                    _warned = True
                    logger.warning(
                        "openprogram: %s ran with no session open and no store could be opened "
                        "(%s); running unrecorded",
                        entry,
                        exc,
                    )
                return None
            _implicit = key, handle
        return _implicit[1]


def _kept_or_joined(store: Store) -> SessionHandle | None:
    """For the default ``store``, an implicit session that is not a new one, or None (called under the lock).

    The current one if its store is still the default (another of the variables changed), else
    the session a parent process exported, joined in ``store``.
    """
    if _implicit is not None:
        if _implicit[1].store is store:
            return _implicit[1]
        _close_implicit()  # its turn, in the store that was the default until now
    handle = _from_environment(store)
    if handle is not None:
        logger.info("openprogram: joining session %s from the environment", handle.session_id)
    return handle


def _from_environment(store: Store) -> SessionHandle | None:
    session_id = os.environ.get(ENV_SESSION_ID)
    if not session_id:
        return None
    try:
        validate_session_id(session_id)
        turn_id = validate_session_id(os.environ.get(ENV_TURN_ID) or new_session_id(), what="turn id")
    except InvalidSessionId as exc:
        logger.warning("openprogram: ignoring %s from the environment: %s", ENV_SESSION_ID, exc)
        return None
    parent = os.environ.get(ENV_PARENT_CALL) or ""
    agent_id = os.environ.get(ENV_AGENT_ID) or "main"
    ensure_started()  # else nothing is written before exit, and a killed child loses it all
    note_session(store, session_id, agent_id, time.time())
    return SessionHandle(session_id, turn_id, None, False, agent_id, store, parent)


def _open_implicit(store: Store, entry: str) -> SessionHandle:
    global _implicit_rec
    ensure_started()
    session_id = new_session_id()
    turn_id = new_session_id()
    note_session(store, session_id, "main", time.time())
    handle = SessionHandle(session_id, turn_id, None, True, "main", store, new_call_id())
    _implicit_rec = begin_call(
        handle, None, "turn", "main", None, None, {"implicit": True, "created": True}, handle.root_call_id
    )
    announce(session_id, entry, "this process's implicit session, for everything run with no session open")
    return handle


def announce(session_id: str, entry: str, what: str) -> None:
    """Say once per process, at WARNING, that ``entry`` records into ``session_id`` (``what`` it is)."""
    with _announce_lock:
        if session_id in _announced:
            return
        _announced.add(session_id)
    logger.warning(  # a line each, short enough to read in a terminal
        "openprogram: %s ran with no session open; recording into session %s\n"
        "  that session:       %s\n"
        "  see it:             openprogram show %s\n"
        "  choose the session: run inside openprogram.session_context(...); session_context(%r) continues this one\n"
        "  record nothing:     openprogram.configure(no_session='warn' or 'error')",
        entry,
        session_id,
        what,
        session_id,
        session_id,
    )


def _close_implicit() -> None:
    global _implicit_rec
    if _implicit_rec is not None:
        rec, _implicit_rec = _implicit_rec, None
        end_call(rec)


def forget_implicit() -> None:
    """End the implicit session's turn and forget it: the next call with no session open opens another.

    The no-session policy stays as configured (a test's teardown: the next test starts afresh).
    """
    global _implicit
    with _implicit_lock:
        _close_implicit()
        _implicit = None


def reset() -> None:
    """Back to how a process starts: no configured policy, no implicit session (its open turn ended)."""
    global _policy, _warned
    forget_implicit()
    _policy, _warned = None, False
    _announced.clear()


def _forget_implicit_after_fork() -> None:
    global _implicit_rec, _implicit_lock
    # A forked child keeps the parent's implicit session but not its open turn.
    _implicit_rec = None
    _implicit_lock = threading.Lock()


on_exit(_close_implicit)
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_implicit_after_fork)

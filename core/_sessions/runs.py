"""Which session a framework run records into: one rule for every adapter.

Inside a session, a run records there, and its identity (if it has one) is bound to
that session. With no session open, under the ``auto`` policy, a run records into the
process's implicit session — except a run whose identity names a conversation that
persists beyond the process (a LangGraph thread's checkpoint, a CrewAI flow's state
id, a Pydantic AI or Agents SDK conversation id), which continues the session bound to
that identity, from any process, or starts one. Each such session is announced once
per process, at WARNING. :func:`run_session` gives the adapter the ``session_context``
to enter around a run, or None when the run records where it is.
"""

from __future__ import annotations

import logging
import secrets
import time
from collections.abc import Sequence
from types import TracebackType
from typing import Any

from .._recording import SessionHandle, enqueue, session_var
from .._runtime import derive_session_id, log_once
from ..stores import Store, open_store
from .entry import session_context
from .policy import announce, current_policy, implicit_session

__all__ = ["RunEntry", "bound_session", "last_run_session_id", "run_session", "session_for_run"]

logger = logging.getLogger("openprogram")

_last: dict[str, str] = {}  # framework -> the session its last run begun with no session open recorded into


def last_run_session_id(framework: str) -> str | None:
    """The session the most recent ``framework`` run started with no session open recorded into."""
    return _last.get(framework)


class RunEntry:
    """A ``session_context`` for one run of a conversation, announced once per session (``with`` / ``async with``)."""

    __slots__ = ("context", "conversation", "framework", "what")

    def __init__(self, context: session_context, framework: str, what: str, conversation: str) -> None:
        self.context, self.framework, self.what, self.conversation = context, framework, what, conversation

    def _opened(self, handle: SessionHandle) -> SessionHandle:
        _last[self.framework] = handle.session_id
        announce(handle.session_id, f"{self.framework} {self.what}", f"the session of its {self.conversation}")
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

    def leave(self, exc: BaseException | None) -> None:
        """Leave as ``__aexit__`` does, without awaiting durability (the writer's next cycle; a read flushes first).

        For a run in a task of its own whose end its framework awaits: an await there delays that end.
        """
        self.context._uninstall(exc)


def run_session(
    framework: str,
    what: str,
    key: Any = None,
    *,
    namespace: str | None = None,
    runtime: Any = None,
    conversation: str | None = None,
    earlier: Sequence[str] = (),
    new: bool = False,
) -> RunEntry | None:
    """The session to enter around a ``framework`` run (``what`` names it in the log), or None.

    ``key`` is the run's identity when it names a conversation that persists. Inside a
    session: ``key`` is bound to it and None is returned. Outside, with no ``key``: None,
    the run records into the implicit session (opened here, so that
    :func:`last_run_session_id` knows it). Outside, with a ``key``: the session bound to
    it earlier, else to the first of the ``earlier`` identities the conversation had (a
    thread's older checkpoints) that is bound, else one derived from ``key``; ``new=True``
    says the conversation starts now (a new session named after ``key``, nothing looked
    up). ``namespace`` scopes the keys (default: the framework); ``runtime`` becomes the
    opened session's ``runtime``; ``conversation`` describes the key in the log. Never
    raises: a failure is logged once and the run records as if no run identity were known.
    """
    try:
        if session_var.get() is not None:
            if key is not None and not new:
                session_for_run(namespace or framework, str(key))
            return None
        if key is None:
            _join_implicit(framework, what)
            return None
        if current_policy() != "auto":
            return None
        name = namespace or framework
        if new:
            # Named after the key, made unique: another process's conversation may reuse the key.
            fresh = derive_session_id(name, f"{key}-{secrets.token_hex(8)}")  # not uuid4: programs patch it
            context: session_context | None = session_context(fresh, store=open_store())
        else:
            context = _continued(name, str(key), earlier)
    except Exception as exc:
        log_once(framework, "finding the run's session", exc)
        return None
    if context is None:
        return None
    if runtime is not None:
        context.runtime = runtime
    return RunEntry(context, framework, what, conversation or f"{name} id {str(key)!r}")


def _continued(namespace: str, key: str, earlier: Sequence[str]) -> session_context | None:
    if earlier and bound_session(namespace, key) is None:
        for candidate in earlier:
            found = bound_session(namespace, candidate)
            if found is not None:
                return session_context(found[1], store=found[0])
    return session_for_run(namespace, key)


def _join_implicit(framework: str, what: str) -> None:
    if current_policy() != "auto":
        return  # the run's own calls apply the policy: unrecorded, or the user's NoSessionError
    handle = implicit_session(f"{framework} {what}")
    if handle is not None:
        _last[framework] = handle.session_id


_last_binding: dict[tuple[str, str], tuple[Store, str]] = {}
_MAX_LAST_BINDINGS = 10_000
_looked_up: dict[tuple[int, str, str], str] = {}  # (id(store), namespace, key) -> the session found there


def session_for_run(namespace: str, key: str, *, agent_id: str = "main") -> session_context | None:
    """Where a framework run with its own identity (a LangGraph checkpoint, a CrewAI flow id) records.

    Inside a session: the identity is bound to that session (durably, in its
    store) and None is returned — record in the current session. Outside any
    session: a :class:`session_context` to enter for the run, continuing the
    session the identity was bound to earlier (see :func:`bound_session`), or
    else one whose id is derived from the identity — so every run of one
    conversation lands in one session. Returns None too when the no-session
    policy is not ``auto``.
    """
    current = session_var.get()
    if current is not None:
        last_key = (namespace, key)
        last = _last_binding.get(last_key)
        if last is None or last[0] is not current.store or last[1] != current.session_id:
            enqueue({"alias": (namespace, key, current.session_id, time.time()), "store": current.store})
            _last_binding.pop(last_key, None)  # re-inserted last: the oldest binding is dropped first
            if len(_last_binding) >= _MAX_LAST_BINDINGS:
                del _last_binding[next(iter(_last_binding))]
            _last_binding[last_key] = (current.store, current.session_id)
        return None
    if current_policy() != "auto":
        return None
    try:
        found = bound_session(namespace, key)
    except Exception as exc:  # a misconfigured store never stops the agent: the run records nothing
        logger.warning("openprogram: cannot open the store for %s run %r: %s", namespace, key, exc)
        return None
    if found is not None:
        return session_context(found[1], agent_id=agent_id, store=found[0])
    store = open_store()
    session_id = derive_session_id(namespace, key)
    _looked_up[(id(store), namespace, key)] = session_id  # not looked up again
    return session_context(session_id, agent_id=agent_id, store=store)


def bound_session(namespace: str, key: str) -> tuple[Store, str] | None:
    """The store and session a framework run identity was bound to, or chosen for, earlier; else None.

    Looked for in this process's bindings (in whatever store), then in the default
    store, where any process may have bound it. Raises only when the default store
    cannot be opened; a store that cannot be asked is logged and counts as no binding.
    """
    last = _last_binding.get((namespace, key))
    if last is not None:
        return last
    store = open_store()
    session_id = _looked_up.get((id(store), namespace, key))
    if session_id is None:
        try:
            session_id = store.resolve_alias(namespace, key)
        except Exception as exc:  # an unusable store never stops the agent
            logger.warning("openprogram: cannot look up %s run %r in store %s: %s", namespace, key, store.url, exc)
            return None
        if session_id is None:
            return None
        _looked_up[(id(store), namespace, key)] = session_id
    return store, session_id

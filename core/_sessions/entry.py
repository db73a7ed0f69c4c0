"""Session entry: ``session_context``, the one entry point that installs a session.

Inside the block the session is current for every call in the same thread or
task; on exit the context is restored exactly (even on exception,
cancellation or generator close) and, for the outermost block, everything
recorded is made durable. Also here: re-installing a handle
(``run_with_session``), handing the session to a child process
(``export_context``). A framework run's own session is in ``runs``.

Entry and exit never wait long on a store that does not answer (see ``openprogram._recording.outage``):
during a store's outage an existing id is entered as a continuing session without asking the store,
and the end of the outermost block does not wait for the records to be durable.
"""

from __future__ import annotations

import logging
import time
from contextvars import Token
from types import TracebackType
from typing import Any

from .._recording import (
    CALL_ID,
    CALLER_WAIT,
    SessionHandle,
    StoreUnavailable,
    begin_call,
    call_briefly,
    call_var,
    end_call,
    ensure_started,
    flush,
    flush_before_exit,
    flush_before_exit_async,
    in_outage,
    reset_var,
    session_var,
)
from .._runtime import as_text, new_call_id, new_session_id, run_blocking, validate_session_id
from ..stores import Store, open_store
from .known import claim_answered, is_known, learn, note_session, settled, wait_for_claim
from .policy import ENV_AGENT_ID, ENV_PARENT_CALL, ENV_SESSION_ID, ENV_TURN_ID, implicit_session

__all__ = [
    "ENV_PARENT_CALL",
    "ENV_SESSION_ID",
    "ENV_TURN_ID",
    "export_context",
    "implicit_session",
    "run_with_session",
    "session_context",
]

logger = logging.getLogger("openprogram")

EXIT_FLUSH_TIMEOUT = 10.0
"""Seconds the end of the outermost block waits for a writer making progress (a stuck one: see flush_before_exit)."""


def _first_entry(store: Store, session_id: str, agent_id: str) -> bool:
    """True for exactly one entry, of any process, that found the session absent.

    Two tasks or threads entering the same new id at once both find it absent in the
    store; only the first to get here asks the store, which records the session at
    once and says whether another process did so first. A store that fails leaves
    the judgement to this process; one that does not answer in time (see
    ``call_briefly``) makes the entry a continuing one, as during an outage: another
    process may be claiming the id too, and two entries must not both say they made
    it (the claim goes on in the background).
    """
    if not learn(store, session_id):
        wait_for_claim(store, session_id, CALLER_WAIT)  # the other entry's claim must reach the store first
        return False
    try:
        return call_briefly(store, store.claim_session, session_id, agent_id, time.time())
    except StoreUnavailable:
        return False
    except Exception as exc:  # an unusable store never stops the agent (the writer warns of the outage)
        logger.info("openprogram: cannot record session %s in store %s: %s", session_id, store.url, exc)
        return True
    finally:
        claim_answered(store, session_id)


def _exists(store: Store, session_id: str) -> bool:
    """Whether the session is in the store; during an outage (or with no answer in time) it is taken
    to exist: entered by id, it continues, and nothing is claimed."""
    if is_known(store, session_id):
        wait_for_claim(store, session_id, CALLER_WAIT)  # another entry's claim must reach the store first
        return True
    try:
        return call_briefly(store, store.session_exists, session_id)
    except StoreUnavailable:
        return True
    except Exception as exc:  # an unusable store never stops the agent
        # Not a warning: the writer gives the one warning of this outage when it cannot
        # write the turn; one warning per session entered would flood a busy agent's log.
        logger.info("openprogram: cannot check session %s in store %s: %s", session_id, store.url, exc)
        return True


class _Entry:
    __slots__ = ("handle", "outermost", "rec", "tokens")

    def __init__(
        self, handle: SessionHandle, rec: tuple[Any, ...], tokens: tuple[Token[Any], ...], outermost: bool
    ) -> None:
        self.handle, self.rec, self.tokens, self.outermost = handle, rec, tokens, outermost


class session_context:
    """Open (or continue) a session for the block, recording the entry as one ``turn`` call.

    ``session_id=None`` creates a new session (its id is on the handle);
    an existing id continues that session. ``store`` is a store from
    :func:`openprogram.open_store` or a URL; by default the environment decides.
    Works as ``with`` and ``async with``; one object may be entered repeatedly.
    """

    def __init__(
        self,
        session_id: str | None = None,
        *,
        agent_id: str = "main",
        turn_id: str | None = None,
        runtime: Any = None,
        store: Store | str | None = None,
    ) -> None:
        if session_id is not None:
            validate_session_id(session_id)
        if turn_id is not None:
            validate_session_id(turn_id, what="turn id")
        validate_session_id(agent_id, what="agent id")
        self.session_id = session_id
        self.agent_id = agent_id
        self.turn_id = turn_id
        self.runtime = runtime
        self.store = store
        self._entries: list[_Entry] = []

    def _resolve(self) -> tuple[Store, str]:
        return open_store(self.store), self.session_id or new_session_id()

    def _install(self, store: Store, session_id: str, created: bool) -> SessionHandle:
        ensure_started()
        current = session_var.get()
        now = time.time()
        turn_id = self.turn_id or new_session_id()
        note_session(store, session_id, self.agent_id, now)
        parent = call_var.get() if current is not None and current.session_id == session_id else None
        inputs = None if self.runtime is None else {"runtime": self.runtime}
        handle = SessionHandle(session_id, turn_id, self.runtime, created, self.agent_id, store, new_call_id())
        rec = begin_call(handle, parent, "turn", self.agent_id, None, inputs, {"created": created}, handle.root_call_id)
        tokens = (session_var.set(handle), call_var.set(rec[CALL_ID]))
        self._entries.append(_Entry(handle, rec, tokens, current is None))
        return handle

    def _uninstall(self, exc: BaseException | None) -> _Entry:
        # The entry made in this context: one object may be entered by several tasks at once.
        entries, current = self._entries, session_var.get()
        entry = next((e for e in reversed(entries) if e.handle is current), None) or entries[-1]
        entries.remove(entry)
        reset_var(call_var, entry.tokens[1])
        reset_var(session_var, entry.tokens[0])
        try:
            end_call(entry.rec, exc)
            # The session's "updated" is the end of its latest turn, not the start of it.
            handle = entry.handle
            note_session(handle.store, handle.session_id, handle.agent_id, time.time())
        except Exception:
            logger.exception("openprogram: could not record the end of turn %s", entry.handle.turn_id)
        return entry

    def __enter__(self) -> SessionHandle:
        store, session_id = self._resolve()
        created = self.session_id is None or self._absent_and_claimed(store, session_id)
        return self._install(store, session_id, created)

    def __exit__(self, et: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        entry = self._uninstall(exc)
        if entry.outermost:
            flush_before_exit(entry.handle.store, EXIT_FLUSH_TIMEOUT)

    def _absent_and_claimed(self, store: Store, session_id: str) -> bool:
        """Whether this entry makes the session: absent from the store, and claimed first."""
        return not _exists(store, session_id) and _first_entry(store, session_id, self.agent_id)

    async def __aenter__(self) -> SessionHandle:
        store, session_id = self._resolve()
        if self.session_id is None:
            created = True
        elif settled(store, session_id) or in_outage(store):  # as _exists would say, without a thread hop
            created = False
        else:  # a store lookup may touch the network: off the event loop, and off its executor
            created = await run_blocking(self._absent_and_claimed, store, session_id)
        return self._install(store, session_id, created)

    async def __aexit__(
        self, et: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        entry = self._uninstall(exc)
        if entry.outermost:
            await flush_before_exit_async(entry.handle.store, EXIT_FLUSH_TIMEOUT)


class run_with_session:
    """Re-install an existing session handle for the block (``with`` or ``async with``).

    For code that lost the context (a thread started without
    :func:`openprogram.propagate`, a callback from a foreign library): calls
    inside attach to the handle's session, under the current call when it
    belongs to the same session, else under the handle's turn.
    """

    def __init__(self, handle: SessionHandle) -> None:
        if not isinstance(handle, SessionHandle):
            raise TypeError(f"run_with_session needs a SessionHandle, not {type(handle).__name__}")
        self.handle = handle
        self._tokens: list[tuple[Token[Any], ...]] = []

    def __enter__(self) -> SessionHandle:
        ensure_started()
        current = session_var.get()
        tokens: tuple[Token[Any], ...] = (session_var.set(self.handle),)
        if current is None or current.session_id != self.handle.session_id or call_var.get() is None:
            tokens += (call_var.set(self.handle.root_call_id),)
        self._tokens.append(tokens)
        return self.handle

    def __exit__(self, et: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        # The tokens set in this context: one object may be entered by several threads or tasks at once.
        for tokens in reversed(self._tokens):
            try:
                session_var.reset(tokens[0])
            except ValueError:  # set in another context
                continue
            self._tokens.remove(tokens)
            if len(tokens) == 2:
                reset_var(call_var, tokens[1])
            return
        logger.debug("openprogram: run_with_session left in a context it was not entered in; ignored")

    async def __aenter__(self) -> SessionHandle:
        return self.__enter__()

    async def __aexit__(
        self, et: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.__exit__(et, exc, tb)


# --- crossing process boundaries ---------------------------------------------------


def export_context(env: dict[str, str] | None = None) -> dict[str, str]:
    """Environment variables that let a child process join the current session.

    Pass the result (merged into ``os.environ``) to ``subprocess``; calls the
    child makes with no session open land in this session, under the call
    running here now. Returns ``env`` (or a new dict) updated; unchanged when no
    session is current.
    """
    out = dict(env) if env is not None else {}
    handle = session_var.get()
    if handle is None:
        return out
    out[ENV_SESSION_ID] = handle.session_id
    out[ENV_TURN_ID] = handle.turn_id
    out[ENV_PARENT_CALL] = as_text(call_var.get()) or handle.root_call_id
    out[ENV_AGENT_ID] = handle.agent_id
    out["OPENPROGRAM_STORE"] = getattr(handle.store, "connect_url", handle.store.url)
    if handle.store.url.startswith("memory:"):
        logger.warning(
            "openprogram: session %s lives in a memory:// store, which a child process cannot "
            "reach; the child's calls will not join it",
            handle.session_id,
        )
    flush()  # the parent's calls exist before the child's refer to them
    return out


# --- framework run identities ----------------------------------------------------

# (namespace, key) -> the store and session this process last bound it to, in any store:
# a run resumed here with no session open continues there, also when that store is not
# the default one (another process can only look in the default store).

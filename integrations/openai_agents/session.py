"""The Agents SDK's ``Session`` over openprogram's store: a conversation's items kept in its openprogram session.

Each change the SDK makes to its memory is recorded in the session as a call of kind ``memory``
named ``openai_agents.session`` (no model call, so :func:`openprogram.history` and undo leave it
alone), in the current session under the current call (in a run: under the agent's call), or else
in a turn of its own whose input names this runtime:

- ``add_items``: one call per item, the item its output (attributes ``{"operation": "add"}``);
- ``pop_item``: a call ``{"operation": "pop", "item": <the add call's id>}``;
- ``clear_session``: a call ``{"operation": "clear"}``: the items added before it are gone.

The items are read back by replaying those calls in order, from any process that reads the store.
An item is kept as every recorded value is (``openprogram.Limits``): whole up to 32 KiB (a string
longer than ``max_string`` is kept in pieces), with what looks like a secret redacted.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any, Final

import openprogram
from openprogram._kit import content_captured, run_session

if TYPE_CHECKING:
    from agents import TResponseInputItem
    from agents.memory import SessionSettings

__all__ = ["MEMORY_KIND", "MEMORY_NAME", "OpenProgramSession"]

#: The kind and name of the calls that hold an ``OpenProgramSession``'s items.
MEMORY_KIND: Final = "memory"
MEMORY_NAME: Final = "openai_agents.session"
FRAMEWORK: Final = "openai_agents"
# The namespace the adapter binds an SDK session's id in (``adapter._session_key``): a run given
# this session with no session open continues the session its id is bound to.
_SDK_SESSIONS: Final = "openai_agents.session"
# Under ``Limits.max_string`` (4096): a longer string is stored in pieces instead of cut.
_PIECE: Final = 4000
_PIECES: Final = "$pieces"
_DICT: Final = "$dict"  # an item's own one-key dict whose key is one of these markers


class OpenProgramSession:
    """The Agents SDK ``Session`` protocol over openprogram's store:
    ``Runner.run(agent, text, session=OpenProgramSession(session_id))`` continues that
    openprogram session's conversation, in any process that reads its store.

    ``session_id=None`` is the current session (:class:`openprogram.NoSessionError` when none is
    open); ``store`` is where the session is kept (default: the current session's store if it is
    that session, else the default store). ``session_settings.limit`` is ``get_items``'s default.
    A store that cannot be read raises: the agent's memory is never silently empty.

    Outside any session, a run given it records into that session (a new turn of it).
    """

    session_id: str
    session_settings: SessionSettings | None

    def __init__(
        self,
        session_id: str | None = None,
        *,
        store: str | openprogram.Store | None = None,
        session_settings: SessionSettings | None = None,
    ) -> None:
        current = openprogram.get_current_session()
        if session_id is None:
            if current is None:
                raise openprogram.NoSessionError(
                    "OpenProgramSession() with no session id keeps the current session's items, and no session "
                    "is open: create it inside `with openprogram.session_context(...)`, or pass the session id"
                )
            session_id = current.session_id
        if store is not None:
            self.store = openprogram.open_store(store)
        elif current is not None and current.session_id == session_id:
            self.store = current.store
        else:
            self.store = openprogram.open_store()
        # A session of its own for changes made outside this session (validates the id now).
        self._entry = openprogram.session_context(session_id, store=self.store, runtime=MEMORY_NAME)
        self.session_id = session_id
        self.session_settings = session_settings

    def __repr__(self) -> str:
        return f"OpenProgramSession({self.session_id!r}, store={self.store.url!r})"

    async def get_items(self, limit: int | None = None) -> list[TResponseInputItem]:
        """The items, oldest first; with ``limit``, the latest ``limit`` of them (0: none)."""
        if limit is None and self.session_settings is not None:
            limit = self.session_settings.limit
        items = [item for _, item in await self._kept()]
        if limit is None or limit < 0:  # a negative limit: all, as the SDK's SQLiteSession gives
            return items
        return items[max(0, len(items) - limit) :]

    async def add_items(self, items: list[TResponseInputItem]) -> None:
        """Keep ``items`` after those kept, in order."""
        if not items:
            return
        if not content_captured():
            raise ValueError(
                "OpenProgramSession keeps items as recorded content, and content capture is off "
                "(openprogram.configure(capture_content=...)): its items would be lost"
            )
        encoded = [_encoded(item) for item in items]
        async with self._recording():
            for value in encoded:
                with openprogram.call_scope(
                    MEMORY_KIND, MEMORY_NAME, framework=FRAMEWORK, attributes={"operation": "add"}
                ) as scope:
                    scope.set_output(value)

    async def pop_item(self) -> TResponseInputItem | None:
        """Remove the latest item and return it; None when there is none."""
        kept = await self._kept()
        if not kept:
            return None
        call_id, item = kept[-1]
        async with self._recording():
            attributes = {"operation": "pop", "item": call_id}
            with openprogram.call_scope(MEMORY_KIND, MEMORY_NAME, framework=FRAMEWORK, attributes=attributes):
                pass
        return item

    async def clear_session(self) -> None:
        """Remove every item."""
        async with self._recording():
            attributes = {"operation": "clear"}
            with openprogram.call_scope(MEMORY_KIND, MEMORY_NAME, framework=FRAMEWORK, attributes=attributes):
                pass

    @contextlib.asynccontextmanager
    async def _recording(self) -> AsyncIterator[None]:
        """Record in this session: the current one if it is, else a turn of its own."""
        current = openprogram.get_current_session()
        if current is not None and current.session_id == self.session_id and current.store.url == self.store.url:
            yield
            return
        async with self._entry:
            # Bound as a run inside this session binds it: the next run given this session continues it.
            run_session(FRAMEWORK, "session", self.session_id, namespace=_SDK_SESSIONS)
            yield

    async def _kept(self) -> list[tuple[str, TResponseInputItem]]:
        """(the id of the call that added it, item) of each item kept, oldest first."""
        await openprogram.flush_async()  # this process's own changes first
        # Off the event loop: a store read is blocking I/O (no context needed there).
        return await asyncio.get_running_loop().run_in_executor(None, self._replay)

    def _replay(self) -> list[tuple[str, TResponseInputItem]]:
        kept: list[tuple[str, TResponseInputItem]] = []
        for record in self.store.iter_calls(self.session_id):
            if record.kind != MEMORY_KIND or record.name != MEMORY_NAME or not isinstance(record.attributes, dict):
                continue
            operation = record.attributes.get("operation")
            if operation == "add":
                if record.output is None:
                    raise ValueError(
                        f"item {record.call_id} of session {self.session_id} was recorded without its content "
                        "(content capture was off, see openprogram.configure(capture_content=...))"
                    )
                kept.append((record.call_id, _decoded(record.output)))
            elif operation == "pop":
                popped = record.attributes.get("item")
                at = next((i for i in range(len(kept) - 1, -1, -1) if kept[i][0] == popped), None)
                if at is not None:
                    del kept[at]
            elif operation == "clear":
                kept.clear()
        return kept


def _encoded(value: Any) -> Any:
    """An item as recorded: a string longer than a capture keeps whole split in pieces."""
    if isinstance(value, str):
        if len(value) <= _PIECE:
            return value
        return {_PIECES: [value[at : at + _PIECE] for at in range(0, len(value), _PIECE)]}
    if isinstance(value, dict):
        made = {key: _encoded(part) for key, part in value.items()}
        return {_DICT: made} if len(made) == 1 and next(iter(made)) in (_PIECES, _DICT) else made
    if isinstance(value, (list, tuple)):
        return [_encoded(part) for part in value]
    return value


def _decoded(value: Any) -> Any:
    """An item as it was added, from its record."""
    if isinstance(value, dict):
        if len(value) == 1:
            if isinstance(value.get(_PIECES), list):
                return "".join(str(piece) for piece in value[_PIECES])
            if isinstance(value.get(_DICT), dict):
                return {key: _decoded(part) for key, part in value[_DICT].items()}
        return {key: _decoded(part) for key, part in value.items()}
    if isinstance(value, list):
        return [_decoded(part) for part in value]
    return value

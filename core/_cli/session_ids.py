"""A session named on the command line: its whole id, or a unique prefix of it (as git takes a commit's)."""

from __future__ import annotations

from .._runtime import validate_session_id
from ..stores import SessionInfo, Store, describe_store
from .printable import printable

__all__ = ["SessionNotFound", "find_session"]

_CANDIDATES_SHOWN = 10


class SessionNotFound(Exception):
    """No session, or more than one, answers to what was typed; the message says which and what to do."""


def find_session(store: Store, typed: str) -> SessionInfo:
    """The session whose id is ``typed``, else the only one whose id starts with it.

    Raises :class:`openprogram.InvalidSessionId` for text no id could start with, and :class:`SessionNotFound`
    when no session, or several (listed), answer to it.
    """
    validate_session_id(typed)
    info = store.get_session(typed)  # an exact id wins, even when it is also the prefix of another
    if info is not None:
        return info
    # A store's listing is the one lookup every store has; only a typed prefix needs it.
    found = [listed for listed in store.list_sessions() if listed.session_id.startswith(typed)]
    if len(found) == 1:
        return found[0]
    where = describe_store(store)
    if not found:
        raise SessionNotFound(
            f"no session {typed!r} (nor one whose id starts with it) in {where}\n"
            "  (list them with `openprogram sessions`)"
        )
    shown = "".join(f"\n  {printable(s.session_id)}  agent {printable(s.agent_id)}" for s in found[:_CANDIDATES_SHOWN])
    more = f"\n  ... and {len(found) - _CANDIDATES_SHOWN} more" if len(found) > _CANDIDATES_SHOWN else ""
    raise SessionNotFound(
        f"{typed!r} is the start of {len(found)} session ids in {where}; type more of the one you mean:{shown}{more}"
    )

"""What a tool call carries from an MCP client to its server: openprogram's context and a ``traceparent``.

The client puts ``{"session", "turn", "parent"}`` (the ids of its session, its turn and the call that sends
the request) under ``_meta["openprogram/context"]``, and a W3C ``traceparent`` naming the span OTLP export gives
that call. The server reads the context back, checks it, and records the tool it runs under that call.

The trust model: a server records into the session a client names, in the server's own store, under the
client's call. A client can therefore add calls to any session of the server's store whose id it knows; it
can never name a store, and a context that is not three well-formed ids is ignored (one warning). A server
that serves clients it does not trust sets ``OPENPROGRAM_MCP_JOIN=off``: each request then follows the
server's no-session policy, as a request without the context does.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from typing import Any, NamedTuple

from openprogram import InvalidSessionId, SessionHandle
from openprogram._kit import traceparent_of, validate_session_id

__all__ = ["CONTEXT_KEY", "ENV_JOIN", "Requester", "joining_allowed", "outgoing_meta", "requester_of"]

logger = logging.getLogger("openprogram")

CONTEXT_KEY = "openprogram/context"
TRACEPARENT = "traceparent"
ENV_JOIN = "OPENPROGRAM_MCP_JOIN"
_OFF = frozenset({"0", "off", "false", "no"})
_warned = False


class Requester(NamedTuple):
    """The session, turn and call of the client that sent a request."""

    session_id: str
    turn_id: str
    parent_call_id: str


def outgoing_meta(meta: Any, handle: SessionHandle, call_id: str) -> dict[str, Any]:
    """The request's ``_meta``: the caller's own keys, with the context and (unless the caller set one) a
    ``traceparent`` added."""
    out: dict[str, Any] = dict(meta) if isinstance(meta, Mapping) else {}
    out[CONTEXT_KEY] = {"session": handle.session_id, "turn": handle.turn_id, "parent": call_id}
    out.setdefault(TRACEPARENT, traceparent_of(handle.session_id, handle.turn_id, call_id))
    return out


def joining_allowed() -> bool:
    """Whether this server records into the sessions its clients name (``OPENPROGRAM_MCP_JOIN``, on by default)."""
    return os.environ.get(ENV_JOIN, "on").strip().lower() not in _OFF


def requester_of(meta: Any) -> Requester | None:
    """The requester a request's ``_meta`` names, or None: absent, switched off, or not well formed (warned once).

    The ids are checked as :func:`openprogram.session_context` checks a session id; nothing else in the
    context is read.
    """
    extra = _mapping_of(meta)
    if extra is None or CONTEXT_KEY not in extra or not joining_allowed():
        return None
    context = extra[CONTEXT_KEY]
    try:
        if not isinstance(context, Mapping):
            raise InvalidSessionId(f"it is a {type(context).__name__}, not an object")
        session_id = validate_session_id(context.get("session"))
        turn_id = validate_session_id(context.get("turn"), what="turn id")
        parent = validate_session_id(context.get("parent"), what="parent call id")
    except InvalidSessionId as exc:
        _warn_once(str(exc))
        return None
    return Requester(session_id, turn_id, parent)


def _mapping_of(meta: Any) -> Mapping[str, Any] | None:
    """The keys of a request's ``_meta``: a dict (SDK 2) or a pydantic model whose extra keys hold them (SDK 1)."""
    if meta is None:
        return None
    if isinstance(meta, Mapping):
        return meta
    extra = getattr(meta, "model_extra", None)
    return extra if isinstance(extra, Mapping) else None


def _warn_once(reason: str) -> None:
    global _warned
    if not _warned:
        _warned = True
        logger.warning(
            "openprogram: mcp: ignoring a request's %s (%s); it is recorded as if it had none", CONTEXT_KEY, reason
        )

"""Sessions: how a session is entered, and which session a call or a framework run records into.

- ``entry``: ``session_context``, ``run_with_session`` and ``export_context``;
- ``policy``: calls made with no session open (the no-session policy, the implicit session);
- ``known``: the sessions this process has recorded, per store;
- ``joined``: joining a session another process named (an MCP server serving a client);
- ``runs``: run identity, one rule for every adapter: which session a framework run records into.
"""

from __future__ import annotations

from . import policy
from .entry import export_context, run_with_session, session_context
from .joined import join_session
from .policy import current_policy, forget_implicit, implicit_session, reset, set_policy
from .runs import RunEntry, bound_session, last_run_session_id, run_session, session_for_run

__all__ = [
    "RunEntry",
    "bound_session",
    "current_policy",
    "export_context",
    "forget_implicit",
    "implicit_session",
    "join_session",
    "last_run_session_id",
    "policy",
    "reset",
    "run_session",
    "run_with_session",
    "session_context",
    "session_for_run",
    "set_policy",
]

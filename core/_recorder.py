"""Former home of the recording primitives, kept while the adapters move to their new homes.

Calls are begun and ended in :mod:`openprogram._record`; scopes (``call_scope``,
``open_call`` / ``close_call``) are in :mod:`openprogram._scopes`.
"""

from __future__ import annotations

from ._context import reset_var as _reset
from ._record import begin_call, describe_error, end_call, register_control_flow, status_of
from ._scopes import Opened, call_scope, close_call, detach_call, open_call

__all__ = [
    "Opened",
    "_reset",
    "begin_call",
    "call_scope",
    "close_call",
    "describe_error",
    "detach_call",
    "end_call",
    "open_call",
    "register_control_flow",
    "status_of",
]

"""A model's tool call its framework refused before any tool ran: recorded as a ``tool`` call ending ``error``.

Frameworks answer a call of a tool that does not exist, or with arguments they reject, by telling
the model and going on (or by failing the run): no tool runs, so no tool call would be recorded,
and the session would read as free of errors. Each adapter reports such a call here, where the
framework decides it, without changing what the framework does.
"""

from __future__ import annotations

from typing import Any

from .._runtime import log_once
from .scope import close_call, open_call

__all__ = ["ToolCallRejected", "rejected_tool_call"]


class ToolCallRejected(Exception):
    """The error of a tool call its framework refused, with the reason the framework gave the model."""


def rejected_tool_call(
    framework: str,
    name: str,
    arguments: Any = None,
    reason: BaseException | str = "",
    tool_call_id: Any = None,
) -> None:
    """Record a tool call ``framework`` refused, under the current call; never raises.

    ``reason`` is the exception the framework raised or caught for it (kept with its traceback),
    or the text it sent the model instead of a result. ``arguments`` are what the model sent.
    """
    try:
        attributes = None if tool_call_id is None else {"tool_call_id": str(tool_call_id)}
        inputs = None if arguments is None else {"arguments": arguments}
        opened = open_call("tool", name or "unnamed tool", framework, inputs, attributes)
        if opened is not None:
            close_call(opened, reason if isinstance(reason, BaseException) else ToolCallRejected(reason))
    except Exception as error:  # the "error" no-session policy too: the framework's own answer goes on
        log_once(framework, "recording a tool call it refused", error)

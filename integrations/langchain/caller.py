"""Which framework a LangChain model request or tool call is recorded under.

Outside any run of a framework built on LangChain it is ``"langchain"``. A framework that drives
LangChain models and tools from its own runs (LangGraph) marks each run with :func:`enter_run`, and
every request and tool call made inside it, at any depth, carries that framework's name instead.
"""

from __future__ import annotations

import contextlib
from contextvars import ContextVar, Token

__all__ = ["FRAMEWORK", "enter_run", "leave_run", "running_framework"]

FRAMEWORK = "langchain"

# Copied with the context into every thread and task the run spawns, like the run's calls.
running_framework: ContextVar[str] = ContextVar("openprogram.langchain.framework", default=FRAMEWORK)
"""The ``framework`` of the LangChain calls made here: read it with ``running_framework.get()``."""


def enter_run(framework: str) -> Token[str]:
    """From here on (in this context and the ones copied from it), LangChain calls belong to ``framework``'s run."""
    return running_framework.set(framework)


def leave_run(token: Token[str]) -> None:
    """Undo :func:`enter_run`; a run ended in another context than it began in has nothing to restore here."""
    with contextlib.suppress(ValueError):
        running_framework.reset(token)

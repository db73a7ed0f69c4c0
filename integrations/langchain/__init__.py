"""The LangChain adapter (:mod:`.adapter`): chat model requests (:mod:`.chat_models`) and tool calls
(:mod:`.tools`), recorded under the framework whose run they are in (:mod:`.caller`), and a session's
history as LangChain messages (:mod:`.history`), and its offline demo (:mod:`.demo`).

Importing this package imports only the adapter, which imports no framework.
"""

from __future__ import annotations

from .adapter import LangChainIntegration
from .caller import enter_run, leave_run
from .history import as_messages

__all__ = ["LangChainIntegration", "as_messages", "enter_run", "leave_run"]

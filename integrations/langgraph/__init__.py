"""The LangGraph adapter (:mod:`.adapter`), with its retry attempts (:mod:`.retries`), thread sessions
(:mod:`.threads`), the LangChain chat model requests its agents send (:mod:`.chat_models`), a session's
history as LangChain messages (:mod:`.history`) and its offline demo (:mod:`.demo`).

Importing this package imports only the adapter, which imports no framework.
"""

from __future__ import annotations

from .adapter import LangGraphIntegration
from .history import as_messages

__all__ = ["LangGraphIntegration", "as_messages"]

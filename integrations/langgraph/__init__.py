"""The LangGraph adapter (:mod:`.adapter`), with its retry attempts (:mod:`.retries`), thread sessions
(:mod:`.threads`), the LangChain chat model requests its agents send (:mod:`.chat_models`) and its offline
demo (:mod:`.demo`).

Importing this package imports only the adapter, which imports no framework.
"""

from __future__ import annotations

from .adapter import LangGraphIntegration

__all__ = ["LangGraphIntegration"]

"""The LangGraph adapter (:mod:`.adapter`), with its retry attempts (:mod:`.retries`), thread sessions
(:mod:`.threads`) and its offline demo (:mod:`.demo`). The LangChain chat model requests and tools its
graphs run are the LangChain adapter's, which it needs; ``as_messages`` (a session's history as
LangChain messages) is that package's too.

Importing this package imports only the adapter, which imports no framework.
"""

from __future__ import annotations

from openprogram.integrations.langchain import as_messages

from .adapter import LangGraphIntegration

__all__ = ["LangGraphIntegration", "as_messages"]

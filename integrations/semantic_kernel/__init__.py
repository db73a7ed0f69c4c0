"""The Semantic Kernel adapter (:mod:`.adapter`), with its chat completion requests (:mod:`.models`), a
session's history as a ``ChatHistory`` (:mod:`.history`), its offline demo (:mod:`.demo`) and the offline
chat service of the demo, tests and benchmark (:mod:`.fakes`).

Importing this package imports only the adapter, which imports no framework.
"""

from __future__ import annotations

from .adapter import SemanticKernelIntegration
from .history import as_chat_history

__all__ = ["SemanticKernelIntegration", "as_chat_history"]

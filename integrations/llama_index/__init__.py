"""The LlamaIndex adapter (:mod:`.adapter`, its model calls in :mod:`.models`), the ``history()`` converter
(:mod:`.history`), an offline scripted LLM (:mod:`.fakes`) and the demo (:mod:`.demo`).

Importing this package imports no framework.
"""

from __future__ import annotations

from .adapter import LlamaIndexIntegration, last_run_session_id
from .history import as_chat_messages

__all__ = ["LlamaIndexIntegration", "as_chat_messages", "last_run_session_id"]

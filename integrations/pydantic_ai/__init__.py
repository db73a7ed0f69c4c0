"""The Pydantic AI adapter (:mod:`.adapter`), with its offline demo (:mod:`.demo`).

Importing this package imports only the adapter, which imports no framework.
"""

from __future__ import annotations

from .adapter import PydanticAIIntegration, last_run_session_id
from .history import as_messages

__all__ = ["PydanticAIIntegration", "as_messages", "last_run_session_id"]

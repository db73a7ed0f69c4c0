"""The Pydantic AI adapter (:mod:`.adapter`), with its offline demo (:mod:`.demo`).

Importing this package imports only the adapter, which imports no framework.
"""

from __future__ import annotations

from .adapter import PydanticAIIntegration, last_run_session_id

__all__ = ["PydanticAIIntegration", "last_run_session_id"]

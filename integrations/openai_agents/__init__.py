"""The OpenAI Agents SDK adapter (:mod:`.adapter`), with its offline demo and the offline model of the demo,
tests and benchmark (:mod:`.demo`).

Importing this package imports only the adapter, which imports no framework.
"""

from __future__ import annotations

from .adapter import OpenAIAgentsIntegration, last_run_session_id
from .history import as_input
from .session import OpenProgramSession

__all__ = ["OpenAIAgentsIntegration", "OpenProgramSession", "as_input", "last_run_session_id"]

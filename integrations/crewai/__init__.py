"""The CrewAI adapter (:mod:`.adapter`), with its model calls (:mod:`.models`), its offline demo
(:mod:`.demo`) and the offline LLMs of the demo, tests and benchmark (:mod:`.fakes`).

Importing this package imports only the adapter, which imports no framework.
"""

from __future__ import annotations

from .adapter import CrewAIIntegration, last_run_session_id

__all__ = ["CrewAIIntegration", "last_run_session_id"]

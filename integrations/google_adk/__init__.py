"""The Google ADK adapter (:mod:`.adapter`, :mod:`.models`), its ``history()`` converter and offline demo.

Importing this package imports only the adapter and the converter, which import no framework.
"""

from __future__ import annotations

from .adapter import GoogleADKIntegration, last_run_session_id
from .history import as_contents, as_events

__all__ = ["GoogleADKIntegration", "as_contents", "as_events", "last_run_session_id"]

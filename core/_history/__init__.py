"""History: a session's conversation so far, read from its record, for the next turn's agent.

- ``conversation``: :func:`history`, the rule that picks each turn's conversation and joins them.
"""

from __future__ import annotations

from .conversation import history

__all__ = ["history"]

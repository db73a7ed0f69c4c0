"""History: a session's conversation so far, read from its record, for the next turn's agent.

- ``conversation``: :func:`history`, the rule that picks each turn's conversation and joins them;
- ``answered``: :func:`answered`, a history with every tool call followed by a result (for converters).
"""

from __future__ import annotations

from .answered import NO_RESULT, answered
from .conversation import history

__all__ = ["NO_RESULT", "answered", "history"]

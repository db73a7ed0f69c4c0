"""Long texts stored once per session: a tool's result that is also a message and a node's output.

An agent's tool result is recorded three times over: as the tool call's output, in the output of
the step that ran it, and as a message of every later prompt (stored once, see
``openprogram._calls.prompts``). On the writer's thread, a capture longer than :data:`LONG`
characters is decoded and each string in it of :data:`LONG` characters or more is replaced by
``{"$text": ID}``, the string itself going into the session's message rows (its id a hash of its
JSON), so that it is written once, whichever calls hold it. Readers put the strings back
(``openprogram.stores.PromptReader``).
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

from .._capture import dumps
from ..stores import TEXT, MessageRow

__all__ = ["LONG", "SessionTexts"]

#: Strings this long or longer are stored once; a shorter one costs less inline than its reference.
LONG = 512

# A quote followed by LONG characters without one: where a string at least that long starts (a
# string broken by escaped quotes is missed: kept inline). Found in C, each quote tried once.
_LONG_STRING = re.compile(f'"[^"]{{{LONG}}}')

# Sessions whose stored text ids a writer's store state remembers, the least recently used dropped first.
_SESSIONS = 256


def _text_id(encoded: str) -> str:
    return "t" + hashlib.blake2b(encoded.encode("utf-8", "surrogatepass"), digest_size=10).hexdigest()


class SessionTexts:
    """What one store's writer knows it has stored (or queued) of each session's long texts."""

    def __init__(self) -> None:
        self._known: dict[str, set[str]] = {}

    def _session(self, session_id: str) -> set[str]:
        known = self._known.pop(session_id, None)
        if known is None:
            known = set()
            if len(self._known) >= _SESSIONS:
                del self._known[next(iter(self._known))]
        self._known[session_id] = known  # now the most recently used
        return known

    def shared(self, session_id: str, captured: str, rows: list[MessageRow]) -> str:
        """``captured`` (JSON text) with its long strings as references; rows for new ones go to ``rows``."""
        if len(captured) < LONG or _LONG_STRING.search(captured) is None:
            return captured  # no string in it is that long: not decoded at all (most captures)
        try:
            value = json.loads(captured)
        except ValueError:
            return captured
        known = self._session(session_id)
        replaced = [False]

        def share(item: Any) -> Any:
            kind = type(item)
            if kind is str:
                if len(item) < LONG:
                    return item
                encoded = dumps(item)
                text_id = _text_id(encoded)
                if text_id not in known:
                    known.add(text_id)
                    rows.append((session_id, text_id, encoded))
                replaced[0] = True
                return {TEXT: text_id}
            if kind is dict:
                return {key: share(inner) for key, inner in item.items()}
            if kind is list:
                return [share(inner) for inner in item]
            return item

        try:
            shared = share(value)
        except RecursionError:  # nested deeper than the walk goes: kept as it is
            return captured
        return dumps(shared) if replaced[0] else captured

"""Whole captures for live export: the references of raw rows resolved on the exporter's thread.

A store keeps each distinct message of a session once (a message row), and each long string
once (``{"$text": ID}``, its text a message row too); a model call's inputs hold a reference in
place of its messages (the first ``keep`` messages of an earlier request, then the messages
``add`` names; see ``openprogram.stores``). The writer hands the live exporter the call rows it
wrote with the message rows written with them. :class:`LivePrompts` keeps, per session, the
whole message lists of the latest model calls and the recent message rows, so that the next
request (whose reference points to the previous one) is resolved from memory. What it cannot
resolve so (the exporter started mid-session, a batch was dropped) is read from the store,
through one ``PromptReader`` per session and batch.
"""

from __future__ import annotations

import json
from collections import OrderedDict
from collections.abc import Iterable
from typing import Any, Protocol

from ..stores import TEXT, MessageRow, PromptReader, Store, holds_texts, prompt_reference

__all__ = ["CALLS_PER_SESSION", "RECENT_MESSAGES", "SESSIONS", "LivePrompts", "Prompts"]

CALLS_PER_SESSION = 8
"""Model calls whose whole messages are kept per session: the agents of a multi-agent run take turns."""
SESSIONS = 64
"""Sessions kept, the least recently exported dropped first."""
RECENT_MESSAGES = 4096
"""Message rows kept (decoded) after they were written, the oldest dropped first, until a call refers to them."""


class Prompts(Protocol):
    """Puts back what the raw rows of one batch refer to."""

    def with_texts(self, session_id: str, value: Any) -> Any:
        """A decoded capture with the long texts it refers to put back."""

    def whole_inputs(self, session_id: str, call_id: str, inputs: Any) -> Any:
        """A model call's decoded inputs with their messages whole (the same object when they hold no reference)."""


# In memory, not read again: reading a session's every message for each batch would make its export quadratic.
class LivePrompts:
    """The live exporter's memory of recent prompts; used from the exporter's thread only."""

    def __init__(self) -> None:
        # (store url, session id) -> {call id: whole messages}, both least recently used first
        self.calls: OrderedDict[tuple[str, str], OrderedDict[str, list[Any]]] = OrderedDict()
        # (session id, message id) -> (the message decoded, whether it may still refer to long texts)
        self.messages: OrderedDict[tuple[str, str], tuple[Any, bool]] = OrderedDict()

    def add_messages(self, rows: Iterable[MessageRow]) -> None:
        """Remember message rows a store has written (a later call's reference names them)."""
        for session_id, message_id, text in rows:
            try:
                message = json.loads(text)
            except ValueError:
                message = text
            self.messages[(session_id, message_id)] = (message, holds_texts(text))
        while len(self.messages) > RECENT_MESSAGES:
            self.messages.popitem(last=False)

    def resolver(self, store: Store) -> Prompts:
        """What resolves the references of one batch of ``store``'s rows."""
        return _Batch(self, store)


class _Batch:
    """One batch's resolution: from the exporter's memory, else from the store (one reader per session)."""

    def __init__(self, memory: LivePrompts, store: Store) -> None:
        self._memory = memory
        self._store = store
        self._readers: dict[str, PromptReader] = {}

    def _reader(self, session_id: str) -> PromptReader:
        reader = self._readers.get(session_id)
        if reader is None:
            reader = self._readers[session_id] = self._store.prompt_reader(session_id)
        return reader

    def with_texts(self, session_id: str, value: Any) -> Any:
        kind = type(value)
        if kind is dict:
            if len(value) == 1 and type(text_id := value.get(TEXT)) is str:
                found = self._memory.messages.get((session_id, text_id))
                return found[0] if found is not None else self._reader(session_id).with_texts(value)
            return {key: self.with_texts(session_id, inner) for key, inner in value.items()}
        if kind is list:
            return [self.with_texts(session_id, inner) for inner in value]
        return value

    def whole_inputs(self, session_id: str, call_id: str, inputs: Any) -> Any:
        reference = prompt_reference(inputs)
        if reference is None:
            return inputs
        key = (self._store.url, session_id)
        messages = self._from_memory(key, call_id, reference)
        if messages is None:
            messages = self._reader(session_id).messages(call_id, reference)
        self._remember(key, call_id, messages)
        whole = {"messages": messages}
        whole.update((name, value) for name, value in inputs.items() if name != "messages")
        return whole

    def _from_memory(self, key: tuple[str, str], call_id: str, reference: dict[str, Any]) -> list[Any] | None:
        """The whole messages from the earlier call's kept list and the recent message rows, or None."""
        memory = self._memory
        calls = memory.calls.get(key)
        known = calls.get(call_id) if calls is not None else None
        if known is not None:
            return known
        after, keep, added = reference.get("after"), reference.get("keep"), reference.get("add")
        messages: list[Any] = []
        if isinstance(after, str) and type(keep) is int and keep > 0:
            earlier = calls.get(after) if calls is not None else None
            if earlier is None or len(earlier) < keep:
                return None
            messages = earlier[:keep]
        session_id = key[1]
        for message_id in added if isinstance(added, list) else ():
            found = memory.messages.get((session_id, str(message_id)))
            if found is None:
                return None
            message, refers = found
            if refers:  # its long texts put back once, for every request that repeats it
                message = self.with_texts(session_id, message)
                memory.messages[(session_id, str(message_id))] = (message, False)
            messages.append(message)
        return messages

    def _remember(self, key: tuple[str, str], call_id: str, messages: list[Any]) -> None:
        kept = self._memory.calls
        calls = kept.pop(key, None)
        if calls is None:
            calls = OrderedDict()
            if len(kept) >= SESSIONS:
                kept.popitem(last=False)
        kept[key] = calls  # now the most recently used
        calls[call_id] = messages
        calls.move_to_end(call_id)
        if len(calls) > CALLS_PER_SESSION:
            calls.popitem(last=False)

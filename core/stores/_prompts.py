"""A model call's prompt as stored: the messages it shares with an earlier request by reference, its own by id.

Each distinct message of a session is stored once, as a message row (its id is a hash of its
JSON text). An ``llm`` call's ``inputs["messages"]`` is stored as a reference::

    {"$prompt": {"after": CALL_ID, "keep": K, "add": [MESSAGE_ID, ...]}}

meaning: the first ``K`` messages of the prompt of call ``CALL_ID`` (an earlier request of the
same session), then the messages ``add`` names. A request that repeats the previous request
and adds two messages stores a reference and two ids, whatever the length of its history, so
a session's bytes grow with its conversation, not with its square. :class:`PromptReader` turns
references back into whole message lists for every reader.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

__all__ = ["PROMPT", "TEXT", "PromptReader", "holds_texts", "prompt_json", "prompt_reference"]

#: The key of a stored prompt reference, in place of an ``llm`` call's message list.
PROMPT = "$prompt"

#: The key of a long text stored once (``{"$text": ID}``, see ``openprogram._recording.texts``), in any capture.
TEXT = "$text"
_TEXT_MARK = '"$text"'


def holds_texts(captured: str | None) -> bool:
    """Whether a stored capture (JSON text) may refer to long texts stored once."""
    return type(captured) is str and _TEXT_MARK in captured


def prompt_json(after: str | None, keep: int, added: Sequence[str]) -> str:
    """The JSON text of a prompt reference (message ids are hex: nothing in them needs escaping)."""
    ids = '","'.join(added)
    listed = f'["{ids}"]' if added else "[]"
    if after is None or keep <= 0:
        return f'{{"{PROMPT}":{{"add":{listed}}}}}'
    return f'{{"{PROMPT}":{{"after":{json.dumps(after)},"keep":{int(keep)},"add":{listed}}}}}'


def prompt_reference(inputs: Any) -> dict[str, Any] | None:
    """The prompt reference an ``llm`` call's decoded inputs hold, or None (whole messages, or none)."""
    if type(inputs) is not dict:
        return None
    messages = inputs.get("messages")
    if type(messages) is not dict or len(messages) != 1:
        return None
    reference = messages.get(PROMPT)
    return reference if type(reference) is dict else None


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _finite(text: str) -> float | str:
    value = float(text)
    return value if value - value == 0.0 else text  # 1e400: valid JSON, but no float; kept as written


# NaN and the infinities are not JSON, and no reader could pass them on: no writer of ours stores them.
_decode = json.JSONDecoder(parse_constant=_reject_constant, parse_float=_finite).decode


def loads_or_text(text: str) -> Any:
    """``text`` decoded as JSON, or as it is if it is not JSON (or is nested too deep to decode).

    What a store holds may have been written by another process: a reader never fails for it.
    """
    try:
        return _decode(text)
    except (ValueError, TypeError, RecursionError):
        return text


def _missing(count: int, what: str) -> dict[str, Any]:
    return {"role": "unknown", "content": f"[openprogram: {what} not found in the store]", "missing": count}


class PromptReader:
    """Whole prompts of one session's model calls, read back from their references.

    ``texts()`` gives every message stored for the session (id -> JSON text), read once when
    first needed; ``references()`` gives (call id, decoded inputs) of the session's ``llm``
    calls, read only when a reference points to a call this reader has not resolved (a call
    read on its own, not in start order). Messages are decoded once and shared between the
    lists: treat them as read-only.
    """

    def __init__(
        self,
        texts: Callable[[], Mapping[str, str]],
        references: Callable[[], Iterable[tuple[str, Any]]],
    ) -> None:
        self._texts_of = texts
        self._references_of = references
        self._texts: Mapping[str, str] | None = None
        self._decoded: dict[str, Any] = {}
        self._whole: dict[str, list[Any]] = {}  # call id -> its whole message list
        self._references: dict[str, dict[str, Any]] | None = None

    def whole_inputs(self, call_id: str, inputs: Any) -> Any:
        """``inputs`` with their messages whole: the same object when they hold no reference."""
        reference = prompt_reference(inputs)
        if reference is None:
            return inputs
        whole = {"messages": self.messages(call_id, reference)}
        whole.update((key, value) for key, value in inputs.items() if key != "messages")
        return whole

    def with_texts(self, value: Any) -> Any:
        """``value`` with the long texts it refers to put back (as stored if it is nested too deep to walk)."""
        try:
            return self._with_texts(value)
        except RecursionError:  # a damaged or hostile row: shown as stored
            return value

    def _with_texts(self, value: Any) -> Any:
        kind = type(value)
        if kind is dict:
            if len(value) == 1 and type(found := value.get(TEXT)) is str:
                return self._text(found, value)
            return {key: self._with_texts(inner) for key, inner in value.items()}
        if kind is list:
            return [self._with_texts(inner) for inner in value]
        return value

    def _text(self, text_id: str, reference: Any) -> Any:
        text = self._stored().get(text_id)
        if text is None:
            return reference  # not a text of ours, or lost: shown as stored
        return loads_or_text(text)

    def _stored(self) -> Mapping[str, str]:
        if self._texts is None:
            self._texts = self._texts_of()
        return self._texts

    def messages(self, call_id: str, reference: dict[str, Any]) -> list[Any]:
        """The whole message list a call's reference stands for."""
        found = self._whole.get(call_id)
        if found is not None:
            return found
        # Walk back to a call already resolved (or the first of the chain), then resolve forward.
        chain = [(call_id, reference)]
        base: list[Any] = []
        seen = {call_id}
        while True:
            after = reference.get("after")
            if not isinstance(after, str) or _count(reference.get("keep")) == 0:
                break
            done = self._whole.get(after)
            if done is not None:
                base = done
                break
            earlier = self._reference_of(after)
            if earlier is None or after in seen:  # lost, or a cycle only a damaged store could hold
                keep = _count(reference.get("keep"))
                # One placeholder, whatever ``keep`` says: a hostile row could say a billion.
                base = [_missing(keep, f"{keep} earlier messages (of call {after})")]
                break
            seen.add(after)
            chain.append((after, earlier))
            reference = earlier
        for chained_id, chained in reversed(chain):
            keep = _count(chained.get("keep")) if chained.get("after") is not None else 0
            added = chained.get("add")
            made = base[:keep] + [self._message(str(i)) for i in (added if isinstance(added, list) else ())]
            self._whole[chained_id] = made
            base = made
        return base

    def links(self) -> dict[str, tuple[str | None, int]]:
        """For each model call stored by reference: the earlier request it continues (or None) and how
        many of that request's messages it repeats (what a reader may fold as "N earlier messages")."""
        self._reference_of("")
        assert self._references is not None
        return {
            call_id: (after if isinstance(after := found.get("after"), str) else None, _count(found.get("keep")))
            for call_id, found in self._references.items()
        }

    def _reference_of(self, call_id: str) -> dict[str, Any] | None:
        if self._references is None:
            self._references = {}
            for found_id, inputs in self._references_of():
                found = prompt_reference(inputs)
                if found is not None:
                    self._references[found_id] = found
        return self._references.get(call_id)

    def _message(self, message_id: str) -> Any:
        decoded = self._decoded.get(message_id)
        if decoded is not None:
            return decoded
        text = self._stored().get(message_id)
        if text is None:
            decoded = _missing(1, f"message {message_id}")
        else:
            decoded = loads_or_text(text)
            if holds_texts(text):
                decoded = self.with_texts(decoded)
        self._decoded[message_id] = decoded
        return decoded


def _count(value: Any) -> int:
    return value if type(value) is int and value > 0 else 0

"""A model call's prompt, recorded whole and stored once: each distinct message of a session is written once.

A request's messages are compared with the recent requests of its session (in this process).
When an earlier request's messages are the start of this one's, as they are when an agent
adds to its history, only what follows is encoded and stored; the call's inputs refer to the
earlier request for the rest (the stored shape is in ``openprogram.stores._prompts``). A
framework that rewrites its history (trimming, summaries, compaction) shares the longest
common start, and every message it sends again is stored once all the same: a message's id is
a hash of its text. The comparison is ``list ==`` in C, identity first, so a request's work
grows with its new messages, not with its history.

A store that keeps no message rows (a ``Store`` subclass written before they existed) gets
every prompt whole in the call's inputs, each message bounded on its own.
"""

from __future__ import annotations

import hashlib
import os
import threading
import weakref
from typing import Any

from .._capture import capture_json
from .._recording import SessionHandle, enqueue_messages
from ..stores import MessageRow, prompt_json

__all__ = ["prompt_inputs", "whole_inputs_json"]

# Requests remembered per session: enough for the agents of a multi-agent run that take turns.
_RECENT = 8
# Sessions remembered in this process, the least recently used dropped first.
_SESSIONS = 256


_Request = tuple[str, list[Any], list[str]]  # (call id, messages, their ids)


class _Requests:
    """One session's recent requests in this process, and the messages already queued for its store."""

    __slots__ = ("known", "recent", "store")

    def __init__(self, store: Any) -> None:
        # Weakly: a store object freed and another made at its address must not inherit ``known``.
        self.store = weakref.ref(store)
        self.recent: list[_Request] = []  # newest last
        self.known: set[str] = set()


_sessions: dict[tuple[int, str], _Requests] = {}
_lock = threading.Lock()


def _requests(handle: SessionHandle) -> _Requests:
    key = (id(handle.store), handle.session_id)
    with _lock:
        found = _sessions.pop(key, None)
        if found is None or found.store() is not handle.store:
            found = _Requests(handle.store)
            if len(_sessions) >= _SESSIONS:
                del _sessions[next(iter(_sessions))]
        _sessions[key] = found  # now the most recently used
    return found


def _message_id(text: str) -> str:
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=10).hexdigest()


def _shared_start(messages: list[Any], recent: list[_Request]) -> tuple[str | None, int, list[str]]:
    """The earlier request this one continues, how many of its messages it repeats, and their ids."""
    count = len(messages)
    for call_id, earlier, ids in reversed(recent):
        n = len(earlier)
        if 0 < n <= count and messages[:n] == earlier:  # identity first, in C
            return call_id, n, ids
    if recent:  # a rewritten history: what it shares with the newest request
        call_id, earlier, ids = recent[-1]
        n = 0
        for mine, theirs in zip(messages, earlier, strict=False):
            if mine is not theirs and mine != theirs:
                break
            n += 1
        if n:
            return call_id, n, ids
    return None, 0, []


def _rest(inputs: dict[str, Any]) -> str:
    """The inputs but their messages as JSON text after the messages: ``}`` or ``,"tools":...}``."""
    rest = {key: value for key, value in inputs.items() if key != "messages"}
    return "}" if not rest else "," + capture_json(rest)[1:]


def whole_inputs_json(inputs: dict[str, Any]) -> str:
    """An ``llm`` call's inputs with every message inline, each bounded on its own (never the list)."""
    messages = inputs.get("messages")
    if not isinstance(messages, list):
        return capture_json(inputs)
    return '{"messages":[' + ",".join(map(capture_json, messages)) + "]" + _rest(inputs)


def prompt_inputs(handle: SessionHandle, call_id: str, inputs: dict[str, Any]) -> str:
    """The JSON text of an ``llm`` call's inputs, its messages whole by reference; queues the new messages."""
    messages = inputs.get("messages")
    if not isinstance(messages, list) or not handle.store.keeps_messages:
        return whole_inputs_json(inputs)
    tail = _rest(inputs)
    requests = _requests(handle)
    after, keep, shared_ids = _shared_start(messages, requests.recent)
    known = requests.known
    added: list[str] = []
    rows: list[MessageRow] = []
    session_id = handle.session_id
    for message in messages[keep:]:
        text = capture_json(message)
        message_id = _message_id(text)
        added.append(message_id)
        if message_id not in known:
            rows.append((session_id, message_id, text))
    if rows:
        enqueue_messages(handle.store, rows)  # before the call's own record
        known.update(row[1] for row in rows)
    ids = shared_ids[:keep] + added if keep else added
    recent = requests.recent
    recent.append((call_id, messages, ids))
    if len(recent) > _RECENT:
        del recent[0]
    return '{"messages":' + prompt_json(after, keep, added) + tail


def _forget_after_fork() -> None:
    # The parent's queue is not the child's: messages the parent queued may not be written for it.
    _sessions.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_after_fork)

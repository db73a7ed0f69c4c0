"""A session's conversation so far, read from its record: what the next turn's model should see.

Every framework's model calls are recorded in one message shape, so the conversation is read from
those, whichever framework made them:

- a run's conversation is the last request its own agent sent and that request's reply: a run is a
  top-level call of a turn (an agent, graph, crew, function; or a request made right in the turn),
  or with ``agent=`` each call of that name; its own requests are those nearest it, the last started
  among them counts;
- the session's conversation joins its runs in order, across turns: a run whose request already
  begins with the conversation so far (its agent was given the history) replaces it; one that does
  not (an agent run without it) adds its messages after it.

A sub-agent's requests sit deeper than its caller's, so they are never taken for the turn's
conversation (pick them with ``agent=``); a failed request counts only when a turn has no other.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from .._recording import session_var
from .._runtime import NoSessionError
from ..stores import CallRow, Store, open_store

__all__ = ["history"]

#: The keys of the one message shape (README.md, "Model calls").
_KEYS = ("role", "content", "tool_calls", "tool_call_id")
_ROLES = frozenset({"system", "user", "assistant", "tool"})
#: Parents followed up from one call: a damaged or hostile record may hold a cycle.
_MAX_DEPTH = 1_000


def history(
    session_id: str | None = None,
    *,
    agent: str | None = None,
    system: bool = False,
    store: str | Store | None = None,
) -> list[dict[str, Any]]:
    """The session's conversation so far as messages (``role``, ``content``, ``tool_calls``, ``tool_call_id``).

    ``session_id=None`` is the current session (:class:`NoSessionError` when none is open);
    another id is read from ``store`` (default: the current session's store if it is that
    session, else the default store), in any process. ``agent=NAME`` gives the conversation of
    the agent, node or task called NAME; ``system=True`` keeps system messages. A session with no
    model call (or an unknown id) gives ``[]``. A conversation recorded with content capture off
    cannot be given: that raises ``ValueError``.
    """
    reading, sid = _store_of(session_id, store)
    chosen = _last_requests(reading.iter_tree_rows(sid), agent)
    if not chosen:
        return []
    # One pass over the session's calls: its prompts are resolved once, their messages shared.
    records = {r.call_id: r for r in reading.iter_calls(sid) if r.call_id in chosen}
    joined = _Joined()
    for call_id in chosen:
        record = records.get(call_id)
        if record is not None:
            joined.add(_messages_of(record.inputs, call_id), record.output)
    return joined.messages(system)


def _store_of(session_id: str | None, store: str | Store | None) -> tuple[Store, str]:
    handle = session_var.get()
    if session_id is None:
        if handle is None:
            raise NoSessionError(
                "openprogram.history() with no session id reads the current session, and none is open: "
                "call it inside `with openprogram.session_context(...)`, or pass the session id"
            )
        return (open_store(store) if store is not None else handle.store), handle.session_id
    if store is not None:
        return open_store(store), session_id
    if handle is not None and handle.session_id == session_id:
        return handle.store, session_id
    return open_store(None), session_id


def _last_requests(rows: Iterable[CallRow], agent: str | None) -> dict[str, None]:
    """The id of each run's conversation request, runs in order of their first request (a dict as an ordered set)."""
    parent_of: dict[str, str | None] = {}
    name_of: dict[str, str] = {}
    requests: list[CallRow] = []
    for row in rows:
        parent_of[row[0]] = row[3]
        name_of[row[0]] = row[5]
        if row[4] == "llm":
            requests.append(row)
    best: dict[str, tuple[tuple[int, bool, float, int], CallRow]] = {}  # run id -> (rank, request)
    for order, row in enumerate(requests):
        found = _run_of(row[0], parent_of, name_of, agent)
        if found is None:
            continue
        run, depth = found
        # Nearest the run first; then a request that was answered; then the one started last.
        rank = (-depth, row[7] == "ok", row[12], order)
        held = best.get(run)
        if held is None or rank > held[0]:
            best[run] = (rank, row)  # a dict keeps the runs in order of their first request
    return {row[0]: None for _, row in best.values()}


def _run_of(
    call_id: str, parent_of: dict[str, str | None], name_of: dict[str, str], agent: str | None
) -> tuple[str, int] | None:
    """The run a request belongs to and the calls between them: the top-level call of its turn (the
    one whose parent is the turn), or the nearest call named ``agent`` (None if there is none)."""
    depth = 0
    current, below = parent_of.get(call_id), call_id
    while current is not None and depth < _MAX_DEPTH:
        if agent is not None and name_of.get(current) == agent:
            return current, depth
        above = parent_of.get(current)
        if above is None and agent is None:
            return below, depth  # ``current`` is the turn: ``below`` is its top-level call
        depth += 1
        below, current = current, above
    return None


def _messages_of(inputs: Any, call_id: str) -> list[Any]:
    """A request's messages as recorded."""
    messages = inputs.get("messages") if isinstance(inputs, dict) else None
    if not isinstance(messages, list):
        raise ValueError(
            f"model call {call_id} was recorded without its messages (content capture was off, see "
            "openprogram.configure(capture_content=...)): its conversation cannot be given"
        )
    return messages


class _Joined:
    """The conversation so far, run by run, as recorded messages (shaped once, at the end).

    A run given the history repeats the conversation's messages: the very objects, since a
    session's messages are decoded once and shared between its requests, so comparing them costs
    a pointer each; only replies (a call's output, decoded apart from the next request's copy of it)
    and what another framework re-translated are compared by what they say (:func:`_key`).
    """

    def __init__(self) -> None:
        self._messages: list[Any] = []
        self._replies: list[int] = []  # where in ``_messages`` a reply stands, in order

    def add(self, request: list[Any], reply: Any) -> None:
        if self._begins(request):
            self._messages, self._replies = list(request), []
        else:  # an agent run without the history: its messages follow
            self._messages.extend(request)
        if isinstance(reply, dict):
            self._replies.append(len(self._messages))
            self._messages.append(reply)

    def _begins(self, request: list[Any]) -> bool:
        so_far = self._messages
        if len(request) >= len(so_far):
            start = 0
            for at in (*self._replies, len(so_far)):
                if request[start:at] != so_far[start:at]:
                    break
                if at < len(so_far) and _key(request[at]) != _key(so_far[at]):
                    break
                start = at + 1
            else:
                return True
        # Re-translated (another framework, another system prompt): by what they say, to the first difference.
        theirs = (_key(m) for m in request if not _is_system(m))
        return all(_key(m) == next(theirs, None) for m in so_far if not _is_system(m))

    def messages(self, system: bool) -> list[dict[str, Any]]:
        """The conversation in the one shape; system messages (each distinct one once) if ``system``."""
        shaped: list[dict[str, Any]] = []
        seen_system: list[Any] = []
        for message in self._messages:
            if not isinstance(message, dict) or message.get("role") not in _ROLES:
                continue  # not a message: a part lost from the store
            if _is_system(message):
                if not system or message in seen_system:
                    continue
                seen_system.append(message)
            made = {key: message[key] for key in _KEYS if message.get(key) not in (None, [])}
            made.setdefault("content", "")
            shaped.append(made)
        return shaped


def _is_system(message: Any) -> bool:
    return isinstance(message, dict) and message.get("role") == "system"


def _key(message: Any) -> tuple[Any, ...]:
    """What makes two records of one message the same, whatever a framework added or reshaped: its role,
    its text, the ids and names of the tools it called, the tool call it answers."""
    if not isinstance(message, dict):
        return (None, repr(message))
    calls = message.get("tool_calls")
    called = tuple(
        (c.get("id"), c.get("name")) for c in (calls if isinstance(calls, list) else ()) if isinstance(c, dict)
    )
    return (message.get("role"), _text(message.get("content")), called, message.get("tool_call_id"))


def _text(content: Any) -> str:
    if content is None:  # no text: Pydantic AI records a reply of tool calls only so, LangChain re-sends it as ""
        return ""
    if isinstance(content, str):
        text = content.strip()
        if text.startswith("{"):  # a structured result another framework re-sent as JSON text, key order its own
            try:
                return json.dumps(json.loads(text), sort_keys=True, default=str)
            except ValueError:
                pass
        return text
    if isinstance(content, list):  # parts: the text ones joined
        texts = [p.get("text") if isinstance(p, dict) else p for p in content]
        return "".join(t for t in texts if isinstance(t, str)).strip()
    return json.dumps(content, sort_keys=True, default=str)

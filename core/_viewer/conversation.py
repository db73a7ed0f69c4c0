"""A session as a conversation: what each turn was asked and what it answered.

Every framework's model calls share one message shape, so the rule reads those rather than each
framework's own inputs and outputs:

- a turn's exchanges are its top-level runs (agent, graph, crew, flow, ...) that asked a model,
  or all of them when none did (a plain-Python turn, or one that only resumed a graph);
- an exchange's input is the user messages that end the first prompt its own agent sent (the
  shallowest model call below the run, first in time: a guardrail or a sub-agent may start
  earlier, deeper down), else the run's inputs;
- its answer is the text the run returned, else the last model reply that called no tool (a
  hand-off leaves the last word to another agent), else whatever the run returned.
"""

from __future__ import annotations

import collections
import json
import threading
from typing import Any

from ..stores import CallRecord, Store
from .lookup import find_call
from .tree import SessionTree

__all__ = ["Conversation"]

#: Exchanges listed per turn; the rest are counted (a plain-Python turn may make thousands of top-level calls).
MAX_EXCHANGES = 20
#: Characters of one bubble; the call's details show it whole.
TEXT_LIMIT = 4000
#: User messages shown as one exchange's input (the last ones: those closest to the answer).
MAX_ASKED = 5
#: Characters of finished turns kept in memory, over all sessions.
KEPT_CHARS = 4_000_000
_ERROR_TEXT = 300


def _part(value: Any) -> dict[str, Any]:
    """One bubble's text: a string as it is, anything else as indented JSON, cut at TEXT_LIMIT."""
    if isinstance(value, str):
        text, is_json = value, False
    else:
        text, is_json = json.dumps(value, indent=2, ensure_ascii=False, default=str), True
    cut = len(text) > TEXT_LIMIT
    return {"text": text[:TEXT_LIMIT] if cut else text, "json": is_json, "cut": cut}


def _plain(value: Any) -> Any:
    """``{"prompt": "..."}`` -> ``"..."``: a run's inputs of one text field read as that text."""
    if isinstance(value, dict) and len(value) == 1:
        (only,) = value.values()
        if isinstance(only, str):
            return only
    return value


def _asked(inputs: Any) -> list[Any]:
    """The contents of the user messages that end a model call's prompt (the question it was sent)."""
    messages = inputs.get("messages") if isinstance(inputs, dict) else None
    if not isinstance(messages, list):
        return []
    found = []
    for message in reversed(messages):
        if not isinstance(message, dict) or message.get("role") != "user":
            break
        found.append(message.get("content"))
    return [content for content in reversed(found) if content not in (None, "", [])]


def _reply(output: Any) -> str | None:
    """A model reply's text, if it is an answer: some text and no tool called."""
    if isinstance(output, dict) and not output.get("tool_calls"):
        content = output.get("content")
        if isinstance(content, str) and content.strip():
            return content
    return None


class _Run:
    """A top-level call and the model calls below it: how many, its own first one, the last one."""

    __slots__ = ("count", "first", "index", "last")

    def __init__(self, tree: SessionTree, index: int) -> None:
        self.index = index
        self.count = 0
        self.first: int | None = None
        self.last: int | None = None
        first_depth = 0
        kinds, children = tree.kinds, tree.children
        stack = [(index, 0)]
        while stack:
            i, depth = stack.pop()
            if kinds[i] == "llm":
                self.count += 1
                if self.first is None or (depth, i) < (first_depth, self.first):
                    self.first, first_depth = i, depth
                if self.last is None or i > self.last:
                    self.last = i
            stack.extend((child, depth + 1) for child in children.get(i, ()))


class Conversation:
    """Each turn's exchanges, read from the store; a finished turn's are kept (they cannot change)."""

    def __init__(self, store: Store, *, kept_chars: int = KEPT_CHARS) -> None:
        self.store = store
        self._budget = kept_chars
        # (session, root id) -> (the root's shape when read, its exchanges, their characters)
        self._done: collections.OrderedDict[tuple[str, str], tuple[Any, dict[str, Any], int]] = (
            collections.OrderedDict()
        )
        self._kept = 0
        self._lock = threading.Lock()

    def turn(self, tree: SessionTree, root: int) -> dict[str, Any]:
        """``{"runs": N, "exchanges": [...]}`` of one root of the tree (a turn, or a call recorded outside one)."""
        key = (tree.session_id, tree.ids[root])
        # A late call (another process's clock) changes the count: read the turn again then.
        shape = (tree.descendants[root], tree.ends[root])
        with self._lock:
            known = self._done.get(key)
            if known is not None and known[0] == shape:
                self._done.move_to_end(key)
                return known[1]
        found = self._read(tree, root)
        if tree.ends[root] is not None and tree.statuses[root] != "running":
            self._keep(key, shape, found)
        return found

    def _keep(self, key: tuple[str, str], shape: Any, found: dict[str, Any]) -> None:
        size = sum(
            len(part["text"])
            for exchange in found["exchanges"]
            for said in (exchange["input"], exchange["answer"])
            if said is not None
            for part in said["parts"]
        )
        with self._lock:
            dropped = self._done.pop(key, None)
            self._kept += size - (dropped[2] if dropped else 0)
            self._done[key] = (shape, found, size)
            while self._kept > self._budget and len(self._done) > 1:
                self._kept -= self._done.popitem(last=False)[1][2]

    def _read(self, tree: SessionTree, root: int) -> dict[str, Any]:
        tops = tree.children.get(root, []) if tree.kinds[root] == "turn" else [root]
        runs = [_Run(tree, i) for i in tops]
        chosen = [run for run in runs if run.count] or runs
        return {
            "runs": len(tops),
            "more": max(0, len(chosen) - MAX_EXCHANGES),
            "exchanges": [self._exchange(tree, run) for run in chosen[:MAX_EXCHANGES]],
        }

    def _get(self, tree: SessionTree, i: int) -> CallRecord | None:
        return find_call(self.store, tree.session_id, tree.ids[i], tree.starts[i])

    def _exchange(self, tree: SessionTree, run: _Run) -> dict[str, Any]:
        i = run.index
        top = self._get(tree, i)
        exchange: dict[str, Any] = {
            "run": {"id": tree.ids[i], "kind": tree.kinds[i], "name": tree.names[i], "status": tree.statuses[i]},
            "model_calls": run.count,
            "calls": tree.descendants[i] + 1,
            "input": None,
            "answer": None,
        }
        error = tree.errors[i]
        if error:
            exchange["error"] = (error.strip().splitlines() or [error])[0][:_ERROR_TEXT]
        if run.first is not None:
            first = top if run.first == i else self._get(tree, run.first)
            asked = _asked(first.inputs) if first is not None else []
            if asked:
                exchange["input"] = {"call": tree.ids[run.first], "parts": [_part(c) for c in asked[-MAX_ASKED:]]}
        if exchange["input"] is None and top is not None and top.inputs is not None:
            exchange["input"] = {"call": tree.ids[i], "parts": [_part(_plain(top.inputs))]}
        returned = top.output if top is not None else None
        if isinstance(returned, str) and returned.strip():
            exchange["answer"] = {"call": tree.ids[i], "parts": [_part(returned)]}
            return exchange
        if run.last is not None:
            last = top if run.last == i else self._get(tree, run.last)
            text = _reply(last.output) if last is not None else None
            if text is not None:
                exchange["answer"] = {"call": tree.ids[run.last], "parts": [_part(text)]}
                return exchange
        if returned is not None:
            exchange["answer"] = {"call": tree.ids[i], "parts": [_part(_plain(returned))]}
        return exchange

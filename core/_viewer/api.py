"""The viewer's JSON API over a store: sessions, a session's tree a page of children at a time, one call's details,
a session's conversation a page of turns at a time.

Every method returns a JSON-ready dict, or None when the session (or call) is unknown. Nothing here writes.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from typing import Any

from .._runtime import InvalidSessionId, validate_session_id
from ..stores import SessionInfo, Store, StoreError
from .cache import TreeCache
from .conversation import Conversation
from .lookup import UNREADABLE, find_captures
from .prompts import PromptLinks
from .tree import SessionTree

__all__ = ["ViewerApi"]

logger = logging.getLogger("openprogram")

#: Children sent per request; the browser asks for more as the user scrolls or clicks.
PAGE = 200
#: Error calls listed up front for "next error" (a session with more says how many in all).
MAX_ERRORS_LISTED = 1000
MAX_MATCHES = 500
#: Steps of the paths sent with search matches, in all (a few per match, unless the calls nest very deep).
MAX_PATH_STEPS = 20_000
#: The newest turn is shown opened: every call in it when it has at most this many, else two levels of it.
OPEN_WHOLE = 300
OPEN_WHOLE_DEPTH = 12
#: A listing reads the trees of its sessions for their root and status up to this many calls in all;
#: the browser asks for the rest with :meth:`ViewerApi.summaries`.
LIST_SUMMARY_CALLS = 20_000
#: Turns of a conversation sent per request: the page opens on the newest, earlier ones come when asked for.
TURNS_PAGE = 20


def _clamp(value: int, low: int, high: int) -> int:
    return max(low, min(high, value))


def _known(session_id: str) -> str | None:
    try:
        return validate_session_id(session_id)
    except InvalidSessionId:
        return None


class ViewerApi:
    """Read-only answers about the sessions in one store."""

    def __init__(self, store: Store, cache: TreeCache | None = None) -> None:
        self.store = store
        self.cache = cache or TreeCache(store)
        self.prompts = PromptLinks(store)
        self.conversations = Conversation(store)

    def _tree(self, session_id: str) -> SessionTree | None:
        known = _known(session_id)
        return None if known is None else self.cache.get(known)

    def session_exists(self, session_id: str) -> bool:
        known = _known(session_id)
        return known is not None and self.store.session_exists(known)

    # --- the sessions list --------------------------------------------------------
    def sessions(self, limit: int) -> dict[str, Any]:
        """The most recently updated sessions, with root and status where they are cheap to know."""
        infos = self.store.list_sessions(limit=_clamp(limit, 1, 10_000))
        listed, budget = [], LIST_SUMMARY_CALLS
        for info in infos:
            entry = self._listed(info)
            if info.call_count <= budget:
                budget -= info.call_count
                entry["summary"] = self._summary(info)
            listed.append(entry)
        return {"store": self.store.url, "now": time.time(), "sessions": listed}

    def summaries(self, session_ids: list[str]) -> dict[str, Any]:
        """Root, status, errors and duration of the named sessions (those the listing left out)."""
        found: dict[str, Any] = {}
        for session_id in session_ids[:100]:
            known = _known(session_id)
            info = None if known is None else self.store.get_session(known)
            if info is not None:
                found[info.session_id] = self._summary(info)
        return {"now": time.time(), "summaries": found}

    def _summary(self, info: SessionInfo) -> dict[str, Any]:
        """A listed session's summary; one whose calls cannot be read is listed as such (the others still are)."""
        try:
            return self.cache.summary(info)
        except (StoreError, *UNREADABLE) as exc:
            logger.debug("openprogram ui: session %s cannot be read: %s", info.session_id, exc)
            return {**SessionTree(info.session_id, ()).summary(), "status": "error", "unreadable": str(exc)}

    @staticmethod
    def _listed(info: SessionInfo) -> dict[str, Any]:
        return dataclasses.asdict(info)

    # --- one session --------------------------------------------------------------
    def session(self, session_id: str) -> dict[str, Any] | None:
        """The session's listing, summary, roots (its turns), errors and version."""
        tree = self._tree(session_id)
        if tree is None or tree.info is None:
            return None
        info = tree.info
        now = time.time()
        return {
            "store": self.store.url,
            "now": now,
            "session": {**self._listed(info), "call_count": max(info.call_count, len(tree))},
            "summary": tree.summary(),
            "version": tree.version,
            "running": tree.running,
            "roots": self._newest_roots(tree, now),
            "errors": [tree.ids[i] for i in tree.error_calls[:MAX_ERRORS_LISTED]],
            "error_count": len(tree.error_calls),
        }

    @staticmethod
    def _newest_roots(tree: SessionTree, now: float) -> dict[str, Any]:
        """The last page of roots (the newest turns), the newest one opened: whole if small, else two levels."""
        roots = tree.children_of(None, max(0, len(tree.roots) - PAGE), PAGE, now)
        if roots["nodes"]:
            newest = roots["nodes"][-1]
            if newest["children"]:
                depth = OPEN_WHOLE_DEPTH if newest["descendants"] <= OPEN_WHOLE else 2
                newest["page"] = tree.children_of(tree.index[newest["id"]], 0, PAGE, now, depth=depth)
        return roots

    def state(self, session_id: str) -> dict[str, Any] | None:
        """What a page polls: changes of ``version`` mean new calls, ends or errors."""
        tree = self._tree(session_id)
        if tree is None:
            return None
        return {
            "now": time.time(),
            "version": tree.version,
            "running": tree.running,
            "calls": len(tree),
            "summary": tree.summary(),
        }

    def children(self, session_id: str, parent: str | None, offset: int, limit: int, depth: int) -> Any:
        """A page of a call's children (the session's roots when ``parent`` is None)."""
        tree = self._tree(session_id)
        if tree is None:
            return None
        index = None
        if parent is not None:
            index = tree.index.get(parent)
            if index is None:
                return None
        return tree.children_of(index, offset, _clamp(limit, 1, 1000), time.time(), depth=_clamp(depth, 1, 12))

    def path(self, session_id: str, call_id: str) -> dict[str, Any] | None:
        """The calls from the root down to a call, each with its position among its siblings."""
        tree = self._tree(session_id)
        index = None if tree is None else tree.index.get(call_id)
        if tree is None or index is None:
            return None
        return {"id": call_id, "path": tree.path(index)}

    def search(self, session_id: str, text: str) -> dict[str, Any] | None:
        """Calls whose kind, name, id, framework, model or error contains ``text``, in start order."""
        tree = self._tree(session_id)
        if tree is None:
            return None
        text = text.strip()
        if not text:
            return {"query": text, "count": 0, "matches": []}
        count, found = tree.search(text, MAX_MATCHES)
        now = time.time()
        matches, steps = [], MAX_PATH_STEPS
        for i in found:
            match = tree.node(i, now)
            if steps > 0:  # past this the browser asks for a match's path when it is opened
                match["path"] = tree.path(i)
                steps -= len(match["path"])
            matches.append(match)
        return {"query": text, "count": count, "matches": matches}

    @staticmethod
    def _call_name(tree: SessionTree, i: int) -> dict[str, Any]:
        return {"id": tree.ids[i], "kind": tree.kinds[i], "name": tree.names[i]}

    def call(self, session_id: str, call_id: str) -> dict[str, Any] | None:
        """One call in full: its row, where it sits, and its inputs, output, error and attributes."""
        tree = self._tree(session_id)
        index = None if tree is None else tree.index.get(call_id)
        if tree is None or index is None:
            return None
        captures = find_captures(self.store, tree.session_id, call_id, tree.starts[index])
        inputs, output, error, attributes = captures or (None, None, tree.errors[index], None)
        parent = tree.parents[index]
        found = {
            "now": time.time(),
            "node": tree.node(index, time.time()),
            "turn_id": tree.turn_ids[index],
            "ended_at": tree.ends[index],
            "parent": None if parent < 0 else self._call_name(tree, parent),
            "path": tree.path(index),
            "inputs": inputs,
            "output": output,
            "error": error,
            "attributes": attributes,
        }
        if tree.kinds[index] == "llm":
            found["prompt"] = self._prompt(tree, call_id, inputs)
        return found

    def _prompt(self, tree: SessionTree, call_id: str, inputs: Any) -> dict[str, Any]:
        """How a model call's messages split: ``shared`` repeated from request ``after``, the rest new."""
        messages = inputs.get("messages") if isinstance(inputs, dict) else None
        count = len(messages) if isinstance(messages, list) else 0
        after, keep = self.prompts.of(tree, call_id)
        shared = min(keep, count)
        return {"after": after if shared else None, "shared": shared, "messages": count}

    # --- the conversation -------------------------------------------------------------
    def conversation(self, session_id: str, offset: int, limit: int) -> dict[str, Any] | None:
        """A page of the session's turns, each with its exchanges (input and answer); ``offset`` < 0: the newest."""
        tree = self._tree(session_id)
        if tree is None:
            return None
        limit = _clamp(limit, 1, 100)
        total = len(tree.roots)
        offset = max(0, total - limit) if offset < 0 else min(offset, total)
        now = time.time()
        turns = [
            {"node": tree.node(i, now), **self.conversations.turn(tree, i)} for i in tree.roots[offset : offset + limit]
        ]
        return {"now": now, "version": tree.version, "total": total, "offset": offset, "turns": turns}

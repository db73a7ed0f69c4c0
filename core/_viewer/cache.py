"""The session trees the viewer keeps: each read once, and read again only when its session has changed."""

from __future__ import annotations

import collections
import threading
import time
from collections.abc import Callable
from typing import Any

from ..stores import SessionInfo, Store
from .tree import SessionTree

__all__ = ["TreeCache"]


class _Entry:
    __slots__ = ("checked_at", "key", "tree")

    def __init__(self, tree: SessionTree, key: tuple[float, int], checked_at: float) -> None:
        self.tree, self.key, self.checked_at = tree, key, checked_at


def _key(info: SessionInfo) -> tuple[float, int]:
    return info.updated_at, info.call_count


class TreeCache:
    """Trees of the sessions last looked at, up to ``max_calls`` calls in all.

    A tree is trusted for ``recheck`` seconds; after that the store's listing of the session
    (update time and call count) says whether to read it again. A tree with running calls is
    read again each time: their ends change neither.
    """

    def __init__(
        self,
        store: Store,
        *,
        max_calls: int = 400_000,
        recheck: float = 1.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.store = store
        self._max_calls = max_calls
        self._recheck = recheck
        self._clock = clock
        self._entries: collections.OrderedDict[str, _Entry] = collections.OrderedDict()
        self._summaries: dict[str, tuple[tuple[float, int], dict[str, Any]]] = {}
        self._lock = threading.Lock()  # guards the dicts
        self._reading = threading.Lock()  # one read at a time: two readers of one session would both read it

    def get(self, session_id: str, info: SessionInfo | None = None) -> SessionTree | None:
        """The session's tree, or None if the store has no such session."""
        fresh = self._fresh(session_id)
        if fresh is not None:
            return fresh
        with self._reading:
            fresh = self._fresh(session_id)
            if fresh is not None:
                return fresh
            info = info or self.store.get_session(session_id)
            if info is None:
                with self._lock:
                    self._entries.pop(session_id, None)
                return None
            with self._lock:
                entry = self._entries.get(session_id)
            now = self._clock()
            if entry is not None and entry.key == _key(info) and not entry.tree.running:
                entry.checked_at = now
                entry.tree.info = info
                return entry.tree
            tree = SessionTree.read(self.store, session_id, info)
            self._keep(session_id, _Entry(tree, _key(info), now))
            return tree

    def _fresh(self, session_id: str) -> SessionTree | None:
        with self._lock:
            entry = self._entries.get(session_id)
            if entry is None or self._clock() - entry.checked_at >= self._recheck:
                return None
            self._entries.move_to_end(session_id)
            return entry.tree

    def _keep(self, session_id: str, entry: _Entry) -> None:
        with self._lock:
            self._entries[session_id] = entry
            self._entries.move_to_end(session_id)
            total = sum(len(e.tree) for e in self._entries.values())
            while total > self._max_calls and len(self._entries) > 1:
                _, dropped = self._entries.popitem(last=False)
                total -= len(dropped.tree)

    def summary(self, info: SessionInfo) -> dict[str, Any]:
        """Root, status, errors and duration of a listed session (kept while its listing is unchanged)."""
        with self._lock:
            known = self._summaries.get(info.session_id)
        if known is not None and known[0] == _key(info) and known[1]["status"] != "running":
            return known[1]
        tree = self.get(info.session_id, info)
        found = tree.summary() if tree is not None else SessionTree(info.session_id, ()).summary()
        with self._lock:
            self._summaries[info.session_id] = (_key(info), found)
        return found

    def warm(self, session_id: str) -> None:
        """Start reading a session's tree in the background (the page that will ask for it is loading)."""
        threading.Thread(target=self._warm, args=(session_id,), name="openprogram-viewer-warm", daemon=True).start()

    def _warm(self, session_id: str) -> None:
        try:
            self.get(session_id)
        except Exception:  # the page's own request reports it
            pass

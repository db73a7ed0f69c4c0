"""The session trees the viewer keeps: each read once, and read again only when its session has changed.

Reads are per session: a session being read makes only the requests for that same session wait (they
share its read); a running session's tree is brought up to date with the rows that changed.
"""

from __future__ import annotations

import collections
import contextlib
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

from ..stores import SessionInfo, Store
from .tree import SessionTree

__all__ = ["TreeCache"]

#: A running session is read whole again after this many seconds of reading only what changed: what
#: the count check cannot see (an effect note, say) shows up at the latest then.
FULL_READ_EVERY = 60.0
#: A running tree with more calls left without an end than this is read whole (a key lookup each would cost more).
MAX_OPEN_CALLS = 2000


class _Entry:
    __slots__ = ("checked_at", "key", "read_whole_at", "tree")

    def __init__(self, tree: SessionTree, key: tuple[float, int], checked_at: float, read_whole_at: float) -> None:
        self.tree, self.key, self.checked_at, self.read_whole_at = tree, key, checked_at, read_whole_at


def _key(info: SessionInfo) -> tuple[float, int]:
    return info.updated_at, info.call_count


class _SessionLocks:
    """One lock per session being read, dropped when nobody holds or waits for it."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._held: dict[str, tuple[threading.Lock, int]] = {}

    @contextlib.contextmanager
    def held(self, session_id: str) -> Iterator[None]:
        with self._lock:
            lock, users = self._held.get(session_id) or (threading.Lock(), 0)
            self._held[session_id] = (lock, users + 1)
        try:
            with lock:
                yield
        finally:
            with self._lock:
                lock, users = self._held[session_id]
                if users == 1:
                    del self._held[session_id]
                else:
                    self._held[session_id] = (lock, users - 1)


class TreeCache:
    """Trees of the sessions last looked at, up to ``max_calls`` calls in all.

    A tree is trusted for ``recheck`` seconds; after that the store's listing of the session
    (update time and call count) says whether to read it again. A tree with running calls is
    brought up to date each time (their ends change neither): its calls with no end yet and
    those started since are read again, and the whole of it when the call count says a row
    came in late, or every :data:`FULL_READ_EVERY` seconds.
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
        self._reads = _SessionLocks()  # two readers of one session share one read; other sessions never wait

    def get(self, session_id: str, info: SessionInfo | None = None) -> SessionTree | None:
        """The session's tree, or None if the store has no such session."""
        fresh = self._fresh(session_id)
        if fresh is not None:
            return fresh
        with self._reads.held(session_id):
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
            if entry is not None and entry.tree.running and now - entry.read_whole_at < FULL_READ_EVERY:
                updated = self._changes(entry.tree)
                if updated is not None:
                    assert updated.info is not None
                    self._keep(session_id, _Entry(updated, _key(updated.info), now, entry.read_whole_at))
                    return updated
            tree = SessionTree.read(self.store, session_id, info)
            self._keep(session_id, _Entry(tree, _key(info), now, now))
            return tree

    def _changes(self, tree: SessionTree) -> SessionTree | None:
        """A running tree brought up to date with the rows that changed, or None if it must be read whole."""
        open_calls = tree.open_calls()
        if len(open_calls) > MAX_OPEN_CALLS:
            return None
        changed = self.store.iter_changed_tree_rows(tree.session_id, open_calls, tree.newest_start)
        updated = tree.updated(changed, None)
        # Counted after the read: a row that came in late with an earlier start (another process's clock)
        # makes the store hold more calls than the tree.
        info = self.store.get_session(tree.session_id)
        if info is None or info.call_count != len(updated):
            return None
        updated.info = info
        return updated

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

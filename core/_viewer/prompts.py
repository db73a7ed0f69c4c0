"""Which messages of a model call were new: each request's link to the earlier request it repeats.

A store keeps an ``llm`` call's prompt as "the first ``keep`` messages of an earlier request of the
session, then these"; the viewer opens a call on the messages from ``keep`` on and folds the rest.
The links of a session are read with one scan of it, so they are kept per version of its tree.
"""

from __future__ import annotations

import collections
import threading

from ..stores import Store
from .lookup import UNREADABLE
from .tree import SessionTree

__all__ = ["PromptLinks"]

#: (the earlier request, how many of its messages this one repeats)
Link = tuple[str | None, int]
_NO_LINK: Link = (None, 0)


class PromptLinks:
    """The prompt links of the sessions last looked at, read again when their tree changes."""

    def __init__(self, store: Store, *, sessions: int = 32) -> None:
        self.store = store
        self._sessions = sessions
        self._links: collections.OrderedDict[str, tuple[str, dict[str, Link]]] = collections.OrderedDict()
        self._lock = threading.Lock()

    def of(self, tree: SessionTree, call_id: str) -> Link:
        """The link of one model call; ``(None, 0)`` for a call stored whole (nothing to fold)."""
        return self._read(tree).get(call_id, _NO_LINK)

    def _read(self, tree: SessionTree) -> dict[str, Link]:
        with self._lock:
            known = self._links.get(tree.session_id)
        if known is not None and known[0] == tree.version:
            return known[1]
        links: dict[str, Link] = {}
        # A session with no message rows has no references: skip the scan (records of older versions).
        if self.store.keeps_messages and self.store.messages(tree.session_id):
            try:
                links = self.store.prompt_reader(tree.session_id).links()
            except UNREADABLE:  # a hostile message row: every prompt is shown whole, nothing folded
                links = {}
        with self._lock:
            self._links[tree.session_id] = (tree.version, links)
            self._links.move_to_end(tree.session_id)
            while len(self._links) > self._sessions:
                self._links.popitem(last=False)
        return links

"""openprogram's pytest plugin: each test records into a store of its own, and asserts on the call tree.

Installed with openprogram (the ``pytest11`` entry point), it adds one fixture, ``recorded``::

    def test_the_agent_searches_before_answering(recorded):
        run_my_agent("What is a session?")  # no session_context needed: the test's implicit session

        recorded.assert_order("search", "answer", kind="tool")
        assert len(recorded.calls("llm", under="agent")) == 1
        recorded.assert_no_errors()

For the test's length the default store is a new SQLite file in the test's ``tmp_path``
(``OPENPROGRAM_STORE``): calls made with no session open record into an implicit session
of the test's own, and ``session_context()`` without a store records there too. Sync and
async tests alike; a failed assertion prints the recorded tree. Only this module needs
pytest: ``import openprogram`` never imports it.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from . import flush
from ._recording import discard_store
from ._sessions import forget_implicit
from .stores import CallRecord, SessionInfo, Store, open_store

__all__ = ["Recorded", "recorded"]

#: Variables that would make a test's calls join a session exported by the process that runs pytest.
_EXPORTED_SESSION = ("OPENPROGRAM_SESSION_ID", "OPENPROGRAM_TURN_ID", "OPENPROGRAM_PARENT_CALL", "OPENPROGRAM_AGENT_ID")
#: The most lines of the tree an assertion message shows.
_MAX_TREE_LINES = 200


class Recorded:
    """The calls recorded in one test's store, read back for assertions (every read flushes first).

    Filters, wherever they are taken: ``kind`` (``"llm"``, ``"tool"``, ``"node"``, ...),
    ``name``, ``framework`` (``"langgraph"``, ...), ``status`` (``"ok"``, ``"error"``, ...)
    and ``under``: a call (a :class:`~openprogram.CallRecord`) or the name of calls that the
    matched calls ran under, at any depth.
    """

    def __init__(self, store: Store) -> None:
        self.store = store

    @property
    def url(self) -> str:
        """The store's URL: ``openprogram --store URL sessions`` reads it after the test."""
        return self.store.url

    # --- reading ----------------------------------------------------------------------

    def sessions(self) -> list[SessionInfo]:
        """The sessions recorded in this test's store."""
        flush()
        return self.store.list_sessions()

    def calls(
        self,
        kind: str | None = None,
        name: str | None = None,
        *,
        framework: str | None = None,
        status: str | None = None,
        under: CallRecord | str | None = None,
    ) -> list[CallRecord]:
        """The recorded calls that match, in the order they started (every session of the test)."""
        everything = self._all_calls()
        ancestors = _ancestry(everything) if under is not None else {}
        return [
            call
            for call in everything
            if (kind is None or call.kind == kind)
            and (name is None or call.name == name)
            and (framework is None or call.framework == framework)
            and (status is None or call.status == status)
            and (under is None or any(_is(parent, under) for parent in ancestors[_key(call)]))
        ]

    def names(
        self,
        kind: str | None = None,
        *,
        framework: str | None = None,
        status: str | None = None,
        under: CallRecord | str | None = None,
    ) -> list[str]:
        """The names of the matching calls, in the order they started: ``names("tool") == ["search", "answer"]``."""
        return [call.name for call in self.calls(kind, framework=framework, status=status, under=under)]

    def one(
        self,
        kind: str | None = None,
        name: str | None = None,
        *,
        framework: str | None = None,
        status: str | None = None,
        under: CallRecord | str | None = None,
    ) -> CallRecord:
        """The only matching call; an :class:`AssertionError` showing the tree if there are none or several."""
        found = self.calls(kind, name, framework=framework, status=status, under=under)
        if len(found) != 1:
            wanted = _describe(kind, name, framework, status, under)
            raise AssertionError(f"expected one {wanted}, found {len(found)}\n{self.tree()}")
        return found[0]

    def children(self, call: CallRecord, kind: str | None = None, name: str | None = None) -> list[CallRecord]:
        """The calls that ``call`` made directly (its children in the tree), in the order they started."""
        return [
            child
            for child in self._all_calls()
            if child.session_id == call.session_id
            and child.parent_id == call.call_id
            and (kind is None or child.kind == kind)
            and (name is None or child.name == name)
        ]

    def parent(self, call: CallRecord) -> CallRecord | None:
        """The call ``call`` ran under (None for a turn, the root of its session's tree)."""
        return next(
            (c for c in self._all_calls() if c.session_id == call.session_id and c.call_id == call.parent_id), None
        )

    def errors(self) -> list[CallRecord]:
        """The calls that ended with an error, in the order they started."""
        return self.calls(status="error")

    # --- asserting --------------------------------------------------------------------

    def assert_no_errors(self) -> None:
        """Fail, naming each failed call and its error, if any call ended with an error."""
        failed = self.errors()
        if failed:
            listed = "\n".join(f"  {_line(call)}" for call in failed)
            raise AssertionError(f"{_count(failed, 'call')} ended with an error:\n{listed}\n{self.tree()}")

    def assert_order(
        self,
        *names: str,
        kind: str | None = None,
        framework: str | None = None,
        under: CallRecord | str | None = None,
    ) -> None:
        """Fail unless calls named ``names`` started in this order (others may come between them).

        ``assert_order("search", "answer", kind="tool")``: a ``search`` tool call started, and
        a later ``answer`` one.
        """
        started = self.names(kind, framework=framework, under=under)
        position = 0
        for name in started:
            if position < len(names) and name == names[position]:
                position += 1
        if position < len(names):
            wanted = _describe(kind, None, framework, None, under, plural=True)
            raise AssertionError(
                f"expected {wanted} named {' then '.join(map(repr, names))} in that order; "
                f"{names[position]!r} was not found after {list(names[:position])!r}. "
                f"They started in this order: {started!r}\n{self.tree()}"
            )

    # --- showing ----------------------------------------------------------------------

    def tree(self) -> str:
        """The recorded calls as an indented tree, session by session (what assertion messages show)."""
        sessions = self.sessions()
        lines = [f"recorded in {self.url} ({_count(sessions, 'session')}):"]
        for session in sessions:
            lines.append(f"session {session.session_id}")
            calls = self.store.list_calls(session.session_id)
            ids = {call.call_id for call in calls}
            children: dict[str | None, list[CallRecord]] = {}
            for call in calls:
                children.setdefault(call.parent_id if call.parent_id in ids else None, []).append(call)
            stack = [(call, 1) for call in reversed(children.get(None, []))]
            while stack:
                call, depth = stack.pop()
                lines.append(f"{'  ' * depth}{_line(call)}")
                stack += [(child, depth + 1) for child in reversed(children.get(call.call_id, []))]
        if len(lines) > _MAX_TREE_LINES:
            lines = [*lines[:_MAX_TREE_LINES], f"... {len(lines) - _MAX_TREE_LINES} more lines"]
        return "\n".join(lines)

    def __repr__(self) -> str:
        return f"<Recorded {self.url}>"

    def _all_calls(self) -> list[CallRecord]:
        flush()
        found = [call for session in self.store.list_sessions() for call in self.store.list_calls(session.session_id)]
        return sorted(found, key=lambda call: call.started_at)  # stable: a session's own order is kept


def _key(call: CallRecord) -> tuple[str, str]:
    return call.session_id, call.call_id


def _ancestry(calls: list[CallRecord]) -> dict[tuple[str, str], list[CallRecord]]:
    """Each call's ancestors, nearest first."""
    by_key = {_key(call): call for call in calls}
    found: dict[tuple[str, str], list[CallRecord]] = {}
    for call in calls:
        chain: list[CallRecord] = []
        parent = by_key.get((call.session_id, call.parent_id or ""))
        while parent is not None and len(chain) < len(calls):  # bounded: a broken record never loops
            chain.append(parent)
            parent = by_key.get((parent.session_id, parent.parent_id or ""))
        found[_key(call)] = chain
    return found


def _is(call: CallRecord, wanted: CallRecord | str) -> bool:
    return call.name == wanted if isinstance(wanted, str) else _key(call) == _key(wanted)


def _describe(
    kind: str | None,
    name: str | None,
    framework: str | None,
    status: str | None,
    under: CallRecord | str | None,
    *,
    plural: bool = False,
) -> str:
    """How an assertion names the calls it looked for: ``llm call 'gpt' (framework langgraph) under 'agent'``."""
    noun = "calls" if plural else "call"
    what = f"{kind} {noun}" if kind else noun if plural else "a call"
    if name is not None:
        what += f" {name!r}"
    details = [f"{field} {value}" for field, value in (("framework", framework), ("status", status)) if value]
    if details:
        what += f" ({', '.join(details)})"
    if under is not None:
        what += f" under {under!r}" if isinstance(under, str) else f" under {under.kind} {under.name!r}"
    return what


def _count(items: list[Any], noun: str) -> str:
    return f"{len(items)} {noun}{'' if len(items) == 1 else 's'}"


def _line(call: CallRecord) -> str:
    """One call as the tree shows it: kind, name, framework, status, error."""
    text = f"{call.kind} {call.name}"
    if call.framework:
        text += f" [{call.framework}]"
    text += f" {call.status}"
    if call.error:
        first_line = call.error.strip().split("\n", 1)[0]  # "Type: message"
        text += f": {first_line[:200]}"
    return text


@pytest.fixture
def recorded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Recorded]:
    """A store of the test's own as the default store, and a :class:`Recorded` to assert on what it holds.

    Calls made with no session open record into an implicit session of this test; a
    ``session_context()`` given no store records here too.
    """
    # Named afresh each time: a path used again (pytest reuses a --basetemp it emptied) would find
    # the store of that path's earlier test, still open in this process, writing to a file since deleted.
    url = f"sqlite:///{tmp_path / f'openprogram-{secrets.token_hex(4)}.db'}"
    monkeypatch.setenv("OPENPROGRAM_STORE", url)
    for name in _EXPORTED_SESSION:
        monkeypatch.delenv(name, raising=False)
    forget_implicit()  # an earlier test's, or the process's: the next call opens this test's own
    store = open_store(url)
    yield Recorded(store)
    forget_implicit()  # its turn ends in this test's store, not in the next test's
    flush()
    discard_store(store)
    store.close()

"""``memory://`` — an in-process store for tests and throwaway runs."""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from typing import Any

from ._base import SessionInfo, Store, attempt_only, session_info, tokens_in
from ._rows import (
    EFFECT_COLUMNS,
    Aliases,
    CallRow,
    Calls,
    EffectRow,
    Messages,
    Sessions,
    effect_changes,
)

__all__ = ["MemoryStore"]


_EFFECT_INDEX = {column: i for i, column in enumerate(EFFECT_COLUMNS)}


class MemoryStore(Store):
    """Keeps everything in dicts; lost when the process ends."""

    def __init__(self, url: str = "memory://") -> None:
        self.url = url
        self._lock = threading.Lock()
        self._sessions: dict[str, list[object]] = {}
        self._calls: dict[str, CallRow] = {}
        self._by_session: dict[str, list[str]] = {}
        self._beats: dict[str, float] = {}
        self._aliases: dict[tuple[str, str], str] = {}
        self._effects: dict[str, EffectRow] = {}
        self._messages: dict[str, dict[str, str]] = {}  # session id -> message id -> JSON text

    keeps_messages = True

    def write(self, sessions: Sessions, calls: Calls, aliases: Aliases = (), messages: Messages = ()) -> None:
        with self._lock:
            for session_id, message_id, text in messages:
                self._messages.setdefault(session_id, {}).setdefault(message_id, text)
            for namespace, key, session_id, _ in aliases:
                self._aliases[(namespace, key)] = session_id
            for sid, agent, created, updated in sessions:
                row = self._sessions.get(sid)
                if row is None:
                    self._sessions[sid] = [sid, agent, created, updated]
                else:
                    row[3] = max(row[3], updated)  # type: ignore[call-overload]
            for call in calls:
                old = self._calls.get(call[0])
                if old is None:
                    self._by_session.setdefault(call[1], []).append(call[0])
                elif old[7] != "running" or call[7] == "running":
                    continue  # a final row is never replaced
                self._calls[call[0]] = call

    def add_effects(self, rows: Sequence[EffectRow]) -> None:
        with self._lock:
            for row in rows:
                self._effects.setdefault(row[0], row)

    def move_effect(self, effect_id: str, state: str, claimed_by: str | None, changes: dict[str, Any]) -> bool:
        columns, values = effect_changes(changes)
        with self._lock:
            row = self._effects.get(effect_id)
            if row is None or row[7] != state or row[13] != claimed_by:
                return False
            moved = list(row)
            for column, value in zip(columns, values, strict=True):
                moved[_EFFECT_INDEX[column]] = value
            self._effects[effect_id] = tuple(moved)  # type: ignore[assignment]
            return True

    def drop_effect(self, effect_id: str, state: str) -> bool:
        with self._lock:
            row = self._effects.get(effect_id)
            if row is None or row[7] != state:
                return False
            del self._effects[effect_id]
            return True

    def _effect_rows(self, session_id: str) -> list[EffectRow]:
        with self._lock:
            rows = [row for row in self._effects.values() if row[2] == session_id]
        rows.sort(key=lambda r: (r[10], r[0]))
        return rows

    def heartbeat(self, owner: str, at: float) -> None:
        with self._lock:
            self._beats[owner] = at

    def claim_session(self, session_id: str, agent_id: str, at: float) -> bool:
        with self._lock:
            if session_id in self._sessions:
                return False
            self._sessions[session_id] = [session_id, agent_id, at, at]
            return True

    def session_exists(self, session_id: str) -> bool:
        with self._lock:
            return session_id in self._sessions

    def _info(self, row: list[object]) -> SessionInfo:
        sid = str(row[0])
        ids = self._by_session.get(sid, ())
        calls = [self._calls[c] for c in ids]
        tokens = sum(tokens_in(c[11]) for c in calls if c[4] == "llm")
        return session_info((sid, row[1], row[2], row[3], len(ids), tokens))

    def list_sessions(self, limit: int | None = None) -> list[SessionInfo]:
        with self._lock:
            infos = [self._info(r) for r in self._sessions.values()]
        infos.sort(key=lambda s: (s.updated_at, s.session_id), reverse=True)
        return infos if limit is None else infos[:limit]

    def get_session(self, session_id: str) -> SessionInfo | None:
        with self._lock:
            row = self._sessions.get(session_id)
            return None if row is None else self._info(row)

    def _iter_call_rows(self, session_id: str, captures: bool = True) -> Iterator[CallRow]:
        with self._lock:
            rows = [self._calls[c] for c in self._by_session.get(session_id, ())]
        if not captures:
            rows = [(*r[:8], None, None, r[10], r[11] if r[4] == "llm" else attempt_only(r[11]), *r[12:]) for r in rows]
        rows.sort(key=lambda r: (r[12], r[0]))
        return iter(rows)

    def messages(self, session_id: str) -> dict[str, str]:
        with self._lock:
            return dict(self._messages.get(session_id, {}))

    def resolve_alias(self, namespace: str, key: str) -> str | None:
        with self._lock:
            return self._aliases.get((namespace, key))

    def _heartbeats(self) -> dict[str, float]:
        with self._lock:
            return dict(self._beats)

    # --- re-reading what changed in a running session (the viewer's polls) ------------------
    def _changed_call_rows(
        self, session_id: str, calls: Sequence[tuple[str, float]], since: float
    ) -> Iterator[CallRow]:
        named = {call_id for call_id, _ in calls}
        with self._lock:
            rows = [self._calls[c] for c in self._by_session.get(session_id, ())]
        changed = [r for r in rows if r[0] in named or r[12] >= since]
        return iter(
            [(*r[:8], None, None, r[10], r[11] if r[4] == "llm" else attempt_only(r[11]), *r[12:]) for r in changed]
        )

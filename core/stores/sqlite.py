"""``sqlite:///path`` — the embedded default store.

One file shared safely by any number of processes: WAL journal, a busy
timeout, and every batch in one ``BEGIN IMMEDIATE`` transaction with
``synchronous=FULL``, so a batch is on disk when ``write`` returns (and so is
every batch ``write_unsynced`` committed before it). The directory is created
``0700`` and the file ``0600``.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import os
import sqlite3
import threading
import time
import weakref
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from .._runtime import StoreError
from ._base import SessionInfo, Store, session_info
from ._rows import (
    Aliases,
    CallRow,
    CallRows,
    Calls,
    EffectOutcome,
    EffectRow,
    Messages,
    Sessions,
    effect_changes,
)

__all__ = ["SCHEMA_VERSION", "SQLiteStore"]

logger = logging.getLogger("openprogram")

SCHEMA_VERSION = 4

# Before Python 3.12, sqlite3 binds None through its adapter protocol, which looks up
# ``PrepareProtocol.__adapt__`` and formats and clears an AttributeError for every
# NULL parameter, and most call rows carry three (framework, error, attributes): a
# large share of the writer's work (see bench/README.md). With an adapter
# registered for NoneType the lookup is one dict hit. ``{}.get`` maps None to None,
# so nothing bound changes for anyone; a NoneType adapter of the user's is kept.
sqlite3.adapters.setdefault((type(None), sqlite3.PrepareProtocol), {}.get)

# Calls are clustered by (session_id, started_at, call_id), the order every read wants, so
# a row is one b-tree insert. Call ids are unique by construction, and a call's running and
# final rows share its session and start time, so this key identifies a call as well.
# The effects table is the undo journal; the messages table holds each distinct message of a
# session's model calls once (see _prompts): a rowid table, whose rows are appended in order
# (keyed by their hashes, kilobyte rows left b-tree pages half empty), and a small unique index.
# Older schemas are migrated in place when opened.
_META = "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)"
_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS sessions (
    session_id TEXT PRIMARY KEY,
    agent_id   TEXT NOT NULL,
    created_at REAL NOT NULL,
    updated_at REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS sessions_by_update ON sessions (updated_at);
CREATE TABLE IF NOT EXISTS calls (
    call_id    TEXT NOT NULL,
    session_id TEXT NOT NULL,
    turn_id    TEXT NOT NULL,
    parent_id  TEXT,
    kind       TEXT NOT NULL,
    name       TEXT NOT NULL,
    framework  TEXT,
    status     TEXT NOT NULL,
    inputs     TEXT,
    output     TEXT,
    error      TEXT,
    attributes TEXT,
    started_at REAL NOT NULL,
    ended_at   REAL,
    owner      TEXT NOT NULL,
    PRIMARY KEY (session_id, started_at, call_id)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS heartbeats (owner TEXT PRIMARY KEY, at REAL NOT NULL);
CREATE TABLE IF NOT EXISTS aliases (
    namespace  TEXT NOT NULL,
    key        TEXT NOT NULL,
    session_id TEXT NOT NULL,
    bound_at   REAL NOT NULL,
    PRIMARY KEY (namespace, key)
);
CREATE TABLE IF NOT EXISTS effects (
    effect_id    TEXT PRIMARY KEY,
    call_id      TEXT NOT NULL,
    session_id   TEXT NOT NULL,
    turn_id      TEXT NOT NULL,
    kind         TEXT NOT NULL,
    name         TEXT NOT NULL,
    framework    TEXT,
    state        TEXT NOT NULL,
    inputs       TEXT,
    output       TEXT,
    started_at   REAL NOT NULL,
    ended_at     REAL,
    owner        TEXT NOT NULL,
    claimed_by   TEXT,
    claimed_at   REAL,
    undo_call_id TEXT,
    error        TEXT
);
CREATE INDEX IF NOT EXISTS effects_by_session ON effects (session_id, started_at, effect_id);
CREATE TABLE IF NOT EXISTS messages (
    session_id TEXT NOT NULL,
    message_id TEXT NOT NULL,
    body       TEXT NOT NULL,
    UNIQUE (session_id, message_id)
);
"""

UPSERT_SESSION = (
    "INSERT INTO sessions VALUES (?, ?, ?, ?) ON CONFLICT (session_id) "
    "DO UPDATE SET updated_at = max(sessions.updated_at, excluded.updated_at)"
)
CLAIM_SESSION = "INSERT INTO sessions VALUES (?, ?, ?, ?) ON CONFLICT (session_id) DO NOTHING"
# A running row may be replaced by its final row; a final row is never replaced.
UPSERT_CALL = (
    "INSERT INTO calls VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
    "ON CONFLICT (session_id, started_at, call_id) "
    "DO UPDATE SET status = excluded.status, inputs = excluded.inputs, output = excluded.output, "
    "error = excluded.error, attributes = excluded.attributes, ended_at = excluded.ended_at "
    "WHERE calls.status = 'running' AND excluded.status != 'running'"
)
# Calls are written CHUNK rows per statement: one statement step (and one release of the
# GIL) per chunk instead of per row. A chunk may hold a call's running and final rows:
# SQLite applies a multi-row upsert row by row, so the final row still wins.
CHUNK = 64  # 15 x 64 = 960 parameters at most, under every SQLite's limit (999 before 3.32)
_WIDTH = 15
_ROW = "(" + ", ".join(["?"] * _WIDTH) + ")"

# A value that every row of a chunk shares (its session, turn and owner, nearly always; often
# its parent, kind, name, framework and status; NULL errors and attributes) is bound once.
# Binding is the part of a write that holds the GIL (about 180 ns a parameter), so a chunk
# of calls to one tool binds 5 parameters a row, not 15. Parameters are numbered
# column by column: the shared values first, then each other column's CHUNK values, which
# are strided slices of the flat rows, taken in C. The statement for each set of shared
# columns (a bit mask) is built once.
_chunk_statements: dict[int, str] = {}
_REAL_COLUMNS = frozenset({12, 13})  # started_at, ended_at
_EXACT_TYPES = frozenset({str, type(None)})
_MAX_CHUNK_STATEMENTS = 128  # sqlite3 caches 128 prepared statements per connection by default


def _chunk_statement(shared: int) -> str:
    """The CHUNK-row upsert whose columns in the bit mask ``shared`` are bound once (see :func:`_chunk_parameters`)."""
    sql = _chunk_statements.get(shared)
    if sql is not None:
        return sql
    rows = [[""] * _WIDTH for _ in range(CHUNK)]
    number = 1
    for column in range(_WIDTH):
        if shared >> column & 1:
            for row in rows:
                row[column] = f"?{number}"
            number += 1
    for column in range(_WIDTH):
        if not shared >> column & 1:
            for k, row in enumerate(rows):
                row[column] = f"?{number + k}"
            number += CHUNK
    sql = UPSERT_CALL.replace(f"VALUES {_ROW}", "VALUES " + ", ".join("(" + ", ".join(r) + ")" for r in rows), 1)
    if len(_chunk_statements) < _MAX_CHUNK_STATEMENTS:
        _chunk_statements[shared] = sql
    return sql


def _chunk_parameters(flat: Sequence[Any], start: int) -> tuple[int, list[Any]]:
    """The shared-column mask and the parameters of the CHUNK rows at ``flat[start:]`` (15 fields a row)."""
    end = start + _WIDTH * CHUNK
    shared = 0
    head: list[Any] = []
    params: list[Any] = []
    for column in range(_WIDTH):
        values = flat[start + column : end : _WIDTH]
        first = values[0]
        # Call ids never repeat. Equal is stored the same for text and NULL, and for numbers in
        # the REAL columns; 1 == 1.0 == True would not be in a TEXT column, so they are not shared.
        if column and values.count(first) == CHUNK and (column in _REAL_COLUMNS or type(first) in _EXACT_TYPES):
            shared |= 1 << column
            head.append(first)
        else:
            params += values
    return shared, head + params


ADD_EFFECT = "INSERT INTO effects VALUES (" + ", ".join(["?"] * 17) + ") ON CONFLICT (effect_id) DO NOTHING"
SETTLE_EFFECT = "UPDATE effects SET state = ?, output = ?, ended_at = ? WHERE effect_id = ? AND state = 'pending'"

_ALL_COLUMNS = "*"
# What a call tree needs: the captures (often most of a row's bytes) are never read.
_TREE_COLUMNS = (
    "call_id, session_id, turn_id, parent_id, kind, name, framework, status, NULL, NULL, error, "
    "CASE WHEN kind = 'llm' THEN attributes WHEN instr(attributes, '\"attempt\"') AND json_valid(attributes) "
    "THEN CASE WHEN json_extract(attributes, '$.attempt') IS NOT NULL "
    "THEN json_object('attempt', json_extract(attributes, '$.attempt')) END END, started_at, ended_at, owner"
)


def _token_count(key: str) -> str:
    """SQL for one count of a model call's ``usage``, as stores.tokens_of reads it (else NULL)."""
    value = f"json_extract(c.attributes, '$.usage.{key}')"
    return (
        f"CASE WHEN json_type(c.attributes, '$.usage.{key}') IN ('integer', 'real') AND {value} >= 0 "
        f"AND {value} < 1e15 AND {value} = CAST({value} AS INTEGER) THEN CAST({value} AS INTEGER) END"
    )


_SESSION_COLUMNS = (
    "CAST(s.session_id AS TEXT), CAST(s.agent_id AS TEXT), s.created_at, s.updated_at, "
    "(SELECT count(*) FROM calls c WHERE c.session_id = s.session_id), "
    # The tokens of its model calls, as stores.tokens_of counts them (total(): a float, never an overflow).
    f"(SELECT total(coalesce({_token_count('total_tokens')}, coalesce({_token_count('input_tokens')}, 0) "
    f"+ coalesce({_token_count('output_tokens')}, 0))) "
    "FROM calls c WHERE c.session_id = s.session_id AND c.kind = 'llm' AND json_valid(c.attributes))"
)


class SQLiteStore(Store):
    """A store in one SQLite file."""

    busy_timeout_ms = 30_000

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path).absolute()
        self.url = f"sqlite:///{self.path}"
        self._write_conn: sqlite3.Connection | None = None
        self._write_identity: tuple[int, int] | None = None  # the file the writer connection has open
        self._lock = threading.Lock()
        self._prepared = False
        self._unsynced = False  # a write_unsynced() commit not yet synced by a write()
        _stores.add(self)

    # --- files and connections ----------------------------------------------
    def _prepare(self) -> None:
        if self._prepared:
            return
        directory = self.path.parent
        try:
            if not directory.exists():
                directory.mkdir(mode=0o700, parents=True, exist_ok=True)
            if self._absent():
                os.close(os.open(self.path, os.O_CREAT | os.O_RDWR, 0o600))
            conn = self._connect()
            try:
                found = self._create_or_migrate(conn)
            finally:
                conn.close()
        except (OSError, sqlite3.Error) as exc:
            raise StoreError(f"cannot use the SQLite store at {self.path}: {exc}") from exc
        if found > SCHEMA_VERSION:
            raise StoreError(
                f"the SQLite store at {self.path} has schema version {found}, newer than this "
                f"openprogram understands ({SCHEMA_VERSION}); upgrade openprogram"
            )
        self._prepared = True

    @staticmethod
    def _create_or_migrate(conn: sqlite3.Connection) -> int:
        """Create the schema or bring it to :data:`SCHEMA_VERSION`; return the version found.

        One write transaction taken up front: processes opening a new store at the same
        moment wait for each other (busy timeout) instead of failing at once, as the
        read-then-write of each CREATE ... IF NOT EXISTS on its own would.
        """
        try:  # the common case, a current store, needs no write (a reader never waits for a writer)
            row = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
            if row is not None and int(row[0]) >= SCHEMA_VERSION:
                return int(row[0])
        except sqlite3.OperationalError:
            pass  # no meta table yet: a new store
        conn.execute("BEGIN IMMEDIATE")
        try:
            conn.execute(_META)
            row = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
            found = SCHEMA_VERSION if row is None else int(row[0])
            if found == 1:
                conn.execute("ALTER TABLE calls RENAME TO calls_v1")  # its index goes with it
            if found <= SCHEMA_VERSION:
                for statement in _SCHEMA.split(";"):
                    if statement.strip():
                        conn.execute(statement)
            if found == 1:
                conn.execute("INSERT OR IGNORE INTO calls SELECT * FROM calls_v1")
                conn.execute("DROP TABLE calls_v1")
            if found < SCHEMA_VERSION or row is None:
                conn.execute("INSERT OR REPLACE INTO meta VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),))
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
        return found

    def _connect(self) -> sqlite3.Connection:
        conn = sqlite3.connect(
            self.path, timeout=self.busy_timeout_ms / 1000, isolation_level=None, check_same_thread=False
        )
        conn.execute(f"PRAGMA busy_timeout = {self.busy_timeout_ms}")
        # Switching a new file to WAL needs it to itself, and SQLite answers "database is
        # locked" at once, not after the busy timeout, when another process is doing the
        # same: wait for it here. Once the file is in WAL mode this is a read.
        deadline = time.monotonic() + self.busy_timeout_ms / 1000
        while True:
            try:
                conn.execute("PRAGMA journal_mode = WAL")
                break
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc) or time.monotonic() > deadline:
                    conn.close()
                    raise
                time.sleep(0.005)
        conn.execute("PRAGMA synchronous = FULL")
        return conn

    def _reader(self, lenient: bool = False) -> sqlite3.Connection:
        try:
            self._prepare()
            conn = self._connect()
        except sqlite3.Error as exc:
            raise StoreError(f"cannot read the SQLite store at {self.path}: {exc}") from exc
        if lenient:
            conn.text_factory = _escaped_text
        return conn

    @contextlib.contextmanager
    def _reading(self, lenient: bool = False) -> Iterator[sqlite3.Connection]:
        """A reader connection, closed after the block; an SQLite error in it is a StoreError naming the path.

        ``lenient``: text that is not UTF-8 is read with its odd bytes escaped (slower: only on a retry).
        """
        conn = self._reader(lenient)
        try:
            yield conn
        except sqlite3.Error as exc:
            raise StoreError(f"cannot read the SQLite store at {self.path}: {exc}") from exc
        finally:
            conn.close()

    def _read(self, sql: str, params: tuple[Any, ...] = ()) -> list[Any]:
        """The rows of one query; text another program wrote that is not UTF-8 is read escaped, never an error."""
        with self._reading() as conn:
            try:
                return conn.execute(sql, params).fetchall()
            except sqlite3.OperationalError as exc:
                if not _undecodable(exc):
                    raise
        with self._reading(lenient=True) as conn:
            return conn.execute(sql, params).fetchall()

    # --- writing --------------------------------------------------------------
    keeps_messages = True

    def write(self, sessions: Sessions, calls: Calls, aliases: Aliases = (), messages: Messages = ()) -> None:
        self._write_batch(sessions, calls, aliases, messages, synced=True)

    syncs_later = True

    def write_unsynced(self, sessions: Sessions, calls: Calls, aliases: Aliases = (), messages: Messages = ()) -> None:
        """``write()`` without waiting for the disk: atomic, visible to readers and safe if the
        process dies, but safe from an OS crash or power loss only once a later ``write()`` returns.

        The writer's cycles that no ``flush()`` waits on commit this way: the fsync of every
        ``synchronous=FULL`` commit was most of what a few-row transaction costs.
        """
        self._write_batch(sessions, calls, aliases, messages, synced=False)

    def _write_batch(
        self, sessions: Sessions, calls: Calls, aliases: Aliases, messages: Messages, synced: bool
    ) -> None:
        with self._lock:
            conn = self._writer()
            try:
                if not synced:
                    conn.execute("PRAGMA synchronous = NORMAL")  # WAL: commits are synced at checkpoints only
                conn.execute("BEGIN IMMEDIATE")
                if synced and self._unsynced and not (sessions or calls or aliases or messages):
                    # Nothing to write, but earlier commits to sync: a FULL commit syncs the whole WAL.
                    conn.execute("INSERT OR REPLACE INTO meta VALUES ('synced_at', ?)", (repr(time.time()),))
                if sessions:
                    conn.executemany(UPSERT_SESSION, sessions)
                if messages:
                    conn.executemany("INSERT OR IGNORE INTO messages VALUES (?, ?, ?)", messages)
                if calls:
                    # The writer's rows come flat (CallRows): chunks are slices of one list.
                    flat = calls.flat if type(calls) is CallRows else list(itertools.chain.from_iterable(calls))
                    width = _WIDTH * CHUNK
                    whole = len(flat) - len(flat) % width
                    if whole:
                        # Chunks grouped by shared columns, a statement each; order does not matter
                        # to the upsert (a final row is never replaced by a running one).
                        groups: dict[int, list[list[Any]]] = {}
                        for i in range(0, whole, width):
                            shared, params = _chunk_parameters(flat, i)
                            groups.setdefault(shared, []).append(params)
                        for shared, chunks in groups.items():
                            conn.executemany(_chunk_statement(shared), chunks)
                    if whole < len(flat):
                        rest = iter(flat[whole:])
                        conn.executemany(UPSERT_CALL, zip(*(rest,) * _WIDTH, strict=True))
                if aliases:
                    conn.executemany("INSERT OR REPLACE INTO aliases VALUES (?, ?, ?, ?)", aliases)
                conn.execute("COMMIT")
                if synced:
                    self._unsynced = False
                else:
                    self._unsynced = True
                    conn.execute("PRAGMA synchronous = FULL")  # effects and heartbeats commit synced
            except BaseException as exc:
                if conn.in_transaction:
                    try:
                        conn.execute("ROLLBACK")
                    except sqlite3.Error:
                        pass
                if isinstance(exc, sqlite3.Error):
                    self._drop_writer()  # a new connection starts at synchronous=FULL
                    raise StoreError(f"cannot write the SQLite store at {self.path}: {exc}") from exc
                if not synced:
                    conn.execute("PRAGMA synchronous = FULL")
                raise

    def claim_session(self, session_id: str, agent_id: str, at: float) -> bool:
        return self._write_one(CLAIM_SESSION, (session_id, agent_id, at, at)).rowcount == 1

    def heartbeat(self, owner: str, at: float) -> None:
        self._write_one("INSERT OR REPLACE INTO heartbeats VALUES (?, ?)", (owner, at))

    # --- effects (autocommitted statements: durable when they return, under synchronous=FULL) ------
    def add_effects(self, rows: Sequence[EffectRow]) -> None:
        if len(rows) == 1:
            self._write_one(ADD_EFFECT, rows[0])
            return
        with self._effects_transaction() as conn:
            conn.executemany(ADD_EFFECT, rows)

    @contextlib.contextmanager
    def _effects_transaction(self) -> Iterator[sqlite3.Connection]:
        """The writer connection in one immediate transaction, committed after the block (rolled back on error)."""
        with self._lock:
            conn = self._writer()
            try:
                conn.execute("BEGIN IMMEDIATE")
                yield conn
                conn.execute("COMMIT")
            except sqlite3.Error as exc:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                self._drop_writer()
                raise StoreError(f"cannot write the SQLite store at {self.path}: {exc}") from exc

    def move_effect(self, effect_id: str, state: str, claimed_by: str | None, changes: dict[str, Any]) -> bool:
        columns, values = effect_changes(changes)
        sql = (
            f"UPDATE effects SET {', '.join(f'{c} = ?' for c in columns)} "
            "WHERE effect_id = ? AND state = ? AND claimed_by IS ?"
        )
        return self._write_one(sql, (*values, effect_id, state, claimed_by)).rowcount == 1

    def drop_effect(self, effect_id: str, state: str) -> bool:
        cursor = self._write_one("DELETE FROM effects WHERE effect_id = ? AND state = ?", (effect_id, state))
        return cursor.rowcount == 1

    def settle_effects(self, outcomes: Sequence[EffectOutcome]) -> None:
        ended = [(state, output, at, effect_id) for effect_id, state, output, at in outcomes if state is not None]
        failed = [(effect_id,) for effect_id, state, _, _ in outcomes if state is None]
        with self._effects_transaction() as conn:
            conn.executemany(SETTLE_EFFECT, ended)
            conn.executemany("DELETE FROM effects WHERE effect_id = ? AND state = 'pending'", failed)

    def _effect_rows(self, session_id: str) -> list[EffectRow]:
        if self._absent():
            return []
        return self._read("SELECT * FROM effects WHERE session_id = ? ORDER BY started_at, effect_id", (session_id,))

    def _writer(self) -> sqlite3.Connection:
        """The writer connection (opened on first use); call with ``_lock`` held."""
        conn = self._write_conn
        if conn is not None and self._file_identity() != self._write_identity:
            # The file was deleted or replaced under us: writing on would go into the unlinked
            # file, lost, while flush() reported success. Start a new store file instead.
            logger.warning(
                "openprogram: the SQLite store %s was removed or replaced; recording into a new file", self.path
            )
            self._drop_writer()
            self._prepared = False
            conn = None
        self._prepare()
        if conn is None:
            conn = self._write_conn = self._connect()
            self._write_identity = self._file_identity()
        return conn

    def _file_identity(self) -> tuple[int, int] | None:
        try:
            found = os.stat(self.path)
        except OSError:
            return None
        return found.st_dev, found.st_ino

    def _write_one(self, sql: str, params: tuple[Any, ...]) -> sqlite3.Cursor:
        """One statement, committed on its own."""
        with self._lock:
            conn = self._writer()
            try:
                return conn.execute(sql, params)
            except sqlite3.Error as exc:
                self._drop_writer()
                raise StoreError(f"cannot write the SQLite store at {self.path}: {exc}") from exc

    def _drop_writer(self) -> None:
        conn, self._write_conn = self._write_conn, None
        if conn is not None:
            try:
                conn.close()
            except sqlite3.Error:
                pass

    # --- reading --------------------------------------------------------------
    def _absent(self) -> bool:
        """True if the store does not exist yet (reads then find nothing and create nothing)."""
        if self.path.exists():
            return False
        ancestor = self.path.parent
        while not ancestor.exists() and ancestor != ancestor.parent:
            ancestor = ancestor.parent
        if not ancestor.is_dir():
            raise StoreError(f"cannot use the SQLite store at {self.path}: {ancestor} is not a directory")
        return True

    def session_exists(self, session_id: str) -> bool:
        if self._absent():
            return False
        return bool(self._read("SELECT 1 FROM sessions WHERE session_id = ?", (session_id,)))

    def list_sessions(self, limit: int | None = None) -> list[SessionInfo]:
        if self._absent():  # reading never creates a store
            return []
        rows = self._read(
            f"SELECT {_SESSION_COLUMNS} FROM sessions s ORDER BY s.updated_at DESC, s.session_id DESC LIMIT ?",
            (-1 if limit is None else limit,),
        )
        return [session_info(row) for row in rows]

    def get_session(self, session_id: str) -> SessionInfo | None:
        if self._absent():
            return None
        rows = self._read(f"SELECT {_SESSION_COLUMNS} FROM sessions s WHERE s.session_id = ?", (session_id,))
        return session_info(rows[0]) if rows else None

    def _iter_call_rows(self, session_id: str, captures: bool = True) -> Iterator[CallRow]:
        if self._absent():
            return
        sql = (
            f"SELECT {_ALL_COLUMNS if captures else _TREE_COLUMNS} FROM calls WHERE session_id = ? "
            "ORDER BY started_at, call_id"
        )
        done = 0
        try:
            with self._reading() as conn:
                cursor = conn.execute(sql, (session_id,))
                while rows := cursor.fetchmany(2000):
                    yield from rows
                    done += len(rows)
            return
        except StoreError as exc:
            if not _undecodable(exc.__cause__):
                raise
        # Text another program wrote that is not UTF-8: read on from where the batch it was in began.
        with self._reading(lenient=True) as conn:
            yield from itertools.islice(conn.execute(sql, (session_id,)), done, None)

    def _model_call_inputs(self, session_id: str) -> Iterator[tuple[str, str | None]]:
        if self._absent():
            return iter(())
        return iter(
            self._read(
                "SELECT call_id, inputs FROM calls WHERE session_id = ? AND kind = 'llm' ORDER BY started_at",
                (session_id,),
            )
        )

    def messages(self, session_id: str) -> dict[str, str]:
        if self._absent():
            return {}
        return dict(self._read("SELECT message_id, body FROM messages WHERE session_id = ?", (session_id,)))

    def _call_row(self, session_id: str, call_id: str, started_at: float | None) -> CallRow | None:
        if self._absent():
            return None
        rows = []
        if started_at is not None:  # the clustering key: one b-tree lookup
            rows = self._read(
                "SELECT * FROM calls WHERE session_id = ? AND started_at = ? AND call_id = ?",
                (session_id, started_at, call_id),
            )
        if not rows:
            rows = self._read("SELECT * FROM calls WHERE session_id = ? AND call_id = ?", (session_id, call_id))
        return tuple(rows[0]) if rows else None

    def resolve_alias(self, namespace: str, key: str) -> str | None:
        if self._absent():
            return None
        rows = self._read("SELECT session_id FROM aliases WHERE namespace = ? AND key = ?", (namespace, key))
        return str(rows[0][0]) if rows else None

    def _heartbeats(self) -> dict[str, float]:
        if self._absent():
            return {}
        return dict(self._read("SELECT owner, at FROM heartbeats"))

    def integrity_check(self) -> str:
        """SQLite's ``PRAGMA integrity_check`` result (``"ok"`` when healthy)."""
        conn = self._reader()
        try:
            return str(conn.execute("PRAGMA integrity_check").fetchone()[0])
        finally:
            conn.close()

    def close(self) -> None:
        with self._lock:
            self._drop_writer()

    # --- re-reading what changed in a running session (the viewer's polls) ------------------
    def _changed_call_rows(
        self, session_id: str, calls: Sequence[tuple[str, float]], since: float
    ) -> Iterator[CallRow]:
        if self._absent():
            return iter(())
        select = f"SELECT {_TREE_COLUMNS} FROM calls WHERE session_id = ?"
        with self._reading() as conn:
            conn.execute("BEGIN")  # one snapshot for both lookups
            rows = conn.execute(f"{select} AND started_at >= ?", (session_id, since)).fetchall()
            for call_id, started_at in calls:
                if started_at < since:  # one key lookup each (the later ones were read above)
                    key = (session_id, started_at, call_id)
                    rows += conn.execute(f"{select} AND started_at = ? AND call_id = ?", key).fetchall()
            conn.execute("COMMIT")
        return iter(rows)


def _escaped_text(data: bytes) -> str:
    """Text that is not UTF-8 (another program wrote it), its odd bytes escaped: readable and printable."""
    return data.decode("utf-8", "backslashreplace")


def _undecodable(exc: BaseException | None) -> bool:
    """Whether ``exc`` is sqlite3's failure to read a text value that is not UTF-8."""
    return isinstance(exc, sqlite3.OperationalError) and str(exc).startswith("Could not decode to UTF-8")


_stores: weakref.WeakSet[SQLiteStore] = weakref.WeakSet()
# A forked child must neither use nor close the parent's connection (SQLite forbids both):
# keep it referenced, unused, for the life of the child.
_inherited: list[sqlite3.Connection] = []


def _after_fork_in_child() -> None:
    for store in list(_stores):
        if store._write_conn is not None:
            _inherited.append(store._write_conn)
            store._write_conn = None
        store._lock = threading.Lock()  # it may have been held by the parent's writer thread


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)

"""``postgresql://...`` — one store shared by agent workers on many machines.

Needs ``openprogram[postgres]`` (psycopg 3). The URL is a libpq connection URI;
one extra query parameter, ``schema=NAME`` (default ``openprogram``), names the
schema that holds openprogram's tables, apart from the application's own. It is
created on first use under an advisory lock (safe when many processes start at
once) and versioned in a ``meta`` table; later versions of openprogram migrate
it by appending to :data:`MIGRATIONS`.

psycopg is imported when the store is opened, so a missing extra is a clear
:class:`StoreError` then, not an outage at the first write. Nothing connects at
construction: the first read or write does, with a short
connect timeout (``connect_timeout`` in the URL wins). ``url`` never contains a
password; the full URL is kept in :attr:`PostgresStore.connect_url` for child
processes and is never logged.

Each batch from the background writer is one transaction. New calls go in with
``COPY``; rows that must replace a ``running`` row (or that a ``COPY`` finds
already present, e.g. a re-imported spill file) are copied into a temporary
staging table and merged with ``INSERT ... ON CONFLICT``, in key order so
concurrent writers do not deadlock.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib
import logging
import os
import re
import threading
import weakref
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

from .._runtime import StoreError, install_hint
from ._base import SessionInfo, Store, session_info
from ._rows import (
    Aliases,
    AliasRow,
    CallRow,
    Calls,
    EffectOutcome,
    EffectRow,
    MessageRow,
    Messages,
    SessionRow,
    Sessions,
    effect_changes,
)
from ._urls import password_span, safe_url

if TYPE_CHECKING:
    import psycopg

__all__ = ["DEFAULT_SCHEMA", "MIGRATIONS", "MISSING_DRIVER", "SCHEMA_VERSION", "PostgresStore"]

logger = logging.getLogger("openprogram")

#: Where the tables go unless the URL says ``schema=NAME``: apart from the application's own tables.
DEFAULT_SCHEMA = "openprogram"

#: The one sentence a missing driver gets, from ``open_store`` and so from the command line.
MISSING_DRIVER = f"the PostgreSQL store needs psycopg: {install_hint('postgres')}"

#: Seconds to wait for a connection unless the URL says otherwise.
CONNECT_TIMEOUT = 5

#: Heartbeats older than this (seconds) are deleted, at most once per store object per period.
PRUNE_HEARTBEATS_AFTER = 86_400.0

#: Migration ``n`` (0-based) takes the schema from version ``n`` to ``n + 1``.
#: Append, never edit: a database records the version it reached in ``meta``.
MIGRATIONS: tuple[tuple[str, ...], ...] = (
    (
        """CREATE TABLE sessions (
            session_id text PRIMARY KEY,
            agent_id   text NOT NULL,
            created_at double precision NOT NULL,
            updated_at double precision NOT NULL
        )""",
        "CREATE INDEX sessions_by_update ON sessions (updated_at DESC, session_id DESC)",
        """CREATE TABLE calls (
            call_id    text PRIMARY KEY,
            session_id text NOT NULL,
            turn_id    text NOT NULL,
            parent_id  text,
            kind       text NOT NULL,
            name       text NOT NULL,
            framework  text,
            status     text NOT NULL,
            inputs     text,
            output     text,
            error      text,
            attributes text,
            started_at double precision NOT NULL,
            ended_at   double precision,
            owner      text NOT NULL
        )""",
        "CREATE INDEX calls_by_session ON calls (session_id, started_at, call_id)",
        "CREATE TABLE heartbeats (owner text PRIMARY KEY, at double precision NOT NULL)",
        """CREATE TABLE aliases (
            namespace  text NOT NULL,
            key        text NOT NULL,
            session_id text NOT NULL,
            bound_at   double precision NOT NULL,
            PRIMARY KEY (namespace, key)
        )""",
    ),
    (  # 2: the effects table, the undo journal
        """CREATE TABLE effects (
            effect_id    text PRIMARY KEY,
            call_id      text NOT NULL,
            session_id   text NOT NULL,
            turn_id      text NOT NULL,
            kind         text NOT NULL,
            name         text NOT NULL,
            framework    text,
            state        text NOT NULL,
            inputs       text,
            output       text,
            started_at   double precision NOT NULL,
            ended_at     double precision,
            owner        text NOT NULL,
            claimed_by   text,
            claimed_at   double precision,
            undo_call_id text,
            error        text
        )""",
        "CREATE INDEX effects_by_session ON effects (session_id, started_at, effect_id)",
    ),
    (  # 3: each distinct message of a session's model calls, stored once (see _prompts)
        """CREATE TABLE messages (
            session_id text NOT NULL,
            message_id text NOT NULL,
            body       text NOT NULL,
            PRIMARY KEY (session_id, message_id)
        )""",
    ),
    # 4: a call's attributes read as stores.tokens_of reads them. They are JSON text we wrote, or anything
    # another process sharing the store wrote: JSON PostgreSQL cannot read (a NUL or lone surrogate escaped,
    # NaN), counts past bigint. A cast failing in a query fails the whole listing, for every session;
    # these functions read such a row as holding nothing.
    (
        """CREATE FUNCTION openprogram_count(found jsonb) RETURNS bigint LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
            SELECT CASE WHEN jsonb_typeof(found) = 'number' AND found::text ~ '^[0-9]{1,15}(\\.0+)?$'
                THEN found::numeric::bigint END
        $$""",
        """CREATE FUNCTION openprogram_tokens(attributes text) RETURNS bigint LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
        AS $$
        DECLARE
            usage jsonb;
        BEGIN
            BEGIN
                usage := attributes::jsonb -> 'usage';
            EXCEPTION WHEN others THEN
                BEGIN  -- a NUL or lone surrogate escaped (a model name passed on): unreadable as jsonb
                    usage := regexp_replace(
                        attributes, '\\\\u(0000|[dD][89a-fA-F][0-9a-fA-F]{2})', '\\\\ufffd', 'g'
                    )::jsonb -> 'usage';
                EXCEPTION WHEN others THEN
                    RETURN 0;
                END;
            END;
            IF jsonb_typeof(usage) IS DISTINCT FROM 'object' THEN
                RETURN 0;
            END IF;
            RETURN coalesce(
                openprogram_count(usage -> 'total_tokens'),
                coalesce(openprogram_count(usage -> 'input_tokens'), 0)
                    + coalesce(openprogram_count(usage -> 'output_tokens'), 0)
            );
        END
        $$""",
        """CREATE FUNCTION openprogram_attempt(attributes text) RETURNS text LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
        AS $$
        DECLARE
            found json;
        BEGIN
            found := attributes::json -> 'attempt';
            RETURN CASE WHEN found IS NOT NULL THEN json_build_object('attempt', found)::text END;
        EXCEPTION WHEN others THEN
            RETURN NULL;
        END
        $$""",
    ),
)
SCHEMA_VERSION = len(MIGRATIONS)

_COLUMNS = (
    "call_id, session_id, turn_id, parent_id, kind, name, framework, status, "
    "inputs, output, error, attributes, started_at, ended_at, owner"
)
# What a call tree needs: the captures are never read.
_TREE_COLUMNS = (
    "call_id, session_id, turn_id, parent_id, kind, name, framework, status, "
    "NULL, NULL, error, CASE WHEN kind = 'llm' THEN attributes "
    "WHEN position('\"attempt\"' in attributes) > 0 THEN openprogram_attempt(attributes) END, "
    "started_at, ended_at, owner"
)
_STAGE = "CREATE TEMP TABLE IF NOT EXISTS openprogram_stage (LIKE calls INCLUDING DEFAULTS) ON COMMIT DELETE ROWS"
# A running row may be replaced by its final row; a final row is never replaced.
_MERGE_CALLS = (
    f"INSERT INTO calls ({_COLUMNS}) SELECT {_COLUMNS} FROM openprogram_stage ORDER BY call_id "
    "ON CONFLICT (call_id) DO UPDATE SET status = excluded.status, inputs = excluded.inputs, "
    "output = excluded.output, error = excluded.error, attributes = excluded.attributes, "
    "ended_at = excluded.ended_at WHERE calls.status = 'running' AND excluded.status <> 'running'"
)
_UPSERT_SESSION = (
    "INSERT INTO sessions VALUES (%s, %s, %s, %s) ON CONFLICT (session_id) "
    "DO UPDATE SET updated_at = GREATEST(sessions.updated_at, excluded.updated_at)"
)
_UPSERT_ALIAS = (
    "INSERT INTO aliases VALUES (%s, %s, %s, %s) ON CONFLICT (namespace, key) "
    "DO UPDATE SET session_id = excluded.session_id, bound_at = excluded.bound_at"
)
_ADD_MESSAGE = "INSERT INTO messages VALUES (%s, %s, %s) ON CONFLICT (session_id, message_id) DO NOTHING"
_SESSION_COLUMNS = (
    "s.session_id, s.agent_id, s.created_at, s.updated_at, "
    "(SELECT count(*) FROM calls c WHERE c.session_id = s.session_id), "
    # The tokens of its model calls, as stores.tokens_of counts them.
    "(SELECT coalesce(sum(openprogram_tokens(c.attributes)), 0) "
    "FROM calls c WHERE c.session_id = s.session_id AND c.kind = 'llm' AND c.attributes IS NOT NULL)"
)
_ADD_EFFECT = "INSERT INTO effects VALUES (" + ", ".join(["%s"] * 17) + ") ON CONFLICT (effect_id) DO NOTHING"
_SECRET_KEYS = frozenset({"password", "sslpassword"})  # the libpq parameters that hold a password
_SCHEMA_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,62}")
_RETRIES = 3  # a batch that lost a deadlock or serialization race is retried this often


def _reserved(schema: str) -> bool:
    """PostgreSQL's own schemas (``pg_*``, ``information_schema``): never openprogram's."""
    folded = schema.lower()
    return folded.startswith("pg_") or folded == "information_schema"


def _parse_url(url: str) -> tuple[dict[str, str], str, list[str]]:
    """libpq's connection parameters for ``url`` (our ``schema=`` taken out), the schema, and the secrets it carries.

    libpq parses the URL (``conninfo_to_dict``): a password may hold any character,
    percent-encoded, and ``#``, ``?`` and ``:`` as they are. One that holds an unencoded
    ``/`` or ``@`` would be read as a host, port or database: refused, never printed.
    """
    from psycopg import Error
    from psycopg.conninfo import conninfo_to_dict

    span = password_span(url)
    secrets: list[str] = []
    if span is not None:
        password = url[span[0] : span[1]]
        secrets += [password, unquote(password)]
        if "@" in url[: span[0]] or "@" in password or "/" in password:
            raise StoreError(
                f"bad PostgreSQL store URL {safe_url(url)!r}: percent-encode a password's or user name's "
                "'@' (%40) and '/' (%2F)"
            )
    # As libpq reads it: the user info ends at the first "@" or "/", the query begins at the next "?".
    rest = url.find("://") + 3
    at, slash = url.find("@", rest), url.find("/", rest)
    host = at + 1 if at >= 0 and (slash < 0 or at < slash) else rest
    question = url.find("?", host)
    base, query = (url, "") if question < 0 else (url[:question], url[question + 1 :])
    schema = DEFAULT_SCHEMA
    kept = []
    for item in query.split("&") if query else ():
        key, _, value = item.partition("=")
        name = unquote(key)
        if name == "schema":
            schema = unquote(value)
            continue
        if name in _SECRET_KEYS and value:
            secrets += [value, unquote(value)]
        kept.append(item)
    stripped = f"{base}?{'&'.join(kept)}" if kept else base
    secrets = sorted(set(filter(None, secrets)), key=len, reverse=True)
    try:
        params = conninfo_to_dict(stripped)
    except Error as exc:
        raise StoreError(f"bad PostgreSQL store URL {safe_url(url)!r}: {_scrubbed(str(exc), secrets)}") from None
    if not _SCHEMA_NAME.fullmatch(schema):
        raise StoreError(f"bad schema name {schema!r} in a PostgreSQL store URL: use letters, digits and _")
    if _reserved(schema):
        raise StoreError(
            f"schema {schema!r} is PostgreSQL's own (pg_*, information_schema): name another in the store URL's schema="
        )
    return {key: str(value) for key, value in params.items()}, schema, secrets


class _Hidden:
    """The URL as given, the password parameters libpq read from it, and every form of them: never shown."""

    __slots__ = ("params", "secrets", "url")

    def __init__(self, url: str, params: dict[str, str], secrets: list[str]) -> None:
        self.url, self.params, self.secrets = url, params, secrets

    def __repr__(self) -> str:
        return "<hidden>"


_MASKED_ANYWHERE = 8  # characters from which a secret is masked wherever it appears


def _scrubbed(text: str, secrets: Sequence[str]) -> str:
    """``text`` without any of ``secrets`` (libpq may quote parts of a bad connection string).

    A short secret is masked only where it stands alone: a password ``p`` masked inside every word would
    leave the message unreadable and say where the password's letters are."""
    for secret in secrets:
        if len(secret) >= _MASKED_ANYWHERE:
            text = text.replace(secret, "***")
        else:
            text = re.sub(rf"(?<![A-Za-z0-9]){re.escape(secret)}(?![A-Za-z0-9])", "***", text)
    # On one line; libpq's lines are sentences without a full stop ("Connection refused\n\tIs the server ...").
    lines = [" ".join(line.split()) for line in text.splitlines() if line.strip()]
    return "".join(
        line + ("" if n == len(lines) - 1 else " " if line[-1] in ".?!:;," else ". ") for n, line in enumerate(lines)
    )


def _dedupe_calls(calls: Sequence[CallRow]) -> list[CallRow]:
    """One row per call id, the one sequential upserts would leave: the first final row, else the first."""
    chosen: dict[str, CallRow] = {}
    for row in calls:
        old = chosen.get(row[0])
        if old is None or (old[7] == "running" and row[7] != "running"):
            chosen[row[0]] = row
    return [chosen[k] for k in sorted(chosen)]


def _dedupe_sessions(sessions: Sequence[SessionRow]) -> list[SessionRow]:
    """One row per session (first agent and created_at, latest updated_at), in key order."""
    merged: dict[str, SessionRow] = {}
    for sid, agent, created, updated in sessions:
        old = merged.get(sid)
        merged[sid] = (sid, agent, created, updated) if old is None else (sid, old[1], old[2], max(old[3], updated))
    return [merged[k] for k in sorted(merged)]


def _dedupe_aliases(aliases: Sequence[AliasRow]) -> list[AliasRow]:
    """The last row per key (later binds replace earlier ones), in key order."""
    last: dict[tuple[str, str], AliasRow] = {}
    for row in aliases:
        last[(row[0], row[1])] = row
    return [last[k] for k in sorted(last)]


_stores: weakref.WeakSet[PostgresStore] = weakref.WeakSet()


def _forget_connections_after_fork() -> None:
    """In a forked child, never touch the parent's connections: the sockets are shared.

    Each inherited socket is pointed at /dev/null before the connection object is
    dropped, so its goodbye message (sent when it is freed) cannot end the
    parent's session; the child connects afresh when it needs to.
    """
    devnull = os.open(os.devnull, os.O_RDWR)
    try:
        for store in list(_stores):
            store._after_fork(devnull)
    finally:
        os.close(devnull)


class PostgresStore(Store):
    """A store in a PostgreSQL database (psycopg 3), shared by any number of processes and hosts."""

    def __init__(self, url: str) -> None:
        try:
            importlib.import_module("psycopg")
        except ImportError:
            raise StoreError(MISSING_DRIVER) from None
        params, self.schema, secrets = _parse_url(url)
        # What holds a password is kept out of every repr: vars(store), a traceback's locals.
        self._params = {key: value for key, value in params.items() if key not in _SECRET_KEYS}
        self._hidden = _Hidden(url, {key: value for key, value in params.items() if key in _SECRET_KEYS}, secrets)
        self.url = safe_url(url)
        self._lock = threading.Lock()  # guards the write connection
        self._read_lock = threading.Lock()  # guards the short-read connection
        self._write_conn: psycopg.Connection[Any] | None = None
        self._read_conn: psycopg.Connection[Any] | None = None
        self._pruned_at = 0.0
        self._running_ids: set[str] = set()  # calls this store wrote as running, final row not yet written
        self._prepared = False
        self._prepare_lock = threading.Lock()
        _stores.add(self)

    def _after_fork(self, devnull: int) -> None:
        for conn in (self._write_conn, self._read_conn):
            if conn is not None and not conn.closed:
                with contextlib.suppress(Exception):
                    os.dup2(devnull, conn.fileno())
        self._write_conn = self._read_conn = None
        self._lock, self._read_lock = threading.Lock(), threading.Lock()
        self._running_ids = set()

    @property
    def connect_url(self) -> str:
        """The URL as given, password included: for child processes only, never to be logged."""
        return self._hidden.url

    def _where(self) -> str:
        params = self._params
        host, port, dbname = params.get("host") or "localhost", params.get("port") or "5432", params.get("dbname")
        return self._scrub(f"{host}:{port}{'/' + dbname if dbname else ''} (schema {self.schema})")

    def _scrub(self, text: str) -> str:
        """``text`` without the URL's password (libpq may quote parts of a bad connection string)."""
        return _scrubbed(text, self._hidden.secrets)

    def _error(self, action: str, exc: BaseException) -> StoreError:
        text = self._scrub(str(exc))[:300] or type(exc).__name__
        return StoreError(f"cannot {action} the PostgreSQL store at {self._where()}: {text}")

    # --- connections -----------------------------------------------------------
    def _connect(self) -> psycopg.Connection[Any]:
        import psycopg
        from psycopg.conninfo import make_conninfo

        given = {**self._params, **self._hidden.params}
        given.setdefault("connect_timeout", str(CONNECT_TIMEOUT))
        given.setdefault("application_name", "openprogram")
        for key, value in (
            ("keepalives", 1),
            ("keepalives_idle", 30),
            ("keepalives_interval", 10),
            ("keepalives_count", 3),
        ):
            given.setdefault(key, str(value))
        try:
            # Parameters as libpq parsed them from the URL: never parsed again from text.
            conn = psycopg.connect(make_conninfo("", **given), autocommit=True)
        except psycopg.Error as exc:
            raise self._error("connect to", exc) from None  # the cause may quote the connection string
        try:
            conn.execute("SELECT set_config('search_path', %s, false)", (f'"{self.schema}"',))
            self._prepare(conn)
        except BaseException as exc:
            conn.close()
            if isinstance(exc, psycopg.Error):
                raise self._error("set up", exc) from exc
            raise
        return conn

    def _prepare(self, conn: psycopg.Connection[Any]) -> None:
        """Create or migrate the schema once per store object (under an advisory lock)."""
        if self._prepared:
            return
        import psycopg
        from psycopg import sql

        with self._prepare_lock:
            if self._prepared:
                return
            lock_key = int.from_bytes(
                hashlib.sha256(f"openprogram.schema:{self.schema}".encode()).digest()[:8], "big", signed=True
            )
            try:
                with conn.transaction():
                    conn.execute("SELECT pg_advisory_xact_lock(%s)", (lock_key,))
                    conn.execute(sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(sql.Identifier(self.schema)))
                    conn.execute("CREATE TABLE IF NOT EXISTS meta (key text PRIMARY KEY, value text NOT NULL)")
                    row = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
                    found = 0 if row is None else int(row[0])
                    if found > SCHEMA_VERSION:
                        raise StoreError(
                            f"the PostgreSQL store at {self._where()} has schema version {found}, newer than "
                            f"this openprogram understands ({SCHEMA_VERSION}); upgrade openprogram"
                        )
                    for version in range(found, SCHEMA_VERSION):
                        for statement in MIGRATIONS[version]:
                            conn.execute(statement)
                    if found < SCHEMA_VERSION:
                        conn.execute(
                            "INSERT INTO meta VALUES ('schema_version', %s) ON CONFLICT (key) DO UPDATE SET value = "
                            "excluded.value",
                            (str(SCHEMA_VERSION),),
                        )
                        logger.info(
                            "openprogram: PostgreSQL store at %s migrated to schema version %d",
                            self._where(),
                            SCHEMA_VERSION,
                        )
            except psycopg.Error as exc:
                raise self._error("set up", exc) from exc
            self._prepared = True

    def _writer(self) -> psycopg.Connection[Any]:
        conn = self._write_conn
        if conn is None or conn.closed:
            conn = self._connect()
            try:
                conn.execute(_STAGE)  # once per connection; temporary tables are per connection
            except Exception as exc:
                conn.close()
                raise self._error("set up", exc) from exc
            self._write_conn = conn
        return conn

    def _drop(self, conn: psycopg.Connection[Any] | None) -> None:
        if conn is not None:
            with contextlib.suppress(Exception):
                conn.close()

    # --- writing ---------------------------------------------------------------
    keeps_messages = True

    def write(self, sessions: Sessions, calls: Calls, aliases: Aliases = (), messages: Messages = ()) -> None:
        import psycopg
        from psycopg import errors

        if not (sessions or calls or aliases or messages):
            return
        # Key order: racing writers of one session's messages take their locks in the same order.
        message_rows = sorted(set(messages))
        session_rows = _dedupe_sessions(sessions)
        call_rows = _dedupe_calls(calls)
        alias_rows = _dedupe_aliases(aliases)
        with self._lock:
            for attempt in range(_RETRIES):
                conn = self._writer()
                try:
                    self._write_batch(conn, session_rows, call_rows, alias_rows, message_rows)
                    return
                except (errors.DeadlockDetected, errors.SerializationFailure) as exc:
                    if attempt == _RETRIES - 1:
                        raise self._error("write", exc) from exc
                except psycopg.Error as exc:
                    if conn.broken or conn.closed or isinstance(exc, psycopg.OperationalError):
                        self._write_conn = None
                        self._drop(conn)
                    raise self._error("write", exc) from exc

    def _write_batch(
        self,
        conn: psycopg.Connection[Any],
        sessions: list[SessionRow],
        calls: list[CallRow],
        aliases: list[AliasRow],
        messages: list[MessageRow],
    ) -> None:
        from psycopg import errors

        # Rows of calls this store wrote as running need an upsert; every other row is new
        # unless another process wrote it too (a re-imported spill file), which a failed COPY reveals.
        running = self._running_ids
        known = [r for r in calls if r[0] in running]
        new = [r for r in calls if r[0] not in running] if known else calls
        with conn.transaction(), conn.cursor() as cur:
            # Lock order: sessions, calls, aliases, each by key, the same in every process.
            if sessions:
                cur.executemany(_UPSERT_SESSION, sessions)
            if messages:
                cur.executemany(_ADD_MESSAGE, messages)
            if known:
                self._merge(cur, known)
            if new:
                try:
                    with conn.transaction(), cur.copy(f"COPY calls ({_COLUMNS}) FROM STDIN") as copy:
                        for row in new:
                            copy.write_row(row)
                except errors.UniqueViolation:
                    self._merge(cur, new)
            if aliases:
                cur.executemany(_UPSERT_ALIAS, aliases)
        for row in calls:
            if row[7] == "running":
                running.add(row[0])
            else:
                running.discard(row[0])

    @staticmethod
    def _merge(cur: psycopg.Cursor[Any], calls: list[CallRow]) -> None:
        """Upsert through the staging table: a running row gives way to a final one, nothing else changes."""
        with cur.copy(f"COPY openprogram_stage ({_COLUMNS}) FROM STDIN") as copy:
            for row in calls:
                copy.write_row(row)
        cur.execute(_MERGE_CALLS)
        cur.execute("TRUNCATE openprogram_stage")  # the fallback may stage the same rows again

    def claim_session(self, session_id: str, agent_id: str, at: float) -> bool:
        with self._statements() as conn:
            cursor = conn.execute(
                "INSERT INTO sessions VALUES (%s, %s, %s, %s) ON CONFLICT (session_id) DO NOTHING",
                (session_id, agent_id, at, at),
            )
            return cursor.rowcount == 1

    def heartbeat(self, owner: str, at: float) -> None:
        with self._statements() as conn:
            conn.execute(
                "INSERT INTO heartbeats VALUES (%s, %s) ON CONFLICT (owner) DO UPDATE SET at = excluded.at",
                (owner, at),
            )
            if at - self._pruned_at > PRUNE_HEARTBEATS_AFTER:
                # One row per writer process ever: drop those long dead so the table stays small.
                conn.execute("DELETE FROM heartbeats WHERE at < %s", (at - PRUNE_HEARTBEATS_AFTER,))
                self._pruned_at = at

    # --- effects (each statement commits on its own: durable when it returns) -------------
    def add_effects(self, rows: Sequence[EffectRow]) -> None:
        with self._statements() as conn:
            if len(rows) == 1:
                conn.execute(_ADD_EFFECT, rows[0])
                return
            with conn.transaction(), conn.cursor() as cur:
                cur.executemany(_ADD_EFFECT, sorted(rows))  # key order: racing writers do not deadlock

    def move_effect(self, effect_id: str, state: str, claimed_by: str | None, changes: dict[str, Any]) -> bool:
        columns, values = effect_changes(changes)
        # Under READ COMMITTED a racing UPDATE waits for the winner's row lock, then re-checks the
        # WHERE clause against the row the winner left: it no longer matches, so one caller wins.
        sql = (
            f"UPDATE effects SET {', '.join(f'{c} = %s' for c in columns)} "
            "WHERE effect_id = %s AND state = %s AND claimed_by IS NOT DISTINCT FROM %s"
        )
        with self._statements() as conn:
            return conn.execute(sql, (*values, effect_id, state, claimed_by)).rowcount == 1

    def drop_effect(self, effect_id: str, state: str) -> bool:
        with self._statements() as conn:
            cursor = conn.execute("DELETE FROM effects WHERE effect_id = %s AND state = %s", (effect_id, state))
            return cursor.rowcount == 1

    def settle_effects(self, outcomes: Sequence[EffectOutcome]) -> None:
        ended = sorted((effect_id, state, output, at) for effect_id, state, output, at in outcomes if state is not None)
        failed = sorted((effect_id,) for effect_id, state, _, _ in outcomes if state is None)
        with self._statements() as conn, conn.transaction(), conn.cursor() as cur:
            if ended:  # in key order, as every batch: racing writers do not deadlock
                cur.executemany(
                    "UPDATE effects SET state = %s, output = %s, ended_at = %s "
                    "WHERE effect_id = %s AND state = 'pending'",
                    [(state, output, at, effect_id) for effect_id, state, output, at in ended],
                )
            if failed:
                cur.executemany("DELETE FROM effects WHERE effect_id = %s AND state = 'pending'", failed)

    def _effect_rows(self, session_id: str) -> list[EffectRow]:
        rows = self._query("SELECT * FROM effects WHERE session_id = %s ORDER BY started_at, effect_id", (session_id,))
        return [tuple(row) for row in rows]

    @contextlib.contextmanager
    def _statements(self) -> Iterator[psycopg.Connection[Any]]:
        """The writer connection, for statements that commit on their own; a failure drops it."""
        import psycopg

        with self._lock:
            conn = self._writer()
            try:
                yield conn
            except psycopg.Error as exc:
                self._write_conn = None
                self._drop(conn)
                raise self._error("write", exc) from exc

    # --- reading ---------------------------------------------------------------
    def _query(self, query: str, params: tuple[Any, ...]) -> list[tuple[Any, ...]]:
        """Run one short read on the shared read connection (reconnecting once if it broke)."""
        import psycopg

        with self._read_lock:
            for attempt in range(2):
                conn = self._read_conn
                fresh = conn is None or conn.closed
                if conn is None or conn.closed:
                    conn = self._read_conn = self._connect()
                try:
                    return conn.execute(query, params).fetchall()
                except psycopg.Error as exc:
                    if conn.broken or conn.closed or isinstance(exc, psycopg.OperationalError):
                        self._read_conn = None
                        self._drop(conn)
                        if attempt == 0 and not fresh:
                            continue  # a stale connection: the server may have restarted
                    raise self._error("read", exc) from exc
        raise AssertionError("unreachable")  # pragma: no cover

    def session_exists(self, session_id: str) -> bool:
        return bool(self._query("SELECT 1 FROM sessions WHERE session_id = %s", (session_id,)))

    def list_sessions(self, limit: int | None = None) -> list[SessionInfo]:
        rows = self._query(
            f"SELECT {_SESSION_COLUMNS} FROM sessions s ORDER BY s.updated_at DESC, s.session_id DESC LIMIT %s",
            (limit,),
        )
        return [session_info(row) for row in rows]

    def get_session(self, session_id: str) -> SessionInfo | None:
        rows = self._query(f"SELECT {_SESSION_COLUMNS} FROM sessions s WHERE s.session_id = %s", (session_id,))
        return session_info(rows[0]) if rows else None

    def _model_call_inputs(self, session_id: str) -> Iterator[tuple[str, str | None]]:
        rows = self._query(
            "SELECT call_id, inputs FROM calls WHERE session_id = %s AND kind = 'llm' ORDER BY started_at",
            (session_id,),
        )
        return ((str(call_id), inputs) for call_id, inputs in rows)

    def messages(self, session_id: str) -> dict[str, str]:
        rows = self._query("SELECT message_id, body FROM messages WHERE session_id = %s", (session_id,))
        return {str(message_id): str(body) for message_id, body in rows}

    def _call_row(self, session_id: str, call_id: str, started_at: float | None) -> CallRow | None:
        rows = self._query(
            f"SELECT {_COLUMNS} FROM calls WHERE call_id = %s AND session_id = %s", (call_id, session_id)
        )
        return tuple(rows[0]) if rows else None

    def resolve_alias(self, namespace: str, key: str) -> str | None:
        rows = self._query("SELECT session_id FROM aliases WHERE namespace = %s AND key = %s", (namespace, key))
        return str(rows[0][0]) if rows else None

    def _heartbeats(self) -> dict[str, float]:
        return {str(owner): float(at) for owner, at in self._query("SELECT owner, at FROM heartbeats", ())}

    def _iter_call_rows(self, session_id: str, captures: bool = True) -> Iterator[CallRow]:
        """Stream through a server-side cursor on a connection of its own (constant memory)."""
        import psycopg

        conn = self._connect()
        try:
            conn.autocommit = False
            with conn.cursor(name="openprogram_calls") as cur:
                cur.itersize = 2000
                cur.execute(
                    f"SELECT {_COLUMNS if captures else _TREE_COLUMNS} FROM calls WHERE session_id = %s "
                    "ORDER BY started_at, call_id",
                    (session_id,),
                )
                yield from cur
            conn.rollback()
        except psycopg.Error as exc:
            raise self._error("read", exc) from exc
        finally:
            conn.close()

    def close(self) -> None:
        with self._lock:
            conn, self._write_conn = self._write_conn, None
            self._drop(conn)
        with self._read_lock:
            conn, self._read_conn = self._read_conn, None
            self._drop(conn)

    # --- re-reading what changed in a running session (the viewer's polls) ------------------
    def _changed_call_rows(
        self, session_id: str, calls: Sequence[tuple[str, float]], since: float
    ) -> Iterator[CallRow]:
        rows = self._query(
            f"SELECT {_TREE_COLUMNS} FROM calls WHERE session_id = %s AND (started_at >= %s OR call_id = ANY(%s))",
            (session_id, since, [call_id for call_id, _ in calls]),
        )
        return iter([tuple(row) for row in rows])


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_connections_after_fork)

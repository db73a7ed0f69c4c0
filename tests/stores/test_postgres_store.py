"""PostgreSQL only: laziness, passwords, the versioned schema, outages (through a TCP proxy)."""

from __future__ import annotations

import io
import logging
import os
import subprocess
import sys
import time

import openprogram
import pytest
from openprogram import _recording
from openprogram._cli import follow_up_lines
from openprogram._cli import main as cli_main
from openprogram.stores import StoreError, describe_store, safe_url
from openprogram.stores import postgres as pg
from store_support import (
    Backends,
    TcpProxy,
    postgres_target,
    proxied_url,
    require_postgres,
    wait_for_flush,
    worker_env,
)

pytestmark = pytest.mark.postgres
PASSWORD = "s3cret-Passw0rd"


def _schema_of(url: str) -> str:
    return url.rsplit("schema=", 1)[1]


def _query(sql: str, *params: object) -> list[tuple[object, ...]]:
    import psycopg

    with psycopg.connect(require_postgres(), autocommit=True) as conn:
        cursor = conn.execute(sql, params)  # type: ignore[arg-type]
        return cursor.fetchall() if cursor.description is not None else []


def _openprogram_warnings(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name == "openprogram" and r.levelno >= logging.WARNING]


def test_nothing_connects_until_used_and_the_url_hides_the_password(backends: Backends) -> None:
    url = f"postgresql://someone:{PASSWORD}@127.0.0.1:1/test?sslpassword={PASSWORD}&connect_timeout=2"
    backends.urls.append(url)
    store = openprogram.open_store(url)  # port 1: nothing listens; construction must not notice
    assert isinstance(store, pg.PostgresStore)
    assert store.connect_url == url
    for text in (store.url, repr(store), str(vars(store).get("url"))):
        assert PASSWORD not in text and "***" in text
    with pytest.raises(StoreError) as caught:
        store.list_sessions()
    assert "127.0.0.1:1" in str(caught.value) and PASSWORD not in str(caught.value)
    with pytest.raises(StoreError, match="bad schema name"):
        pg.PostgresStore("postgresql://x@127.0.0.1/test?schema=no;drop")


def test_schema_created_once_and_versioned(pg_url: str, backends: Backends) -> None:
    store = openprogram.open_store(pg_url)
    assert store.list_sessions() == []
    schema = _schema_of(pg_url)
    assert _query(f'SELECT value FROM "{schema}".meta WHERE key = %s', "schema_version") == [(str(pg.SCHEMA_VERSION),)]
    tables = {r[0] for r in _query("SELECT table_name FROM information_schema.tables WHERE table_schema = %s", schema)}
    assert tables == {"meta", "sessions", "calls", "heartbeats", "aliases", "effects", "messages"}
    # A second store object on the same schema finds it ready and shares the data.
    store.write([("s1", "a", 1.0, 1.0)], [])
    other = pg.PostgresStore(pg_url)
    try:
        assert other.session_exists("s1")
    finally:
        other.close()


def test_a_later_version_migrates_and_a_newer_schema_is_refused(pg_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    first = pg.PostgresStore(pg_url)
    first.write([("s1", "a", 1.0, 1.0)], [])
    first.close()
    schema = _schema_of(pg_url)
    later = (*pg.MIGRATIONS, ("CREATE INDEX calls_by_owner ON calls (owner)",))
    monkeypatch.setattr(pg, "MIGRATIONS", later)
    monkeypatch.setattr(pg, "SCHEMA_VERSION", len(later))
    upgraded = pg.PostgresStore(pg_url)
    try:
        assert upgraded.session_exists("s1")  # data kept across the migration
    finally:
        upgraded.close()
    assert _query(f'SELECT value FROM "{schema}".meta WHERE key = %s', "schema_version") == [(str(len(later)),)]
    assert _query("SELECT 1 FROM pg_indexes WHERE schemaname = %s AND indexname = 'calls_by_owner'", schema)

    monkeypatch.setattr(pg, "MIGRATIONS", later[:1])
    monkeypatch.setattr(pg, "SCHEMA_VERSION", 1)
    older = pg.PostgresStore(pg_url)
    with pytest.raises(StoreError, match="newer than this openprogram understands"):
        older.session_exists("s1")
    older.close()


def test_many_processes_create_the_schema_at_once(pg_url: str) -> None:
    script = (
        "import sys, time, openprogram\n"
        "store = openprogram.open_store(sys.argv[1])\n"
        "while time.time() < float(sys.argv[2]): time.sleep(0.002)\n"
        "store.write([(sys.argv[3], 'a', 1.0, 1.0)], [])\n"
    )
    start = time.time() + 1.0
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", script, pg_url, str(start), f"s{i}"],
            env=worker_env(),
            stderr=subprocess.PIPE,
            text=True,
        )
        for i in range(8)
    ]
    for proc in procs:
        _, err = proc.communicate(timeout=60)
        assert proc.returncode == 0, err
    assert len(openprogram.open_store(pg_url).list_sessions()) == 8


def test_long_dead_heartbeats_are_pruned(pg_url: str) -> None:
    store = pg.PostgresStore(pg_url)
    try:
        now = time.time()
        store.heartbeat("h:1:ancient", now - pg.PRUNE_HEARTBEATS_AFTER - 100)
        store.heartbeat("h:2:recent", now - 100)
        store.heartbeat("h:3:now", now)
        assert set(store._heartbeats()) == {"h:2:recent", "h:3:now"}
    finally:
        store.close()


def test_child_process_joins_the_session_through_connect_url(pg_url: str) -> None:
    script = "import openprogram\nopenprogram.tool(lambda: 'child')()\nassert openprogram.flush()\n"
    with openprogram.session_context(store=pg_url) as h:

        @openprogram.tool
        def spawn() -> int:
            env = openprogram.export_context(worker_env())
            return subprocess.run([sys.executable, "-c", script], env=env, timeout=60, check=False).returncode

        assert spawn() == 0
    calls = openprogram.open_store(pg_url).list_calls(h.session_id)
    by_name = {c.name: c for c in calls}
    assert by_name["<lambda>"].parent_id == by_name["spawn"].call_id
    assert by_name["<lambda>"].output == "child"


# --- outages ---------------------------------------------------------------------------


@pytest.fixture
def proxy() -> object:
    require_postgres()
    p = TcpProxy(postgres_target())
    yield p
    p.stop()


@pytest.fixture
def outage_url(proxy: TcpProxy, backends: Backends) -> str:
    url = proxied_url(require_postgres(), proxy.port, backends.new_schema(), PASSWORD)
    backends.urls.append(url)
    return url


@openprogram.tool
def step(i: int) -> int:
    return i * i


def _assert_one_clear_warning(caplog: pytest.LogCaptureFixture, outages: int = 1) -> None:
    warnings = _openprogram_warnings(caplog)
    failing = [r for r in warnings if "cannot write to store" in r.getMessage()]
    assert len(failing) == outages, [r.getMessage() for r in warnings]
    assert all(r.exc_info is None for r in warnings)  # no traceback per call, nor at all
    for record in warnings:
        assert PASSWORD not in record.getMessage()
    assert "127.0.0.1" in failing[0].getMessage()


def test_database_down_at_start_then_back(proxy: TcpProxy, outage_url: str, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="openprogram")
    with openprogram.session_context(store=outage_url) as h:  # nothing listens on the proxy port yet
        results = [step(i) for i in range(50)]
    assert results == [i * i for i in range(50)]  # the agent ran regardless
    assert not openprogram.flush()  # not durable, and flush says so
    proxy.start()
    assert wait_for_flush()
    calls = openprogram.open_store(outage_url).list_calls(h.session_id)
    assert [c.kind for c in calls] == ["turn"] + ["tool"] * 50
    assert [c.output for c in calls[1:]] == results
    assert all(c.parent_id == calls[0].call_id and c.status == "ok" for c in calls[1:])
    _assert_one_clear_warning(caplog)
    assert any("writable again" in r.getMessage() for r in caplog.records)


def test_database_goes_away_mid_run(proxy: TcpProxy, outage_url: str, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="openprogram")
    proxy.start()
    store = openprogram.open_store(outage_url)
    with openprogram.session_context(store=outage_url) as h:
        for i in range(20):
            step(i)
        assert openprogram.flush()
        assert len(store.list_calls(h.session_id)) == 21
        proxy.stop()  # connections cut mid-run, as a server restart or partition would
        for i in range(20, 60):
            step(i)
        assert not openprogram.flush()
        with pytest.raises(StoreError):
            store.list_sessions()  # a direct read does report the outage
        proxy.start()
        assert wait_for_flush()
        for i in range(60, 70):
            step(i)
    assert openprogram.flush()
    calls = store.list_calls(h.session_id)
    assert [c.output for c in calls[1:]] == [i * i for i in range(70)]
    assert calls[0].status == "ok" and calls[0].ended_at is not None
    assert all(c.parent_id == calls[0].call_id and c.status == "ok" for c in calls[1:])
    _assert_one_clear_warning(caplog)


def test_past_the_bound_records_spill_to_a_file_that_imports(
    proxy: TcpProxy, outage_url: str, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    caplog.set_level(logging.INFO, logger="openprogram")
    monkeypatch.setattr(_recording.writer, "MAX_PENDING_ROWS", 25)
    with openprogram.session_context(store=outage_url) as h:
        for i in range(100):
            step(i)
            if i % 10 == 0:
                openprogram.flush()  # several writer cycles during the outage
    assert not openprogram.flush()
    spill_dir = _recording.spill_directory()
    files = sorted(spill_dir.glob("*.jsonl"))
    assert len(files) == 1
    text = files[0].read_text()
    assert PASSWORD not in text and "***" in text
    assert oct(files[0].stat().st_mode & 0o777) == "0o600"
    spilled = text.count('{"call":')
    assert spilled >= 26

    proxy.start()
    assert wait_for_flush()
    store = openprogram.open_store(outage_url)
    before = len(store.list_calls(h.session_id))
    assert before < 101  # the spilled records are not in the store yet...
    out = io.StringIO()
    assert cli_main(["--store", outage_url, "import", str(files[0])], out=out) == 0
    assert PASSWORD not in out.getvalue()
    assert cli_main(["--store", outage_url, "import", str(files[0])], out=io.StringIO()) == 0  # idempotent
    calls = store.list_calls(h.session_id)
    assert len(calls) == 101 and len({c.call_id for c in calls}) == 101  # ...and now nothing is missing
    assert [c.output for c in calls[1:]] == [i * i for i in range(100)]
    assert {c.status for c in calls} == {"ok"}
    spill_warnings = [r for r in _openprogram_warnings(caplog) if "are being spilled" in r.getMessage()]
    assert len(spill_warnings) == 1 and str(files[0]) in spill_warnings[0].getMessage()
    _assert_one_clear_warning(caplog)


def test_a_store_whose_whole_backlog_was_spilled_recovers(
    proxy: TcpProxy, outage_url: str, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Once everything went to the spill file, the writer must still notice the store came back."""
    caplog.set_level(logging.INFO, logger="openprogram")
    monkeypatch.setattr(_recording.writer, "MAX_PENDING_ROWS", 10)
    with openprogram.session_context(store=outage_url) as h:
        for i in range(30):
            step(i)
    assert not openprogram.flush()
    [spill] = _recording.spill_directory().glob("*.jsonl")
    assert spill.read_text().count('{"call":') == 31  # the whole backlog, nothing left in memory
    proxy.start()
    assert wait_for_flush(30)  # flush reports the store healthy again
    assert any("writable again" in r.getMessage() for r in caplog.records)
    assert cli_main(["--store", outage_url, "import", str(spill)], out=io.StringIO()) == 0
    assert len(openprogram.open_store(outage_url).list_calls(h.session_id)) == 31


@pytest.mark.parametrize(
    "url",
    [
        f"postgresql://someone:{PASSWORD}@127.0.0.1:notaport/test",
        f"postgresql://someone:{PASSWORD} x@127.0.0.1:1/test",  # libpq quotes the malformed part
        f"postgresql://someone@127.0.0.1:1/test?password={PASSWORD}&nonsense=1",
        f"postgresql://someone:{PASSWORD}@[::1/test",
    ],
)
def test_errors_about_bad_urls_never_show_the_password(url: str, backends: Backends) -> None:
    backends.urls.append("memory://unused")
    with pytest.raises(StoreError) as caught:
        store = pg.PostgresStore(url)
        try:
            assert PASSWORD not in store.url and PASSWORD not in repr(store)
            store.list_sessions()
        finally:
            store.close()
    assert PASSWORD not in str(caught.value)
    assert caught.value.__cause__ is None or PASSWORD not in str(caught.value.__cause__)


def test_a_forked_child_never_uses_the_parents_connections(pg_url: str, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="openprogram")
    store = openprogram.open_store(pg_url)
    assert isinstance(store, pg.PostgresStore)
    store.write([("parent", "a", 1.0, 1.0)], [])
    store.list_sessions()
    writer, reader = store._write_conn, store._read_conn
    assert writer is not None and reader is not None
    pid = os.fork()
    if pid == 0:  # the child: write and read through the same store object, then exit
        code = 1
        try:
            store.write([("child", "a", 2.0, 2.0)], [])
            code = 0 if len(store.list_sessions()) == 2 and store._write_conn is not writer else 3
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    # The parent's own connections are untouched and still work: no reconnect, no warning.
    store.write([("parent", "a", 1.0, 5.0)], [])
    assert store._write_conn is writer and store._read_conn is reader
    assert [s.session_id for s in store.list_sessions()] == ["parent", "child"]
    assert store._read_conn is reader
    assert not _openprogram_warnings(caplog)


def test_tables_go_to_the_openprogram_schema_by_default(backends: Backends) -> None:
    base = require_postgres()
    if "schema=" in base:
        pytest.skip("OPENPROGRAM_TEST_POSTGRES names a schema; this test is about the default")
    backends.urls.append(base)
    existed = bool(_query("SELECT 1 FROM pg_namespace WHERE nspname = 'openprogram'"))
    store = openprogram.open_store(base)
    session_id = f"default-schema-{os.urandom(6).hex()}"
    try:
        store.write([(session_id, "a", 1.0, 1.0)], [])
        assert _query("SELECT agent_id FROM openprogram.sessions WHERE session_id = %s", session_id) == [("a",)]
        assert "(schema openprogram)" in store._where()  # type: ignore[attr-defined]
    finally:
        store.close()
        if existed:  # somebody's schema: take back only our row
            _query("DELETE FROM openprogram.sessions WHERE session_id = %s", session_id)
        else:  # ours: leave the database as it was
            _query("DROP SCHEMA openprogram CASCADE")


def test_the_demos_follow_up_commands_never_print_a_password() -> None:
    """The demo's "see it" lines for a PostgreSQL store (constructed only: nothing connects)."""
    store = openprogram.open_store("postgresql://agent:pa%20ss@db.internal:5432/app?sslmode=require")
    lines = follow_up_lines(store, "s1")
    assert all("pa%20ss" not in line and "pa ss" not in line for line in lines), lines
    shown = "'postgresql://agent:***@db.internal:5432/app?sslmode=require'"
    assert lines[0] == f"see it:      openprogram --store {shown} show s1"
    assert lines[-1].startswith("note:") and "OPENPROGRAM_STORE" in lines[-1]


# --- passwords as libpq reads URLs, and reserved schemas --------------------------------------

# Valid for libpq: "#", "?" and ":" as they are in the user info, "/" and "@" percent-encoded; any of
# them percent-encoded in ?password=.
ODD_PASSWORD = "p#q?r/s@t:u%v"


@pytest.fixture
def odd_role(backends: Backends) -> object:
    """A login role whose password holds URL delimiters (the server trusts it: the URL must name the role)."""
    require_postgres()
    role = f"op_role_{os.urandom(4).hex()}"
    database = _query("SELECT current_database()")[0][0]
    _query(f"CREATE ROLE {role} LOGIN PASSWORD '{ODD_PASSWORD.replace('%', '%%')}'")
    _query(f'GRANT CREATE ON DATABASE "{database}" TO {role}')
    yield role
    backends.cleanup()  # its schemas first: the role owns them
    backends.schemas.clear()
    _query(f'REVOKE CREATE ON DATABASE "{database}" FROM {role}')
    _query(f"DROP ROLE {role}")


def _odd_urls(role: str, schema: str) -> list[str]:
    from urllib.parse import quote, urlsplit

    base = urlsplit(require_postgres())
    where = f"{base.hostname}:{base.port or 5432}{base.path}"
    return [
        f"postgresql://{role}:{ODD_PASSWORD.replace('%', '%25').replace('/', '%2F').replace('@', '%40')}"
        f"@{where}?schema={schema}",
        f"postgresql://{role}:{quote(ODD_PASSWORD, safe='')}@{where}?schema={schema}",
        f"postgresql://{role}@{where}?password={quote(ODD_PASSWORD, safe='')}&schema={schema}",
    ]


def _secret_forms() -> list[str]:
    from urllib.parse import quote

    return [ODD_PASSWORD, quote(ODD_PASSWORD, safe=""), "p#q", "r/s", "s@t", "s%40t", "t:u"]


def test_a_password_with_url_delimiters_connects_and_is_never_shown(odd_role: str, backends: Backends) -> None:
    schema = backends.new_schema()
    for url in _odd_urls(odd_role, schema):
        backends.urls.append(url)
        store = openprogram.open_store(url)
        assert isinstance(store, pg.PostgresStore) and store.schema == schema
        store.write([("s1", "a", 1.0, 1.0)], [])
        assert store._query("SELECT current_user", ()) == [(odd_role,)]
        assert [s.session_id for s in store.list_sessions()] == ["s1"]
        for text in (store.url, repr(store), describe_store(store), store._where(), repr(vars(store))):
            assert not any(secret in text for secret in _secret_forms()), text
        host, port = postgres_target()
        for unreachable in (f"{host}:1", "nosuchhost.invalid"):  # nothing listens on port 1; no such host
            failing = openprogram.open_store(url.replace(f"{host}:{port}", unreachable, 1))
            backends.urls.append(url.replace(f"{host}:{port}", unreachable, 1))
            with pytest.raises(StoreError) as caught:
                failing.list_sessions()
            assert unreachable in str(caught.value)
            assert not any(secret in str(caught.value) for secret in _secret_forms()), str(caught.value)


@pytest.mark.parametrize(
    "url",
    [
        "postgresql://someone:p#q?r/s@t@127.0.0.1:5432/test",  # "/" and "@" unencoded: libpq reads a host "someone"
        "postgresql://someone:p/q@127.0.0.1:5432/test",
        "postgresql://some@one:pq@127.0.0.1:5432/test",
    ],
)
def test_a_password_libpq_would_split_is_refused_without_showing_it(url: str) -> None:
    with pytest.raises(StoreError, match="percent-encode") as caught:
        openprogram.open_store(url)
    assert not any(part in str(caught.value) for part in ("p#q", "r/s", "s@t", "p/q", "pq")), str(caught.value)


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("postgresql://u:pa#ss@h/db", "postgresql://u:***@h/db"),
        ("postgresql://u:pa?ss@h:5432/db?sslmode=require", "postgresql://u:***@h:5432/db?sslmode=require"),
        ("postgresql://u:pa/ss@h/db", "postgresql://u:***@h/db"),
        ("postgresql://u:pa:ss@h/db", "postgresql://u:***@h/db"),
        ("postgresql://u@h/db?password=pa#ss&sslmode=require", "postgresql://u@h/db?password=***&sslmode=require"),
        ("postgresql://u@h/db?pass%77ord=pa%26ss", "postgresql://u@h/db?pass%77ord=***"),
        ("postgresql://h:5432/db?application_name=a@b", "postgresql://h:5432/db?application_name=a@b"),
    ],
)
def test_urls_are_masked_as_libpq_reads_them(url: str, shown: str) -> None:
    assert safe_url(url) == shown


@pytest.mark.parametrize("schema", ["information_schema", "pg_catalog", "pg_toast", "pg_temp_3", "PG_Catalog"])
def test_postgresqls_own_schemas_are_refused(schema: str) -> None:
    with pytest.raises(StoreError, match="PostgreSQL's own"):
        openprogram.open_store(f"postgresql://someone@127.0.0.1:1/test?schema={schema}")

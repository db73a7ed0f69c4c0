"""Undo across processes: recorded in one, undone in another and by the CLI, two undos racing, SIGKILL, migration."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import openprogram
import pytest

from tests.stores.store_support import Backends, require_postgres

SHOP = '''
"""A program's tools and their compensations: every order and cancellation is logged to $SHOP_LOG."""
import os
import time

import openprogram


def log(line):
    with open(os.environ["SHOP_LOG"], "a") as out:
        out.write(line + "\\n")


@openprogram.tool
def order(item: str) -> str:
    log(f"order {item} {openprogram.get_current_session().session_id}")
    if os.environ.get("SHOP_HANG") == item:
        log("hanging")
        time.sleep(600)
    return f"order-{item}"


@order.undo
def cancel(effect):
    time.sleep(float(os.environ.get("SHOP_UNDO_DELAY", "0")))
    if os.environ.get("SHOP_HANG") == "cancel " + effect.inputs["item"]:
        log(f"cancelling {effect.inputs['item']} {effect.idempotency_key}")
        time.sleep(600)
    log(f"cancel {effect.inputs['item']} {effect.state} {effect.idempotency_key}")
'''

RECORD = """
import sys
import openprogram
import shop

with openprogram.session_context(store=sys.argv[1]) as h:
    for item in sys.argv[2:]:
        shop.order(item)
print(h.session_id, h.turn_id, flush=True)
"""

RACE = """
import sys, time
import openprogram
import shop

url, session_id, start_at = sys.argv[1], sys.argv[2], float(sys.argv[3])
while time.time() < start_at:
    time.sleep(0.002)
try:
    print("undid", len(openprogram.undo(session_id, store=url)), flush=True)
except openprogram.UndoError as exc:
    print("stopped", exc, flush=True)
"""


class Program:
    """The shop program in a directory of its own, run in fresh interpreters."""

    def __init__(self, tmp_path: Path) -> None:
        self.directory = tmp_path / "program"
        self.directory.mkdir()
        (self.directory / "shop.py").write_text(SHOP)
        self.log = tmp_path / "shop.log"
        self.log.touch()

    def env(self, **extra: str) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("OPENPROGRAM_") or k == "OPENPROGRAM_HOME"}
        env.update(PYTHONPATH=str(self.directory), SHOP_LOG=str(self.log), **extra)
        return env

    def python(self, code: str, *args: str, stdin: str = "", **extra: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-c", textwrap.dedent(code), *args],
            env=self.env(**extra),
            cwd=self.directory,
            input=stdin,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )

    def cli(self, *args: str, stdin: str = "", **extra: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "openprogram", *args],
            env=self.env(**extra),
            cwd=self.directory,
            input=stdin,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )

    def record(self, url: str, *items: str) -> tuple[str, str]:
        done = self.python(RECORD, url, *items)
        assert done.returncode == 0, done.stderr
        session_id, turn_id = done.stdout.split()
        return session_id, turn_id

    def lines(self) -> list[str]:
        return self.log.read_text().splitlines()

    def cancelled(self) -> list[str]:
        return [line.split()[1] for line in self.lines() if line.startswith("cancel ")]


@pytest.fixture
def program(tmp_path: Path) -> Program:
    return Program(tmp_path)


def test_effects_recorded_in_one_process_are_undone_in_another(shared_url: str, program: Program) -> None:
    session_id, _ = program.record(shared_url, "a", "b")
    undo = program.python(
        "import sys, openprogram, shop; print(len(openprogram.undo(sys.argv[1], store=sys.argv[2])))",
        session_id,
        shared_url,
    )
    assert undo.returncode == 0, undo.stderr
    assert undo.stdout.strip() == "2"
    assert program.cancelled() == ["b", "a"]
    keys = [line.split()[3] for line in program.lines() if line.startswith("cancel ")]
    planned_again = openprogram.undo(session_id, dry_run=True, store=shared_url)
    assert len(planned_again) == 0 and len(set(keys)) == 2


def test_the_cli_prints_the_plan_asks_and_undoes(shared_url: str, program: Program) -> None:
    session_id, turn_id = program.record(shared_url, "a", "b")

    dry = program.cli("--store", shared_url, "undo", session_id, "--dry-run", "--import", "shop")
    assert dry.returncode == 0, dry.stderr
    assert f"undo plan for the whole of session {session_id}: 2 effect(s), newest first" in dry.stdout
    plan_lines = [line for line in dry.stdout.splitlines() if line.startswith("  ")]
    assert plan_lines[0].startswith("  1. tool order") and '"item": "b"' in plan_lines[0]
    assert '"order-b"' in plan_lines[0]
    assert plan_lines[1].startswith("  2. tool order") and '"item": "a"' in plan_lines[1]

    declined = program.cli("--store", shared_url, "undo", session_id, "--import", "shop", stdin="n\n")
    assert declined.returncode == 1 and "Undo these 2 effects? [y/N]" in declined.stdout
    assert "nothing was undone" in declined.stdout and program.cancelled() == []

    missing = program.cli("--store", shared_url, "undo", session_id, "--yes")
    assert missing.returncode == 1 and "no compensation declared" in missing.stdout
    assert "import the module that declares it" in missing.stderr and program.cancelled() == []

    confirmed = program.cli(
        "--store", shared_url, "undo", session_id, "--turn", turn_id, "--import", "shop", stdin="y\n"
    )
    assert confirmed.returncode == 0, confirmed.stderr
    assert confirmed.stdout.index("1. tool order") < confirmed.stdout.index("Undo these 2 effects?")
    assert "undid 2 effect(s) in turn" in confirmed.stdout and program.cancelled() == ["b", "a"]

    again = program.cli("--store", shared_url, "undo", session_id, "--import", "shop", "--yes")
    assert again.returncode == 0 and "nothing to undo" in again.stdout and program.cancelled() == ["b", "a"]
    shown = program.cli("--store", shared_url, "show", session_id)
    assert shown.returncode == 0, shown.stderr
    assert sum(1 for line in shown.stdout.splitlines() if "tool order [ok]" in line and "(undone)" in line) == 2
    assert sum(1 for line in shown.stdout.splitlines() if "undo order [ok]" in line) == 2


def test_two_processes_racing_to_undo_compensate_each_effect_once(shared_url: str, program: Program) -> None:
    items = [f"i{n}" for n in range(8)]
    session_id, _ = program.record(shared_url, *items)
    start_at = str(time.time() + 2.0)
    command = [sys.executable, "-c", textwrap.dedent(RACE), shared_url, session_id, start_at]
    env = program.env(SHOP_UNDO_DELAY="0.05")
    pipes = {"stdout": subprocess.PIPE, "stderr": subprocess.PIPE}
    racers = [subprocess.Popen(command, env=env, cwd=program.directory, text=True, **pipes) for _ in range(2)]
    outputs = [racer.communicate(timeout=120) for racer in racers]
    assert all(racer.returncode == 0 for racer in racers), outputs

    assert sorted(program.cancelled()) == sorted(items), program.lines()  # each exactly once
    assert program.cancelled() == list(reversed(items))  # and newest first, whoever did which
    said = sorted(out.split()[0] for out, _ in outputs)
    assert said in (["stopped", "undid"], ["undid", "undid"]), outputs
    assert all("another process" in out for out, _ in outputs if out.startswith("stopped"))
    assert len(openprogram.undo(session_id, dry_run=True, store=shared_url)) == 0


@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs SIGKILL")
def test_sigkill_during_an_undoable_tool_leaves_an_effect_of_unknown_outcome(shared_url: str, program: Program) -> None:
    child = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(RECORD), shared_url, "a", "b"],
        env=program.env(SHOP_HANG="b"),
        cwd=program.directory,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 60
    while "hanging" not in program.lines():
        assert child.poll() is None and time.monotonic() < deadline, child.communicate()
        time.sleep(0.02)
    time.sleep(0.5)  # a long tool: the writer has recorded its call as running
    child.send_signal(signal.SIGKILL)
    child.wait(30)  # reaped: its pid no longer answers
    store = openprogram.open_store(shared_url)
    session_id = program.lines()[0].split()[2]

    plan = openprogram.undo(session_id, dry_run=True, store=store)
    assert [(e.inputs["item"], e.state) for e in plan] == [("b", "unknown"), ("a", "applied")]
    shown = program.cli("--store", shared_url, "show", session_id)
    assert any("tool order [interrupted]" in line and "(outcome unknown)" in line for line in shown.stdout.splitlines())
    dry = program.cli("--store", shared_url, "undo", session_id, "--dry-run")
    assert "OUTCOME UNKNOWN: it was interrupted, or its process died, mid-call" in dry.stdout

    stopped = program.cli("--store", shared_url, "undo", session_id, "--import", "shop", "--yes")
    assert stopped.returncode == 1 and "is unknown" in stopped.stderr and "--unknown undo" in stopped.stderr
    assert program.cancelled() == []

    undone = program.cli("--store", shared_url, "undo", session_id, "--import", "shop", "--yes", "--unknown", "undo")
    assert undone.returncode == 0, undone.stderr
    assert [line.split()[:3] for line in program.lines() if line.startswith("cancel")] == [
        ["cancel", "b", "unknown"],
        ["cancel", "a", "applied"],
    ]


@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs SIGKILL")
def test_an_undo_killed_mid_compensation_is_taken_over_with_the_same_idempotency_key(
    shared_url: str, program: Program
) -> None:
    session_id, _ = program.record(shared_url, "a", "b")
    undo = [sys.executable, "-m", "openprogram", "--store", shared_url, "undo", session_id, "--import", "shop", "--yes"]
    killed = subprocess.Popen(
        undo,
        env=program.env(SHOP_HANG="cancel a"),
        cwd=program.directory,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 60
    while not any(line.startswith("cancelling a") for line in program.lines()):
        assert killed.poll() is None and time.monotonic() < deadline, killed.communicate()
        time.sleep(0.02)
    killed.send_signal(signal.SIGKILL)
    killed.wait(30)
    (interrupted,) = openprogram.undo(session_id, dry_run=True, store=shared_url)
    assert interrupted.inputs == {"item": "a"} and interrupted.state == "interrupted"
    shown = program.cli("--store", shared_url, "show", session_id)
    assert any("tool order [ok]" in line and "(undo interrupted)" in line for line in shown.stdout.splitlines())

    resumed = program.cli("--store", shared_url, "undo", session_id, "--import", "shop", "--yes")

    assert resumed.returncode == 0, resumed.stderr
    lines = program.lines()
    first_try = next(line for line in lines if line.startswith("cancelling a")).split()[2]
    assert [line.split()[:2] for line in lines if line.startswith("cancel ")] == [["cancel", "b"], ["cancel", "a"]]
    assert next(line for line in lines if line.startswith("cancel a")).split()[3] == first_try
    assert len(openprogram.undo(session_id, dry_run=True, store=shared_url)) == 0


# The schema of openprogram's SQLite stores before effects were journaled (version 2).
_SCHEMA_2 = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
INSERT INTO meta VALUES ('schema_version', '2');
CREATE TABLE sessions (session_id TEXT PRIMARY KEY, agent_id TEXT NOT NULL, created_at REAL NOT NULL,
                       updated_at REAL NOT NULL);
CREATE INDEX sessions_by_update ON sessions (updated_at);
CREATE TABLE calls (
    call_id TEXT NOT NULL, session_id TEXT NOT NULL, turn_id TEXT NOT NULL, parent_id TEXT, kind TEXT NOT NULL,
    name TEXT NOT NULL, framework TEXT, status TEXT NOT NULL, inputs TEXT, output TEXT, error TEXT, attributes TEXT,
    started_at REAL NOT NULL, ended_at REAL, owner TEXT NOT NULL, PRIMARY KEY (session_id, started_at, call_id)
) WITHOUT ROWID;
CREATE TABLE heartbeats (owner TEXT PRIMARY KEY, at REAL NOT NULL);
CREATE TABLE aliases (namespace TEXT NOT NULL, key TEXT NOT NULL, session_id TEXT NOT NULL, bound_at REAL NOT NULL,
                      PRIMARY KEY (namespace, key));
INSERT INTO sessions VALUES ('old', 'main', 1.0, 2.0);
INSERT INTO calls VALUES ('c1', 'old', 't1', NULL, 'turn', 'main', NULL, 'ok', NULL, NULL, NULL, NULL, 1.0, 2.0, 'h');
INSERT INTO calls VALUES ('c2', 'old', 't1', 'c1', 'tool', 'f', NULL, 'ok', '{"x":1}', '2', NULL, NULL, 1.5, 1.6, 'h');
"""


def _undo_one_order_in(url: str, session_id: str) -> list[str]:
    cancelled: list[str] = []

    @openprogram.tool
    def order(item: str) -> str:
        return f"order-{item}"

    order.undo(lambda effect: cancelled.append(effect.output))
    with openprogram.session_context(session_id, store=url):
        order("new")
    openprogram.undo(session_id, store=url)
    return cancelled


def test_a_schema_2_sqlite_store_gains_the_journal_in_place(tmp_path: Path) -> None:
    from openprogram.stores.sqlite import SCHEMA_VERSION

    path = tmp_path / "v2.db"
    conn = sqlite3.connect(path)
    conn.executescript(_SCHEMA_2)
    conn.close()
    url = f"sqlite:///{path}"
    store = openprogram.open_store(url)

    assert [(c.call_id, c.output) for c in store.list_calls("old")] == [("c1", None), ("c2", 2)]
    conn = sqlite3.connect(path)
    assert SCHEMA_VERSION == 4
    assert conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone() == ("4",)
    assert conn.execute("SELECT count(*) FROM effects").fetchone() == (0,)
    conn.close()
    assert _undo_one_order_in(url, "old") == ["order-new"]
    assert [c.call_id for c in store.list_calls("old")][:2] == ["c1", "c2"]


@pytest.mark.postgres
def test_a_version_1_postgres_schema_gains_the_journal_in_place(stores: Backends) -> None:
    import psycopg
    from openprogram.stores import postgres

    base = require_postgres()
    url = stores.url("postgresql")
    schema = url.rpartition("schema=")[2]
    with psycopg.connect(base, autocommit=True) as conn:
        conn.execute(f'CREATE SCHEMA "{schema}"')
        conn.execute(f'SET search_path TO "{schema}"')
        for statement in postgres.MIGRATIONS[0]:
            conn.execute(statement)
        conn.execute("CREATE TABLE meta (key text PRIMARY KEY, value text NOT NULL)")
        conn.execute("INSERT INTO meta VALUES ('schema_version', '1')")
        conn.execute("INSERT INTO sessions VALUES ('old', 'main', 1.0, 2.0)")
        conn.execute(
            "INSERT INTO calls VALUES ('c1', 'old', 't1', NULL, 'turn', 'main', NULL, 'ok', NULL, NULL, "
            "NULL, NULL, 1.0, 2.0, 'h')"
        )

    store = openprogram.open_store(url)
    assert [c.call_id for c in store.list_calls("old")] == ["c1"]
    with psycopg.connect(base, autocommit=True) as conn:
        version = conn.execute(f'SELECT value FROM "{schema}".meta WHERE key = %s', ("schema_version",)).fetchone()
        tables = {
            r[0]
            for r in conn.execute("SELECT table_name FROM information_schema.tables WHERE table_schema = %s", (schema,))
        }
    assert version == (str(postgres.SCHEMA_VERSION),) and postgres.SCHEMA_VERSION == 4
    assert {"effects", "messages"} <= tables
    assert _undo_one_order_in(url, "old") == ["order-new"]


def test_the_undo_calls_say_what_they_undid(shared_url: str, program: Program) -> None:
    session_id, turn_id = program.record(shared_url, "a")
    assert program.cli("--store", shared_url, "undo", session_id, "--import", "shop", "--yes").returncode == 0
    shown = program.cli("--store", shared_url, "show", session_id, "--json")
    recorded = json.loads(shown.stdout)["calls"]
    tool = next(c for c in recorded if c["kind"] == "tool")
    undo_call = next(c for c in recorded if c["kind"] == "undo")
    assert undo_call["attributes"]["undoes"] == tool["call_id"] and undo_call["attributes"]["turn"] == turn_id
    assert undo_call["inputs"]["idempotency_key"].startswith("openprogram-undo-")
    assert tool["attributes"]["effect"] == "undone" and tool["attributes"]["undone_by"] == [undo_call["call_id"]]

"""What ``openprogram`` says when it cannot reach a PostgreSQL store (needs psycopg: the postgres session)."""

from __future__ import annotations

import subprocess
import sys


def cli(*args: str) -> tuple[int, str, str]:
    """``openprogram ARGS`` in a child process: (exit status, stdout, stderr)."""
    done = subprocess.run(
        [sys.executable, "-m", "openprogram", *args], capture_output=True, text=True, timeout=120, check=False
    )
    return done.returncode, done.stdout, done.stderr


def test_the_postgresql_connection_error_reads_as_sentences() -> None:
    code, _, err = cli("--store", "postgresql://agent:pw@127.0.0.1:1/app", "sessions")
    assert code == 1
    assert "Connection refused. Is the server running" in err, err
    assert "agent:pw" not in err


def test_a_one_letter_password_is_masked_where_it_stands_not_inside_every_word() -> None:
    code, _, err = cli("--store", "postgresql://agent:p@127.0.0.1:1/app", "sessions")
    assert code == 1
    assert "accepting TCP/IP connections" in err and "schema openprogram" in err, err
    assert ":p@" not in err

"""``sessions`` and ``show`` answer whatever a shared store holds: rows another process wrote with parents that loop,
terminal control sequences, lone surrogates, times no clock gives. Recorded text is escaped; JSON stays JSON."""

from __future__ import annotations

import json
import sqlite3
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import openprogram
import pytest

from .conftest import openprogram_command, python_env

T0 = 1_765_000_000.0
# What a terminal would act on: clear the screen, write the clipboard (OSC 52), rewrite a line, reverse the text.
RAW = ("\x1b", "\x07", "\r", "\u202e", "\x00")


@openprogram.tool
def step(i: int) -> int:
    return i


def shared_store(tmp_path: Path, *rows: dict[str, Any]) -> str:
    """A SQLite store with one recorded session, and ``rows`` added to it by another writer."""
    url = f"sqlite:///{tmp_path / 'shared.db'}"
    with openprogram.session_context("shared", store=url):
        step(1)
    assert openprogram.flush()
    with sqlite3.connect(tmp_path / "shared.db") as db:
        for changes in rows:
            row: dict[str, Any] = {
                "call_id": "x",
                "session_id": "shared",
                "turn_id": "other",
                "parent_id": None,
                "kind": "tool",
                "name": "x",
                "framework": None,
                "status": "ok",
                "inputs": None,
                "output": None,
                "error": None,
                "attributes": None,
                "started_at": T0,
                "ended_at": T0 + 1,
                "owner": "elsewhere:1:abc",
                **changes,
            }
            db.execute(f"INSERT INTO calls VALUES ({', '.join('?' * len(row))})", list(row.values()))
    return url


def run(url: str, *args: str) -> subprocess.CompletedProcess[str]:
    """The command in a process of its own, writing to a real (UTF-8) stdout; bounded in time."""
    return subprocess.run(
        [*openprogram_command(), "--store", url, *args],
        env=python_env(PYTHONIOENCODING="utf-8"),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def strict_json(text: str) -> Any:
    def refuse(name: str) -> Any:
        raise ValueError(f"{name} is not JSON")

    return json.loads(text, parse_constant=refuse)


def test_show_draws_each_call_of_a_parent_loop_once_and_ends(tmp_path: Path) -> None:
    usage = json.dumps({"model": "m", "usage": {"input_tokens": 3, "output_tokens": 1}})
    url = shared_store(
        tmp_path,
        {"call_id": "own", "parent_id": "own", "kind": "llm", "name": "own-parent", "attributes": usage},
        {"call_id": "a", "parent_id": "b", "kind": "llm", "name": "loop-a", "attributes": usage},
        {"call_id": "b", "parent_id": "a", "name": "loop-b", "started_at": T0 + 1},
        {"call_id": "kid", "parent_id": "b", "name": "below-the-loop", "started_at": T0 + 2},
    )

    done = run(url, "show", "shared")

    assert done.returncode == 0, done.stderr
    for name in ("own-parent", "loop-a", "loop-b", "below-the-loop"):
        assert sum(f" {name} " in line for line in done.stdout.splitlines()) == 1, done.stdout


def test_show_and_sessions_escape_terminal_control_sequences_in_recorded_text(tmp_path: Path) -> None:
    url = shared_store(
        tmp_path,
        {
            "call_id": "evil",
            "kind": "tool\x1b[2J",
            "name": "\x1b]52;c;c2VjcmV0\x07ok\rapproved\u202e",
            "framework": "fw\x00",
            "status": "error",
            "error": "Boom: \x1b[2J cleared",
            "started_at": T0 - 10,  # the session's root in the listing
        },
    )

    shown, listed = run(url, "show", "shared"), run(url, "sessions")

    for done in (shown, listed):
        assert done.returncode == 0, done.stderr
        assert not any(raw in done.stdout for raw in RAW), done.stdout
    assert "\\x1b]52;c;c2VjcmV0\\x07ok\\x0dapproved\\u202e" in shown.stdout
    assert "fw\\x00" in shown.stdout and "\\x1b[2J cleared" in shown.stdout
    assert "tool\\x1b[2J" in listed.stdout


TIMES: dict[str, dict[str, Any]] = {
    "past every clock": {"started_at": 1e300, "ended_at": None},
    "infinite": {"started_at": T0, "ended_at": float("inf")},
    "before 1970": {"started_at": -1e18, "ended_at": -1e18 + 1},
}


@pytest.mark.parametrize("times", TIMES.values(), ids=TIMES.keys())
def test_times_no_clock_gives_are_drawn_and_json_output_stays_json(times: dict[str, Any], tmp_path: Path) -> None:
    odd_text = {"name": "bell\x07", "output": json.dumps({"text": "\ud800\x1b[2J"}), "error": "e\x00"}
    url = shared_store(tmp_path, {"call_id": "odd", "name": "odd-times", **times}, {"call_id": "text", **odd_text})

    shown = run(url, "show", "shared")
    assert shown.returncode == 0, shown.stderr
    assert "odd-times" in shown.stdout
    assert run(url, "sessions").returncode == 0
    checks: list[tuple[list[str], Callable[[str], Any]]] = [
        (["sessions", "--json"], strict_json),
        (["sessions", "--jsonl"], lambda out: [strict_json(line) for line in out.splitlines()]),
        (["show", "shared", "--json"], strict_json),
        (["show", "shared", "--jsonl"], lambda out: [strict_json(line) for line in out.splitlines()]),
    ]
    for args, parse in checks:
        done = run(url, *args)
        assert done.returncode == 0, done.stderr
        assert not any(raw in done.stdout for raw in RAW)  # escaped by JSON itself, lone surrogates too
        parse(done.stdout)
    lines = run(url, "show", "shared", "--jsonl").stdout.splitlines()[1:]  # after the session's line
    text = next(call for call in map(strict_json, lines) if call["call_id"] == "text")
    assert {key: text[key] for key in ("name", "output", "error")} == {**odd_text, "output": {"text": "\ud800\x1b[2J"}}


def test_a_file_name_with_control_characters_is_escaped_by_import(tmp_path: Path) -> None:
    spill = tmp_path / "odd\x1b[2Jname.jsonl"
    spill.write_text("")
    done = run(f"sqlite:///{tmp_path / 't.db'}", "import", str(spill))
    assert done.returncode == 0, done.stderr
    assert "\x1b" not in done.stdout and "odd\\x1b[2Jname.jsonl" in done.stdout

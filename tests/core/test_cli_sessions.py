"""``openprogram sessions``: an aligned table with status, root and duration; limits; JSON and JSON Lines."""

from __future__ import annotations

import contextlib
import json
import time

import openprogram
import pytest

from .test_cli import broken, run_cli, search

CREWAI_LIKE_ID = "crew-" + "0123456789abcdef" * 2 + "0123456789a"  # 48 characters, like CrewAI's ids


def columns_of(header: str) -> list[int]:
    return [header.index(name) for name in header.split()]


def test_columns_stay_aligned_with_a_48_character_id(sqlite_url: str) -> None:
    assert len(CREWAI_LIKE_ID) == 48
    for sid in ("short", CREWAI_LIKE_ID):
        with openprogram.session_context(sid, store=sqlite_url, agent_id="a-rather-long-agent-name"):
            search(sid)
    code, out = run_cli("--store", sqlite_url, "sessions")
    assert code == 0
    header, *rows = out.splitlines()
    assert header.split() == [
        "SESSION",
        "STATUS",
        "ERRORS",
        "AGENT",
        "TURNS",
        "CALLS",
        "TOKENS",
        "STARTED",
        "DURATION",
    ]
    starts = dict(zip(header.split(), columns_of(header), strict=True))
    assert len(rows) == 2
    for line in rows:
        assert line[starts["STATUS"] :].startswith("ok ")
        assert line[starts["AGENT"] :].startswith("a-rather-long-agent-name ")
        assert line[starts["TURNS"] :].startswith("1 turn: tool search ")
        assert line[starts["STARTED"] :][:4].isdigit()
    for right_aligned in ("ERRORS", "CALLS", "TOKENS"):  # numbers end under the end of their heading
        end = starts[right_aligned] + len(right_aligned)
        assert all(line[end - 1].isdigit() and line[end] == " " for line in rows)


def test_status_root_and_duration_come_from_the_recorded_calls(sqlite_url: str) -> None:
    @openprogram.tool
    def failing_agent() -> None:
        search("a")
        broken(1)

    with contextlib.suppress(ValueError), openprogram.session_context("failed", store=sqlite_url):
        failing_agent()
    code, out = run_cli("--store", sqlite_url, "sessions", "--json")
    assert code == 0
    (entry,) = json.loads(out)
    assert entry["status"] == "error" and entry["errors"] == 3  # broken, the agent and the turn
    assert entry["turns"] == 1 and entry["ran"] == [{"kind": "tool", "name": "failing_agent", "count": 1}]
    assert entry["duration"] is not None and entry["duration"] >= 0
    code, out = run_cli("--store", sqlite_url, "sessions")
    assert out.splitlines()[1].split()[1:8] == ["error", "3", "main", "1", "turn:", "tool", "failing_agent"]


def test_limit_zero_lists_every_session_and_a_negative_limit_is_refused(
    sqlite_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    for sid in ("one", "two", "three"):
        with openprogram.session_context(sid, store=sqlite_url):
            search(sid)
    code, out = run_cli("--store", sqlite_url, "sessions", "--limit", "0")
    assert code == 0
    assert len(out.splitlines()) == 1 + 3
    code, out = run_cli("--store", sqlite_url, "sessions", "--limit", "2")
    assert len(out.splitlines()) == 1 + 2
    with pytest.raises(SystemExit) as stopped:
        run_cli("--store", sqlite_url, "sessions", "--limit", "-1")
    assert stopped.value.code == 2
    assert "--limit" in capsys.readouterr().err


def test_sessions_jsonl_is_one_session_per_line(sqlite_url: str) -> None:
    for sid in ("a-older", "b-newer"):
        with openprogram.session_context(sid, store=sqlite_url):
            search(sid)
    code, out = run_cli("--store", sqlite_url, "sessions", "--jsonl")
    assert code == 0
    listed = [json.loads(line) for line in out.splitlines()]
    assert [s["session_id"] for s in listed] == ["b-newer", "a-older"]
    assert all(s["status"] == "ok" and s["call_count"] == 2 for s in listed)


def test_updated_is_the_end_of_the_latest_turn(sqlite_url: str) -> None:
    with openprogram.session_context("slow-turn", store=sqlite_url):
        search("x")
        time.sleep(1.1)
    code, out = run_cli("--store", sqlite_url, "sessions", "--json")
    assert code == 0
    (entry,) = json.loads(out)
    assert entry["updated_at"] - entry["created_at"] >= 1.0
    _, out = run_cli("--store", sqlite_url, "show", "slow-turn")
    header = out.splitlines()[0]
    created, updated = (header.split(word + " ")[1][:19] for word in ("created", "updated"))
    assert created != updated


def test_a_turn_that_ran_nothing_is_counted_and_names_nothing(sqlite_url: str) -> None:
    with openprogram.session_context("quiet", store=sqlite_url):
        pass
    with openprogram.session_context("quiet", store=sqlite_url):
        search("x")
    code, out = run_cli("--store", sqlite_url, "sessions", "--json")
    assert code == 0
    (entry,) = json.loads(out)
    assert entry["turns"] == 2 and entry["ran"] == [{"kind": "tool", "name": "search", "count": 1}]
    _, out = run_cli("--store", sqlite_url, "sessions")
    header, row = out.splitlines()
    assert row[header.index("TURNS") :].startswith("2 turns: tool search ")

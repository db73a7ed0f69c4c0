"""``openprogram show``: what the tree folds and never folds, the newest turns, offsets and labels."""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Iterator
from io import StringIO

import openprogram
import pytest
from openprogram._cli import render_tree
from openprogram.stores import StoredRow

from .test_cli import run_cli, search


def turn_lines(out: str) -> list[str]:
    return [line for line in out.splitlines() if " turn main [" in line]


def test_turns_and_agent_runs_are_never_folded(sqlite_url: str) -> None:
    for _ in range(8):
        with openprogram.session_context("many-turns", store=sqlite_url):
            for _ in range(6):
                with openprogram.call_scope("agent", "planner"):
                    search("q")
    code, out = run_cli("--store", sqlite_url, "show", "many-turns")
    assert code == 0
    assert len(turn_lines(out)) == 8
    assert sum("agent planner [ok]" in line for line in out.splitlines()) == 8 * 6
    assert "more turn" not in out and "more agent" not in out


def test_a_folded_run_keeps_the_first_two_and_the_newest_call(sqlite_url: str) -> None:
    with openprogram.session_context("runs", store=sqlite_url):
        for i in range(50):
            search(str(i))
    code, out = run_cli("--store", sqlite_url, "show", "runs")
    assert code == 0
    lines = out.splitlines()
    shown = [i for i, line in enumerate(lines) if "tool search [ok]" in line and "more" not in line]
    fold = next(i for i, line in enumerate(lines) if "... 47 more tool search [ok]" in line)
    assert len(shown) == 3 and shown[:2] == [fold - 2, fold - 1] and shown[2] == fold + 1
    assert len(lines) < 10


def test_all_unfolds_everything_and_lifts_the_line_limit(sqlite_url: str) -> None:
    with openprogram.session_context("runs", store=sqlite_url):
        for i in range(50):
            search(str(i))
    code, out = run_cli("--store", sqlite_url, "show", "runs", "--all", "--max-lines", "5")
    assert code == 0
    assert sum("tool search [ok]" in line for line in out.splitlines()) == 50
    assert "more" not in out and "stopped" not in out


def test_past_max_lines_the_newest_turns_are_shown_whole(sqlite_url: str) -> None:
    for n in range(10):
        with openprogram.session_context("long", store=sqlite_url):
            for step in ("plan", "act", "check"):
                with openprogram.call_scope("node", f"{step}-{n}"):
                    pass
    code, out = run_cli("--store", sqlite_url, "show", "long", "--max-lines", "10")
    assert code == 0
    lines = out.splitlines()
    turns = turn_lines(out)
    assert [re.search(r"turn (\d+) of 10", line).group(1) for line in turns] == ["9", "10"]  # type: ignore[union-attr]
    assert all(f"node {step}-{n} [ok]" in out for step in ("plan", "act", "check") for n in (8, 9))
    assert "node plan-7" not in out
    note = lines[1]
    assert "8 earlier turns (32 calls) left out" in note and "--all" in note
    assert len(lines) <= 1 + 10


def test_the_stop_line_counts_what_is_really_left(sqlite_url: str) -> None:
    with openprogram.session_context("wide", store=sqlite_url):
        for n in range(89):  # 90 lines: the turn and 89 calls that do not fold
            with openprogram.call_scope("node", f"step-{n}"):
                pass
    code, out = run_cli("--store", sqlite_url, "show", "wide", "--max-lines", "10")
    assert code == 0
    lines = out.splitlines()
    assert len(lines) == 1 + 10 + 1
    assert "output stopped after 10 lines: 80 more lines (80 calls) not shown" in lines[-1]
    assert "--all" in lines[-1] and "--json" in lines[-1]


def test_every_call_shows_its_offset_and_every_turn_its_number_start_and_id(sqlite_url: str) -> None:
    for _ in range(2):
        with openprogram.session_context("offsets", store=sqlite_url) as handle:
            search("x")
    code, out = run_cli("--store", sqlite_url, "show", "offsets")
    assert code == 0
    turns = turn_lines(out)
    assert re.search(r"turn 1 of 2 · \d{4}-\d\d-\d\d \d\d:\d\d:\d\d · id \w+", turns[0])
    assert "turn 2 of 2" in turns[1] and f"id {handle.turn_id}" in turns[1]
    calls = [line for line in out.splitlines() if "tool search" in line]
    assert len(calls) == 2 and all(re.search(r"\[ok\] \S+  at \+\d+\.\d{3}s", line) for line in calls)


def test_a_running_call_shows_its_elapsed_time(sqlite_url: str) -> None:
    with openprogram.session_context("live", store=sqlite_url):
        with openprogram.call_scope("tool", "slow"):
            assert openprogram.flush()
            code, out = run_cli("--store", sqlite_url, "show", "live")
    assert code == 0
    line = next(line for line in out.splitlines() if "tool slow" in line)
    assert re.search(r"\[running\] \d+(\.\d+)?(ms|s) so far", line), line


def row(
    call_id: str,
    parent: str | None,
    kind: str,
    name: str,
    started: float,
    ended: float | None,
    status: str = "ok",
    error: str | None = None,
    attributes: object = None,
) -> StoredRow:
    text = None if attributes is None else json.dumps(attributes)
    return StoredRow(
        call_id, "s", "t1", parent, kind, name, "langgraph", status, None, None, error, text, started, ended, "host:1:x"
    )


def drawn(rows: list[StoredRow], now: float = 0.0) -> list[str]:
    out = StringIO()
    render_tree(rows, out, now=now)
    return out.getvalue().splitlines()


def test_retry_attempts_are_marked() -> None:
    lines = drawn(
        [
            row("t", None, "turn", "main", 100.0, 101.0),
            row("a1", "t", "node", "fetch", 100.1, 100.2, "error", "TimeoutError: slow", {"attempt": 1}),
            row("a2", "t", "node", "fetch", 100.3, 100.4, "ok", None, {"attempt": 2}),
            row("other", "t", "node", "parse", 100.5, 100.6),
        ]
    )
    first, second = (line for line in lines if "node fetch" in line)
    assert "attempt 1" in first and "!! TimeoutError: slow" in first
    assert "attempt 2" in second
    assert "attempt" not in next(line for line in lines if "node parse" in line)


def test_attempts_recorded_with_call_scope_are_marked(sqlite_url: str) -> None:
    with openprogram.session_context("retried", store=sqlite_url) as handle:
        with contextlib.suppress(TimeoutError), openprogram.call_scope("node", "fetch", attributes={"attempt": 1}):
            raise TimeoutError("slow")
        with openprogram.call_scope("node", "fetch", attributes={"attempt": 2}):
            pass
    assert openprogram.flush()
    code, out = run_cli("--store", sqlite_url, "show", handle.session_id)  # drawn from tree rows
    assert code == 0
    first, second = (line for line in out.splitlines() if "node fetch" in line)
    assert "[error]" in first and "attempt 1" in first and "[ok]" in second and "attempt 2" in second


def test_offsets_are_from_the_start_of_the_turn() -> None:
    lines = drawn(
        [
            row("t", None, "turn", "main", 100.0, 102.09),
            row("a", "t", "node", "first", 100.0, 100.05),
            row("b", "t", "node", "second", 102.0, 102.07),
        ]
    )
    assert "[ok] 2.09s" in lines[0]
    assert "at +0.000s" in lines[1] and "at +2.000s" in lines[2]


def test_a_running_call_is_drawn_with_its_time_so_far() -> None:
    lines = drawn(
        [row("t", None, "turn", "main", 100.0, None, "running"), row("a", "t", "node", "wait", 100.5, None, "running")],
        now=103.7,
    )
    assert "[running] 3.70s so far" in lines[0]
    assert "[running] 3.20s so far" in lines[1]


@pytest.mark.parametrize(
    ("error", "shown"),
    [
        ("GeneratorExit: ", "!! abandoned: the consumer stopped reading"),
        ("CancelledError: ", "!! cancelled"),
        ("KeyError: ", "!! KeyError (no message)"),
    ],
)
def test_an_error_without_a_message_reads_as_a_phrase(error: str, shown: str) -> None:
    lines = drawn(
        [
            row("t", None, "turn", "main", 100.0, 101.0),
            row("a", "t", "tool", "stream", 100.1, 100.2, "interrupted", error),
        ]
    )
    assert lines[1].endswith(shown), lines[1]


def test_an_abandoned_generator_tool_reads_as_abandoned(sqlite_url: str) -> None:
    @openprogram.tool
    def numbers() -> Iterator[int]:
        yield from range(10)

    with openprogram.session_context("abandoned", store=sqlite_url):
        stream = numbers()
        next(stream)
        stream.close()
    code, out = run_cli("--store", sqlite_url, "show", "abandoned")
    assert code == 0
    line = next(line for line in out.splitlines() if "tool numbers" in line)
    assert "[interrupted]" in line and line.endswith("!! abandoned: the consumer stopped reading"), line


def test_show_jsonl_is_one_call_per_line(sqlite_url: str) -> None:
    with openprogram.session_context("jsonl", store=sqlite_url):
        search("a")
        search("b")
    code, out = run_cli("--store", sqlite_url, "show", "jsonl", "--jsonl")
    assert code == 0
    session, *calls = [json.loads(line) for line in out.splitlines()]
    assert session["session_id"] == "jsonl" and session["call_count"] == 3  # as `sessions --jsonl` prints it
    assert [(c["kind"], c["name"]) for c in calls] == [("turn", "main"), ("tool", "search"), ("tool", "search")]
    assert calls[1]["inputs"] == {"query": "a"}

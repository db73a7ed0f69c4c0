"""The ``openprogram`` command: sessions, show, demo, import; ``python -m openprogram``."""

from __future__ import annotations

import contextlib
import json
import re
import subprocess
import sys
from io import StringIO
from pathlib import Path

import openprogram
import pytest
from openprogram._cli import main as cli

from .conftest import openprogram_command, python_env


def run_cli(*args: str) -> tuple[int, str]:
    out = StringIO()
    return cli(list(args), out=out), out.getvalue()


@openprogram.tool
def search(query: str) -> str:
    return f"results for {query}"


@openprogram.tool
def broken(x: int) -> None:
    raise ValueError(f"bad value {x}")


@pytest.fixture
def recorded(sqlite_url: str) -> str:
    """A session with nested calls and an error, in the SQLite store at ``sqlite_url``."""

    @openprogram.tool
    def agent() -> None:
        search("a")
        with contextlib.suppress(ValueError):
            broken(3)

    with openprogram.session_context("cli-session", store=sqlite_url, agent_id="cli-agent"):
        agent()
    return sqlite_url


def test_sessions_most_recent_first(sqlite_url: str) -> None:
    for sid in ("a-older", "b-newer"):  # named so that a timestamp tie sorts the same way
        with openprogram.session_context(sid, store=sqlite_url):
            search(sid)
    code, out = run_cli("--store", sqlite_url, "sessions")
    assert code == 0
    lines = out.splitlines()
    assert lines[0].split()[:5] == ["SESSION", "STATUS", "ERRORS", "AGENT", "TURNS"]
    assert [line.split()[0] for line in lines[1:]] == ["b-newer", "a-older"]
    assert lines[1].split()[1:8] == ["ok", "0", "main", "1", "turn:", "tool", "search"]
    code, out = run_cli("--store", sqlite_url, "sessions", "--json")
    assert code == 0
    assert [s["session_id"] for s in json.loads(out)] == ["b-newer", "a-older"]


def test_sessions_on_an_empty_store(tmp_path: Path) -> None:
    (tmp_path / "empty.db").touch()
    code, out = run_cli("--store", f"sqlite:///{tmp_path / 'empty.db'}", "sessions")
    assert code == 0
    assert "no sessions" in out


def test_show_draws_the_tree_with_errors_visible(recorded: str) -> None:
    code, out = run_cli("--store", recorded, "show", "cli-session")
    assert code == 0
    lines = out.splitlines()
    assert lines[0].startswith("session cli-session  agent cli-agent  status ok  4 calls  1 error  1 turn, ")
    tree = "\n".join(lines[1:])
    turn = next(line for line in lines if "turn cli-agent" in line)
    agent = next(line for line in lines if "tool agent" in line)
    search_line = next(line for line in lines if "tool search" in line)
    broken_line = next(line for line in lines if "tool broken" in line)
    assert "[ok]" in turn and "[ok]" in agent and "[ok]" in search_line
    assert "[error]" in broken_line
    assert "!! ValueError: bad value 3" in broken_line
    assert re.search(r"\d+\.\dms", search_line)  # a duration
    # Indentation shows the nesting: turn > agent > (search, broken).
    lines_by_name = (("turn", turn), ("tool agent", agent), ("tool search", search_line), ("tool broken", broken_line))
    indent = {name: line.index(name) for name, line in lines_by_name}
    assert indent["turn"] < indent["tool agent"] < indent["tool search"] == indent["tool broken"]
    assert tree.index("tool search") < tree.index("tool broken")


def test_show_json_is_valid_and_complete(recorded: str) -> None:
    code, out = run_cli("--store", recorded, "show", "cli-session", "--json")
    assert code == 0
    data = json.loads(out)
    assert data["session"]["session_id"] == "cli-session"
    calls = {c["name"]: c for c in data["calls"]}
    assert set(calls) == {"cli-agent", "agent", "search", "broken"}
    assert calls["broken"]["status"] == "error"
    assert calls["broken"]["error"] == "ValueError: bad value 3"
    assert calls["search"]["parent_id"] == calls["agent"]["call_id"]
    assert calls["search"]["inputs"] == {"query": "a"}
    for field in (
        "call_id",
        "session_id",
        "turn_id",
        "parent_id",
        "kind",
        "name",
        "framework",
        "status",
        "inputs",
        "output",
        "error",
        "started_at",
        "ended_at",
    ):
        assert field in calls["search"]


def test_unknown_session_is_a_clear_error(recorded: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, _ = run_cli("--store", recorded, "show", "no-such-session")
    assert code == 1
    err = capsys.readouterr().err
    assert "no session 'no-such-session'" in err
    assert "openprogram sessions" in err
    assert "Traceback" not in err


def test_invalid_session_id_is_a_clear_error(capsys: pytest.CaptureFixture[str]) -> None:
    code, _ = run_cli("--store", "memory://", "show", "bad id!")
    assert code == 2
    assert "session id" in capsys.readouterr().err


def test_bad_store_url_is_a_clear_error(capsys: pytest.CaptureFixture[str]) -> None:
    code, _ = run_cli("--store", "bogus://x", "sessions")
    assert code == 1
    assert "unknown store URL scheme" in capsys.readouterr().err


def test_unreadable_store_is_a_clear_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    code, _ = run_cli("--store", f"sqlite:///{blocker / 'db.sqlite'}", "sessions")
    assert code == 1
    err = capsys.readouterr().err
    assert str(blocker) in err and "Traceback" not in err


def test_demo_then_continue(isolated_home: Path) -> None:
    env = python_env()
    first = subprocess.run(
        [*openprogram_command(), "demo"], env=env, capture_output=True, text=True, check=False, timeout=60
    )
    assert first.returncode == 0, first.stderr
    match = re.search(r"openprogram demo --session (\S+)", first.stdout)
    assert match, first.stdout
    session_id = match.group(1)
    assert f"openprogram show {session_id}" in first.stdout
    assert (isolated_home / "sessions.db").exists()

    again = subprocess.run(
        [*openprogram_command(), "demo", "--session", session_id],
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert again.returncode == 0, again.stderr
    assert f"continuing session {session_id}" in again.stdout

    store = openprogram.open_store()
    calls = store.list_calls(session_id)
    turns = [c for c in calls if c.kind == "turn"]
    assert len(turns) == 2
    assert len({t.turn_id for t in turns}) == 2
    # "interrupted" is a human-in-the-loop pause when the LangGraph demo runs too.
    assert all(c.status in ("ok", "interrupted") for c in calls)
    assert all(c.status == "ok" for c in calls if c.framework is None)
    # The plain-Python agent: async tools and a threaded tool calling each other, all attributed.
    by_id = {c.call_id: c for c in calls}
    for c in calls:
        if c.kind != "turn":
            assert c.parent_id in by_id
    names = {c.name for c in calls}
    assert {"research", "fetch", "summarize", "lookup"} <= names
    summaries = [c for c in calls if c.name == "summarize"]
    assert len(summaries) == 2  # one per turn
    for summarize in summaries:
        assert by_id[summarize.parent_id].name == "research"  # type: ignore[index]
        # two notes double-checked by lookups in worker threads, attributed to the summarize call
        assert len([c for c in calls if c.name == "lookup" and c.parent_id == summarize.call_id]) == 2


def test_python_dash_m(recorded: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "openprogram", "--store", recorded, "show", "cli-session"],
        env=python_env(),
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert "tool broken" in done.stdout
    missing = subprocess.run(
        [sys.executable, "-m", "openprogram", "--store", recorded, "show", "nope"],
        env=python_env(),
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert missing.returncode == 1
    assert "no session 'nope'" in missing.stderr
    assert "Traceback" not in missing.stderr


def test_help_lists_the_commands() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "openprogram", "--help"],
        env=python_env(),
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert done.returncode == 0
    for command in ("sessions", "show", "demo", "import"):
        assert command in done.stdout


def ask_model(text: str, tokens: tuple[int, int]) -> None:
    from openprogram._kit import ModelCall, message, model_inputs, reply, usage

    call = ModelCall.request("toy", "fake-gpt", lambda: model_inputs([message("user", text)]))
    assert call is not None
    call.answered(reply(text.upper()), usage(*tokens))


def test_show_prints_model_and_tokens_on_llm_lines_and_totals_per_turn_and_session(sqlite_url: str) -> None:
    with openprogram.session_context("tokens", store=sqlite_url):
        ask_model("one", (10, 2))
        search("x")
        ask_model("two", (20, 3))
    with openprogram.session_context("tokens", store=sqlite_url):
        ask_model("three", (5, 1))
    code, out = run_cli("--store", sqlite_url, "show", "tokens")
    assert code == 0
    lines = out.splitlines()
    assert "tokens 41 (in 35, out 6)" in lines[0]  # the session
    turns = [line for line in lines if "turn main" in line]
    assert ["tokens 35 (in 30, out 5)" in turns[0], "tokens 6 (in 5, out 1)" in turns[1]] == [True, True]
    model_lines = [line for line in lines if "llm fake-gpt (toy) [ok]" in line]
    assert len(model_lines) == 3 and "tokens 12 (in 10, out 2)" in model_lines[0]
    assert "tokens" not in next(line for line in lines if "tool search" in line)
    code, out = run_cli("--store", sqlite_url, "sessions")
    header, first = out.splitlines()[:2]
    assert header.split()[:7] == ["SESSION", "STATUS", "ERRORS", "AGENT", "TURNS", "CALLS", "TOKENS"]
    assert first.split()[:4] == ["tokens", "ok", "0", "main"] and first.split()[-5:-3] == ["6", "41"]
    assert " 2 turns: llm fake-gpt (3), tool search " in first


@pytest.mark.parametrize(
    "command",
    [["sessions"], ["show", "cli-session"], ["undo", "cli-session", "--dry-run"], ["export", "otlp", "--help"]],
)
def test_every_command_takes_store_after_it_too(recorded: str, command: list[str]) -> None:
    if command[-1] == "--help":  # export would send: its parser taking --store is what is checked
        with pytest.raises(SystemExit) as done:
            run_cli(*command[:-1], "--store", recorded, "--help")
        assert done.value.code == 0
        return
    code, out = run_cli(*command, "--store", recorded)
    assert code == 0
    assert "cli-session" in out or "cli-agent" in out


def test_store_before_the_command_still_wins_when_not_repeated(recorded: str) -> None:
    code, out = run_cli("--store", recorded, "sessions", "--json")
    assert code == 0 and [s["session_id"] for s in json.loads(out)] == ["cli-session"]


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    from importlib.metadata import version

    with pytest.raises(SystemExit) as done:
        run_cli("--version")
    assert done.value.code == 0
    assert capsys.readouterr().out.strip() == f"openprogram {version('openprogram')}"


def test_every_option_of_every_command_has_help() -> None:
    import argparse

    from openprogram._cli import build_parser

    missing: list[str] = []
    parsers = [("openprogram", build_parser())]
    while parsers:
        name, parser = parsers.pop()
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                parsers.extend((f"{name} {sub}", p) for sub, p in action.choices.items())
                for choice in action._choices_actions:
                    if not choice.help:
                        missing.append(f"{name} {choice.dest}")
            elif not isinstance(action, argparse._HelpAction) and not action.help:
                missing.append(f"{name} {'/'.join(action.option_strings) or action.dest}")
    assert missing == []

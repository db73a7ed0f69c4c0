"""What a new user met first in the ``openprogram`` command (issue 46), each through the command in a child process:
errors that read as ``ok``, a mistyped store read as an empty one, undo answering its own prompt, ids that cannot
be shortened, a duration counting idle time, a ROOT column naming one call, a colourless tree, long warnings."""

from __future__ import annotations

import contextlib
import json
import os
import pty
import re
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import openprogram
import pytest

from .conftest import openprogram_command, python_env, run_python
from .test_cli import broken, search


def cli(
    *args: str, stdin: int | None = subprocess.DEVNULL, cwd: Path | None = None, **env: str
) -> tuple[int, str, str]:
    """``openprogram ARGS`` in a child process: (exit status, stdout, stderr)."""
    done = subprocess.run(
        [*openprogram_command(), *args],
        env=python_env(**env),
        stdin=stdin,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=cwd,
    )
    return done.returncode, done.stdout, done.stderr


def record_failures(url: str, session_id: str, failures: int) -> None:
    """A session whose agent catches ``failures`` failed tool calls: the turn itself ends ``ok``."""

    @openprogram.tool
    def agent() -> None:
        search("a")
        for n in range(failures):
            with contextlib.suppress(ValueError):
                broken(n)

    with openprogram.session_context(session_id, store=url):
        agent()
    openprogram.flush()


# --- 1. failed calls are counted where sessions are listed and drawn ---------------------------------------


def test_a_session_with_failed_calls_does_not_read_plain_ok(sqlite_url: str) -> None:
    record_failures(sqlite_url, "four-failures", 4)

    code, out, err = cli("--store", sqlite_url, "sessions")

    assert code == 0, err
    header, row = out.splitlines()
    assert header.split()[:3] == ["SESSION", "STATUS", "ERRORS"]
    assert row.split()[:3] == ["four-failures", "ok", "4"]  # the turn ended ok; four calls in it failed
    code, out, err = cli("--store", sqlite_url, "show", "four-failures")
    assert code == 0, err
    assert "  4 errors  " in out.splitlines()[0]


# --- 2. a store that is not there ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "command", [["sessions"], ["show", "s1"], ["export", "otlp", "--all"], ["undo", "s1", "--yes"]]
)
def test_a_read_command_on_a_store_that_does_not_exist_says_so_and_creates_nothing(
    tmp_path: Path, command: list[str]
) -> None:
    missing = tmp_path / "nonexistent" / "dir" / "x.db"

    code, out, err = cli("--store", str(missing), *command)

    assert code == 1, out
    assert f"openprogram: no store at {missing}: there is no such file" in err
    assert "check the path" in err and "Traceback" not in err
    assert not missing.exists() and not missing.parent.parent.exists()


def test_the_viewer_on_a_store_that_does_not_exist_says_so_and_serves_what_comes(tmp_path: Path) -> None:
    missing = tmp_path / "later" / "x.db"
    command = [*openprogram_command(), "--store", str(missing), "ui", "--no-browser", "--port", "0"]
    ui = subprocess.Popen(command, env=python_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert ui.stdout is not None
        assert ui.stdout.readline().startswith("openprogram ui: http://127.0.0.1:")  # serving: sessions may come
    finally:
        ui.terminate()
        _, err = ui.communicate(timeout=30)
    assert f"openprogram: no store at {missing}: there is no such file yet; the viewer shows its sessions" in err
    assert not missing.exists()


def test_the_default_store_before_anything_was_recorded_says_how_to_record(isolated_home: Path) -> None:
    code, _, err = cli("sessions")

    assert code == 1
    assert "no store at" in err and "nothing has been recorded in the default store yet" in err
    assert "openprogram demo" in err and not isolated_home.exists()


def test_sqlite_url_with_one_slash_is_an_absolute_path_and_without_a_slash_a_relative_one(tmp_path: Path) -> None:
    absolute = tmp_path / "abs" / "x.db"
    with openprogram.session_context("one-slash", store=f"sqlite:{absolute}"):  # sqlite:/tmp/.../x.db
        search("a")
    openprogram.flush()
    assert absolute.exists()

    for url in (f"sqlite:{absolute}", f"sqlite:///{absolute}", str(absolute)):
        code, out, err = cli("--store", url, "sessions")
        assert code == 0 and "one-slash" in out, (url, err)
    code, out, err = cli("--store", "sqlite:abs/x.db", "sessions", cwd=tmp_path)  # relative to the working dir
    assert code == 0 and "one-slash" in out, err
    code, out, err = cli("--store", "sqlite:///abs/x.db", "sessions", cwd=tmp_path)  # SQLAlchemy's relative form
    assert code == 0 and "one-slash" in out, err


# --- 5. -v is openprogram's logging -------------------------------------------------------------------------

VERBOSE = """
    import logging, sys
    from openprogram._cli import main

    code = main(sys.argv[1:])
    logging.getLogger("openprogram.probe").debug("openprogram's own debug line")
    logging.getLogger("some_library").debug("a library's debug line")
    logging.getLogger("some_library").warning("a library's warning")
"""


@pytest.mark.parametrize("flag", ["-v", "-vv"])
def test_verbose_raises_openprogram_logging_and_only_vv_every_library(sqlite_url: str, flag: str) -> None:
    record_failures(sqlite_url, "s", 0)

    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(VERBOSE), flag, "--store", sqlite_url, "sessions"],
        env=python_env(),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )

    assert done.returncode == 0, done.stderr
    assert "DEBUG openprogram.probe: openprogram's own debug line" in done.stderr
    assert "WARNING some_library: a library's warning" in done.stderr
    assert ("a library's debug line" in done.stderr) is (flag == "-vv")


def test_help_says_what_v_and_vv_log() -> None:
    code, out, _ = cli("--help")
    assert code == 0 and "openprogram's debug messages" in out and "-vv" in out


# --- 6. undo without a terminal -----------------------------------------------------------------------------

TICKETS = """
import os
import openprogram

LOG = os.environ["TICKETS_LOG"]


@openprogram.tool
def open_ticket(title: str) -> str:
    with open(LOG, "a") as log:
        log.write(f"open {title}\\n")
    return title


@open_ticket.undo
def close_ticket(effect: openprogram.Effect) -> None:
    with open(LOG, "a") as log:
        log.write(f"close {effect.output}\\n")
"""


@pytest.fixture
def tickets(tmp_path: Path, sqlite_url: str) -> tuple[Path, str]:
    """A session ``tickets-1`` in which a tool with a compensation ran twice; the log of what it did."""
    (tmp_path / "tickets.py").write_text(TICKETS)
    log = tmp_path / "tickets.log"
    done = run_python(
        f"""
        import openprogram, tickets
        with openprogram.session_context("tickets-1", store={sqlite_url!r}):
            tickets.open_ticket("a")
            tickets.open_ticket("b")
        """,
        env=python_env(PYTHONPATH=str(tmp_path), TICKETS_LOG=str(log)),
    )
    assert done.returncode == 0, done.stderr
    return log, sqlite_url


def test_undo_with_no_terminal_asks_for_yes_and_undoes_nothing(tickets: tuple[Path, str], tmp_path: Path) -> None:
    log, url = tickets

    code, out, err = cli("--store", url, "undo", "tickets-1", "--import", "tickets", cwd=tmp_path, TICKETS_LOG=str(log))

    assert code == 1
    assert "undo plan for the whole of session tickets-1: 2 effect(s), newest first" in out
    assert "give --yes" in err and "not a terminal" in err and "nothing was undone" in err
    assert log.read_text().splitlines() == ["open a", "open b"]
    code, out, err = cli(
        "--store", url, "undo", "tickets-1", "--import", "tickets", "--yes", cwd=tmp_path, TICKETS_LOG=str(log)
    )
    assert code == 0, err
    assert log.read_text().splitlines() == ["open a", "open b", "close b", "close a"]


# --- 7. unique prefixes of session ids ----------------------------------------------------------------------


def test_show_and_undo_take_a_unique_prefix_and_an_ambiguous_one_lists_the_candidates(
    tickets: tuple[Path, str], tmp_path: Path
) -> None:
    log, url = tickets
    for sid in ("tickler", "other"):
        with openprogram.session_context(sid, store=url):
            search(sid)
    openprogram.flush()

    code, out, err = cli("--store", url, "show", "oth")
    assert code == 0, err
    assert out.startswith("session other  ")
    code, out, err = cli(
        "--store", url, "undo", "ticke", "--dry-run", "--import", "tickets", cwd=tmp_path, TICKETS_LOG=str(log)
    )
    assert code == 0, err
    assert "undo plan for the whole of session tickets-1" in out
    for command in (["show", "tick"], ["undo", "tick", "--yes"]):
        code, out, err = cli("--store", url, *command, TICKETS_LOG=str(log))
        assert code == 1
        assert "'tick' is the start of 2 session ids" in err
        assert re.search(r"^  tickets-1  agent main$", err, re.MULTILINE) and "\n  tickler  agent main" in err
    code, _, err = cli("--store", url, "show", "nothing-like-it")
    assert code == 1 and "no session 'nothing-like-it' (nor one whose id starts with it)" in err
    assert log.read_text().splitlines() == ["open a", "open b"]


# --- 8 and 9. the time spent in turns; what the turns ran ---------------------------------------------------


def test_duration_is_the_time_in_turns_and_turns_says_what_each_ran(sqlite_url: str) -> None:
    @openprogram.tool
    def plan() -> None:
        search("x")

    with openprogram.session_context("idle-between", store=sqlite_url):
        plan()
    time.sleep(1.5)  # idle: no turn running
    with openprogram.session_context("idle-between", store=sqlite_url):
        search("y")
    with openprogram.session_context("idle-between", store=sqlite_url):
        search("z")
    openprogram.flush()

    code, out, err = cli("--store", sqlite_url, "sessions", "--json")
    assert code == 0, err
    (entry,) = json.loads(out)
    assert entry["duration"] < 1.0 and entry["span"] >= 1.5
    assert entry["turns"] == 3
    assert entry["ran"] == [
        {"kind": "tool", "name": "plan", "count": 1},
        {"kind": "tool", "name": "search", "count": 2},
    ]
    assert "root" not in entry
    code, out, _ = cli("--store", sqlite_url, "sessions")
    header, row = out.splitlines()
    assert row[header.index("TURNS") :].startswith("3 turns: tool plan, tool search (2) ")
    assert re.search(r"\d+\.\dms$", row)  # DURATION: milliseconds, not the 1.5 s between the turns
    code, out, _ = cli("--store", sqlite_url, "show", "idle-between")
    assert re.search(r"  3 turns, \d+\.\dms in turns over 1\.\d\ds from first start to last end  ", out)


# --- 10. show: colour on a terminal only, one drawing style, JSON heads ---------------------------------------


def _on_a_terminal(*args: str, **env: str) -> str:
    """What ``openprogram ARGS`` writes to a terminal (a pseudo-terminal as its stdout)."""
    leader, follower = pty.openpty()
    try:
        done = subprocess.run(
            [*openprogram_command(), *args],
            env={k: v for k, v in python_env(**env).items() if k != "NO_COLOR" or "NO_COLOR" in env},
            stdin=subprocess.DEVNULL,
            stdout=follower,
            stderr=subprocess.PIPE,
            timeout=120,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        os.close(follower)
        follower = -1
        chunks = []
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # the terminal's other end is closed: all read
                break
            if not chunk:
                break
            chunks.append(chunk)
        return b"".join(chunks).decode()
    finally:
        os.close(leader)
        if follower >= 0:
            os.close(follower)


RED = "\x1b[31m"


def test_show_is_red_for_errors_on_a_terminal_only(sqlite_url: str) -> None:
    record_failures(sqlite_url, "coloured", 2)

    shown = _on_a_terminal("--store", sqlite_url, "show", "coloured")
    failed = [line for line in shown.splitlines() if "tool broken" in line]
    assert len(failed) == 2 and all(RED in line for line in failed)
    assert RED not in next(line for line in shown.splitlines() if "tool search" in line)
    assert RED + "2 errors" in shown.splitlines()[0]
    assert "\x1b" not in _on_a_terminal("--store", sqlite_url, "show", "coloured", NO_COLOR="1")
    _, piped, _ = cli("--store", sqlite_url, "show", "coloured")
    assert "\x1b" not in piped and "!! ValueError: bad value 1" in piped


def test_show_draws_the_tree_in_one_style(sqlite_url: str) -> None:
    record_failures(sqlite_url, "drawn", 1)
    with openprogram.session_context("drawn", store=sqlite_url):
        search("again")
    openprogram.flush()

    _, out, _ = cli("--store", sqlite_url, "show", "drawn")

    tree = out.splitlines()[1:]
    assert [line[:4] for line in tree if "turn main" in line] == ["├── ", "└── "]
    assert "│       └── tool broken" in "\n".join(tree)
    assert not any(piece in out for piece in ("|-- ", "`-- ", "|   "))  # no ASCII drawing mixed in
    assert all(" · " in line for line in tree if "turn main" in line)
    _, out, err = cli("--store", sqlite_url, "show", "drawn", PYTHONIOENCODING="ascii")  # an ASCII-only terminal
    assert out.isascii(), err
    assert [line[:4] for line in out.splitlines() if "turn main" in line] == ["|-- ", "`-- "]
    assert "|       `-- tool broken" in out and " - id " in out


def test_show_json_heads_carry_status_errors_and_tokens_like_sessions_json(sqlite_url: str) -> None:
    record_failures(sqlite_url, "heads", 3)

    _, listed, _ = cli("--store", sqlite_url, "sessions", "--json")
    code, document, err = cli("--store", sqlite_url, "show", "heads", "--json")
    assert code == 0, err
    (entry,) = json.loads(listed)
    head = json.loads(document)["session"]
    assert head == entry
    assert (head["status"], head["errors"], head["tokens"]) == ("ok", 3, 0)
    code, lines, err = cli("--store", sqlite_url, "show", "hea", "--jsonl")
    assert code == 0, err
    first, *calls = map(json.loads, lines.splitlines())
    assert first == entry
    assert len(calls) == entry["call_count"] and all("call_id" in call for call in calls)


# --- 11. wording ------------------------------------------------------------------------------------------------


def test_an_argument_that_is_not_a_number_is_named_plainly() -> None:
    for args in (["sessions", "--limit", "ten"], ["show", "s", "--max-lines", "x"], ["ui", "--port", "http"]):
        code, _, err = cli(*args)
        assert code == 2
        assert "_count" not in err and "_positive" not in err and "invalid" not in err, err
        assert "is not a whole number: give " in err


def test_the_no_session_warning_is_a_few_readable_lines(isolated_home: Path) -> None:
    done = run_python(
        """
        import openprogram

        @openprogram.tool
        def lonely() -> int:
            return 1

        lonely()
        """
    )
    assert done.returncode == 0, done.stderr
    said = done.stderr.splitlines()
    assert "ran with no session open" in said[0] and "openprogram show " in done.stderr
    assert "session_context" in done.stderr and "configure(no_session=" in done.stderr
    assert len(said) >= 3 and max(map(len, said)) <= 130, said

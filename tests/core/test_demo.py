"""``openprogram demo``: its output is its own, and the commands it prints work as printed."""

from __future__ import annotations

import io
import shlex
import subprocess
from dataclasses import dataclass
from pathlib import Path

import openprogram
import pytest
from openprogram._cli import follow_up_lines
from openprogram._cli import main as cli_main
from openprogram.integrations import DEMOS

from .conftest import openprogram_command, python_env

# Every line the demo itself prints starts with one of these (framework lines with the framework's name).
OWN_PREFIXES = (
    "new session ",
    "continuing session ",
    "plain python: ",
    "recorded in ",
    "see it: ",
    "continue it: ",
    "note: ",
    "openai_agents ",
    "openai_agents: ",
    *(f"{name}" for name in DEMOS),
)


@dataclass(frozen=True)
class DemoRun:
    store_path: Path
    stdout: str
    stderr: str
    returncode: int

    def command(self, label: str) -> list[str]:
        """The words of the command printed after ``label``, without the program name."""
        line = next(line for line in self.stdout.splitlines() if line.startswith(label))
        words = shlex.split(line[len(label) :])
        assert words[0] == "openprogram", line
        return words[1:]


@pytest.fixture(scope="module")
def first_demo(tmp_path_factory: pytest.TempPathFactory) -> DemoRun:
    """A first ``openprogram demo`` on a fresh machine: new HOME and OPENPROGRAM_HOME, a store of its own.

    The store's directory has a space and a quote in its name, so the printed ``--store`` must be quoted.
    """
    root = tmp_path_factory.mktemp("first-demo")
    store_path = root / "it's my dir" / "demo.db"
    env = python_env(HOME=str(root / "home"), OPENPROGRAM_HOME=str(root / "ophome"))
    for name in [n for n in env if n.startswith(("OPENPROGRAM_STORE", "CREWAI_", "OTEL_"))]:
        del env[name]
    result = subprocess.run(
        [*openprogram_command(), "--store", str(store_path), "demo"],
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    return DemoRun(store_path, result.stdout, result.stderr, result.returncode)


def test_first_demo_prints_only_its_own_lines(first_demo: DemoRun) -> None:
    assert first_demo.returncode == 0, first_demo.stderr
    foreign = [line for line in first_demo.stdout.splitlines() if not line.startswith(OWN_PREFIXES)]
    assert foreign == [], first_demo.stdout
    assert "Traceback" not in first_demo.stderr, first_demo.stderr


def test_plain_python_line_reads_as_a_success(first_demo: DemoRun) -> None:
    line = next(line for line in first_demo.stdout.splitlines() if line.startswith("plain python: "))
    assert "nothing known" not in line
    assert "sessions are durable records" in line and "context variables follow threads" in line


def test_printed_commands_reach_a_store_that_is_not_the_default(first_demo: DemoRun) -> None:
    assert first_demo.returncode == 0, first_demo.stderr
    show = first_demo.command("see it:")
    assert show[:2] == ["--store", str(first_demo.store_path)]
    session_id = show[-1]
    out = io.StringIO()
    assert cli_main(show, out=out) == 0  # run as printed: it shows the session just recorded
    assert "research" in out.getvalue() and "summarize" in out.getvalue()
    assert first_demo.command("continue it:") == [*show[:2], "demo", "--session", session_id]
    assert f"recorded in {first_demo.store_path} (" in first_demo.stdout


def test_the_default_store_needs_no_store_option(isolated_home: Path) -> None:
    assert follow_up_lines(openprogram.open_store(), "s1") == [
        "see it:      openprogram show s1",
        "continue it: openprogram demo --session s1",
    ]


def test_a_store_set_by_openprogram_store_is_the_default(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "elsewhere.db"
    monkeypatch.setenv("OPENPROGRAM_STORE", f"sqlite:///{path}")
    assert follow_up_lines(openprogram.open_store(path), "s1")[0] == "see it:      openprogram show s1"
    monkeypatch.delenv("OPENPROGRAM_STORE")
    assert follow_up_lines(openprogram.open_store(path), "s1")[0] == f"see it:      openprogram --store {path} show s1"


def test_a_memory_store_promises_no_later_command() -> None:
    lines = follow_up_lines(openprogram.open_store("memory://demo"), "s1")
    assert lines == ["see it:      not after this process: a memory:// store is gone when it exits"]


def _demo(store: Path, *words: str) -> subprocess.CompletedProcess[str]:
    env = python_env(OPENPROGRAM_HOME=str(store.parent / "home"))
    command = [*openprogram_command(), "--store", str(store), "demo", *words]
    return subprocess.run(command, env=env, capture_output=True, text=True, check=False, timeout=300)


def test_a_demo_of_the_plain_agent_alone_runs_nothing_else(tmp_path: Path) -> None:
    store_path = tmp_path / "plain.db"
    first = _demo(store_path, "plain")
    assert first.returncode == 0, first.stderr
    lines = first.stdout.splitlines()
    assert [line.split(" ")[0] for line in lines] == ["new", "plain", "recorded", "see", "continue"], lines
    store = openprogram.open_store(store_path)
    (session,) = store.list_sessions()
    assert {c.framework for c in store.list_calls(session.session_id)} == {None}
    # a named demo continues a session as the whole demo does
    again = _demo(store_path, "--session", session.session_id, "plain")
    assert again.returncode == 0, again.stderr
    assert again.stdout.startswith(f"continuing session {session.session_id}")
    assert len([c for c in store.list_calls(session.session_id) if c.kind == "turn"]) == 2


def test_an_unknown_framework_name_is_a_usage_error(tmp_path: Path) -> None:
    store_path = tmp_path / "none.db"
    result = _demo(store_path, "langgraph", "langgrpah")
    assert result.returncode == 2 and result.stdout == ""
    assert "unknown framework 'langgrpah' (choose from: plain, langgraph, langchain, crewai," in result.stderr
    assert not store_path.exists()  # nothing ran


def test_demo_session_takes_the_unique_start_of_an_id_as_show_does(tmp_path: Path) -> None:
    store_path = tmp_path / "prefix.db"
    assert _demo(store_path, "plain").returncode == 0
    store = openprogram.open_store(store_path)
    (session,) = store.list_sessions()
    again = _demo(store_path, "--session", session.session_id[:6], "plain")
    assert again.returncode == 0, again.stderr
    assert again.stdout.startswith(f"continuing session {session.session_id}")
    assert [s.session_id for s in store.list_sessions()] == [session.session_id]  # no session named by the start
    fresh = _demo(store_path, "--session", "zz-new", "plain")  # a start no session has: a new session of that id
    assert fresh.returncode == 0 and fresh.stdout.startswith("new session zz-new"), fresh.stdout

"""``openprogram demo`` with its frameworks installed, through the command in a subprocess, as a user runs it.

Here rather than in tests/core (whose nox session installs no framework): the viewer's session installs
every framework, and the demo records the sessions a newcomer first opens in the viewer.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import openprogram
import pytest
from openprogram.integrations import ALIASES, DEMOS

#: the names of other demos' lines
OTHER_LINES = ("crewai", "semantic_kernel", "pydantic_ai", "openai_agents")
STARTING = ": starting (importing the framework, then running its offline agent)..."


def _env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENPROGRAM_", "CREWAI_", "OTEL_"))}
    env["OPENPROGRAM_HOME"] = str(home)
    return env


def _command(store: Path, *words: str) -> list[str]:
    return [sys.executable, "-m", "openprogram", "--store", str(store), "demo", *words]


@pytest.fixture(scope="module")
def watched_demo(tmp_path_factory: pytest.TempPathFactory) -> list[tuple[float, str]]:
    """The whole demo read through a pipe as a person watching it would: each line with its arrival time."""
    root = tmp_path_factory.mktemp("watched-demo")
    arrivals: list[tuple[float, str]] = []
    started = time.monotonic()
    with (root / "stderr.txt").open("w") as stderr:
        process = subprocess.Popen(
            _command(root / "demo.db"), env=_env(root / "home"), stdout=subprocess.PIPE, stderr=stderr, text=True
        )
        assert process.stdout is not None
        for line in process.stdout:
            arrivals.append((time.monotonic() - started, line.rstrip("\n")))
        assert process.wait(timeout=600) == 0, (root / "stderr.txt").read_text()
    return arrivals


def test_each_framework_is_announced_before_its_slow_import(watched_demo: list[tuple[float, str]]) -> None:
    lines = [line for _, line in watched_demo]
    assert lines[0].startswith("new session ") and lines[1].startswith("plain python: ")
    starting = [i for i, line in enumerate(lines) if line.endswith(STARTING)]
    names = [lines[i].split(":")[0] for i in starting]
    assert [ALIASES.get(name, name) for name in names] == list(DEMOS)  # every demo, in the registry's order
    for i, name in zip(starting, names, strict=True):
        assert lines[i + 1].startswith(name), (name, lines[i + 1])  # its own lines follow its announcement
    # Importing CrewAI (lancedb...) takes seconds: its line is on the screen while that happens, not after.
    crew = starting[names.index("crewai")]
    assert watched_demo[crew + 1][0] - watched_demo[crew][0] > 0.5, watched_demo[crew : crew + 2]


def test_a_demo_of_one_framework_runs_only_it(tmp_path: Path) -> None:
    store_path = tmp_path / "one.db"
    command = _command(store_path, "langgraph")
    result = subprocess.run(
        command, env=_env(tmp_path / "home"), capture_output=True, text=True, timeout=300, check=False
    )
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[1] == "langgraph" + STARTING and lines[2].startswith("langgraph: agent paused")
    others = ("plain python", *OTHER_LINES)
    assert [line for line in lines if line.startswith(others)] == []
    store = openprogram.open_store(store_path)
    (session,) = store.list_sessions()
    calls = store.list_calls(session.session_id)
    assert {c.framework for c in calls} == {"langgraph", None}  # None: the turn, and openprogram's own @tool
    assert not {"research", "summarize", "fetch"} & {c.name for c in calls}  # the plain-Python agent did not run

"""``instrument()`` imports no framework: each is patched when the program imports it.

Run in fresh interpreters with every framework installed, so what is imported is
exactly what the program asked for.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytest.importorskip("langgraph", reason="needs openprogram[langgraph]")
pytest.importorskip("crewai", reason="needs openprogram[crewai]")
pytest.importorskip("semantic_kernel", reason="needs openprogram[semantic-kernel]")

FRAMEWORKS = ("langgraph", "langchain_core", "crewai", "semantic_kernel")


def _run(code: str, home: Path) -> dict[str, object]:
    env = {"HOME": str(home), "OPENPROGRAM_HOME": str(home / "op"), "PATH": "/usr/bin:/bin"}
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], check=False, env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    result: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def test_instrument_imports_no_framework_and_creates_nothing_in_home(tmp_path: Path) -> None:
    result = _run(
        f"""
        import json, sys
        import openprogram
        enabled = openprogram.instrument()
        print(json.dumps({{"enabled": sorted(enabled), "imported": [m for m in {FRAMEWORKS!r} if m in sys.modules]}}))
        """,
        tmp_path,
    )
    assert {"crewai", "langgraph", "semantic_kernel"} <= set(result["enabled"])  # and any other installed adapter
    assert result["imported"] == []
    assert not (tmp_path / ".config").exists() and not (tmp_path / ".local").exists()  # crewai was not imported


def test_a_langgraph_only_program_imports_only_langgraph_and_is_recorded(tmp_path: Path) -> None:
    result = _run(
        """
        import json, sys
        import openprogram
        openprogram.instrument()
        from typing import TypedDict
        from langgraph.graph import StateGraph

        class State(TypedDict):
            n: int

        builder = StateGraph(State)
        builder.add_node("double", lambda s: {"n": s["n"] * 2})
        builder.set_entry_point("double")
        graph = builder.compile()
        store = openprogram.open_store("memory://")
        with openprogram.session_context(store=store) as h:
            out = graph.invoke({"n": 2})
        openprogram.flush()
        kinds = sorted({(c.kind, c.name) for c in store.list_calls(h.session_id)})
        print(json.dumps({"out": out, "kinds": kinds,
                           "imported": [m for m in ("crewai", "semantic_kernel") if m in sys.modules]}))
        """,
        tmp_path,
    )
    assert result["out"] == {"n": 4}
    assert ["node", "double"] in result["kinds"] and ["graph", "LangGraph"] in result["kinds"]
    assert result["imported"] == []


def test_uninstrument_cancels_the_pending_hooks(tmp_path: Path) -> None:
    result = _run(
        """
        import json
        import openprogram
        openprogram.instrument()
        openprogram.uninstrument()
        from crewai import Crew
        print(json.dumps({"patched": hasattr(Crew.kickoff, "__openprogram_original__"),
                          "instrumented": sorted(openprogram.instrumented())}))
        """,
        tmp_path,
    )
    assert result == {"patched": False, "instrumented": []}

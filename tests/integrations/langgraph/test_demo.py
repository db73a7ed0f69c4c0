"""``openprogram demo``'s LangGraph agent runs offline and ``openprogram show`` draws its tree."""

from __future__ import annotations

import io
from typing import Any

import openprogram
from openprogram._cli import main
from openprogram.integrations.langgraph.demo import run_demo

from tests.support import by_kind, calls


def test_demo_agent_records_tools_loop_and_interrupt(store: Any) -> None:
    lines: list[str] = []
    with openprogram.session_context(store=store) as h:
        run_demo(lines.append)
    assert any("paused" in line for line in lines) and any("approved" in line for line in lines)
    records = calls(store, h.session_id)
    graphs = by_kind(records, "graph")
    assert [(g.name, g.status) for g in graphs] == [("demo_agent", "interrupted"), ("demo_agent", "ok")]
    assert [n.name for n in by_kind(records, "node")] == ["agent", "tools", "agent", "review", "review"]
    tools_node = next(n for n in by_kind(records, "node") if n.name == "tools")
    assert sorted(t.name for t in by_kind(records, "tool")) == ["note", "population", "weather"]
    assert {t.parent_id for t in by_kind(records, "tool")} == {tools_node.call_id}
    assert [i.status for i in by_kind(records, "interrupt")] == ["interrupted", "ok"]


def test_cli_demo_and_show_draw_the_langgraph_tree(tmp_path: Any) -> None:
    url = f"sqlite:///{tmp_path / 'demo.db'}"
    out = io.StringIO()
    assert main(["--store", url, "demo"], out=out) == 0
    session_id = next(line.split()[-1] for line in out.getvalue().splitlines() if line.startswith("see it:"))
    shown = io.StringIO()
    assert main(["--store", url, "show", session_id], out=shown) == 0
    tree = shown.getvalue()
    for fragment in (
        "graph demo_agent (langgraph) [interrupted]",
        "node tools (langgraph) [ok]",
        "tool weather (langgraph) [ok]",
        "interrupt review (langgraph) [ok]",
    ):
        assert fragment in tree, tree


def test_a_continued_demo_agent_is_given_the_history_and_says_what_it_was_asked(store: Any) -> None:
    with openprogram.session_context(store=store) as first:
        run_demo([].append)
    lines: list[str] = []
    with openprogram.session_context(first.session_id, store=store):
        run_demo(lines.append)
    draft = next(line for line in lines if "paused" in line)
    assert "You asked me before: 'Weather in Paris, population of Oslo?'" in draft, lines
    continued = by_kind(calls(store, first.session_id), "llm")[2]  # the second turn's first request
    turn = ["user", "assistant", "tool", "tool", "tool", "assistant"]
    assert [m["role"] for m in continued.inputs["messages"]] == [*turn, "user"]
    assert len(openprogram.history(first.session_id, store=store, agent="demo_agent")) == 12

"""A graph run's call ends where LangGraph ends the run: completed, failed after its loop, closed or dropped early."""

from __future__ import annotations

import collections.abc
import gc
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import openprogram
import pytest
from langgraph.errors import GraphRecursionError
from langgraph.graph import StateGraph

from tests.integrations.langgraph.fakes import Log, chain_graph
from tests.support import by_kind, calls, one


def _endless() -> Any:
    g = StateGraph(Log)
    g.add_node("again", lambda state: {"log": ["again"]})
    g.set_entry_point("again")
    g.add_edge("again", "again")
    return g.compile()


@pytest.mark.parametrize("mode", ["sync", "async"])
async def test_a_run_past_the_recursion_limit_records_langgraphs_error(store: Any, mode: str) -> None:
    # LangGraph raises GraphRecursionError after its loop has ended: the graph call still fails with it.
    graph = _endless()
    async with openprogram.session_context(store=store) as h:
        with pytest.raises(GraphRecursionError):
            if mode == "sync":
                graph.invoke({"log": []}, {"recursion_limit": 3})
            else:
                await graph.ainvoke({"log": []}, {"recursion_limit": 3})
    records = calls(store, h.session_id)
    graph_call = one(records, "LangGraph", "graph")
    assert graph_call.status == "error" and graph_call.error.startswith("GraphRecursionError")
    assert [n.parent_id for n in by_kind(records, "node")] == [graph_call.call_id] * 3


@pytest.mark.parametrize("how", ["closed", "dropped"])
def test_a_stream_closed_or_dropped_early_ends_its_graph_call(store: Any, how: str) -> None:
    graph = chain_graph(("a", "b", "c"))
    with openprogram.session_context(store=store) as h:
        stream = graph.stream({"log": []})
        assert isinstance(stream, collections.abc.Generator) and iter(stream) is stream
        next(stream)
        if how == "closed":
            stream.close()
        else:
            del stream
            gc.collect()
    graph_call = one(calls(store, h.session_id), "LangGraph", "graph")
    assert graph_call.status == "interrupted" and graph_call.ended_at is not None
    assert [n.name for n in by_kind(calls(store, h.session_id), "node")] == ["a"]


def test_a_finished_stream_returns_and_stays_finished(store: Any) -> None:
    graph = chain_graph(("a",))
    with openprogram.session_context(store=store) as h:
        stream = graph.stream({"log": []})
        assert list(stream) == [{"a": {"log": ["a"]}}]
        assert list(stream) == []
        stream.close()  # finished: nothing to close
    assert one(calls(store, h.session_id), "LangGraph", "graph").status == "ok"


_LATER_IMPORT = textwrap.dedent(
    """
    import json, sys
    import openprogram
    openprogram.instrument()
    imported = sorted(m for m in sys.modules if m.startswith(("langgraph", "langchain")))
    import langgraph.graph
    from langgraph.func import entrypoint

    @entrypoint()
    def double(n: int) -> int:
        return 2 * n

    store = openprogram.open_store("memory://")
    with openprogram.session_context(store=store) as h:
        out = double.invoke(2)
    openprogram.flush()
    recorded = sorted([c.kind, c.name] for c in store.list_calls(h.session_id))
    print(json.dumps({"imported": imported, "out": out, "calls": recorded}))
    """
)


def test_instrument_imports_no_langgraph_and_a_graph_built_after_importing_it_is_recorded(isolated_home: Path) -> None:
    env = {**os.environ, "OPENPROGRAM_HOME": str(isolated_home)}
    done = subprocess.run(
        [sys.executable, "-c", _LATER_IMPORT], capture_output=True, text=True, env=env, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["imported"] == []
    assert result["out"] == 4
    assert result["calls"] == [["graph", "double"], ["node", "double"], ["turn", "main"]]

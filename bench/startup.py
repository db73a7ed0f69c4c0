"""Start-up: a LangGraph-only program with every framework installed, with and without openprogram.

Each sample is a fresh interpreter that imports LangGraph and compiles a one-node
graph; the instrumented one calls ``openprogram.instrument()`` first. Samples are
interleaved; the report gives medians, the ratio, and which other frameworks the
instrumented program ended up importing (``instrument()`` should import none).

    python bench/startup.py [--rounds 15]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

PROGRAM = """
import json, sys
{prelude}
from typing import TypedDict
from langgraph.graph import StateGraph

class State(TypedDict):
    n: int

builder = StateGraph(State)
builder.add_node("double", lambda s: {{"n": s["n"] * 2}})
builder.set_entry_point("double")
builder.compile()
print(json.dumps([m for m in ("crewai", "semantic_kernel") if m in sys.modules]))
"""

VARIANTS = {
    "langgraph alone": "",
    "openprogram.instrument() first": "import openprogram\nopenprogram.instrument()",
}


def _sample(prelude: str, home: str) -> tuple[float, list[str]]:
    env = dict(os.environ, HOME=home, OPENPROGRAM_HOME=os.path.join(home, "op"))
    started = time.perf_counter()
    out = subprocess.run(
        [sys.executable, "-c", PROGRAM.format(prelude=prelude)], env=env, check=True, capture_output=True, text=True
    ).stdout
    return time.perf_counter() - started, json.loads(out.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=15)
    args = parser.parse_args()
    times: dict[str, list[float]] = {name: [] for name in VARIANTS}
    imported: dict[str, list[str]] = {}
    with tempfile.TemporaryDirectory() as home:
        for prelude in VARIANTS.values():
            _sample(prelude, home)  # warm the file cache
        for r in range(args.rounds):
            order = list(VARIANTS)[r % 2 :] + list(VARIANTS)[: r % 2]
            for name in order:
                seconds, modules = _sample(VARIANTS[name], home)
                times[name].append(seconds)
                imported[name] = modules
    base = statistics.median(times["langgraph alone"])
    for name, samples in times.items():
        median = statistics.median(samples)
        others = ", ".join(imported[name]) or "none"
        print(f"{name:34s} {median * 1000:7.0f} ms  ({median / base:.2f}x)  other frameworks imported: {others}")


if __name__ == "__main__":
    main()

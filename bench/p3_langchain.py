"""The LangChain adapter's cost outside a graph: one chat model request, one tool call.

A plain LangChain program (no LangGraph imported) inside a session: ``model.invoke`` of
langchain-core's ``FakeListChatModel`` (a system and a user message, a short reply) and
``tool.invoke`` of a real ``@tool``. Each is timed uninstrumented and instrumented (recorded into
the SQLite store until durable: a burst ends with ``flush()``), the two interleaved in the same
run, CPU time of the whole process (the background writer included). Figures: the cost a request
or a call adds, and the ratio to the uninstrumented one.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from collections.abc import Callable

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import openprogram

from bench._util import interleaved

N = 400  # requests (or tool calls) per timed burst
ROUNDS = 9


def _workloads() -> dict[str, Callable[[int], None]]:
    from langchain_core.language_models import FakeListChatModel
    from langchain_core.messages import HumanMessage, SystemMessage
    from langchain_core.tools import tool

    model = FakeListChatModel(responses=["Oslo is the capital of Norway."])
    prompt = [SystemMessage("You answer in one sentence."), HumanMessage("What is the capital of Norway?")]

    @tool
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    def requests(n: int) -> None:
        for _ in range(n):
            model.invoke(prompt)

    def tool_calls(n: int) -> None:
        for i in range(n):
            add.invoke({"a": i, "b": 1})

    return {"chat model request": requests, "tool call": tool_calls}


def _sample(run: Callable[[int], None], instrumented: bool) -> float:
    """CPU ns per item of one burst, until durable."""
    if instrumented:
        openprogram.instrument("langchain")
    else:
        openprogram.uninstrument("langchain")
    start = time.process_time_ns()
    run(N)
    openprogram.flush()
    return (time.process_time_ns() - start) / N


def main() -> dict[str, tuple[float, float]]:
    os.environ.setdefault("OPENPROGRAM_HOME", tempfile.mkdtemp(prefix="op-bench-"))
    workloads = _workloads()
    figures: dict[str, tuple[float, float]] = {}
    with openprogram.session_context():
        for name, run in workloads.items():
            for instrumented in (False, True, False, True):  # warm up: caches, the store, the writer
                _sample(run, instrumented)
            medians = interleaved(
                {"plain": lambda run=run: _sample(run, False), "openprogram": lambda run=run: _sample(run, True)},
                rounds=ROUNDS,
            )
            plain, recorded = medians["plain"], medians["openprogram"]
            figures[name] = (plain, recorded)
            print(
                f"{name}: uninstrumented {plain / 1000:.1f} us, instrumented {recorded / 1000:.1f} us "
                f"(+{(recorded - plain) / 1000:.1f} us, {recorded / plain:.2f}x)"
            )
    openprogram.uninstrument()
    return figures


if __name__ == "__main__":
    main()

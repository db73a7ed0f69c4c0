"""Benchmark P3: the LangGraph adapter's overhead on an offline agent run.

A 10-node graph (a scripted agent asking for 3 tools at once, a ToolNode that
runs them in parallel, then 8 plain nodes), 100 runs per sample, measured in
one process with the five setups interleaved: uninstrumented, openprogram
(``instrument("langgraph")`` inside a ``session_context`` on a SQLite store,
flushed inside the timed region), OpenInference's ``LangChainInstrumentor``
(in-memory span exporter), and the floor (``_floor.py``: one run's record
replayed without hooks, the figure the target is set against; and the floor in
place, its values encoded where the run has them). Medians over the repetitions;
ratios printed.

    python bench/p3_langgraph.py [--repeats 15] [--runs 100]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from typing import Any


def build_graph() -> Any:
    import operator
    from functools import partial
    from typing import Annotated, TypedDict

    from _floor import point
    from langchain_core.language_models import BaseChatModel
    from langchain_core.messages import AIMessage, AnyMessage, BaseMessage
    from langchain_core.outputs import ChatGeneration, ChatResult
    from langchain_core.tools import tool
    from langgraph.graph import END, START, StateGraph
    from langgraph.graph.message import add_messages
    from langgraph.prebuilt import ToolNode

    reply = AIMessage(
        "",
        tool_calls=[
            {"name": "weather", "args": {"city": "Paris"}, "id": "c1", "type": "tool_call"},
            {"name": "population", "args": {"city": "Oslo"}, "id": "c2", "type": "tool_call"},
            {"name": "distance", "args": {"a": "Paris", "b": "Oslo"}, "id": "c3", "type": "tool_call"},
        ],
    )

    class Scripted(BaseChatModel):
        @property
        def _llm_type(self) -> str:
            return "scripted"

        def _generate(
            self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kwargs: Any
        ) -> ChatResult:
            point()
            return ChatResult(generations=[ChatGeneration(message=reply)])

    @tool
    def weather(city: str) -> str:
        """Weather in a city."""
        point()
        return f"sunny in {city}"

    @tool
    def population(city: str) -> int:
        """Population of a city."""
        point()
        return len(city) * 100_000

    @tool
    def distance(a: str, b: str) -> float:
        """Distance between two cities."""
        point()
        return float(len(a) + len(b)) * 100

    def step(index: int, state: dict[str, Any]) -> dict[str, Any]:
        point()
        return {"steps": [index]}

    model = Scripted()
    State = TypedDict(  # noqa: UP013
        "State", {"messages": Annotated[list[AnyMessage], add_messages], "steps": Annotated[list[int], operator.add]}
    )

    def agent(state: dict[str, Any]) -> dict[str, Any]:
        point()
        return {"messages": [model.invoke(state["messages"])]}

    g = StateGraph(State)
    g.add_node("agent", agent)
    g.add_node("tools", ToolNode([weather, population, distance]))
    g.add_edge(START, "agent")
    g.add_edge("agent", "tools")
    previous = "tools"
    for i in range(8):
        name = f"step_{i}"
        g.add_node(name, partial(step, i))
        g.add_edge(previous, name)
        previous = name
    g.add_edge(previous, END)
    return g.compile()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--runs", type=int, default=100)
    args = parser.parse_args(argv)

    home = tempfile.mkdtemp(prefix="openprogram-bench-")
    os.environ["OPENPROGRAM_HOME"] = home
    import logging

    logging.getLogger("openprogram").setLevel(logging.ERROR)
    import openprogram
    from _floor import Floor, verdict
    from _util import writer_cpu
    from langchain_core.messages import HumanMessage
    from openinference.instrumentation.langchain import LangChainInstrumentor
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    graph = build_graph()
    inputs = {"messages": [HumanMessage("weather in Paris, population of Oslo, distance?")], "steps": []}
    store = openprogram.open_store(f"sqlite:///{home}/bench.db")
    floor = Floor.of("langgraph", lambda: graph.invoke(inputs), home)
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    oi = LangChainInstrumentor()

    def runs() -> None:
        for _ in range(args.runs):
            graph.invoke(inputs)

    def baseline() -> None:
        runs()

    def ours() -> None:
        openprogram.instrument("langgraph")
        try:
            with openprogram.session_context(store=store):  # flushes on exit: durable, inside the timing
                runs()
        finally:
            openprogram.uninstrument()

    def openinference() -> None:
        oi.instrument(tracer_provider=provider)
        try:
            runs()
        finally:
            oi.uninstrument()
            exporter.clear()

    setups: dict[str, Callable[[], None]] = {
        "uninstrumented": baseline,
        "openprogram": ours,
        "openinference": openinference,
        "floor": lambda: floor.cost(args.runs),
        "floor in place": lambda: floor.in_place(args.runs),
    }
    for fn in setups.values():  # warm-up: imports, caches, first-time wrapper setup
        fn()
    samples: dict[str, list[float]] = {name: [] for name in setups}
    cpu: dict[str, list[float]] = {name: [] for name in setups}
    writer: dict[str, list[float]] = {name: [] for name in setups}
    order = list(setups)
    for rep in range(args.repeats):
        for name in order[rep % len(order) :] + order[: rep % len(order)]:  # rotate: no setup always runs first
            started, started_cpu, started_writer = time.perf_counter(), time.process_time(), writer_cpu()
            setups[name]()
            samples[name].append(time.perf_counter() - started)
            cpu[name].append(time.process_time() - started_cpu)  # all threads, incl. the writer
            writer[name].append(writer_cpu() - started_writer)

    # Check the run really was recorded: 1 graph + 10 nodes + 3 tools per run.
    openprogram.flush()
    session = max(store.list_sessions(), key=lambda s: s.updated_at)
    recorded = store.list_calls(session.session_id)
    per_run = (len(recorded) - 1) / args.runs

    print(
        f"P3 LangGraph: {args.runs} runs x {args.repeats} repeats, 10 nodes + 3 parallel tools per run "
        f"(python {sys.version.split()[0]}, {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f})"
    )
    for label, table in (("wall", samples), ("cpu", cpu)):
        median = {name: statistics.median(values) for name, values in table.items()}
        base = median["uninstrumented"]
        for name, value in median.items():
            print(
                f"  {label:4s} {name:15s} median {value * 1000:8.1f} ms  per run {value / args.runs * 1e6:8.1f} us"
                f"  ratio {value / base:6.3f}"
            )
    print(f"  floor: {floor.describe()}")
    median = {name: statistics.median(values) for name, values in cpu.items()}
    base = median["uninstrumented"]
    print(
        "  cpu  "
        + verdict(
            median["openprogram"] / base - 1,
            median["floor"] / base,
            "OpenInference",
            median["openinference"] / base - 1,
            statistics.median(writer["openprogram"]) / base,
            median["floor in place"] / base - 1,
        )
    )
    print(f"  calls recorded a run: {per_run:.1f} (expected 15: 1 graph, 10 nodes, 1 model call, 3 tools)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

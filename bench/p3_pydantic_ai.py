"""Benchmark P3: overhead of the Pydantic AI adapter on offline agent runs (standalone).

    python bench/p3_pydantic_ai.py [--runs 20] [--rounds 30]

Workload: one agent run whose (scripted, zero-latency) ``FunctionModel`` asks for 3 tool
calls in one response — Pydantic AI runs them concurrently, the sync one in its worker
thread — and then answers: 2 model requests, 3 tool calls. A sample is ``--runs`` runs on
one event loop; the seven modes are interleaved sample by sample in one process (order
shuffled per round) and compared by the median of their per-run times over ``--rounds``:

- ``plain``: not instrumented;
- ``openprogram``: ``openprogram.instrument("pydantic_ai")``, the sample inside one
  ``session_context`` on a SQLite store, which flushes on exit (durable, inside the
  timing): 6 calls recorded per run (agent, 2 llm, 3 tool);
- ``pydantic_ai_otel``: Pydantic AI's own Logfire/OpenTelemetry instrumentation
  (``Agent.instrument_all(InstrumentationSettings(tracer_provider=...))``, what
  ``agent.instrument = ...`` does for one agent) with an OpenTelemetry SDK tracer provider
  exporting synchronously to an in-memory exporter: 6 spans per run;
- ``empty_capability``: a capability with no hooks passed to each run, nothing recorded: what
  Pydantic AI itself charges a run for any capability added to it (openprogram adds two: its hooks,
  outermost, and one innermost that sees each request as history processors left it);
- ``passing_capability``: a capability with openprogram's four hooks (model request, tool
  validation, tool execution, output processing), outermost, each passing straight through:
  what Pydantic AI charges for the hooks openprogram's capability uses;
- ``floor``: one run's record replayed without hooks (``_floor.py``), the figure the target is
  set against;
- ``floor_in_place``: plain runs with the floor's values encoded where the run has them (its
  tools and model function), its rows stored after, as the floor stores them.

Prints the median wall time and process CPU time (all threads, openprogram's writer
included) per run of each mode and the ratios to ``plain``; on a shared machine the CPU
figure is the steadier one. Target: openprogram's overhead within 1.5x of the floor, and below
Pydantic AI's own instrumentation.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import statistics
import sys
import tempfile
import time
from typing import Any

os.environ.setdefault("OPENPROGRAM_HOME", tempfile.mkdtemp(prefix="openprogram_p3_"))

TOOLS = ("lookup", "convert", "rank")


def build_agent() -> Any:
    from _floor import point
    from pydantic_ai import Agent
    from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
    from pydantic_ai.models.function import AgentInfo, FunctionModel
    from pydantic_ai.usage import RequestUsage

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        point()
        if len(messages) == 1:  # the prompt: ask for the three tools at once
            parts: list[Any] = [
                ToolCallPart(name, {"key": f"k{n}"}, tool_call_id=f"c{n}") for n, name in enumerate(TOOLS)
            ]
        else:
            parts = [TextPart("all three done")]
        return ModelResponse(parts=parts, usage=RequestUsage(input_tokens=20 * len(messages), output_tokens=12))

    agent = Agent(FunctionModel(respond, model_name="bench-model"), name="bench", instructions="Use the tools.")

    @agent.tool_plain
    async def lookup(key: str) -> str:
        point()
        return f"value of {key}"

    @agent.tool_plain
    async def convert(key: str) -> str:
        point()
        return key.upper()

    @agent.tool_plain
    def rank(key: str) -> int:  # a sync tool: Pydantic AI runs it in a worker thread
        point()
        return len(key)

    return agent


def _empty_capability() -> Any:
    from dataclasses import dataclass

    from pydantic_ai.capabilities import AbstractCapability

    @dataclass
    class Empty(AbstractCapability[Any]):
        """No hooks, no tools, no instructions."""

    return Empty()


def _passing_capability() -> Any:
    from dataclasses import dataclass

    from pydantic_ai.capabilities import AbstractCapability, CapabilityOrdering

    @dataclass
    class Passing(AbstractCapability[Any]):
        """openprogram's hooks, each handing straight on."""

        def get_ordering(self) -> Any:
            return CapabilityOrdering(position="outermost")

        async def wrap_model_request(self, ctx: Any, *, request_context: Any, handler: Any) -> Any:
            return await handler(request_context)

        async def wrap_tool_validate(self, ctx: Any, *, call: Any, tool_def: Any, args: Any, handler: Any) -> Any:
            return await handler(args)

        async def wrap_tool_execute(self, ctx: Any, *, call: Any, tool_def: Any, args: Any, handler: Any) -> Any:
            return await handler(args)

        async def wrap_output_process(self, ctx: Any, *, output_context: Any, output: Any, handler: Any) -> Any:
            return await handler(output)

    return Passing()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20, help="runs per sample")
    parser.add_argument("--rounds", type=int, default=30, help="samples per mode")
    parser.add_argument("--seed", type=int, default=3)
    args = parser.parse_args()

    import openprogram
    from _floor import Floor, verdict
    from _util import writer_cpu

    try:
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
        from pydantic_ai import Agent
        from pydantic_ai.models.instrumented import InstrumentationSettings
    except ImportError as exc:
        print(f"p3: needs pydantic-ai-slim and opentelemetry-sdk ({exc})", file=sys.stderr)
        return 2

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    otel = InstrumentationSettings(tracer_provider=provider)
    home = os.environ["OPENPROGRAM_HOME"]
    store = openprogram.open_store(f"sqlite:///{home}/bench.db")
    agent = build_agent()
    floor_agent = build_agent()
    floor = Floor.of("pydantic_ai", lambda: floor_agent.run("go"), home)
    loop = asyncio.new_event_loop()
    empty, passing = _empty_capability(), _passing_capability()
    times: dict[str, list[float]] = {
        "plain": [],
        "openprogram": [],
        "pydantic_ai_otel": [],
        "empty_capability": [],
        "passing_capability": [],
        "floor": [],
        "floor_in_place": [],
    }
    cpus: dict[str, list[float]] = {name: [] for name in times}
    writers: dict[str, list[float]] = {name: [] for name in times}  # the writer thread's CPU

    def runs(capabilities: Any = None) -> None:
        for _ in range(args.runs):
            loop.run_until_complete(agent.run("go", capabilities=capabilities))

    def timed(name: str, sample: Any) -> None:
        start, cpu, started_writer = time.perf_counter(), time.process_time(), writer_cpu()
        sample()
        times[name].append((time.perf_counter() - start) / args.runs)
        cpus[name].append((time.process_time() - cpu) / args.runs)
        writers[name].append((writer_cpu() - started_writer) / args.runs)

    def in_session() -> None:
        with openprogram.session_context(store=store):  # flushes on exit: durable, inside the timing
            runs()

    # Switching a mode on patches a class (or sets a class attribute), which invalidates CPython's
    # attribute caches: a program switches once at start-up, so the switch stays outside the timed region.
    def run_plain() -> None:
        timed("plain", runs)

    def run_openprogram() -> None:
        openprogram.instrument("pydantic_ai")
        try:
            timed("openprogram", in_session)
        finally:
            openprogram.uninstrument("pydantic_ai")

    def run_otel() -> None:
        Agent.instrument_all(otel)
        try:
            timed("pydantic_ai_otel", runs)
        finally:
            Agent.instrument_all(False)
            exporter.clear()

    def run_empty() -> None:
        timed("empty_capability", lambda: runs([empty]))

    def run_passing() -> None:
        timed("passing_capability", lambda: runs([passing]))

    def run_floor() -> None:
        timed("floor", lambda: floor.cost(args.runs))

    def floor_in_place() -> None:
        with floor.encoding_at_points():
            runs()
        floor.store(args.runs)

    def run_floor_in_place() -> None:
        timed("floor_in_place", floor_in_place)

    modes = {
        "plain": run_plain,
        "openprogram": run_openprogram,
        "pydantic_ai_otel": run_otel,
        "empty_capability": run_empty,
        "passing_capability": run_passing,
        "floor": run_floor,
        "floor_in_place": run_floor_in_place,
    }
    for _ in range(2):  # warm-up (imports, schema caches), not measured
        for fn in modes.values():
            fn()
    for values in (*times.values(), *cpus.values(), *writers.values()):
        values.clear()

    rng = random.Random(args.seed)
    for _ in range(args.rounds):
        order = list(modes)
        rng.shuffle(order)
        for name in order:
            modes[name]()
    loop.close()

    openprogram.flush()
    recorded = sum(len(store.list_calls(s.session_id)) for s in store.list_sessions())
    medians = {name: statistics.median(values) for name, values in times.items()}
    cpu_medians = {name: statistics.median(values) for name, values in cpus.items()}
    base, cpu_base = medians["plain"], cpu_medians["plain"]
    print(
        f"P3 pydantic_ai: {args.rounds} interleaved samples of {args.runs} runs per mode, "
        "2 model requests + 3 parallel tools a run (median per run)"
    )
    print(f"  {'mode':18s} {'wall':>9s}  {'ratio':>6s}  {'cpu (all threads)':>17s}  {'ratio':>6s}")
    for name, value in medians.items():
        cpu = cpu_medians[name]
        print(f"  {name:18s} {value * 1000:6.2f} ms  x{value / base:.3f}  {cpu * 1000:14.2f} ms  x{cpu / cpu_base:.3f}")
    print(
        f"  openprogram overhead: wall {(medians['openprogram'] / base - 1) * 100:+.1f}%, "
        f"cpu {(cpu_medians['openprogram'] / cpu_base - 1) * 100:+.1f}%  "
        f"(pydantic_ai's own OTel: wall {(medians['pydantic_ai_otel'] / base - 1) * 100:+.1f}%, "
        f"cpu {(cpu_medians['pydantic_ai_otel'] / cpu_base - 1) * 100:+.1f}%)"
    )
    print(
        f"  Pydantic AI's own cost of a capability: with no hooks "
        f"cpu {(cpu_medians['empty_capability'] / cpu_base - 1) * 100:+.1f}%, with openprogram's hooks passing "
        f"straight through cpu {(cpu_medians['passing_capability'] / cpu_base - 1) * 100:+.1f}%"
    )
    print(f"  floor: {floor.describe()}")
    print(
        "  cpu  "
        + verdict(
            cpu_medians["openprogram"] / cpu_base - 1,
            cpu_medians["floor"] / cpu_base,
            "Pydantic AI's OTel",
            cpu_medians["pydantic_ai_otel"] / cpu_base - 1,
            statistics.median(writers["openprogram"]) / cpu_base,
            cpu_medians["floor_in_place"] / cpu_base - 1,
        )
    )
    print(f"  calls recorded by openprogram: {recorded} over {(args.rounds + 2) * args.runs} runs")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Benchmark P3: overhead of the LlamaIndex adapter on offline agent runs (standalone).

    python bench/p3_llama_index.py [--runs 20] [--rounds 30]

Workload: one ``FunctionAgent`` run whose scripted, zero-latency function-calling LLM
(``integrations/llama_index/fakes.py``) asks for 3 tool calls in one reply — the agent runs them
as concurrent ``call_tool`` steps, the sync one in a worker thread — and then answers: 2 model
requests (streamed, the agent's default), 3 tool calls, 13 workflow steps. A sample is
``--runs`` runs on one event loop; the five modes are interleaved sample by sample in one process
(order shuffled per round) and compared by the median of their per-run times over ``--rounds``:

- ``plain``: not instrumented;
- ``openprogram``: ``openprogram.instrument("llama_index")``, the sample inside one
  ``session_context`` on a SQLite store, which flushes on exit (durable, inside the timing):
  one ``agent`` call, its ``node`` per step, 2 ``llm`` and 3 ``tool`` calls per run;
- ``llama_index_otel``: LlamaIndex's own OpenTelemetry integration
  (``llama-index-observability-otel``'s ``LlamaIndexOpenTelemetry(...).start_registering()``:
  a span handler and an event handler on the root instrumentation dispatcher) with a simple span
  processor exporting synchronously to an in-memory exporter;
- ``floor``: one run's record replayed without hooks (``_floor.py``), the figure the target is
  set against;
- ``floor_in_place``: plain runs with the floor's values encoded where the run has them (its
  tools and its model), its rows stored after, as the floor stores them.

Prints the median wall time and process CPU time (all threads, openprogram's writer included)
per run of each mode and the ratios to ``plain``. Target: openprogram's overhead within 1.5x of
the floor, and below LlamaIndex's own OpenTelemetry tracing.
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
    from llama_index.core.agent.workflow import FunctionAgent
    from openprogram.integrations.llama_index.fakes import scripted_llm

    class Answering:
        """Each run: ask for the three tools at once, then answer (the scripted LLM's script, replayed)."""

        def __init__(self) -> None:
            self.llm = scripted_llm([], model="bench-model")

        def reset(self) -> Any:
            point()
            self.llm.script = [[(name, {"key": f"k{n}"}) for n, name in enumerate(TOOLS)]]
            self.llm.final = "all three done"
            self.llm._answered = 0  # the fake's own counter: a fresh script each run
            self.llm._requests.clear()
            return self.llm

    async def lookup(key: str) -> str:
        """Look a key up."""
        point()
        return f"value of {key}"

    async def convert(key: str) -> str:
        """Convert a key."""
        point()
        return key.upper()

    def rank(key: str) -> int:  # a sync tool: LlamaIndex runs it in a worker thread
        """Rank a key."""
        point()
        return len(key)

    model = Answering()
    agent = FunctionAgent(
        name="bench",
        description="Uses the tools.",
        system_prompt="Use the tools.",
        tools=[lookup, convert, rank],
        llm=model.reset(),
    )

    async def one() -> Any:
        model.reset()
        return await agent.run(user_msg="go")

    return one


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
        from llama_index.core.instrumentation import get_dispatcher
        from llama_index.observability.otel import LlamaIndexOpenTelemetry
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    except ImportError as exc:
        print(f"p3: needs llama-index-core, llama-index-observability-otel, opentelemetry-sdk ({exc})", file=sys.stderr)
        return 2

    exporter = InMemorySpanExporter()
    dispatcher = get_dispatcher()
    plain_handlers = (list(dispatcher.span_handlers), list(dispatcher.event_handlers))
    LlamaIndexOpenTelemetry(span_exporter=exporter, span_processor="simple").start_registering()
    otel_handlers = (list(dispatcher.span_handlers), list(dispatcher.event_handlers))
    dispatcher.span_handlers[:], dispatcher.event_handlers[:] = plain_handlers

    home = os.environ["OPENPROGRAM_HOME"]
    store = openprogram.open_store(f"sqlite:///{home}/bench.db")
    run_once = build_agent()
    floor_run = build_agent()
    floor = Floor.of("llama_index", floor_run, home)
    loop = asyncio.new_event_loop()
    times: dict[str, list[float]] = {
        "plain": [],
        "openprogram": [],
        "llama_index_otel": [],
        "floor": [],
        "floor_in_place": [],
    }
    cpus: dict[str, list[float]] = {name: [] for name in times}
    writers: dict[str, list[float]] = {name: [] for name in times}  # the writer thread's CPU

    def runs() -> None:
        for _ in range(args.runs):
            loop.run_until_complete(run_once())

    def timed(name: str, sample: Any) -> None:
        start, cpu, started_writer = time.perf_counter(), time.process_time(), writer_cpu()
        sample()
        times[name].append((time.perf_counter() - start) / args.runs)
        cpus[name].append((time.process_time() - cpu) / args.runs)
        writers[name].append((writer_cpu() - started_writer) / args.runs)

    def in_session() -> None:
        with openprogram.session_context(store=store):  # flushes on exit: durable, inside the timing
            runs()

    # Switching a mode on patches classes or handler lists: a program does it once at start-up, so
    # the switch stays outside the timed region.
    def run_plain() -> None:
        timed("plain", runs)

    def run_openprogram() -> None:
        openprogram.instrument("llama_index")
        try:
            timed("openprogram", in_session)
        finally:
            openprogram.uninstrument("llama_index")

    def run_otel() -> None:
        dispatcher.span_handlers[:], dispatcher.event_handlers[:] = otel_handlers
        try:
            timed("llama_index_otel", runs)
        finally:
            dispatcher.span_handlers[:], dispatcher.event_handlers[:] = plain_handlers
            exporter.clear()

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
        "llama_index_otel": run_otel,
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
        f"P3 llama_index: {args.rounds} interleaved samples of {args.runs} runs per mode, "
        "a FunctionAgent: 2 model requests + 3 concurrent tools a run (median per run)"
    )
    print(f"  {'mode':18s} {'wall':>9s}  {'ratio':>6s}  {'cpu (all threads)':>17s}  {'ratio':>6s}")
    for name, value in medians.items():
        cpu = cpu_medians[name]
        print(f"  {name:18s} {value * 1000:6.2f} ms  x{value / base:.3f}  {cpu * 1000:14.2f} ms  x{cpu / cpu_base:.3f}")
    print(
        f"  openprogram overhead: wall {(medians['openprogram'] / base - 1) * 100:+.1f}%, "
        f"cpu {(cpu_medians['openprogram'] / cpu_base - 1) * 100:+.1f}%  "
        f"(LlamaIndex's own OTel: wall {(medians['llama_index_otel'] / base - 1) * 100:+.1f}%, "
        f"cpu {(cpu_medians['llama_index_otel'] / cpu_base - 1) * 100:+.1f}%)"
    )
    print(f"  floor: {floor.describe()}")
    print(
        "  cpu  "
        + verdict(
            cpu_medians["openprogram"] / cpu_base - 1,
            cpu_medians["floor"] / cpu_base,
            "LlamaIndex's OTel",
            cpu_medians["llama_index_otel"] / cpu_base - 1,
            statistics.median(writers["openprogram"]) / cpu_base,
            cpu_medians["floor_in_place"] / cpu_base - 1,
        )
    )
    print(f"  calls recorded by openprogram: {recorded} over {(args.rounds + 2) * args.runs} runs")
    return 0


if __name__ == "__main__":
    sys.exit(main())

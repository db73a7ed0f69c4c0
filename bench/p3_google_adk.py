"""Benchmark P3: overhead of the Google ADK adapter on offline agent runs (standalone).

    python bench/p3_google_adk.py [--runs 20] [--rounds 30]

Workload: one ``Runner.run_async`` of an ``LlmAgent`` (a new ADK session each run, on ADK's
in-memory session service) whose scripted, zero-latency ``BaseLlm`` asks for 3 function tools in
one response (two async, one sync; ADK runs them concurrently) and then answers: 2 model
requests, 3 tool calls. A sample is ``--runs`` runs on one event loop; the five modes are
interleaved sample by sample in one process (order shuffled per round) and compared by the
median of their per-run times over ``--rounds``:

- ``plain``: not instrumented; ADK's OpenTelemetry tracer has no provider (its spans are no-ops);
- ``openprogram``: ``openprogram.instrument("google_adk")``, the sample inside one
  ``session_context`` on a SQLite store, which flushes on exit (durable, inside the timing):
  6 calls recorded per run (agent, 2 llm, 3 tool);
- ``adk_otel``: ADK's own OpenTelemetry tracing, its tracer given an OpenTelemetry SDK tracer
  exporting synchronously to an in-memory exporter (``invocation``, ``invoke_agent``,
  ``generate_content`` / ``call_llm`` and ``execute_tool`` spans, as the release makes them);
- ``floor``: one run's record replayed without hooks (``_floor.py``), the figure the target is
  set against;
- ``floor_in_place``: plain runs with the floor's values encoded where the run has them (its
  tools and model), its rows stored after, as the floor stores them.

Prints the median wall time and process CPU time (all threads, openprogram's writer included)
per run of each mode and the ratios to ``plain``; on a shared machine the CPU figure is the
steadier one. Target: openprogram's overhead within 1.5x of the floor, and below ADK's own tracing.
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
from collections.abc import AsyncGenerator
from typing import Any

os.environ.setdefault("OPENPROGRAM_HOME", tempfile.mkdtemp(prefix="openprogram_p3_"))

TOOLS = ("lookup", "convert", "rank")


def build_runner() -> Any:
    from _floor import point
    from google.adk.agents import LlmAgent
    from google.adk.models.base_llm import BaseLlm
    from google.adk.models.llm_response import LlmResponse
    from google.adk.runners import InMemoryRunner
    from google.genai import types

    class BenchLlm(BaseLlm):
        """Asks for the three tools at once, then answers once their results are in."""

        model: str = "bench-model"

        async def generate_content_async(self, llm_request: Any, stream: bool = False) -> AsyncGenerator[Any, None]:
            point()
            answered = any(part.function_response for part in llm_request.contents[-1].parts or ())
            if answered:
                parts = [types.Part(text="all three done")]
            else:
                parts = [
                    types.Part(function_call=types.FunctionCall(id=f"c{n}", name=name, args={"key": f"k{n}"}))
                    for n, name in enumerate(TOOLS)
                ]
            yield LlmResponse(
                content=types.Content(role="model", parts=parts),
                usage_metadata=types.GenerateContentResponseUsageMetadata(
                    prompt_token_count=20 * len(llm_request.contents),
                    candidates_token_count=12,
                    total_token_count=20 * len(llm_request.contents) + 12,
                ),
            )

    async def lookup(key: str) -> str:
        """Look a key up."""
        point()
        return f"value of {key}"

    async def convert(key: str) -> str:
        """Convert a key."""
        point()
        return key.upper()

    def rank(key: str) -> int:
        """Rank a key (sync)."""
        point()
        return len(key)

    agent = LlmAgent(name="bench", model=BenchLlm(), instruction="Use the tools.", tools=[lookup, convert, rank])
    return InMemoryRunner(agent=agent, app_name="bench")


async def one_run(runner: Any) -> None:
    from google.genai import types

    session = await runner.session_service.create_session(app_name="bench", user_id="u")
    message = types.Content(role="user", parts=[types.Part(text="go")])
    async for _ in runner.run_async(user_id="u", session_id=session.id, new_message=message):
        pass


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20, help="runs per sample")
    parser.add_argument("--rounds", type=int, default=30, help="samples per mode")
    parser.add_argument("--seed", type=int, default=3)
    args = parser.parse_args()

    import logging

    import openprogram
    from _floor import Floor, verdict
    from _util import writer_cpu

    try:
        from google.adk.telemetry import tracing
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    except ImportError as exc:
        print(f"p3: needs google-adk and opentelemetry-sdk ({exc})", file=sys.stderr)
        return 2

    logging.getLogger("google_adk").setLevel(logging.ERROR)
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    # ADK's modules share one ProxyTracer; with no global provider it hands out no-op spans. The
    # benchmark gives it a real tracer for its own mode only (a global provider cannot be unset).
    adk_tracer = tracing.tracer
    sdk_tracer = provider.get_tracer("gcp.vertex.agent")

    home = os.environ["OPENPROGRAM_HOME"]
    store = openprogram.open_store(f"sqlite:///{home}/bench.db")
    loop = asyncio.new_event_loop()
    runner = build_runner()
    floor_runner = build_runner()
    floor = Floor.of("google_adk", lambda: one_run(floor_runner), home)
    times: dict[str, list[float]] = {
        "plain": [],
        "openprogram": [],
        "adk_otel": [],
        "floor": [],
        "floor_in_place": [],
    }
    cpus: dict[str, list[float]] = {name: [] for name in times}
    writers: dict[str, list[float]] = {name: [] for name in times}  # the writer thread's CPU
    spans: list[int] = []

    def runs() -> None:
        for _ in range(args.runs):
            loop.run_until_complete(one_run(runner))

    def timed(name: str, sample: Any) -> None:
        start, cpu, started_writer = time.perf_counter(), time.process_time(), writer_cpu()
        sample()
        times[name].append((time.perf_counter() - start) / args.runs)
        cpus[name].append((time.process_time() - cpu) / args.runs)
        writers[name].append((writer_cpu() - started_writer) / args.runs)

    def in_session() -> None:
        with openprogram.session_context(store=store):  # flushes on exit: durable, inside the timing
            runs()

    def run_plain() -> None:
        timed("plain", runs)

    def run_openprogram() -> None:
        openprogram.instrument("google_adk")
        try:
            timed("openprogram", in_session)
        finally:
            openprogram.uninstrument("google_adk")

    def run_otel() -> None:
        adk_tracer._real_tracer = sdk_tracer
        try:
            timed("adk_otel", runs)
        finally:
            adk_tracer._real_tracer = None
            spans.append(len(exporter.get_finished_spans()))
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
        "adk_otel": run_otel,
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
        f"P3 google_adk: {args.rounds} interleaved samples of {args.runs} runs per mode, "
        "2 model requests + 3 parallel tools a run (median per run)"
    )
    print(f"  {'mode':18s} {'wall':>9s}  {'ratio':>6s}  {'cpu (all threads)':>17s}  {'ratio':>6s}")
    for name, value in medians.items():
        cpu = cpu_medians[name]
        print(f"  {name:18s} {value * 1000:6.2f} ms  x{value / base:.3f}  {cpu * 1000:14.2f} ms  x{cpu / cpu_base:.3f}")
    print(
        f"  openprogram overhead: wall {(medians['openprogram'] / base - 1) * 100:+.1f}%, "
        f"cpu {(cpu_medians['openprogram'] / cpu_base - 1) * 100:+.1f}%  "
        f"(ADK's own OTel: wall {(medians['adk_otel'] / base - 1) * 100:+.1f}%, "
        f"cpu {(cpu_medians['adk_otel'] / cpu_base - 1) * 100:+.1f}%, "
        f"{statistics.median(spans) / args.runs:.0f} spans a run)"
    )
    print(f"  floor: {floor.describe()}")
    print(
        "  cpu  "
        + verdict(
            cpu_medians["openprogram"] / cpu_base - 1,
            cpu_medians["floor"] / cpu_base,
            "ADK's OTel",
            cpu_medians["adk_otel"] / cpu_base - 1,
            statistics.median(writers["openprogram"]) / cpu_base,
            cpu_medians["floor_in_place"] / cpu_base - 1,
        )
    )
    print(f"  calls recorded by openprogram: {recorded} over {(args.rounds + 2) * args.runs} runs")
    return 0


if __name__ == "__main__":
    sys.exit(main())

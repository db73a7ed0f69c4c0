"""Benchmark P3: Semantic Kernel auto function calling, uninstrumented vs openprogram vs SK's OpenTelemetry diagnostics.

Workload: one offline ``kernel.invoke_prompt`` whose (scripted) model asks for 3
function calls in one turn — SK runs them concurrently — and then answers; 100
runs per sample. The modes are interleaved round by round in one process
and compared by the median of their per-round times:

- ``baseline``: SK alone (no openprogram adapter, SK telemetry off);
- ``openprogram``: ``openprogram.instrument()``, inside a ``session_context`` on
  a SQLite store (records: 1 prompt function + 1 chat request + 3 functions per run);
- ``sk_otel``: no openprogram; SK's own diagnostics on
  (``SEMANTICKERNEL_EXPERIMENTAL_GENAI_ENABLE_OTEL_DIAGNOSTICS=true``) with an
  OpenTelemetry SDK tracer provider exporting to an in-memory exporter;
- ``floor``: one run's record replayed without hooks (``_floor.py``), the figure the
  target is set against;
- ``floor_in_place``: the baseline's runs with the floor's values encoded where the
  run has them (its functions), its rows stored after.

How SK diagnostics are toggled inside one process: SK reads the environment
variable once, at import, into module-level ``MODEL_DIAGNOSTICS_SETTINGS``
objects, and traces through module-level ``tracer`` objects taken from the
global provider at import. This script sets the variable before importing SK,
then switches per mode by setting ``enable_otel_diagnostics`` on those settings
objects and pointing the module ``tracer`` globals at either a no-op tracer or
the SDK tracer (a private ``TracerProvider``, never the global one).

Run: ``python bench/p3_semantic_kernel.py [--runs 100] [--rounds 15]``.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from typing import Any

os.environ["SEMANTICKERNEL_EXPERIMENTAL_GENAI_ENABLE_OTEL_DIAGNOSTICS"] = "true"
os.environ.setdefault("OPENPROGRAM_HOME", tempfile.mkdtemp(prefix="openprogram-bench-"))

import openprogram
from _floor import Floor, point, verdict
from _util import writer_cpu
from openprogram.integrations.semantic_kernel.fakes import ScriptedChatService, tools_then_answer
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from semantic_kernel import Kernel
from semantic_kernel.connectors.ai import chat_completion_client_base
from semantic_kernel.connectors.ai.function_choice_behavior import FunctionChoiceBehavior
from semantic_kernel.connectors.ai.open_ai import OpenAIChatPromptExecutionSettings
from semantic_kernel.functions import KernelArguments, kernel_function
from semantic_kernel.utils.telemetry.agent_diagnostics import decorators as agent_decorators
from semantic_kernel.utils.telemetry.model_diagnostics import decorators as model_decorators
from semantic_kernel.utils.telemetry.model_diagnostics import function_tracer

kernel_function_module = sys.modules["semantic_kernel.functions.kernel_function"]
TRACED_MODULES = [kernel_function_module, chat_completion_client_base, model_decorators, agent_decorators]
SETTINGS = [
    model_decorators.MODEL_DIAGNOSTICS_SETTINGS,
    agent_decorators.MODEL_DIAGNOSTICS_SETTINGS,
    function_tracer.MODEL_DIAGNOSTICS_SETTINGS,
]

exporter = InMemorySpanExporter()
sdk_provider = TracerProvider()
sdk_provider.add_span_processor(SimpleSpanProcessor(exporter))
NOOP = trace.NoOpTracer()


def sk_diagnostics(on: bool) -> None:
    for settings in SETTINGS:
        settings.enable_otel_diagnostics = on
    for module in TRACED_MODULES:
        module.tracer = sdk_provider.get_tracer(module.__name__) if on else NOOP  # type: ignore[attr-defined]


class Trip:
    @kernel_function(description="forecast")
    def forecast(self, city: str) -> str:
        point()
        return f"sunny in {city}"

    @kernel_function(description="trains")
    async def trains(self, city: str) -> str:
        point()
        return f"3 trains to {city}"

    @kernel_function(description="hotels")
    async def hotels(self, city: str) -> list[str]:
        point()
        return [f"{city} Central", f"{city} Harbour"]


PROMPT = "Plan a trip to Oslo."
writer: list[float] = []  # the writer thread's CPU seconds in each timed sample (openprogram's alone below)
CALLS = [
    ("trip", "forecast", {"city": "Oslo"}),
    ("trip", "trains", {"city": "Oslo"}),
    ("trip", "hotels", {"city": "Oslo"}),
]


def make_kernel() -> tuple[Kernel, KernelArguments]:
    kernel = Kernel()
    kernel.add_plugin(Trip(), "trip")
    kernel.add_service(ScriptedChatService(default_step=tools_then_answer(CALLS, "a fine trip")))
    settings = OpenAIChatPromptExecutionSettings(function_choice_behavior=FunctionChoiceBehavior.Auto())
    return kernel, KernelArguments(settings=settings)


async def runs(kernel: Kernel, arguments: KernelArguments, n: int) -> tuple[float, float]:
    """Wall and process-CPU seconds for ``n`` runs (CPU includes openprogram's writer thread)."""
    started, cpu, started_writer = time.perf_counter(), time.process_time(), writer_cpu()
    for _ in range(n):
        result = await kernel.invoke_prompt(PROMPT, arguments=arguments)
        assert str(result) == "a fine trip"
    writer.append(writer_cpu() - started_writer)
    return time.perf_counter() - started, time.process_time() - cpu


async def sample(
    mode: str, kernel: Kernel, arguments: KernelArguments, n: int, store: Any, floor: Floor
) -> tuple[float, float]:
    if mode == "floor":
        started, cpu = time.perf_counter(), time.process_time()
        floor.cost(n)
        return time.perf_counter() - started, time.process_time() - cpu
    if mode == "floor_in_place":  # the floor's values encoded where these runs have them, its rows stored after
        started, cpu = time.perf_counter(), time.process_time()
        with floor.encoding_at_points():
            await runs(kernel, arguments, n)
        floor.store(n)
        return time.perf_counter() - started, time.process_time() - cpu
    if mode == "openprogram":
        openprogram.instrument("semantic_kernel")
        try:
            async with openprogram.session_context(store=store):
                return await runs(kernel, arguments, n)  # the exit flush is outside the timing
        finally:
            openprogram.uninstrument("semantic_kernel")
    if mode == "sk_otel":
        sk_diagnostics(True)
        try:
            return await runs(kernel, arguments, n)
        finally:
            sk_diagnostics(False)
            exporter.clear()
    return await runs(kernel, arguments, n)


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--store", default=None, help="store URL (default: a SQLite file in a temporary home)")
    args = parser.parse_args()
    sk_diagnostics(False)
    store = openprogram.open_store(args.store or f"sqlite:///{os.environ['OPENPROGRAM_HOME']}/bench.db")
    kernel, arguments = make_kernel()
    floor_kernel, floor_arguments = make_kernel()
    floor = await asyncio.to_thread(  # on an event loop of its own
        Floor.of,
        "semantic_kernel",
        lambda: floor_kernel.invoke_prompt(PROMPT, arguments=floor_arguments),
        os.environ["OPENPROGRAM_HOME"],
    )
    modes = ["baseline", "openprogram", "sk_otel", "floor", "floor_in_place"]
    for mode in modes:  # warm-up: imports, pydantic schemas, the store
        await sample(mode, kernel, arguments, 10, store, floor)
    exporter.clear()
    sk_diagnostics(True)
    await runs(kernel, arguments, 1)
    spans = len(exporter.get_finished_spans())
    sk_diagnostics(False)
    exporter.clear()
    wall: dict[str, list[float]] = {m: [] for m in modes}
    cpu: dict[str, list[float]] = {m: [] for m in modes}
    writer_cpus: list[float] = []
    for r in range(args.rounds):
        order = modes[r % len(modes) :] + modes[: r % len(modes)]  # rotate so no mode always runs first
        for mode in order:
            writer.clear()
            w, c = await sample(mode, kernel, arguments, args.runs, store, floor)
            if mode == "openprogram":
                writer_cpus.extend(writer)
            wall[mode].append(w)
            cpu[mode].append(c)
    print(f"P3 semantic_kernel: {args.runs} auto-function-calling runs (3 parallel calls/turn) x {args.rounds} rounds,")
    print(f"  interleaved; medians per round; store {store.url}; SK diagnostics exported {spans} spans per run")
    for label, times in (("wall", wall), ("cpu", cpu)):
        median = {m: statistics.median(t) for m, t in times.items()}
        for mode in modes:
            print(
                f"  {label:<4} {mode:<12} {median[mode] * 1e3:8.2f} ms / {args.runs} runs "
                f"({median[mode] / args.runs * 1e6:7.1f} us/run)"
            )
        op = median["openprogram"] / median["baseline"]
        otel = median["sk_otel"] / median["baseline"]
        print(f"  {label:<4} ratio openprogram/baseline = {op:.3f} ({100 * (op - 1):+.1f} %)")
        print(f"  {label:<4} ratio sk_otel/baseline     = {otel:.3f} ({100 * (otel - 1):+.1f} %)")
        print(f"  {label:<4} ratio openprogram/sk_otel  = {median['openprogram'] / median['sk_otel']:.3f}")
    print(f"  floor: {floor.describe()}")
    median = {m: statistics.median(t) for m, t in cpu.items()}
    base = median["baseline"]
    print(
        "  cpu  "
        + verdict(
            median["openprogram"] / base - 1,
            median["floor"] / base,
            "SK's diagnostics",
            median["sk_otel"] / base - 1,
            statistics.median(writer_cpus) / base,
            median["floor_in_place"] / base - 1,
        )
    )
    openprogram.flush()


if __name__ == "__main__":
    asyncio.run(main())

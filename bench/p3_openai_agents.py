"""Benchmark P3: overhead of the OpenAI Agents SDK adapter on an offline run (standalone).

    python bench/p3_openai_agents.py [--runs 100]

One run: a triage agent calls 3 tools (one per turn), hands off to a billing agent
that calls 3 more and answers — 8 model requests (the offline scripted model), 6
tool calls, 1 hand-off. It is run ``--runs`` times in each of five modes, interleaved
run by run in the same process and event loop (order shuffled per round):

- ``plain``: not instrumented, the SDK's tracing off;
- ``openprogram``: ``openprogram.instrument("agents")``, each run inside a
  ``session_context`` on a SQLite store (its turn and the flush on exit included),
  the SDK's tracing off;
- ``sdk_tracing``: not instrumented; the SDK's own tracing on, as it installs it by
  default (``BatchTraceProcessor`` -> ``BackendSpanExporter``), its HTTP client on an
  in-process transport that answers 200 instead of OpenAI's servers;
- ``floor``: one run's record replayed without hooks (``_floor.py``), flushed as each
  ``openprogram`` run is: the figure the target is set against;
- ``floor_in_place``: a plain run with the floor's values encoded where the run has them
  (its tools), its rows stored after, as the floor stores them.

Prints the median wall time and process CPU time (all threads) per run of each
mode and the ratios to ``plain``; on a shared machine the CPU figure is the steadier one.
Target: openprogram's overhead within 1.5x of the floor, and below the SDK's own tracing.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import os
import random
import statistics
import sys
import tempfile
import time
from typing import Any

os.environ.setdefault("OPENPROGRAM_HOME", tempfile.mkdtemp(prefix="openprogram_p3_agents_"))


def build_triage() -> Any:
    from _floor import point
    from agents import Agent, function_tool
    from openprogram.integrations.openai_agents.demo import scripted_model

    @function_tool
    def lookup(key: str) -> str:
        """Look a key up."""
        point()
        return f"value of {key}"

    @function_tool
    async def double(text: str) -> str:
        """Repeat the text twice."""
        point()
        return text + text

    def steps(prefix: str) -> list[Any]:
        return [
            [("lookup", {"key": f"{prefix}1"})],
            [("double", {"text": f"{prefix}2"})],
            [("lookup", {"key": f"{prefix}3"})],
        ]

    billing = Agent(
        name="Billing",
        instructions="Settle it.",
        tools=[lookup, double],
        model=scripted_model([*steps("b"), "refunded"]),
    )
    return Agent(
        name="Triage",
        instructions="Route it.",
        tools=[lookup, double],
        handoffs=[billing],
        model=scripted_model([*steps("t"), [("transfer_to_billing", {})]]),
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--seed", type=int, default=3)
    args = parser.parse_args()

    import openprogram
    from _floor import Floor, verdict
    from _util import writer_cpu
    from agents import Runner, set_trace_processors, set_tracing_disabled
    from agents.tracing.processors import BackendSpanExporter, BatchTraceProcessor

    exporter = BackendSpanExporter(api_key="offline-benchmark")
    posted: list[int] = []
    http = importlib.import_module(type(exporter._client).__module__.partition(".")[0])  # httpx, or httpx2 later

    def ingest(request: Any) -> Any:
        posted.append(len(request.content))
        return http.Response(200)

    exporter._client = http.Client(transport=http.MockTransport(ingest))  # no socket is opened
    processor = BatchTraceProcessor(exporter)
    set_trace_processors([processor])  # the default processor, on the offline exporter
    set_tracing_disabled(True)
    home = os.environ["OPENPROGRAM_HOME"]
    store = openprogram.open_store(f"sqlite:///{home}/bench.db")
    floor = Floor.of("agents", lambda: Runner.run(build_triage(), "I was charged twice"), home)
    loop = asyncio.new_event_loop()
    times: dict[str, list[float]] = {
        "plain": [],
        "openprogram": [],
        "sdk_tracing": [],
        "floor": [],
        "floor_in_place": [],
    }
    cpus: dict[str, list[float]] = {name: [] for name in times}
    writers: dict[str, list[float]] = {name: [] for name in times}  # the writer thread's CPU

    # Agents are built after the mode is switched on and outside the timed region (see bench/p3_crewai.py).
    def timed(mode: str, agent: Any, session: bool = False, in_place: bool = False) -> None:
        start, cpu, started_writer = time.perf_counter(), time.process_time(), writer_cpu()
        if session:
            with openprogram.session_context(store=store):
                loop.run_until_complete(Runner.run(agent, "I was charged twice"))
        elif in_place:
            with floor.encoding_at_points():
                loop.run_until_complete(Runner.run(agent, "I was charged twice"))
            floor.store(1)
        else:
            loop.run_until_complete(Runner.run(agent, "I was charged twice"))
        times[mode].append(time.perf_counter() - start)
        cpus[mode].append(time.process_time() - cpu)
        writers[mode].append(writer_cpu() - started_writer)

    def run_plain() -> None:
        timed("plain", build_triage())

    def run_openprogram() -> None:
        openprogram.instrument("agents")
        try:
            timed("openprogram", build_triage(), session=True)
        finally:
            openprogram.uninstrument("agents")

    def run_sdk_tracing() -> None:
        set_tracing_disabled(False)
        try:
            timed("sdk_tracing", build_triage())
        finally:
            set_tracing_disabled(True)

    def run_floor() -> None:
        start, cpu = time.perf_counter(), time.process_time()
        floor.cost(1)
        times["floor"].append(time.perf_counter() - start)
        cpus["floor"].append(time.process_time() - cpu)

    def run_floor_in_place() -> None:
        timed("floor_in_place", build_triage(), in_place=True)

    modes = {
        "plain": run_plain,
        "openprogram": run_openprogram,
        "sdk_tracing": run_sdk_tracing,
        "floor": run_floor,
        "floor_in_place": run_floor_in_place,
    }
    for _ in range(5):  # warm-up (imports, caches), not measured
        for fn in modes.values():
            fn()
    for values in (*times.values(), *cpus.values(), *writers.values()):
        values.clear()

    rng = random.Random(args.seed)
    for _ in range(args.runs):
        order = list(modes)
        rng.shuffle(order)
        for name in order:
            modes[name]()

    openprogram.flush()
    processor.force_flush()
    recorded = sum(len(store.list_calls(s.session_id)) for s in store.list_sessions())
    medians = {name: statistics.median(values) for name, values in times.items()}
    cpu_medians = {name: statistics.median(values) for name, values in cpus.items()}
    base, cpu_base = medians["plain"], cpu_medians["plain"]
    print(
        f"P3 openai_agents: {args.runs} interleaved runs per mode, 2 agents x 3 tool calls + a hand-off each "
        "(median per run)"
    )
    print(f"  {'mode':13s} {'wall':>9s}  {'ratio':>6s}  {'cpu (all threads)':>17s}  {'ratio':>6s}")
    for name, value in medians.items():
        cpu = cpu_medians[name]
        print(f"  {name:13s} {value * 1000:6.2f} ms  x{value / base:.3f}  {cpu * 1000:14.2f} ms  x{cpu / cpu_base:.3f}")
    print(
        f"  openprogram overhead: wall {(medians['openprogram'] / base - 1) * 100:+.1f}%, "
        f"cpu {(cpu_medians['openprogram'] / cpu_base - 1) * 100:+.1f}%  "
        f"(sdk tracing: wall {(medians['sdk_tracing'] / base - 1) * 100:+.1f}%, "
        f"cpu {(cpu_medians['sdk_tracing'] / cpu_base - 1) * 100:+.1f}%)"
    )
    print(f"  floor: {floor.describe()}")
    print(
        "  cpu  "
        + verdict(
            cpu_medians["openprogram"] / cpu_base - 1,
            cpu_medians["floor"] / cpu_base,
            "the SDK's tracing",
            cpu_medians["sdk_tracing"] / cpu_base - 1,
            statistics.median(writers["openprogram"]) / cpu_base,
            cpu_medians["floor_in_place"] / cpu_base - 1,
        )
    )
    print(
        f"  calls recorded by openprogram: {recorded} over {args.runs + 5} runs; "
        f"the SDK's tracing posted {len(posted)} batches, {sum(posted) // 1024} KiB"
    )
    loop.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())

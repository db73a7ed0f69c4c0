"""Benchmark P3: overhead of the CrewAI adapter on an offline crew run (standalone).

    python bench/p3_crewai.py [--runs 50]

One crew of 2 agents x 3 tool calls (scripted offline LLM, native tool calling)
is kicked off ``--runs`` times in each of six modes, interleaved round by
round in the same process (order shuffled per round):

- ``plain``: not instrumented;
- ``openprogram``: ``openprogram.instrument("crewai")``, each run inside a
  ``session_context`` on a SQLite store (its turn and the flush on exit included);
- ``openinference``: OpenInference's ``CrewAIInstrumentor`` with an OpenTelemetry
  SDK tracer provider exporting synchronously to an in-memory exporter;
- ``passing_hooks``: a before- and an after-tool-call hook that do nothing, registered
  globally: what CrewAI charges any registered hook (each dispatch emits an event its event
  bus hands to a worker thread); the adapter registers none where CrewAI has hook runners
  to wrap (1.15.3 and later);
- ``floor``: one run's record replayed without hooks (``_floor.py``), flushed as
  each ``openprogram`` run is;
- ``floor_in_place``: a plain run with the floor's values encoded where the run has
  them (its tools), its rows stored after, as the floor stores them.

Prints the median wall time and process CPU time (all threads) per run of each
mode and the ratios to ``plain``; on a shared machine the CPU figure is the steadier one.
Target: openprogram's overhead within 1.5x of the floor, and below openinference.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from typing import Any

# CrewAI reads these at import time. OTEL_SDK_DISABLED is deliberately NOT set:
# it would turn the OpenTelemetry SDK used by the OpenInference mode into a no-op.
_home = tempfile.mkdtemp(prefix="openprogram_p3_")
os.environ.update(
    {
        "HOME": _home,
        "XDG_DATA_HOME": f"{_home}/.local/share",
        "CREWAI_STORAGE_DIR": f"{_home}/crewai_storage",
        "CREWAI_DISABLE_TELEMETRY": "true",
        "CREWAI_DISABLE_TRACKING": "true",
        "CREWAI_TRACING_ENABLED": "false",
        "CREWAI_TESTING": "true",
        "CREWAI_DISABLE_VERSION_CHECK": "true",
        "OPENPROGRAM_HOME": f"{_home}/openprogram",
    }
)
os.environ.pop("OTEL_SDK_DISABLED", None)


def build_crew() -> Any:
    from _floor import point
    from crewai import Agent, Crew, Task
    from crewai.tools import BaseTool, tool
    from openprogram.integrations.crewai.fakes import scripted_llm

    class Lookup(BaseTool):
        name: str = "lookup"
        description: str = "Look a key up."

        def _run(self, key: str) -> str:
            point()
            return f"value of {key}"

    @tool("double")
    def double(text: str) -> str:
        """Repeat the text twice."""
        point()
        return text + text

    steps = [("lookup", {"key": "a"}), ("double", {"text": "b"}), ("lookup", {"key": "c"})]
    agents, tasks = [], []
    for role in ("Researcher", "Writer"):
        llm = scripted_llm(steps, native=True, final=f"{role} done")
        agent = Agent(role=role, goal="benchmark", backstory="offline", llm=llm, tools=[Lookup(), double])
        agents.append(agent)
        tasks.append(Task(description=f"{role} task", expected_output="text", agent=agent))
    return Crew(agents=agents, tasks=tasks)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--seed", type=int, default=3)
    args = parser.parse_args()

    import openprogram
    from _floor import Floor, verdict
    from _util import writer_cpu
    from crewai import hooks

    try:
        from openinference.instrumentation.crewai import CrewAIInstrumentor
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    except ImportError as exc:
        print(f"p3: needs openinference-instrumentation-crewai and opentelemetry-sdk ({exc})", file=sys.stderr)
        return 2

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    oi = CrewAIInstrumentor()
    store = openprogram.open_store(f"sqlite:///{_home}/openprogram/bench.db")
    with open(os.devnull, "w") as sink, contextlib.redirect_stdout(sink):
        floor = Floor.of("crewai", lambda: build_crew().kickoff(), _home)

    # A fresh crew per run, built after the mode is switched on and outside the timed region: a
    # reused crew keeps state between kickoffs, and switching a mode on patches classes, which
    # invalidates CPython's attribute caches -- a program that calls instrument() once at start-up
    # never pays that re-warming inside a run, so neither does the benchmark (for either tool).
    def timed(name: str, run: Callable[[], Any]) -> None:
        start, cpu, started_writer = time.perf_counter(), time.process_time(), writer_cpu()
        run()
        times[name].append(time.perf_counter() - start)
        cpus[name].append(time.process_time() - cpu)
        writers[name].append(writer_cpu() - started_writer)

    def in_session(crew: Any) -> None:
        with openprogram.session_context(store=store):
            crew.kickoff()

    def run_plain() -> None:
        timed("plain", build_crew().kickoff)

    def run_openprogram() -> None:
        openprogram.instrument("crewai")
        crew = build_crew()
        try:
            timed("openprogram", lambda: in_session(crew))
        finally:
            openprogram.uninstrument("crewai")

    def run_openinference() -> None:
        oi.instrument(tracer_provider=provider, skip_dep_check=True)
        crew = build_crew()
        try:
            timed("openinference", crew.kickoff)
        finally:
            oi.uninstrument()
            exporter.clear()

    def passing(context: Any) -> None:
        return None

    def run_passing_hooks() -> None:
        hooks.register_before_tool_call_hook(passing)
        hooks.register_after_tool_call_hook(passing)
        crew = build_crew()
        try:
            timed("passing_hooks", crew.kickoff)
        finally:
            hooks.unregister_before_tool_call_hook(passing)
            hooks.unregister_after_tool_call_hook(passing)

    def run_floor() -> None:
        timed("floor", lambda: floor.cost(1))

    def floor_in_place(crew: Any) -> None:
        with floor.encoding_at_points():
            crew.kickoff()
        floor.store(1)

    def run_floor_in_place() -> None:
        crew = build_crew()
        timed("floor_in_place", lambda: floor_in_place(crew))

    times: dict[str, list[float]] = {
        "plain": [],
        "openprogram": [],
        "openinference": [],
        "passing_hooks": [],
        "floor": [],
        "floor_in_place": [],
    }
    cpus: dict[str, list[float]] = {name: [] for name in times}
    writers: dict[str, list[float]] = {name: [] for name in times}  # the writer thread's CPU

    modes = {
        "plain": run_plain,
        "openprogram": run_openprogram,
        "openinference": run_openinference,
        "passing_hooks": run_passing_hooks,
        "floor": run_floor,
        "floor_in_place": run_floor_in_place,
    }
    with open(os.devnull, "w") as sink, contextlib.redirect_stdout(sink):
        for _ in range(5):  # warm-up (imports, caches), not measured
            for fn in modes.values():
                fn()
    for values in (*times.values(), *cpus.values(), *writers.values()):
        values.clear()

    rng = random.Random(args.seed)
    # CrewAI's console panels go to /dev/null in every mode alike (terminal speed is not the subject).
    with open(os.devnull, "w") as sink, contextlib.redirect_stdout(sink):
        for _ in range(args.runs):
            order = list(modes)
            rng.shuffle(order)
            for name in order:
                modes[name]()

    openprogram.flush()
    recorded = sum(len(store.list_calls(s.session_id)) for s in store.list_sessions())
    medians = {name: statistics.median(values) for name, values in times.items()}
    cpu_medians = {name: statistics.median(values) for name, values in cpus.items()}
    base, cpu_base = medians["plain"], cpu_medians["plain"]
    print(f"P3 crewai: {args.runs} interleaved runs per mode, 2 agents x 3 tool calls each (median per run)")
    print(f"  {'mode':14s} {'wall':>9s}  {'ratio':>6s}  {'cpu (all threads)':>17s}  {'ratio':>6s}")
    for name, value in medians.items():
        cpu = cpu_medians[name]
        print(f"  {name:14s} {value * 1000:6.2f} ms  x{value / base:.3f}  {cpu * 1000:14.2f} ms  x{cpu / cpu_base:.3f}")
    print(
        f"  openprogram overhead: wall {(medians['openprogram'] / base - 1) * 100:+.1f}%, "
        f"cpu {(cpu_medians['openprogram'] / cpu_base - 1) * 100:+.1f}%  "
        f"(openinference: wall {(medians['openinference'] / base - 1) * 100:+.1f}%, "
        f"cpu {(cpu_medians['openinference'] / cpu_base - 1) * 100:+.1f}%)"
    )
    print(
        f"  CrewAI's own cost of tool hooks that do nothing: cpu "
        f"{(cpu_medians['passing_hooks'] / cpu_base - 1) * 100:+.1f}%"
    )
    print(f"  floor: {floor.describe()}")
    print(
        "  cpu  "
        + verdict(
            cpu_medians["openprogram"] / cpu_base - 1,
            cpu_medians["floor"] / cpu_base,
            "OpenInference",
            cpu_medians["openinference"] / cpu_base - 1,
            statistics.median(writers["openprogram"]) / cpu_base,
            cpu_medians["floor_in_place"] / cpu_base - 1,
        )
    )
    print(f"  calls recorded by openprogram: {recorded} over {args.runs + 5} runs")
    return 0


if __name__ == "__main__":
    sys.exit(main())

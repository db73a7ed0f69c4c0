"""P3's floor: what keeping a P3 workload's record costs at the least, hooks aside.

Runs a P3 workload (``p3_langgraph.py``'s graph or ``p3_semantic_kernel.py``'s
auto-function-calling prompt, as ``p3_instructions.py`` builds them;
``p3_crewai.py``'s crew, ``p3_pydantic_ai.py``'s agent, ``p3_openai_agents.py``'s
triage agent) once instrumented and keeps what openprogram captured and stored
for one run: the values it encoded (inputs and outputs of its calls) and the
rows it wrote. Then, in the same process, against the uninstrumented run measured
alongside (CPU time, all threads, interleaved medians):

- **encode**: those values through ``capture_json`` (the C JSON encoder with
  the secret pre-check), in a tight loop, so with warm caches: less than it
  costs in place;
- **encode, pydantic-core**: the same values through ``pydantic_core.to_json``
  (Rust), the fastest encoder installed, with no bounding or redaction at all;
- **store, bare table**: the same into a table with no key and no index, the
  cheapest SQLite has (a store could not find a session's calls in it);
- **store**: the run's rows inserted into a SQLite file with the store's
  schema and settings (WAL, ``synchronous=FULL``), with raw ``executemany``, one
  transaction per 50 ms of uninstrumented runs, as often as the background
  writer commits in a real run;
- **store, synced at flush**: the same with the cycles committed at
  ``synchronous=NORMAL`` and one ``FULL`` commit at the end of the sample, as
  the writer does now (a commit nobody waits on is synced by the next flush).

No hooks, no context, no record-keeping is counted: this is the cost of the
data alone: P3's target is openprogram's overhead within 1.5x of it.

    python bench/p3_floor.py [--framework NAME] [--runs 100] [--repeats 9]
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import os
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def _instructions_workload(name: str) -> Callable[[], tuple[str, Callable[[], Any]]]:
    def build() -> tuple[str, Callable[[], Any]]:
        from p3_instructions import WORKLOADS

        return WORKLOADS[name]()

    return build


def _crewai() -> tuple[str, Callable[[], Any]]:
    # A fresh crew a run, as p3-crewai runs it: a reused crew keeps state between kickoffs.
    from p3_crewai import build_crew

    return "crewai", lambda: build_crew().kickoff()


def _pydantic_ai() -> tuple[str, Callable[[], Any]]:
    from p3_pydantic_ai import build_agent

    agent = build_agent()
    return "pydantic_ai", lambda: agent.run("go")


def _openai_agents() -> tuple[str, Callable[[], Any]]:
    from agents import Runner, set_tracing_disabled
    from p3_openai_agents import build_triage

    set_tracing_disabled(True)  # the SDK's own tracing is p3-openai-agents' peer, not part of the run
    return "agents", lambda: Runner.run(build_triage(), "I was charged twice")


# Each workload: the module it needs installed, and what builds it.
FLOOR_WORKLOADS: dict[str, tuple[str, Callable[[], tuple[str, Callable[[], Any]]]]] = {
    "langgraph": ("langgraph", _instructions_workload("langgraph")),
    "semantic-kernel": ("semantic_kernel", _instructions_workload("semantic-kernel")),
    "crewai": ("crewai", _crewai),
    "pydantic-ai": ("pydantic_ai", _pydantic_ai),
    "openai-agents": ("agents", _openai_agents),
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--framework", choices=list(FLOOR_WORKLOADS), action="append")
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=9)
    args = parser.parse_args(argv)
    installed = [name for name, (module, _) in FLOOR_WORKLOADS.items() if importlib.util.find_spec(module) is not None]
    for framework in args.framework or installed:
        floor(framework, args.runs, args.repeats)
    return 0


def floor(framework: str, runs: int, repeats: int) -> None:
    home = tempfile.mkdtemp(prefix="openprogram-floor-")
    os.environ["OPENPROGRAM_HOME"] = home
    import logging

    logging.getLogger("openprogram").setLevel(logging.ERROR)
    import openprogram
    import pydantic_core
    from openprogram import _record, _scopes

    identifier, run = FLOOR_WORKLOADS[framework][1]()
    probe = run()
    if asyncio.iscoroutine(probe):
        loop = asyncio.new_event_loop()
        loop.run_until_complete(probe)
        step: Callable[[], Any] = lambda: loop.run_until_complete(run())  # noqa: E731
    else:
        step = run

    # One instrumented run, keeping every value openprogram encodes.
    captured: list[Any] = []
    encode = _record.capture_json

    def keeping(value: object) -> str:
        captured.append(value)
        return encode(value)

    path = os.path.join(home, "recorded.db")
    store = openprogram.open_store(f"sqlite:///{path}")
    openprogram.instrument(identifier)
    try:
        with openprogram.session_context(store=store):
            step()  # warm-up: first-time set-up
            _record.capture_json = _scopes.capture_json = keeping  # type: ignore[assignment]
            try:
                step()
            finally:
                _record.capture_json = _scopes.capture_json = encode  # type: ignore[assignment]
    finally:
        openprogram.uninstrument()
    openprogram.flush()
    source = sqlite3.connect(path)
    found = source.execute("SELECT sql FROM sqlite_master WHERE tbl_name = 'calls' AND sql IS NOT NULL")
    schema = [sql for (sql,) in found]
    columns = [row[1] for row in source.execute("PRAGMA table_info(calls)")]
    recorded = source.execute("SELECT * FROM calls WHERE kind != 'turn' ORDER BY started_at").fetchall()
    rows = recorded[len(recorded) // 2 :]  # the second of the two runs
    source.close()
    call_id = columns.index("call_id")

    def uninstrumented() -> None:
        for _ in range(runs):
            step()

    uninstrumented()  # warm-up
    started = time.perf_counter()
    uninstrumented()
    per_commit = max(1, round(0.050 / ((time.perf_counter() - started) / runs)))  # the writer's 50 ms cycle

    def encoding() -> None:
        for _ in range(runs):
            for value in captured:
                encode(value)

    def encoding_rust() -> None:
        to_json = pydantic_core.to_json
        for _ in range(runs):
            for value in captured:
                to_json(value, fallback=str)

    insert = f"INSERT INTO calls VALUES ({','.join('?' * len(columns))})"
    serial = [0]
    # The cheapest table SQLite has, for comparison: the same columns, no key, no index.
    bare_table = f"CREATE TABLE calls ({', '.join(columns)})"

    def storing_into(file: str, ddl: list[str], synced_at_flush: bool = False) -> Callable[[], None]:
        target = sqlite3.connect(os.path.join(home, file), isolation_level=None)
        target.execute("PRAGMA journal_mode = WAL")
        target.execute("PRAGMA synchronous = NORMAL" if synced_at_flush else "PRAGMA synchronous = FULL")
        for sql in ddl:
            target.execute(sql)

        def storing() -> None:
            batch: list[tuple[Any, ...]] = []
            for run in range(runs):
                for row in rows:
                    serial[0] += 1
                    fresh = list(row)
                    fresh[call_id] = f"{row[call_id]}-{serial[0]}"
                    batch.append(tuple(fresh))
                if run % per_commit == per_commit - 1 or run == runs - 1:
                    target.execute("BEGIN")
                    target.executemany(insert, batch)
                    target.execute("COMMIT")
                    batch.clear()
            if synced_at_flush:  # the flush: one FULL commit syncs the whole WAL
                target.execute("PRAGMA synchronous = FULL")
                target.execute("BEGIN IMMEDIATE")
                target.execute("CREATE TABLE IF NOT EXISTS synced (at REAL)")
                target.execute("INSERT INTO synced VALUES (?)", (time.time(),))
                target.execute("COMMIT")
                target.execute("PRAGMA synchronous = NORMAL")

        return storing

    setups: dict[str, Callable[[], None]] = {
        "uninstrumented": uninstrumented,
        "encode": encoding,
        "encode, pydantic-core": encoding_rust,
        "store": storing_into("floor.db", schema),
        "store, synced at flush": storing_into("synced.db", schema, synced_at_flush=True),
        "store, bare table": storing_into("bare.db", [bare_table]),
    }
    samples: dict[str, list[float]] = {name: [] for name in setups}
    order = list(setups)
    for fn in setups.values():
        fn()
    for rep in range(repeats):
        for name in order[rep % len(order) :] + order[: rep % len(order)]:
            started = time.process_time()
            setups[name]()
            samples[name].append(time.process_time() - started)
    median = {name: statistics.median(values) for name, values in samples.items()}
    base = median["uninstrumented"]
    size = sum(len(encode(value)) for value in captured)
    print(f"P3 floor, {framework} workload: {len(captured)} values encoded ({size:,} chars) and {len(rows)} rows "
          f"stored a run (a commit every {per_commit} runs); CPU time, medians of {repeats} x {runs} runs")  # fmt: skip
    for name, value in median.items():
        share = "" if name == "uninstrumented" else f"  {value / base * 100:5.1f}% of the run"
        print(f"  {name:22s} {value / runs * 1e6:8.1f} us a run{share}")
    floor = (median["encode"] + median["store"]) / base
    fastest = (median["encode, pydantic-core"] + median["store, bare table"]) / base
    synced = (median["encode"] + median["store, synced at flush"]) / base
    print(f"  encode + store: {floor * 100:.1f}% of the run; synced at flush {synced * 100:.1f}% (the floor now); "
          f"with pydantic-core's encoder and the bare table {fastest * 100:.1f}%")  # fmt: skip


if __name__ == "__main__":
    raise SystemExit(main())

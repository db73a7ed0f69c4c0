"""P3's floor, split: what keeping a P3 workload's record costs at the least, hooks aside.

Records one run of a P3 workload (``p3_langgraph.py``'s graph or ``p3_semantic_kernel.py``'s
auto-function-calling prompt, as ``p3_instructions.py`` builds them; ``p3_crewai.py``'s crew,
``p3_pydantic_ai.py``'s agent, ``p3_openai_agents.py``'s triage agent) as ``_floor.py`` does,
then, in the same process, against the uninstrumented run measured alongside (CPU time, all
threads, interleaved medians), replays its record in parts:

- **encode**: its values through ``capture_json``, as in the floor;
- **encode, pydantic-core**: the same through ``pydantic_core.to_json`` (Rust), the fastest
  encoder installed, with no bounding or redaction at all;
- **store, synced each cycle**: its rows into the store's schema, every writer cycle's commit
  synced (``synchronous=FULL``), as the writer used to;
- **store, synced at flush**: the same synced once at the end of the sample, as in the floor
  (the writer now);
- **store, bare table**: into a table with no key and no index, the cheapest SQLite has (a
  store could not find a session's calls in it);
- **encode, in place**: the workload run with its values encoded where they are at hand, by
  its own tools, nodes and scripted model (``_floor.point``), not in a loop of their own;
- **floor, in place**: that, with the rows stored as in the floor: the record alone, its values
  encoded where openprogram encodes them;
- **openprogram**: the adapter recording the workload into a SQLite store, a session a sample,
  flushed inside the timing.

Each ``p3-<framework>`` benchmark measures the floor (encode + store, synced at flush) in its
own run; this one tells its parts apart, and sets openprogram against both floors.

    python bench/p3_floor.py [--framework NAME] [--runs 100] [--repeats 9]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _workloads import WORKLOADS, installed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--framework", choices=list(WORKLOADS), action="append")
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=9)
    args = parser.parse_args(argv)
    for framework in args.framework or installed():
        floor(framework, args.runs, args.repeats)
    return 0


def floor(framework: str, runs: int, repeats: int) -> None:
    home = tempfile.mkdtemp(prefix="openprogram-floor-")
    os.environ["OPENPROGRAM_HOME"] = home
    import logging

    logging.getLogger("openprogram").setLevel(logging.ERROR)
    import openprogram
    import pydantic_core
    from _floor import TARGET, Floor

    identifier, run = WORKLOADS[framework][1]()
    recorded = Floor.of(identifier, run, home)
    step = recorded.step

    def uninstrumented() -> None:
        for _ in range(runs):
            step()

    store = openprogram.open_store(f"sqlite:///{home}/openprogram.db")

    def recorded_by_openprogram() -> None:
        openprogram.instrument(identifier)
        try:
            with openprogram.session_context(store=store):  # flushes on exit: durable, inside the timing
                uninstrumented()
        finally:
            openprogram.uninstrument(identifier)

    def encoding_rust() -> None:
        to_json = pydantic_core.to_json
        for _ in range(runs):
            for value in recorded.values:
                to_json(value, fallback=str)

    # The cheapest table SQLite has, for comparison: the same columns, no key, no index.
    bare_table = f"CREATE TABLE calls ({', '.join(recorded.columns)})"
    stores = {
        "store, synced each cycle": recorded.storing("each.db", recorded.schema),
        "store, synced at flush": recorded.storing("synced.db", recorded.schema, synced_at_flush=True),
        "store, bare table": recorded.storing("bare.db", [bare_table]),
    }
    setups: dict[str, Callable[[], None]] = {
        "uninstrumented": uninstrumented,
        "encode": lambda: recorded.encode(runs),
        "encode, pydantic-core": encoding_rust,
        **{name: (lambda store=store: store(runs)) for name, store in stores.items()},  # type: ignore[misc]
        "encode, in place": lambda: recorded.encoding_in_place(runs),
        "floor, in place": lambda: recorded.in_place(runs),
        "openprogram": recorded_by_openprogram,
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
    print(
        f"P3 floor, {framework} workload: {recorded.describe()} (a commit every {recorded.per_commit} runs); "
        f"CPU time, medians of {repeats} x {runs} runs"
    )
    for name, value in median.items():
        share = "" if name == "uninstrumented" else f"  {value / base * 100:5.1f}% of the run"
        if name in RUN_INCLUDED:
            share = f"  {(value / base - 1) * 100:+5.1f}% over the run"
        print(f"  {name:24s} {value / runs * 1e6:8.1f} us a run{share}")
    each = (median["encode"] + median["store, synced each cycle"]) / base
    fastest = (median["encode, pydantic-core"] + median["store, bare table"]) / base
    synced = (median["encode"] + median["store, synced at flush"]) / base
    print(
        f"  encode + store: {synced * 100:.1f}% of the run (the floor: synced at flush); every cycle synced "
        f"{each * 100:.1f}%; with pydantic-core's encoder and the bare table {fastest * 100:.1f}%"
    )
    in_place = median["floor, in place"] / base - 1
    encoding_in_place = (median["encode, in place"] / base - 1) / (median["encode"] / base)
    overhead = median["openprogram"] / base - 1
    print(
        f"  openprogram {overhead * 100:+.1f}%: {overhead / synced:.2f}x the floor (target <= {TARGET}x: "
        f"{synced * TARGET * 100:.1f}%), {overhead / in_place:.2f}x the floor in place ({in_place * 100:+.1f}%; "
        f"its encoding {encoding_in_place:.1f}x the loop's)"
    )


#: Setups whose samples include the workload's runs: their share is what they add to the run.
RUN_INCLUDED = ("encode, in place", "floor, in place", "openprogram")


if __name__ == "__main__":
    raise SystemExit(main())

"""Benchmark P3 in instructions: the adapters' overhead counted by callgrind, not timed.

Wall-clock P3 figures swing by several points from run to run on a shared
machine; instruction counts do not (valgrind's callgrind counts every
instruction of every thread, whatever else the machine is doing). Each
P3 workload (``_workloads.py``: every ``p3-<framework>`` benchmark's own) runs
under callgrind in these modes:

- ``uninstrumented``: the framework alone;
- ``openprogram``: ``instrument()`` inside a ``session_context`` on a SQLite store;
- ``memory store``: the same on a ``memory://`` store (the difference is SQLite's share);
- ``no capture``: the same on SQLite with every capture replaced by ``null``
  (the difference is what capturing inputs and outputs costs);
- ``floor``: the run's record replayed with no hooks (``_floor.py``), a transaction
  per flush of the ``openprogram`` mode: the figure the target (1.5x) is set against.

Each mode runs twice, with 10 and with 70 runs; the difference over 60 runs
is the per-run count, free of start-up and import costs. Hash randomisation
is off, numpy's BLAS runs no worker threads, and the background writer runs only
at explicit flushes (one every 8 runs, about one 50 ms writer cycle of a real run),
so counts repeat to within about 0.2 %. Needs ``valgrind``.

``--quick`` counts 2 and 10 runs in the ``uninstrumented``, ``openprogram``,
``no capture`` and ``floor`` modes only: a rough figure in minutes for one framework (on a loaded
machine its uninstrumented count moved by 2 % between runs: too coarse for a change of 1 %).

    python bench/p3_instructions.py [--framework NAME] [--jobs 2] [--quick]
"""

from __future__ import annotations

import argparse
import concurrent.futures
import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from _floor import TARGET  # noqa: E402
from _workloads import WORKLOADS, installed  # noqa: E402

MODES = ("uninstrumented", "openprogram", "memory store", "no capture", "floor")
FLUSH_EVERY = 8
FEW, MANY = 10, 70
# numpy's OpenBLAS (Semantic Kernel and CrewAI import numpy) starts worker threads that spin
# while idle; callgrind counts their spinning by elapsed time, millions of instructions at random.
ONE_BLAS_THREAD = {"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}


def child(framework: str, mode: str, runs: int) -> None:
    """The measured program: warm up, then ``runs`` runs in ``mode``."""
    import logging

    sys.path.insert(0, HERE)
    home = tempfile.mkdtemp(prefix="openprogram-bench-")
    os.environ["OPENPROGRAM_HOME"] = home
    logging.getLogger("openprogram").setLevel(logging.ERROR)
    import openprogram
    from _floor import synchronous
    from _util import capture_bindings
    from openprogram._recording import writer

    writer.INTERVAL = 1000.0  # the writer runs at the explicit flushes only: counts repeat
    identifier, run = WORKLOADS[framework][1]()
    if mode == "floor":
        from _floor import Floor

        floor = Floor.of(identifier, run, home)
        floor.per_commit = FLUSH_EVERY  # a transaction where the openprogram mode flushes
        floor.cost(3)
        floor.cost(runs)
        return
    store = openprogram.open_store("memory://" if mode == "memory store" else f"sqlite:///{home}/bench.db")
    step = synchronous(run)

    def timed(n: int) -> None:
        if mode == "uninstrumented":
            for _ in range(n):
                step()
            return
        with openprogram.session_context(store=store):
            for i in range(n):
                step()
                if i % FLUSH_EVERY == FLUSH_EVERY - 1:
                    openprogram.flush()

    if mode != "uninstrumented":
        openprogram.instrument(identifier)  # the framework is imported: its adapter (and the kit) too
    if mode == "no capture":
        for module in capture_bindings():
            module.capture_json = lambda value: "null"
    timed(3)  # warm-up: caches, first-time wrapper set-up, the store's schema
    timed(runs)


def _instructions(framework: str, mode: str, runs: int, directory: str) -> int:
    out = os.path.join(directory, f"{framework}-{mode.replace(' ', '-')}-{runs}.out")
    env = dict(os.environ, PYTHONHASHSEED="0", **ONE_BLAS_THREAD)
    command = [
        "valgrind",
        "--tool=callgrind",
        f"--callgrind-out-file={out}",
        sys.executable,
        __file__,
        "--child",
        framework,
        mode,
        str(runs),
    ]
    done = subprocess.run(command, check=False, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"{framework} {mode} {runs} failed:\n{done.stderr[-3000:]}")
    with open(out) as f:
        for line in f:
            found = re.match(r"(?:summary|totals): (\d+)", line)
            if found:
                return int(found.group(1))
    raise SystemExit(f"no instruction total in {out}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--framework", choices=sorted(WORKLOADS), action="append")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--quick", action="store_true", help="2 and 10 runs, no memory-store mode")
    parser.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        framework, mode, runs = args.child
        child(framework, mode, int(runs))
        return 0
    if shutil.which("valgrind") is None:
        print("P3 instructions: skipped, valgrind is not installed")
        return 0
    directory = tempfile.mkdtemp(prefix="openprogram-callgrind-")
    few, many = (2, 10) if args.quick else (FEW, MANY)
    modes = tuple(mode for mode in MODES if not (args.quick and mode == "memory store"))
    for framework in args.framework or installed():
        jobs = [(mode, runs) for mode in modes for runs in (few, many)]
        with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
            futures = {job: pool.submit(_instructions, framework, *job, directory) for job in jobs}
            counts = {job: future.result() for job, future in futures.items()}
        per_run = {mode: (counts[mode, many] - counts[mode, few]) / (many - few) for mode in modes}
        base = per_run["uninstrumented"]
        ours = per_run["openprogram"] - base
        print(f"P3 {framework} in instructions per run (callgrind, python {sys.version.split()[0]})")
        print(f"  uninstrumented {base / 1e6:8.2f}M")
        print(
            f"  openprogram    {per_run['openprogram'] / 1e6:8.2f}M  overhead {ours / 1e3:7.0f}k "
            f"{ours / base * 100:+.1f}%"
        )
        sqlite = per_run["openprogram"] - per_run.get("memory store", per_run["openprogram"])
        capture = per_run["openprogram"] - per_run["no capture"]
        parts = [
            ("capturing inputs/outputs", capture),
            ("the rest (hooks, recording, encoding rows)", ours - sqlite - capture),
        ]
        if "memory store" in per_run:
            parts.insert(0, ("SQLite store", sqlite))
        else:
            parts[1] = ("the rest (hooks, recording, SQLite, encoding rows)", ours - capture)
        for label, part in parts:
            print(f"    {label:44s} {part / 1e3:7.0f}k  {part / base * 100:+.1f}%  ({part / ours * 100:.0f}% of ours)")
        floor = per_run["floor"]
        met = "met" if ours <= TARGET * floor else "not met"
        print(
            f"  floor          {floor / 1e3:8.0f}k  {floor / base * 100:+.1f}%: openprogram {ours / floor:.2f}x it "
            f"(target <= {TARGET}x: {met})"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

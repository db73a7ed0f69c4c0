"""In-process A/B of SK's P3 workload: uninstrumented vs openprogram vs SK's diagnostics, CPU split by thread.

The modes of ``p3_semantic_kernel.py`` interleaved round by round in one process;
for each, the median CPU time a run of the whole process (all threads), of the
caller's thread alone (the hooks and capture), and so of the other threads (the
writer), and the garbage collections a run. ``--gc off`` runs with the collector
disabled, to tell its share. ``--before DIR`` adds a mode ``before``: the adapter
as copied into DIR (a copy of the package ``integrations/semantic_kernel/``),
loaded as a package of its own, so two versions of the adapter are compared in
one process.

    python bench/sk_ab.py [--runs 100] [--rounds 11] [--gc on|off] [--before DIR]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import importlib.util
import os
import statistics
import sys
import tempfile
import time
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
os.environ.setdefault("OPENPROGRAM_HOME", tempfile.mkdtemp(prefix="openprogram-sk-ab-"))

import openprogram
from p3_semantic_kernel import exporter, make_kernel, sk_diagnostics


def _load_before(directory: str) -> Any:
    """The integration of the adapter package copied into ``directory``, loaded as the package ``sk_before``."""
    spec = importlib.util.spec_from_file_location(
        "sk_before", os.path.join(directory, "__init__.py"), submodule_search_locations=[directory]
    )
    assert spec is not None and spec.loader is not None
    package = importlib.util.module_from_spec(spec)
    sys.modules["sk_before"] = package
    spec.loader.exec_module(package)
    return package.SemanticKernelIntegration()


async def _sample(
    mode: str, kernel: Any, arguments: Any, n: int, store: Any, before: Any = None
) -> tuple[float, float, int]:
    """Process CPU, caller's-thread CPU and collections for ``n`` runs in ``mode``."""

    async def timed() -> tuple[float, float, int]:
        collections = sum(s["collections"] for s in gc.get_stats())
        cpu, thread = time.process_time(), time.thread_time()
        for _ in range(n):
            await kernel.invoke_prompt("Plan a trip to Oslo.", arguments=arguments)
        if mode in ("openprogram", "before"):
            openprogram.flush()  # the writer's work for these runs is in the sample
        return (
            time.process_time() - cpu,
            time.thread_time() - thread,
            sum(s["collections"] for s in gc.get_stats()) - collections,
        )

    if mode == "openprogram":
        openprogram.instrument("semantic_kernel")
        try:
            async with openprogram.session_context(store=store):
                return await timed()
        finally:
            openprogram.uninstrument("semantic_kernel")
    if mode == "before":
        before.arm()
        try:
            async with openprogram.session_context(store=store):
                return await timed()
        finally:
            before.disable()
    if mode == "sk_otel":
        sk_diagnostics(True)
        try:
            return await timed()
        finally:
            sk_diagnostics(False)
            exporter.clear()
    return await timed()


async def _main(runs: int, rounds: int, collect: bool, before_dir: str | None) -> None:
    sk_diagnostics(False)
    store = openprogram.open_store(f"sqlite:///{os.environ['OPENPROGRAM_HOME']}/ab.db")
    kernel, arguments = make_kernel()
    before = _load_before(before_dir) if before_dir else None
    modes = ("baseline", "openprogram", "sk_otel") + (("before",) if before is not None else ())
    for mode in modes:
        await _sample(mode, kernel, arguments, 10, store, before)
    if not collect:
        gc.collect()
        gc.disable()
    results: dict[str, list[tuple[float, float, int]]] = {m: [] for m in modes}
    for r in range(rounds):
        k = r % len(modes)  # rotate so no mode always runs first
        for mode in modes[k:] + modes[:k]:
            results[mode].append(await _sample(mode, kernel, arguments, runs, store, before))
    gc.enable()
    base = statistics.median(s[0] for s in results["baseline"])
    print(f"SK P3 in-process A/B: {runs} runs x {rounds} rounds, gc {'on' if collect else 'off'}; us a run (median)")
    for mode in modes:
        proc = statistics.median(s[0] for s in results[mode]) / runs * 1e6
        thread = statistics.median(s[1] for s in results[mode]) / runs * 1e6
        gcs = statistics.median(s[2] for s in results[mode]) / runs
        print(
            f"  {mode:<12} process {proc:8.1f} ({100 * (proc / (base / runs * 1e6) - 1):+6.1f} %)  "
            f"caller's thread {thread:8.1f}  other threads {proc - thread:7.1f}  collections {gcs:.2f}"
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=11)
    parser.add_argument("--gc", choices=["on", "off"], default="on")
    parser.add_argument("--before", default=None, help="a directory holding another version of the adapter")
    args = parser.parse_args(argv)
    asyncio.run(_main(args.runs, args.rounds, args.gc == "on", args.before))
    return 0


if __name__ == "__main__":
    sys.exit(main())

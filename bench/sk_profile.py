"""Where openprogram's cost in an SK P3 run goes: Python calls per run and a cProfile, instrumented vs not.

Runs ``p3_semantic_kernel.py``'s workload in one process, uninstrumented and then
instrumented (inside a ``session_context`` on a SQLite store), with the garbage
collector off during the measured runs. Prints the Python function calls per run
of each (a count that does not depend on the machine's load: ``sys.setprofile``
on the caller's thread) and, with ``--profile``, the instrumented run's cProfile
restricted to openprogram and semantic_kernel frames.

    python bench/sk_profile.py [--runs 200] [--profile tottime|cumulative]
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import gc
import os
import pstats
import sys
import tempfile
from collections import Counter
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
os.environ.setdefault("OPENPROGRAM_HOME", tempfile.mkdtemp(prefix="openprogram-sk-profile-"))

import openprogram
from p3_semantic_kernel import make_kernel, sk_diagnostics


async def _runs(kernel: Any, arguments: Any, n: int) -> None:
    for _ in range(n):
        await kernel.invoke_prompt("Plan a trip to Oslo.", arguments=arguments)


def _counted(loop: asyncio.AbstractEventLoop, kernel: Any, arguments: Any, n: int) -> Counter[str]:
    """Python calls made on this thread during ``n`` runs, by module."""
    calls: Counter[str] = Counter()

    def profile(frame: Any, event: str, arg: Any) -> None:
        if event == "call":
            code = frame.f_code
            calls[f"{frame.f_globals.get('__name__', '?')}:{code.co_name}:{code.co_firstlineno}"] += 1

    gc.disable()
    sys.setprofile(profile)
    try:
        loop.run_until_complete(_runs(kernel, arguments, n))
    finally:
        sys.setprofile(None)
        gc.enable()
    return calls


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--profile", choices=["tottime", "cumulative"], default=None)
    parser.add_argument("--top", type=int, default=40)
    args = parser.parse_args(argv)
    sk_diagnostics(False)
    store = openprogram.open_store(f"sqlite:///{os.environ['OPENPROGRAM_HOME']}/profile.db")
    kernel, arguments = make_kernel()
    loop = asyncio.new_event_loop()
    loop.run_until_complete(_runs(kernel, arguments, 10))
    bare = _counted(loop, kernel, arguments, args.runs)
    openprogram.instrument("semantic_kernel")
    session = openprogram.session_context(store=store)
    session.__enter__()  # on the loop's thread, outside its tasks: every run's task copies its context
    loop.run_until_complete(_runs(kernel, arguments, 10))
    openprogram.flush()
    counted = _counted(loop, kernel, arguments, args.runs)
    openprogram.flush()
    total_bare, total = sum(bare.values()) / args.runs, sum(counted.values()) / args.runs
    print(
        f"Python calls a run (caller's thread): uninstrumented {total_bare:.0f}, openprogram {total:.0f} "
        f"(+{total - total_bare:.0f}, +{100 * (total / total_bare - 1):.1f} %)"
    )
    diff = {m: (counted[m] - bare.get(m, 0)) / args.runs for m in counted}
    for module, extra in sorted(diff.items(), key=lambda kv: -kv[1])[: args.top]:
        if abs(extra) >= 0.5:
            print(f"  {extra:+8.1f}  {module}")
    if args.profile:
        profiler = cProfile.Profile()
        gc.disable()
        profiler.enable()
        loop.run_until_complete(_runs(kernel, arguments, args.runs))
        profiler.disable()
        gc.enable()
        stats = pstats.Stats(profiler).sort_stats(args.profile)
        stats.print_stats(r"openprogram|semantic_kernel", args.top)
    session.__exit__(None, None, None)
    openprogram.uninstrument("semantic_kernel")
    return 0


if __name__ == "__main__":
    sys.exit(main())

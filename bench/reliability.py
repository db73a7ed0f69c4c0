"""The long reliability runs of issue 7, with figures: ``python -m bench.reliability [--quick] [SECTION...]``.

Sections: isolation, crash, writers, memory, show. Every figure is printed; a
section that finds a problem prints it and the run exits non-zero. Run from the
repository root. ``--quick`` divides the counts by ten.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

if __package__ in (None, ""):  # run as a script (bench/__main__.py runs scripts by path)
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import openprogram
from openprogram.stores.sqlite import SQLiteStore

from bench import reliability_workloads as w

failures: list[str] = []


def figure(section: str, name: str, value: object) -> None:
    print(f"{section:<10} {name:<44} {value}", flush=True)


def fail(section: str, message: str) -> None:
    failures.append(f"{section}: {message}")
    figure(section, "PROBLEM", message)


def isolation(tmp: Path, scale: float) -> None:
    sessions, threads, rounds = int(1000 * scale), 16, max(1, int(10 * scale))
    store = openprogram.open_store(f"sqlite:///{tmp / 'isolation.db'}")
    extra = []
    for name, make in sorted(w.FRAMEWORK_WORKLOADS.items()):
        try:
            extra.append(make())
            figure("isolation", f"{name} workload", "included")
        except w.WorkloadUnavailable as exc:
            figure("isolation", f"{name} workload", f"skipped: {exc}")
    started = time.perf_counter()
    expected = w.run_isolation(store, sessions=sessions, threads=threads, thread_rounds=rounds, extra=extra)
    elapsed = time.perf_counter() - started
    problems = w.check_isolation(store, expected)
    calls = sum(s.call_count for s in store.list_sessions())
    figure("isolation", "asyncio sessions (concurrent)", sessions)
    figure("isolation", "thread sessions (16 threads)", threads * rounds)
    figure("isolation", "calls recorded and checked", calls)
    figure("isolation", "seconds to record", f"{elapsed:.1f}")
    figure("isolation", "misattributed calls (session or parent)", len(problems))
    for p in problems[:10]:
        fail("isolation", p)
    openprogram.uninstrument()


def crash(tmp: Path, scale: float) -> None:
    rounds = max(2, int(20 * scale))
    url = f"sqlite:///{tmp / 'crash.db'}"
    progress = tmp / "crash-progress.jsonl"
    for seed in range(rounds):
        w.crash_once(url, "crash-bench", seed, progress, tmp / "crash-home")
    store = openprogram.open_store(url)
    assert isinstance(store, SQLiteStore)
    try:
        result = w.check_after_crashes(store, "crash-bench", progress, rounds)
    except AssertionError as exc:
        fail("crash", str(exc))
        return
    figure("crash", "processes SIGKILLed at seeded random points", rounds)
    figure("crash", "calls in the session", result["calls"])
    figure("crash", "calls shown interrupted", result["interrupted"])
    figure("crash", "flushed records lost", 0)
    figure("crash", "PRAGMA integrity_check", store.integrity_check())
    with openprogram.session_context("crash-bench", store=store) as h:
        w.leaf("after", "0")
    openprogram.flush()
    figure("crash", "next process appends (created=False)", not h.created)


def writers(tmp: Path, scale: float) -> None:
    calls = int(25_000 * scale)
    urls = [("sqlite", f"sqlite:///{tmp / 'writers.db'}")]
    postgres = os.environ.get("OPENPROGRAM_TEST_POSTGRES")
    if postgres and __import__("importlib").util.find_spec("openprogram.stores.postgres"):
        urls.append(("postgres", postgres))
    else:
        figure("writers", "postgresql", "skipped: no store module or OPENPROGRAM_TEST_POSTGRES unset")
    for name, url in urls:
        started = time.perf_counter()
        results = w.run_writers(url, 4, calls, tmp / "writers-home")
        elapsed = time.perf_counter() - started
        try:
            total = w.check_writers(openprogram.open_store(url), results, calls)
        except AssertionError as exc:
            fail("writers", f"{name}: {exc}")
            continue
        figure("writers", f"{name}: processes x calls", f"4 x {calls}")
        figure("writers", f"{name}: records found (tool calls + turns)", total)
        figure("writers", f"{name}: lost / duplicated", "0 / 0")
        figure("writers", f"{name}: seconds (incl. process start)", f"{elapsed:.1f}")
        figure("writers", f"{name}: calls per second", f"{4 * calls / elapsed:,.0f}")


def memory(tmp: Path, scale: float) -> None:
    calls = int(1_000_000 * scale)
    code = (
        "import json, sys; sys.path.insert(0, '.'); from bench.reliability_workloads import record_flat; "
        f"print(json.dumps(record_flat({calls})))"
    )
    env = dict(os.environ, OPENPROGRAM_HOME=str(tmp / "memory-home"), OPENPROGRAM_STORE=f"sqlite:///{tmp / 'p4.db'}")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=False)
    if out.returncode != 0:
        fail("memory", out.stderr[-2000:])
        return
    r = json.loads(out.stdout.strip().splitlines()[-1])
    mib = 1024 * 1024
    figure("memory", "calls in one session, one process", f"{r['calls']:,}")
    figure("memory", "seconds to record", f"{r['seconds']:.1f} ({r['calls'] / r['seconds']:,.0f} calls/s)")
    figure("memory", "RSS after warm-up (MiB)", f"{r['baseline_rss'] / mib:.1f}")
    figure("memory", "peak RSS sampled (MiB)", f"{r['peak_rss'] / mib:.1f}")
    figure("memory", "RSS growth (MiB; limit 64)", f"{r['growth'] / mib:.1f}")
    figure("memory", "largest writer queue seen", f"{r['max_queue']:,}")
    if r["growth"] >= 64 * mib:
        fail("memory", f"RSS grew {r['growth'] / mib:.1f} MiB")


def _cli_run(args: list[str], env: dict[str, str]) -> tuple[float, float, int, bytes]:
    """Wall seconds, CPU seconds, max RSS (KiB) of one CLI process, and its output."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "openprogram", *args], env=env, capture_output=True, check=True)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, after.ru_maxrss, proc.stdout


def show(tmp: Path, scale: float) -> None:
    env = dict(os.environ, OPENPROGRAM_HOME=str(tmp / "show-home"))
    sizes = {"10k": max(100, int(1_000 * scale)), "100k": max(1_000, int(10_000 * scale))}
    for label, nodes in sizes.items():
        url = f"sqlite:///{tmp / f'show-{label}.db'}"
        store = openprogram.open_store(url)
        session_id = w.record_wide_session(store, nodes=nodes, tools_per_node=9)
        openprogram.flush()
        calls = nodes * 10 + 2
        wall, cpu, _, text = _cli_run(["--store", url, "show", session_id], env)
        lines = text.decode().splitlines()
        figure("show", f"{calls:,}-call session: show wall / CPU s", f"{wall:.2f} / {cpu:.2f}")
        figure("show", f"{calls:,}-call session: lines drawn", len(lines))
        # --json in a fresh process each, so ru_maxrss is that process's peak.
        code = (
            "from openprogram._cli import main; "
            f"main(['--store', {url!r}, 'show', {session_id!r}, '--json'], out=open('/dev/null', 'w')); "
            # VmHWM, not ru_maxrss: Linux keeps ru_maxrss across exec, so it would report this (parent) process.
            "print([l.split()[1] for l in open('/proc/self/status') if l.startswith('VmHWM')][0])"
        )
        started = time.perf_counter()
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
        figure("show", f"{calls:,}-call session: --json wall s", f"{time.perf_counter() - started:.2f}")
        figure("show", f"{calls:,}-call session: --json peak RSS MiB", f"{int(out.stdout.split()[-1]) / 1024:.1f}")
        if label == "100k":
            print("\n".join("           | " + line for line in lines), flush=True)
    # Worst case for collapsing: siblings that never repeat.
    url = f"sqlite:///{tmp / 'show-varied.db'}"
    store = openprogram.open_store(url)
    with openprogram.session_context(store=store) as h:
        for n in range(int(100_000 * scale)):
            with openprogram.call_scope("node", f"n{n % 2}"):
                pass
    openprogram.flush()
    wall, cpu, _, text = _cli_run(["--store", url, "show", h.session_id], env)
    figure("show", "100k alternating siblings: wall / CPU s", f"{wall:.2f} / {cpu:.2f}")
    figure("show", "100k alternating siblings: lines (cap 2000)", len(text.decode().splitlines()))


SECTIONS = {"isolation": isolation, "crash": crash, "writers": writers, "memory": memory, "show": show}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("sections", nargs="*", help=", ".join(SECTIONS))
    parser.add_argument("--quick", action="store_true", help="a tenth of the counts")
    args = parser.parse_args()
    scale = 0.1 if args.quick else 1.0
    figure("machine", "cpus / load average", f"{os.cpu_count()} / {os.getloadavg()[0]:.1f}")
    with tempfile.TemporaryDirectory(prefix="openprogram-reliability-") as tmp:
        os.environ["OPENPROGRAM_HOME"] = str(Path(tmp) / "home")
        os.environ["OPENPROGRAM_NO_SESSION"] = "warn"
        for name in args.sections or list(SECTIONS):
            started = time.perf_counter()
            SECTIONS[name](Path(tmp), scale)
            figure(name, "section seconds", f"{time.perf_counter() - started:.1f}")
    print("FAILED:\n  " + "\n  ".join(failures) if failures else "all reliability figures within their limits")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

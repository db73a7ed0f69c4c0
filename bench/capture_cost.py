"""Capture cost: what capturing typical tool inputs, outputs and messages costs a call, and a KB of captured text.

The values are benign (prose, a file's text, a JSON tool result, code, log lines): what redaction
scans on every call without finding anything. ``--before REF`` runs the same values through the
package as it was at git ``REF`` too, the two in child processes taking turns (same run, same
load); ``--instructions`` counts instructions under valgrind's callgrind instead (each value
captured 0 and N times, differenced), for ``REF`` as well when given.

    python -m bench capture-cost -- [--before REF] [--instructions]
"""

from __future__ import annotations

import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Callable
from typing import Any

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ROUNDS = 9
N_CALLS = 2_000  # captures a timed sample
N_COUNTED = 200  # captures a callgrind count

_PROSE = (
    "The agent read the report and summarised its key points for the user: the session store keeps "
    "every call of a run with its inputs and outputs, the viewer reads them back, and an export "
    "sends them to a collector. It found three open questions (retention, access and cost) and "
    "suggested a follow-up meeting next week with the platform team; see section 4.2 for details. "
)
_CODE = '''def load(path: str, limit: int = 10) -> list[dict[str, object]]:
    """Read up to ``limit`` records from ``path`` (JSON lines)."""
    out = []
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f):
            if n >= limit:
                break
            record = json.loads(line)
            record["tokens"] = len(record.get("text", "").split())
            out.append(record)
    return out
'''
_LOG = (
    "2026-12-07T01:13:55Z INFO worker-3 request_id=5f0c2a1e-8a1b-4c55-9d3e-2b7f1c9a0e44 GET /api/items?page=2 "
    "status=200 duration_ms=41 user=ann sha=3f786850e387550fdab836ed7e6dc881de23001b\n"
)


def values() -> dict[str, Callable[[], Any]]:
    """Benign captures of the shapes a run records, by name (each made fresh, as a call makes them)."""
    prose = (_PROSE * 6)[:1500]
    results = [
        {"title": f"Result {i}", "url": f"https://example.com/docs/{i}", "snippet": _PROSE[: 120 + i]} for i in range(8)
    ]
    return {
        "tool inputs (small)": lambda: {"query": "what is a session", "limit": 5},
        "tool output (file text, 1.5 KB)": lambda: {"path": "/srv/app/README.md", "text": prose},
        "tool output (JSON results, 2 KB)": lambda: {"results": results, "total": 8},
        "message (prose, 1.5 KB)": lambda: {"role": "user", "content": prose},
        "message (code, 2 KB)": lambda: {"role": "assistant", "content": _CODE * 4},
        "tool output (log lines, 2 KB)": lambda: {"lines": (_LOG * 12)[:2048]},
    }


def _timed() -> dict[str, float]:
    """ns per capture of each value (median of repeats), and the captured KB of each."""
    from openprogram._capture import capture_json

    figures: dict[str, float] = {}
    for name, make in values().items():
        value = make()
        captured_kb = len(capture_json(value)) / 1024
        samples = []
        for _ in range(5):
            start = time.perf_counter_ns()
            for _ in range(N_CALLS):
                capture_json(value)
            samples.append((time.perf_counter_ns() - start) / N_CALLS)
        figures[name] = statistics.median(samples)
        figures[name + " KB"] = captured_kb
    return figures


def _counted(name: str, n: int) -> None:
    from openprogram._capture import capture_json

    value = values()[name]()
    for _ in range(50):  # the same warm-up for every count
        capture_json(value)
    for _ in range(n):
        capture_json(value)


_trees_made: list[str] = []


def _tree_of(ref: str) -> str:
    """A directory importing ``openprogram`` as it was at ``ref`` (its core and integrations)."""
    target = tempfile.mkdtemp(prefix="op-capture-cost-")
    _trees_made.append(target)
    archive = os.path.join(target, "tree.tar")
    subprocess.run(["git", "archive", "-o", archive, ref, "core", "integrations"], cwd=ROOT, check=True)
    with tarfile.open(archive) as tar:
        tar.extractall(target, filter="data")
    os.rename(os.path.join(target, "core"), os.path.join(target, "openprogram"))
    shutil.move(os.path.join(target, "integrations"), os.path.join(target, "openprogram", "integrations"))
    return target


def _child_env(tree: str | None) -> dict[str, str]:
    env = dict(os.environ, PYTHONHASHSEED="0")
    env["PYTHONPATH"] = os.pathsep.join(p for p in (tree, ROOT) if p)
    return env


def _run_child(tree: str | None, *args: str) -> str:
    command = [sys.executable, os.path.abspath(__file__), "--child", *args]
    return subprocess.run(command, check=True, capture_output=True, text=True, env=_child_env(tree)).stdout


def timed(before: str | None) -> None:
    trees = {"now": None} | ({f"at {before}": _tree_of(before)} if before else {})
    samples: dict[str, list[dict[str, float]]] = {label: [] for label in trees}
    labels = list(trees)
    for r in range(ROUNDS):
        for label in labels[r % len(labels) :] + labels[: r % len(labels)]:
            samples[label].append(json.loads(_run_child(trees[label], "timed")))
    print(f"capture_json of benign values: ns a capture and ns per captured KB (medians of {ROUNDS} rounds)")
    for name in values():
        cells = []
        for label in labels:
            ns = statistics.median(s[name] for s in samples[label])
            kb = samples[label][0][name + " KB"]
            cells.append(f"{label}: {ns:8.0f} ns, {ns / kb:7.0f} ns/KB")
        print(f"  {name:34s} " + " | ".join(cells))


def instructions(before: str | None) -> None:
    trees = {"now": None} | ({f"at {before}": _tree_of(before)} if before else {})
    print(f"capture_json of benign values: instructions a capture and per captured KB (callgrind, {N_COUNTED} vs 0)")
    sizes = json.loads(_run_child(None, "timed"))
    for name in values():
        cells = []
        for label, tree in trees.items():
            totals = []
            for n in (0, N_COUNTED):
                out = tempfile.mktemp(prefix="op-capture-cost-", suffix=".out")
                command = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", sys.executable]
                command += [os.path.abspath(__file__), "--child", "counted", name, str(n)]
                subprocess.run(command, check=True, capture_output=True, env=_child_env(tree))
                with open(out) as f:
                    totals.append(next(int(m[1]) for line in f if (m := re.match(r"(?:summary|totals): (\d+)", line))))
                os.unlink(out)
            per = (totals[1] - totals[0]) / N_COUNTED
            cells.append(f"{label}: {per / 1000:6.1f}k, {per / sizes[name + ' KB'] / 1000:6.1f}k/KB")
        print(f"  {name:34s} " + " | ".join(cells))


if __name__ == "__main__":
    os.environ.setdefault("OPENPROGRAM_HOME", tempfile.mkdtemp(prefix="op-bench-"))
    args = sys.argv[1:]
    if args[:1] == ["--child"]:
        if args[1] == "timed":
            print(json.dumps(_timed()))
        else:
            _counted(args[2], int(args[3]))
    else:
        ref = args[args.index("--before") + 1] if "--before" in args else None
        (instructions if "--instructions" in args else timed)(ref)
        for tree in _trees_made:
            shutil.rmtree(tree, ignore_errors=True)

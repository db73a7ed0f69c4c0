"""Shared timing helpers: medians of interleaved repetitions, reported as ratios."""

from __future__ import annotations

import statistics
import sys
import threading
import time
from collections.abc import Callable
from typing import Any


def per_call_ns(loop: Callable[[int], None], n: int, repeats: int = 7) -> float:
    """Median nanoseconds per iteration of ``loop(n)`` over ``repeats`` runs."""
    samples = []
    for _ in range(repeats):
        start = time.perf_counter_ns()
        loop(n)
        samples.append((time.perf_counter_ns() - start) / n)
    return statistics.median(samples)


def interleaved(candidates: dict[str, Callable[[], float]], rounds: int) -> dict[str, float]:
    """Run each candidate once per round, in rotating order; median of each."""
    results: dict[str, list[float]] = {name: [] for name in candidates}
    names = list(candidates)
    for r in range(rounds):
        for name in names[r % len(names) :] + names[: r % len(names)]:
            results[name].append(candidates[name]())
    return {name: statistics.median(values) for name, values in results.items()}


def writer_cpu() -> float:
    """CPU seconds openprogram's background writer thread has used so far (Linux' /proc); 0.0 where unknown."""
    for thread in threading.enumerate():
        if thread.name == "openprogram-writer" and thread.native_id is not None:
            try:
                with open(f"/proc/self/task/{thread.native_id}/schedstat") as f:
                    return int(f.read().split()[0]) / 1e9
            except (OSError, ValueError, IndexError):
                return 0.0
    return 0.0


def capture_bindings() -> list[Any]:
    """openprogram's modules that bind ``capture_json`` by name: each encodes some of a run's values
    with it (there is no public hook for what the record encodes, so benchmarks swap it there)."""
    from openprogram import _capture

    encode = _capture.capture_json
    return [
        module
        for name, module in list(sys.modules.items())
        if name.startswith("openprogram.") and getattr(module, "capture_json", None) is encode
    ]

"""What keeping a failed call's traceback costs: a failing ``@openprogram.tool`` call, with and without.

The tool raises from 1 and from 20 frames below it (the traceback a call keeps grows with the
frames between it and the raise). Each figure is per failing call, into a memory store, with the
stack kept and with the step that keeps it replaced by one keeping nothing, in the same run: on the
caller's thread with the background writer paused (the frames are taken there), then in the writer
draining those calls (where the traceback is laid out, source lines read and redacted). A call that
succeeds never reaches that step; it is measured both ways too, to show it costs the same. Python's
own ``traceback.format_exception`` of the same exception is given for scale.
"""

from __future__ import annotations

import os
import statistics
import sys
import time
import traceback
from collections.abc import Callable

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import openprogram
from openprogram._recording import record, writer

from bench._util import interleaved, per_call_ns

N = 5_000


def _below(depth: int) -> None:
    if depth:
        _below(depth - 1)
        return
    raise ValueError("no such order: 1234")


@openprogram.tool
def fails(depth: int) -> None:
    _below(depth)


@openprogram.tool
def succeeds(depth: int) -> int:
    return depth


def _failing(depth: int) -> Callable[[int], None]:
    def loop(count: int) -> None:
        for _ in range(count):
            try:
                fails(depth)
            except ValueError:
                pass

    return loop


def _succeeding(count: int) -> None:
    for _ in range(count):
        succeeds(1)


_drained: dict[str, list[float]] = {}  # candidate -> the writer's ns per call, each round


def _measured(name: str, loop: Callable[[int], None], kept: bool) -> Callable[[], float]:
    """ns per call on the caller's thread (writer paused); the writer's, draining them, noted in ``_drained``."""

    def measure() -> float:
        keep, interval = record.with_traceback, writer.INTERVAL
        if not kept:
            record.with_traceback = lambda attributes, exc: attributes  # type: ignore[assignment]
        try:
            writer.INTERVAL = 3600.0  # takes effect at the writer's next wait
            openprogram.flush()
            caller = per_call_ns(loop, N, 1)
            started = time.perf_counter_ns()
            openprogram.flush()
            _drained.setdefault(name, []).append((time.perf_counter_ns() - started) / N)
            return caller
        finally:
            record.with_traceback, writer.INTERVAL = keep, interval

    return measure


def _stdlib(depth: int) -> float:
    try:
        fails(depth)
    except ValueError as exc:
        caught = exc

    def loop(count: int) -> None:
        for _ in range(count):
            traceback.format_exception(type(caught), caught, caught.__traceback__)

    return per_call_ns(loop, 500, 3)


def main() -> None:
    with openprogram.session_context(store="memory://"):
        candidates: dict[str, Callable[[], float]] = {}
        for depth in (1, 20):
            for kept in (True, False):
                name = f"fails {depth:2} deep, {'stack kept' if kept else 'not kept'}"
                candidates[name] = _measured(name, _failing(depth), kept)
        for kept in (True, False):
            name = f"succeeds, {'stack kept' if kept else 'not kept'}"
            candidates[name] = _measured(name, _succeeding, kept)
        figures = interleaved(candidates, rounds=5)
        stdlib = {depth: _stdlib(depth) for depth in (1, 20)}
    drained = {name: statistics.median(values) for name, values in _drained.items()}
    print(f"per call, median of 5 interleaved rounds of {N} calls: caller's thread (writer paused) / writer")
    for name, ns in figures.items():
        print(f"  {name:32} {ns / 1000:7.2f} us / {drained[name] / 1000:6.2f} us")
    for depth in (1, 20):
        kept, bare = f"fails {depth:2} deep, stack kept", f"fails {depth:2} deep, not kept"
        print(
            f"  the stack of a call failing {depth:2} deep costs {(figures[kept] - figures[bare]) / 1000:6.2f} us more"
            f" on its thread, {(drained[kept] - drained[bare]) / 1000:6.2f} us more in the writer"
            f" (Python's traceback.format_exception of it: {stdlib[depth] / 1000:.1f} us)"
        )
    same = figures["succeeds, stack kept"] - figures["succeeds, not kept"]
    print(f"  a call that succeeds: {same / 1000:+.2f} us (noise: it never reaches the step)")


if __name__ == "__main__":
    main()

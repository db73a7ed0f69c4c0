"""What keeping a failed call's traceback costs its caller: a failing ``@openprogram.tool`` call, with and without.

The tool raises from 1 and from 20 frames below it (the traceback a call keeps grows with the
frames between it and the raise); each figure is per failing call on the caller's thread, into a
memory store, with the stack kept and with the step that keeps it replaced by one keeping nothing,
in the same run. A call that succeeds never reaches that step; it is measured both ways too, to
show it costs the same. Python's own ``traceback.format_exception`` of the same exception is given
for scale.
"""

from __future__ import annotations

import os
import sys
import traceback
from collections.abc import Callable

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import openprogram
from openprogram._recording import record

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


def _kept(loop: Callable[[int], None]) -> Callable[[], float]:
    return lambda: per_call_ns(loop, N, 3)


def _not_kept(loop: Callable[[int], None]) -> Callable[[], float]:
    def measure() -> float:
        keep = record.with_traceback
        record.with_traceback = lambda attributes, exc: attributes  # type: ignore[assignment]
        try:
            return per_call_ns(loop, N, 3)
        finally:
            record.with_traceback = keep

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
            candidates[f"fails {depth:2} deep, stack kept"] = _kept(_failing(depth))
            candidates[f"fails {depth:2} deep, not kept"] = _not_kept(_failing(depth))
        candidates["succeeds, stack kept"] = _kept(_succeeding)
        candidates["succeeds, not kept"] = _not_kept(_succeeding)
        figures = interleaved(candidates, rounds=5)
        openprogram.flush()
        stdlib = {depth: _stdlib(depth) for depth in (1, 20)}
    print(f"per call, caller's thread, median of 5 interleaved rounds of {N} calls:")
    for name, ns in figures.items():
        print(f"  {name:32} {ns / 1000:7.2f} us")
    for depth in (1, 20):
        extra = figures[f"fails {depth:2} deep, stack kept"] - figures[f"fails {depth:2} deep, not kept"]
        print(
            f"  the stack of a call failing {depth:2} deep costs {extra / 1000:6.2f} us more"
            f" (Python's traceback.format_exception of it: {stdlib[depth] / 1000:.1f} us)"
        )
    same = figures["succeeds, stack kept"] - figures["succeeds, not kept"]
    print(f"  a call that succeeds: {same / 1000:+.2f} us (noise: it never reaches the step)")


if __name__ == "__main__":
    main()

"""P3's per-row cost in small transactions: the SQLite store's ``write`` against raw ``executemany``.

A P3 run commits a few rows at a time (the writer's 50 ms cycle holds one or
two runs: about 14 rows for LangGraph, 4 for Semantic Kernel), so what a
transaction costs, not what a row costs, decides the store's share. In one
process, interleaved, CPU time (all threads) and wall time per row:

- **store**: ``SQLiteStore.write`` of batches of final call rows, as the writer
  hands them over;
- **store, synced at flush**: the same through ``write_unsynced`` (the writer's
  cycles that no ``flush()`` waits on), then one ``write()`` that syncs them all,
  as a ``flush()`` at the end of the sample does;
- **raw**: ``BEGIN IMMEDIATE`` / ``executemany`` of the same rows with a plain
  ``INSERT`` into the store's schema / ``COMMIT``, same pragmas (WAL,
  ``synchronous=FULL``): the floor of a durable transaction.

    python bench/p3_rows.py [--batches 14 4] [--transactions 300] [--repeats 7]
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from typing import Any


def rows_of(serial: int, count: int) -> list[tuple[Any, ...]]:
    """``count`` final call rows of one session, shaped like a LangGraph run's (node calls with JSON captures)."""
    now = time.time()
    inputs = '{"messages":[{"content":"weather in Paris","type":"human"}],"steps":[0]}'
    rows = []
    for k in range(count):
        parent = f"c{serial}-0" if k else None
        started = now + k * 1e-6
        rows.append(
            (
                f"c{serial}-{k}",
                "s1",
                "t1",
                parent,
                "node",
                f"node_{k}",
                "langgraph",
                "ok",
                inputs,
                '{"steps":[1]}',
                None,
                None,
                started,
                started + 1e-4,
                "owner:1",
            )
        )
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batches", type=int, nargs="+", default=[14, 4])
    parser.add_argument("--transactions", type=int, default=300)
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args(argv)
    from openprogram.stores import CallRows
    from openprogram.stores.sqlite import SQLiteStore

    home = tempfile.mkdtemp(prefix="openprogram-rows-")
    store = SQLiteStore(os.path.join(home, "store.db"))
    store.write([("s1", "main", 0.0, 0.0)], CallRows())
    raw = sqlite3.connect(os.path.join(home, "raw.db"), isolation_level=None)
    raw.execute("PRAGMA journal_mode = WAL")
    raw.execute("PRAGMA synchronous = FULL")
    schema = sqlite3.connect(store.path).execute("SELECT sql FROM sqlite_master WHERE name = 'calls'").fetchone()[0]
    raw.execute(schema)
    insert = "INSERT INTO calls VALUES (" + ", ".join("?" * 15) + ")"
    serial = [0]

    def batches(size: int) -> list[list[tuple[Any, ...]]]:
        made = []
        for _ in range(args.transactions):
            serial[0] += 1
            made.append(rows_of(serial[0], size))
        return made

    def with_store(prepared: list[list[tuple[Any, ...]]]) -> None:
        for batch in prepared:
            store.write((), CallRows(batch))

    def with_store_synced_at_flush(prepared: list[list[tuple[Any, ...]]]) -> None:
        for batch in prepared:
            store.write_unsynced((), CallRows(batch))
        store.write((), CallRows())

    def with_raw(prepared: list[list[tuple[Any, ...]]]) -> None:
        for batch in prepared:
            raw.execute("BEGIN IMMEDIATE")
            raw.executemany(insert, batch)
            raw.execute("COMMIT")

    setups: dict[str, Callable[[list[list[tuple[Any, ...]]]], None]] = {
        "store": with_store,
        "store, synced at flush": with_store_synced_at_flush,
        "raw": with_raw,
    }
    print(
        f"P3 rows: SQLite transactions of a few rows, {args.transactions} transactions a sample, "
        f"medians of {args.repeats}; CPU and wall time per row"
    )
    for size in args.batches:
        cpu: dict[str, list[float]] = {name: [] for name in setups}
        wall: dict[str, list[float]] = {name: [] for name in setups}
        for fn in setups.values():
            fn(batches(size))  # warm-up
        for rep in range(args.repeats):
            order = list(setups)[rep % len(setups) :] + list(setups)[: rep % len(setups)]
            for name in order:
                prepared = batches(size)
                started, began = time.process_time(), time.perf_counter()
                setups[name](prepared)
                cpu[name].append(time.process_time() - started)
                wall[name].append(time.perf_counter() - began)
        rows = args.transactions * size
        per = {name: statistics.median(values) / rows * 1e6 for name, values in cpu.items()}
        per_wall = {name: statistics.median(values) / rows * 1e6 for name, values in wall.items()}
        print(f"  {size} rows a transaction, CPU (wall) a row:")
        for name in setups:
            ratio = per[name] / per["raw"]
            print(f"    {name:24s} {per[name]:6.1f} us ({per_wall[name]:6.1f} us)  {ratio:.2f}x raw CPU")
    return 0


if __name__ == "__main__":
    sys.exit(main())

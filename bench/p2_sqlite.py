"""P2: sustained persistence into SQLite, recorded calls per second until durable.

Records N real ``@openprogram.tool`` calls (small arguments) inside a session
and calls ``openprogram.flush()``; the clock stops when flush returns (the rows
are committed with ``synchronous=FULL``). Baseline in the same run: raw
``sqlite3`` ``executemany`` of the very same rows into a fresh file with the
same schema and pragmas, in one transaction. Targets: >= 150k calls/s and
>= 75 % of raw.
"""

from __future__ import annotations

import os
import sqlite3
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import openprogram
from openprogram.stores import sqlite as sqlite_store

N = 200_000
ROUNDS = 5


@openprogram.tool
def search(query: str, limit: int) -> str:
    return query


def recorded(directory: str, n: int) -> tuple[float, str, str]:
    store = openprogram.open_store(f"sqlite:///{directory}/rec-{time.monotonic_ns()}.db")
    with openprogram.session_context(store=store) as handle:
        openprogram.flush()  # the session row and schema exist before the clock starts
        start = time.perf_counter()
        for i in range(n):
            search("what is a session", i)
        openprogram.flush()
        elapsed = time.perf_counter() - start
    return elapsed, store.path.as_posix(), handle.session_id


def raw(directory: str, rows: list[tuple[object, ...]]) -> float:
    path = f"{directory}/raw-{time.monotonic_ns()}.db"
    conn = sqlite3.connect(path, isolation_level=None)
    conn.executescript(sqlite_store._SCHEMA)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = FULL")
    start = time.perf_counter()
    conn.execute("BEGIN IMMEDIATE")
    conn.executemany(sqlite_store.UPSERT_CALL, rows)
    conn.execute("COMMIT")
    elapsed = time.perf_counter() - start
    conn.close()
    return elapsed


def main(n: int = N, rounds: int = ROUNDS) -> dict[str, float]:
    directory = tempfile.mkdtemp(prefix="op-p2-")
    os.environ.setdefault("OPENPROGRAM_HOME", directory)
    ours, theirs = [], []
    for _ in range(rounds):
        elapsed, path, session_id = recorded(directory, n)
        conn = sqlite3.connect(path)
        rows = conn.execute("SELECT * FROM calls WHERE session_id = ? AND kind = 'tool'", (session_id,)).fetchall()
        conn.close()
        assert len(rows) == n, f"{len(rows)} rows recorded, expected {n}"
        ours.append(n / elapsed)
        theirs.append(n / raw(directory, rows))
    result = {"openprogram_calls_per_s": statistics.median(ours), "raw_rows_per_s": statistics.median(theirs)}
    result["ratio"] = result["openprogram_calls_per_s"] / result["raw_rows_per_s"]
    return result


if __name__ == "__main__":
    r = main()
    print(f"P2 SQLite persistence ({N:,} calls x {ROUNDS} rounds, medians)")
    print(f"  openprogram: {r['openprogram_calls_per_s']:>10,.0f} calls/s recorded and durable (target >= 150,000)")
    print(f"  raw sqlite3: {r['raw_rows_per_s']:>10,.0f} rows/s executemany of the same rows")
    print(f"  ratio: {r['ratio']:.0%} of raw (target >= 75 %)")

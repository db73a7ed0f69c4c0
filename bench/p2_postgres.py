"""P2 for PostgreSQL: sustained recorded calls/s from 4 writer processes, until durable.

Four processes each open the same session in a PostgreSQL store and call a
``@openprogram.tool`` in a loop; the clock runs from the common start until
the last process's ``flush()`` returned (every record durable). In the same
run, the same rows (read back from the store) are written by four processes
with plain psycopg: one ``COPY`` per process, and ``executemany`` ``INSERT``
in batches of 1,000 rows per transaction. Ratios compare the three.

    python bench/p2_postgres.py [--calls N] [--procs P] [--repeats R] [--url URL]

The URL defaults to ``$OPENPROGRAM_BENCH_POSTGRES``, ``$OPENPROGRAM_TEST_POSTGRES``
or ``postgresql://postgres@127.0.0.1:5432/test``; tables go into throwaway schemas.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import secrets
import statistics
import sys
import tempfile
import time
from typing import Any

DEFAULT_URL = "postgresql://postgres@127.0.0.1:5432/test"
COLUMNS = (
    "call_id, session_id, turn_id, parent_id, kind, name, framework, status, "
    "inputs, output, error, attributes, started_at, ended_at, owner"
)
BATCH = 1000


def _with_schema(url: str, schema: str) -> str:
    return f"{url}{'&' if '?' in url else '?'}schema={schema}"


# --- openprogram writers -------------------------------------------------------------


def _record(url: str, session_id: str, calls: int, start_at: float, out: Any) -> None:
    os.environ["OPENPROGRAM_HOME"] = tempfile.mkdtemp(prefix="op-bench-")
    import openprogram

    @openprogram.tool
    def lookup(query: str, limit: int = 3) -> dict[str, Any]:
        return {"query": query, "hits": limit}

    store = openprogram.open_store(url)
    store.list_sessions()  # connect and create the schema before the clock starts
    busy = [0.0]
    write = store.write

    def timed_write(*args: Any) -> None:  # time spent inside the store, per process
        t = time.perf_counter()
        try:
            write(*args)
        finally:
            busy[0] += time.perf_counter() - t

    store.write = timed_write  # type: ignore[method-assign]
    while time.time() < start_at:
        time.sleep(0.001)
    t0 = time.time()
    with openprogram.session_context(session_id, store=store):
        for i in range(calls):
            lookup(f"q{i}")
        returned = time.time()
        durable = openprogram.flush(timeout=600)
    out.put((t0, returned, time.time(), durable and openprogram.flush(timeout=60), busy[0]))


# --- plain psycopg writers -------------------------------------------------------------


def _plain(url: str, target: tuple[str, str], rows: list[tuple[Any, ...]], start_at: float, out: Any) -> None:
    schema, how = target
    import psycopg

    with psycopg.connect(url) as conn:
        conn.execute(f'SET search_path TO "{schema}"')
        conn.commit()
        while time.time() < start_at:
            time.sleep(0.001)
        t0 = time.time()
        with conn.cursor() as cur:
            if how == "copy":
                with cur.copy(f"COPY calls ({COLUMNS}) FROM STDIN") as copy:
                    for row in rows:
                        copy.write_row(row)
                conn.commit()
            else:
                marks = ", ".join(["%s"] * 15)
                for i in range(0, len(rows), BATCH):
                    cur.executemany(f"INSERT INTO calls ({COLUMNS}) VALUES ({marks})", rows[i : i + BATCH])
                    conn.commit()
        out.put((t0, time.time(), time.time(), True, 0.0))


def _run(target: Any, args_per_proc: list[tuple[Any, ...]]) -> tuple[float, float, bool, float]:
    """One process per argument tuple from a common start: seconds to return, to durable, ok, max store busy."""
    ctx = mp.get_context("spawn")
    out = ctx.Queue()
    start_at = time.time() + 3.0  # room for every process to start and connect
    procs = [ctx.Process(target=target, args=(*a, start_at, out)) for a in args_per_proc]
    for p in procs:
        p.start()
    results = [out.get(timeout=900) for _ in procs]
    for p in procs:
        p.join()
        if p.exitcode != 0:
            raise SystemExit(f"a writer process failed (exit {p.exitcode})")
    t0 = min(r[0] for r in results)
    return (
        max(r[1] for r in results) - t0,
        max(r[2] for r in results) - t0,
        all(r[3] for r in results),
        max(r[4] for r in results),
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=50_000, help="calls per process (default 50000)")
    parser.add_argument("--procs", type=int, default=4)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument(
        "--url",
        default=os.environ.get("OPENPROGRAM_BENCH_POSTGRES")
        or os.environ.get("OPENPROGRAM_TEST_POSTGRES")
        or DEFAULT_URL,
    )
    args = parser.parse_args(argv)
    try:
        import psycopg
    except ImportError:
        print("P2 postgres: skipped (pip install 'openprogram[postgres]')")
        return 0
    try:
        admin = psycopg.connect(args.url, autocommit=True, connect_timeout=5)
    except psycopg.Error as exc:
        print(f"P2 postgres: skipped (no server: {' '.join(str(exc).split())})")
        return 0

    from openprogram.stores import safe_url

    runs: list[dict[str, float]] = []
    for _ in range(args.repeats):
        run = _once(admin, args)
        if run is None:
            admin.close()
            return 1
        runs.append(run)
    admin.close()
    rate = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
    spread = {k: (min(r[k] for r in runs), max(r[k] for r in runs)) for k in runs[0]}
    print(
        f"P2 postgres ({safe_url(args.url)}): {args.procs} processes x {args.calls:,} tool calls into one session, "
        f"median of {args.repeats} runs (min-max)"
    )

    def line(label: str, key: str, unit: str) -> str:
        low, high = spread[key]
        return f"  {label:<34} {rate[key]:>9,.0f} {unit}  ({low:,.0f}-{high:,.0f})"

    print(line("openprogram, tools returned", "returned", "calls/s"))
    print(line("openprogram, until durable", "openprogram", "calls/s"))
    print(line("  inside PostgresStore.write, 1 proc", "store", "rows/s "))
    print(line("psycopg COPY, 1 per process", "copy", "rows/s "))
    print(line(f"psycopg executemany, {BATCH}-row commits", "executemany", "rows/s "))
    print(f"  ratio durable openprogram / COPY         {rate['openprogram'] / rate['copy']:.2f}")
    print(f"  ratio durable openprogram / executemany  {rate['openprogram'] / rate['executemany']:.2f}")
    return 0


def _once(admin: Any, args: argparse.Namespace) -> dict[str, float] | None:
    from openprogram.stores.postgres import MIGRATIONS

    tag = secrets.token_hex(4)
    schemas = {name: f"op_bench_{name}_{tag}" for name in ("openprogram", "copy", "executemany")}
    total = args.calls * args.procs
    rate: dict[str, float] = {}
    try:
        url = _with_schema(args.url, schemas["openprogram"])
        returned, durable, ok, busy = _run(_record, [(url, f"bench-{tag}", args.calls)] * args.procs)
        with admin.cursor() as cur:
            cur.execute(f'SELECT {COLUMNS} FROM "{schemas["openprogram"]}".calls ORDER BY call_id')
            rows = cur.fetchall()
        if not ok or len(rows) != total + args.procs:  # each process also records its turn
            print(f"P2 postgres: FAILED: {len(rows)} rows durable, expected {total + args.procs}")
            return None
        rate["returned"] = total / returned
        rate["openprogram"] = len(rows) / durable
        rate["store"] = (len(rows) / args.procs) / busy  # one writer's rows per second inside PostgresStore.write
        shards = [rows[i :: args.procs] for i in range(args.procs)]
        for how in ("copy", "executemany"):
            schema = schemas[how]
            admin.execute(f'CREATE SCHEMA "{schema}"')
            admin.execute(f'SET search_path TO "{schema}"')
            for statement in MIGRATIONS[0]:
                admin.execute(statement)  # the store's own tables and indexes
            admin.execute("SET search_path TO DEFAULT")
            _, seconds, _, _ = _run(_plain, [(args.url, (schema, how), shard) for shard in shards])
            rate[how] = len(rows) / seconds
            (count,) = admin.execute(f'SELECT count(*) FROM "{schema}".calls').fetchone()
            if count != len(rows):
                print(f"P2 postgres: FAILED: {how} wrote {count} rows, expected {len(rows)}")
                return None
    finally:
        for schema in schemas.values():
            admin.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
    return rate


if __name__ == "__main__":
    sys.exit(main())

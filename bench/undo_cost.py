"""The extra cost of an undoable ``@openprogram.tool`` call against a plain one, on the caller's thread.

An undoable call writes its pending effect durably before its body runs and its outcome after;
a plain call costs what it always did. Both take the same small arguments inside a session, in
the same run: into a memory store (what the journal costs apart from the disk), into the SQLite
store (``synchronous=FULL``: a commit is on disk) and, when a server answers, into PostgreSQL
(``$OPENPROGRAM_TEST_POSTGRES``, default ``postgresql://postgres@127.0.0.1:5432/test``).
"""

from __future__ import annotations

import os
import secrets
import sys
import tempfile
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import openprogram
from openprogram._undo import write_outcomes

from bench._util import interleaved, per_call_ns

N_PLAIN = 20_000
N_UNDOABLE = {"memory": 20_000, "sqlite": 100, "postgresql": 200}


def search(query: str, limit: int) -> str:
    return query


def create_ticket(query: str, limit: int) -> str:
    return query


def _postgres_url() -> str | None:
    base = os.environ.get("OPENPROGRAM_TEST_POSTGRES") or "postgresql://postgres@127.0.0.1:5432/test"
    try:
        import psycopg

        with psycopg.connect(base, connect_timeout=3) as conn:
            conn.execute("SELECT 1")
    except Exception as exc:
        print(f"  (PostgreSQL skipped: {type(exc).__name__}: {' '.join(str(exc).split())[:120]})")
        return None
    return f"{base}{'&' if '?' in base else '?'}schema=op_bench_undo_{secrets.token_hex(4)}"


def _drop(url: str) -> None:
    import psycopg

    base, _, schema = url.rpartition("schema=")
    with psycopg.connect(base.rstrip("?&"), autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


def measure(backend: str, url: str) -> dict[str, float]:
    plain = openprogram.tool(search)
    undoable = openprogram.tool(create_ticket)
    undoable.undo(lambda effect: None)  # type: ignore[attr-defined]
    n = N_UNDOABLE[backend]

    def loop_of(fn: Any) -> Any:
        def loop(count: int) -> None:
            for _ in range(count):
                fn("what is a session", 5)

        return loop

    with openprogram.session_context(store=url):
        loop_of(undoable)(10)  # the store, its schema and connection exist
        figures = interleaved(
            {
                "plain": lambda: per_call_ns(loop_of(plain), N_PLAIN, 3),
                "undoable": lambda: per_call_ns(loop_of(undoable), n, 3),
            },
            rounds=5,
        )
        openprogram.flush()
        write_outcomes()
    return figures


def main() -> dict[str, dict[str, float]]:
    os.environ.setdefault("OPENPROGRAM_HOME", tempfile.mkdtemp(prefix="op-bench-"))
    urls = {"memory": "memory://bench-undo", "sqlite": f"sqlite:///{tempfile.mkdtemp(prefix='op-undo-')}/undo.db"}
    pg = _postgres_url()
    if pg is not None:
        urls["postgresql"] = pg
    results: dict[str, dict[str, float]] = {}
    try:
        for backend, url in urls.items():
            results[backend] = figures = measure(backend, url)
            extra = figures["undoable"] - figures["plain"]
            plain, undoable = figures["plain"] / 1000, figures["undoable"] / 1000
            print(
                f"  {backend:<10} plain {plain:8.2f} us   undoable {undoable:9.2f} us   "
                f"extra {extra / 1000:9.2f} us per call"
            )
    finally:
        if pg is not None:
            _drop(pg)
    return results


if __name__ == "__main__":
    print("undo cost: an undoable @openprogram.tool call against a plain one (median, caller's thread)")
    main()

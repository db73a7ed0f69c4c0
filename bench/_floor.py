"""A P3 workload's floor: what keeping its record costs at the least, hooks aside.

:meth:`Floor.of` runs the workload once instrumented and keeps what openprogram
captured and stored for that run: the values it encoded (the inputs and outputs
of its calls) and the rows it wrote. Replaying them costs what the data alone
costs, with no hooks, no context and no record-keeping:

- :meth:`Floor.encode`: the values through ``capture_json`` (the C JSON encoder
  with the secret pre-check) in a tight loop, so with warm caches: less than
  it costs in place;
- :meth:`Floor.storing`: the rows inserted with raw ``executemany`` into a SQLite
  file with the store's schema and settings (WAL), one transaction per 50 ms of
  uninstrumented runs (the writer's cycle), committed at ``synchronous=NORMAL``
  and synced by one ``FULL`` commit at the end of the sample, as the writer
  does (a commit nobody waits on is synced by the next flush);
- :meth:`Floor.cost`: both, for a number of runs: the figure P3's targets are
  set against (openprogram's overhead within 1.5x of it);
- :meth:`Floor.in_place`: the same, with the values encoded where openprogram
  encodes them, not in a loop: the workload runs uninstrumented and its own
  code (tools, nodes, scripted model) calls :func:`point`, where the floor
  encodes its share of the run's values; the rows are stored as above.

Each ``p3-<framework>`` benchmark measures :meth:`Floor.cost` in its own
rotation, beside the uninstrumented run; ``p3-floor`` splits it further.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import os
import sqlite3
import time
from collections.abc import Callable, Iterator
from typing import Any

from _util import capture_bindings

#: The most overhead P3 accepts: this many times the floor.
TARGET = 1.5
_WRITER_CYCLE = 0.050  # seconds between the background writer's commits


def _nothing() -> None:
    pass


_at_point: Callable[[], None] = _nothing


def point() -> None:
    """Called by a P3 workload's own code (a tool, a node, its scripted model), where a value of the
    run is at hand: :meth:`Floor.in_place` encodes a share of the run's values here; otherwise nothing."""
    _at_point()


class Floor:
    """One run's record (its encoded values and stored rows), replayable for any number of runs."""

    def __init__(
        self,
        step: Callable[[], Any],
        values: list[Any],
        rows: list[tuple[Any, ...]],
        columns: list[str],
        schema: list[str],
        seconds_a_run: float,
        home: str,
    ) -> None:
        self.step = step  # one run, uninstrumented unless instrument() is on
        self.values, self.rows, self.columns, self.schema = values, rows, columns, schema
        self.home = home
        from openprogram import _capture

        self.encoded: Callable[[Any], str] = _capture.capture_json
        self.per_commit = max(1, round(_WRITER_CYCLE / seconds_a_run))
        self._serial = 0
        self._call_id = columns.index("call_id")
        self._synced = self.storing("floor.db", schema, synced_at_flush=True)
        self.points = 0  # point() calls a run makes

    @classmethod
    def of(cls, identifier: str, run: Callable[[], Any], home: str) -> Floor:
        """Record one run of ``run`` (a callable returning its result or a coroutine) with ``identifier``'s adapter."""
        import openprogram
        from openprogram import _capture

        step = synchronous(run)
        captured: list[Any] = []
        encode = _capture.capture_json

        def keeping(value: object) -> str:
            captured.append(value)
            return encode(value)

        path = os.path.join(home, "recorded.db")
        store = openprogram.open_store(f"sqlite:///{path}")
        openprogram.instrument(identifier)
        try:
            with openprogram.session_context(store=store):
                step()  # warm-up: first-time set-up
                openprogram.flush()  # the warm-up's values all encoded before the count begins
                binding = capture_bindings()  # now: instrument() and the run import the modules that encode
                for module in binding:
                    module.capture_json = keeping
                try:
                    step()
                    openprogram.flush()  # values the writer encodes (arguments kept by reference) count too
                finally:
                    for module in binding:
                        module.capture_json = encode
        finally:
            openprogram.uninstrument(identifier)
        openprogram.flush()
        source = sqlite3.connect(path)
        found = source.execute("SELECT sql FROM sqlite_master WHERE tbl_name = 'calls' AND sql IS NOT NULL")
        schema = [sql for (sql,) in found]
        columns = [row[1] for row in source.execute("PRAGMA table_info(calls)")]
        recorded = source.execute("SELECT * FROM calls WHERE kind != 'turn' ORDER BY started_at").fetchall()
        source.close()
        step()  # warm, uninstrumented: the run's length sets how many runs a writer cycle holds
        started = time.perf_counter()
        for _ in range(3):
            step()
        made = cls(
            step, captured, recorded[len(recorded) // 2 :], columns, schema, (time.perf_counter() - started) / 3, home
        )
        made.points = _points_a_run(step)
        return made

    def describe(self) -> str:
        size = sum(len(self.encoded(value)) for value in self.values)
        return f"{len(self.values)} values encoded ({size:,} chars) and {len(self.rows)} rows stored a run"

    def encode(self, runs: int) -> None:
        """Encode one run's values ``runs`` times, as openprogram does."""
        encode, values = self.encoded, self.values
        for _ in range(runs):
            for value in values:
                encode(value)

    def fresh_rows(self) -> list[tuple[Any, ...]]:
        """One run's rows, each with a call id of its own."""
        call_id, fresh = self._call_id, []
        for row in self.rows:
            self._serial += 1
            made = list(row)
            made[call_id] = f"{row[call_id]}-{self._serial}"
            fresh.append(tuple(made))
        return fresh

    def storing(self, file: str, ddl: list[str], synced_at_flush: bool = False) -> Callable[[int], None]:
        """Insert ``runs`` runs' rows into ``file`` (created with ``ddl``), a transaction per writer cycle;
        every commit synced, or (``synced_at_flush``) synced once, by a final ``FULL`` commit."""
        target = sqlite3.connect(os.path.join(self.home, file), isolation_level=None, check_same_thread=False)
        target.execute("PRAGMA journal_mode = WAL")
        target.execute("PRAGMA synchronous = NORMAL" if synced_at_flush else "PRAGMA synchronous = FULL")
        for sql in ddl:
            target.execute(sql)
        insert = f"INSERT INTO calls VALUES ({','.join('?' * len(self.columns))})"

        def store(runs: int) -> None:
            batch: list[tuple[Any, ...]] = []
            for run in range(runs):
                batch.extend(self.fresh_rows())
                if run % self.per_commit == self.per_commit - 1 or run == runs - 1:
                    target.execute("BEGIN")
                    target.executemany(insert, batch)
                    target.execute("COMMIT")
                    batch.clear()
            if synced_at_flush:  # the flush: one FULL commit syncs the whole WAL
                target.execute("PRAGMA synchronous = FULL")
                target.execute("BEGIN IMMEDIATE")
                target.execute("CREATE TABLE IF NOT EXISTS synced (at REAL)")
                target.execute("INSERT INTO synced VALUES (?)", (time.time(),))
                target.execute("COMMIT")
                target.execute("PRAGMA synchronous = NORMAL")

        return store

    def cost(self, runs: int) -> None:
        """The floor of ``runs`` runs: their values encoded and their rows stored, synced at the end."""
        self.encode(runs)
        self.store(runs)

    def encoding_in_place(self, runs: int) -> None:
        """``runs`` runs of the workload, each of its :func:`point` calls encoding its share of the run's values."""
        with self.encoding_at_points():
            for _ in range(runs):
                self.step()

    def in_place(self, runs: int) -> None:
        """``runs`` runs of the workload with the floor's values encoded at the run's points, then
        their rows stored as :meth:`cost` stores them."""
        self.encoding_in_place(runs)
        self.store(runs)

    def store(self, runs: int) -> None:
        """``runs`` runs' rows stored as :meth:`cost` stores them (for a workload run elsewhere, such as
        on an event loop already running, inside :meth:`encoding_at_points`)."""
        self._synced(runs)

    @contextlib.contextmanager
    def encoding_at_points(self) -> Iterator[None]:
        """While open, the workload's :func:`point` calls encode the floor's values: the n-th point
        of a run the n-th share of them."""
        global _at_point
        encode, values, points = self.encoded, self.values, max(self.points, 1)
        count = len(values)
        shares = [values[index * count // points : (index + 1) * count // points] for index in range(points)]
        counter = itertools.count()

        def at_point() -> None:
            for value in shares[next(counter) % points]:
                encode(value)

        _at_point = at_point
        try:
            yield
        finally:
            _at_point = _nothing


def _points_a_run(step: Callable[[], Any]) -> int:
    global _at_point
    made: list[None] = []

    def counting() -> None:
        made.append(None)

    _at_point = counting
    try:
        step()
    finally:
        _at_point = _nothing
    return len(made)


def verdict(
    overhead: float, floor: float, peer: str, peer_overhead: float, writer: float, in_place: float | None = None
) -> str:
    """Lines: openprogram's overhead split by thread (``writer``: the writer thread's share of the run),
    the floor, the target it sets, and whether openprogram meets it and stays below its peer; with
    ``in_place`` (what :meth:`Floor.in_place` adds to the run), openprogram against that floor too."""
    target = TARGET * floor
    met = "met" if overhead <= target else "not met"
    below = "below" if overhead < peer_overhead else "not below"
    lines = (
        f"openprogram {overhead * 100:+.1f}% of the run: the caller's threads (hooks, capture) "
        f"{(overhead - writer) * 100:+.1f}%, the writer {writer * 100:+.1f}%\n"
        f"  floor {floor * 100:.1f}%, target <= {target * 100:.1f}%: {met}; {peer} {peer_overhead * 100:+.1f}% "
        f"(openprogram {below} it)"
    )
    if in_place is not None:
        lines += (
            f"\n  floor in place {in_place * 100:+.1f}% (its values encoded where the run has them): "
            f"openprogram {overhead / in_place:.2f}x it"
            if in_place > 0
            else f"\n  floor in place {in_place * 100:+.1f}%: within the run's noise"
        )
    return lines


def synchronous(run: Callable[[], Any]) -> Callable[[], Any]:
    """``run`` as a plain call: a coroutine it returns is run on an event loop of its own."""
    probe = run()
    if not asyncio.iscoroutine(probe):
        return run
    loop = asyncio.new_event_loop()
    loop.run_until_complete(probe)
    return lambda: loop.run_until_complete(run())

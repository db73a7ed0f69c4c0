"""Undo in one process, on every store: order, scope, once only, failure and resume, what is never journaled."""

from __future__ import annotations

import asyncio
import io
import logging
import sqlite3
import threading
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

import openprogram
import pytest
from openprogram import _cli
from openprogram.stores import Store

from tests.support import by_kind, calls


class Tickets:
    """A stand-in for an external system: tickets by id, and every compensation applied to it, in order."""

    def __init__(self) -> None:
        self.open: dict[str, str] = {}
        self.deleted: list[str] = []
        self.keys: list[str] = []
        self.counter = 0

    def create(self, title: str) -> str:
        self.counter += 1
        ticket = f"T{self.counter}"
        self.open[ticket] = title
        return ticket

    def delete(self, effect: openprogram.Effect) -> str:
        ticket = effect.output
        del self.open[ticket]
        self.deleted.append(ticket)
        self.keys.append(effect.idempotency_key)
        return f"deleted {ticket}"


def undoable_create(tickets: Tickets) -> Any:
    @openprogram.tool
    def create_ticket(title: str) -> str:
        return tickets.create(title)

    create_ticket.undo(tickets.delete)
    return create_ticket


def test_undo_compensates_the_turns_effects_newest_first(store: Store) -> None:
    tickets = Tickets()
    create_ticket = undoable_create(tickets)
    with openprogram.session_context(store=store) as h:
        for title in ("a", "b", "c"):
            create_ticket(title)
    assert tickets.open == {"T1": "a", "T2": "b", "T3": "c"}

    plan = openprogram.undo(h.session_id, h.turn_id, store=store)

    assert tickets.deleted == ["T3", "T2", "T1"]
    assert tickets.open == {}
    assert [e.output for e in plan] == ["T3", "T2", "T1"]
    assert plan.undo_turn_id is not None and plan.undo_turn_id != h.turn_id


def test_turn_scope_leaves_other_turns_applied_and_session_scope_undoes_the_rest(store: Store) -> None:
    tickets = Tickets()
    create_ticket = undoable_create(tickets)
    with openprogram.session_context(store=store) as first:
        create_ticket("first")
    with openprogram.session_context(first.session_id, store=store) as second:
        create_ticket("second")
        create_ticket("third")

    openprogram.undo(first.session_id, second.turn_id, store=store)
    assert tickets.deleted == ["T3", "T2"] and tickets.open == {"T1": "first"}
    assert [e.turn_id for e in openprogram.undo(first.session_id, dry_run=True, store=store)] == [first.turn_id]

    openprogram.undo(first.session_id, store=store)
    assert tickets.deleted == ["T3", "T2", "T1"] and tickets.open == {}


def test_each_effect_is_undone_once_and_a_second_undo_does_nothing(store: Store) -> None:
    tickets = Tickets()
    create_ticket = undoable_create(tickets)
    with openprogram.session_context(store=store) as h:
        create_ticket("a")
        create_ticket("b")
    assert len(openprogram.undo(h.session_id, store=store)) == 2

    again = openprogram.undo(h.session_id, store=store)

    assert len(again) == 0 and again.undo_turn_id is None  # nothing ran: no new turn either
    assert len(openprogram.undo(h.session_id, dry_run=True, store=store)) == 0
    assert tickets.deleted == ["T2", "T1"]
    assert len(by_kind(calls(store, h.session_id), "undo")) == 2


def test_a_failing_compensation_stops_the_undo_there_and_a_later_undo_resumes(store: Store) -> None:
    tickets = Tickets()
    failures = ["the ticket service is down"]

    @openprogram.tool
    def create_ticket(title: str) -> str:
        return tickets.create(title)

    @create_ticket.undo
    def _(effect: openprogram.Effect) -> str:
        if effect.output == "T2" and failures:
            raise ConnectionError(failures.pop())
        return tickets.delete(effect)

    with openprogram.session_context(store=store) as h:
        for title in ("a", "b", "c"):
            create_ticket(title)

    with pytest.raises(openprogram.UndoError, match="the ticket service is down") as stopped:
        openprogram.undo(h.session_id, store=store)

    assert isinstance(stopped.value.__cause__, ConnectionError)
    assert stopped.value.effect is not None and stopped.value.effect.output == "T2"
    assert [e.output for e in stopped.value.done] == ["T3"]
    assert tickets.open == {"T1": "a", "T2": "b"}  # the failed one and those before it stay applied
    undo_calls = by_kind(calls(store, h.session_id), "undo")
    assert [(c.status, c.error is not None) for c in undo_calls] == [("ok", False), ("error", True)]
    assert "ConnectionError: the ticket service is down" in (undo_calls[1].error or "")
    assert [e.output for e in openprogram.undo(h.session_id, dry_run=True, store=store)] == ["T2", "T1"]

    resumed = openprogram.undo(h.session_id, store=store)

    assert [e.output for e in resumed] == ["T2", "T1"]
    assert tickets.deleted == ["T3", "T2", "T1"] and tickets.open == {}


def test_a_tool_that_raised_leaves_nothing_to_undo(store: Store) -> None:
    compensated: list[Any] = []

    @openprogram.tool
    def charge(amount: int) -> str:
        raise RuntimeError("card declined")

    charge.undo(compensated.append)

    with openprogram.session_context(store=store) as h, pytest.raises(RuntimeError, match="card declined"):
        charge(5)

    assert store.list_effects(h.session_id) == []
    assert len(openprogram.undo(h.session_id, dry_run=True, store=store)) == 0
    openprogram.undo(h.session_id, store=store)
    assert compensated == []


def test_tools_without_undo_are_never_planned_nor_journaled(store: Store) -> None:
    tickets = Tickets()
    create_ticket = undoable_create(tickets)

    @openprogram.tool
    def search(query: str) -> str:
        return query.upper()

    with openprogram.session_context(store=store) as h:
        search("before")
        create_ticket("a")
        search("after")
        with openprogram.call_scope("tool", "lookup"):
            pass

    assert [row[5] for row in store.list_effects(h.session_id)] == ["create_ticket"]
    plan = openprogram.undo(h.session_id, store=store)
    assert [e.name for e in plan] == ["create_ticket"]
    recorded = calls(store, h.session_id)
    assert [c.status for c in recorded if c.name == "search"] == ["ok", "ok"]
    assert all("effect" not in (c.attributes or {}) for c in recorded if c.name in ("search", "lookup"))


def test_tools_without_undo_never_wait_for_a_locked_store(stores: Any) -> None:
    url = stores.url("sqlite")
    store = openprogram.open_store(url)
    tickets = Tickets()
    create_ticket = undoable_create(tickets)

    @openprogram.tool
    def search(query: str) -> str:
        return query

    with openprogram.session_context(store=store) as h:
        create_ticket("warm up")  # the store and its schema exist
        blocker = sqlite3.connect(store.path, isolation_level=None)  # type: ignore[attr-defined]
        blocker.execute("BEGIN IMMEDIATE")  # another process holding the write lock
        started = time.perf_counter()
        for _ in range(100):
            search("x")
        plain_took = time.perf_counter() - started
        with openprogram.ContextThreadPoolExecutor(1) as pool:
            waiting = pool.submit(create_ticket, "waits")
            time.sleep(0.5)
            waited = not waiting.done()  # the undoable call waits for its pending effect to be durable
            blocker.execute("COMMIT")
            blocker.close()
            assert waiting.result(30) == "T2"
    assert plain_took < 0.5, f"100 calls of a tool without undo took {plain_took:.2f}s behind a locked store"
    assert waited
    assert [e.inputs for e in openprogram.undo(h.session_id, dry_run=True, store=store)] == [
        {"title": "waits"},
        {"title": "warm up"},
    ]


def test_dry_run_returns_the_plan_and_changes_nothing(store: Store) -> None:
    tickets = Tickets()
    create_ticket = undoable_create(tickets)
    with openprogram.session_context(store=store) as h:
        create_ticket("a")
        create_ticket("b")
    before = store.list_effects(h.session_id)
    recorded = len(calls(store, h.session_id))

    plan = openprogram.undo(h.session_id, dry_run=True, store=store)

    assert len(plan) == 2 and [e.output for e in plan] == ["T2", "T1"] and plan[0].state == "applied"
    assert store.list_effects(h.session_id) == before
    assert len(calls(store, h.session_id)) == recorded
    assert tickets.deleted == []


def test_the_compensation_receives_the_effect_with_a_stable_idempotency_key(store: Store) -> None:
    received: list[openprogram.Effect] = []

    @openprogram.tool
    def book_room(room: str, nights: int, guest: dict[str, str]) -> dict[str, Any]:
        return {"booking": f"{room}-{nights}", "guest": guest["name"]}

    book_room.undo(received.append)
    with openprogram.session_context(store=store) as h:
        book_room("101", 2, {"name": "Ada"})
    planned = openprogram.undo(h.session_id, dry_run=True, store=store)[0]

    openprogram.undo(h.session_id, store=store)

    (effect,) = received
    call = next(c for c in calls(store, h.session_id) if c.name == "book_room")
    assert effect.call_id == call.call_id and effect.name == "book_room"
    assert effect.inputs == {"room": "101", "nights": 2, "guest": {"name": "Ada"}}
    assert effect.output == {"booking": "101-2", "guest": "Ada"}
    assert effect.session_id == h.session_id and effect.turn_id == h.turn_id and effect.kind == "tool"
    assert effect.idempotency_key == planned.idempotency_key and effect.idempotency_key.startswith("openprogram-undo-")
    assert not effect.outcome_unknown


def test_undo_calls_go_in_a_new_turn_and_the_undone_calls_stay_marked_undone(store: Store) -> None:
    tickets = Tickets()
    create_ticket = undoable_create(tickets)
    with openprogram.session_context(store=store) as h:
        create_ticket("a")
    before = {c.call_id for c in calls(store, h.session_id)}

    plan = openprogram.undo(h.session_id, store=store)

    recorded = calls(store, h.session_id)
    assert before <= {c.call_id for c in recorded}  # the undone turn stays in the DAG
    tool = next(c for c in recorded if c.name == "create_ticket" and c.kind == "tool")
    undo_call = next(c for c in recorded if c.kind == "undo")
    undo_turn = next(c for c in recorded if c.kind == "turn" and c.turn_id == plan.undo_turn_id)
    assert undo_call.parent_id == undo_turn.call_id and undo_turn.name == "undo" and undo_turn.parent_id is None
    assert undo_call.name == "create_ticket" and undo_call.status == "ok" and undo_call.output == "deleted T1"
    assert undo_call.attributes and undo_call.attributes["undoes"] == tool.call_id
    assert tool.attributes == {"effect": "undone", "undone_by": [undo_call.call_id]}
    turn = next(c for c in recorded if c.kind == "turn" and c.turn_id == h.turn_id)
    assert turn.attributes and turn.attributes["effect"] == "undone"
    out = io.StringIO()
    assert _cli.main(["--store", store.url, "show", h.session_id], out=out) == 0
    lines = out.getvalue().splitlines()
    assert any("tool create_ticket [ok]" in line and line.endswith("(undone)") for line in lines), lines
    assert any("turn main [ok]" in line and line.endswith("(undone)") for line in lines), lines
    assert any("undo create_ticket [ok]" in line for line in lines), lines


def test_an_undoable_call_not_yet_undone_is_shown_undoable(store: Store) -> None:
    create_ticket = undoable_create(Tickets())
    with openprogram.session_context(store=store) as h:
        create_ticket("a")
    out = io.StringIO()
    assert _cli.main(["--store", store.url, "show", h.session_id], out=out) == 0
    assert any(line.endswith("(undoable)") and "create_ticket" in line for line in out.getvalue().splitlines())


def test_every_shape_of_tool_is_undoable(store: Store) -> None:
    undone: list[tuple[str, Any]] = []

    def remember(effect: openprogram.Effect) -> None:
        undone.append((effect.name, effect.output))

    @openprogram.tool
    async def reserve(seat: str) -> str:
        await asyncio.sleep(0)
        return f"seat {seat}"

    @openprogram.tool
    def upload(names: list[str]) -> Iterator[str]:
        for name in names:
            yield f"uploaded {name}"
        return "all uploaded"

    @openprogram.tool
    async def notify(people: list[str]) -> AsyncIterator[str]:
        for person in people:
            yield f"told {person}"

    class Calendar:
        @openprogram.tool
        def book(self, day: str) -> str:
            return f"booked {day}"

        @openprogram.tool
        def note(self, text: str, _session: Any = None) -> str:
            return f"noted {text}"

    for tool in (reserve, upload, notify, Calendar.book, Calendar.note):
        tool.undo(remember)

    async def agent() -> None:
        async with openprogram.session_context(store=store) as h:
            assert await reserve("12A") == "seat 12A"
            assert list(upload(["x", "y"])) == ["uploaded x", "uploaded y"]
            assert [n async for n in notify(["ann"])] == ["told ann"]
            assert Calendar().book("monday") == "booked monday"
            assert Calendar().note("hi") == "noted hi"
        sessions.append(h.session_id)

    sessions: list[str] = []
    asyncio.run(agent())
    openprogram.undo(sessions[0], store=store)

    assert undone == [
        ("note", "noted hi"),
        ("book", "booked monday"),
        ("notify", {"yielded": ["told ann"]}),
        ("upload", {"yielded": ["uploaded x", "uploaded y"], "returned": "all uploaded"}),
        ("reserve", "seat 12A"),
    ]


def test_an_interrupted_call_is_of_unknown_outcome_and_undone_only_when_asked(store: Store) -> None:
    tickets = Tickets()
    create_ticket = undoable_create(tickets)
    undone: list[openprogram.Effect] = []

    @openprogram.tool
    def send_email(to: str) -> str:
        raise KeyboardInterrupt  # stopped mid-send: did it go out?

    send_email.undo(undone.append)
    with openprogram.session_context(store=store) as h:
        create_ticket("older")
        with pytest.raises(KeyboardInterrupt):
            send_email("ada@example.com")

    plan = openprogram.undo(h.session_id, dry_run=True, store=store)
    assert [(e.name, e.state, e.outcome_unknown) for e in plan] == [
        ("send_email", "unknown", True),
        ("create_ticket", "applied", False),
    ]
    with pytest.raises(openprogram.UndoError, match="unknown='undo'"):
        openprogram.undo(h.session_id, store=store)
    assert undone == [] and tickets.deleted == []

    skipped = openprogram.undo(h.session_id, unknown="skip", store=store)
    assert [e.name for e in skipped] == ["create_ticket"] and tickets.deleted == ["T1"]
    assert [e.name for e in openprogram.undo(h.session_id, dry_run=True, store=store)] == ["send_email"]

    openprogram.undo(h.session_id, unknown="undo", store=store)
    assert [(e.name, e.inputs, e.output, e.state) for e in undone] == [
        ("send_email", {"to": "ada@example.com"}, None, "unknown"),
    ]
    assert len(openprogram.undo(h.session_id, dry_run=True, store=store)) == 0


def test_what_a_compensation_does_is_recorded_under_it_and_never_planned(store: Store) -> None:
    tickets = Tickets()
    create_ticket = undoable_create(tickets)
    refunds: list[str] = []

    @openprogram.tool
    def refund(ticket: str) -> str:
        refunds.append(ticket)
        return f"refunded {ticket}"

    refund.undo(lambda effect: refunds.remove(effect.inputs["ticket"]))

    @openprogram.tool
    def pay(ticket: str) -> str:
        return f"paid {ticket}"

    pay.undo(lambda effect: refund(effect.inputs["ticket"]))
    with openprogram.session_context(store=store) as h:
        pay(create_ticket("a"))

    openprogram.undo(h.session_id, store=store)

    assert refunds == ["T1"] and tickets.deleted == ["T1"]
    recorded = calls(store, h.session_id)
    undo_pay = next(c for c in recorded if c.kind == "undo" and c.name == "pay")
    assert next(c for c in recorded if c.name == "refund").parent_id == undo_pay.call_id
    assert [row[5] for row in store.list_effects(h.session_id)] == ["create_ticket", "pay"]
    assert len(openprogram.undo(h.session_id, dry_run=True, store=store)) == 0


def test_threads_racing_to_undo_compensate_each_effect_once(store: Store) -> None:
    counts: dict[str, int] = {}
    lock = threading.Lock()

    @openprogram.tool
    def step(n: int) -> int:
        return n

    @step.undo
    def _(effect: openprogram.Effect) -> None:
        time.sleep(0.01)  # keeps each claim held while the other thread tries it
        with lock:
            counts[effect.call_id] = counts.get(effect.call_id, 0) + 1

    with openprogram.session_context(store=store) as h:
        for n in range(6):
            step(n)
    outcomes: list[str] = []
    barrier = threading.Barrier(2)

    def racer() -> None:
        barrier.wait()
        try:
            openprogram.undo(h.session_id, store=store)
            outcomes.append("finished")
        except openprogram.UndoError as exc:
            outcomes.append("stopped" if "another process" in str(exc) else repr(exc))

    racers = [threading.Thread(target=racer) for _ in range(2)]
    for racer_thread in racers:
        racer_thread.start()
    for racer_thread in racers:
        racer_thread.join(60)

    assert sorted(counts.values()) == [1] * 6, counts
    assert "finished" in outcomes and set(outcomes) <= {"finished", "stopped"}, outcomes
    assert len(openprogram.undo(h.session_id, dry_run=True, store=store)) == 0


def test_no_compensation_in_this_process_stops_the_undo_before_anything_runs(store: Store) -> None:
    tickets = Tickets()
    create_ticket = undoable_create(tickets)

    @openprogram.tool
    def forgotten(x: int) -> int:
        return x

    forgotten.undo(lambda effect: None)
    with openprogram.session_context(store=store) as h:
        forgotten(1)
        create_ticket("a")
    from openprogram import _undo

    del _undo.compensations._compensations["forgotten"]  # as in a process that did not import the module declaring it

    with pytest.raises(openprogram.UndoError, match="no compensation is declared in this process for forgotten"):
        openprogram.undo(h.session_id, store=store)
    assert tickets.deleted == [] and by_kind(calls(store, h.session_id), "undo") == []


def test_the_journal_of_an_unusable_store_never_stops_the_tool(caplog: pytest.LogCaptureFixture) -> None:
    from openprogram.stores.memory import MemoryStore

    class Unwritable(MemoryStore):
        def add_effects(self, rows: Any) -> None:
            raise openprogram.StoreError("the disk is full")

    store = Unwritable("memory://unwritable")
    tickets = Tickets()
    create_ticket = undoable_create(tickets)
    with caplog.at_level(logging.WARNING, "openprogram"), openprogram.session_context(store=store) as h:
        assert create_ticket("a") == "T1"
        assert create_ticket("b") == "T2"
    warnings = [r.getMessage() for r in caplog.records if "cannot journal" in r.getMessage()]
    assert len(warnings) == 1 and "the disk is full" in warnings[0] and "cannot be undone" in warnings[0]
    assert [c.status for c in calls(store, h.session_id) if c.name == "create_ticket"] == ["ok", "ok"]


def test_an_outcome_the_store_did_not_take_is_read_from_the_call(caplog: pytest.LogCaptureFixture) -> None:
    from openprogram._undo import write_outcomes
    from openprogram.stores.memory import MemoryStore

    class Forgetful(MemoryStore):
        def settle_effects(self, outcomes: Any) -> None:
            raise openprogram.StoreError("the connection dropped")

    store = Forgetful("memory://forgetful")
    tickets = Tickets()
    create_ticket = undoable_create(tickets)

    @openprogram.tool
    def flaky(x: int) -> int:
        raise ValueError("no")

    flaky.undo(lambda effect: pytest.fail("a failed call has nothing to undo"))
    with caplog.at_level(logging.WARNING, "openprogram"), openprogram.session_context(store=store) as h:
        create_ticket("a")
        with pytest.raises(ValueError):
            flaky(1)
    write_outcomes()
    assert [row[7] for row in store.list_effects(h.session_id)] == ["pending", "pending"]
    assert any("cannot record the outcome" in r.getMessage() for r in caplog.records)

    plan = openprogram.undo(h.session_id, store=store)

    assert [(e.name, e.state, e.output) for e in plan] == [("create_ticket", "applied", "T1")]
    assert tickets.deleted == ["T1"]


def test_undo_checks_its_arguments(store: Store) -> None:
    with pytest.raises(ValueError, match="unknown must be one of"):
        openprogram.undo("s1", unknown="maybe", store=store)
    with pytest.raises(openprogram.InvalidSessionId):
        openprogram.undo("no spaces", store=store)
    assert len(openprogram.undo("never-recorded", dry_run=True, store=store)) == 0
    with pytest.raises(TypeError):
        openprogram.register_undo("", lambda effect: None)


def test_a_coroutine_compensation_runs_also_from_inside_an_event_loop(store: Store) -> None:
    undone: list[str] = []

    @openprogram.tool
    def reserve(seat: str) -> str:
        return seat

    @reserve.undo
    async def _(effect: openprogram.Effect) -> None:
        await asyncio.sleep(0)
        undone.append(effect.output)

    with openprogram.session_context(store=store) as h:
        reserve("1A")
        reserve("1B")
    openprogram.undo(h.session_id, h.turn_id, store=store)

    async def inside_a_loop() -> None:
        with openprogram.session_context(h.session_id, store=store):
            reserve("1C")
        openprogram.undo(h.session_id, store=store)

    asyncio.run(inside_a_loop())
    assert undone == ["1B", "1A", "1C"]

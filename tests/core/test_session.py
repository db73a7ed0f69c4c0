"""``session_context``, ``run_with_session``, ``get_current_session`` and ``require_current_session``."""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncGenerator, Generator

import openprogram
import pytest
from openprogram._recording import call_var, session_var

from .conftest import calls_by_name, one


@openprogram.tool
def echo(value: str) -> str:
    return value


def turns(store: openprogram.Store, session_id: str) -> list[openprogram.CallRecord]:
    return [c for c in store.list_calls(session_id) if c.kind == "turn"]


def test_sync_entry_mints_ids_and_records_one_turn(store: openprogram.Store) -> None:
    assert openprogram.get_current_session() is None
    with openprogram.session_context(store=store, runtime="unit") as h:
        assert openprogram.get_current_session() is h
        assert openprogram.require_current_session() is h
        assert h.created is True
        assert h.runtime == "unit"
        assert re.fullmatch(r"[0-9a-f]{22}", h.session_id)
        assert re.fullmatch(r"[0-9a-f]{22}", h.turn_id)
        assert h.session_id != h.turn_id
        echo("hi")
    assert openprogram.get_current_session() is None
    [turn] = turns(store, h.session_id)
    assert turn.turn_id == h.turn_id
    assert turn.parent_id is None
    assert turn.status == "ok"
    assert turn.name == "main"
    assert turn.inputs == {"runtime": "unit"}
    tool = one(store, h.session_id, "echo")
    assert tool.parent_id == turn.call_id
    assert tool.turn_id == h.turn_id
    assert store.get_session(h.session_id) is not None


def test_minted_ids_are_unique(store: openprogram.Store) -> None:
    seen = set()
    for _ in range(50):
        with openprogram.session_context(store=store) as h:
            seen.add(h.session_id)
            seen.add(h.turn_id)
    assert len(seen) == 100


async def test_async_entry(store: openprogram.Store) -> None:
    async with openprogram.session_context("async-1", store=store, turn_id="t-1", agent_id="bot") as h:
        assert openprogram.get_current_session() is h
        assert (h.session_id, h.turn_id, h.created) == ("async-1", "t-1", True)
        echo("x")
    assert openprogram.get_current_session() is None
    [turn] = turns(store, "async-1")
    assert (turn.turn_id, turn.name, turn.parent_id, turn.status) == ("t-1", "bot", None, "ok")
    assert store.get_session("async-1").agent_id == "bot"  # type: ignore[union-attr]


def test_create_then_resume(store: openprogram.Store) -> None:
    with openprogram.session_context(store=store) as first:
        echo("one")
    with openprogram.session_context(first.session_id, store=store) as second:
        echo("two")
    assert first.created is True
    assert second.created is False
    assert second.session_id == first.session_id
    assert second.turn_id != first.turn_id
    recorded = turns(store, first.session_id)
    assert [t.turn_id for t in recorded] == [first.turn_id, second.turn_id]
    assert all(t.parent_id is None for t in recorded)
    echoes = calls_by_name(store, first.session_id)["echo"]
    assert [(e.inputs, e.turn_id) for e in echoes] == [
        ({"value": "one"}, first.turn_id),
        ({"value": "two"}, second.turn_id),
    ]


def test_given_id_not_in_store_is_created(store: openprogram.Store) -> None:
    with openprogram.session_context("brand-new-id", store=store) as h:
        pass
    assert h.created is True
    assert h.session_id == "brand-new-id"


async def test_async_resume_reads_the_store(sqlite_url: str) -> None:
    # Created durably, then resumed through a different store object on the same file.
    store = openprogram.open_store(sqlite_url)
    async with openprogram.session_context("resume-me", store=store):
        pass
    async with openprogram.session_context("resume-me", store=sqlite_url) as again:
        assert again.created is False


def test_one_turn_per_entry_and_nesting(store: openprogram.Store) -> None:
    with openprogram.session_context("nest", store=store, turn_id="outer") as outer:
        echo("a")
        with openprogram.session_context("nest", store=store, turn_id="inner") as inner:
            assert openprogram.get_current_session() is inner
            assert inner.created is False
            echo("b")
        assert openprogram.get_current_session() is outer
        echo("c")
        with openprogram.session_context("other", store=store) as other:
            echo("d")
        assert openprogram.get_current_session() is outer
    by_turn = {t.turn_id: t for t in turns(store, "nest")}
    assert set(by_turn) == {"outer", "inner"}
    assert by_turn["outer"].parent_id is None
    # A nested entry into the same session is a turn under the call running when it started.
    assert by_turn["inner"].parent_id == by_turn["outer"].call_id
    echoes = {e.inputs["value"]: e for e in calls_by_name(store, "nest")["echo"]}
    assert echoes["a"].parent_id == echoes["c"].parent_id == by_turn["outer"].call_id
    assert echoes["b"].parent_id == by_turn["inner"].call_id
    assert echoes["b"].turn_id == "inner"
    # A different session nested inside starts its own top-level turn.
    [other_turn] = turns(store, other.session_id)
    assert other_turn.parent_id is None
    assert one(store, other.session_id, "echo").parent_id == other_turn.call_id


def test_one_object_entered_repeatedly(store: openprogram.Store) -> None:
    ctx = openprogram.session_context("again", store=store)
    with ctx as a:
        pass
    with ctx as b:
        pass
    assert a.created and not b.created
    assert len(turns(store, "again")) == 2


def test_reset_on_exception_and_same_exception_object(store: openprogram.Store) -> None:
    boom = ValueError("boom")
    with pytest.raises(ValueError) as info:
        with openprogram.session_context("exc", store=store):
            raise boom
    assert info.value is boom
    assert session_var.get() is None
    assert call_var.get() is None
    [turn] = turns(store, "exc")
    assert turn.status == "error"
    assert turn.error == "ValueError: boom"


async def test_reset_on_cancellation(store: openprogram.Store) -> None:
    entered = asyncio.Event()
    after: list[object] = []

    async def agent() -> None:
        try:
            async with openprogram.session_context("cancelled", store=store):
                entered.set()
                await asyncio.Event().wait()  # until cancelled
        finally:
            after.append((session_var.get(), call_var.get()))

    task = asyncio.create_task(agent())
    await entered.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert after == [(None, None)]
    assert session_var.get() is None
    [turn] = turns(store, "cancelled")
    assert turn.status == "interrupted"


def test_reset_on_generator_close(store: openprogram.Store) -> None:
    def agent() -> Generator[str, None, None]:
        with openprogram.session_context("gen", store=store):
            echo("inside")
            yield "first"
            yield "never"

    gen = agent()
    assert next(gen) == "first"
    gen.close()
    assert session_var.get() is None
    assert call_var.get() is None
    [turn] = turns(store, "gen")
    assert turn.status == "interrupted"


async def test_reset_on_async_generator_close(store: openprogram.Store) -> None:
    async def agent() -> AsyncGenerator[str, None]:
        async with openprogram.session_context("agen", store=store):
            yield "first"
            yield "never"

    gen = agent()
    assert await gen.__anext__() == "first"
    await gen.aclose()
    assert session_var.get() is None
    assert call_var.get() is None
    [turn] = turns(store, "agen")
    assert turn.status == "interrupted"


def test_require_current_session_names_the_fix() -> None:
    with pytest.raises(RuntimeError) as info:
        openprogram.require_current_session()
    message = str(info.value)
    assert "session_context" in message
    assert "run_with_session" in message


def test_run_with_session_reinstalls_a_handle_in_a_bare_thread(store: openprogram.Store) -> None:
    import threading

    seen: list[object] = []
    with openprogram.session_context("rws", store=store) as h:

        def worker() -> None:  # a thread started without propagate(): no context
            seen.append(openprogram.get_current_session())
            with openprogram.run_with_session(h) as again:
                seen.append(again)
                seen.append(openprogram.get_current_session())
                echo("from thread")
            seen.append(openprogram.get_current_session())

        t = threading.Thread(target=worker)
        t.start()
        t.join()
    assert seen == [None, h, h, None]
    [turn] = turns(store, "rws")
    assert one(store, "rws", "echo").parent_id == turn.call_id


async def test_run_with_session_async_keeps_current_call(store: openprogram.Store) -> None:
    @openprogram.tool
    async def outer() -> str:
        handle = openprogram.require_current_session()
        async with openprogram.run_with_session(handle):
            return echo("nested")

    async with openprogram.session_context("rws-async", store=store):
        await outer()
    assert one(store, "rws-async", "echo").parent_id == one(store, "rws-async", "outer").call_id


def test_run_with_session_rejects_non_handles() -> None:
    with pytest.raises(TypeError):
        openprogram.run_with_session("not-a-handle")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "bad",
    ["", "a" * 129, "has space", "semi;colon", "../etc", "-leading-dash", "new\nline", "ünïcode"],
)
def test_invalid_session_ids_are_rejected_clearly(bad: str) -> None:
    with pytest.raises(openprogram.InvalidSessionId) as info:
        openprogram.session_context(bad)
    assert "session id" in str(info.value)
    assert isinstance(info.value, ValueError)


def test_invalid_turn_and_agent_ids_are_rejected() -> None:
    with pytest.raises(openprogram.InvalidSessionId, match="turn id"):
        openprogram.session_context(turn_id="bad id")
    with pytest.raises(openprogram.InvalidSessionId, match="agent id"):
        openprogram.session_context(agent_id="")
    with pytest.raises(openprogram.InvalidSessionId, match="must be a str"):
        openprogram.session_context(42)  # type: ignore[arg-type]


def test_valid_id_edge_cases(store: openprogram.Store) -> None:
    for good in ("a", "a" * 128, "user@example.com:chat-1+x_y.z"):
        with openprogram.session_context(good, store=store) as h:
            assert h.session_id == good


async def test_one_object_entered_by_concurrent_tasks_never_leaks(store: openprogram.Store) -> None:
    ctx = openprogram.session_context("shared-ctx", store=store)
    first_inside, second_inside, first_left = asyncio.Event(), asyncio.Event(), asyncio.Event()

    async def handler(first: bool) -> tuple[object, object, str]:
        async with ctx as h:
            if first:  # enters first and leaves first: not LIFO across tasks
                first_inside.set()
                await second_inside.wait()
            else:
                second_inside.set()
                await first_left.wait()
            echo(h.turn_id)
            assert openprogram.get_current_session() is h
        if first:
            first_left.set()
        return session_var.get(), call_var.get(), h.turn_id

    a = asyncio.create_task(handler(True))
    await first_inside.wait()
    b = asyncio.create_task(handler(False))
    results = await asyncio.gather(a, b)
    assert [r[:2] for r in results] == [(None, None), (None, None)]
    by_turn = {t.turn_id: t for t in turns(store, "shared-ctx")}
    assert set(by_turn) == {results[0][2], results[1][2]}
    assert all(t.status == "ok" for t in by_turn.values())
    for e in calls_by_name(store, "shared-ctx")["echo"]:
        assert e.parent_id == by_turn[e.inputs["value"]].call_id


def test_one_object_entered_by_threads_never_leaks(store: openprogram.Store) -> None:
    import threading

    ctx = openprogram.session_context("shared-threads", store=store)
    inside = threading.Barrier(4)
    leaked: list[object] = []

    def worker() -> None:
        with ctx:
            inside.wait()  # all four are inside at once
            echo("t")
        leaked.append(session_var.get())

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert leaked == [None] * 4
    assert len(turns(store, "shared-threads")) == 4


def test_one_run_with_session_object_shared_by_threads_never_leaks(store: openprogram.Store) -> None:
    import threading

    with openprogram.session_context("rws-shared", store=store) as h:
        shared = openprogram.run_with_session(h)
    first_inside, second_inside, first_left = threading.Event(), threading.Event(), threading.Event()
    after: dict[str, object] = {}

    def worker(first: bool) -> None:
        with shared:
            if first:  # enters first and leaves first: not LIFO across threads
                first_inside.set()
                second_inside.wait()
            else:
                second_inside.set()
                first_left.wait()
            echo("first" if first else "second")
        after["first" if first else "second"] = (session_var.get(), call_var.get())
        if first:
            first_left.set()

    a = threading.Thread(target=worker, args=(True,))
    a.start()
    first_inside.wait()
    b = threading.Thread(target=worker, args=(False,))
    b.start()
    a.join()
    b.join()
    assert after == {"first": (None, None), "second": (None, None)}
    assert {e.parent_id for e in calls_by_name(store, "rws-shared")["echo"]} == {h.root_call_id}


async def test_concurrent_first_entries_of_one_new_id_report_created_once(store: openprogram.Store) -> None:
    gate = asyncio.Event()

    async def enter() -> bool:
        await gate.wait()
        async with openprogram.session_context("fresh-shared-id", store=store) as h:
            await asyncio.sleep(0)
            return h.created

    tasks = [asyncio.create_task(enter()) for _ in range(20)]
    await asyncio.sleep(0)
    gate.set()
    assert sorted(await asyncio.gather(*tasks)) == [False] * 19 + [True]


def test_concurrent_first_entries_from_threads_report_created_once(store: openprogram.Store) -> None:
    import threading

    barrier = threading.Barrier(8)
    seen: list[bool] = []

    def enter() -> None:
        barrier.wait()
        with openprogram.session_context("fresh-threads-id", store=store) as h:
            seen.append(h.created)

    threads = [threading.Thread(target=enter) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(seen) == [False] * 7 + [True]

"""No context leaks: whatever ends a tool (exception, cancellation, GeneratorExit, timeout,
KeyboardInterrupt), no context var stays set and no call stays ``running`` in a live process."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import threading
from collections.abc import AsyncGenerator, Callable, Generator
from typing import Any

import openprogram
import pytest
from openprogram._recording import SESSION, call_var, inflight, session_var


class Boom(Exception):
    pass


def _clean_outside() -> None:
    assert session_var.get() is None
    assert call_var.get() is None


def _check_store(store: openprogram.Store, session_id: str, want: dict[str, str]) -> None:
    assert openprogram.flush()
    assert not [rec for rec in inflight.values() if rec[SESSION].session_id == session_id], "calls left running"
    calls = store.list_calls(session_id)
    assert [c for c in calls if c.status == "running"] == []
    got = {c.name: c.status for c in calls if c.kind == "tool"}
    assert got == want


# --- sync tools ------------------------------------------------------------------------------

SYNC_FAILURES: dict[str, tuple[Callable[[], BaseException], str]] = {
    "exception": (lambda: Boom("x"), "error"),
    "keyboard_interrupt": (KeyboardInterrupt, "interrupted"),
    "system_exit": (lambda: SystemExit(3), "interrupted"),
}


@pytest.mark.parametrize("failure", sorted(SYNC_FAILURES))
@pytest.mark.parametrize("nested", [False, True])
def test_sync_tool_failure(failure: str, nested: bool, any_store: openprogram.Store) -> None:
    make, status = SYNC_FAILURES[failure]
    raised = make()

    @openprogram.tool
    def inner() -> None:
        raise raised

    @openprogram.tool
    def outer() -> None:
        inner()

    with openprogram.session_context(store=any_store) as h:
        turn_call = call_var.get()
        with pytest.raises(BaseException) as info:
            (outer if nested else inner)()
        assert info.value is raised  # the user's exception, unchanged
        assert session_var.get() is h
        assert call_var.get() == turn_call
    _clean_outside()
    want = {"inner": status, "outer": status} if nested else {"inner": status}
    _check_store(any_store, h.session_id, want)


def test_keyboard_interrupt_through_session_context(any_store: openprogram.Store) -> None:
    @openprogram.tool
    def work() -> None:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt), openprogram.session_context(store=any_store) as h:
        work()
    _clean_outside()
    _check_store(any_store, h.session_id, {"work": "interrupted"})
    turn = [c for c in any_store.list_calls(h.session_id) if c.kind == "turn"]
    assert [t.status for t in turn] == ["interrupted"]


# --- async tools -------------------------------------------------------------------------------


@openprogram.tool
async def sleeper(seconds: float) -> str:
    await asyncio.sleep(seconds)
    return "slept"


@openprogram.tool
async def nest_sleeper(seconds: float) -> str:
    return await sleeper(seconds)


async def test_cancelled_task(any_store: openprogram.Store) -> None:
    async with openprogram.session_context(store=any_store) as h:
        turn_call = call_var.get()
        task = asyncio.create_task(nest_sleeper(30))
        await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert call_var.get() == turn_call
    _clean_outside()
    _check_store(any_store, h.session_id, {"nest_sleeper": "interrupted", "sleeper": "interrupted"})


async def test_wait_for_timeout(any_store: openprogram.Store) -> None:
    async with openprogram.session_context(store=any_store) as h:
        turn_call = call_var.get()
        with pytest.raises(asyncio.TimeoutError):
            await asyncio.wait_for(nest_sleeper(30), 0.01)
        assert call_var.get() == turn_call
        assert session_var.get() is h
    _clean_outside()
    _check_store(any_store, h.session_id, {"nest_sleeper": "interrupted", "sleeper": "interrupted"})


async def test_cancelled_session_task(any_store: openprogram.Store) -> None:
    # The whole session runs in a task that is cancelled mid-tool.
    ids: list[str] = []

    async def agent() -> None:
        async with openprogram.session_context(store=any_store) as h:
            ids.append(h.session_id)
            await nest_sleeper(30)

    task = asyncio.create_task(agent())
    await asyncio.sleep(0.01)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    _clean_outside()
    _check_store(any_store, ids[0], {"nest_sleeper": "interrupted", "sleeper": "interrupted"})
    assert [c.status for c in any_store.list_calls(ids[0]) if c.kind == "turn"] == ["interrupted"]


async def test_async_exception_is_the_same_object(any_store: openprogram.Store) -> None:
    raised = Boom("async")

    @openprogram.tool
    async def fails() -> None:
        await asyncio.sleep(0)
        raise raised

    async with openprogram.session_context(store=any_store) as h:
        with pytest.raises(Boom) as info:
            await fails()
        assert info.value is raised
    _clean_outside()
    _check_store(any_store, h.session_id, {"fails": "error"})


# --- generators --------------------------------------------------------------------------------


@openprogram.tool
def numbers(n: int) -> Generator[int, None, None]:
    yield from range(n)


@openprogram.tool
async def anumbers(n: int) -> AsyncGenerator[int, None]:
    for i in range(n):
        await asyncio.sleep(0)
        yield i


@pytest.mark.parametrize("how", ["close", "drop", "break"])
def test_generator_exit(how: str, any_store: openprogram.Store) -> None:
    with openprogram.session_context(store=any_store) as h:
        turn_call = call_var.get()
        gen = numbers(10)
        assert next(gen) == 0
        assert call_var.get() == turn_call  # between steps the consumer's context is untouched
        if how == "close":
            gen.close()
        elif how == "drop":
            del gen
            gc.collect()
        else:
            for _ in numbers(10):
                break
            gen.close()
        assert call_var.get() == turn_call
    _clean_outside()
    _check_store(any_store, h.session_id, {"numbers": "interrupted"})


def test_generator_closed_in_another_thread(any_store: openprogram.Store) -> None:
    with openprogram.session_context(store=any_store) as h:
        gen = numbers(10)
        next(gen)
        worker = threading.Thread(target=gen.close)
        worker.start()
        worker.join()
    _clean_outside()
    _check_store(any_store, h.session_id, {"numbers": "interrupted"})


async def test_async_generator_aclose_and_break(any_store: openprogram.Store) -> None:
    async with openprogram.session_context(store=any_store) as h:
        turn_call = call_var.get()
        agen = anumbers(10)
        assert await agen.__anext__() == 0
        await agen.aclose()
        async with contextlib.aclosing(anumbers(5)) as stream:
            async for _ in stream:
                break
        assert call_var.get() == turn_call
    _clean_outside()
    calls = [c for c in any_store.list_calls(h.session_id) if c.kind == "tool"]
    assert sorted(c.status for c in calls) == ["interrupted", "interrupted"]
    assert not [rec for rec in inflight.values() if rec[SESSION].session_id == h.session_id]


def test_abandoned_async_generator_is_finalised_by_the_loop(any_store: openprogram.Store) -> None:
    ids: list[str] = []

    async def main() -> None:
        async with openprogram.session_context(store=any_store) as h:
            ids.append(h.session_id)
            agen = anumbers(10)
            await agen.__anext__()
            del agen  # never closed: the loop's asyncgen hooks finalise it

    asyncio.run(main())  # run() shuts down async generators before returning
    _clean_outside()
    gc.collect()
    _check_store(any_store, ids[0], {"anumbers": "interrupted"})


def test_call_scope_hook_pairs_on_error(any_store: openprogram.Store) -> None:
    # Adapters with before/after hooks use enter()/exit(exc).
    with openprogram.session_context(store=any_store) as h:
        turn_call = call_var.get()
        scopes: list[Any] = []
        for name in ("a", "b", "c"):
            scopes.append(openprogram.call_scope("node", name).enter())
        err = Boom("hook")
        for scope in reversed(scopes):
            scope.exit(err)
        assert call_var.get() == turn_call
    _clean_outside()
    assert openprogram.flush()
    calls = {c.name: c for c in any_store.list_calls(h.session_id) if c.kind == "node"}
    assert {n: c.status for n, c in calls.items()} == {"a": "error", "b": "error", "c": "error"}
    assert calls["c"].parent_id == calls["b"].call_id

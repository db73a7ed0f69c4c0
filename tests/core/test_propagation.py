"""The session travels through threads, executors and tasks; concurrent sessions never mix."""

from __future__ import annotations

import asyncio
import concurrent.futures
import inspect
import threading
import warnings
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import openprogram
import pytest

from .conftest import calls_by_name, one


@openprogram.tool
def leaf(tag: str) -> str:
    handle = openprogram.require_current_session()
    return f"{handle.session_id}/{tag}"


def test_propagate_into_a_thread(store: openprogram.Store) -> None:
    results: list[str] = []

    @openprogram.tool
    def spawner() -> None:
        def target() -> None:
            results.append(leaf("t"))

        t = threading.Thread(target=openprogram.propagate(target))
        t.start()
        t.join()

    with openprogram.session_context("prop", store=store):
        spawner()
    assert results == ["prop/t"]
    assert one(store, "prop", "leaf").parent_id == one(store, "prop", "spawner").call_id


def test_propagate_keeps_async_and_generator_functions_in_context(store: openprogram.Store) -> None:
    results: list[str] = []

    async def coroutine() -> None:
        await asyncio.sleep(0)
        results.append(leaf("coroutine"))

    def generator() -> Iterator[str]:
        yield leaf("generator 1")
        yield leaf("generator 2")

    async def async_generator() -> AsyncIterator[str]:
        yield leaf("async generator 1")
        await asyncio.sleep(0)
        yield leaf("async generator 2")

    async def drain(stream: AsyncIterator[str]) -> None:
        results.extend([item async for item in stream])

    @openprogram.tool
    def spawner() -> tuple[Any, ...]:
        return tuple(openprogram.propagate(fn) for fn in (coroutine, generator, async_generator))

    with openprogram.session_context("kinds", store=store):
        bound = spawner()
    kinds = [inspect.iscoroutinefunction, inspect.isgeneratorfunction, inspect.isasyncgenfunction]
    assert [kind(fn) for kind, fn in zip(kinds, bound, strict=True)] == [True, True, True]
    # Run where no session is: a plain thread, each with its own event loop.
    for target in (
        lambda: asyncio.run(bound[0]()),
        lambda: results.extend(bound[1]()),
        lambda: asyncio.run(drain(bound[2]())),
    ):
        worker = threading.Thread(target=target)
        worker.start()
        worker.join()
    assert results == [
        f"kinds/{tag}" for tag in ("coroutine", "generator 1", "generator 2", "async generator 1", "async generator 2")
    ]
    spawned = one(store, "kinds", "spawner")
    assert [c.parent_id for c in calls_by_name(store, "kinds")["leaf"]] == [spawned.call_id] * 5


async def test_a_tool_over_a_propagated_generator_records_what_it_yields(store: openprogram.Store) -> None:
    def numbers(n: int) -> Iterator[int]:
        yield from range(n)

    async def anumbers(n: int) -> AsyncIterator[int]:
        for i in range(n):
            yield i

    with openprogram.session_context("gen-kinds", store=store):
        counted, acounted = (
            openprogram.tool(openprogram.propagate(numbers)),
            openprogram.tool(openprogram.propagate(anumbers)),
        )
    async with openprogram.session_context("gen-kinds", store=store):
        assert list(counted(3)) == [0, 1, 2]
        assert [i async for i in acounted(2)] == [0, 1]
    assert one(store, "gen-kinds", "numbers").output == {"yielded": [0, 1, 2], "count": 3}
    assert one(store, "gen-kinds", "anumbers").output == {"yielded": [0, 1], "count": 2}


def test_a_propagated_async_generator_left_open_is_closed_once_at_loop_shutdown(store: openprogram.Store) -> None:
    # asyncio.run closes every async generator still open when it ends. The propagated
    # generator's driver must leave the generator it drives to the loop then: two aclose()
    # calls meeting fail, and the loop logs "aclose(): ... already running".
    cleaned: list[int] = []
    loop_errors: list[str] = []
    left_open: list[AsyncIterator[int]] = []

    async def numbers(tag: int) -> AsyncIterator[int]:
        try:
            for i in range(10):
                yield i
        finally:
            for _ in range(3):  # a cleanup that awaits
                await asyncio.sleep(0)
            cleaned.append(tag)

    async def main() -> None:
        asyncio.get_running_loop().set_exception_handler(lambda loop, context: loop_errors.append(context["message"]))
        bound = openprogram.propagate(numbers)
        for tag in range(3):
            stream = bound(tag)
            left_open.append(stream)
            async for _ in stream:
                break  # not closed: asyncio.run closes it

    with openprogram.session_context("left-open", store=store):
        asyncio.run(main())
    assert loop_errors == []
    assert sorted(cleaned) == [0, 1, 2]


def test_a_propagated_async_generator_begun_after_shutdown_asyncgens_is_closed(store: openprogram.Store) -> None:
    # A loop may run on after loop.shutdown_asyncgens(); what begins then is closed by its driver again.
    cleaned: list[str] = []

    async def numbers() -> AsyncIterator[int]:
        try:
            yield 1
            yield 2
        finally:
            await asyncio.sleep(0)
            cleaned.append("finally")

    async def later() -> None:
        stream = openprogram.propagate(numbers)()
        async for _ in stream:
            break
        await stream.aclose()  # type: ignore[attr-defined]

    loop = asyncio.new_event_loop()
    try:
        with openprogram.session_context("after-shutdown", store=store):
            loop.run_until_complete(loop.shutdown_asyncgens())
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ResourceWarning)  # asyncio's: "scheduled after shutdown_asyncgens"
                loop.run_until_complete(later())
    finally:
        loop.close()
    assert cleaned == ["finally"]


def test_propagated_function_runs_many_times_concurrently(store: openprogram.Store) -> None:
    with openprogram.session_context("many", store=store) as h:
        bound = openprogram.propagate(leaf)
        threads = [threading.Thread(target=bound, args=(str(i),)) for i in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    leaves = calls_by_name(store, "many")["leaf"]
    assert sorted(c.inputs["tag"] for c in leaves) == [str(i) for i in range(8)]
    assert {c.parent_id for c in leaves} == {h.root_call_id}


def test_context_thread_pool_executor(store: openprogram.Store) -> None:
    @openprogram.tool
    def fan_out(n: int) -> list[str]:
        with openprogram.ContextThreadPoolExecutor(max_workers=3) as pool:
            futures = [pool.submit(leaf, str(i)) for i in range(n)]
            mapped = list(pool.map(leaf, ["m1", "m2"]))
        return [f.result() for f in futures] + mapped

    with openprogram.session_context("pool", store=store):
        assert fan_out(4) == ["pool/0", "pool/1", "pool/2", "pool/3", "pool/m1", "pool/m2"]
    fan = one(store, "pool", "fan_out")
    leaves = calls_by_name(store, "pool")["leaf"]
    assert len(leaves) == 6
    assert {c.parent_id for c in leaves} == {fan.call_id}


def test_plain_executor_does_not_carry_context_but_propagate_does(store: openprogram.Store) -> None:
    seen: list[object] = []
    with openprogram.session_context("exec", store=store) as h:
        with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
            pool.submit(lambda: seen.append(openprogram.get_current_session())).result()
            pool.submit(openprogram.propagate(lambda: seen.append(openprogram.get_current_session()))).result()
    assert seen == [None, h]


async def test_asyncio_to_thread_and_run_in_executor(store: openprogram.Store) -> None:
    @openprogram.tool
    async def parent() -> list[str]:
        a = await asyncio.to_thread(leaf, "to_thread")
        loop = asyncio.get_running_loop()
        b = await loop.run_in_executor(None, openprogram.propagate(leaf), "executor")
        return [a, b]

    async with openprogram.session_context("aio", store=store):
        assert await parent() == ["aio/to_thread", "aio/executor"]
    p = one(store, "aio", "parent")
    assert {c.parent_id for c in calls_by_name(store, "aio")["leaf"]} == {p.call_id}


async def test_create_task_and_gather(store: openprogram.Store) -> None:
    @openprogram.tool
    async def child(tag: str) -> str:
        await asyncio.sleep(0)
        return leaf(tag)

    @openprogram.tool
    async def parent() -> list[str]:
        task = asyncio.create_task(child("task"))
        gathered = await asyncio.gather(child("g1"), child("g2"))
        return [await task, *gathered]

    async with openprogram.session_context("tasks", store=store):
        assert await parent() == ["tasks/task", "tasks/g1", "tasks/g2"]
    p = one(store, "tasks", "parent")
    children = calls_by_name(store, "tasks")["child"]
    assert len(children) == 3
    assert {c.parent_id for c in children} == {p.call_id}
    by_child = {c.call_id for c in children}
    assert {c.parent_id for c in calls_by_name(store, "tasks")["leaf"]} == by_child


@pytest.mark.parametrize("backend", ["memory", "sqlite"])
async def test_200_concurrent_tasks_each_in_its_own_session(backend: str, tmp_path: Path) -> None:
    store = openprogram.open_store("memory://" if backend == "memory" else f"sqlite:///{tmp_path / 'many.db'}")

    @openprogram.tool
    async def step(task_no: int, depth: int) -> int:
        await asyncio.sleep(0)  # interleave with the other tasks
        if depth:
            return await step(task_no, depth - 1) + 1
        return task_no

    async def agent(task_no: int) -> tuple[int, str, str]:
        async with openprogram.session_context(store=store, agent_id=f"agent-{task_no}") as h:
            await step(task_no, 2)
            inner = await asyncio.gather(step(task_no, 0), asyncio.to_thread(leaf, str(task_no)))
            assert inner[0] == task_no
            return task_no, h.session_id, h.root_call_id

    results = await asyncio.gather(*(agent(i) for i in range(200)))
    assert len({sid for _, sid, _ in results}) == 200
    for task_no, session_id, turn_call in results:
        calls = store.list_calls(session_id)
        ids = {c.call_id for c in calls}
        assert len(calls) == 1 + 4 + 1  # turn, step x3 nested + 1 gathered, leaf
        for c in calls:
            assert c.session_id == session_id
            assert c.parent_id is None or c.parent_id in ids, "parent in another session"
            if c.kind == "tool" and c.name == "step":
                assert c.inputs["task_no"] == task_no
            if c.name == "leaf":
                assert c.output == f"{session_id}/{task_no}"
                assert c.parent_id == turn_call
            assert c.status == "ok"
    assert sum(s.call_count for s in store.list_sessions()) == 200 * 6


def test_8_threads_each_in_its_own_session(store: openprogram.Store) -> None:
    barrier = threading.Barrier(8)
    results: dict[int, str] = {}
    errors: list[BaseException] = []

    @openprogram.tool
    def work(thread_no: int, i: int) -> str:
        return leaf(f"{thread_no}-{i}")

    def agent(thread_no: int) -> None:
        try:
            with openprogram.session_context(store=store) as h:
                barrier.wait()
                for i in range(50):
                    assert work(thread_no, i) == f"{h.session_id}/{thread_no}-{i}"
                results[thread_no] = h.session_id
        except BaseException as exc:  # surfaced in the main thread
            errors.append(exc)

    threads = [threading.Thread(target=agent, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert len(set(results.values())) == 8
    for thread_no, session_id in results.items():
        by_name = calls_by_name(store, session_id)
        assert len(by_name["work"]) == 50 and len(by_name["leaf"]) == 50
        assert {c.inputs["thread_no"] for c in by_name["work"]} == {thread_no}
        work_i = {c.call_id: c.inputs["i"] for c in by_name["work"]}
        for c in by_name["leaf"]:  # each leaf hangs under the work call that made it
            assert c.inputs["tag"] == f"{thread_no}-{work_i[c.parent_id]}"  # type: ignore[index]
        assert all(c.session_id == session_id for calls in by_name.values() for c in calls)

"""``@openprogram.tool``: function kinds, methods, recording, ``_session`` and exceptions."""

from __future__ import annotations

import asyncio
import functools
import inspect
import os
import sys
import threading
import typing
import warnings
from collections.abc import AsyncGenerator, AsyncIterator, Generator, Iterator

import openprogram
import pytest
from openprogram import _runtime
from openprogram._recording import SESSION, call_var, inflight, session_var

from .conftest import calls_by_name, one


@openprogram.tool
def add(a: int, b: int = 1) -> int:
    """Add two numbers."""
    return a + b


@openprogram.tool
async def aadd(a: int, b: int = 1) -> int:
    await asyncio.sleep(0)
    return a + b


@openprogram.tool
def count(n: int) -> Generator[int, None, int]:
    yield from range(n)
    return n


@openprogram.tool
async def acount(n: int) -> AsyncIterator[int]:
    for i in range(n):
        await asyncio.sleep(0)
        yield i


@openprogram.tool(name="lookup_tool")
def lookup(query: str) -> str:
    return query.upper()


class Agent:
    def __init__(self, prefix: str) -> None:
        self.prefix = prefix

    @openprogram.tool
    def greet(self, who: str) -> str:
        return f"{self.prefix} {who}"

    @openprogram.tool
    async def agreet(self, who: str) -> str:
        return f"{self.prefix} {who}"

    @classmethod
    @openprogram.tool
    def build(cls, prefix: str) -> Agent:
        return cls(prefix)

    @staticmethod
    @openprogram.tool
    def static(x: int) -> int:
        return x * 3


def test_function_kinds_are_kept() -> None:
    assert not inspect.iscoroutinefunction(add)
    assert inspect.iscoroutinefunction(aadd)
    assert inspect.isgeneratorfunction(count)
    assert inspect.isasyncgenfunction(acount)
    assert inspect.iscoroutinefunction(Agent("x").agreet)
    assert not inspect.iscoroutinefunction(Agent("x").greet)
    assert add.__name__ == "add"
    assert add.__doc__ == "Add two numbers."
    assert inspect.signature(add) == inspect.signature(add.__wrapped__)  # type: ignore[attr-defined]
    assert list(inspect.signature(add).parameters) == ["a", "b"]


def test_sync_records_inputs_output_status_timings(store: openprogram.Store) -> None:
    with openprogram.session_context(store=store) as h:
        assert add(2, b=5) == 7
        assert add(4) == 5
    turn = one(store, h.session_id, "main")
    calls = calls_by_name(store, h.session_id)["add"]
    assert [c.inputs for c in calls] == [{"a": 2, "b": 5}, {"a": 4}]
    assert [c.output for c in calls] == [7, 5]
    for c in calls:
        assert (c.kind, c.status, c.error, c.framework) == ("tool", "ok", None, None)
        assert c.parent_id == turn.call_id
        assert c.session_id == h.session_id and c.turn_id == h.turn_id
        assert c.ended_at is not None and turn.started_at <= c.started_at <= c.ended_at <= turn.ended_at  # type: ignore[operator]


async def test_async_records(store: openprogram.Store) -> None:
    async with openprogram.session_context(store=store) as h:
        assert await aadd(1, 2) == 3
    call = one(store, h.session_id, "aadd")
    assert (call.inputs, call.output, call.status) == ({"a": 1, "b": 2}, 3, "ok")


def test_generator_records_yields_and_return(store: openprogram.Store) -> None:
    with openprogram.session_context(store=store) as h:
        assert list(count(3)) == [0, 1, 2]
    call = one(store, h.session_id, "count")
    assert call.status == "ok"
    assert call.inputs == {"n": 3}
    assert call.output == {"yielded": [0, 1, 2], "count": 3, "returned": 3}


async def test_async_generator_records_yields(store: openprogram.Store) -> None:
    async with openprogram.session_context(store=store) as h:
        assert [i async for i in acount(2)] == [0, 1]
    call = one(store, h.session_id, "acount")
    assert (call.status, call.output) == ("ok", {"yielded": [0, 1], "count": 2})


def test_generator_closed_early_is_interrupted_and_context_restored(store: openprogram.Store) -> None:
    seen_inside: list[object] = []

    @openprogram.tool
    def stream() -> Generator[int, None, None]:
        for i in range(10):
            seen_inside.append(call_var.get())
            yield i

    with openprogram.session_context(store=store) as h:
        before = call_var.get()
        gen = stream()
        assert next(gen) == 0
        # Between steps the consumer's context is its own.
        assert call_var.get() == before
        assert next(gen) == 1
        gen.close()
        assert call_var.get() == before
        assert session_var.get() is h
    call = one(store, h.session_id, "stream")
    assert call.status == "interrupted"
    assert call.error is not None and call.error.startswith("GeneratorExit")
    assert seen_inside == [call.call_id, call.call_id]


async def test_async_generator_closed_early(store: openprogram.Store) -> None:
    @openprogram.tool
    async def astream() -> AsyncGenerator[int, None]:
        for i in range(10):
            yield i

    async with openprogram.session_context(store=store) as h:
        before = call_var.get()
        gen = astream()
        assert await gen.__anext__() == 0
        assert call_var.get() == before
        await gen.aclose()
        assert call_var.get() == before
    assert one(store, h.session_id, "astream").status == "interrupted"


def test_generator_send_and_throw_pass_through(store: openprogram.Store) -> None:
    @openprogram.tool
    def accumulate() -> typing.Generator[int, int, int]:
        total = 0
        while True:
            try:
                value = yield total
            except KeyError:
                return -1
            total += value

    with openprogram.session_context(store=store) as h:
        gen = accumulate()
        assert next(gen) == 0
        assert gen.send(5) == 5
        assert gen.send(2) == 7
        with pytest.raises(StopIteration) as stop:
            gen.throw(KeyError("stop"))
        assert stop.value.value == -1
    call = one(store, h.session_id, "accumulate")
    assert call.status == "ok"
    assert call.output == {"yielded": [0, 5, 7], "count": 3, "returned": -1}


def test_partial_and_callable_objects_are_tools(store: openprogram.Store) -> None:
    def add(a: int, b: int) -> int:
        return a + b

    class Adder:
        def __call__(self, a: int, b: int) -> int:
            return a + b

    plus_one = openprogram.tool(functools.partial(add, 1))  # used to fail: no __name__
    adder = openprogram.tool(Adder())
    with openprogram.session_context(store=store) as h:
        assert plus_one(2) == 3
        assert adder(2, 3) == 5
    openprogram.flush()
    assert one(store, h.session_id, "partial").output == 3
    assert one(store, h.session_id, "Adder").output == 5


def test_tool_above_staticmethod_and_classmethod(store: openprogram.Store) -> None:
    class K:
        factor = 3

        @openprogram.tool
        @staticmethod
        def triple(x: int) -> int:
            return x * 3

        @openprogram.tool
        @classmethod
        def scaled(cls, x: int) -> int:
            return x * cls.factor

    with openprogram.session_context(store=store) as h:
        assert K.triple(2) == 6
        assert K().triple(2) == 6  # used to fail: bound to the instance
        assert K.scaled(2) == 6  # used to fail: "needs a function, not classmethod"
        assert K().scaled(3) == 9
    openprogram.flush()
    by_name = calls_by_name(store, h.session_id)
    assert [c.inputs for c in by_name["triple"]] == [{"x": 2}, {"x": 2}]
    assert [c.inputs for c in by_name["scaled"]] == [{"x": 2}, {"x": 3}]  # cls is not an input


def test_named_tool(store: openprogram.Store) -> None:
    with openprogram.session_context(store=store) as h:
        assert lookup("q") == "Q"
    assert one(store, h.session_id, "lookup_tool").output == "Q"


async def test_methods(store: openprogram.Store) -> None:
    async with openprogram.session_context(store=store) as h:
        agent = Agent.build("hello")
        assert agent.greet("ann") == "hello ann"
        assert await agent.agreet(who="bob") == "hello bob"
        assert Agent.static(2) == 6
        assert agent.static(3) == 9
    by_name = calls_by_name(store, h.session_id)
    # self / cls are not recorded as inputs
    assert by_name["build"][0].inputs == {"prefix": "hello"}
    assert by_name["greet"][0].inputs == {"who": "ann"}
    assert by_name["greet"][0].output == "hello ann"
    assert by_name["agreet"][0].inputs == {"who": "bob"}
    assert [c.inputs for c in by_name["static"]] == [{"x": 2}, {"x": 3}]


def test_nested_tools_form_a_tree(store: openprogram.Store) -> None:
    @openprogram.tool
    def leaf(x: int) -> int:
        return x

    @openprogram.tool
    def branch(n: int) -> int:
        return sum(leaf(i) for i in range(n))

    with openprogram.session_context(store=store) as h:
        assert branch(3) == 3
    b = one(store, h.session_id, "branch")
    leaves = calls_by_name(store, h.session_id)["leaf"]
    assert len(leaves) == 3
    assert {c.parent_id for c in leaves} == {b.call_id}


def test_user_exception_propagates_as_same_object(store: openprogram.Store) -> None:
    boom = KeyError("missing")

    @openprogram.tool
    def fails(x: int) -> None:
        raise boom

    @openprogram.tool
    def gen_fails() -> Iterator[int]:
        yield 1
        raise boom

    with openprogram.session_context(store=store) as h:
        with pytest.raises(KeyError) as info:
            fails(1)
        assert info.value is boom
        with pytest.raises(KeyError) as info2:
            fails(x=[1])  # type: ignore[arg-type]  # slow path
        assert info2.value is boom
        with pytest.raises(KeyError) as info3:
            list(gen_fails())
        assert info3.value is boom
        assert call_var.get() == h.root_call_id  # restored after every failure
    failed = calls_by_name(store, h.session_id)["fails"]
    assert [c.status for c in failed] == ["error", "error"]
    assert all(c.error == "KeyError: 'missing'" for c in failed)
    assert all(c.output is None for c in failed)
    g = one(store, h.session_id, "gen_fails")
    assert (g.status, g.error) == ("error", "KeyError: 'missing'")


class _Pause(Exception):
    pass


class _Handoff(_Pause):
    pass


def test_registered_control_flow_is_not_an_error(store: openprogram.Store, monkeypatch: pytest.MonkeyPatch) -> None:
    from openprogram._recording import record

    monkeypatch.setattr(record, "_control_flow", {})  # process-wide: restored after the test
    monkeypatch.setattr(record, "_CONTROL_FLOW", ())
    record.register_control_flow(_Pause, "interrupted")
    record.register_control_flow(_Handoff, "ok")  # a subclass registered apart: its own status
    with pytest.raises(ValueError, match="'ok' or 'interrupted'"):
        record.register_control_flow(KeyError, "error")
    pause, handoff = _Pause("waiting for a human"), _Handoff("to the parent")

    @openprogram.tool
    def steer(exc: BaseException) -> None:
        raise exc

    @openprogram.tool
    def steer_later() -> Iterator[int]:
        yield 1
        raise pause

    with openprogram.session_context(store=store) as h:
        for exc in (pause, handoff):
            with pytest.raises(_Pause) as info:
                steer(exc)
            assert info.value is exc
        with pytest.raises(_Pause):
            list(steer_later())
        with pytest.raises(_Pause), openprogram.call_scope("node", "scoped"):
            raise pause
    records = calls_by_name(store, h.session_id)
    assert [(c.status, c.error) for c in records["steer"]] == [("interrupted", None), ("ok", None)]
    for name in ("steer_later", "scoped"):
        record = one(store, h.session_id, name)
        assert (record.status, record.error) == ("interrupted", None)


class _Deep(Exception):
    pass


@pytest.mark.parametrize("path", ["compiled", "general"])
def test_a_tool_failing_near_the_recursion_limit_raises_its_own_exception(store: openprogram.Store, path: str) -> None:
    # Called at every depth up to the limit: somewhere the wrapper's error path has no stack left.
    raised: list[BaseException] = []

    @openprogram.tool
    def fails(x: object) -> None:
        try:
            error = _Deep(x)
        except RecursionError as own:  # the function itself ran out of stack: that is its exception
            raised.append(own)
            raise
        raised.append(error)
        raise error

    def at_depth(n: int) -> None:
        if n:
            return at_depth(n - 1)
        return fails(1) if path == "compiled" else fails(x=[1])

    replaced = ran = deep = 0
    with openprogram.session_context(store=store) as h:
        for depth in range(sys.getrecursionlimit()):
            raised.clear()
            try:
                at_depth(depth)
            except BaseException as exc:  # what reached the caller
                ran += bool(raised)
                deep += bool(raised) and isinstance(raised[-1], _Deep)
                replaced += bool(raised) and exc is not raised[-1]
        assert call_var.get() == h.root_call_id
    assert ran > 900 and replaced == 0
    failed = calls_by_name(store, h.session_id)["fails"]
    # Every call whose body raised _Deep is recorded with it (a call can also fail entering the
    # body, with RecursionError: recorded too, and not counted in ``ran``).
    assert sum(c.error is not None and c.error.startswith("_Deep") for c in failed) == deep > 0
    assert len(failed) >= ran and {c.status for c in failed} == {"error"}
    assert all(c.error and c.error.startswith(("_Deep", "RecursionError")) for c in failed)


async def test_async_user_exception_same_object(store: openprogram.Store) -> None:
    boom = RuntimeError("async boom")

    @openprogram.tool
    async def afails() -> None:
        raise boom

    @openprogram.tool
    async def agen_fails() -> AsyncIterator[int]:
        yield 1
        raise boom

    async with openprogram.session_context(store=store) as h:
        with pytest.raises(RuntimeError) as info:
            await afails()
        assert info.value is boom
        with pytest.raises(RuntimeError) as info2:
            async for _ in agen_fails():
                pass
        assert info2.value is boom
    assert one(store, h.session_id, "afails").status == "error"
    assert one(store, h.session_id, "agen_fails").error == "RuntimeError: async boom"


async def test_cancelled_tool_is_interrupted(store: openprogram.Store) -> None:
    started = asyncio.Event()

    @openprogram.tool
    async def waits() -> None:
        started.set()
        await asyncio.Event().wait()

    async with openprogram.session_context(store=store) as h:
        task = asyncio.create_task(waits())
        await started.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
    assert one(store, h.session_id, "waits").status == "interrupted"


# --- _session ----------------------------------------------------------------------


def _takes_session(query: str, _session: openprogram.SessionHandle | None = None) -> str:
    """Declares ``_session`` to receive the session in use."""
    return f"{query}:{_session.session_id if _session else None}"


def test_session_is_not_in_signature_nor_annotations() -> None:
    annotations_before = dict(_takes_session.__annotations__)
    wrapped = openprogram.tool(_takes_session)
    assert "_session" not in inspect.signature(wrapped).parameters
    assert "_session" not in wrapped.__annotations__
    assert "_session" not in typing.get_type_hints(wrapped)
    assert list(inspect.signature(wrapped).parameters) == ["query"]
    # The original function's annotations dict is untouched.
    assert _takes_session.__annotations__ == annotations_before
    assert "_session" in inspect.signature(_takes_session).parameters
    assert wrapped.__annotations__ is not _takes_session.__annotations__


def test_override_wins_over_the_context(store: openprogram.Store) -> None:
    other_store = openprogram.open_store("memory://")
    with openprogram.session_context("elsewhere", store=other_store) as elsewhere:
        pass
    with openprogram.session_context("here", store=store):
        assert add(1, _session=elsewhere) == 2  # type: ignore[call-arg]
        assert add(2) == 3
    moved = one(other_store, "elsewhere", "add")
    assert moved.inputs == {"a": 1}  # _session is not an input
    assert moved.parent_id == elsewhere.root_call_id
    assert moved.session_id == "elsewhere"
    assert one(store, "here", "add").inputs == {"a": 2}


def test_nested_calls_follow_the_override(store: openprogram.Store) -> None:
    @openprogram.tool
    def inner() -> str:
        return openprogram.require_current_session().session_id

    @openprogram.tool
    def outer() -> str:
        return inner()

    with openprogram.session_context("target", store=store) as target:
        pass
    with openprogram.session_context("current", store=store):
        assert outer(_session=target) == "target"  # type: ignore[call-arg]
        assert openprogram.require_current_session().session_id == "current"
    o = one(store, "target", "outer")
    assert one(store, "target", "inner").parent_id == o.call_id
    assert "outer" not in calls_by_name(store, "current")


async def test_declared_session_is_always_overwritten(store: openprogram.Store) -> None:
    wrapped = openprogram.tool(_takes_session)

    @openprogram.tool
    async def atakes(_session: object = None) -> object:
        return _session

    async with openprogram.session_context("declared", store=store) as h:
        with openprogram.session_context("explicit", store=store) as explicit:
            pass
        # No override: the function receives the current session.
        assert wrapped("q") == "q:declared"
        # A value sent by a model is not a handle: replaced by the current session.
        assert wrapped("q", _session="forged-by-model") == "q:declared"  # type: ignore[arg-type]
        assert wrapped("q", _session={"session_id": "x"}) == "q:declared"  # type: ignore[arg-type]
        # A real handle wins.
        assert wrapped("q", _session=explicit) == "q:explicit"
        assert await atakes(_session="forged") is h
    recorded = calls_by_name(store, "declared")["_takes_session"]
    assert [c.inputs for c in recorded] == [{"query": "q"}] * 3
    assert one(store, "explicit", "_takes_session").inputs == {"query": "q"}


def test_session_sent_to_function_without_the_parameter_is_dropped(store: openprogram.Store) -> None:
    with openprogram.session_context("drop", store=store):
        assert add(1, _session="forged") == 2  # type: ignore[call-arg]
    assert one(store, "drop", "add").inputs == {"a": 1}


def test_tool_rejects_non_callables() -> None:
    with pytest.raises(TypeError):
        openprogram.tool(42)  # type: ignore[call-overload]


def test_mutable_arguments_are_snapshotted_at_call_time(store: openprogram.Store) -> None:
    @openprogram.tool
    def mutate(items: list[int]) -> list[int]:
        items.append(99)
        return items

    data = [1]
    with openprogram.session_context(store=store) as h:
        result = mutate(data)
        result.append(100)
    call = one(store, h.session_id, "mutate")
    assert call.inputs == {"items": [1]}
    assert call.output == [1, 99]


def _gen_with_session(n: int, _session: openprogram.SessionHandle | None = None) -> Generator[str, None, None]:
    for _ in range(n):
        yield _session.session_id if _session else "none"


async def _agen_with_session(n: int, _session: openprogram.SessionHandle | None = None) -> AsyncGenerator[str, None]:
    for _ in range(n):
        yield _session.session_id if _session else "none"


async def _async_with_session(n: int, _session: openprogram.SessionHandle | None = None) -> str:
    return _session.session_id if _session else "none"


class _WithSession:
    def method(self, n: int, _session: openprogram.SessionHandle | None = None) -> str:
        return _session.session_id if _session else "none"


def test_session_is_hidden_for_every_kind() -> None:
    for fn in (_gen_with_session, _agen_with_session, _async_with_session, _WithSession.method):
        wrapped = openprogram.tool(fn)
        assert "_session" not in inspect.signature(wrapped).parameters, fn
        assert "_session" not in wrapped.__annotations__, fn
        assert "_session" in fn.__annotations__, fn  # the original is untouched


async def test_session_override_for_every_kind(store: openprogram.Store) -> None:
    gen = openprogram.tool(_gen_with_session)
    agen = openprogram.tool(_agen_with_session)
    afn = openprogram.tool(_async_with_session)
    method = openprogram.tool(_WithSession.method)
    obj = _WithSession()
    with openprogram.session_context("kind-target", store=store) as target:
        pass
    async with openprogram.session_context("kind-current", store=store):
        assert list(gen(2)) == ["kind-current"] * 2
        assert list(gen(1, _session=target)) == ["kind-target"]
        assert [s async for s in agen(1, _session=target)] == ["kind-target"]
        assert [s async for s in agen(1, _session="forged")] == ["kind-current"]  # type: ignore[arg-type]
        assert await afn(1, _session=target) == "kind-target"
        assert method(obj, 1, _session=target) == "kind-target"
        assert method(obj, 1) == "kind-current"
    in_target = sorted(c.name for c in store.list_calls("kind-target") if c.kind == "tool")
    assert in_target == ["_agen_with_session", "_async_with_session", "_gen_with_session", "method"]
    assert all(c.inputs == {"n": 1} for c in store.list_calls("kind-target") if c.kind == "tool")


class AsyncCallable:
    """A callable object whose ``__call__`` is a coroutine function (as some frameworks' tools are)."""

    async def __call__(self, x: int) -> int:
        inner_result: int = add(x)
        return inner_result


async def test_async_callable_object_keeps_its_kind(store: openprogram.Store) -> None:
    wrapped = openprogram.tool(AsyncCallable())
    assert inspect.iscoroutinefunction(wrapped)
    async with openprogram.session_context(store=store) as h:
        assert await wrapped(4) == 5
    call = one(store, h.session_id, "AsyncCallable")
    assert (call.status, call.output, call.inputs) == ("ok", 5, {"x": 4})
    assert one(store, h.session_id, "add").parent_id == call.call_id


def test_declared_session_parameter_still_receives_a_value_when_unrecorded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENPROGRAM_NO_SESSION", "warn")

    @openprogram.tool
    def needs(x: int, _session: openprogram.SessionHandle | None) -> tuple[int, object]:
        return x, _session

    @openprogram.tool
    def gen_needs(_session: object) -> Generator[object, None, None]:
        yield _session

    assert needs(1) == (1, None)  # type: ignore[call-arg]
    assert needs(2, _session="forged") == (2, None)  # type: ignore[arg-type]
    assert list(gen_needs()) == [None]  # type: ignore[call-arg]


def test_every_path_returns_the_functions_own_result(store: openprogram.Store) -> None:
    result = object()

    @openprogram.tool
    def scalar_args(a: int, b: str) -> object:
        return result

    @openprogram.tool
    def rich_args(a: list[int]) -> object:
        return result

    class Box:
        @openprogram.tool
        def method(self, a: int) -> object:
            return result

    def takes_session(a: int, _session: openprogram.SessionHandle | None = None) -> object:
        return result

    declared = openprogram.tool(takes_session)
    outside = [scalar_args(1, "x"), rich_args([1]), Box().method(1), declared(1)]
    with openprogram.session_context(store=store) as h:
        inside = [
            scalar_args(1, "x"),
            scalar_args(a=1, b="x"),
            rich_args([1]),
            Box().method(1),
            declared(1),
            scalar_args(1, "x", _session=h),
        ]
    assert all(r is result for r in outside + inside)
    assert len(calls_by_name(store, h.session_id)["scalar_args"]) == 3


# Parameters named after builtins: the wrapper's own code must not depend on those names.
@openprogram.tool
def options(type: str, next: int = 1, hex: str = "h", *_: object) -> str:
    return f"{type}-{next}-{hex}"


@openprogram.tool
def plain(type: str, next: int = 1, hex: str = "h") -> str:
    return f"{type}-{next}-{hex}"


def _shouting(func: typing.Callable[..., str]) -> typing.Callable[..., str]:
    @functools.wraps(func)
    def wrapper(*args: object, **kwargs: object) -> str:
        return func(*args, **kwargs).upper()

    return wrapper


@openprogram.tool
@_shouting
def decorated(word: str, times: int = 1) -> str:
    return word * times


def test_a_call_records_what_was_passed_however_it_was_passed(store: openprogram.Store) -> None:
    # Plain functions get a wrapper with their own parameter list; the others a generic one.
    # Both must record the arguments as passed, left-out defaults not at all.
    with openprogram.session_context(store=store) as h:
        results = [
            plain("a"),
            plain("a", 2),
            plain("a", 2, "x"),
            plain("a", hex="x"),
            plain(type="a", next=3),
            plain("a", next=[4]),
            plain(["a"]),
            plain("a", _session=h),  # type: ignore[arg-type, call-arg]
            options("a"),
            options("a", hex="x"),
            decorated("ab"),
            decorated("ab", times=2),
        ]
    assert results == [
        "a-1-h",
        "a-2-h",
        "a-2-x",
        "a-1-x",
        "a-3-h",
        "a-[4]-h",
        "['a']-1-h",
        "a-1-h",
        "a-1-h",
        "a-1-x",
        "AB",
        "ABAB",
    ]
    by_name = calls_by_name(store, h.session_id)
    assert [c.inputs for c in by_name["plain"]] == [
        {"type": "a"},
        {"type": "a", "next": 2},
        {"type": "a", "next": 2, "hex": "x"},
        {"type": "a", "hex": "x"},
        {"type": "a", "next": 3},
        {"type": "a", "next": [4]},
        {"type": ["a"]},
        {"type": "a"},
    ]
    assert [c.inputs for c in by_name["options"]] == [{"type": "a"}, {"type": "a", "hex": "x"}]
    assert [c.inputs for c in by_name["decorated"]] == [{"word": "ab"}, {"word": "ab", "times": 2}]
    assert all(c.status == "ok" for calls in by_name.values() for c in calls)


def plain_unwrapped(type: str, next: int = 1, hex: str = "h") -> str:
    return type


def test_a_call_the_function_cannot_take_fails_as_it_would_unwrapped(store: openprogram.Store) -> None:
    with openprogram.session_context(store=store) as h:
        for call in (lambda f: f("a", 1, "x", 4), lambda f: f(), lambda f: f("a", nope=1)):
            with pytest.raises(TypeError) as wrapped:
                call(plain)
            with pytest.raises(TypeError) as unwrapped:
                call(plain_unwrapped)
            assert str(wrapped.value) == str(unwrapped.value).replace("plain_unwrapped", "plain")
    assert "plain" not in calls_by_name(store, h.session_id)  # never called: nothing to record


def test_a_wrapped_plain_function_shows_its_own_name_in_tracebacks(store: openprogram.Store) -> None:
    @openprogram.tool
    def fails(x: int) -> int:
        raise ValueError(x)

    with openprogram.session_context(store=store), pytest.raises(ValueError) as raised:
        fails(1)
    names = [entry.name for entry in raised.traceback]
    assert names[-2:] == ["fails", "fails"]  # the wrapper's frame, then the function's


def _blocking_tools(release: threading.Event, started: threading.Event) -> list[typing.Callable[..., typing.Any]]:
    """A plain function (the compiled wrapper with its own parameters) and one with a keyword-only
    parameter (the compiled ``(*args, **kwargs)`` form)."""

    def waits(i: int) -> int:
        started.set()
        release.wait(30)
        return i

    def waits_by_keyword(i: int, *, unit: str = "s") -> int:
        started.set()
        release.wait(30)
        return i

    return [openprogram.tool(waits), openprogram.tool(waits_by_keyword)]


@pytest.mark.parametrize("which", [0, 1], ids=["own-parameters", "generic"])
def test_a_sync_call_is_written_as_running_while_it_runs(store: openprogram.Store, which: int) -> None:
    release, started = threading.Event(), threading.Event()
    blocking = _blocking_tools(release, started)[which]
    with openprogram.session_context(store=store) as h:
        outer = openprogram.call_scope("agent", "outer").enter()
        worker = threading.Thread(target=openprogram.propagate(blocking), args=(7,))
        worker.start()
        try:
            assert started.wait(30)
            assert openprogram.flush()
            [running] = [c for c in store.list_calls(h.session_id) if c.kind == "tool"]
            assert (running.status, running.inputs, running.parent_id) == ("running", {"i": 7}, outer.call_id)
            assert running.started_at is not None and running.ended_at is None
        finally:
            release.set()
            worker.join(30)
        outer.exit()
    [done] = [c for c in store.list_calls(h.session_id) if c.kind == "tool"]
    assert (done.call_id, done.status, done.output, done.started_at) == (running.call_id, "ok", 7, running.started_at)
    assert not [rec for rec in inflight.values() if rec[SESSION] is h], "left in the running calls"


def test_the_current_call_id_inside_a_compiled_tool_is_its_recorded_id(store: openprogram.Store) -> None:
    seen: dict[str, typing.Any] = {}

    @openprogram.tool
    def looks(x: int) -> int:
        seen["id"] = openprogram.current_call_id()
        seen["env"] = openprogram.export_context()["OPENPROGRAM_PARENT_CALL"]
        return x

    with openprogram.session_context(store=store) as h:
        looks(1)
    [call] = [c for c in store.list_calls(h.session_id) if c.kind == "tool"]
    assert seen == {"id": call.call_id, "env": call.call_id}
    assert isinstance(call.call_id, str) and call.call_id.startswith(_runtime.ids.prefix)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork()")
def test_a_forked_child_records_under_the_call_it_was_forked_in(sqlite_url: str) -> None:
    @openprogram.tool
    def inner(i: int) -> int:
        return i

    @openprogram.tool
    def forks() -> int:
        pid = os.fork()
        if pid == 0:  # the child: its context holds the parent's running call
            code = 1
            try:
                inner(7)
                code = 0 if openprogram.flush() else 2
            finally:
                os._exit(code)
        _, status = os.waitpid(pid, 0)
        return os.waitstatus_to_exitcode(status)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # 3.12+: fork() with threads running
        with openprogram.session_context(store=sqlite_url) as h:
            assert forks() == 0
    by_name = calls_by_name(openprogram.open_store(sqlite_url), h.session_id)
    [parent], [child] = by_name["forks"], by_name["inner"]
    assert child.parent_id == parent.call_id
    assert child.call_id.rsplit("-", 1)[0] != parent.call_id.rsplit("-", 1)[0]  # the child mints under its own prefix

"""The adapter kit's generic properties, tested once against a small real package.

``toyframework`` is written to disk (with its own ``dist-info``) and imported for
real, so the post-import hooks, version check and patching run as they do for a
framework: twice wraps once, errors are logged once, uninstrument restores, off
means pass-through, each shape and the original's metadata are kept.
"""

from __future__ import annotations

import abc
import asyncio
import functools
import importlib
import inspect
import logging
import sys
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import openprogram
import pytest
from openprogram._kit import ORIGINAL, CallsByKey, Integration, LaterCall, Target, recorded, run_session

from .conftest import calls_by_name, one

TOY = '''
"""A toy framework: one class with a method of each shape."""

class Engine:
    def run(self, x):
        "Run it."
        return x * 2

    async def arun(self, x):
        return x * 3

    def stream(self, n):
        for i in range(n):
            yield i

    async def astream(self, n):
        for i in range(n):
            yield i

    def fail(self):
        raise KeyError("the user's own error")

    @staticmethod
    def helper(x):
        return x + 1

Engine.run.marker = "kept"


def function(x):
    return -x


class Client:
    """A base whose subclasses each send their own way."""

    def __init_subclass__(cls, tag=None, **kwargs):
        super().__init_subclass__(**kwargs)
        cls.tag = tag  # the framework's own class hook

    def send(self, x):
        raise NotImplementedError

    def count(self, x):
        return x


class Loud(Client):
    def send(self, x):
        return f"loud {x}"


class Louder(Loud):
    def send(self, x):
        return super().send(x) + "!"


class Quiet(Loud):
    pass


class Bare(Client):
    pass


class EchoMixin:
    def send(self, x):
        return f"echo {x}"


class Echo(EchoMixin, Client):
    pass
'''


def _describe(self: Any, x: Any) -> tuple[str, Any]:
    return "engine", {"x": x}


def _broken(*args: Any) -> Any:
    raise ZeroDivisionError("a bug of ours")


class ToyIntegration(Integration):
    identifier = "toy"
    distribution = "toyframework"
    extra = "toy"
    trigger = "toyframework"

    def targets(self) -> list[Target]:
        return [
            Target("toyframework:Engine", "run", recorded("call", _describe)),
            Target("toyframework:Engine", "arun", recorded("call", _describe)),
            Target("toyframework:Engine", "stream", recorded("call", lambda self, n: ("stream", {"n": n}))),
            Target("toyframework:Engine", "astream", recorded("call", lambda self, n: ("astream", {"n": n}))),
            Target("toyframework:Engine", "fail", recorded("call", lambda self: ("fail", None))),
            Target("toyframework:Engine", "helper", recorded("call", lambda x: ("helper", None))),
            Target("toyframework", "function", recorded("call", _broken)),
            Target("toyframework:Engine", "absent_in_this_version", recorded("call", _broken)),
        ]


sent: list[str] = []  # the definitions of ``send`` / ``count`` that ran through a wrapper, innermost last


def _tracing(original: Callable[..., Any], integration: Integration) -> Callable[..., Any]:
    @functools.wraps(original)
    def replacement(self: Any, *args: Any, **kwargs: Any) -> Any:
        if integration.active:
            sent.append(original.__qualname__)
        return original(self, *args, **kwargs)

    return replacement


class ClientsIntegration(ToyIntegration):
    def targets(self) -> list[Target]:
        return [
            Target("toyframework:Client", "send", _tracing, overrides=True, skip_owner=True),
            Target("toyframework:Client", "count", _tracing, overrides=True),
        ]


@pytest.fixture
def toy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """``toyframework`` on ``sys.path`` (installed as a distribution), not imported yet."""
    root = tmp_path / "site"
    (root / "toyframework").mkdir(parents=True)
    (root / "toyframework" / "__init__.py").write_text(textwrap.dedent(TOY))
    (root / "toyframework-1.0.dist-info").mkdir()
    (root / "toyframework-1.0.dist-info" / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: toyframework\nVersion: 1.0\n"
    )
    monkeypatch.syspath_prepend(str(root))
    importlib.invalidate_caches()
    yield root
    sys.modules.pop("toyframework", None)


@pytest.fixture
def integration(toy: Path) -> Iterator[ToyIntegration]:
    adapter = ToyIntegration()
    yield adapter
    adapter.disable()


@pytest.fixture
def clients(toy: Path) -> Iterator[ClientsIntegration]:
    adapter = ClientsIntegration()
    sent.clear()
    yield adapter
    adapter.disable()


def test_a_framework_imported_later_is_patched_when_imported(integration: ToyIntegration, store: Any) -> None:
    integration.arm()
    assert "toyframework" not in sys.modules  # arming imports nothing
    import toyframework

    with openprogram.session_context(store=store) as h:
        assert toyframework.Engine().run(2) == 4
    call = one(store, h.session_id, "engine")
    assert (call.kind, call.inputs, call.output, call.status) == ("call", {"x": 2}, 4, "ok")


def test_objects_built_before_arming_are_covered(integration: ToyIntegration, store: Any) -> None:
    import toyframework

    engine = toyframework.Engine()
    integration.arm()
    with openprogram.session_context(store=store) as h:
        engine.run(1)
    assert one(store, h.session_id, "engine").output == 2


def test_twice_wraps_once_and_disable_restores(integration: ToyIntegration) -> None:
    import toyframework

    original = toyframework.Engine.__dict__["run"]
    integration.arm()
    wrapped = toyframework.Engine.__dict__["run"]
    assert getattr(wrapped, ORIGINAL) is original
    second = ToyIntegration()
    second.arm()
    assert toyframework.Engine.__dict__["run"] is wrapped  # ours already: not wrapped again
    second.disable()
    integration.disable()
    assert toyframework.Engine.__dict__["run"] is original
    assert isinstance(toyframework.Engine.__dict__["helper"], staticmethod)
    assert not hasattr(toyframework.Engine, "absent_in_this_version")


def test_disable_before_the_import_cancels_the_hook(integration: ToyIntegration) -> None:
    integration.arm()
    integration.disable()
    import toyframework

    assert not hasattr(toyframework.Engine.__dict__["run"], ORIGINAL)


def test_off_means_pass_through(integration: ToyIntegration, store: Any) -> None:
    import toyframework

    integration.arm()
    integration.active = False
    with openprogram.session_context(store=store) as h:
        assert toyframework.Engine().run(3) == 6
    assert "engine" not in calls_by_name(store, h.session_id)


async def test_every_shape_is_kept_and_recorded(integration: ToyIntegration, store: Any) -> None:
    import toyframework

    integration.arm()
    engine = toyframework.Engine
    assert inspect.iscoroutinefunction(engine.arun)
    assert inspect.isgeneratorfunction(engine.stream)
    assert inspect.isasyncgenfunction(engine.astream)
    assert engine.run.__doc__ == "Run it." and engine.run.marker == "kept"  # the original's metadata
    async with openprogram.session_context(store=store) as h:
        assert await engine().arun(2) == 6
        assert list(engine().stream(3)) == [0, 1, 2]
        assert [i async for i in engine().astream(2)] == [0, 1]
        assert engine.helper(1) == 2
    calls = calls_by_name(store, h.session_id)
    assert calls["engine"][0].output == 6
    assert calls["stream"][0].output == {"yielded": [0, 1, 2], "count": 3}
    assert calls["astream"][0].output == {"yielded": [0, 1], "count": 2}
    assert calls["helper"][0].status == "ok"


def test_the_users_exception_passes_unchanged(integration: ToyIntegration, store: Any) -> None:
    import toyframework

    integration.arm()
    with openprogram.session_context(store=store) as h, pytest.raises(KeyError, match="own error"):
        toyframework.Engine().fail()
    call = one(store, h.session_id, "fail")
    assert call.status == "error" and "KeyError" in (call.error or "")


def test_an_error_of_ours_is_logged_once_and_the_call_runs(
    integration: ToyIntegration, caplog: pytest.LogCaptureFixture
) -> None:
    import toyframework

    integration.arm()
    caplog.set_level(logging.DEBUG, logger="openprogram")
    assert [toyframework.function(i) for i in range(3)] == [0, -1, -2]
    errors = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert len(errors) == 1 and "describing the call" in errors[0].getMessage()


def test_a_too_old_or_missing_framework_is_refused_with_the_install_hint() -> None:
    class Absent(ToyIntegration):
        distribution = "no-such-framework-anywhere"

    with pytest.raises(openprogram.DidNotEnable, match=r"pip install -e '\.\[toy\]'"):
        Absent().arm()


def test_a_later_call_is_current_only_inside_its_block(store: Any) -> None:
    with openprogram.session_context(store=store) as h:
        call = LaterCall.begin("call", "later", "toy")
        assert call is not None and openprogram.current_call_id() != call.call_id
        with call.current():
            assert openprogram.current_call_id() == call.call_id
        assert openprogram.current_call_id() != call.call_id
        call.end(output="done")
        call.end(output="twice")  # ends once
    assert one(store, h.session_id, "later").output == "done"


def test_calls_by_key_match_by_identity() -> None:
    calls, key = CallsByKey(), {"a": 1}
    marker: Any = object()
    calls.begin(key, marker)
    assert calls.take({"a": 1}) is None  # an equal dict is not the same call
    assert calls.take(key) is marker and len(calls) == 0


def test_run_session_binds_inside_a_session_and_opens_one_outside(store: Any) -> None:
    with openprogram.session_context(store=store):
        assert run_session("toy", "run 'x'", key="thread-1") is None
    entry = run_session("toy", "run 'y'", key="thread-2")
    assert entry is not None
    with entry as handle:
        assert openprogram.get_current_session() is handle
    again = run_session("toy", "run 'y'", key="thread-2")
    assert again is not None
    with again as second:
        assert second.session_id == handle.session_id


# --- overrides rows: a method patched on a base and on every subclass defining its own ---------------


def _own(cls: type, attribute: str) -> Any:
    return cls.__dict__.get(attribute)


def test_overrides_wrap_every_existing_subclass_defining_its_own_and_not_the_skipped_owner(
    clients: ClientsIntegration,
) -> None:
    import toyframework as toy

    before = {cls: _own(cls, "send") for cls in (toy.Client, toy.Loud, toy.Louder)}
    clients.arm()
    assert _own(toy.Client, "send") is before[toy.Client]  # skip_owner: its own raises
    assert getattr(_own(toy.Loud, "send"), ORIGINAL) is before[toy.Loud]
    assert getattr(_own(toy.Louder, "send"), ORIGINAL) is before[toy.Louder]
    assert "send" not in toy.Quiet.__dict__  # inherits Loud's, wrapped there
    assert "send" not in toy.Bare.__dict__  # inherits the owner's, left alone
    assert hasattr(_own(toy.Client, "count"), ORIGINAL) and "count" not in toy.Loud.__dict__
    assert toy.Quiet().send(1) == "loud 1" and toy.Quiet().count(2) == 2
    assert sent == ["Loud.send", "Client.count"]


def test_a_subclass_defined_later_is_wrapped_after_the_owners_own_class_hook(clients: ClientsIntegration) -> None:
    import toyframework as toy

    clients.arm()

    class Later(toy.Louder, tag="later"):
        def send(self, x: Any) -> Any:
            return "later " + super().send(x)

    assert Later.tag == "later"  # the owner's own __init_subclass__ ran, with its keyword
    assert hasattr(_own(Later, "send"), ORIGINAL)
    assert Later().send(1) == "later loud 1!"
    assert sent == [
        "test_a_subclass_defined_later_is_wrapped_after_the_owners_own_class_hook.<locals>.Later.send",
        "Louder.send",
        "Loud.send",
    ]  # each definition of a super() chain once


def test_a_subclass_with_its_own_class_hook_calling_super_is_still_reached(clients: ClientsIntegration) -> None:
    import toyframework as toy

    clients.arm()

    class Middle(toy.Client):
        def __init_subclass__(cls, **kwargs: Any) -> None:
            super().__init_subclass__(**kwargs)

    class Leaf(Middle):
        def send(self, x: Any) -> Any:
            return x

    assert hasattr(_own(Leaf, "send"), ORIGINAL)


def test_a_method_from_a_mixin_is_wrapped_on_the_class_and_the_mixin_is_left_alone(
    clients: ClientsIntegration,
) -> None:
    import toyframework as toy

    mixin_send = _own(toy.EchoMixin, "send")
    clients.arm()

    class LaterEcho(toy.EchoMixin, toy.Client):
        pass

    for cls in (toy.Echo, LaterEcho):
        assert getattr(_own(cls, "send"), ORIGINAL) is mixin_send, cls
    assert _own(toy.EchoMixin, "send") is mixin_send  # the mixin may serve other hierarchies
    assert toy.EchoMixin().send(1) == "echo 1" and sent == []
    assert toy.Echo().send(2) == "echo 2" and sent == ["EchoMixin.send"]
    clients.disable()
    assert "send" not in toy.Echo.__dict__ and "send" not in LaterEcho.__dict__  # the mixin's again


def test_an_abstract_definition_is_left_alone_and_its_concrete_override_wrapped(clients: ClientsIntegration) -> None:
    import toyframework as toy

    clients.arm()

    class Abstract(toy.Client, abc.ABC):
        @abc.abstractmethod
        def send(self, x: Any) -> Any: ...

    class Concrete(Abstract):
        def send(self, x: Any) -> Any:
            return x

    assert not hasattr(_own(Abstract, "send"), ORIGINAL) and Abstract.__abstractmethods__ == {"send"}
    assert hasattr(_own(Concrete, "send"), ORIGINAL)


def test_disable_restores_every_class_including_those_defined_later_and_patches_new_ones_no_more(
    clients: ClientsIntegration,
) -> None:
    import toyframework as toy

    own_hook = toy.Client.__dict__["__init_subclass__"]
    existing = {cls: (_own(cls, "send"), _own(cls, "count")) for cls in (toy.Client, toy.Loud, toy.Louder)}
    clients.arm()

    class Later(toy.Loud):
        def send(self, x: Any) -> Any:
            return x

        def count(self, x: Any) -> Any:
            return -x

    later_send, later_count = _own(Later, "send"), _own(Later, "count")
    assert hasattr(later_send, ORIGINAL) and hasattr(later_count, ORIGINAL)
    clients.disable()
    assert {cls: (_own(cls, "send"), _own(cls, "count")) for cls in existing} == existing
    assert (_own(Later, "send"), _own(Later, "count")) == (
        getattr(later_send, ORIGINAL),
        getattr(later_count, ORIGINAL),
    )
    assert toy.Client.__dict__["__init_subclass__"] is own_hook

    class AfterwardsLoud(toy.Loud):
        def send(self, x: Any) -> Any:
            return x

    assert not hasattr(_own(AfterwardsLoud, "send"), ORIGINAL) and AfterwardsLoud.tag is None
    clients.arm()  # again: a class defined while it was off is found
    assert hasattr(_own(AfterwardsLoud, "send"), ORIGINAL)


def test_a_class_hook_the_owner_inherits_is_removed_on_disable(toy: Path) -> None:
    import toyframework as toy_module

    class Plain:
        def send(self, x: Any) -> Any:
            return x

    toy_module.Plain = Plain  # type: ignore[attr-defined]

    class PlainIntegration(ToyIntegration):
        def targets(self) -> list[Target]:
            return [Target("toyframework:Plain", "send", _tracing, overrides=True)]

    adapter = PlainIntegration()
    adapter.arm()
    try:
        assert "__init_subclass__" in Plain.__dict__

        class Sub(Plain):
            def send(self, x: Any) -> Any:
                return x

        assert hasattr(_own(Sub, "send"), ORIGINAL)
    finally:
        adapter.disable()
    assert "__init_subclass__" not in Plain.__dict__ and not hasattr(_own(Sub, "send"), ORIGINAL)


def test_overrides_applied_twice_wrap_once(clients: ClientsIntegration) -> None:
    import toyframework as toy

    clients.arm()
    wrapped, hook = _own(toy.Loud, "send"), toy.Client.__dict__["__init_subclass__"]
    second = ClientsIntegration()
    second.arm()
    try:
        assert _own(toy.Loud, "send") is wrapped and toy.Client.__dict__["__init_subclass__"] is hook

        class Later(toy.Client):
            def send(self, x: Any) -> Any:
                return x

        assert Later().send(1) == 1 and len(sent) == 1  # one wrapper, not two
        assert not hasattr(getattr(_own(Later, "send"), ORIGINAL), ORIGINAL)
    finally:
        second.disable()


def test_inactive_overrides_pass_straight_through(clients: ClientsIntegration) -> None:
    import toyframework as toy

    clients.arm()
    clients.active = False

    class Later(toy.Loud):
        def send(self, x: Any) -> Any:
            return super().send(x) + "?"

    assert Later().send(1) == "loud 1?" and toy.Louder().send(2) == "loud 2!"
    assert sent == []
    clients.active = True
    assert Later().send(1) == "loud 1?" and len(sent) == 2  # patched while off, so recorded once on again


def test_overrides_rows_record_calls_of_existing_and_later_subclasses(toy: Path, store: Any) -> None:
    import toyframework as toy_module

    class RecordingClients(ToyIntegration):
        def targets(self) -> list[Target]:
            send = recorded("call", lambda self, x: (type(self).__name__, {"x": x}))
            return [Target("toyframework:Client", "send", send, overrides=True, skip_owner=True)]

    adapter = RecordingClients()
    adapter.arm()
    try:

        class Later(toy_module.Client):
            def send(self, x: Any) -> Any:
                return x * 10

        with openprogram.session_context(store=store) as h:
            assert toy_module.Loud().send(1) == "loud 1" and Later().send(2) == 20
    finally:
        adapter.disable()
    assert one(store, h.session_id, "Loud").inputs == {"x": 1}
    assert one(store, h.session_id, "Later").output == 20


def test_a_later_calls_inputs_set_after_it_began_are_recorded_while_running_and_at_its_end(store: Any) -> None:
    with openprogram.session_context(store=store) as h:
        call = LaterCall.begin("call", "later", "toy")
        assert call is not None
        call.set_inputs({"rendered": "hi"})
        openprogram.flush()
        running = one(store, h.session_id, "later")
        call.end(output="done")
        call.set_inputs({"too": "late"})  # ended: nothing changes
    ended = one(store, h.session_id, "later")
    assert (running.status, running.inputs) == ("running", {"rendered": "hi"})
    assert (ended.status, ended.inputs, ended.output) == ("ok", {"rendered": "hi"}, "done")


# --- attribute(): getattr without pydantic's exception --------------------------------


class _Plain:
    cls_level = "on the class"

    def __init__(self) -> None:
        self.field = "in the instance"

    @property
    def computed(self) -> str:
        return "a property"

    @property
    def failing(self) -> str:
        raise AttributeError("not today")


class _Slotted:
    __slots__ = ("empty", "filled")

    def __init__(self) -> None:
        self.filled = "a slot"


class _Dynamic:
    def __getattr__(self, name: str) -> str:
        if name.startswith("dyn_"):
            return f"answered {name}"
        raise AttributeError(name)


@pytest.mark.parametrize("obj", [_Plain(), _Slotted(), _Dynamic(), object(), None, 3, {"field": 1}])
@pytest.mark.parametrize(
    "name", ["field", "cls_level", "computed", "failing", "filled", "empty", "dyn_x", "absent", "_private", "__class__"]
)
def test_attribute_answers_what_getattr_answers(obj: Any, name: str) -> None:
    from openprogram._kit import attribute

    for _ in range(2):  # the first read learns the class, the second uses what it learned
        assert attribute(obj, name) == getattr(obj, name, None)
        assert attribute(obj, name, "default") == getattr(obj, name, "default")


class _QuietCall:
    """A stepped call that keeps nothing: what is left alive after a close is the driver's doing."""

    def __enter__(self) -> _QuietCall:
        return self

    def __exit__(self, *exc_info: object) -> None:
        return None

    def add(self, item: object) -> None:
        pass

    def finish(self, exc: BaseException | None) -> None:
        pass


def test_closing_a_stream_under_a_call_leaves_no_cycle_for_the_collector() -> None:
    """A GeneratorExit kept in the driver's frame held that frame in a cycle: the generator it drove (LangGraph's
    ``Pregel.stream``) was then finalized by the garbage collector in whatever thread ran it, which deadlocked
    LangGraph's own suite inside a thread's start."""
    import gc
    import weakref

    from openprogram._kit import async_steps_under_call, steps_under_call

    def numbers() -> Any:
        yield 1
        yield 2

    async def anumbers() -> Any:
        yield 1
        yield 2

    def closed_sync() -> weakref.ref[Any]:
        inner = numbers()
        ref = weakref.ref(inner)
        driven = steps_under_call(inner, _QuietCall())
        next(driven)
        driven.close()
        return ref

    async def closed_async() -> weakref.ref[Any]:
        inner = anumbers()
        ref = weakref.ref(inner)
        driven = async_steps_under_call(inner, _QuietCall())
        await driven.__anext__()
        await driven.aclose()
        return ref

    gc.collect()
    gc.disable()
    try:
        refs = [closed_sync(), asyncio.run(closed_async())]
        assert [ref() for ref in refs] == [None, None]  # freed at once, by reference counting
    finally:
        gc.enable()

"""The adapter kit's generic properties, tested once against a small real package.

``toyframework`` is written to disk (with its own ``dist-info``) and imported for
real, so the post-import hooks, version check and patching run as they do for a
framework: twice wraps once, errors are logged once, uninstrument restores, off
means pass-through, each shape and the original's metadata are kept.
"""

from __future__ import annotations

import importlib
import inspect
import logging
import sys
import textwrap
from collections.abc import Iterator
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

    with pytest.raises(openprogram.DidNotEnable, match=r"pip install 'openprogram\[toy\]'"):
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

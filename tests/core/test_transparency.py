"""openprogram leaves the program's own machinery alone.

Entering a session or flushing from a coroutine never starts the event loop's
default executor (its threads and its queue are the program's: a CrewAI Flow
schedules differently once it exists), and importing and using openprogram adds
no signal handler, warnings filter or logging handler, nor changes a level.
"""

from __future__ import annotations

import asyncio
import threading
import time

import openprogram
import pytest
from openprogram import _recording
from openprogram._runtime import new_session_id

from .conftest import run_python


@pytest.mark.parametrize("existing", [False, True], ids=["new id", "existing id"])
def test_entering_a_session_leaves_the_default_executor_alone(
    store: openprogram.Store, monkeypatch: pytest.MonkeyPatch, existing: bool
) -> None:
    session_id = new_session_id()
    if existing:
        now = time.time()
        store.write([(session_id, "main", now, now)], [])
    looked_up_on: list[str] = []
    session_exists = store.session_exists

    def noting_the_thread(sid: str) -> bool:
        looked_up_on.append(threading.current_thread().name)
        return session_exists(sid)

    monkeypatch.setattr(store, "session_exists", noting_the_thread)

    async def main() -> tuple[bool, object]:
        async with openprogram.session_context(session_id, store=store) as h:
            created = h.created
        return created, asyncio.get_running_loop()._default_executor  # type: ignore[attr-defined]

    created, executor = asyncio.run(main())
    assert created is not existing
    assert executor is None
    assert len(looked_up_on) == 1 and looked_up_on[0].startswith("openprogram-")


@pytest.mark.parametrize("writer_running", [True, False], ids=["writer running", "writer not started"])
def test_flush_async_leaves_the_default_executor_alone(monkeypatch: pytest.MonkeyPatch, writer_running: bool) -> None:
    if writer_running:
        _recording.ensure_started()
    else:
        monkeypatch.setattr(
            _recording.writer, "_thread", None
        )  # as before any session: the flush runs on our own thread

    async def main() -> tuple[bool, object]:
        ok = await openprogram.flush_async()
        return ok, asyncio.get_running_loop()._default_executor  # type: ignore[attr-defined]

    ok, executor = asyncio.run(main())
    assert ok is True
    assert executor is None


def test_openprogram_adds_no_signal_handler_warnings_filter_or_logging_setup() -> None:
    done = run_python(
        """
        import asyncio, logging, signal, warnings

        def machinery():
            root, ours = logging.getLogger(), logging.getLogger("openprogram")
            return (
                signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM), list(warnings.filters),
                list(root.handlers), root.level, list(ours.handlers), ours.level, ours.propagate, ours.disabled,
            )

        before = machinery()
        import openprogram

        @openprogram.tool
        def look(x):
            return x

        @openprogram.tool
        async def fetch(x):
            return x

        with openprogram.session_context(store="memory://"):
            look(1)

        async def main():
            async with openprogram.session_context("transparent-1"):
                await fetch(2)
            await openprogram.flush_async()

        asyncio.run(main())
        look(3)  # no session open: the implicit one
        openprogram.flush()
        after = machinery()
        assert after == before, (before, after)
        print("untouched")
        """
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "untouched"

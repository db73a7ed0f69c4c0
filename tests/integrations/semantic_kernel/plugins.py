"""Native plugins used by the tests (no `from __future__ import annotations`: SK reads real annotations)."""

import asyncio
import gc
import logging
from collections.abc import AsyncGenerator, Awaitable, Callable
from typing import Any

import openprogram
import pytest
from openprogram import current_call_id, get_current_session
from openprogram.stores import CallRecord, Store
from semantic_kernel.functions import kernel_function


class Boom(Exception):
    """The user's own exception."""


class Weather:
    """Records, for each call, which session and call were current inside the function body."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, Any, Any]] = []
        self.raised: list[BaseException] = []

    def __deepcopy__(self, memo: dict[int, Any]) -> "Weather":
        # Some SK releases deep-copy plugins when cloning a kernel: keep one recorder.
        return self

    def _note(self, what: str) -> None:
        handle = get_current_session()
        self.seen.append((what, handle.session_id if handle else None, current_call_id()))

    @kernel_function(description="forecast for a city")
    def forecast(self, city: str) -> str:
        self._note(f"forecast {city}")
        return f"sunny in {city}"

    @kernel_function(description="temperature for a city")
    async def temperature(self, city: str) -> int:
        self._note(f"temperature {city}")
        return 21

    @kernel_function(description="fails")
    def broken(self, city: str) -> str:
        exc = Boom(f"no weather for {city}")
        self.raised.append(exc)
        raise exc

    @kernel_function(description="streams words")
    async def words(self, count: int) -> AsyncGenerator[str, None]:
        for i in range(count):
            self._note(f"words {i}")
            yield f"w{i}"


@openprogram.tool
@kernel_function(description="tool under kernel_function")
def lookup_outer(topic: str, _session: Any = None) -> str:
    """@openprogram.tool applied over @kernel_function."""
    return f"{topic}:{_session.session_id if _session else None}"


@kernel_function(description="kernel_function over tool")
@openprogram.tool
def lookup_inner(topic: str, _session: Any = None) -> str:
    """@kernel_function applied over @openprogram.tool."""
    return f"{topic}:{_session.session_id if _session else None}"


@kernel_function(description="uses the kernel and arguments by name")
@openprogram.tool
async def with_kernel(topic: str, kernel: Any, arguments: Any, _session: Any = None) -> str:
    """SK passes `kernel` and `arguments` by name."""
    return f"{topic}:{type(kernel).__name__}:{sorted(arguments)}"


def named(records: list[CallRecord], name: str) -> list[CallRecord]:
    """Every record named ``name`` (several calls of one function)."""
    return [r for r in records if r.name == name]


async def otel_errors(caplog: pytest.LogCaptureFixture, run: Callable[[], Awaitable[None]]) -> list[str]:
    """The errors OpenTelemetry logs while ``run`` runs and the async generators it left behind are finalised.

    A generator left open is finalised by the event loop's asyncgen hook (``aclose()`` in a task of its own),
    so this collects garbage and then lets the loop run a few turns.
    """
    caplog.clear()
    with caplog.at_level(logging.ERROR, logger="opentelemetry"):
        await run()
        for _ in range(3):
            gc.collect()
            for _ in range(5):
                await asyncio.sleep(0)
    return [r.getMessage() for r in caplog.records if r.name.startswith("opentelemetry") and r.levelno >= logging.ERROR]


async def otel_errors_alone_and_instrumented(
    caplog: pytest.LogCaptureFixture, store: Store, run: Callable[[], Awaitable[None]]
) -> tuple[list[str], list[str], str]:
    """``run``'s OpenTelemetry errors with SK alone, then instrumented inside a session; and that session's id."""
    sk_alone = await otel_errors(caplog, run)
    openprogram.instrument("semantic_kernel")
    try:
        async with openprogram.session_context(store=store) as h:
            with_openprogram = await otel_errors(caplog, run)
    finally:
        openprogram.uninstrument("semantic_kernel")
    return sk_alone, with_openprogram, h.session_id

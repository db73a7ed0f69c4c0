"""``openprogram demo``: offline agents on every installed framework, recorded in one session."""

from __future__ import annotations

import asyncio
import importlib
import logging
import time
from typing import TextIO

from ._instrument import INTEGRATIONS, instrument
from ._propagation import ContextThreadPoolExecutor
from ._session import session_context
from ._tool import tool
from ._writer import flush
from .stores import Store

__all__ = ["run_demo"]

logger = logging.getLogger("openprogram")

#: framework name -> module with ``run_demo(emit)`` (the adapter's module + ``_demo``); run inside the demo's session.
DEMOS = {name: f"{INTEGRATIONS[name].partition(':')[0]}_demo" for name in INTEGRATIONS}


@tool
def lookup(topic: str) -> str:
    """Look a topic up in a tiny offline encyclopedia."""
    facts = {"sessions": "sessions are durable records of an agent's calls",
             "context": "context variables follow threads and tasks when copied",
             "durable": "durable means on disk before flush() returns",
             "variables": "variables in a ContextVar are per task"}  # fmt: skip
    return facts.get(topic, f"nothing known about {topic}")


@tool
async def fetch(topic: str) -> str:
    """Pretend to fetch a page about ``topic`` (async)."""
    await asyncio.sleep(0.001)
    return lookup(topic)


@tool
def summarize(notes: list[str]) -> str:
    """Summarise notes, double-checking each one in a worker thread."""
    with ContextThreadPoolExecutor(max_workers=2) as pool:
        checked = list(pool.map(lambda note: lookup(note.split()[-1]) if " " in note else note, notes))
    return " / ".join(checked)


@tool
async def research(question: str) -> str:
    """The plain-Python agent: concurrent async fetches, then a threaded summary."""
    pages = await asyncio.gather(*(fetch(t) for t in ("sessions", "context")))
    return await asyncio.to_thread(summarize, pages)


def _prepare_demos() -> None:
    """Call each demo module's optional ``prepare()`` before ``instrument()`` imports its framework.

    A framework may read its environment at import time (CrewAI: telemetry and
    tracing switches); a demo can only keep it offline if it sets it first.
    """
    for module_name in DEMOS.values():
        try:
            module = importlib.import_module(module_name)
            prepare = getattr(module, "prepare", None)
            if callable(prepare):
                prepare()
        except Exception:
            logger.debug("openprogram: demo %s not prepared", module_name, exc_info=True)


def run_demo(store: Store, session_id: str | None, out: TextIO) -> int:
    """Run every available demo in one session; print its id and how to continue it."""

    def emit(line: str) -> None:
        out.write(line + "\n")

    _prepare_demos()
    enabled = instrument()
    started = time.perf_counter()
    with session_context(session_id, store=store, runtime="cli-demo") as handle:
        emit(f"{'continuing' if not handle.created else 'new'} session {handle.session_id}, turn {handle.turn_id}")
        answer = asyncio.run(research("what is a session?"))
        emit(f"plain python: {answer}")
        for name, module_name in DEMOS.items():
            if name not in enabled:
                emit(f"{name}: skipped (not installed)")
                continue
            module = importlib.import_module(module_name)
            module.run_demo(emit)
    flush()
    emit(f"recorded in {store.url} ({time.perf_counter() - started:.2f}s)")
    emit(f"see it:      openprogram show {handle.session_id}")
    emit(f"continue it: openprogram demo --session {handle.session_id}")
    return 0

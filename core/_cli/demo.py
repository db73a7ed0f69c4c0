"""``openprogram demo``: offline agents on every installed framework, recorded in one session."""

from __future__ import annotations

import argparse
import asyncio
import importlib
import logging
import shlex
import time
from collections.abc import Sequence
from typing import TextIO

from .._calls import tool
from .._instrumentation import instrument
from .._recording import flush
from .._runtime import ContextThreadPoolExecutor
from .._sessions import session_context
from ..stores import Store, describe_store, is_default_store, safe_url

__all__ = ["add_demo_arguments", "follow_up_lines", "run_demo"]

logger = logging.getLogger("openprogram")


@tool
def lookup(topic: str) -> str:
    """Look a topic up in a tiny offline encyclopedia."""
    facts = {
        "sessions": "sessions are durable records of an agent's calls",
        "context": "context variables follow threads and tasks when copied",
    }
    return facts.get(topic, f"nothing known about {topic}")


@tool
async def fetch(topic: str) -> str:
    """Pretend to fetch a page about ``topic`` (async)."""
    await asyncio.sleep(0.001)
    return lookup(topic)


@tool
def summarize(notes: dict[str, str]) -> str:
    """Summarise notes by topic, double-checking each topic in a worker thread."""

    def checked(topic: str) -> str:
        note = notes[topic]
        return note if lookup(topic) == note else f"{note} (unconfirmed)"

    with ContextThreadPoolExecutor(max_workers=2) as pool:
        return "; ".join(pool.map(checked, notes))


@tool
async def research(question: str) -> str:
    """The plain-Python agent: concurrent async fetches, then a threaded summary."""
    topics = ("sessions", "context")
    pages = await asyncio.gather(*(fetch(t) for t in topics))
    return await asyncio.to_thread(summarize, dict(zip(topics, pages, strict=True)))


def _store_words(store: Store) -> tuple[str, bool]:
    """``--store URL `` reaching ``store`` from a shell (empty for the default store); whether a password is masked."""
    if is_default_store(store):
        return "", False
    url: str = getattr(store, "connect_url", store.url)  # a PostgreSQL store's URL as given
    if store.url.startswith("sqlite:///"):
        path = store.url[len("sqlite:///") :]
        url = store.url if "://" in path else path  # a bare path reads better; one holding "://" would read as a URL
    shown = safe_url(url)
    return f"--store {shlex.quote(shown)} ", shown != url


def follow_up_lines(store: Store, session_id: str) -> list[str]:
    """The demo's last lines: the commands that show and continue ``session_id``, as a person can paste them."""
    if store.url.startswith("memory:"):
        return ["see it:      not after this process: a memory:// store is gone when it exits"]
    words, masked = _store_words(store)
    lines = [
        f"see it:      openprogram {words}show {session_id}",
        f"continue it: openprogram {words}demo --session {session_id}",
    ]
    if masked:
        lines.append("note:        the password is shown as ***: put it back, or set OPENPROGRAM_STORE to the URL")
    return lines


#: the name that runs the plain-Python agent alone (the frameworks are named as ``instrument()`` names them)
PLAIN = "plain"


def demo_names() -> dict[str, str]:
    """Each name ``openprogram demo`` accepts -> the framework demo it runs (or :data:`PLAIN`)."""
    from openprogram.integrations import ALIASES, DEMOS

    names = {PLAIN: PLAIN, **{name: name for name in DEMOS}}
    names.update({alias: target for alias, target in ALIASES.items() if target in DEMOS})
    return names


def demo_label(name: str) -> str:
    """How the demo of ``name`` is called in its lines: its longest spelling without a dash (``openai_agents``)."""
    return max((word for word, target in demo_names().items() if target == name and "-" not in word), key=len)


def _labels() -> str:
    return ", ".join(dict.fromkeys(demo_label(name) for name in demo_names().values()))


def _demo_name(word: str) -> str:
    """``argparse`` type of a FRAMEWORK argument: the demo it names, or a usage error listing the names."""
    known = demo_names()
    if word not in known:
        raise argparse.ArgumentTypeError(f"unknown framework {word!r} (choose from: {_labels()})")
    return known[word]


def add_demo_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``demo`` command's FRAMEWORK arguments."""
    parser.add_argument(
        "frameworks",
        nargs="*",
        type=_demo_name,
        metavar="FRAMEWORK",
        help=f"run only these demos ({_labels()}; default: all that are installed)",
    )


def _prepare(module_name: str) -> None:
    """Call a demo module's optional ``prepare()`` before its framework is imported.

    A framework may read its environment at import time (CrewAI: telemetry and
    tracing switches); a demo can only keep it offline if it sets it first.
    """
    try:
        module = importlib.import_module(module_name)
        prepare = getattr(module, "prepare", None)
        if callable(prepare):
            prepare()
    except Exception:
        logger.debug("openprogram: demo %s not prepared", module_name, exc_info=True)


def run_demo(store: Store, session_id: str | None, out: TextIO, frameworks: Sequence[str] = ()) -> int:
    """Run the demos named in ``frameworks`` (all that are available if none) in one session; print its id and how
    to continue it. A line is printed before each framework's demo starts: importing one takes seconds."""
    from openprogram.integrations import DEMOS

    def emit(line: str) -> None:
        out.write(line + "\n")
        out.flush()  # each line as it happens, also through a pipe

    wanted = set(frameworks) or {PLAIN, *DEMOS}
    chosen = {name: module_name for name, module_name in DEMOS.items() if name in wanted}
    enabled = instrument()  # adapters wait for their framework to be imported: this imports nothing
    started = time.perf_counter()
    with session_context(session_id, store=store, runtime="cli-demo") as handle:
        emit(f"{'continuing' if not handle.created else 'new'} session {handle.session_id}, turn {handle.turn_id}")
        if PLAIN in wanted:
            answer = asyncio.run(research("what is a session?"))
            emit(f"plain python: {answer}")
        for name, module_name in chosen.items():
            if name not in enabled:
                emit(f"{demo_label(name)}: skipped (not installed)")
                continue
            emit(f"{demo_label(name)}: starting (importing the framework, then running its offline agent)...")
            _prepare(module_name)  # before its framework is imported: nothing else imports it
            module = importlib.import_module(module_name)
            module.run_demo(emit)
    flush()
    emit(f"recorded in {describe_store(store)} ({time.perf_counter() - started:.2f}s)")
    for line in follow_up_lines(store, handle.session_id):
        emit(line)
    return 0

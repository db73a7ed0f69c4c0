"""LangGraph threads as conversations: the session a run with a checkpointer records into when no session is open.

A thread continues a conversation only through its checkpointer's saved state, and the
same ``thread_id`` in two checkpointers (two programs' in-memory savers, two database
files) is two conversations: so a thread's session is found from its state, not its id.
A recorded run ends by binding the thread's latest checkpoint id to its session
(:func:`bind_latest`). A run started with no session open reads the checkpoints it will
resume from, as LangGraph is about to (one read), and continues the session bound to the
newest of them that is bound (``update_state`` adds checkpoints between runs), else one
derived from the newest, alike in any process. A thread with no saved state starts a new
session. A run without a checkpointer keeps nothing: it is no conversation, and records
into the process's implicit session.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from openprogram import get_current_session
from openprogram._kit import RunEntry, log_once, run_blocking, run_session

__all__ = ["NAMESPACE", "athread_entry", "bind_latest", "thread_entry"]

FRAMEWORK = "langgraph"
NAMESPACE = "langgraph.checkpoint"  # alias namespace: checkpoint id -> session
_NEAREST = 4  # a thread's newest checkpoints (and their parents) looked at for one bound to a session


def _thread(loop: Any) -> tuple[Any, dict[str, Any], str] | None:
    """The loop's checkpointer, the config it reads the thread with, and the thread id; None: no conversation."""
    checkpointer = getattr(loop, "checkpointer", None)
    if not checkpointer:
        return None
    config = getattr(loop, "checkpoint_config", None) or loop.config
    configurable = config.get("configurable") or {}
    thread_id = configurable.get("thread_id")
    if thread_id is None or configurable.get("checkpoint_ns"):  # a subgraph's: inside its parent's session
        return None
    # The root graph's checkpoints only (a listing without a namespace includes its subgraphs').
    return checkpointer, {**config, "configurable": {**configurable, "checkpoint_ns": ""}}, str(thread_id)


def _addressed(config: dict[str, Any]) -> bool:
    """Whether the run starts from a checkpoint it names (a replay or fork), not the thread's latest."""
    return bool((config.get("configurable") or {}).get("checkpoint_id"))


def _entry(saved: Iterable[Any], thread_id: str, what: str) -> RunEntry | None:
    """The run's session from the thread's checkpoints (newest first); each names its parent at no cost."""
    ids: list[str] = []
    for found in saved:
        parent = ((found.parent_config or {}).get("configurable") or {}).get("checkpoint_id")
        for checkpoint_id in (found.checkpoint["id"], parent):
            if checkpoint_id and str(checkpoint_id) not in ids:
                ids.append(str(checkpoint_id))
    conversation = f"thread {thread_id!r}"
    if not ids:
        return run_session(FRAMEWORK, what, thread_id, conversation=conversation, new=True)
    return run_session(FRAMEWORK, what, ids[0], namespace=NAMESPACE, conversation=conversation, earlier=ids[1:])


def thread_entry(loop: Any, what: str) -> RunEntry | None:
    """Outside any session, the session of the conversation a sync run continues; None: it records where it is."""
    try:
        if get_current_session() is not None:
            return None
        thread = _thread(loop)
        if thread is None:
            return run_session(FRAMEWORK, what)
        checkpointer, config, thread_id = thread
        if _addressed(config):
            found = checkpointer.get_tuple(config)
            return _entry(() if found is None else (found,), thread_id, what)
        return _entry(checkpointer.list(config, limit=_NEAREST), thread_id, what)
    except Exception as exc:
        log_once(FRAMEWORK, "stream (finding the thread's session)", exc)
        return None


async def athread_entry(loop: Any, what: str) -> RunEntry | None:
    """:func:`thread_entry` for an async run, with the checkpointer's async reads."""
    try:
        if get_current_session() is not None:
            return None
        # Finding the session opens the store and reads it: on openprogram's threads, off the event loop.
        thread = _thread(loop)
        if thread is None:
            return await run_blocking(run_session, FRAMEWORK, what)
        checkpointer, config, thread_id = thread
        if _addressed(config):
            found = await checkpointer.aget_tuple(config)
            return await run_blocking(_entry, () if found is None else (found,), thread_id, what)
        saved = [t async for t in checkpointer.alist(config, limit=_NEAREST)]
        return await run_blocking(_entry, saved, thread_id, what)
    except Exception as exc:
        log_once(FRAMEWORK, "astream (finding the thread's session)", exc)
        return None


def bind_latest(loop: Any) -> None:
    """At a run's end, in its session: bind the thread's latest checkpoint to that session."""
    try:
        if get_current_session() is None or _thread(loop) is None:
            return
        checkpoint_id = (loop.checkpoint_config.get("configurable") or {}).get("checkpoint_id")
        if checkpoint_id:
            run_session(FRAMEWORK, "graph", str(checkpoint_id), namespace=NAMESPACE)  # in a session: binds only
    except Exception as exc:
        log_once(FRAMEWORK, "stream (binding the thread's checkpoint)", exc)

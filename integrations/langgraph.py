"""LangGraph adapter: every graph run, node/task and LangChain tool as a call in the session DAG.

The session of the code that created a run is visible inside every node and
tool of that run, wherever the run is iterated, and a run with a ``thread_id``
and no open session records into the session bound to that thread.

Patched (class- and module-level, so graphs compiled before ``instrument()``
are covered): ``Pregel.stream`` / ``Pregel.astream`` (every ``invoke``,
``batch``, ``astream_events`` goes through them) -> ``graph`` calls;
``astream_events`` (v1/v2) / ``astream_log`` (lazy: they keep the creator's context);
``run_with_retry`` / ``arun_with_retry`` as bound in
``langgraph.pregel._runner`` (every node, ``Send``, subgraph, ``@task``,
``ToolNode``) -> ``node`` calls (under a ``RetryPolicy``, one per attempt, marked ``attempt``:
the task's ``proc`` is proxied for the retry loop); ``BaseTool.run`` / ``BaseTool.arun`` ->
``tool`` calls. An ``interrupt()`` records an ``interrupt`` call with its
payload; a ``Command(resume=...)`` run records one with the answer.
``SyncPregelLoop.__enter__`` / ``AsyncPregelLoop.__aenter__``: a run with a cache or
static breakpoints gets its loop hooked (per instance: other runs pay nothing per
step), so a node served from the cache is a ``node`` call marked ``cached`` and a
breakpoint (``interrupt_before`` / ``interrupt_after``) records an ``interrupt``
call named after the nodes it names.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import dataclasses
import functools
import inspect
import logging
import threading
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Generator, Iterator
from typing import Any, ClassVar

from openprogram._capture import json_string
from openprogram._context import NoSessionError, session_var
from openprogram._instrument import Integration
from openprogram._propagation import close_inner, drive_async_generator, drive_generator
from openprogram._recorder import (
    Opened,
    call_scope,
    close_call,
    detach_call,
    end_call,
    open_call,
    register_control_flow,
)
from openprogram._session import session_context, session_for_run
from openprogram._tool import injected_arguments, records_itself

__all__ = ["MIN_VERSION", "LangGraphIntegration"]

logger = logging.getLogger("openprogram")

MIN_VERSION = (1, 0, 0)
FRAMEWORK = "langgraph"
_MARK = "__openprogram_wrapped__"

#: LangGraph's internal nodes (``__start__``, ...): not user code, not recorded.
_RESERVED = ("__start__", "__end__")
_PUSH = "__pregel_push"  # langgraph._internal._constants.PUSH: the path head of Send / @task tasks


class _Run:
    """Per graph run, shared by its nodes through :data:`_run_var` (a mutable box: nodes copy the context)."""

    __slots__ = ("interrupted", "seen_interrupts")

    def __init__(self, outer: _Run | None) -> None:
        self.interrupted = False
        # Interrupt ids already recorded in this run tree: a subgraph's interrupt bubbles through
        # every enclosing node, so a subgraph run shares the set of the run it is nested in.
        self.seen_interrupts: set[str] = set() if outer is None else outer.seen_interrupts


_run_var: contextvars.ContextVar[_Run | None] = contextvars.ContextVar("openprogram.langgraph.run", default=None)

# Filled by setup(): LangGraph's control-flow exceptions (not errors of the node).
_graph_interrupt: tuple[type[BaseException], ...] = ()
_parent_command: tuple[type[BaseException], ...] = ()
_command_type: type[Any] | None = None

_seen_lock = threading.Lock()  # parallel nodes of one run may pause at once

_logged: set[str] = set()


def _log_once(what: str) -> None:
    """Log our own failure once per place, with the traceback; never raise into the graph."""
    if what in _logged:
        logger.debug("openprogram: langgraph adapter failed again in %s", what, exc_info=True)
        return
    _logged.add(what)
    logger.exception("openprogram: langgraph adapter failed in %s; the graph keeps running unrecorded", what)


# --- graph runs ------------------------------------------------------------------


def _config_of(args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
    config = kwargs.get("config") if "config" in kwargs else (args[1] if len(args) > 1 else None)
    return config if isinstance(config, dict) else {}


def _input_of(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    return args[0] if args else kwargs.get("input")


class _GraphStart:
    """What a graph run needs before it starts: its session entry (if any) and its call scope."""

    __slots__ = ("resume", "run", "scope", "session", "token")

    def __init__(self, graph: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        config = _config_of(args, kwargs)
        configurable = config.get("configurable") or {}
        thread_id = configurable.get("thread_id")
        self.session: session_context | None = None
        if thread_id is not None:
            # Inside a session: binds the thread to it. Outside: the thread's own session.
            self.session = session_for_run(FRAMEWORK, str(thread_id))
        inp = _input_of(args, kwargs)
        self.resume: Any = None
        if _command_type is not None and isinstance(inp, _command_type) and getattr(inp, "resume", None) is not None:
            self.resume = inp.resume
        attributes: dict[str, Any] = {}
        if thread_id is not None:
            attributes["thread_id"] = str(thread_id)
        checkpoint_ns = configurable.get("checkpoint_ns")
        if checkpoint_ns:
            attributes["checkpoint_ns"] = checkpoint_ns
        name = getattr(graph, "name", None) or type(graph).__name__
        self.scope = call_scope("graph", str(name), framework=FRAMEWORK, inputs={"input": inp},
                                attributes=attributes)  # fmt: skip
        self.run = _Run(_run_var.get())
        self.token: contextvars.Token[_Run | None] | None = None

    def begin(self) -> None:
        self.scope.enter()
        self.token = _run_var.set(self.run)

    def end(self, exc: BaseException | None) -> None:
        if self.token is not None:
            with contextlib.suppress(ValueError):  # ended in another context: nothing to restore
                _run_var.reset(self.token)
            self.token = None
        if exc is not None and isinstance(exc, _parent_command):
            self.scope.set_attributes(command="parent")  # a subgraph handing control to its parent
        # A pause or a hand-off passing through is registered control flow: not an error.
        status = "interrupted" if exc is None and self.run.interrupted else None
        self.scope.exit(exc, status)


def _pending_interrupts(state: Any) -> tuple[str, list[dict[str, Any]]]:
    """Names of the interrupted tasks and their interrupts' payloads, from a StateSnapshot."""
    names = [t.name for t in getattr(state, "tasks", ()) if getattr(t, "interrupts", ())]
    payloads = [{"id": i.id, "value": i.value} for i in getattr(state, "interrupts", ())]
    return ",".join(names) or "resume", payloads


def _record_resume(start: _GraphStart, state: Any) -> None:
    name, payloads = _pending_interrupts(state)
    inputs: dict[str, Any] = {"interrupts": payloads} if payloads else {}
    with call_scope("interrupt", name, framework=FRAMEWORK, inputs=inputs or None) as scope:
        scope.set_output({"resume": start.resume})


def _traced_stream(original: Callable[..., Generator[Any, Any, Any]], graph: Any, args: tuple[Any, ...],
                   kwargs: dict[str, Any]) -> Generator[Any, Any, Any]:  # fmt: skip
    try:
        start: _GraphStart | None = _GraphStart(graph, args, kwargs)
    except Exception:
        _log_once("stream (preparing the run)")
        start = None
    if start is None:
        return (yield from original(graph, *args, **kwargs))
    session = start.session
    if session is not None:
        try:
            session.__enter__()
        except Exception:
            _log_once("stream (opening the thread's session)")
            session = None
    try:
        start.begin()
        if start.resume is not None:
            try:
                _record_resume(start, graph.get_state(_config_of(args, kwargs)))
            except Exception:
                _log_once("stream (recording the resume)")
    except Exception:
        _log_once("stream (starting the graph call)")
    try:
        result = yield from original(graph, *args, **kwargs)
    except BaseException as exc:
        start.end(exc)
        if session is not None:
            session.__exit__(type(exc), exc, exc.__traceback__)
        raise
    start.end(None)
    if session is not None:
        session.__exit__(None, None, None)
    return result


async def _atraced_stream(original: Callable[..., AsyncIterator[Any]], graph: Any, args: tuple[Any, ...],
                          kwargs: dict[str, Any]) -> AsyncGenerator[Any, Any]:  # fmt: skip
    try:
        start: _GraphStart | None = _GraphStart(graph, args, kwargs)
    except Exception:
        _log_once("astream (preparing the run)")
        start = None
    if start is None:
        async for chunk in original(graph, *args, **kwargs):
            yield chunk
        return
    session = start.session
    if session is not None:
        try:
            await session.__aenter__()
        except Exception:
            _log_once("astream (opening the thread's session)")
            session = None
    try:
        start.begin()
        if start.resume is not None:
            try:
                _record_resume(start, await graph.aget_state(_config_of(args, kwargs)))
            except Exception:
                _log_once("astream (recording the resume)")
    except Exception:
        _log_once("astream (starting the graph call)")
    inner = original(graph, *args, **kwargs)
    try:
        async for chunk in inner:
            yield chunk
    except BaseException as exc:
        try:
            await close_inner(inner)  # type: ignore[arg-type]
        finally:
            start.end(exc)
            if session is not None:
                await session.__aexit__(type(exc), exc, exc.__traceback__)
        raise
    start.end(None)
    if session is not None:
        await session.__aexit__(None, None, None)


def _wrap_stream(original: Callable[..., Generator[Any, Any, Any]]) -> Callable[..., Iterator[Any]]:
    @functools.wraps(original)
    def stream(self: Any, *args: Any, **kwargs: Any) -> Iterator[Any]:
        if not _active:
            return original(self, *args, **kwargs)
        # The generator is lazy: take the creator's context now, run every step in it.
        return drive_generator(_traced_stream(original, self, args, kwargs), contextvars.copy_context())

    setattr(stream, _MARK, original)
    return stream


def _wrap_astream(original: Callable[..., AsyncIterator[Any]]) -> Callable[..., AsyncIterator[Any]]:
    @functools.wraps(original)
    def astream(self: Any, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        if not _active:
            return original(self, *args, **kwargs)
        return drive_async_generator(_atraced_stream(original, self, args, kwargs), contextvars.copy_context())

    setattr(astream, _MARK, original)
    return astream


def _wrap_lazy_events(original: Callable[..., Any]) -> Callable[..., Any]:
    """``astream_events`` (v1/v2) and ``astream_log``: lazy async generators that call ``astream``
    only when first iterated, so that ``astream`` would take the iterating context, not the creator's."""

    @functools.wraps(original)
    def events(self: Any, *args: Any, **kwargs: Any) -> Any:
        result = original(self, *args, **kwargs)
        if _active and inspect.isasyncgen(result):
            return drive_async_generator(result, contextvars.copy_context())
        return result  # v3's run stream (drives ``astream`` from the caller) or a coroutine

    setattr(events, _MARK, original)
    return events


def _record_breakpoint(when: str, names: list[str]) -> None:
    """A static breakpoint (``interrupt_before`` / ``interrupt_after``) paused the run."""
    run = _run_var.get()
    if run is not None:
        run.interrupted = True
    name = ",".join(names) or "breakpoint"
    call_scope("interrupt", name, framework=FRAMEWORK, inputs={"breakpoint": when}).enter().exit(None, "interrupted")


def _at_breakpoint(tasks: Any, breakpoints: Any) -> list[str]:
    """The nodes among ``tasks`` the breakpoint list names (``"*"``: all of them)."""
    return [t.name for t in tasks if breakpoints == "*" or t.name in breakpoints]


def _record_cached(tasks: Any) -> None:
    """Nodes whose writes came from the cache (a ``CachePolicy`` hit): recorded, marked ``cached``."""
    for task in tasks:
        opened = _begin_node(task)
        if opened is not None:
            close_call(opened, None, _node_output(task), attributes={"cached": True})


def _arm_loop(loop: Any) -> None:
    """Hook one run's loop, on the instance and only where it needs it: a run with no
    breakpoints and no cache pays nothing per step."""
    before, after, tick, after_tick = loop.interrupt_before, loop.interrupt_after, loop.tick, loop.after_tick
    if before:

        def paused_tick() -> Any:
            try:
                return tick()
            except _graph_interrupt:
                if _active and loop.status == "interrupt_before":
                    try:
                        _record_breakpoint("before", _at_breakpoint(loop.tasks.values(), before))
                    except Exception:
                        _log_once("tick (recording a breakpoint)")
                raise

        loop.tick = paused_tick
    if after:

        def paused_after_tick() -> Any:
            # The nodes that just ran (newer LangGraph moves on to the next step before pausing).
            ran = _at_breakpoint(loop.tasks.values(), after) if _active else None
            try:
                return after_tick()
            except _graph_interrupt:
                if ran is not None and loop.status == "interrupt_after":
                    try:
                        _record_breakpoint("after", ran)
                    except Exception:
                        _log_once("after_tick (recording a breakpoint)")
                raise

        loop.after_tick = paused_after_tick
    if getattr(loop, "cache", None) is not None:  # the sync loop matches with one, the async loop the other
        match, amatch = loop.match_cached_writes, loop.amatch_cached_writes

        def match_cached_writes() -> Any:
            matched = match()
            if matched and _active:
                _record_cached_safely(matched)
            return matched

        async def amatch_cached_writes() -> Any:
            matched = await amatch()
            if matched and _active:
                _record_cached_safely(matched)
            return matched

        loop.match_cached_writes, loop.amatch_cached_writes = match_cached_writes, amatch_cached_writes


def _record_cached_safely(tasks: Any) -> None:
    try:
        _record_cached(tasks)
    except NoSessionError:
        raise
    except Exception:
        _log_once("match_cached_writes (recording a cache hit)")


def _wrap_enter(original: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(original)
    def __enter__(self: Any) -> Any:
        if _active:
            try:
                _arm_loop(self)
            except Exception:
                _log_once("PregelLoop.__enter__ (hooking breakpoints and the cache)")
        return original(self)

    setattr(__enter__, _MARK, original)
    return __enter__


def _wrap_aenter(original: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(original)
    async def __aenter__(self: Any) -> Any:
        if _active:
            try:
                _arm_loop(self)
            except Exception:
                _log_once("PregelLoop.__aenter__ (hooking breakpoints and the cache)")
        return await original(self)

    setattr(__aenter__, _MARK, original)
    return __aenter__


# --- nodes and tasks -------------------------------------------------------------


def _begin_node(task: Any, attempt: int = 0) -> Opened | None:
    """Open the ``node`` call of ``task``, or of its ``attempt``-th run (1-indexed) under a retry policy."""
    try:
        name = task.name
        if name in _RESERVED:
            return None
        config = task.config or {}
        metadata = config.get("metadata") or {}
        configurable = config.get("configurable") or {}
        # Built as JSON text here: these are LangGraph's own step number and ids.
        step = metadata.get("langgraph_step")
        checkpoint_ns = configurable.get("checkpoint_ns")
        attributes = (
            f'{{"step":{step if type(step) is int else "null"},"task_id":{json_string(str(task.id))},'
            f'"checkpoint_ns":{"null" if checkpoint_ns is None else json_string(str(checkpoint_ns))}}}'
        )
        if attempt:
            attributes = f'{attributes[:-1]},"attempt":{attempt}}}'
        # A pulled node's input is the whole graph state: large, growing, and already the
        # sum of the recorded outputs, so it is not captured. A pushed task's input (a
        # Send payload, an @task call's arguments) is its own and small: it is.
        path = task.path
        inputs = {"input": task.input} if path and path[0] == _PUSH else None
        return open_call("node", name if type(name) is str else str(name), FRAMEWORK, inputs, attributes)
    except NoSessionError:
        raise  # the "error" no-session policy
    except Exception:
        _log_once("run_with_retry (starting the node call)")
        return None


# LangGraph's bookkeeping channels (``__pregel_*``, a resumed interrupt's answers, an
# entrypoint's saved value) and routing markers (``branch:to:x``: None): not a node's output.
_BOOKKEEPING = ("__pregel", "branch:", "__resume__", "__previous__")
# Where the functional API puts a return value: an @task's, an @entrypoint's.
_RETURNS = ("__return__", "__end__")


def _node_output(task: Any) -> Any:
    """What the node wrote, by channel; an @task's or @entrypoint's return value as itself."""
    out: dict[str, Any] = {}
    for channel, value in task.writes:
        if not channel.startswith(_BOOKKEEPING):
            out[channel] = value
    if len(out) == 1:
        for channel in _RETURNS:
            if channel in out:
                return out[channel]
    return out


def _first_sighting(run: _Run | None, interrupt_id: Any) -> bool:
    """True the first time this run tree sees the interrupt (the same id may pause a later run again)."""
    if interrupt_id is None or run is None:
        return True
    with _seen_lock:
        if interrupt_id in run.seen_interrupts:
            return False
        run.seen_interrupts.add(interrupt_id)
        return True


def _record_interrupts(run: _Run | None, name: str, exc: BaseException) -> None:
    for item in exc.args[0] if exc.args else ():
        interrupt_id = getattr(item, "id", None)
        if not _first_sighting(run, interrupt_id):
            continue  # already recorded by the subgraph node that raised it
        inner = call_scope("interrupt", name, framework=FRAMEWORK,
                           inputs={"value": getattr(item, "value", item), "id": interrupt_id}).enter()  # fmt: skip
        inner.exit(None, "interrupted")


def _end_node(opened: Opened, task: Any, exc: BaseException | None) -> None:
    try:
        if exc is None:
            close_call(opened, None, _node_output(task))
        elif isinstance(exc, _graph_interrupt):
            run = _run_var.get()
            if run is not None:
                run.interrupted = True
            _record_interrupts(run, opened[0][4], exc)  # children of this node: it is still current
            close_call(opened, exc)  # registered control flow: "interrupted", the payload on the interrupt call
        elif isinstance(exc, _parent_command):
            close_call(opened, exc, attributes={"command": "parent"})  # registered control flow: "ok"
        else:
            close_call(opened, exc)
    except Exception:
        _log_once("run_with_retry (ending the node call)")
        close_call(opened, exc)


_TIMED_OUT = TimeoutError("the attempt timed out (TimeoutPolicy)")


def _after_timeout(exc: BaseException) -> bool:
    """Whether ``exc`` was raised while LangGraph handled a node's timeout (waiting to retry)."""
    seen = exc.__context__
    for _ in range(8):
        if seen is None:
            return False
        if type(seen).__name__ == "NodeTimeoutError":
            return True
        seen = seen.__context__
    return False


class _Attempts:
    """Stands in for the ``proc`` of a task run under a retry policy, so that every attempt is its own
    ``node`` call: LangGraph's retry loop runs ``proc.invoke`` (async: ``ainvoke`` or, for
    ``astream_events`` / ``astream_log``, ``astream``) once per attempt, so whatever an attempt runs
    (tools, subgraphs, functions) nests under that attempt's call.

    What an attempt's ending means is sometimes decided by the loop, outside the attempt: a
    ``CancelledError`` may be the run being cancelled (``interrupted``) or, in LangGraph 1.2, a
    node's own cancellation turned into a ``NodeCancelledError`` (a failure, retried or not); an
    attempt cut short by a ``TimeoutPolicy`` is given up on (``NodeTimeoutError``) while its
    cancellation is still on its way. Such attempts are settled when the next attempt begins
    (LangGraph retried: a failure) or when the loop ends (with the loop's own exception)."""

    __slots__ = ("cancelled", "count", "loop_task", "pending", "proc", "running", "settled", "task")

    def __init__(self, task: Any) -> None:
        self.task = task
        self.proc = task.proc
        self.count = 0  # attempts begun
        self.pending: Opened | None = None  # an attempt's call left for the wrapper to end
        self.running: Opened | None = None  # the attempt whose proc call has not returned
        self.cancelled: tuple[tuple[Any, ...], BaseException] | None = None  # ended by a CancelledError
        self.settled: set[Any] = set()  # ids of attempts ended here rather than by themselves
        self.loop_task: asyncio.Task[Any] | None = None  # the task running LangGraph's async retry loop

    def __getattr__(self, name: str) -> Any:
        if name in _Attempts.__slots__:
            raise AttributeError(name)  # not set yet (a copy being built): never recurse
        return getattr(self.proc, name)  # anything else LangGraph may read off the runnable

    def _begin(self) -> Opened | None:
        self._settle(None)  # a new attempt: LangGraph retried whatever it left undecided
        self.count += 1
        opened = _begin_node(self.task, self.count)
        self.running = opened
        return opened

    def _settle(self, exc: BaseException | None) -> None:
        """End the attempts the loop decided about: ``exc`` is the loop's exception (None: it retried)."""
        try:
            # Retried (LangGraph retries no cancellation but its timeout's), or the run failed
            # while it waited to retry after a timeout: the attempt timed out.
            timed_out = exc is None or (isinstance(exc, asyncio.CancelledError) and _after_timeout(exc))
            running, self.running = self.running, None
            if running is not None:  # given up on and not ended yet
                self.settled.add(running[0][0])
                end_call(running[0], _TIMED_OUT if timed_out else exc)
            cancelled, self.cancelled = self.cancelled, None
            if cancelled is not None:
                end_call(cancelled[0], _TIMED_OUT if timed_out else exc)
        except Exception:
            _log_once("run_with_retry (ending an attempt)")

    def _end(self, opened: Opened, exc: BaseException | None) -> None:
        if self.running is opened:
            self.running = None
        if opened[0][0] in self.settled:  # already ended by _settle: restore the context only
            close_call(opened, exc)
            return
        if exc is not None and isinstance(exc, _parent_command):
            # LangGraph decides after the attempt: a Command for this graph runs the node's
            # writers (the node's output, as today), any other is passed on. The wrapper ends it.
            self.pending = opened
            return
        if isinstance(exc, asyncio.CancelledError):
            if self._timed_out():
                close_call(opened, _TIMED_OUT)  # a failure: "error", with the reason
                return
            # The run cancelled, or (LangGraph 1.2) the node's own cancellation, a failure: the loop decides.
            self.cancelled = (detach_call(opened), exc)
            return
        # A failure LangGraph retries ends its attempt "error"; an interrupt ends the loop, as today.
        _end_node(opened, self.task, exc)

    def _timed_out(self) -> bool:
        """The attempt's own task was cancelled (LangGraph 1.2 runs an attempt with a timeout in a
        task of its own and cancels it on timeout) while the retry loop's task was not: the
        timeout's doing, not the run's cancellation nor the node's own ``CancelledError``."""
        loop_task = self.loop_task
        current = asyncio.current_task() if loop_task is not None else None
        if current is None or current is loop_task:
            return False
        own = getattr(current, "cancelling", None)  # Python >= 3.11; before: the loop decides
        return own is not None and own() > 0 and loop_task.cancelling() == 0  # type: ignore[union-attr]

    def finish(self, exc: BaseException | None) -> None:
        """After LangGraph's loop: end what it left undecided or pending, or record the task as one
        call when it ended before any attempt began (e.g. a sync node with a timeout policy)."""
        try:
            if self.running is not None or self.cancelled is not None:
                self._settle(exc)  # None: the loop succeeded after them, so it retried them
            opened = self.pending
            if opened is None and self.count == 0:
                opened = _begin_node(self.task)
            if opened is not None:
                self.pending = None
                _end_node(opened, self.task, exc)
        except Exception:
            _log_once("run_with_retry (ending the node call)")

    def invoke(self, input: Any, config: Any = None, **kwargs: Any) -> Any:
        opened = self._begin()
        if opened is None:
            return self.proc.invoke(input, config, **kwargs)
        try:
            result = self.proc.invoke(input, config, **kwargs)
        except BaseException as exc:
            self._end(opened, exc)
            raise
        self._end(opened, None)
        return result

    async def ainvoke(self, input: Any, config: Any = None, **kwargs: Any) -> Any:
        opened = self._begin()
        if opened is None:
            return await self.proc.ainvoke(input, config, **kwargs)
        try:
            result = await self.proc.ainvoke(input, config, **kwargs)
        except BaseException as exc:
            self._end(opened, exc)
            raise
        self._end(opened, None)
        return result

    async def astream(self, input: Any, config: Any = None, **kwargs: Any) -> AsyncGenerator[Any, None]:
        opened = self._begin()
        if opened is None:
            async for chunk in self.proc.astream(input, config, **kwargs):
                yield chunk
            return
        try:
            async for chunk in self.proc.astream(input, config, **kwargs):
                yield chunk
        except BaseException as exc:
            self._end(opened, exc)
            raise
        self._end(opened, None)


def _retried(task: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
    """Whether a retry policy is in effect for ``task``: LangGraph's rule, the task's own, else the graph's."""
    return bool(getattr(task, "retry_policy", None) or (args[1] if len(args) > 1 else kwargs.get("retry_policy")))


def _with_attempts(task: Any, args: tuple[Any, ...],
                   kwargs: dict[str, Any]) -> tuple[_Attempts, tuple[Any, ...], dict[str, Any]] | None:  # fmt: skip
    """LangGraph's retry-loop arguments with the task's ``proc`` standing in for one call per attempt.

    The task is a dataclass: its copy shares ``writes`` (the deque the runner reads) and every
    other field; only the loop sees it. None: record the loop as one call, as without a policy
    (a reserved node, or no current session: the no-session policy then applies as today).
    """
    try:
        if session_var.get() is None or task.name in _RESERVED:
            return None
        attempts = _Attempts(task)
        proxied = dataclasses.replace(task, proc=attempts)
        if args:
            return attempts, (proxied, *args[1:]), kwargs
        return attempts, args, {**kwargs, "task": proxied}
    except Exception:
        _log_once("run_with_retry (preparing per-attempt calls)")
        return None


def _wrap_run_with_retry(original: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(original)
    def run_with_retry(*args: Any, **kwargs: Any) -> Any:
        if not _active:
            return original(*args, **kwargs)
        task = args[0] if args else kwargs.get("task")
        if _retried(task, args, kwargs):
            retried = _with_attempts(task, args, kwargs)
            if retried is not None:
                attempts, args, kwargs = retried
                try:
                    result = original(*args, **kwargs)
                except BaseException as exc:
                    attempts.finish(exc)
                    raise
                attempts.finish(None)
                return result
        opened = _begin_node(task)
        if opened is None:
            return original(*args, **kwargs)
        try:
            result = original(*args, **kwargs)
        except BaseException as exc:
            _end_node(opened, task, exc)  # resets the context: single-task steps run in the caller's
            raise
        _end_node(opened, task, None)
        return result

    setattr(run_with_retry, _MARK, original)
    return run_with_retry


def _wrap_arun_with_retry(original: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(original)
    async def arun_with_retry(*args: Any, **kwargs: Any) -> Any:
        if not _active:
            return await original(*args, **kwargs)
        task = args[0] if args else kwargs.get("task")
        # Not with LangGraph 1.0's ``match_cached_writes`` (unused by its runner): it finds the task by identity.
        if _retried(task, args, kwargs) and len(args) <= 3 and kwargs.get("match_cached_writes") is None:
            retried = _with_attempts(task, args, kwargs)
            if retried is not None:
                attempts, args, kwargs = retried
                attempts.loop_task = asyncio.current_task()
                try:
                    result = await original(*args, **kwargs)
                except BaseException as exc:
                    attempts.finish(exc)
                    raise
                attempts.finish(None)
                return result
        opened = _begin_node(task)
        if opened is None:
            return await original(*args, **kwargs)
        try:
            result = await original(*args, **kwargs)
        except BaseException as exc:
            _end_node(opened, task, exc)
            raise
        _end_node(opened, task, None)
        return result

    setattr(arun_with_retry, _MARK, original)
    return arun_with_retry


# --- LangChain tools -------------------------------------------------------------


def _records_itself(tool: Any) -> bool:
    """A tool built on an ``@openprogram.tool`` function records its own call: do not record it twice."""
    return records_itself(tool, "func", "coroutine")


_visible: dict[int, tuple[Any, frozenset[str]]] = {}  # id(tool) -> (tool, argument names the model sees)
_MAX_VISIBLE = 1024


def _model_arguments(tool: Any) -> frozenset[str]:
    """The argument names in the tool's schema as sent to a model (for langchain-core without
    ``_injected_args_keys``). Cached per tool: building the schema is not free."""
    cached = _visible.get(id(tool))
    if cached is not None and cached[0] is tool:
        return cached[1]
    schema = tool.tool_call_schema
    names = frozenset(schema["properties"] if isinstance(schema, dict) else schema.model_fields)
    if len(_visible) >= _MAX_VISIBLE:
        _visible.clear()
    _visible[id(tool)] = (tool, names)
    return names


def _tool_inputs(tool: Any, tool_input: Any) -> Any:
    """The tool's arguments without injected ones (InjectedState, ToolRuntime, store: plumbing, possibly huge)."""
    if not isinstance(tool_input, dict):
        return tool_input
    try:
        injected = tool._injected_args_keys
    except AttributeError:
        visible = _model_arguments(tool)
        return {k: v for k, v in tool_input.items() if k in visible}
    if injected:
        return {k: v for k, v in tool_input.items() if k not in injected}
    return tool_input


def _injected_hint(tool: Any, tool_input: Any) -> list[tuple[frozenset[str], frozenset[str]]] | None:
    """For a tool that records itself: the injected arguments its ``@openprogram.tool`` wrapper leaves out."""
    try:
        if not isinstance(tool_input, dict):
            return None
        wrapped = (getattr(tool, attribute, None) for attribute in ("func", "coroutine"))
        names = frozenset(n for n in (getattr(f, "__openprogram_tool__", None) for f in wrapped) if n)
        if not names:
            return None
        # What the model does not see was injected (``_injected_args_keys`` misses the
        # annotations of a function wrapped by @openprogram.tool; the model's schema does not).
        visible = _model_arguments(tool)
        keys = frozenset(k for k in tool_input if k not in visible)
        return [(names, keys)] if keys else None
    except Exception:
        _log_once("BaseTool.run (finding injected arguments)")
        return None


def _begin_tool(tool: Any, tool_input: Any) -> Opened | None:
    try:
        if _records_itself(tool):
            return None
        name = tool.name
        return open_call("tool", name if type(name) is str else str(name), FRAMEWORK, _tool_inputs(tool, tool_input))
    except NoSessionError:
        raise  # the "error" no-session policy
    except Exception:
        _log_once("BaseTool.run (starting the tool call)")
        return None


def _end_tool(opened: Opened, exc: BaseException | None, output: Any) -> None:
    # interrupt() inside the tool (GraphInterrupt) ends it "interrupted": registered control flow.
    if exc is None and hasattr(output, "tool_call_id") and hasattr(output, "content"):
        # A ToolMessage (a ToolNode call): its content is the result; the whole message is in the node's output.
        output = output.content
    close_call(opened, exc, output)


def _wrap_tool_run(original: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(original)
    def run(self: Any, tool_input: Any, *args: Any, **kwargs: Any) -> Any:
        if not _active:
            return original(self, tool_input, *args, **kwargs)
        opened = _begin_tool(self, tool_input)
        if opened is None:
            hint = _injected_hint(self, tool_input)
            if hint is None:
                return original(self, tool_input, *args, **kwargs)
            token = injected_arguments.set(hint)
            try:
                return original(self, tool_input, *args, **kwargs)
            finally:
                injected_arguments.reset(token)
        try:
            result = original(self, tool_input, *args, **kwargs)
        except BaseException as exc:
            _end_tool(opened, exc, None)
            raise
        _end_tool(opened, None, result)
        return result

    setattr(run, _MARK, original)
    return run


def _wrap_tool_arun(original: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(original)
    async def arun(self: Any, tool_input: Any, *args: Any, **kwargs: Any) -> Any:
        if not _active:
            return await original(self, tool_input, *args, **kwargs)
        opened = _begin_tool(self, tool_input)
        if opened is None:
            hint = _injected_hint(self, tool_input)
            if hint is None:
                return await original(self, tool_input, *args, **kwargs)
            token = injected_arguments.set(hint)
            try:
                return await original(self, tool_input, *args, **kwargs)
            finally:
                injected_arguments.reset(token)
        try:
            result = await original(self, tool_input, *args, **kwargs)
        except BaseException as exc:
            _end_tool(opened, exc, None)
            raise
        _end_tool(opened, None, result)
        return result

    setattr(arun, _MARK, original)
    return arun


# --- setup / teardown ------------------------------------------------------------

_active = False


def _version(text: str) -> tuple[int, ...]:
    parts: list[int] = []
    for piece in text.split(".")[:3]:
        digits = "".join(ch for ch in piece if ch.isdigit())
        parts.append(int(digits) if digits else 0)
    return tuple(parts)


class LangGraphIntegration(Integration):
    """Records LangGraph graph runs, nodes/tasks, interrupts and LangChain tools."""

    identifier: ClassVar[str] = "langgraph"
    extra: ClassVar[str] = "langgraph"

    def __init__(self) -> None:
        # (owner, attribute, original): what teardown puts back, exactly (None: it was inherited).
        self._patched: list[tuple[Any, str, Any]] = []

    def _targets(self) -> list[tuple[Any, str, Callable[[Any], Any]]]:
        from langchain_core.tools import BaseTool
        from langgraph.pregel import Pregel, _loop, _runner

        return [
            (_loop.SyncPregelLoop, "__enter__", _wrap_enter),
            (_loop.AsyncPregelLoop, "__aenter__", _wrap_aenter),
            (Pregel, "stream", _wrap_stream),
            (Pregel, "astream", _wrap_astream),
            (Pregel, "astream_events", _wrap_lazy_events),
            (Pregel, "astream_log", _wrap_lazy_events),
            (_runner, "run_with_retry", _wrap_run_with_retry),
            (_runner, "arun_with_retry", _wrap_arun_with_retry),
            (BaseTool, "run", _wrap_tool_run),
            (BaseTool, "arun", _wrap_tool_arun),
        ]

    def setup(self) -> None:
        global _active, _graph_interrupt, _parent_command, _command_type
        try:
            from importlib.metadata import version

            import langchain_core  # noqa: F401
            import langgraph  # noqa: F401

            installed = version("langgraph")
        except ImportError as exc:
            raise self.missing("langgraph") from exc
        if _version(installed) < MIN_VERSION:
            raise self.missing("langgraph", f" in a supported version (found {installed}, need >= 1.0)")
        from langgraph.errors import GraphInterrupt, ParentCommand
        from langgraph.types import Command

        targets = self._targets()
        _graph_interrupt, _parent_command, _command_type = (GraphInterrupt,), (ParentCommand,), Command
        # For every recorded call they pass through, @openprogram.tool functions included:
        register_control_flow(GraphInterrupt, "interrupted")  # a human-in-the-loop pause
        register_control_flow(ParentCommand, "ok")  # a hand-off to the parent graph
        for owner, attribute, wrap in targets:
            own = owner.__dict__.get(attribute) if isinstance(owner, type) else getattr(owner, attribute)
            current = own if own is not None else getattr(owner, attribute)  # inherited (astream_log)
            if hasattr(current, _MARK):
                continue  # already ours (instrument() twice wraps once)
            setattr(owner, attribute, wrap(current))
            self._patched.append((owner, attribute, own))
        _active = True

    def teardown(self) -> None:
        global _active
        _active = False
        while self._patched:
            owner, attribute, original = self._patched.pop()
            if original is None:
                delattr(owner, attribute)  # inherited again
            else:
                setattr(owner, attribute, original)

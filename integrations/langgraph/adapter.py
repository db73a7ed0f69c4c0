"""LangGraph adapter: every graph run and node/task as a call in the session DAG, and what its nodes call.

The session of the code that created a run is visible inside every node and tool of that run,
wherever the run is iterated; a run with no open session records into its thread's conversation when
it has a checkpointer (:mod:`.threads`), else into the process's implicit session. Graph
runs (``stream`` / ``astream``, which every ``invoke``, ``batch`` and ``astream_events`` goes
through) run each step in their creator's context, driven from C so that LangGraph's warnings name
the caller's line; their ``graph`` call lasts from the run's loop entered to the run's end reported
to its callback manager. Nodes: ``run_with_retry`` / ``arun_with_retry`` as bound in
``langgraph.pregel._runner`` (every node, ``Send``, subgraph, ``@task``, ``ToolNode``; each attempt
under a ``RetryPolicy``: :mod:`.retries`). LangChain tools and chat model requests are the LangChain
adapter's, which this one needs: inside a graph run they carry ``"langgraph"``; a tool call a model
asked for that ``ToolNode`` answers itself (no such tool) is recorded here, ending ``error``.
Interrupts and resumes, static breakpoints and cache hits are recorded too (the last two by hooks on
the loops of the runs that have them).
"""

from __future__ import annotations

import contextlib
import contextvars
import inspect
import threading
from collections.abc import Callable, Sequence
from typing import Any, ClassVar

from openprogram import NoSessionError
from openprogram._kit import (
    Integration,
    Opened,
    RunEntry,
    Target,
    async_frameless_steps_in_current_context,
    call_scope,
    close_call,
    frameless_steps_in_current_context,
    guarded,
    json_string,
    log_once,
    open_call,
    register_control_flow,
    wraps_like,
)
from openprogram.integrations.langchain import enter_run, leave_run

from .retries import NodeCalls, attempts_for
from .threads import athread_entry, bind_latest, thread_entry

__all__ = ["LangGraphIntegration"]

FRAMEWORK = "langgraph"


class LangGraphIntegration(Integration):
    """Records LangGraph graph runs, nodes/tasks and interrupts (the LangChain adapter it needs: tools, models)."""

    identifier: ClassVar[str] = "langgraph"
    framework: ClassVar[str] = FRAMEWORK
    distribution: ClassVar[str] = "langgraph"
    extra: ClassVar[str] = "langgraph"
    trigger: ClassVar[str] = "langgraph.pregel"  # ``langgraph`` is a namespace package
    needs: ClassVar[tuple[str, ...]] = ("langchain",)  # the chat models and tools its nodes run

    def targets(self) -> Sequence[Target]:
        return [
            Target("langgraph.pregel.main:Pregel", "stream", _wrap_stream(frameless_steps_in_current_context)),
            Target("langgraph.pregel.main:Pregel", "astream", _wrap_stream(async_frameless_steps_in_current_context)),
            Target("langgraph.pregel.main:Pregel", "astream_events", _wrap_lazy_events),  # Runnable's in older ones
            Target("langgraph.pregel.main:Pregel", "astream_log", _wrap_lazy_events),
            Target("langgraph.pregel._loop:SyncPregelLoop", "__enter__", _wrap_enter),
            Target("langgraph.pregel._loop:AsyncPregelLoop", "__aenter__", _wrap_aenter),
            Target("langgraph.pregel._runner", "run_with_retry", _wrap_run_with_retry),
            Target("langgraph.pregel._runner", "arun_with_retry", _wrap_arun_with_retry),
            Target("langgraph.prebuilt.tool_node:ToolNode", "_validate_tool_call", _wrap_validate_tool_call),
            # create_agent's own copy in langchain 1.0 (an alias of the one above since: wrapped once)
            Target("langchain.tools.tool_node:_ToolNode", "_validate_tool_call", _wrap_validate_tool_call),
        ]

    def setup(self) -> None:
        global _graph_interrupt, _parent_command, _command_type, _nodes
        from langgraph.errors import GraphInterrupt, ParentCommand
        from langgraph.types import Command

        _graph_interrupt, _parent_command, _command_type = (GraphInterrupt,), (ParentCommand,), Command
        _nodes = _nodes._replace(handoff=_parent_command)
        # For every recorded call they pass through, @openprogram.tool functions included:
        register_control_flow(GraphInterrupt, "interrupted")  # a human-in-the-loop pause
        register_control_flow(ParentCommand, "ok")  # a hand-off to the parent graph


# Filled by setup(): LangGraph's control-flow exceptions (not errors of the node) and its Command.
_graph_interrupt: tuple[type[BaseException], ...] = ()
_parent_command: tuple[type[BaseException], ...] = ()
_command_type: type[Any] | None = None

#: LangGraph's internal nodes (``__start__``, ...): not user code, not recorded.
_RESERVED = ("__start__", "__end__")
_DEFAULT_NAME = "LangGraph"  # Pregel.name unless given one
_PUSH = "__pregel_push"  # langgraph._internal._constants.PUSH: the path head of Send / @task tasks


# --- graph runs --------------------------------------------------------------------


class _Run:
    """Per graph run, shared by its nodes through :data:`_run_var` (a mutable box: nodes copy the context)."""

    __slots__ = ("interrupted", "seen_interrupts")

    def __init__(self, outer: _Run | None) -> None:
        self.interrupted = False
        # Interrupt ids already recorded in this run tree: a subgraph's interrupt bubbles through
        # every enclosing node, so a subgraph run shares the set of the run it is nested in.
        self.seen_interrupts: set[str] = set() if outer is None else outer.seen_interrupts


_run_var: contextvars.ContextVar[_Run | None] = contextvars.ContextVar("openprogram.langgraph.run", default=None)
# What a ``stream()`` call was asked for, in the context its steps run in, until its loop is entered.
_starting: contextvars.ContextVar[tuple[Any, tuple[Any, ...], dict[str, Any]] | None] = contextvars.ContextVar(
    "openprogram.langgraph.starting", default=None
)
_seen_lock = threading.Lock()  # parallel nodes of one run may pause at once


def _config_of(args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
    config = kwargs.get("config") if "config" in kwargs else (args[1] if len(args) > 1 else None)
    return config if isinstance(config, dict) else {}


def _input_of(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    return args[0] if args else kwargs.get("input")


class _GraphStart:
    """A graph run, from its loop entered to the end LangGraph reports to the run's callback manager
    (after its last output and recursion-limit check; also when its stream is closed): its thread's
    session (if any), its ``graph`` call and its state."""

    __slots__ = (
        "config",
        "ended",
        "entered",
        "entry",
        "framework_token",
        "graph",
        "loop",
        "manager",
        "name",
        "resume",
        "run",
        "scope",
        "token",
    )

    def __init__(self, graph: Any, args: tuple[Any, ...], kwargs: dict[str, Any], loop: Any) -> None:
        config = _config_of(args, kwargs)
        configurable = config.get("configurable") or {}
        thread_id = configurable.get("thread_id")
        self.name = name = _graph_name(graph)
        self.loop = loop
        self.entry: RunEntry | None = None  # with no session open, the session of the run's thread, if it has one
        inp = _input_of(args, kwargs)
        self.resume: Any = inp.resume if _command_type is not None and isinstance(inp, _command_type) else None
        attributes: dict[str, Any] = {} if thread_id is None else {"thread_id": str(thread_id)}
        if configurable.get("checkpoint_ns"):
            attributes["checkpoint_ns"] = configurable["checkpoint_ns"]
        self.scope = call_scope("graph", name, framework=FRAMEWORK, inputs={"input": inp}, attributes=attributes)
        self.graph, self.config = graph, config
        self.run = _Run(_run_var.get())
        self.token: contextvars.Token[_Run | None] | None = None
        self.framework_token: contextvars.Token[str] | None = None
        self.manager: Any = None
        self.entered = self.ended = False

    def begin(self) -> None:
        """Begin the ``graph`` call (the thread's session is entered already, if any)."""
        with guarded(FRAMEWORK, "stream (starting the graph call)"):
            self.scope.enter()
            self.token = _run_var.set(self.run)
            self.framework_token = enter_run(FRAMEWORK)  # the LangChain calls of its nodes are the graph's

    def _close(self, exc: BaseException | None, output: Any) -> bool:
        """End the ``graph`` call with the run's output; True the first time (the caller leaves the session)."""
        if self.ended:
            return False
        self.ended = True
        with guarded(FRAMEWORK, "stream (ending the graph call)"):
            if self.token is not None:
                with contextlib.suppress(ValueError):  # ended in another context: nothing to restore
                    _run_var.reset(self.token)
            if self.framework_token is not None:
                leave_run(self.framework_token)
            bind_latest(self.loop)  # the next run of this thread, from any process, continues this session
            if exc is not None and isinstance(exc, _parent_command):
                self.scope.set_attributes(command="parent")  # a subgraph handing control to its parent
            self.scope.set_output(output)  # the final state, an @entrypoint's return value
            # A pause or a hand-off passing through is registered control flow: not an error.
            self.scope.exit(exc, "interrupted" if exc is None and self.run.interrupted else None)
            for hook in ("on_chain_end", "on_chain_error"):  # the run manager is left as LangGraph made it
                vars(self.manager).pop(hook, None)
        return self.entered

    def end(self, exc: BaseException | None, output: Any = None) -> None:
        if self._close(exc, output) and self.entry is not None:
            with guarded(FRAMEWORK, "stream (leaving the thread's session)"):
                self.entry.__exit__(type(exc) if exc else None, exc, exc.__traceback__ if exc else None)

    async def aend(self, exc: BaseException | None, output: Any = None) -> None:
        if self._close(exc, output) and self.entry is not None:
            with guarded(FRAMEWORK, "astream (leaving the thread's session)"):
                await self.entry.__aexit__(type(exc) if exc else None, exc, exc.__traceback__ if exc else None)


def _wrap_stream(in_context: Callable[[Any], Any]) -> Callable[[Callable[..., Any], Integration], Callable[..., Any]]:
    """``stream`` / ``astream``: the lazy generator keeps its creator's context and says what to record."""

    def wrap(original: Callable[..., Any], integration: Integration) -> Callable[..., Any]:
        def stream(self: Any, *args: Any, **kwargs: Any) -> Any:
            if not integration.active:
                return original(self, *args, **kwargs)
            token = _starting.set((self, args, kwargs))  # copied with the context; read when the loop is entered
            try:
                return in_context(original(self, *args, **kwargs))
            finally:
                _starting.reset(token)

        return wraps_like(original)(stream)

    return wrap


def _wrap_lazy_events(original: Callable[..., Any], integration: Integration) -> Callable[..., Any]:
    """``astream_events`` (v1/v2) and ``astream_log``: lazy async generators that call ``astream``
    only when first iterated, so that ``astream`` would take the iterating context, not the creator's."""

    def events(self: Any, *args: Any, **kwargs: Any) -> Any:
        result = original(self, *args, **kwargs)
        if integration.active and inspect.isasyncgen(result):
            return async_frameless_steps_in_current_context(result)
        return result  # v3's run stream (drives ``astream`` from the caller) or a coroutine

    return wraps_like(original)(events)


def _graph_name(graph: Any) -> str:
    """The graph's name; a functional-API ``@entrypoint``'s (one node, LangGraph's default name) is its function's."""
    name = getattr(graph, "name", None)
    if name == _DEFAULT_NAME:
        nodes = getattr(graph, "nodes", None)
        if isinstance(nodes, dict) and len(nodes) == 1:
            return str(next(iter(nodes)))
    return str(name or type(graph).__name__)


def _take_start(loop: Any, asynchronous: bool) -> _GraphStart | None:
    """The run this loop belongs to (a ``stream()`` call of ours), ready to begin; None: not recorded."""
    pending = _starting.get()
    if pending is None:
        return None
    _starting.set(None)  # the run's own context: its nodes and subgraphs copy it after this
    try:
        start = _GraphStart(*pending, loop)
        _hook_end(loop.manager, start, asynchronous)
    except Exception as exc:
        log_once(FRAMEWORK, "stream (preparing the run)", exc)
        return None
    return start


def _hook_end(manager: Any, start: _GraphStart, asynchronous: bool) -> None:
    """End ``start`` where LangGraph reports the run's end, on this run's own callback manager."""
    on_end, on_error = manager.on_chain_end, manager.on_chain_error
    if asynchronous:

        async def aon_chain_end(outputs: Any, **kwargs: Any) -> None:
            await on_end(outputs, **kwargs)
            await start.aend(None, outputs)

        async def aon_chain_error(error: BaseException, **kwargs: Any) -> None:
            try:
                await on_error(error, **kwargs)
            finally:
                await start.aend(error)

        manager.on_chain_end, manager.on_chain_error = aon_chain_end, aon_chain_error
    else:

        def on_chain_end(outputs: Any, **kwargs: Any) -> Any:
            result = on_end(outputs, **kwargs)
            start.end(None, outputs)
            return result

        def on_chain_error(error: BaseException, **kwargs: Any) -> Any:
            try:
                return on_error(error, **kwargs)
            finally:
                start.end(error)

        manager.on_chain_end, manager.on_chain_error = on_chain_end, on_chain_error
    start.manager = manager


def _wrap_enter(original: Callable[..., Any], integration: Integration) -> Callable[..., Any]:
    def __enter__(self: Any) -> Any:
        if integration.active:
            start = _take_start(self, asynchronous=False)
            if start is not None:
                start.entry = thread_entry(self, f"graph {start.name!r}")
                if start.entry is not None:
                    with guarded(FRAMEWORK, "stream (opening the thread's session)"):
                        start.entry.__enter__()
                        start.entered = True
                start.begin()
                if start.resume is not None:
                    with guarded(FRAMEWORK, "stream (recording the resume)"):
                        _record_resume(start, start.graph.get_state(start.config))
            _arm_loop(self, integration)
        return original(self)

    return wraps_like(original)(__enter__)


def _wrap_aenter(original: Callable[..., Any], integration: Integration) -> Callable[..., Any]:
    async def __aenter__(self: Any) -> Any:
        if integration.active:
            start = _take_start(self, asynchronous=True)
            if start is not None:
                start.entry = await athread_entry(self, f"graph {start.name!r}")
                if start.entry is not None:
                    with guarded(FRAMEWORK, "astream (opening the thread's session)"):
                        await start.entry.__aenter__()
                        start.entered = True
                start.begin()
                if start.resume is not None:
                    with guarded(FRAMEWORK, "astream (recording the resume)"):
                        _record_resume(start, await start.graph.aget_state(start.config))
            _arm_loop(self, integration)
        return await original(self)

    return wraps_like(original)(__aenter__)


def _record_resume(start: _GraphStart, state: Any) -> None:
    """A ``Command(resume=...)`` run: an ``interrupt`` call named after the interrupted tasks (``state``:
    the thread's StateSnapshot), with their interrupts' payloads and the answer."""
    names = [t.name for t in getattr(state, "tasks", ()) if getattr(t, "interrupts", ())]
    payloads = [{"id": i.id, "value": i.value} for i in getattr(state, "interrupts", ())]
    inputs = {"interrupts": payloads} if payloads else None
    with call_scope("interrupt", ",".join(names) or "resume", framework=FRAMEWORK, inputs=inputs) as scope:
        scope.set_output({"resume": start.resume})


# --- breakpoints and the cache: hooks on one run's loop -------------------------------


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
    with guarded(FRAMEWORK, "match_cached_writes (recording a cache hit)"):
        for task in tasks:
            opened = _begin_node(task)
            if opened is not None:
                close_call(opened, None, _node_output(task), attributes={"cached": True})


def _arm_loop(loop: Any, integration: Integration) -> None:
    """Hook one run's loop, on the instance and only where it needs it: a run with no
    breakpoints and no cache pays nothing per step."""
    with guarded(FRAMEWORK, "PregelLoop.__enter__ (hooking breakpoints and the cache)"):
        before, after, tick, after_tick = loop.interrupt_before, loop.interrupt_after, loop.tick, loop.after_tick
        if before:

            def paused_tick() -> Any:
                try:
                    return tick()
                except _graph_interrupt:
                    if integration.active and loop.status == "interrupt_before":
                        with guarded(FRAMEWORK, "tick (recording a breakpoint)"):
                            _record_breakpoint("before", _at_breakpoint(loop.tasks.values(), before))
                    raise

            loop.tick = paused_tick
        if after:

            def paused_after_tick() -> Any:
                # The nodes that just ran (newer LangGraph moves on to the next step before pausing).
                ran = _at_breakpoint(loop.tasks.values(), after) if integration.active else None
                try:
                    return after_tick()
                except _graph_interrupt:
                    if ran is not None and loop.status == "interrupt_after":
                        with guarded(FRAMEWORK, "after_tick (recording a breakpoint)"):
                            _record_breakpoint("after", ran)
                    raise

            loop.after_tick = paused_after_tick
        if getattr(loop, "cache", None) is not None:  # the sync loop matches with one, the async loop the other
            match, amatch = loop.match_cached_writes, loop.amatch_cached_writes

            def match_cached_writes() -> Any:
                matched = match()
                if matched and integration.active:
                    _record_cached(matched)
                return matched

            async def amatch_cached_writes() -> Any:
                matched = await amatch()
                if matched and integration.active:
                    _record_cached(matched)
                return matched

            loop.match_cached_writes, loop.amatch_cached_writes = match_cached_writes, amatch_cached_writes


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
        inputs = {"input": _pushed_input(task.input)} if path and path[0] == _PUSH else None
        return open_call("node", name if type(name) is str else str(name), FRAMEWORK, inputs, attributes)
    except NoSessionError:
        raise  # the "error" no-session policy
    except Exception as exc:
        log_once(FRAMEWORK, "run_with_retry (starting the node call)", exc)
        return None


def _pushed_input(payload: Any) -> Any:
    """A Send payload as recorded: a prebuilt agent's tool call without the graph state it carries
    along (the whole conversation so far, which the model calls keep already)."""
    if type(payload) is dict and payload.get("__type") == "tool_call_with_context" and "state" in payload:
        return {key: value for key, value in payload.items() if key != "state"}
    return payload


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
        inner = call_scope(
            "interrupt", name, framework=FRAMEWORK, inputs={"value": getattr(item, "value", item), "id": interrupt_id}
        ).enter()
        inner.exit(None, "interrupted")


def _end_node(opened: Opened, task: Any, exc: BaseException | None) -> None:
    try:
        if exc is None:
            close_call(opened, None, _node_output(task))
        elif isinstance(exc, _graph_interrupt):
            run = _run_var.get()
            if run is not None:
                run.interrupted = True
            # Children of this node: it is still current. The node itself ends "interrupted"
            # (registered control flow), the payload on the interrupt call.
            _record_interrupts(run, task.name if type(task.name) is str else str(task.name), exc)
            close_call(opened, exc)
        elif isinstance(exc, _parent_command):
            close_call(opened, exc, attributes={"command": "parent"})  # registered control flow: "ok"
        else:
            close_call(opened, exc)
    except Exception as error:
        log_once(FRAMEWORK, "run_with_retry (ending the node call)", error)
        close_call(opened, exc)


_nodes = NodeCalls(_begin_node, _end_node, _parent_command, _RESERVED)  # the retry attempts' node calls


def _wrap_run_with_retry(original: Callable[..., Any], integration: Integration) -> Callable[..., Any]:
    def run_with_retry(*args: Any, **kwargs: Any) -> Any:
        if not integration.active:
            return original(*args, **kwargs)
        task = args[0] if args else kwargs.get("task")
        attempts = attempts_for(task, args, kwargs, _nodes)
        if attempts is not None:
            return attempts.run(original)
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

    return wraps_like(original)(run_with_retry)


def _wrap_arun_with_retry(original: Callable[..., Any], integration: Integration) -> Callable[..., Any]:
    async def arun_with_retry(*args: Any, **kwargs: Any) -> Any:
        if not integration.active:
            return await original(*args, **kwargs)
        task = args[0] if args else kwargs.get("task")
        # Not with LangGraph 1.0's ``match_cached_writes`` (unused by its runner): it finds the task by identity.
        per_attempt = len(args) <= 3 and kwargs.get("match_cached_writes") is None
        attempts = attempts_for(task, args, kwargs, _nodes) if per_attempt else None
        if attempts is not None:
            return await attempts.arun(original)
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

    return wraps_like(original)(arun_with_retry)


# --- tool calls ToolNode answers itself ------------------------------------------------


class _NoSuchTool(LookupError):
    """What a model's call of a tool the ToolNode does not have failed with (ToolNode answers it, raising nothing)."""


def _tool_inputs(call: Any) -> Any:
    """A tool call's arguments as the model sent them (there is no tool to leave injected ones out)."""
    return call.get("args")


def _wrap_validate_tool_call(original: Callable[..., Any], integration: Integration) -> Callable[..., Any]:
    """``ToolNode._validate_tool_call``: a call of a tool it does not have is answered with an error
    ToolMessage, no tool runs: recorded as that ``tool`` call, ending ``error`` with the answer."""

    def _validate_tool_call(self: Any, call: Any, *args: Any, **kwargs: Any) -> Any:
        answer = original(self, call, *args, **kwargs)
        if answer is not None and integration.active:
            _record_unknown_tool(call, answer)
        return answer

    return wraps_like(original)(_validate_tool_call)


def _record_unknown_tool(call: Any, answer: Any) -> None:
    try:
        name = call.get("name")
        opened = open_call("tool", str(name), FRAMEWORK, _tool_inputs(call))
    except NoSessionError:
        return  # the "error" no-session policy: ToolNode's answer goes to the model as without openprogram
    except Exception as exc:
        log_once(FRAMEWORK, "ToolNode._validate_tool_call (recording an unknown tool)", exc)
        return
    if opened is not None:
        close_call(opened, _NoSuchTool(str(answer.content)), answer.content)

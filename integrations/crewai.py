"""CrewAI adapter: crew -> task -> agent -> tool (and flow -> method) in the session DAG.

After :func:`openprogram.instrument`, every crew, task, agent, flow and tool —
including those built before it — records into the current session, and the
current session is visible inside every tool, on every way CrewAI runs
(sync, async, threads, streaming consumed elsewhere).

How it reaches CrewAI (all undone by :func:`openprogram.uninstrument`):

- tools: CrewAI's global before/after tool-call hooks (both tool-calling paths,
  parallel native calls, delegation, cached results); class-level wrappers on
  ``BaseTool.run``/``arun``, ``Tool.run``/``arun`` and
  ``CrewStructuredTool.invoke``/``ainvoke`` only see the tool's own exception
  (CrewAI swallows it before the after-hook) and record a tool run directly,
  outside any agent;
- parents: class-level wrappers on ``Crew.kickoff``/``akickoff``/``kickoff_for_each``
  (and async variants), ``Task._execute_core``/``_aexecute_core``,
  ``Agent.execute_task``/``aexecute_task``/``kickoff``/``kickoff_async``,
  ``Flow.kickoff_async``/``_execute_method`` (not CrewAI's internal agent-executor flow).

A run started with no session open records into the session bound to its
CrewAI identity (the flow state id, or the execution id) — see
:func:`last_run_session_id`.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import importlib
import logging
import threading
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from typing import TYPE_CHECKING, Any

from openprogram._context import session_var
from openprogram._instrument import Integration
from openprogram._propagation import propagate
from openprogram._recorder import call_scope, close_call, open_call
from openprogram._session import session_context, session_for_run
from openprogram._tool import records_itself

if TYPE_CHECKING:
    from crewai import Crew

__all__ = ["MIN_VERSION", "CrewAIIntegration", "last_run_session_id"]

logger = logging.getLogger("openprogram")

#: Lowest crewai version the adapter is tested with (tool hooks came in 1.5; 1.14 lacks pieces the tests rely on).
MIN_VERSION = (1, 15, 0)
FRAMEWORK = "crewai"
_NAME_LIMIT = 80
_MARK = "__openprogram_crewai__"


class _State:
    active = False
    get_execution_uuid: Callable[[], Any] | None = None  # crewai.execution, absent before a 1.15.x
    last_session_id: str | None = None
    warned: set[str] = set()  # noqa: RUF012 - process-wide, guarded by the GIL
    # crewai.hooks' (get, register) pairs for the before- and after-tool hooks, set by setup()
    hook_registry: tuple[tuple[Callable[[], list[Any]], Callable[[Any], Any]], ...] = ()
    hook_lock = threading.Lock()


def last_run_session_id() -> str | None:
    """Id of the session the most recent CrewAI run started with no session open recorded into.

    Runs started inside ``openprogram.session_context`` record into that session
    instead. The id is also logged (logger ``openprogram``, level INFO).
    """
    return _State.last_session_id


def _log_once(what: str) -> None:
    if what not in _State.warned:
        _State.warned.add(what)
        logger.exception("openprogram: crewai instrumentation error in %s (the crew keeps running)", what)


def _ensure_hooks() -> None:
    """Put our tool hooks back if CrewAI's global hooks were cleared since ``instrument()``
    (``crewai.hooks.clear_all_global_hooks()``): without them a tool call loses its agent,
    cached and blocked calls go unrecorded, and a model could pass ``_session`` through."""
    try:
        registry = _State.hook_registry
        if all(hook in get() for (get, _), hook in zip(registry, (_before_tool, _after_tool), strict=True)):
            return
        with _State.hook_lock:
            for (get, register), hook in zip(registry, (_before_tool, _after_tool), strict=True):
                if hook not in get():
                    register(hook)
                    if "hooks cleared" not in _State.warned:
                        _State.warned.add("hooks cleared")
                        logger.warning(
                            "openprogram: CrewAI's global tool hooks were cleared; openprogram registered "
                            "its own again (openprogram.uninstrument() removes them)"
                        )
    except Exception:
        _log_once("re-registering the tool hooks")


# --- names ----------------------------------------------------------------------------


def _short(text: Any) -> str:
    value = " ".join(str(text or "").split())
    return value if len(value) <= _NAME_LIMIT else value[: _NAME_LIMIT - 3] + "..."


def _crew_name(crew: Any) -> str:
    return _short(getattr(crew, "name", None) or "crew")


def _task_name(task: Any) -> str:
    return _short(getattr(task, "name", None) or getattr(task, "description", None) or "task")


def _agent_name(agent: Any) -> str:
    return _short(getattr(agent, "role", None) or type(agent).__name__)


def _flow_name(flow: Any) -> str:
    return _short(getattr(flow, "name", None) or type(flow).__name__)


# --- run identity -------------------------------------------------------------------


def _execution_uuid() -> str | None:
    getter = _State.get_execution_uuid  # resolved once in setup(): a failing import is slow
    if getter is None:
        return None
    try:
        value = getter()
    except Exception:
        return None
    return value if isinstance(value, str) else None


def _bind_execution() -> None:
    """Tie CrewAI's execution id (minted inside the outermost kickoff) to the current session."""
    try:
        key = _execution_uuid()
        if key is not None and session_var.get() is not None:
            session_for_run(FRAMEWORK, key)  # cached after the first call of a run
    except Exception:
        _log_once("binding the execution id")


def _entry_session(namespace: str, key: str | None, what: str) -> session_context | None:
    """The session_context to enter for a run started with no session open (None inside one)."""
    if session_var.get() is not None:
        if key is not None:
            try:
                session_for_run(namespace, key)
            except Exception:
                _log_once("binding the run id")
        return None
    try:
        run_key = key or _execution_uuid() or uuid.uuid4().hex
        ctx = session_for_run(namespace if key else FRAMEWORK, run_key)
    except Exception:
        _log_once("opening the run's session")
        return None
    if ctx is not None:
        ctx.runtime = what
    return ctx


def _opened(handle: Any, what: str) -> None:
    _State.last_session_id = handle.session_id
    logger.info(
        "openprogram: CrewAI %s ran with no session open; recorded in session %s (see it with `openprogram show %s`)",
        what, handle.session_id, handle.session_id,
    )  # fmt: skip


# --- streaming consumed outside the session ------------------------------------------


def _drive_sync(iterator: Iterator[Any], step: Callable[[Iterator[Any]], Any]) -> Iterator[Any]:
    while True:
        try:
            item = step(iterator)
        except StopIteration:
            return
        yield item


async def _drive_async(iterator: AsyncIterator[Any], start: Callable[[Any], Any]) -> AsyncIterator[Any]:
    while True:
        try:
            item = await start(iterator.__anext__())
        except StopAsyncIteration:
            return
        yield item


def _bind_stream(result: Any) -> Any:
    """Make a lazily-started stream run in the context of the call that created it."""
    try:
        if session_var.get() is None:
            return result  # the run inside the stream opens its own session
        sync_it = getattr(result, "_sync_iterator", None)
        if sync_it is not None and not getattr(sync_it, _MARK, False):
            # every step (incl. the one that starts CrewAI's worker) runs in the kickoff call's context
            wrapped: Any = _drive_sync(sync_it, propagate(next))
            result._sync_iterator = wrapped
        async_it = getattr(result, "_async_iterator", None)
        if async_it is not None:
            # each step is a task created in the kickoff call's context, so a background
            # task started by the first step inherits that context
            result._async_iterator = _drive_async(async_it, propagate(asyncio.ensure_future))
    except Exception:
        _log_once("binding a stream to the session")
    return result


def _is_stream(result: Any) -> bool:
    return hasattr(result, "_sync_iterator") or hasattr(result, "_async_iterator")


# --- parent wrappers -------------------------------------------------------------------


def _record_sync(
    fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any], kind: str, name: str,
    *, inputs: Any = None, entry: tuple[str, str | None] | None = None, bind: bool = True,
) -> Any:  # fmt: skip
    ctx = _entry_session(entry[0], entry[1], f"{kind} {name!r}") if entry is not None else None
    if ctx is not None:
        with ctx as handle:
            _opened(handle, f"{kind} {name!r}")
            return _record_sync(fn, args, kwargs, kind, name, inputs=inputs, bind=bind)
    opened = open_call(kind, name, FRAMEWORK, inputs)
    if bind:
        _bind_execution()
    if opened is None:
        return fn(*args, **kwargs)
    try:
        result = fn(*args, **kwargs)
    except BaseException as exc:
        close_call(opened, exc)
        raise
    close_call(opened, None, _output_of(result))
    return result


async def _record_async(
    fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any], kind: str, name: str,
    *, inputs: Any = None, entry: tuple[str, str | None] | None = None, bind: bool = True,
) -> Any:  # fmt: skip
    ctx = _entry_session(entry[0], entry[1], f"{kind} {name!r}") if entry is not None else None
    if ctx is not None:
        async with ctx as handle:
            _opened(handle, f"{kind} {name!r}")
            return await _record_async(fn, args, kwargs, kind, name, inputs=inputs, bind=bind)
    opened = open_call(kind, name, FRAMEWORK, inputs)
    if bind:
        _bind_execution()
    if opened is None:
        return await fn(*args, **kwargs)
    try:
        result = await fn(*args, **kwargs)
    except BaseException as exc:
        close_call(opened, exc)
        raise
    close_call(opened, None, _output_of(result))
    return result


def _output_of(result: Any) -> Any:
    """A small, cheap capture of a CrewAI result (its text), not the whole object graph."""
    if result is None or isinstance(result, (str, int, float, bool)):
        return result
    raw = getattr(result, "raw", None)
    if isinstance(raw, str):
        return raw
    if isinstance(result, list):
        return [_output_of(item) for item in result[:20]]
    return None


def _wrap_crew_kickoff(orig: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(orig)
    def kickoff(self: Crew, *args: Any, **kwargs: Any) -> Any:
        if not _State.active:
            return orig(self, *args, **kwargs)
        if getattr(self, "stream", False):  # the run happens later, in CrewAI's worker
            return _bind_stream(orig(self, *args, **kwargs))
        return _record_sync(orig, (self, *args), kwargs, "crew", _crew_name(self),
                            inputs=_crew_inputs(args, kwargs), entry=(FRAMEWORK, None))  # fmt: skip

    return kickoff


def _wrap_crew_akickoff(orig: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(orig)
    async def akickoff(self: Crew, *args: Any, **kwargs: Any) -> Any:
        if not _State.active:
            return await orig(self, *args, **kwargs)
        if getattr(self, "stream", False):
            return _bind_stream(await orig(self, *args, **kwargs))
        return await _record_async(orig, (self, *args), kwargs, "crew", _crew_name(self),
                                   inputs=_crew_inputs(args, kwargs), entry=(FRAMEWORK, None))  # fmt: skip

    return akickoff


def _wrap_stream_only(orig: Callable[..., Any]) -> Callable[..., Any]:
    """``Crew.kickoff_async``: the work runs in ``kickoff`` (recorded there); only bind a returned stream."""

    @functools.wraps(orig)
    async def kickoff_async(self: Any, *args: Any, **kwargs: Any) -> Any:
        result = await orig(self, *args, **kwargs)
        if _State.active and _is_stream(result):
            return _bind_stream(result)
        return result

    return kickoff_async


def _wrap_for_each(orig: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(orig)
    def kickoff_for_each(self: Crew, inputs: Any, *args: Any, **kwargs: Any) -> Any:
        if not _State.active:
            return orig(self, inputs, *args, **kwargs)
        return _record_sync(orig, (self, inputs, *args), kwargs, "crew", _crew_name(self) + " (for each)",
                            inputs={"runs": _count(inputs)}, entry=(FRAMEWORK, None), bind=False)  # fmt: skip

    return kickoff_for_each


def _wrap_for_each_async(orig: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(orig)
    async def kickoff_for_each_async(self: Crew, inputs: Any, *args: Any, **kwargs: Any) -> Any:
        if not _State.active:
            return await orig(self, inputs, *args, **kwargs)
        result = await _record_async(orig, (self, inputs, *args), kwargs, "crew", _crew_name(self) + " (for each)",
                                     inputs={"runs": _count(inputs)}, entry=(FRAMEWORK, None), bind=False)  # fmt: skip
        return _bind_stream(result) if _is_stream(result) else result

    return kickoff_for_each_async


def _count(inputs: Any) -> int | None:
    try:
        return len(inputs)
    except Exception:
        return None


def _crew_inputs(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    inputs = kwargs.get("inputs", args[0] if args else None)
    return {"inputs": inputs} if inputs else None


def _wrap_task(orig: Callable[..., Any], is_async: bool) -> Callable[..., Any]:
    if is_async:

        @functools.wraps(orig)
        async def _aexecute_core(self: Any, agent: Any, *args: Any, **kwargs: Any) -> Any:
            if not _State.active:
                return await orig(self, agent, *args, **kwargs)
            return await _record_async(orig, (self, agent, *args), kwargs, "task", _task_name(self))  # fmt: skip

        return _aexecute_core

    @functools.wraps(orig)
    def _execute_core(self: Any, agent: Any, *args: Any, **kwargs: Any) -> Any:
        if not _State.active:
            return orig(self, agent, *args, **kwargs)
        return _record_sync(orig, (self, agent, *args), kwargs, "task", _task_name(self))

    return _execute_core


def _wrap_agent_execute(orig: Callable[..., Any], is_async: bool) -> Callable[..., Any]:
    if is_async:

        @functools.wraps(orig)
        async def aexecute_task(self: Any, task: Any, *args: Any, **kwargs: Any) -> Any:
            if not _State.active:
                return await orig(self, task, *args, **kwargs)
            _ensure_hooks()
            return await _record_async(orig, (self, task, *args), kwargs, "agent", _agent_name(self),
                                       inputs={"task": _task_name(task)})  # fmt: skip

        return aexecute_task

    @functools.wraps(orig)
    def execute_task(self: Any, task: Any, *args: Any, **kwargs: Any) -> Any:
        if not _State.active:
            return orig(self, task, *args, **kwargs)
        _ensure_hooks()
        return _record_sync(orig, (self, task, *args), kwargs, "agent", _agent_name(self),
                            inputs={"task": _task_name(task)})  # fmt: skip

    return execute_task


def _in_event_loop() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


def _wrap_agent_kickoff(orig: Callable[..., Any], is_async: bool) -> Callable[..., Any]:
    if is_async:

        @functools.wraps(orig)
        async def kickoff_async(self: Any, messages: Any, *args: Any, **kwargs: Any) -> Any:
            if not _State.active:
                return await orig(self, messages, *args, **kwargs)
            _ensure_hooks()
            return await _record_async(orig, (self, messages, *args), kwargs, "agent", _agent_name(self),
                                       inputs={"messages": messages}, entry=(FRAMEWORK, None))  # fmt: skip

        return kickoff_async

    @functools.wraps(orig)
    def kickoff(self: Any, messages: Any, *args: Any, **kwargs: Any) -> Any:
        if not _State.active or _in_event_loop():
            # Inside a running loop (a Flow method) CrewAI returns kickoff_async's
            # coroutine: that call records when it is awaited.
            return orig(self, messages, *args, **kwargs)
        _ensure_hooks()
        return _record_sync(orig, (self, messages, *args), kwargs, "agent", _agent_name(self),
                            inputs={"messages": messages}, entry=(FRAMEWORK, None))  # fmt: skip

    return kickoff


def _flow_state_id(flow: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> str | None:
    inputs = kwargs.get("inputs", args[0] if args else None)
    if isinstance(inputs, dict) and inputs.get("id"):
        return str(inputs["id"])
    try:
        value = flow.flow_id
    except Exception:
        return None
    return str(value) if value else None


def _wrap_flow_kickoff(orig: Callable[..., Any], internal: tuple[type, ...]) -> Callable[..., Any]:
    @functools.wraps(orig)
    async def kickoff_async(self: Any, *args: Any, **kwargs: Any) -> Any:
        if not _State.active or isinstance(self, internal):
            return await orig(self, *args, **kwargs)
        if getattr(self, "stream", False):
            return _bind_stream(await orig(self, *args, **kwargs))
        return await _record_async(orig, (self, *args), kwargs, "flow", _flow_name(self),
                                   entry=("crewai.flow", _flow_state_id(self, args, kwargs)), bind=False)  # fmt: skip

    return kickoff_async


def _wrap_flow_sync_stream(orig: Callable[..., Any], internal: tuple[type, ...]) -> Callable[..., Any]:
    """``Flow.kickoff`` with ``stream=True`` returns a lazy stream: bind it to the caller's session."""

    @functools.wraps(orig)
    def kickoff(self: Any, *args: Any, **kwargs: Any) -> Any:
        result = orig(self, *args, **kwargs)
        if _State.active and not isinstance(self, internal) and getattr(self, "stream", False) and _is_stream(result):
            return _bind_stream(result)
        return result

    return kickoff


def _wrap_flow_method(orig: Callable[..., Any], internal: tuple[type, ...]) -> Callable[..., Any]:
    @functools.wraps(orig)
    async def _execute_method(self: Any, method_name: Any, method: Any, *args: Any, **kwargs: Any) -> Any:
        if not _State.active or isinstance(self, internal):
            return await orig(self, method_name, method, *args, **kwargs)
        return await _record_async(orig, (self, method_name, method, *args), kwargs, "call", _short(method_name),
                                   bind=False)  # fmt: skip

    return _execute_method


# --- tools ------------------------------------------------------------------------------


class _Pending:
    """One tool call between CrewAI's before- and after-hook (same context)."""

    __slots__ = ("claimed", "error", "key", "ran", "scope", "token")

    def __init__(self, scope: call_scope, key: Any) -> None:
        self.scope = scope
        self.key = key  # CrewAI passes the same tool_input dict to both hooks
        self.token: contextvars.Token[_Pending | None] | None = None
        self.error: BaseException | None = None
        self.ran = False
        self.claimed = False


_pending: contextvars.ContextVar[_Pending | None] = contextvars.ContextVar("openprogram.crewai.tool", default=None)


def _records_itself(tool: Any) -> bool:
    """A tool whose function is an ``@openprogram.tool`` records its own call: do not record it twice."""
    tool = getattr(tool, "_original_tool", None) or tool  # the BaseTool behind a CrewStructuredTool
    return records_itself(tool, "func", "_run", "_arun")


def _before_tool(context: Any) -> None:
    if not _State.active:
        return None
    try:
        tool_input = context.tool_input
        if isinstance(tool_input, dict) and "_session" in tool_input:
            del tool_input["_session"]  # never let a model choose the session
        if _records_itself(getattr(context, "tool", None)):
            return None
        agent = context.agent
        attributes = {"agent": _agent_name(agent)} if agent is not None else None
        scope = call_scope("tool", str(context.tool_name), framework=FRAMEWORK, inputs=tool_input,
                           attributes=attributes).enter()  # fmt: skip
        pending = _Pending(scope, tool_input)
        pending.token = _pending.set(pending)
    except Exception:
        _log_once("the before-tool hook")
    return None


def _release(pending: _Pending) -> None:
    """Uninstall ``pending`` from the current context (once; the call itself is ended by the caller)."""
    token, pending.token = pending.token, None
    if token is not None:
        try:
            _pending.reset(token)
        except ValueError:  # ended in another context
            _pending.set(None)


def _after_tool(context: Any) -> None:
    pending = _pending.get()
    if pending is None or pending.token is None or pending.key is not context.tool_input:
        return None  # no before-hook of ours for this call (e.g. instrumented mid-call)
    try:
        _release(pending)
        scope = pending.scope
        scope.set_output(context.tool_result)
        if not pending.ran:
            scope.set_attributes(executed=False)  # cached, blocked by a hook, or usage limit reached
        scope.exit(pending.error)
    except Exception:
        _log_once("the after-tool hook")
    return None


def _end_escaped(pending: _Pending, exc: BaseException) -> None:
    """End a tool call whose Ctrl-C, SystemExit or cancellation escapes CrewAI's tool loop.

    CrewAI catches only ``Exception``, so its after-tool hook never runs for these: the call
    would stay ``running`` (and in the running-calls dict) for good.
    """
    try:
        _release(pending)
        pending.scope.exit(exc)
    except Exception:
        _log_once("ending an escaped tool call")


def _tool_name(tool: Any) -> str:
    return _short(getattr(tool, "name", None) or type(tool).__name__)


def _claim() -> _Pending | None:
    pending = _pending.get()
    if pending is None or pending.claimed or pending.token is None:
        return None
    pending.claimed = pending.ran = True
    return pending


def _wrap_tool_sync(orig: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(orig)
    def run(self: Any, *args: Any, **kwargs: Any) -> Any:
        if not _State.active:
            return orig(self, *args, **kwargs)
        pending = _claim()
        if pending is None:  # not under an agent's tool hooks: a direct call
            if _records_itself(self):
                return orig(self, *args, **kwargs)
            return _record_sync(orig, (self, *args), kwargs, "tool", _tool_name(self),
                                inputs=kwargs or list(args), bind=False)  # fmt: skip
        try:
            result = orig(self, *args, **kwargs)
        except BaseException as exc:
            pending.error = exc
            if not isinstance(exc, Exception):
                _end_escaped(pending, exc)
            raise
        finally:
            pending.claimed = False
        pending.error = None  # a retry that succeeded
        return result

    return run


def _wrap_tool_async(orig: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(orig)
    async def arun(self: Any, *args: Any, **kwargs: Any) -> Any:
        if not _State.active:
            return await orig(self, *args, **kwargs)
        pending = _claim()
        if pending is None:
            if _records_itself(self):
                return await orig(self, *args, **kwargs)
            return await _record_async(orig, (self, *args), kwargs, "tool", _tool_name(self),
                                       inputs=kwargs or list(args), bind=False)  # fmt: skip
        try:
            result = await orig(self, *args, **kwargs)
        except BaseException as exc:
            pending.error = exc
            if not isinstance(exc, Exception):
                _end_escaped(pending, exc)
            raise
        finally:
            pending.claimed = False
        pending.error = None
        return result

    return arun


def _wrap_ainvoke(orig: Callable[..., Any], invoke: Callable[..., Any]) -> Callable[..., Any]:
    """``CrewStructuredTool.ainvoke``: a sync tool runs in an executor *with the caller's context*.

    CrewAI's own ``run_in_executor`` drops the context (and returns an async
    ``@tool``'s coroutine unawaited); running the sync ``invoke`` there under
    :func:`openprogram.propagate` keeps the session and awaits such coroutines.
    """
    wrapped_invoke = _wrap_tool_sync(invoke)
    wrapped_ainvoke = _wrap_tool_async(orig)

    @functools.wraps(orig)
    async def ainvoke(self: Any, input: Any, config: Any = None, **kwargs: Any) -> Any:
        if not _State.active:
            return await orig(self, input, config, **kwargs)
        if asyncio.iscoroutinefunction(getattr(self, "func", None)):
            return await wrapped_ainvoke(self, input, config, **kwargs)
        call = propagate(functools.partial(wrapped_invoke, self, input, config, **kwargs))
        return await asyncio.get_running_loop().run_in_executor(None, call)

    return ainvoke


# --- the integration ----------------------------------------------------------------


def _version(text: str) -> tuple[int, ...]:
    parts: list[int] = []
    for piece in text.split(".")[:3]:
        digits = "".join(ch for ch in piece if ch.isdigit())
        if not digits:
            break
        parts.append(int(digits))
    return tuple(parts)


def _internal_flow_classes() -> tuple[type, ...]:
    """CrewAI's own agent-executor flow (its module moved between versions): not a user flow."""
    found: list[type] = []
    for module_name in ("crewai.agents.agent_executor", "crewai.experimental.agent_executor"):
        try:
            module = importlib.import_module(module_name)
        except ImportError:
            continue
        cls = getattr(module, "AgentExecutor", None)
        if isinstance(cls, type):
            found.append(cls)
    return tuple(found)


class CrewAIIntegration(Integration):
    """Records CrewAI crews, tasks, agents, flows and tools; see the module docstring."""

    identifier = "crewai"
    extra = "crewai"

    def __init__(self) -> None:
        self._patches: list[tuple[type, str, Any]] = []
        self._hooks: list[tuple[Callable[[Any], Any], Callable[[Any], Any]]] = []
        self._lock = threading.Lock()

    def setup(self) -> None:
        try:
            import crewai
            from crewai import Agent, Crew, Flow, Task
            from crewai.hooks import (
                get_after_tool_call_hooks,
                get_before_tool_call_hooks,
                register_after_tool_call_hook,
                register_before_tool_call_hook,
            )
            from crewai.tools.base_tool import BaseTool, Tool
            from crewai.tools.structured_tool import CrewStructuredTool
        except ImportError as exc:
            raise self.missing("crewai", f" or too old ({exc})") from exc
        version = _version(getattr(crewai, "__version__", "0"))
        if version < MIN_VERSION:
            raise self.missing("crewai", f" in a supported version (found {crewai.__version__})")
        internal = _internal_flow_classes()
        try:
            from crewai.execution import get_execution_uuid

            _State.get_execution_uuid = get_execution_uuid
        except ImportError:
            _State.get_execution_uuid = None
        with self._lock:
            self._patch(Crew, "kickoff", _wrap_crew_kickoff)
            self._patch(Crew, "akickoff", _wrap_crew_akickoff)
            self._patch(Crew, "kickoff_async", _wrap_stream_only)
            self._patch(Crew, "kickoff_for_each", _wrap_for_each)
            self._patch(Crew, "kickoff_for_each_async", _wrap_for_each_async)
            self._patch(Crew, "akickoff_for_each", _wrap_for_each_async)
            self._patch(Task, "_execute_core", lambda f: _wrap_task(f, False))
            self._patch(Task, "_aexecute_core", lambda f: _wrap_task(f, True))
            self._patch(Agent, "execute_task", lambda f: _wrap_agent_execute(f, False))
            self._patch(Agent, "aexecute_task", lambda f: _wrap_agent_execute(f, True))
            self._patch(Agent, "kickoff", lambda f: _wrap_agent_kickoff(f, False))
            self._patch(Agent, "kickoff_async", lambda f: _wrap_agent_kickoff(f, True))
            self._patch(Flow, "kickoff", lambda f: _wrap_flow_sync_stream(f, internal))
            self._patch(Flow, "kickoff_async", lambda f: _wrap_flow_kickoff(f, internal))
            self._patch(Flow, "_execute_method", lambda f: _wrap_flow_method(f, internal))
            for cls in (BaseTool, Tool):
                self._patch(cls, "run", _wrap_tool_sync)
                self._patch(cls, "arun", _wrap_tool_async)
            invoke = CrewStructuredTool.__dict__.get("invoke")
            self._patch(CrewStructuredTool, "invoke", _wrap_tool_sync)
            if invoke is not None:
                self._patch(CrewStructuredTool, "ainvoke", lambda f: _wrap_ainvoke(f, invoke))
            register_before_tool_call_hook(_before_tool)
            register_after_tool_call_hook(_after_tool)
            self._hooks.append((_before_tool, _after_tool))
            _State.hook_registry = (
                (get_before_tool_call_hooks, register_before_tool_call_hook),
                (get_after_tool_call_hooks, register_after_tool_call_hook),
            )
            _State.active = True

    def _patch(self, cls: type, attr: str, make: Callable[[Callable[..., Any]], Callable[..., Any]]) -> None:
        # Patch the class that defines it (e.g. crewai.Flow inherits kickoff_async from the runtime Flow).
        owner = next((klass for klass in cls.__mro__ if attr in klass.__dict__), None)
        if owner is None:
            return  # not in this version
        cls = owner
        original = cls.__dict__[attr]
        if getattr(original, _MARK, False):
            return  # already ours
        wrapper = make(original)
        setattr(wrapper, _MARK, True)
        setattr(cls, attr, wrapper)
        self._patches.append((cls, attr, original))

    def teardown(self) -> None:
        with self._lock:
            _State.active = False
            while self._patches:
                cls, attr, original = self._patches.pop()
                setattr(cls, attr, original)
            try:
                from crewai.hooks import unregister_after_tool_call_hook, unregister_before_tool_call_hook
            except ImportError:
                self._hooks.clear()
                return
            while self._hooks:
                before, after = self._hooks.pop()
                unregister_before_tool_call_hook(before)
                unregister_after_tool_call_hook(after)

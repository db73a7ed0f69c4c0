"""LlamaIndex adapter: agents and workflows, their steps, tools and LLM requests in the session DAG.

After :func:`openprogram.instrument` (name ``llama_index``), in the current session:

- every workflow run (``Workflow.run`` and each subclass's own ``run``) is one call, ended
  when the run ends: an ``agent`` call for ``FunctionAgent``, ``ReActAgent``, ``CodeActAgent``
  and ``AgentWorkflow`` (named after the agent, or the workflow's class), a ``flow`` call for
  any other workflow. Its input is the user message (a workflow's start arguments), its output
  the agent's answer (the workflow's result);
- every step a run executes is a ``node`` call under the run, named after the step, with the
  event it took and the event it returned (an agent's steps: their event types only, since
  the model calls under them hold the messages);
- in an ``AgentWorkflow``, each agent's turn is an ``agent`` call under the run, named after
  the agent, holding the steps it ran; the agent handed to is under the ``handoff`` tool call
  of the agent that handed over;
- every tool call (``FunctionTool``, ``QueryEngineTool``, any ``AsyncBaseTool``'s own ``call``
  and ``acall``) is a ``tool`` call; a tool the model named that the agent does not have is a
  ``tool`` call ending in error;
- every LLM chat request is an ``llm`` call (see :mod:`.models`).

Where it hooks, and why: a workflow run's steps run in asyncio tasks that ``Workflow.run``
creates, so the run's call is made current around ``run`` (the tasks copy it) and ended by the
run's result; the steps are wrapped where the runtime hands each one to LlamaIndex's
instrumentation dispatcher (``Dispatcher.span``, its public decorator, called per step), so a
step's call is current while it runs and everything it does nests under it. The dispatcher's
span and event handlers see the same points but cannot make a call current for what runs
inside (a handler that set context could not be sure to reset it); LlamaIndex's own
instrumentation, and any handler the user added, run unchanged. Before llama-index-core 0.14.22 a
sync tool function awaited through ``acall`` ran in the loop's executor without the caller's
context: ``function_tool.sync_to_async`` is wrapped there to carry it (later releases do it).
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import functools
import inspect
import sys
from collections.abc import Callable, Sequence
from typing import Any, ClassVar

from openprogram import get_current_session
from openprogram._kit import (
    Integration,
    LaterCall,
    Target,
    close_call,
    guarded,
    injected_arguments,
    log_once,
    open_call,
    records_itself,
    register_control_flow,
    run_session,
    wraps_like,
)
from openprogram._kit import last_run_session_id as _last_run_session_id

from .models import wrap_achat, wrap_astream_chat, wrap_chat, wrap_stream_chat

__all__ = ["LlamaIndexIntegration", "last_run_session_id"]

FRAMEWORK = "llama_index"
_LLM = "llama_index.core.base.llms.base:BaseLLM"
_TOOL = "llama_index.core.tools.types:AsyncBaseTool"
_AGENT_MODULES = ("llama_index.core.agent.workflow.base_agent", "llama_index.core.agent.workflow.multi_agent_workflow")


class LlamaIndexIntegration(Integration):
    """Records LlamaIndex agent and workflow runs, steps, tool calls and LLM requests; see the module docstring."""

    identifier: ClassVar[str] = "llama_index"
    framework: ClassVar[str] = FRAMEWORK
    distribution: ClassVar[str] = "llama-index-core"
    extra: ClassVar[str] = "llama-index"
    trigger: ClassVar[str] = "workflows"  # llama_index.core imports it; a workflows-only program too

    def targets(self) -> Sequence[Target]:
        return [
            Target("workflows.workflow:Workflow", "run", _wrap_run, overrides=True),
            Target("llama_index_instrumentation.dispatcher:Dispatcher", "span", _wrap_span),
            Target(_TOOL, "call", _wrap_tool_call, overrides=True, skip_owner=True),
            Target(_TOOL, "acall", _wrap_tool_acall, overrides=True, skip_owner=True),
            Target("llama_index.core.tools.function_tool", "sync_to_async", _carrying_context),
            Target(_LLM, "chat", wrap_chat, overrides=True, skip_owner=True),
            Target(_LLM, "achat", wrap_achat, overrides=True, skip_owner=True),
            Target(_LLM, "stream_chat", wrap_stream_chat, overrides=True, skip_owner=True),
            Target(_LLM, "astream_chat", wrap_astream_chat, overrides=True, skip_owner=True),
        ]

    def setup(self) -> None:
        with contextlib.suppress(ImportError):
            from workflows.errors import WorkflowCancelledByUser  # type: ignore[import-not-found, unused-ignore]

            register_control_flow(WorkflowCancelledByUser, "interrupted")
        with contextlib.suppress(ImportError):
            # A step paused until an event arrives (human in the loop): it runs again when it does.
            from workflows.runtime.types.results import WaitingForEvent  # type: ignore[import-not-found, unused-ignore]

            register_control_flow(WaitingForEvent, "interrupted")


def last_run_session_id() -> str | None:
    """Id of the session the most recent LlamaIndex run started with no session open recorded into.

    Runs started inside ``openprogram.session_context`` record into that session instead. The
    first run into each such session logs its id (logger ``openprogram``, level WARNING).
    """
    return _last_run_session_id(FRAMEWORK)


# --- workflow runs -----------------------------------------------------------------------------


class _Run:
    """One recorded workflow run, seen by its steps (they copy the context ``run`` made)."""

    __slots__ = ("agent", "agent_call", "agentic", "call", "handoff", "multi")

    def __init__(self, call: LaterCall, agentic: bool, multi: bool) -> None:
        self.call = call
        self.agentic = agentic  # an agent's steps: their messages are in the model calls
        self.multi = multi  # an AgentWorkflow: each agent's turn is a call of its own
        self.agent: str | None = None
        self.agent_call: LaterCall | None = None
        self.handoff: LaterCall | None = None  # the hand-off tool call the next agent's turn goes under

    def parent_for(self, event: Any) -> LaterCall:
        """The call a step taking ``event`` runs under: the run's, or (in an AgentWorkflow) the agent's turn."""
        if not self.multi:
            return self.call
        name = getattr(event, "current_agent_name", None)
        if isinstance(name, str) and name != self.agent:
            self.turn_to(name)
        elif name is not None:
            self.handoff = None  # a hand-off that did not happen (refused): the agent goes on
        return self.agent_call or self.call

    def turn_to(self, name: str) -> None:
        previous, handoff = self.agent, self.handoff
        if self.agent_call is not None:
            self.agent_call.end()
        self.agent, self.handoff = name, None
        attributes = {"handed_off_from": previous} if previous is not None else None
        with (handoff or self.call).current():
            self.agent_call = LaterCall.begin("agent", name, FRAMEWORK, None, attributes)

    def ended(self, exc: BaseException | None, output: Any, status: str | None) -> None:
        if self.agent_call is not None:
            self.agent_call.end(exc, None, None, status)
        self.call.end(exc, output, None, status)


# The run whose steps run in this context; the id of the workflow whose ``run`` is being recorded (an
# agent's ``run`` calls ``Workflow.run``: one run, one call). An id, not the workflow: the run's tasks
# and the timers they schedule copy this context, and must not keep the workflow alive.
_current_run: contextvars.ContextVar[_Run | None] = contextvars.ContextVar("openprogram.llama_index.run", default=None)
_entering: contextvars.ContextVar[int] = contextvars.ContextVar("openprogram.llama_index.entering", default=0)


def _wrap_run(original: Callable[..., Any], integration: Integration) -> Callable[..., Any]:
    """``Workflow.run`` (and each subclass's own): schedules the run's tasks and returns its handler."""

    def run(self: Any, *args: Any, **kwargs: Any) -> Any:
        if not integration.active or _entering.get() == id(self):
            return original(self, *args, **kwargs)
        state = _begin_run(self, args, kwargs)
        if state is None:
            return original(self, *args, **kwargs)
        run_token = _current_run.set(state)
        self_token = _entering.set(id(self))
        try:
            with state.call.current():  # the run's tasks, created in here, copy it
                handler = original(self, *args, **kwargs)
        except BaseException as exc:
            state.ended(exc, None, None)
            raise
        finally:
            _entering.reset(self_token)
            _current_run.reset(run_token)
        _end_with(handler, state)
        return handler

    return wraps_like(original)(run)


def _begin_run(workflow: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> _Run | None:
    with guarded(FRAMEWORK, "describing a workflow run"):
        agentic, multi = _agent_kind(workflow)
        name = str(getattr(workflow, "name", None) or "agent") if agentic and not multi else type(workflow).__name__
        if get_current_session() is None:
            run_session(FRAMEWORK, f"{'agent' if agentic else 'workflow'} {name!r}")  # the implicit session
        inputs = _run_inputs(args, kwargs, agentic)
        call = LaterCall.begin("agent" if agentic else "flow", name, FRAMEWORK, inputs)
        return None if call is None else _Run(call, agentic, multi)
    return None


def _agent_kind(workflow: Any) -> tuple[bool, bool]:
    """(an agent or an AgentWorkflow, an AgentWorkflow): read without importing the agent modules."""
    single, multi = (sys.modules.get(name) for name in _AGENT_MODULES)
    if multi is not None and isinstance(workflow, multi.AgentWorkflow):
        return True, True
    return single is not None and isinstance(workflow, single.BaseWorkflowAgent), False


def _run_inputs(args: tuple[Any, ...], kwargs: dict[str, Any], agentic: bool) -> Any:
    start = kwargs.get("start_event")
    if agentic:
        message = kwargs.get("user_msg")
        if message is None and args and not _is_context(args[0]):
            message = args[0]
        if message is None and start is not None:
            message = getattr(start, "user_msg", None)
        return None if message is None else {"user_msg": _text(message)}
    if start is not None:
        return {"start_event": start}
    given = {key: value for key, value in kwargs.items() if key not in ("ctx", "run_id")}
    return given or None


def _is_context(value: Any) -> bool:
    return type(value).__name__ == "Context" and type(value).__module__.startswith("workflows.")


def _text(message: Any) -> Any:
    """A user message given as text or as a ``ChatMessage``."""
    return message if isinstance(message, str) else getattr(message, "content", message)


def _end_with(handler: Any, state: _Run) -> None:
    """End the run's calls when its result is known: the handler's result task (a future, before 2.x.)."""
    try:
        future = handler if hasattr(handler, "add_done_callback") else handler._result_task
        future.add_done_callback(functools.partial(_run_done, state))
    except Exception as exc:
        log_once(FRAMEWORK, "following a workflow run to its end", exc)
        state.ended(None, None, None)


def _run_done(state: _Run, future: Any) -> None:
    with guarded(FRAMEWORK, "ending a workflow run"):
        if future.cancelled():
            state.ended(None, None, "interrupted")
            return
        exc = future.exception()
        if exc is not None:
            state.ended(exc, None, None)
            return
        state.ended(None, _run_output(future.result(), state.agentic), None)


def _run_output(result: Any, agentic: bool) -> Any:
    """The run's result: a ``StopEvent``'s ``result`` (the event itself when subclassed); an agent's answer."""
    if type(result).__name__ == "StopEvent":
        result = getattr(result, "result", result)
    if agentic:
        response = getattr(result, "response", None)
        return getattr(response, "content", result)
    return result


# --- steps -------------------------------------------------------------------------------------


def _wrap_span(original: Callable[..., Any], integration: Integration) -> Callable[..., Any]:
    """``Dispatcher.span``: the workflow runtime decorates each step invocation with it; that step becomes a node."""

    def span(self: Any, func: Callable[..., Any]) -> Callable[..., Any]:
        decorated: Callable[..., Any] = original(self, func)
        if not integration.active or getattr(func, "_step_config", None) is None:
            return decorated
        with guarded(FRAMEWORK, "wrapping a workflow step"):
            return _recorded_step(decorated, str(getattr(func, "__name__", "step")), inspect.iscoroutinefunction(func))
        return decorated

    return wraps_like(original)(span)


def _recorded_step(decorated: Callable[..., Any], name: str, is_async: bool) -> Callable[..., Any]:
    if is_async:

        async def async_step(*args: Any, **kwargs: Any) -> Any:
            node = _begin_step(name, args, kwargs)
            if node is None:
                return await decorated(*args, **kwargs)
            token = _current_step.set(node)
            try:
                with node.current():
                    result = await decorated(*args, **kwargs)
            except BaseException as exc:
                node.end(exc)
                raise
            finally:
                _current_step.reset(token)
            _step_done(node, result)
            return result

        return functools.update_wrapper(async_step, decorated)

    def step(*args: Any, **kwargs: Any) -> Any:
        node = _begin_step(name, args, kwargs)
        if node is None:
            return decorated(*args, **kwargs)
        token = _current_step.set(node)
        try:
            with node.current():
                result = decorated(*args, **kwargs)
        except BaseException as exc:
            node.end(exc)
            raise
        finally:
            _current_step.reset(token)
        _step_done(node, result)
        return result

    return functools.update_wrapper(step, decorated)


class _Step(LaterCall):
    """A step's node: its run, and whether a tool call was recorded in it (see :func:`_step_done`)."""

    __slots__ = ("agentic", "tool_recorded")
    agentic: bool
    tool_recorded: bool


_current_step: contextvars.ContextVar[_Step | None] = contextvars.ContextVar(
    "openprogram.llama_index.step", default=None
)


def _begin_step(name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> _Step | None:
    run = _current_run.get()
    if run is None:  # a run that is not recorded (begun before instrument(), or with no session)
        return None
    try:
        event = _event_of(args, kwargs)
        agentic = run.agentic
        with run.parent_for(event).current():
            inputs = None if agentic or event is None else {"event": event}
            node = _Step.begin("node", name, FRAMEWORK, inputs, {"event": type(event).__name__})
        if node is not None:
            node.agentic = agentic
            node.tool_recorded = False
        return node
    except Exception as exc:
        log_once(FRAMEWORK, "beginning a workflow step", exc)
        return None


def _event_of(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """The event a step was given: its one argument that is a workflow ``Event``."""
    for value in (*args, *kwargs.values()):
        if any(cls.__name__ == "Event" and cls.__module__ == "workflows.events" for cls in type(value).__mro__):
            return value
    return None


def _step_done(node: _Step, result: Any) -> None:
    output: Any = None
    with guarded(FRAMEWORK, "ending a workflow step"):
        if result is not None:
            output = {"event": type(result).__name__} if node.agentic else {"event": result}
        _record_unknown_tool(node, result)
    node.end(None, output)


def _record_unknown_tool(node: _Step, result: Any) -> None:
    """A tool the model named that the agent does not have: the agent answers with an error and calls nothing."""
    output = getattr(result, "tool_output", None)
    if node.tool_recorded or output is None or not getattr(output, "is_error", False):
        return
    name = str(getattr(result, "tool_name", "tool"))
    with node.current():
        unknown = LaterCall.begin("tool", name, FRAMEWORK, getattr(result, "tool_kwargs", None), {"executed": False})
    if unknown is not None:
        unknown.end(LookupError(str(getattr(output, "content", f"no tool named {name!r}"))))


# --- tools -------------------------------------------------------------------------------------

# The id of the tool whose call is being recorded: its ``acall`` running its own ``call`` is one call.
_in_tool: contextvars.ContextVar[int] = contextvars.ContextVar("openprogram.llama_index.tool", default=0)


def _wrap_tool_call(original: Callable[..., Any], integration: Integration) -> Callable[..., Any]:
    def call(self: Any, *args: Any, **kwargs: Any) -> Any:
        if not integration.active or _in_tool.get() == id(self):
            return original(self, *args, **kwargs)
        kwargs = _without_session(kwargs)
        hint = _self_recording(self)
        if hint is not None:  # an @openprogram.tool: it records its own call
            with _injected(hint):
                return original(self, *args, **kwargs)
        opened = _open_tool(self, args, kwargs)
        if opened is None:
            return original(self, *args, **kwargs)
        token = _in_tool.set(id(self))
        try:
            result = original(self, *args, **kwargs)
        except BaseException as exc:
            _in_tool.reset(token)
            close_call(opened, exc)
            raise
        _in_tool.reset(token)
        close_call(opened, None, _tool_output(result))
        return result

    return wraps_like(original)(call)


def _wrap_tool_acall(original: Callable[..., Any], integration: Integration) -> Callable[..., Any]:
    async def acall(self: Any, *args: Any, **kwargs: Any) -> Any:
        if not integration.active or _in_tool.get() == id(self):
            return await original(self, *args, **kwargs)
        kwargs = _without_session(kwargs)
        hint = _self_recording(self)
        if hint is not None:
            with _injected(hint):
                return await original(self, *args, **kwargs)
        opened = _open_tool(self, args, kwargs)
        if opened is None:
            return await original(self, *args, **kwargs)
        token = _in_tool.set(id(self))
        try:
            result = await original(self, *args, **kwargs)
        except BaseException as exc:
            _in_tool.reset(token)
            close_call(opened, exc)
            raise
        _in_tool.reset(token)
        close_call(opened, None, _tool_output(result))
        return result

    return wraps_like(original)(acall)


def _carrying_context(original: Callable[..., Any], integration: Integration) -> Callable[..., Any]:
    """``sync_to_async``: before 0.14.22 a sync tool function awaited through ``acall`` ran in the loop's
    executor without the caller's context (no session in the tool); later releases copy it themselves."""
    inner = [const for const in original.__code__.co_consts if inspect.iscode(const)]
    if any("copy_context" in code.co_names for code in inner):
        return original

    def sync_to_async(fn: Callable[..., Any]) -> Callable[..., Any]:
        if not integration.active:
            made: Callable[..., Any] = original(fn)
            return made

        async def in_callers_context(*args: Any, **kwargs: Any) -> Any:
            context = contextvars.copy_context()
            return await asyncio.get_running_loop().run_in_executor(None, lambda: context.run(fn, *args, **kwargs))

        return in_callers_context

    return wraps_like(original)(sync_to_async)


def _open_tool(tool: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    try:
        name = str(tool.metadata.get_name())
        injected = getattr(tool, "ctx_param_name", None)
        inputs: Any = {key: value for key, value in kwargs.items() if key != injected}
        if args:
            inputs = {"args": list(args), **inputs} if inputs else (args[0] if len(args) == 1 else list(args))
    except Exception as exc:
        log_once(FRAMEWORK, "describing a tool call", exc)
        return None
    step = _current_step.get()
    opened = open_call("tool", name, FRAMEWORK, inputs)
    if opened is not None and step is not None:
        step.tool_recorded = True
    run = _current_run.get()
    if opened is not None and run is not None and run.multi and name == "handoff":
        run.handoff = LaterCall.of(opened, FRAMEWORK)  # the next agent's turn goes under it
    return opened


def _tool_output(result: Any) -> Any:
    """A ``ToolOutput``'s content (what the model is given); any other result as it is."""
    content = getattr(result, "content", None)
    return result if content is None else content


def _without_session(kwargs: dict[str, Any]) -> dict[str, Any]:
    """The model's arguments without a ``_session`` (never let a model choose the session)."""
    if "_session" in kwargs:
        return {key: value for key, value in kwargs.items() if key != "_session"}
    return kwargs


def _self_recording(tool: Any) -> list[tuple[frozenset[str], frozenset[str]]] | None:
    """For a ``FunctionTool`` over an ``@openprogram.tool``: the injected-arguments hint (its ``Context``
    parameter, not captured); None for any other tool."""
    try:
        if not records_itself(tool, "fn", "async_fn"):
            return None
        injected = getattr(tool, "ctx_param_name", None)
        if not injected:
            return []
        function = tool.fn if records_itself(tool, "fn") else tool.async_fn
        return [(frozenset({function.__openprogram_tool__}), frozenset({injected}))]
    except Exception as exc:
        log_once(FRAMEWORK, "finding a tool's function", exc)
        return None


@contextlib.contextmanager
def _injected(hint: list[tuple[frozenset[str], frozenset[str]]]) -> Any:
    token = injected_arguments.set(hint) if hint else None
    try:
        yield
    finally:
        if token is not None:
            injected_arguments.reset(token)

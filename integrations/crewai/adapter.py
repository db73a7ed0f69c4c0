"""CrewAI adapter: crew -> task -> agent -> llm / tool (and flow -> method) in the session DAG.

After :func:`openprogram.instrument`, every crew, task, agent, flow, model request
and tool — including those built before it — records into the current session, and
the current session is visible inside every tool, on every way CrewAI runs. Model
requests are recorded by :mod:`openprogram.integrations.crewai.models`. A flow
records its kickoff inputs, and each flow method its return value (a router's route).

Tool calls are recorded where CrewAI runs its before/after tool-call hooks, inside the
functions executing one tool call (``execute_tool_and_check_finality``, the native-call
executors): around its own hook runners (``run_before_tool_call_hooks`` /
``run_after_tool_call_hooks``), so that openprogram adds no hook to CrewAI's registry;
on releases without them (before 1.15.3) by global hooks of its own. The begin comes
after the user's before-hooks (what the tool receives), the end after their after-hooks
(what the agent is told). The begin does not make the call current, the tool's own run
makes it current for its body only; nothing sets a context variable, and a call whose
end never comes ends with its execution.

A run started with no session open records into the process's implicit session, unless
it continues a conversation: a flow state that outlives the run, or an execution id its
host set; then into the session bound to that identity (see :func:`last_run_session_id`).
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import functools
import inspect
import logging
import threading
from collections.abc import Callable, Iterator, Sequence, Sized
from types import TracebackType
from typing import Any

import openprogram
from openprogram._kit import (
    Integration,
    LaterCall,
    RunEntry,
    Target,
    ToolCallRejected,
    Wrap,
    async_steps_in_current_context,
    guarded,
    propagate,
    recorded,
    records_itself,
    rejected_tool_call,
    run_session,
    shape_of,
    steps_in_current_context,
    tool_call,
)
from openprogram._kit import last_run_session_id as _last_run_session_id

from .models import MODEL_TARGETS

__all__ = ["CrewAIIntegration", "last_run_session_id"]

logger = logging.getLogger("openprogram")

FRAMEWORK = "crewai"
_NAME_LIMIT = 80
_CREW, _TASK, _AGENT = "crewai.crew:Crew", "crewai.task:Task", "crewai.agent.core:Agent"
_FLOW = "crewai.flow.runtime:Flow"
_TOOLS = ("crewai.tools.base_tool:BaseTool", "crewai.tools.base_tool:Tool")
_STRUCTURED = "crewai.tools.structured_tool:CrewStructuredTool"
_BLOCKED = "Tool execution blocked by hook"  # what CrewAI tells the agent of a call a before-hook blocked

# The functions that execute one tool call between the two hooks, under every name a module
# imported them by (a `from ... import` binding is patched in the module that holds it).
_TOOL_EXECUTIONS = {
    "crewai.utilities.tool_utils": ("execute_tool_and_check_finality", "aexecute_tool_and_check_finality"),
    "crewai.utilities.agent_utils": ("execute_single_native_tool_call",),
    "crewai.agents.agent_executor": ("execute_tool_and_check_finality",),
    "crewai.agents.agent_executor:AgentExecutor": ("_execute_single_native_tool_call",),
    "crewai.experimental.agent_executor": ("execute_tool_and_check_finality",),
    "crewai.experimental.agent_executor:AgentExecutor": ("_execute_single_native_tool_call",),
    "crewai.agents.crew_agent_executor": ("execute_tool_and_check_finality", "aexecute_tool_and_check_finality"),
    "crewai.agents.crew_agent_executor:CrewAgentExecutor": ("_execute_single_native_tool_call",),
    "crewai.agents.step_executor": ("execute_tool_and_check_finality", "execute_single_native_tool_call"),
    "crewai.lite_agent": ("execute_tool_and_check_finality",),
}
# Where CrewAI runs its tool hooks (1.15.3 and later), under every name a module imported them by.
_HOOK_RUNNERS = ("crewai.hooks.tool_hooks", "crewai.utilities.tool_utils", "crewai.agents.agent_executor")
# CrewAI's own agent loop is a Flow (its module moved between versions): not a user's flow.
_INTERNAL_FLOW_MODULES = frozenset({"crewai.agents.agent_executor", "crewai.experimental.agent_executor"})


class CrewAIIntegration(Integration):
    """Records CrewAI crews, tasks, agents, flows and tools; see the module docstring."""

    identifier = "crewai"
    framework = FRAMEWORK
    distribution = "crewai"
    extra = "crewai"
    trigger = "crewai"

    def targets(self) -> Sequence[Target]:
        crew = recorded("crew", _describe_crew, output=_output_of, run_session=_crew_run)
        for_each = recorded("crew", _describe_for_each, output=_output_of, run_session=_for_each_run)
        task = recorded("task", _describe_task, output=_output_of, run_session=_bind_execution)
        agent = recorded("agent", _describe_agent_task, output=_output_of, run_session=_bind_execution)
        flow = recorded("flow", _describe_flow, output=_flow_output, run_session=_flow_run)
        return [
            Target(_CREW, "kickoff", _binding_streams(crew)),
            Target(_CREW, "akickoff", _binding_streams(crew)),
            Target(_CREW, "kickoff_async", _binding_streams()),  # runs kickoff, recorded there
            Target(_CREW, "kickoff_for_each", for_each),
            Target(_CREW, "kickoff_for_each_async", _binding_streams(for_each)),
            Target(_CREW, "akickoff_for_each", _binding_streams(for_each)),
            Target(_TASK, "_execute_core", task),
            Target(_TASK, "_aexecute_core", task),
            Target(_AGENT, "execute_task", agent),
            Target(_AGENT, "aexecute_task", agent),
            Target(_AGENT, "kickoff", _agent_kickoff(awaited=False)),
            Target(_AGENT, "kickoff_async", _agent_kickoff(awaited=True)),
            Target(_FLOW, "kickoff", _binding_streams()),  # runs kickoff_async, recorded there
            Target(_FLOW, "kickoff_async", _binding_streams(flow)),
            Target(_FLOW, "_execute_method", _flow_method),
            *(Target(owner, name, _tool_run) for owner in _TOOLS for name in ("run", "arun")),
            Target(_STRUCTURED, "invoke", _tool_run),
            Target(_STRUCTURED, "ainvoke", _structured_ainvoke),
            *(Target(owner, name, _tool_execution) for owner, names in _TOOL_EXECUTIONS.items() for name in names),
            *(Target(module, "run_before_tool_call_hooks", _around_before_hooks) for module in _HOOK_RUNNERS),
            *(Target(module, "run_after_tool_call_hooks", _around_after_hooks) for module in _HOOK_RUNNERS),
            *MODEL_TARGETS,
        ]

    def setup(self) -> None:
        from crewai.hooks import (
            get_after_tool_call_hooks,
            get_before_tool_call_hooks,
            register_after_tool_call_hook,
            register_before_tool_call_hook,
            tool_hooks,
        )

        try:
            from crewai.execution import get_execution_uuid
        except ImportError:  # crewai.execution came in a later 1.15.x
            _CrewAI.execution_uuid = None
        else:
            _CrewAI.execution_uuid = get_execution_uuid
        # A registered hook would make CrewAI dispatch, emit and report an event of its own for every
        # tool call: where its hook runners exist, they are wrapped instead (the table's rows).
        if hasattr(tool_hooks, "run_before_tool_call_hooks"):
            _CrewAI.hooks = ()
        else:
            _CrewAI.hooks = (
                (get_before_tool_call_hooks, register_before_tool_call_hook, _before_tool),
                (get_after_tool_call_hooks, register_after_tool_call_hook, _after_tool),
            )
        _CrewAI.integration = self
        _register_hooks()

    def teardown(self) -> None:
        from crewai.hooks import unregister_after_tool_call_hook, unregister_before_tool_call_hook

        if _CrewAI.hooks:
            unregister_before_tool_call_hook(_before_tool)
            unregister_after_tool_call_hook(_after_tool)
        if _CrewAI.integration is self:
            _CrewAI.integration = None


def last_run_session_id() -> str | None:
    """Id of the session the most recent CrewAI run started with no session open recorded into.

    Runs started inside ``openprogram.session_context`` record into that session
    instead. The first run into each such session logs its id (logger ``openprogram``,
    level WARNING).
    """
    return _last_run_session_id(FRAMEWORK)


class _CrewAI:
    """What setup() found in CrewAI, and the integration whose tool hooks are registered there."""

    integration: CrewAIIntegration | None = None
    execution_uuid: Callable[[], Any] | None = None  # crewai.execution.get_execution_uuid
    # (get, register, our hook) for the before- and after-tool hooks
    hooks: tuple[tuple[Callable[[], list[Any]], Callable[[Any], Any], Callable[[Any], None]], ...] = ()
    lock = threading.Lock()
    warned = False


def _enabled() -> bool:
    integration = _CrewAI.integration
    return integration is not None and integration.active


def _register_hooks(*, again: bool = False) -> None:
    """Register our tool hooks where CrewAI's registry lacks them.

    ``again``: put them back if CrewAI's global hooks were cleared since ``instrument()``
    (``crewai.hooks.clear_all_global_hooks()``): without them a tool call loses its agent,
    cached and blocked calls go unrecorded, and a model could pass ``_session`` through.
    """
    if not _CrewAI.hooks:
        return  # the hook runners are wrapped: nothing in CrewAI's registry to keep
    with guarded(FRAMEWORK, "registering the tool hooks"):
        if all(hook in get() for get, _, hook in _CrewAI.hooks):
            return
        with _CrewAI.lock:
            for get, register, hook in _CrewAI.hooks:
                if hook not in get():
                    register(hook)
                    if again and not _CrewAI.warned:
                        _CrewAI.warned = True
                        logger.warning(
                            "openprogram: CrewAI's global tool hooks were cleared; openprogram registered "
                            "its own again (openprogram.uninstrument() removes them)"
                        )


# --- names and captures ----------------------------------------------------------------


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


def _tool_name(tool: Any) -> str:
    return _short(getattr(tool, "name", None) or type(tool).__name__)


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


def _flow_output(value: Any) -> Any:
    """What a flow or flow method returned: a crew's or an agent's output as its text, anything else as it is."""
    raw = getattr(value, "raw", None)
    return raw if isinstance(raw, str) else value


def _method_output(result: Any) -> Any:
    """A flow method's return value (``_execute_method`` returns it with its finished event's id)."""
    return _flow_output(result[0] if isinstance(result, tuple) and len(result) == 2 else result)


def _kickoff_inputs(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    inputs = kwargs.get("inputs", args[0] if args else None)
    return {"inputs": inputs} if inputs else None


# Flow type -> whether it is CrewAI's own agent loop: asked for every method of every flow run.
_internal_types: dict[type[Any], bool] = {}


def _is_internal(flow: Any) -> bool:
    flow_type = type(flow)
    internal = _internal_types.get(flow_type)
    if internal is None:
        internal = any(klass.__module__ in _INTERNAL_FLOW_MODULES for klass in flow_type.__mro__)
        if len(_internal_types) < 256:  # bounded: a program may define flow classes on the fly
            _internal_types[flow_type] = internal
    return internal


def _records_itself(tool: Any) -> bool:
    """A tool whose function is an ``@openprogram.tool`` records its own call: do not record it twice."""
    tool = getattr(tool, "_original_tool", None) or tool  # the BaseTool behind a CrewStructuredTool
    return records_itself(tool, "func", "_run", "_arun")


def _in_event_loop() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


def _describe_crew(crew: Any, *args: Any, **kwargs: Any) -> tuple[str, Any] | None:
    if getattr(crew, "stream", False):
        return None  # the run happens later, in CrewAI's worker, which calls kickoff again
    return _crew_name(crew), _kickoff_inputs(args, kwargs)


def _describe_for_each(crew: Any, inputs: Any = None, *args: Any, **kwargs: Any) -> tuple[str, Any]:
    runs = len(inputs) if isinstance(inputs, Sized) else None
    return _crew_name(crew) + " (for each)", {"runs": runs}


def _describe_task(task: Any, *args: Any, **kwargs: Any) -> tuple[str, Any]:
    return _task_name(task), None


def _describe_agent_task(agent: Any, task: Any = None, *args: Any, **kwargs: Any) -> tuple[str, Any]:
    _register_hooks(again=True)
    return _agent_name(agent), {"task": _task_name(task)}


def _describe_flow(flow: Any, *args: Any, **kwargs: Any) -> tuple[str, Any] | None:
    if _is_internal(flow) or getattr(flow, "stream", False):
        return None
    return _flow_name(flow), _kickoff_inputs(args, kwargs)


def _describe_method(flow: Any, method_name: Any = None, *args: Any, **kwargs: Any) -> tuple[str, Any] | None:
    return None if _is_internal(flow) else (_short(method_name), None)


def _describe_direct_run(tool: Any, *args: Any, **kwargs: Any) -> tuple[str, Any] | None:
    return None if _records_itself(tool) else (_tool_name(tool), kwargs or list(args))


# --- run identity ------------------------------------------------------------------------


def _execution_uuid() -> str | None:
    value = _CrewAI.execution_uuid() if _CrewAI.execution_uuid is not None else None
    return value if isinstance(value, str) else None


def _execution_run(what: str) -> RunEntry | None:
    """A crew or agent run: outside a session, the implicit session, or the one bound to the execution id
    its host set before the kickoff (CrewAI mints one only inside the outermost kickoff)."""
    return run_session(FRAMEWORK, what, _execution_uuid(), runtime=what)


def _crew_run(crew: Any, *args: Any, **kwargs: Any) -> RunEntry | None:
    return None if getattr(crew, "stream", False) else _execution_run(f"crew {_crew_name(crew)!r}")


def _for_each_run(crew: Any, *args: Any, **kwargs: Any) -> RunEntry | None:
    return _execution_run(f"crew {_crew_name(crew) + ' (for each)'!r}")


def _bind_execution(*args: Any, **kwargs: Any) -> None:
    """A task or agent run: bind CrewAI's execution id (minted inside the outermost kickoff) to the session."""
    if openprogram.get_current_session() is not None:
        run_session(FRAMEWORK, "execution", _execution_uuid())  # inside a session: binds, opens nothing


def _flow_state_id(flow: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> str | None:
    """The id of the state the flow run continues, when that state outlives the run; else None.

    It does when the caller names it (``inputs["id"]``, ``restore_from_state_id``) or the
    flow persists its state (``@persist``, a ``persistence`` backend): a later kickoff,
    here or in another process, can restore it. Else the id is the object's own.
    """
    inputs = kwargs.get("inputs", args[0] if args else None)
    if isinstance(inputs, dict) and inputs.get("id"):
        return str(inputs["id"])
    if kwargs.get("restore_from_state_id"):
        return str(kwargs["restore_from_state_id"])
    try:
        if getattr(flow, "persistence", None) is None:
            return None
        value = flow.flow_id
    except Exception:
        return None
    return str(value) if value else None


def _flow_run(flow: Any, *args: Any, **kwargs: Any) -> RunEntry | None:
    if _is_internal(flow) or getattr(flow, "stream", False):
        return None
    what = f"flow {_flow_name(flow)!r}"
    state_id = _flow_state_id(flow, args, kwargs)
    if state_id is None:
        return _execution_run(what)
    return run_session(
        FRAMEWORK, what, state_id, namespace="crewai.flow", runtime=what, conversation=f"flow state {state_id!r}"
    )


def _agent_kickoff(*, awaited: bool) -> Wrap:
    """``Agent.kickoff`` / ``kickoff_async``: an agent run of its own, outside any crew."""

    def runs_here() -> bool:
        # Inside a running loop (a Flow method) the sync kickoff returns kickoff_async's
        # coroutine: that call records when it is awaited.
        return awaited or not _in_event_loop()

    def describe(agent: Any, messages: Any = None, *args: Any, **kwargs: Any) -> tuple[str, Any] | None:
        if not runs_here():
            return None
        _register_hooks(again=True)
        return _agent_name(agent), {"messages": messages}

    def entry(agent: Any, *args: Any, **kwargs: Any) -> RunEntry | None:
        return _execution_run(f"agent {_agent_name(agent)!r}") if runs_here() else None

    return recorded("agent", describe, output=_output_of, run_session=entry)


def _flow_method(original: Callable[..., Any], integration: Integration) -> Callable[..., Any]:
    """``Flow._execute_method``: a user's flow method is a ``call``; CrewAI's own agent loop passes straight through."""
    method = recorded("call", _describe_method, output=_method_output)(original, integration)
    if shape_of(original) != "coroutine":
        return method

    async def _execute_method(self: Any, *args: Any, **kwargs: Any) -> Any:
        # The agent loop runs dozens of methods a crew run: one frame of ours each, not the recorder's.
        if _is_internal(self):
            return await original(self, *args, **kwargs)
        return await method(self, *args, **kwargs)

    return functools.update_wrapper(_execute_method, original)


# --- streams consumed elsewhere ----------------------------------------------------------


def _bind_stream(result: Any) -> Any:
    """Make a lazily started stream (CrewAI starts its worker at the first chunk) run in the context current now."""
    is_stream = hasattr(result, "_sync_iterator") or hasattr(result, "_async_iterator")
    if not is_stream or openprogram.get_current_session() is None:
        return result  # with no session, the run inside the stream opens its own
    with guarded(FRAMEWORK, "binding a stream to the session"):
        sync_iterator = getattr(result, "_sync_iterator", None)
        if inspect.isgenerator(sync_iterator):
            result._sync_iterator = steps_in_current_context(sync_iterator)
        async_iterator = getattr(result, "_async_iterator", None)
        if inspect.isasyncgen(async_iterator):
            result._async_iterator = async_steps_in_current_context(async_iterator)
    return result


def _binding_streams(wrap: Wrap | None = None) -> Wrap:
    """``wrap`` (or the original), and a stream the run returns (``stream=True``) keeps the caller's session."""

    def make(original: Callable[..., Any], integration: Integration) -> Callable[..., Any]:
        inner = original if wrap is None else wrap(original, integration)
        replacement: Callable[..., Any]
        if shape_of(original) == "coroutine":

            async def replacement(*args: Any, **kwargs: Any) -> Any:
                if not integration.active:
                    return await original(*args, **kwargs)
                return _bind_stream(await inner(*args, **kwargs))

        else:

            def replacement(*args: Any, **kwargs: Any) -> Any:
                if not integration.active:
                    return original(*args, **kwargs)
                return _bind_stream(inner(*args, **kwargs))

        return functools.update_wrapper(replacement, original)

    return make


# --- tool calls --------------------------------------------------------------------------


class _ToolRun:
    """One tool call CrewAI executes: the call its before-hook began, and what the tool's own run did.

    ``with run:`` is the tool's body: the call is current inside, and its error noted.
    """

    __slots__ = ("call", "error", "hooked", "missing", "ran", "running")

    def __init__(self) -> None:
        self.call: LaterCall | None = None
        self.error: BaseException | None = None
        self.hooked = False  # CrewAI ran its before-tool hooks: it did not refuse the call outright
        self.missing = False  # the hooks were given no tool: the model named one the agent does not have
        self.ran = False
        self.running = False

    def __enter__(self) -> None:
        assert self.call is not None
        self.ran = self.running = True
        self.call.__enter__()

    def __exit__(self, et: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        assert self.call is not None
        self.call.__exit__(et, exc, tb)
        self.running = False
        self.error = exc  # the last attempt's: a retry that succeeded clears it

    def end(self, output: Any, exc: BaseException | None = None) -> None:
        """End the call (once); one CrewAI did not run (cached, blocked, usage limit) is ``executed: false``,
        and one of a tool the agent does not have ends in error, with what CrewAI told the agent."""
        if self.call is not None:
            if exc is None and self.missing and not self.ran and not str(output).startswith(_BLOCKED):
                exc = ToolCallRejected(str(output))
            self.call.end(exc or self.error, output, None if self.ran else {"executed": False})


_executing: contextvars.ContextVar[_ToolRun | None] = contextvars.ContextVar("openprogram.crewai.tool", default=None)
"""The tool call being executed: set by the tool-execution wrapper only, which resets it."""


def _pending_run() -> _ToolRun | None:
    """The tool call the before-hook began for the run starting now, if any (not one already running)."""
    run = _executing.get()
    if run is None or run.call is None or run.running or run.call.ended:
        return None
    return run


def _withhold_session(context: Any) -> None:
    tool_input = context.tool_input
    if isinstance(tool_input, dict):
        tool_input.pop("_session", None)  # never let a model choose the session


def _begin_tool(context: Any) -> None:
    """Begin the call of the tool execution running now (not current yet: the tool's own run makes it so)."""
    run = _executing.get()
    if run is not None:
        run.hooked = True
        run.missing = context.tool is None  # the native paths look the tool up by the model's name
    if run is None or run.call is not None or _records_itself(context.tool):
        return  # outside a tool execution we wrap, the tool's run records it
    agent = context.agent
    attributes = {"agent": _agent_name(agent)} if agent is not None else None
    run.call = LaterCall.begin("tool", str(context.tool_name), FRAMEWORK, context.tool_input, attributes)


def _end_tool(context: Any) -> None:
    run = _executing.get()
    if run is not None:
        run.end(context.tool_result)


def _before_tool(context: Any) -> None:
    """The global before-tool hook registered where CrewAI has no hook runners to wrap."""
    if _enabled():
        with guarded(FRAMEWORK, "the before-tool hook"):
            _withhold_session(context)
            _begin_tool(context)


def _after_tool(context: Any) -> None:
    """The global after-tool hook registered where CrewAI has no hook runners to wrap."""
    if _enabled():
        with guarded(FRAMEWORK, "the after-tool hook"):
            _end_tool(context)


def _around_before_hooks(original: Callable[..., Any], integration: Integration) -> Callable[..., Any]:
    """CrewAI's ``run_before_tool_call_hooks``: the user's hooks see no ``_session``; the call begins after them."""

    def run_before_tool_call_hooks(context: Any) -> Any:
        if not _enabled():
            return original(context)
        with guarded(FRAMEWORK, "before the before-tool hooks"):
            _withhold_session(context)
        blocked = original(context)
        with guarded(FRAMEWORK, "after the before-tool hooks"):
            _begin_tool(context)  # a blocked call too: it ends as not executed
        return blocked

    return functools.update_wrapper(run_before_tool_call_hooks, original)


def _around_after_hooks(original: Callable[..., Any], integration: Integration) -> Callable[..., Any]:
    """CrewAI's ``run_after_tool_call_hooks``: the call ends after them, with the result the agent is told."""

    def run_after_tool_call_hooks(context: Any) -> Any:
        if not _enabled():
            return original(context)
        result = original(context)
        with guarded(FRAMEWORK, "after the after-tool hooks"):
            _end_tool(context)
        return result

    return functools.update_wrapper(run_after_tool_call_hooks, original)


def _result_of(execution: Any) -> Any:
    """The tool result in what a tool execution returns (a ``ToolResult``, a native call's result or dict)."""
    if isinstance(execution, dict):
        return execution.get("result")
    return getattr(execution, "result", None)


@contextlib.contextmanager
def _executing_one() -> Iterator[_ToolRun]:
    """The span of one tool execution: the call its before-hook begins ends with it at the latest."""
    run = _ToolRun()
    token = _executing.set(run)
    try:
        yield run
    except BaseException as exc:  # what CrewAI does not catch (Ctrl-C, cancellation) or raises itself
        run.end(None, exc)
        raise
    finally:
        _executing.reset(token)


def _tool_execution(original: Callable[..., Any], integration: Integration) -> Callable[..., Any]:
    """A function executing one tool call between the hooks; it ends the call if the after-hook did not."""
    # The switch is the enabled integration's, not this one's: a module that imported the function
    # from one already patched keeps this wrapper for good.
    replacement: Callable[..., Any]
    if shape_of(original) == "coroutine":

        async def replacement(*args: Any, **kwargs: Any) -> Any:
            if not _enabled():
                return await original(*args, **kwargs)
            with _executing_one() as run:
                result = await original(*args, **kwargs)
            run.end(_result_of(result))  # if no after-hook ended it (cleared, or none on this path)
            if not run.hooked:
                _refused(args, kwargs, result)
            return result

    else:

        def replacement(*args: Any, **kwargs: Any) -> Any:
            if not _enabled():
                return original(*args, **kwargs)
            with _executing_one() as run:
                result = original(*args, **kwargs)
            run.end(_result_of(result))
            if not run.hooked:
                _refused(args, kwargs, result)
            return result

    return functools.update_wrapper(replacement, original)


def _refused(args: tuple[Any, ...], kwargs: dict[str, Any], result: Any) -> None:
    """A tool call CrewAI answered without running its hooks: a tool the agent does not have (text
    actions), arguments it could not parse, an action it could not read. A failed tool call."""
    with guarded(FRAMEWORK, "recording a tool call it refused"):
        action = kwargs.get("agent_action") or (args[0] if args else None)
        name, arguments = getattr(action, "tool", None), getattr(action, "tool_input", None)
        found = result if isinstance(result, dict) else vars(result) if hasattr(result, "__dict__") else {}
        name = name or found.get("func_name")
        arguments = tool_call(None, None, arguments)["arguments"] if arguments else None  # JSON text decoded
        rejected_tool_call(
            FRAMEWORK, str(name or "unknown tool"), arguments, str(_result_of(result)), found.get("call_id") or None
        )


def _tool_run(original: Callable[..., Any], integration: Integration) -> Callable[..., Any]:
    """A tool's own run: the body of the call the before-hook began for it, else a call of its own (a direct run)."""
    direct = recorded("tool", _describe_direct_run, output=_output_of)(original, integration)
    replacement: Callable[..., Any]
    if shape_of(original) == "coroutine":

        async def replacement(*args: Any, **kwargs: Any) -> Any:
            run = _pending_run() if integration.active else None
            if run is None:
                return await direct(*args, **kwargs)
            with run:
                return await original(*args, **kwargs)

    else:

        def replacement(*args: Any, **kwargs: Any) -> Any:
            run = _pending_run() if integration.active else None
            if run is None:
                return direct(*args, **kwargs)
            with run:
                return original(*args, **kwargs)

    return functools.update_wrapper(replacement, original)


def _structured_ainvoke(original: Callable[..., Any], integration: Integration) -> Callable[..., Any]:
    """``CrewStructuredTool.ainvoke``: a sync tool runs in an executor with the caller's context.

    CrewAI's own ``run_in_executor`` drops the context and leaves an async ``@tool``'s coroutine
    unawaited; ``invoke`` run there under :func:`openprogram.propagate` keeps one and awaits the other.
    """
    run = _tool_run(original, integration)

    async def ainvoke(self: Any, input: Any, config: Any = None, **kwargs: Any) -> Any:
        if not integration.active or inspect.iscoroutinefunction(getattr(self, "func", None)):
            return await run(self, input, config, **kwargs)
        invoke = propagate(functools.partial(self.invoke, input, config, **kwargs))
        return await asyncio.get_running_loop().run_in_executor(None, invoke)

    return functools.update_wrapper(ainvoke, original)

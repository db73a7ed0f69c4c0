"""OpenAI Agents SDK adapter: agent -> hand-off -> agent, with their model requests, tools and guardrails.

After ``openprogram.instrument()`` (name ``agents``, also ``openai_agents``), every
``Runner.run`` / ``run_sync`` / ``run_streamed`` records, in the current session:

- one ``agent`` call per agent turn — from the run's start, or from a hand-off, until
  the run ends: the agent handed to is under its hand-off (a ``call`` named after the
  hand-off tool), which is under the agent that handed off; an agent used as a tool
  runs under that tool's call. Every call of the chain ends with the run's outcome;
- one ``llm`` call per request to a ``Model`` (``get_response``, ``stream_response``:
  every subclass's own, including the user's and those defined later), with its usage;
- one ``tool`` call per function tool invocation (sync, async, MCP, agent-as-tool); a
  tool error the SDK turns into a message for the model is the call's error; a call of a tool
  the agent does not have is a ``tool`` call ending ``error`` too, whether the SDK fails the run
  (its default) or tells the model (``tool_not_found_behavior="return_error_to_model"``);
- one ``call`` per guardrail (input, output, tool input, tool output), under its agent.

The hooks are the SDK's own seams between run, turn, hand-off and tool (the table in
:meth:`OpenAIAgentsIntegration.targets`). Tools and guardrails run in the runner's
asyncio tasks and threads, which copy the context: the session is visible there. A
run started with no session open records into the session bound to its SDK session id,
conversation id or trace group id, else into the process's implicit session: see
:func:`last_run_session_id`.
The SDK's own tracing is not touched; openprogram sends nothing anywhere.
"""

from __future__ import annotations

import functools
import json
import threading
import weakref
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Mapping, Sequence
from contextvars import ContextVar
from typing import Any, ClassVar, cast

from openprogram import NoSessionError, get_current_session, session_context
from openprogram._kit import (
    ORIGINAL,
    Integration,
    LaterCall,
    ModelCall,
    ModelStream,
    RunEntry,
    Target,
    async_steps_under_call,
    close_call,
    close_inner,
    content_captured,
    guarded,
    log_once,
    message,
    model_inputs,
    open_call,
    records_itself,
    rejected_tool_call,
    reply,
    run_blocking,
    run_session,
    shape_of,
    tool_call,
    usage,
    wraps_like,
)
from openprogram._kit import last_run_session_id as _last_run_session_id

from .session import OpenProgramSession

__all__ = ["OpenAIAgentsIntegration", "last_run_session_id"]

FRAMEWORK = "openai_agents"
_RUN_LOOP = "agents.run_internal.run_loop"
_TURN_RESOLUTION = "agents.run_internal.turn_resolution"
_MODEL = "agents.models.interface:Model"
# The function invoking one function tool, under each name a module imported it by (0.14: the first;
# later releases route it through the second).
_TOOL_INVOCATIONS = {
    "agents.tool": ("invoke_function_tool", "_invoke_function_tool_with_metadata"),
    "agents.run_internal.tool_execution": ("invoke_function_tool", "_invoke_function_tool_with_metadata"),
    "agents.realtime.session": ("invoke_function_tool",),
}
_GUARDRAILS = {
    "agents.guardrail:InputGuardrail": "input",
    "agents.guardrail:OutputGuardrail": "output",
    "agents.tool_guardrails:ToolInputGuardrail": "tool_input",
    "agents.tool_guardrails:ToolOutputGuardrail": "tool_output",
}
# Model settings recorded as a request's params, when set.
_PARAMS = (
    "temperature",
    "top_p",
    "max_tokens",
    "frequency_penalty",
    "presence_penalty",
    "tool_choice",
    "parallel_tool_calls",
    "truncation",
    "store",
    "top_logprobs",
    "verbosity",
)
_OPENAI_MODELS = frozenset({"OpenAIResponsesModel", "OpenAIChatCompletionsModel"})
_PREFIXED_MODELS = frozenset({"LitellmModel", "AnyLLMModel"})  # "provider/model" names


class OpenAIAgentsIntegration(Integration):
    """Records OpenAI Agents SDK runs, hand-offs, model requests, tools and guardrails; see the module docstring."""

    identifier = "agents"
    framework = FRAMEWORK
    distribution = "openai-agents"
    extra = "openai-agents"
    trigger = "agents"

    def targets(self) -> list[Target]:
        tool_invocations = [
            Target(owner, name, _wrap_tool_invocation) for owner, names in _TOOL_INVOCATIONS.items() for name in names
        ]
        return [
            Target("agents.run:AgentRunner", "run", _wrap_run),
            Target("agents.run", "start_streaming", _wrap_streamed_run),
            Target("agents.run", "run_single_turn", _wrap_turn),
            Target(_RUN_LOOP, "run_single_turn", _wrap_turn),
            Target(_RUN_LOOP, "run_single_turn_streamed", _wrap_turn),
            Target(_TURN_RESOLUTION, "execute_handoffs", _wrap_handoff),
            *tool_invocations,
            Target("agents.tool", "maybe_invoke_function_tool_failure_error_function", _noting_tool_error),
            Target(_TURN_RESOLUTION, "process_model_response", _noting_unknown_tools),
            Target(_TURN_RESOLUTION, "_build_tool_not_found_output_items", _noting_tools_not_found),
            *(Target(owner, "run", _guardrail(side)) for owner, side in _GUARDRAILS.items()),
            Target(_MODEL, "__init_subclass__", _patching_new_models),
        ]

    def setup(self) -> None:
        from agents.models.interface import Model  # type: ignore[import-not-found, unused-ignore]

        _Enabled.integration = self
        todo = list(Model.__subclasses__())
        while todo:
            cls = todo.pop()
            _patch_model_class(cls, self)
            todo.extend(cls.__subclasses__())

    def teardown(self) -> None:
        _restore_model_classes()
        if _Enabled.integration is self:
            _Enabled.integration = None


class _Enabled:
    """The enabled integration: the switch of a wrapper that a module imported from a patched one keeps for good."""

    integration: ClassVar[Integration | None] = None


def _enabled() -> bool:
    integration = _Enabled.integration
    return integration is not None and integration.active


def last_run_session_id() -> str | None:
    """Id of the session the most recent run started with no session open recorded into.

    Runs started inside ``openprogram.session_context`` record into that session
    instead. The first run into each such session logs its id (logger ``openprogram``,
    level WARNING).
    """
    return _last_run_session_id(FRAMEWORK)


def _argument(args: tuple[Any, ...], kwargs: Mapping[str, Any], index: int, name: str) -> Any:
    """A parameter passed by position or by name (the SDK calls its internals both ways)."""
    return args[index] if len(args) > index else kwargs.get(name)


def _agent_name(agent: Any) -> str:
    return str(getattr(agent, "name", None) or type(agent).__name__)


# --- runs and agent turns ----------------------------------------------------------------------


class _Run:
    """One ``Runner`` run: the calls it keeps open (ended with it) and the agent whose turn it is."""

    __slots__ = ("__weakref__", "agent", "agent_call", "calls", "handoff")

    def __init__(self, agent: Any, call: LaterCall) -> None:
        self.agent = agent
        self.agent_call = call
        self.calls: list[tuple[LaterCall, Any]] = [(call, None)]  # (call, its own output; None: the run's)
        self.handoff: LaterCall | None = None  # the hand-off whose agent starts with the next turn

    def turn_call(self, agent: Any) -> LaterCall:
        """The call of ``agent``'s turn: the current agent's, or a new one after a hand-off."""
        if self.handoff is None and agent is self.agent:
            return self.agent_call
        parent, self.handoff = self.handoff or self.agent_call, None
        with _current(parent):
            call = LaterCall.begin("agent", _agent_name(agent), FRAMEWORK)
        if call is not None:
            self.calls.append((call, None))
            self.agent, self.agent_call = agent, call
        return self.agent_call

    def handed_off(self, call: LaterCall, to_agent: Any) -> None:
        self.calls.append((call, {"to_agent": _agent_name(to_agent)}))
        self.handoff = call

    def call_of(self, agent: Any) -> LaterCall | None:
        return self.agent_call if agent is self.agent else None

    def end(self, exc: BaseException | None, result: Any = None) -> None:
        output, status = None, None
        if exc is None and result is not None:
            with guarded(FRAMEWORK, "reading a run's result"):
                output = result.final_output
                status = "interrupted" if getattr(result, "interruptions", None) else None
        for call, own in reversed(self.calls):
            call.end(exc, own if own is not None else output, None, status)


def _current(call: LaterCall) -> LaterCall:
    """``with _current(call):`` makes ``call`` current in this task's context only.

    A ``LaterCall`` keeps one stack of tokens: the runner's tasks (a turn, its guardrails) making
    the same agent call current at once would reset each other's. A view of the same record keeps its own.
    """
    return LaterCall(call.rec, FRAMEWORK)


_current_run: ContextVar[weakref.ref[_Run] | None] = ContextVar("openprogram.openai_agents.run", default=None)
"""The run whose loop is running in this context: set by the run wrappers only, which reset it.

A weak reference: every task the run makes copies the context, and a finished task the SDK keeps
would otherwise keep the run, and its agent, alive after the run returns.
"""


def _running() -> _Run | None:
    """The run whose loop is running in this context, while its wrapper still holds it."""
    ref = _current_run.get()
    return None if ref is None else ref()


def _session_key(kwargs: Mapping[str, Any]) -> tuple[str, str] | None:
    """What identifies the conversation a run continues: its SDK session, server conversation or trace group."""
    session_id = _sdk_session_id(kwargs.get("session"))
    if session_id:
        return "openai_agents.session", str(session_id)
    if kwargs.get("conversation_id"):
        return "openai_agents.conversation", str(kwargs["conversation_id"])
    group_id = getattr(kwargs.get("run_config"), "group_id", None)
    return ("openai_agents.group", str(group_id)) if group_id else None


def _sdk_session_id(session: Any) -> Any:
    """An SDK session's id; None before it has one (``OpenAIConversationsSession`` raises ``ValueError`` until
    its first request makes the remote conversation)."""
    try:
        return getattr(session, "session_id", None)
    except ValueError:
        return None


def _run_entry(agent: Any, kwargs: Mapping[str, Any]) -> RunEntry | None:
    """Outside a session, the session to record the run into (bound to its conversation's identity, if any)."""
    try:
        key = _session_key(kwargs)
        what = f"agent {_agent_name(agent)!r}"
    except Exception as exc:
        log_once(FRAMEWORK, "finding a run's session", exc)
        return None
    session = kwargs.get("session")
    if isinstance(session, OpenProgramSession) and get_current_session() is None:
        # Its id is an openprogram session's: the run records there, as a new turn.
        context = session_context(session.session_id, store=session.store, runtime="openai_agents")
        return RunEntry(context, FRAMEWORK, what, "OpenProgramSession")
    if key is None:
        return run_session(FRAMEWORK, what, runtime="openai_agents")
    return run_session(FRAMEWORK, what, key[1], namespace=key[0], runtime="openai_agents")


async def _found_entry(agent: Any, kwargs: Mapping[str, Any]) -> RunEntry | None:
    """:func:`_run_entry` for a run on an event loop: with no session open, finding one opens the store
    and reads it, so that happens on openprogram's threads; inside one, it only binds the run's identity."""
    if get_current_session() is not None:
        return _run_entry(agent, kwargs)
    return await run_blocking(_run_entry, agent, kwargs)


def _run_agent(agent: Any, given: Any) -> Any:
    """The agent a run starts with: a resumed ``RunState``'s current agent, else the starting agent."""
    resumed = getattr(given, "_current_agent", None)
    return resumed if resumed is not None else agent


def _begin_run(agent: Any, given: Any) -> _Run | None:
    try:
        inputs = None if hasattr(given, "_current_agent") else {"input": given}  # a RunState: no new input
        call = LaterCall.begin("agent", _agent_name(agent), FRAMEWORK, inputs)
    except NoSessionError:
        raise  # the "error" no-session policy, by the user's choice
    except Exception as exc:
        log_once(FRAMEWORK, "beginning an agent run", exc)
        return None
    return None if call is None else _Run(agent, call)


async def _recorded_run(
    original: Callable[..., Any],
    agent: Any,
    given: Any,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    result_of: Callable[[Any], Any],
) -> Any:
    """Run the loop with the first agent's call current and the run in ``_current_run``; end its calls after."""
    run = _begin_run(agent, given)
    if run is None:
        return await original(*args, **kwargs)
    token = _current_run.set(weakref.ref(run))
    try:
        with _current(run.agent_call):
            result = await original(*args, **kwargs)
    except BaseException as exc:
        run.end(exc)
        raise
    finally:
        _current_run.reset(token)
    run.end(None, result_of(result))
    return result


def _wrap_run(original: Callable[..., Any], integration: Integration) -> Callable[..., Any]:
    """``AgentRunner.run`` (``Runner.run``, ``run_sync`` and agents-as-tools go through it)."""

    async def run(self: Any, starting_agent: Any, input: Any, *args: Any, **kwargs: Any) -> Any:
        call_args = (self, starting_agent, input, *args)
        if not integration.active:
            return await original(*call_args, **kwargs)
        agent = _run_agent(starting_agent, input)
        entry = await _found_entry(agent, kwargs)
        if entry is None:
            return await _recorded_run(original, agent, input, call_args, kwargs, _same)
        async with entry:
            return await _recorded_run(original, agent, input, call_args, kwargs, _same)

    return wraps_like(original)(run)


def _same(value: Any) -> Any:
    return value


def _wrap_streamed_run(original: Callable[..., Any], integration: Integration) -> Callable[..., Any]:
    """``start_streaming``: the loop of a ``run_streamed`` run, in the task the SDK starts for it."""

    async def start_streaming(*args: Any, **kwargs: Any) -> Any:
        if not integration.active:
            return await original(*args, **kwargs)
        state = _argument(args, kwargs, 12, "run_state")  # also made for a fresh run, in later releases
        given = state if kwargs.get("is_resumed_state") else _argument(args, kwargs, 0, "starting_input")
        result = _argument(args, kwargs, 1, "streamed_result")
        agent = _run_agent(_argument(args, kwargs, 2, "starting_agent"), state)
        entry = await _found_entry(
            agent,
            {
                "session": _argument(args, kwargs, 11, "session"),
                "conversation_id": _argument(args, kwargs, 10, "conversation_id"),
                "run_config": _argument(args, kwargs, 6, "run_config"),
            },
        )

        def streamed(_: Any) -> Any:
            return result

        if entry is None:
            return await _recorded_run(original, agent, given, args, kwargs, streamed)
        await entry.__aenter__()
        # Left without awaiting the store: the SDK expects this task done once it has queued its last event,
        # else stream_events() re-raises the loop's BaseException past its own error handling.
        try:
            outcome = await _recorded_run(original, agent, given, args, kwargs, streamed)
        except BaseException as exc:
            entry.leave(exc)
            raise
        entry.leave(None)
        return outcome

    return wraps_like(original)(start_streaming)


def _turn_agent(args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> Any:
    bindings = kwargs.get("bindings")
    if bindings is None and len(args) > 1:  # run_single_turn_streamed(streamed_result, bindings, ...)
        bindings = args[1]
    return getattr(bindings, "public_agent", None) or kwargs.get("agent")


def _wrap_turn(original: Callable[..., Any], integration: Integration) -> Callable[..., Any]:
    """``run_single_turn`` / ``run_single_turn_streamed``: one model request and what it asked for."""

    async def run_single_turn(*args: Any, **kwargs: Any) -> Any:
        run = _running() if integration.active else None
        if run is None:
            return await original(*args, **kwargs)
        call = None
        with guarded(FRAMEWORK, "starting an agent turn"):
            call = run.turn_call(_turn_agent(args, kwargs))
        if call is None:
            return await original(*args, **kwargs)
        with _current(call):
            return await original(*args, **kwargs)

    return wraps_like(original)(run_single_turn)


def _wrap_handoff(original: Callable[..., Any], integration: Integration) -> Callable[..., Any]:
    """``execute_handoffs``: the hand-off is a call under the agent handing off; the next agent runs under it."""

    async def execute_handoffs(*args: Any, **kwargs: Any) -> Any:
        run = _running() if integration.active else None
        call = None
        if run is not None:
            with guarded(FRAMEWORK, "beginning a hand-off"):
                chosen = kwargs["run_handoffs"][0]
                inputs = _arguments(chosen.tool_call.arguments) if content_captured() else None
                call = LaterCall.begin(
                    "call",
                    str(chosen.handoff.tool_name),
                    FRAMEWORK,
                    inputs,
                    {"handoff": True, "tool_call_id": chosen.tool_call.call_id},
                )
        if call is None:
            return await original(*args, **kwargs)
        try:
            with call.current():
                result = await original(*args, **kwargs)
        except BaseException as exc:
            call.end(exc)
            raise
        assert run is not None
        with guarded(FRAMEWORK, "ending a hand-off"):
            run.handed_off(call, result.next_step.new_agent)
        return result

    return wraps_like(original)(execute_handoffs)


# --- guardrails -----------------------------------------------------------------------------------


def _guardrail_agent(side: str, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> Any:
    if side == "input":  # InputGuardrail.run(agent, input, context)
        return _argument(args, kwargs, 0, "agent")
    if side == "output":  # OutputGuardrail.run(context, agent, agent_output)
        return _argument(args, kwargs, 1, "agent")
    return getattr(_argument(args, kwargs, 0, "data"), "agent", None)  # tool guardrails: run(data)


def _guardrail_name(guardrail: Any) -> str:
    """The SDK's name for the guardrail; a function with no ``__name__`` (a callable object) is named by its type."""
    try:
        return str(guardrail.get_name())
    except AttributeError:
        return type(guardrail.guardrail_function).__name__


def _guardrail_output(result: Any) -> dict[str, Any]:
    verdict = getattr(result, "output", result)  # Input/OutputGuardrailResult hold a GuardrailFunctionOutput
    captured: dict[str, Any] = {"output_info": getattr(verdict, "output_info", None)}
    tripwire = getattr(verdict, "tripwire_triggered", None)
    if tripwire is not None:
        captured["tripwire_triggered"] = tripwire
    behavior = getattr(verdict, "behavior", None)  # tool guardrails: allow / reject_content / raise_exception
    if isinstance(behavior, Mapping):
        captured["behavior"] = behavior.get("type")
    return captured


def _guardrail(side: str) -> Callable[[Callable[..., Any], Integration], Callable[..., Any]]:
    """``<Guardrail>.run``: one call per guardrail run, under the call of the agent it guards."""
    attributes = {"guardrail": side}

    def wrap(original: Callable[..., Any], integration: Integration) -> Callable[..., Any]:
        async def run(self: Any, *args: Any, **kwargs: Any) -> Any:
            if not integration.active:
                return await original(self, *args, **kwargs)
            agent_call = None
            run = _running()
            if run is not None:
                with guarded(FRAMEWORK, "finding a guardrail's agent"):
                    agent_call = run.call_of(_guardrail_agent(side, args, kwargs))
            if agent_call is None:
                return await _guarded_run(original, self, args, kwargs)
            with _current(agent_call):  # output guardrails run in the loop, after the last agent's turn
                return await _guarded_run(original, self, args, kwargs)

        async def _guarded_run(
            original: Callable[..., Any], guardrail: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
        ) -> Any:
            opened = None
            with guarded(FRAMEWORK, "beginning a guardrail"):
                opened = open_call("call", _guardrail_name(guardrail), FRAMEWORK, None, attributes)
            if opened is None:
                return await original(guardrail, *args, **kwargs)
            try:
                result = await original(guardrail, *args, **kwargs)
            except BaseException as exc:
                close_call(opened, exc)
                raise
            output = None
            with guarded(FRAMEWORK, "reading a guardrail's result"):
                output = _guardrail_output(result)
            close_call(opened, None, output)
            return result

        return wraps_like(original)(run)

    return wrap


# --- function tools ----------------------------------------------------------------------------------


class _ToolInvocation:
    """The tool call being invoked in this context, and the error the SDK turned into a message, if any."""

    __slots__ = ("context", "error")

    def __init__(self, context: Any) -> None:
        self.context = context
        self.error: BaseException | None = None


_invoking: ContextVar[_ToolInvocation | None] = ContextVar("openprogram.openai_agents.tool", default=None)
"""Set by the tool-invocation wrapper only, which resets it."""


def _arguments(arguments: Any) -> Any:
    """A tool call's JSON arguments as a value (as sent when they are not valid JSON)."""
    if not isinstance(arguments, str):
        return arguments
    try:
        return json.loads(arguments) if arguments.strip() else {}
    except ValueError:
        return arguments


def _records_itself(function_tool: Any) -> bool:
    """A function tool made from an ``@openprogram.tool`` function, which records its own calls."""
    invoker = getattr(function_tool, "on_invoke_tool", None)
    implementation = getattr(invoker, "_invoke_tool_impl", invoker)  # the SDK's error-handling invoker wraps it
    cells = getattr(implementation, "__closure__", None) or ()
    return any(records_itself(cell, "cell_contents") for cell in cells)


def _wrap_tool_invocation(original: Callable[..., Any], integration: Integration) -> Callable[..., Any]:
    """The function invoking one function tool: a ``tool`` call current around its body."""
    with_metadata = original.__name__ == "_invoke_function_tool_with_metadata"  # its result holds the output

    async def invoke(*args: Any, **kwargs: Any) -> Any:
        if not _enabled():  # not integration.active: agents.realtime imports the function once it is patched
            return await original(*args, **kwargs)
        context = kwargs.get("context")
        pending = _invoking.get()
        if pending is not None and pending.context is context:
            return await original(*args, **kwargs)  # invoke_function_tool calling the one with metadata
        opened = None
        with guarded(FRAMEWORK, "beginning a tool call"):
            tool = kwargs["function_tool"]
            if not _records_itself(tool):
                inputs = _arguments(kwargs.get("arguments")) if content_captured() else None
                call_id = getattr(context, "tool_call_id", None)
                opened = open_call(
                    "tool", str(tool.name), FRAMEWORK, inputs, {"tool_call_id": call_id} if call_id else None
                )
        if opened is None:
            return await original(*args, **kwargs)
        invocation = _ToolInvocation(context)
        token = _invoking.set(invocation)
        try:
            result = await original(*args, **kwargs)
        except BaseException as exc:
            _invoking.reset(token)
            close_call(opened, exc)
            raise
        _invoking.reset(token)
        close_call(opened, invocation.error, getattr(result, "output", None) if with_metadata else result)
        return result

    return wraps_like(original)(invoke)


def _noting_tool_error(original: Callable[..., Any], integration: Integration) -> Callable[..., Any]:
    """Where the SDK turns a tool's exception into a message for the model: that exception is the call's error."""

    async def maybe_invoke_function_tool_failure_error_function(*args: Any, **kwargs: Any) -> Any:
        invocation = _invoking.get() if integration.active else None
        if invocation is not None:
            invocation.error = kwargs.get("error")
        return await original(*args, **kwargs)

    return wraps_like(original)(maybe_invoke_function_tool_failure_error_function)


def _noting_unknown_tools(original: Callable[..., Any], integration: Integration) -> Callable[..., Any]:
    """Where the SDK fails a run whose model called a tool the agent does not have: a failed tool call first."""

    def process_model_response(*args: Any, **kwargs: Any) -> Any:
        try:
            return original(*args, **kwargs)
        except Exception as exc:
            if integration.active and type(exc).__name__ == "ModelBehaviorError" and " not found in agent " in str(exc):
                with guarded(FRAMEWORK, "recording a call of an unknown tool"):
                    _record_unknown_tool(kwargs.get("response"), exc)
            raise

    return wraps_like(original)(process_model_response)


def _record_unknown_tool(response: Any, exc: Exception) -> None:
    """The tool call the SDK's "Tool NAME not found in agent AGENT" names, found in the model's response."""
    message = str(exc)
    named = message[len("Tool ") : message.index(" not found in agent ")] if message.startswith("Tool ") else None
    for item in getattr(response, "output", None) or ():
        name = getattr(item, "name", None)
        if (
            isinstance(name, str)
            and hasattr(item, "call_id")
            and (named is None or named == name or named.endswith("." + name))
        ):
            arguments = _arguments(getattr(item, "arguments", None) or getattr(item, "input", None))
            rejected_tool_call(FRAMEWORK, named or name, arguments, exc, item.call_id)
            return
    rejected_tool_call(FRAMEWORK, named or "unknown tool", None, exc)


def _noting_tools_not_found(original: Callable[..., Any], integration: Integration) -> Callable[..., Any]:
    """Where the SDK answers a call of a tool the agent does not have with a message (``return_error_to_model``)."""

    async def _build_tool_not_found_output_items(*args: Any, **kwargs: Any) -> Any:
        items = await original(*args, **kwargs)
        if integration.active:
            with guarded(FRAMEWORK, "recording calls of unknown tools"):
                for call, item in zip(kwargs.get("calls") or (), items, strict=False):
                    raw = call.tool_call
                    arguments = _arguments(getattr(raw, "arguments", None))
                    rejected_tool_call(FRAMEWORK, str(call.tool_name), arguments, str(item.output), raw.call_id)
        return items

    return wraps_like(original)(_build_tool_not_found_output_items)


# --- model requests ----------------------------------------------------------------------------------


class _Models:
    """The ``Model`` classes whose own request methods are wrapped, with what each held before."""

    lock: ClassVar[threading.Lock] = threading.Lock()
    originals: ClassVar[weakref.WeakKeyDictionary[type, dict[str, Any]]] = weakref.WeakKeyDictionary()


def _patching_new_models(original: Callable[..., Any], integration: Integration) -> Callable[..., Any]:
    """``Model.__init_subclass__``: a ``Model`` class defined now gets its own request methods wrapped."""

    def __init_subclass__(cls: Any, /, **kwargs: Any) -> None:
        from agents.models.interface import Model  # type: ignore[import-not-found, unused-ignore]

        super(Model, cls).__init_subclass__(**kwargs)
        if integration.active:
            with guarded(FRAMEWORK, f"patching {cls.__qualname__}"):
                _patch_model_class(cls, integration)

    # A classmethod, as Python makes every __init_subclass__ defined in a class body (set later, it must be one).
    return cast("Callable[..., Any]", classmethod(__init_subclass__))


def _patch_model_class(cls: type, integration: Integration) -> None:
    """Wrap the request methods ``cls`` defines itself (inherited ones are wrapped where they are defined)."""
    with _Models.lock:
        for name, wrap in (("get_response", _requesting), ("stream_response", _streaming)):
            current = cls.__dict__.get(name)
            if not callable(current) or hasattr(current, ORIGINAL) or getattr(current, "__isabstractmethod__", False):
                continue
            if name == "get_response" and shape_of(current) != "coroutine":
                continue  # not the interface's coroutine: left alone rather than awaited wrongly
            replacement = wrap(current, integration)
            setattr(replacement, ORIGINAL, current)
            setattr(cls, name, replacement)
            _Models.originals.setdefault(cls, {})[name] = current


def _restore_model_classes() -> None:
    with _Models.lock:
        patched = list(_Models.originals.items())
        _Models.originals.clear()
    for cls, originals in patched:
        for name, original in originals.items():
            with guarded(FRAMEWORK, f"restoring {cls.__qualname__}.{name}"):
                if hasattr(cls.__dict__.get(name), ORIGINAL):  # else replaced since by someone else: theirs stays
                    setattr(cls, name, original)


def _model_name(model: Any) -> str:
    name = getattr(model, "model", None)
    return name if isinstance(name, str) and name else type(model).__name__


def _provider(model: Any) -> str | None:
    classes = {klass.__name__ for klass in type(model).__mro__}
    if classes & _OPENAI_MODELS:
        return "openai"
    name = getattr(model, "model", None)
    if classes & _PREFIXED_MODELS and isinstance(name, str) and "/" in name:
        return name.partition("/")[0]
    return None


def _begin_request(model: Any, args: tuple[Any, ...], kwargs: dict[str, Any], stream: bool) -> ModelCall | None:
    try:
        name, provider = _model_name(model), _provider(model)
    except Exception as exc:
        log_once(FRAMEWORK, "describing a model request", exc)
        return None
    kind = ModelStream if stream else ModelCall
    call = kind.request(
        FRAMEWORK, name, lambda: _request_inputs(args, kwargs), provider=provider, stream=stream, client=model
    )
    if isinstance(call, ModelStream):
        call.absorb = _absorb_event
        call.state = [False, False]  # text deltas seen, tool-call pieces seen
    return call


def _answer_response(call: ModelCall, response: Any) -> None:
    output, counts = None, None
    with guarded(FRAMEWORK, "reading a model response"):
        output = _reply(response.output) if content_captured() else None
        counts = _usage(response.usage)
    call.answered(output, counts)


def _requesting(original: Callable[..., Any], integration: Integration) -> Callable[..., Any]:
    """A class's own ``get_response``: the request is one ``llm`` call under the agent's turn."""

    async def get_response(self: Any, *args: Any, **kwargs: Any) -> Any:
        call = _begin_request(self, args, kwargs, stream=False) if integration.active else None
        if call is None:
            return await original(self, *args, **kwargs)
        return await call.arun(lambda: original(self, *args, **kwargs), _answer_response)

    return wraps_like(original)(get_response)


def _streaming(original: Callable[..., Any], integration: Integration) -> Callable[..., Any]:
    """A class's own ``stream_response``: one ``llm`` call while its events are iterated, joined into one reply."""
    generator = shape_of(original) == "async_generator"  # else a function returning an async iterator

    async def stream_response(self: Any, *args: Any, **kwargs: Any) -> AsyncGenerator[Any, Any]:
        events = original(self, *args, **kwargs)
        inner: AsyncIterator[Any] = events if generator else _iterated(events)
        stream = _begin_request(self, args, kwargs, stream=True) if integration.active else None
        if isinstance(stream, ModelStream):
            inner = async_steps_under_call(inner, stream)  # type: ignore[arg-type]
        try:
            async for event in inner:
                yield event
        finally:
            await close_inner(inner)  # type: ignore[arg-type]

    return wraps_like(original)(stream_response)


async def _iterated(events: AsyncIterator[Any]) -> AsyncGenerator[Any, Any]:
    async for event in events:
        yield event


def _absorb_event(stream: ModelStream, event: Any) -> None:
    """One Responses API stream event into the joined reply (``stream.state``: what arrived in pieces)."""
    kind = getattr(event, "type", None)
    if kind == "response.output_text.delta":
        stream.state[0] = True
        stream.add_text(event.delta)
    elif kind == "response.output_item.added" and getattr(event.item, "type", None) == "function_call":
        stream.state[1] = True
        stream.add_tool_call(event.output_index, event.item.call_id, event.item.name, event.item.arguments or None)
    elif kind == "response.function_call_arguments.delta":
        stream.add_tool_call(event.output_index, None, None, event.delta)
    elif kind in ("response.completed", "response.incomplete", "response.failed"):
        response = event.response
        stream.set_usage(_usage(getattr(response, "usage", None)))
        if stream.state[0] and stream.state[1]:
            return
        made = _reply(response.output or ())  # what a backend sent only whole, at the end
        if not stream.state[0]:
            stream.add_text(made.get("content"))
        if not stream.state[1]:
            for index, call in enumerate(made.get("tool_calls", ())):
                stream.add_tool_call(("completed", index), call["id"], call["name"], call["arguments"])


def _usage(reported: Any) -> dict[str, int] | None:
    """The SDK's ``Usage`` or the API's ``ResponseUsage``; None when the model reported no tokens."""
    if reported is None:
        return None
    counts = (
        getattr(reported, "input_tokens", 0),
        getattr(reported, "output_tokens", 0),
        getattr(reported, "total_tokens", 0),
    )
    return usage(*counts) if any(counts) else None


def _field(item: Any, name: str) -> Any:
    """A field of an input or output item: a dict (what the SDK sends) or a pydantic model (what a model returns)."""
    if type(item) is dict or isinstance(item, Mapping):
        return item.get(name)
    return getattr(item, name, None)


def _text(content: Any) -> Any:
    """A message's content parts (``input_text``, ``output_text``, ``refusal``) as text when they all are."""
    if not isinstance(content, Sequence) or isinstance(content, str):
        return content
    texts = [_field(part, "text") or _field(part, "refusal") for part in content]
    return "".join(texts) if all(isinstance(text, str) for text in texts) else list(content)


def _messages(system_instructions: Any, items: Any) -> list[dict[str, Any]]:
    """The Responses API input items as messages: function calls join the assistant message before them."""
    made = [message("system", system_instructions)] if system_instructions else []
    if isinstance(items, str):
        return [*made, message("user", items)]
    for item in items or ():
        get = item.get if type(item) is dict else functools.partial(_field, item)  # the SDK sends dicts
        kind = get("type")
        if kind == "function_call":
            call = tool_call(get("call_id"), get("name"), get("arguments"))
            if made and made[-1]["role"] == "assistant":
                made[-1].setdefault("tool_calls", []).append(call)
            else:
                made.append(message("assistant", None, tool_calls=[call]))
        elif kind == "function_call_output":
            made.append(message("tool", get("output"), tool_call_id=get("call_id")))
        elif get("role") is not None:
            made.append(message(get("role"), _text(get("content"))))
    return made


def _request_inputs(args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> dict[str, Any]:
    # get_response / stream_response(system_instructions, input, model_settings, tools, output_schema,
    #                                handoffs, tracing, *, previous_response_id, conversation_id, prompt)
    tools = [getattr(tool, "name", None) for tool in _argument(args, kwargs, 3, "tools") or ()]
    tools += [getattr(handoff, "tool_name", None) for handoff in _argument(args, kwargs, 5, "handoffs") or ()]
    settings = _argument(args, kwargs, 2, "model_settings")
    params = {name: getattr(settings, name, None) for name in _PARAMS}
    params["reasoning_effort"] = getattr(getattr(settings, "reasoning", None), "effort", None)
    schema = _argument(args, kwargs, 4, "output_schema")
    if schema is not None and not schema.is_plain_text():
        params["output_type"] = schema.name()
    params["previous_response_id"] = kwargs.get("previous_response_id")
    params["conversation_id"] = kwargs.get("conversation_id")
    messages = _messages(_argument(args, kwargs, 0, "system_instructions"), _argument(args, kwargs, 1, "input"))
    return model_inputs(messages, tools, params)


def _reply(output: Any) -> dict[str, Any]:
    """A model response's output items as one reply: its text and the tool calls it asked for."""
    texts: list[str] = []
    calls = []
    for item in output:
        kind = _field(item, "type")
        if kind == "message":
            text = _text(_field(item, "content"))
            if isinstance(text, str):
                texts.append(text)
        elif kind == "function_call":
            calls.append(tool_call(_field(item, "call_id"), _field(item, "name"), _field(item, "arguments")))
    return reply("".join(texts) if texts else None, tool_calls=calls)

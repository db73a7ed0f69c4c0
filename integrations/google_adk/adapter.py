"""Google ADK adapter: Runner runs, agents (sub-agents, transfers, agents as tools), tools and model requests.

After ``openprogram.instrument()`` (name ``google_adk``), every ADK run records, in the
current session:

- one ``agent`` call per agent run (``BaseAgent.run_async`` / ``run_live``: ``LlmAgent``,
  the workflow agents, the user's own), named after the agent, current around each step of
  its event stream. A sub-agent that an agent transfers to, a sub-agent of a sequential,
  parallel or loop agent, and the agent of an ``AgentTool`` run inside the agent (or tool)
  that started them, so each nests under the agent that handed over. Its input is the user
  message of the invocation, its output the agent's last text;
- one ``tool`` call per tool run (``BaseTool.run_async``, every subclass's own: function
  tools, sync or async, long-running ones with ``long_running: true``, ``AgentTool``, MCP and
  OpenAPI tools), with the arguments the model sent and the tool's result;
- one ``llm`` call per model request (``BaseLlm.generate_content_async``, every subclass's
  own: Gemini, Claude, LiteLLM, the user's), in the one message shape with usage (see
  :mod:`.models`).

Why wrapping and not a plugin: ADK's plugins (``BasePlugin``) are given to each ``Runner``
(a runner built before ``instrument()`` has none of ours) and their before/after callbacks
cannot keep a call current around what runs between them (callbacks would install context
they cannot be sure to reset, and a plugin that returns a value skips the plugins after it).
The methods wrapped are ADK's public entry points, whose own OpenTelemetry spans are left
untouched. ``Runner.run_async`` / ``run_live`` (``Runner.run`` drives ``run_async`` in a thread
of its own, in a copy of the caller's context) decide the session: inside one, the run records
there; with no session open, a run whose ADK session lives in a persistent session service
(database, Vertex AI) records into the session bound to that ADK session, and a run on an
in-memory service into the process's implicit session (see :func:`last_run_session_id`).
"""

from __future__ import annotations

import contextvars
from collections.abc import AsyncGenerator, Callable, Mapping, Sequence
from contextvars import ContextVar
from typing import Any, ClassVar

from openprogram import NoSessionError, get_current_session
from openprogram._kit import (
    Integration,
    LaterCall,
    RunEntry,
    Target,
    async_steps_in_context,
    async_steps_under_call,
    close_call,
    close_inner,
    content_captured,
    guarded,
    injected_arguments,
    log_once,
    open_call,
    propagate,
    records_itself,
    run_blocking,
    run_session,
    wraps_like,
)
from openprogram._kit import last_run_session_id as _last_run_session_id

from .models import FRAMEWORK, content_text, wrap_generate

__all__ = ["GoogleADKIntegration", "last_run_session_id"]

# Session services whose sessions live in this process only: a run on one has no conversation that persists.
_IN_PROCESS_SERVICES = frozenset({"InMemorySessionService"})


class GoogleADKIntegration(Integration):
    """Records ADK runs, agents, tools and model requests; see the module docstring."""

    identifier: ClassVar[str] = "google_adk"
    framework: ClassVar[str] = FRAMEWORK
    distribution: ClassVar[str] = "google-adk"
    extra: ClassVar[str] = "google-adk"
    trigger: ClassVar[str] = "google.adk"

    def targets(self) -> list[Target]:
        return [
            Target("google.adk.runners:Runner", "run_async", _wrap_runner),
            Target("google.adk.runners:Runner", "run_live", _wrap_runner),
            Target("google.adk.runners", "create_thread", _carrying_context),
            Target("google.adk.agents.base_agent:BaseAgent", "run_async", _wrap_agent),
            Target("google.adk.agents.base_agent:BaseAgent", "run_live", _wrap_agent),
            Target("google.adk.tools.base_tool:BaseTool", "run_async", _wrap_tool, overrides=True, skip_owner=True),
            Target(
                "google.adk.models.base_llm:BaseLlm",
                "generate_content_async",
                wrap_generate,
                overrides=True,
                skip_owner=True,
            ),
        ]


def last_run_session_id() -> str | None:
    """Id of the session the most recent ADK run started with no session open recorded into.

    Runs started inside ``openprogram.session_context`` record into that session instead.
    The first run into each such session logs its id (logger ``openprogram``, level WARNING).
    """
    return _last_run_session_id(FRAMEWORK)


# --- Runner runs: which session ----------------------------------------------------------------------


def _wrap_runner(original: Callable[..., Any], integration: Integration) -> Callable[..., Any]:
    """``Runner.run_async`` / ``run_live``: the run records in the session the no-session rule gives."""

    async def run(self: Any, *args: Any, **kwargs: Any) -> AsyncGenerator[Any, Any]:
        entry = await _found_entry(self, kwargs) if integration.active else None
        # The session is current in the run's own context only, around each step: never in the
        # caller's, which iterates the events (and may stop early, or in another task).
        context = None if entry is None else contextvars.copy_context()
        if entry is None or context is None or not await _entered(entry, context):
            inner = original(self, *args, **kwargs)
            try:
                async for event in inner:
                    yield event
            finally:
                await close_inner(inner)
            return
        inner = async_steps_in_context(original(self, *args, **kwargs), context)
        failure: BaseException | None = None
        try:
            async for event in inner:
                yield event
        except GeneratorExit:
            raise
        except BaseException as exc:
            failure = exc
            raise
        finally:
            await close_inner(inner)
            with guarded(FRAMEWORK, "leaving a run's session"):
                context.run(entry.leave, failure)

    return wraps_like(original)(run)


async def _entered(entry: RunEntry, context: contextvars.Context) -> bool:
    """Enter the run's session in ``context``, off the event loop (a store lookup); False if that failed."""
    try:
        await run_blocking(context.run, entry.__enter__)
    except Exception as exc:
        log_once(FRAMEWORK, "entering a run's session", exc)
        return False
    return True


def _carrying_context(original: Callable[..., Any], integration: Integration) -> Callable[..., Any]:
    """The thread ``Runner.run`` drives ``run_async`` in: it runs in the caller's context (ADK releases before
    2.10 start it with none, so a sync run lost its session)."""

    def create_thread(*args: Any, **kwargs: Any) -> Any:
        if integration.active:
            with guarded(FRAMEWORK, "carrying the session into a run's thread"):
                if "target" in kwargs:
                    kwargs["target"] = _in_callers_context(kwargs["target"])
                elif args:
                    args = (_in_callers_context(args[0]), *args[1:])
        return original(*args, **kwargs)

    return wraps_like(original)(create_thread)


def _in_callers_context(target: Callable[..., Any]) -> Callable[..., Any]:
    if isinstance(getattr(target, "__self__", None), contextvars.Context):
        return target  # already a context's run (later releases copy the caller's)
    return propagate(target)


def _run_entry(runner: Any, kwargs: Mapping[str, Any]) -> RunEntry | None:
    """With no session open, the session to record the run into (bound to a persistent ADK session)."""
    try:
        app = str(getattr(runner, "app_name", None) or "adk")
        what = f"runner {app!r}"
        session = kwargs.get("session")
        user_id = kwargs.get("user_id") or getattr(session, "user_id", None)
        session_id = kwargs.get("session_id") or getattr(session, "id", None)
        service = {cls.__name__ for cls in type(getattr(runner, "session_service", None)).__mro__}
        if session_id is None or service & _IN_PROCESS_SERVICES:
            return run_session(FRAMEWORK, what, runtime="google_adk")
        key = f"{app}/{user_id}/{session_id}"
        return run_session(FRAMEWORK, what, key, namespace="google_adk.session", runtime="google_adk")
    except Exception as exc:
        log_once(FRAMEWORK, "finding a run's session", exc)
        return None


async def _found_entry(runner: Any, kwargs: Mapping[str, Any]) -> RunEntry | None:
    """:func:`_run_entry`, on openprogram's threads when no session is open (finding one reads the store).
    Inside one, it only binds a persistent ADK session to it (and the run records where it is)."""
    if get_current_session() is not None:
        return _run_entry(runner, kwargs)
    return await run_blocking(_run_entry, runner, kwargs)


# --- agents ------------------------------------------------------------------------------------------


class _AgentRun:
    """One agent's run while its events are iterated: current around each step, ended with the stream."""

    __slots__ = ("answer", "call", "invocation_id", "name", "transferred_to")

    def __init__(self, call: LaterCall, name: str, invocation_id: str | None) -> None:
        self.call = call
        self.name = name
        self.invocation_id = invocation_id
        self.answer: str | None = None  # the agent's last text
        self.transferred_to: str | None = None

    def __enter__(self) -> Any:
        return self.call.__enter__()

    def __exit__(self, *exc_info: Any) -> None:
        self.call.__exit__(*exc_info)

    def add(self, event: Any) -> None:
        if getattr(event, "author", None) != self.name or getattr(event, "partial", None):
            return
        with guarded(FRAMEWORK, "reading an agent's event"):
            said = content_text(getattr(event, "content", None))
            if said:
                self.answer = said
            target = getattr(getattr(event, "actions", None), "transfer_to_agent", None)
            if target:
                self.transferred_to = str(target)
                _handed_over(self.invocation_id, self.transferred_to, self.call)

    def finish(self, exc: BaseException | None) -> None:
        output = self.answer if content_captured() else None
        attributes = None if self.transferred_to is None else {"transferred_to": self.transferred_to}
        # ADK closes an agent's stream early once it has handed over; closed otherwise, its consumer left.
        if isinstance(exc, GeneratorExit):
            self.call.end(None, output, attributes, None if self.transferred_to else "interrupted")
        else:
            self.call.end(exc, output, attributes)


# Agents handed over to and not started yet: (invocation id, agent name) -> the call of the agent that handed over.
# ADK starts the agent transferred to once the one that transferred has ended (2.x) or inside it (before):
# either way it is recorded under the agent that handed over.
_handovers: dict[tuple[str | None, str], LaterCall] = {}
_HANDOVERS = 10_000


def _handed_over(invocation_id: str | None, target: str, call: LaterCall) -> None:
    if len(_handovers) >= _HANDOVERS:
        del _handovers[next(iter(_handovers))]  # a bound: a transfer to an agent that never ran is forgotten
    _handovers[(invocation_id, target)] = call


def _begin_agent(agent: Any, parent_context: Any) -> _AgentRun | None:
    try:
        name = str(getattr(agent, "name", None) or type(agent).__name__)
        inputs = None
        if content_captured():
            said = content_text(getattr(parent_context, "user_content", None))
            inputs = None if said is None else {"input": said}
        invocation_id = getattr(parent_context, "invocation_id", None)
        invocation_id = None if invocation_id is None else str(invocation_id)
        attributes = {"invocation_id": invocation_id} if invocation_id else None
        handed_over_by = _handovers.pop((invocation_id, name), None) if _handovers else None
        if handed_over_by is None:
            call = LaterCall.begin("agent", name, FRAMEWORK, inputs, attributes)
        else:
            with handed_over_by.current():
                call = LaterCall.begin("agent", name, FRAMEWORK, inputs, attributes)
    except NoSessionError:
        raise  # the "error" no-session policy, by the user's choice
    except Exception as exc:
        log_once(FRAMEWORK, "beginning an agent run", exc)
        return None
    return None if call is None else _AgentRun(call, name, invocation_id)


def _wrap_agent(original: Callable[..., Any], integration: Integration) -> Callable[..., Any]:
    """``BaseAgent.run_async`` / ``run_live``: an ``agent`` call current around each step of its events."""

    async def run(self: Any, parent_context: Any, *args: Any, **kwargs: Any) -> AsyncGenerator[Any, Any]:
        events = original(self, parent_context, *args, **kwargs)
        agent = _begin_agent(self, parent_context) if integration.active else None
        inner = events if agent is None else async_steps_under_call(events, agent)
        try:
            async for event in inner:
                yield event
        finally:
            await close_inner(inner)

    return wraps_like(original)(run)


# --- tools -------------------------------------------------------------------------------------------

_running_tool: ContextVar[int | None] = ContextVar("openprogram.google_adk.tool", default=None)
"""The tool whose call is being recorded here (by id): a subclass's ``run_async`` calling its base's is one call."""


def _wrap_tool(original: Callable[..., Any], integration: Integration) -> Callable[..., Any]:
    """A tool class's own ``run_async(*, args, tool_context)``: one ``tool`` call current around it."""

    async def run_async(self: Any, *args: Any, **kwargs: Any) -> Any:
        if not integration.active or _running_tool.get() == id(self):
            return await original(self, *args, **kwargs)
        if records_itself(self, "func"):  # an @openprogram.tool: it records its own call
            return await _self_recording(original, self, args, kwargs)
        opened = None
        with guarded(FRAMEWORK, "beginning a tool call"):
            opened = open_call("tool", str(self.name), FRAMEWORK, _tool_args(kwargs), _tool_attributes(self, kwargs))
        if opened is None:
            return await original(self, *args, **kwargs)
        token = _running_tool.set(id(self))
        try:
            result = await original(self, *args, **kwargs)
        except BaseException as exc:
            _running_tool.reset(token)
            close_call(opened, exc)
            raise
        _running_tool.reset(token)
        close_call(opened, None, result)
        return result

    return wraps_like(original)(run_async)


def _tool_args(kwargs: Mapping[str, Any]) -> Any:
    return kwargs.get("args") if content_captured() else None


def _tool_attributes(tool: Any, kwargs: Mapping[str, Any]) -> dict[str, Any] | None:
    attributes: dict[str, Any] = {}
    call_id = getattr(kwargs.get("tool_context"), "function_call_id", None)
    if call_id:
        attributes["tool_call_id"] = str(call_id)
    if getattr(tool, "is_long_running", False):
        attributes["long_running"] = True
    return attributes or None


async def _self_recording(original: Callable[..., Any], tool: Any, args: Sequence[Any], kwargs: dict[str, Any]) -> Any:
    """A function tool made from an ``@openprogram.tool``: its ``tool_context`` is not captured, and a
    ``_session`` the model sent is dropped (never let a model choose the session)."""
    given = kwargs.get("args")
    if isinstance(given, dict) and "_session" in given:
        kwargs = {**kwargs, "args": {key: value for key, value in given.items() if key != "_session"}}
    hint = None
    with guarded(FRAMEWORK, "finding a tool's injected arguments"):
        name = getattr(tool, "_context_param_name", None) or "tool_context"
        hint = [(frozenset({tool.func.__openprogram_tool__}), frozenset({name}))]
    token = injected_arguments.set(hint) if hint else None
    try:
        return await original(tool, *args, **kwargs)
    finally:
        if token is not None:
            injected_arguments.reset(token)

"""Pydantic AI adapter: agent runs, model requests and tool calls in the session DAG.

After :func:`openprogram.instrument`, every ``Agent`` — including agents built before it —
records each run as an ``agent`` call named after the agent: ``run``, ``run_sync``,
``run_stream``, ``run_stream_events`` and ``iter`` all enter ``Agent.iter``, the one method
patched. Its input is the prompt, its output the run's output (a structured output as its
data), its attributes the run's ``run_id`` and ``conversation_id``.

Inside the run, Pydantic AI's own hook point records the rest: openprogram's capability, in
the outermost tier (where Pydantic AI's Logfire/OpenTelemetry instrumentation sits too). An
agent built after ``instrument()`` is given it with its own capabilities (the patched
``Agent.__init__``, and ``Agent.override`` when it replaces them), so a run's capabilities are
the agent's alone and Pydantic AI resolves and reuses the run's model as it does plain; the
patched ``iter`` adds it to each run of an agent built before. Its hooks record

- each model request (``wrap_model_request``, streamed ones too) as an ``llm`` call with the
  model's name, its provider (``Model.system``) and the usage the model reported, its messages
  as the ``before_model_request`` hooks (history processors) left them: a second capability, in
  the innermost tier, sees them last;
- each tool execution (``wrap_tool_execute``: ``@agent.tool``, ``@agent.tool_plain``, any
  toolset) as a ``tool`` call with its arguments, result, ``tool_call_id`` and, for a retried
  tool, ``retry``; a tool call whose arguments failed validation as a ``tool`` call that ended
  in error with ``executed: false`` (``wrap_tool_validate``), and a call of a tool that does not
  exist (or is not available yet), which no hook sees, as a ``tool`` call that ended in error
  (``ToolManager.validate_tool_call``, patched);
- each output function (``wrap_output_process``) as a ``tool`` call with ``output_function: true``.

The run's call is current around ``iter``'s block, so the session is visible in everything
the run does: tools (the threads sync tools run in, the tasks parallel calls run in),
instructions and system-prompt functions, dependencies, nested agent runs. A run started with
no session open records into the session bound to the conversation it continues (its id passed,
or the latest one on ``message_history``), else into the process's implicit session: see
:func:`last_run_session_id`. That session is found off the event loop: opening the store and
looking a conversation up read files.
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import functools
import inspect
import json
import weakref
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Sequence
from typing import Any, ClassVar, cast

from openprogram import NoSessionError, get_current_session
from openprogram._kit import (
    Integration,
    LaterCall,
    ModelCall,
    RunEntry,
    Target,
    close_call,
    content_captured,
    guarded,
    injected_arguments,
    log_once,
    message,
    messages_of,
    model_inputs,
    open_call,
    records_itself,
    register_control_flow,
    rejected_tool_call,
    reply,
    run_blocking,
    run_session,
    tool_call,
    usage,
    wraps_like,
)
from openprogram._kit import last_run_session_id as _last_run_session_id

__all__ = ["PydanticAIIntegration", "last_run_session_id"]

FRAMEWORK = "pydantic_ai"
# Model settings recorded as a request's params (Pydantic AI's names; ``stop_sequences`` as ``stop``).
_PARAMS = ("temperature", "max_tokens", "top_p", "seed", "presence_penalty", "frequency_penalty", "parallel_tool_calls")


class PydanticAIIntegration(Integration):
    """Records Pydantic AI agent runs, model requests, tool calls and output functions; see the module docstring."""

    identifier: ClassVar[str] = "pydantic_ai"
    framework: ClassVar[str] = FRAMEWORK
    distribution: ClassVar[str] = "pydantic-ai-slim"  # also what the ``pydantic-ai`` package installs
    extra: ClassVar[str] = "pydantic-ai"
    trigger: ClassVar[str] = "pydantic_ai"

    def __init__(self) -> None:
        super().__init__()
        self.capabilities: tuple[Any, ...] = ()
        # The agents built holding this integration's capabilities (by id: an Agent is not hashable).
        self.holders: weakref.WeakValueDictionary[int, Any] = weakref.WeakValueDictionary()

    def targets(self) -> Sequence[Target]:
        from pydantic_ai.models import ModelRequestContext  # type: ignore[import-not-found, unused-ignore]

        targets = [
            Target("pydantic_ai.agent:Agent", "__init__", _wrap_init),
            Target("pydantic_ai.agent:Agent", "override", _wrap_override),
            Target("pydantic_ai.agent:Agent", "iter", _wrap_iter),
            Target("pydantic_ai.tool_manager:ToolManager", "validate_tool_call", _wrap_validate_tool_call),
        ]
        if "streaming" not in {field.name for field in dataclasses.fields(ModelRequestContext)}:
            # Before 2.14 the hooks are not told that a request is streamed: its node's stream() is.
            targets.append(Target("pydantic_ai._agent_graph:ModelRequestNode", "stream", _marking_streamed))
        return targets

    def setup(self) -> None:
        from pydantic_ai import exceptions  # type: ignore[import-not-found, unused-ignore]

        register_control_flow(exceptions.CallDeferred, "interrupted")  # a tool call left for later
        register_control_flow(exceptions.ApprovalRequired, "interrupted")  # waiting for a human's approval
        register_control_flow(exceptions.SkipToolExecution, "ok")  # a hook answered in the tool's place
        self.capabilities = _capabilities(self)


def last_run_session_id() -> str | None:
    """Id of the session the most recent Pydantic AI run started with no session open recorded into.

    Runs started inside ``openprogram.session_context`` record into that session
    instead. The first run into each such session logs its id (logger ``openprogram``,
    level WARNING).
    """
    return _last_run_session_id(FRAMEWORK)


# --- agent runs --------------------------------------------------------------------------------


def _wrap_init(original: Callable[..., Any], integration: Integration) -> Callable[..., Any]:
    """``Agent.__init__``: the agent holds openprogram's capability among its own.

    Pydantic AI keys a run's model resolution by its capabilities' identity: a capability added to
    each run would make it resolve (and, in ``async with agent:``, enter) the run's model anew.
    """

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        capabilities = getattr(integration, "capabilities", None)
        if not integration.active or not capabilities:
            original(self, *args, **kwargs)
            return
        original(self, *args, **_with_capabilities(kwargs, capabilities))
        _holders(integration)[id(self)] = self

    return wraps_like(original)(__init__)


def _wrap_override(original: Callable[..., Any], integration: Integration) -> Callable[..., Any]:
    """``Agent.override(capabilities=...)`` replaces the agent's capabilities: it keeps openprogram's."""

    def override(self: Any, *args: Any, **kwargs: Any) -> Any:
        capabilities = getattr(integration, "capabilities", None)
        replaced = kwargs.get("capabilities")
        if (
            integration.active
            and capabilities
            and isinstance(replaced, Sequence)
            and _holds(integration, self)
            and not any(given is capabilities[0] for given in replaced)
        ):
            kwargs = _with_capabilities(kwargs, capabilities)
        return original(self, *args, **kwargs)

    return wraps_like(original)(override)


def _holders(integration: Integration) -> weakref.WeakValueDictionary[int, Any]:
    return cast(PydanticAIIntegration, integration).holders


def _holds(integration: Integration, agent: Any) -> bool:
    """Whether ``agent`` holds the integration's capabilities: built with them (see :func:`_wrap_init`), or a copy."""
    if _holders(integration).get(id(agent)) is agent:
        return True
    with guarded(FRAMEWORK, "reading an agent's capabilities"):
        own = agent.root_capability.capabilities
        return any(isinstance(held, _Hooks) and held.integration is integration for held in own)
    return False


def _wrap_iter(original: Callable[..., Any], integration: Integration) -> Callable[..., Any]:
    """``Agent.iter``: every way of running an agent enters it; it returns an async context manager."""

    def iter(self: Any, *args: Any, **kwargs: Any) -> Any:
        capabilities = getattr(integration, "capabilities", None)
        if not integration.active or not capabilities:
            return original(self, *args, **kwargs)
        # An agent built before instrument() lacks the capability: its runs are given it.
        return _recorded_run(original, self, args, kwargs, () if _holds(integration, self) else capabilities)

    return wraps_like(original)(iter)


@contextlib.asynccontextmanager
async def _recorded_run(
    original: Callable[..., Any], agent: Any, args: tuple[Any, ...], kwargs: dict[str, Any], capabilities: Sequence[Any]
) -> AsyncIterator[Any]:
    """The run as an ``agent`` call, current around ``iter``'s block, in the session the policy gives."""
    name, inputs, entry = await _describe_run(agent, args, kwargs)
    async with entry if entry is not None else contextlib.nullcontext():
        opened = open_call("agent", name, FRAMEWORK, inputs)  # logs its own errors
        if opened is None:
            async with original(agent, *args, **kwargs) as run:
                yield run
            return
        run = None
        try:
            async with original(agent, *args, **_with_capabilities(kwargs, capabilities)) as run:
                _bind_conversation(run)
                yield run
        except BaseException as exc:
            close_call(opened, exc, None, None, _run_attributes(run))
            raise
        close_call(opened, None, _run_output(run), None, _run_attributes(run))


async def _describe_run(agent: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[str, Any, RunEntry | None]:
    name = "agent"
    with guarded(FRAMEWORK, "describing an agent run"):
        name = str(getattr(agent, "name", None) or "agent")
        prompt = args[0] if args else kwargs.get("user_prompt")
        find = functools.partial(
            run_session, FRAMEWORK, f"agent {name!r}", _conversation_key(kwargs), runtime=f"pydantic_ai:{name}"
        )
        # With no session open, finding one opens the store and reads it: off the event loop.
        # Inside one, it only binds the conversation to it.
        entry = await run_blocking(find) if get_current_session() is None else find()
        return name, None if prompt is None else {"prompt": _content(prompt)}, entry
    return name, None, None


def _conversation_key(kwargs: dict[str, Any]) -> str | None:
    """The conversation the run continues, as Pydantic AI resolves it; None for a new one."""
    explicit = kwargs.get("conversation_id")
    if explicit == "new":
        return None
    if isinstance(explicit, str) and explicit:
        return explicit
    conversation = getattr(kwargs.get("conversation"), "conversation_id", None)  # the Conversation object (2.6x)
    if isinstance(conversation, str) and conversation:
        return conversation
    for past in reversed(kwargs.get("message_history") or ()):
        found = getattr(past, "conversation_id", None)
        if isinstance(found, str) and found:
            return found
    return None


def _bind_conversation(run: Any) -> None:
    """Bind the run's conversation id to the session, so a later run continuing it outside any session joins it."""
    with guarded(FRAMEWORK, "binding a conversation to the session"):
        run_session(FRAMEWORK, "conversation", run.conversation_id)


def _with_capabilities(kwargs: dict[str, Any], capabilities: Sequence[Any]) -> dict[str, Any]:
    return {**kwargs, "capabilities": [*(kwargs.get("capabilities") or ()), *capabilities]}


def _run_output(run: Any) -> Any:
    with guarded(FRAMEWORK, "reading an agent run's output"):
        result = run.result  # None while the run has not reached its end (a stream left early)
        return None if result is None else result.output
    return None


def _run_attributes(run: Any) -> dict[str, Any] | None:
    if run is None:
        return None
    with guarded(FRAMEWORK, "reading an agent run's ids"):
        return {"run_id": run.run_id, "conversation_id": run.conversation_id}
    return None


# --- the capability: model requests, tool calls, output functions ------------------------------


def _capabilities(integration: Integration) -> tuple[Any, Any]:
    """openprogram's capabilities: :class:`_Hooks`' hooks, outermost, and :class:`_SentRequest`'s, innermost."""
    from pydantic_ai.capabilities import (  # type: ignore[import-not-found, unused-ignore]
        AbstractCapability,
        CapabilityOrdering,
    )

    def made(name: str, hooks: type, position: Any) -> Any:
        namespace = {
            "__module__": "openprogram.integrations.pydantic_ai",  # the public package, as before the move
            "__qualname__": name,
            "integration": integration,
            "ordering": CapabilityOrdering(position=position),
            # It observes only: a durable agent may take it per run, as it takes Instrumentation.
            "_safe_at_runtime": True,
        }
        cls: type[Any] = dataclasses.dataclass(type(name, (hooks, AbstractCapability), namespace))
        return cls()

    return made("OpenProgramCapability", _Hooks, "outermost"), made("OpenProgramSentRequest", _SentRequest, "innermost")


class _Hooks:
    """The hooks of openprogram's capability; each passes straight through once the adapter is off."""

    integration: Integration
    ordering: Any

    def get_ordering(self) -> Any:
        return self.ordering

    async def wrap_model_request(
        self, ctx: Any, *, request_context: Any, handler: Callable[[Any], Awaitable[Any]]
    ) -> Any:
        if not self.integration.active:
            return await handler(request_context)
        if _hooks_first:  # the before-hooks have run: this is the request as sent
            call = _begin_request(request_context)
            if call is None:
                return await handler(request_context)
            return await call.arun(lambda: handler(request_context), _answered)
        # The before-hooks run inside ``handler``: the innermost of them begins the call (_SentRequest).
        waiting = _Waiting()
        token = _waiting.set(waiting)
        try:
            response = await handler(request_context)
        except BaseException as exc:
            if waiting.call is not None:
                waiting.call.failed(exc)
            raise
        finally:
            _waiting.reset(token)
        if waiting.call is not None:
            _answered(waiting.call, response)
        return response

    async def wrap_tool_validate(
        self, ctx: Any, *, call: Any, tool_def: Any, args: Any, handler: Callable[[Any], Awaitable[Any]]
    ) -> Any:
        if not self.integration.active:
            return await handler(args)
        args = _without_session(args)
        try:
            return await handler(args)
        except Exception as exc:  # the model's arguments were invalid: the call is retried, or the run fails
            _record_invalid(ctx, call, args, exc)
            raise

    async def wrap_tool_execute(
        self, ctx: Any, *, call: Any, tool_def: Any, args: Any, handler: Callable[[Any], Awaitable[Any]]
    ) -> Any:
        if not self.integration.active:
            return await handler(args)
        hint = _self_recording(ctx, call)
        if hint is not None:  # an @openprogram.tool: it records its own call
            token = injected_arguments.set(hint) if hint else None
            try:
                return await handler(args)
            finally:
                if token is not None:
                    injected_arguments.reset(token)
        described = _describe_tool(ctx, call)
        opened = None if described is None else open_call("tool", described[0], FRAMEWORK, args, described[1])
        if opened is None:
            return await handler(args)
        try:
            result = await handler(args)
        except BaseException as exc:
            close_call(opened, exc)
            raise
        close_call(opened, None, result)
        return result

    async def wrap_output_process(
        self, ctx: Any, *, output_context: Any, output: Any, handler: Callable[[Any], Awaitable[Any]]
    ) -> Any:
        name = _output_function(output_context) if self.integration.active else None
        opened = None if name is None else open_call("tool", name, FRAMEWORK, output, {"output_function": True})
        if opened is None:  # plain validation runs no user code
            return await handler(output)
        try:
            result = await handler(output)
        except BaseException as exc:
            close_call(opened, exc)
            raise
        close_call(opened, None, result)
        return result


# Whether Pydantic AI runs the ``before_model_request`` hooks before the ``wrap_model_request`` ones
# (releases up to some 2.x) or inside their handler (later ones): learned from the first request,
# whose innermost before-hook runs either before any wrap of ours or inside one.
_hooks_first = False


class _Waiting:
    """A request a wrap of ours sent on, until the innermost before-hook begins its call."""

    __slots__ = ("call",)

    def __init__(self) -> None:
        self.call: ModelCall | None = None


_waiting: contextvars.ContextVar[_Waiting | None] = contextvars.ContextVar(
    "openprogram.pydantic_ai.waiting", default=None
)


class _SentRequest:
    """The innermost capability's hook: it sees a request as every other before-hook left it."""

    integration: Integration
    ordering: Any

    def get_ordering(self) -> Any:
        return self.ordering

    async def before_model_request(self, ctx: Any, request_context: Any) -> Any:
        global _hooks_first
        if not self.integration.active:  # an agent built under an earlier instrument(): another one records
            return request_context
        waiting = _waiting.get()
        if waiting is None:
            _hooks_first = True  # no wrap of ours is waiting: the hooks run first
        elif waiting.call is None:
            waiting.call = _begin_request(request_context)
        return request_context


# --- model requests ------------------------------------------------------------------------------

# True while the streamed path of a model request starts its hooks (before ModelRequestContext.streaming).
_streamed: contextvars.ContextVar[bool] = contextvars.ContextVar("openprogram.pydantic_ai.streamed", default=False)


def _marking_streamed(original: Callable[..., Any], integration: Integration) -> Callable[..., Any]:
    """``ModelRequestNode.stream``: the hooks of the request it makes (a task it creates on entry) see it streamed."""

    def stream(self: Any, *args: Any, **kwargs: Any) -> Any:
        if not integration.active:
            return original(self, *args, **kwargs)
        return _streamed_entry(original(self, *args, **kwargs))

    return wraps_like(original)(stream)


@contextlib.asynccontextmanager
async def _streamed_entry(inner: Any) -> AsyncIterator[Any]:
    token = _streamed.set(True)
    try:
        entered = await inner.__aenter__()
    finally:
        _streamed.reset(token)
    try:
        yield entered
    except BaseException as exc:
        if not await inner.__aexit__(type(exc), exc, exc.__traceback__):
            raise
    else:
        await inner.__aexit__(None, None, None)


def _begin_request(request_context: Any) -> ModelCall | None:
    try:
        model = request_context.model
        streaming = getattr(request_context, "streaming", None)
        return ModelCall.request(
            FRAMEWORK,
            model.model_name,
            inputs=lambda: _request_inputs(request_context),
            provider=model.system,
            stream=_streamed.get() if streaming is None else bool(streaming),
            client=model,
        )
    except NoSessionError:
        raise  # the "error" no-session policy, by the user's choice
    except Exception as exc:
        log_once(FRAMEWORK, "beginning a model request", exc)
        return None


def _answered(call: ModelCall, response: Any) -> None:
    output = None
    token_usage = None
    with guarded(FRAMEWORK, "reading a model response"):
        counted = response.usage
        if counted.has_values():
            token_usage = usage(counted.input_tokens, counted.output_tokens)
        if content_captured():
            output = _reply(response)
    call.answered(output, token_usage)


def _request_inputs(request_context: Any) -> dict[str, Any]:
    parameters = request_context.model_request_parameters
    tools = [tool.name for tool in (*parameters.function_tools, *parameters.output_tools)]
    settings = request_context.model_settings or {}
    params = {key: settings.get(key) for key in _PARAMS}
    params["stop"] = settings.get("stop_sequences")
    messages = _messages(request_context.messages)
    instructions = _instructions(parameters, request_context.messages)
    if instructions:
        messages.insert(0, message("system", instructions))
    return model_inputs(messages, tools, params)


def _instructions(parameters: Any, history: Sequence[Any]) -> str | None:
    """The instructions sent with the request: the request's parts, else those of its last ``ModelRequest``."""
    parts = getattr(parameters, "instruction_parts", None)
    if parts:
        return "\n\n".join(str(part.content) for part in parts if part.content)
    for past in reversed(history):
        if past.kind == "request":
            return getattr(past, "instructions", None)
    return None


def _messages(history: Sequence[Any]) -> list[dict[str, Any]]:
    # Each response, and each part of a request, is translated once (the kit remembers them by
    # identity): a run keeps its history's objects from request to request. A request's parts are
    # read again each time, since Pydantic AI sets a sent request's ``parts`` anew (dynamic system
    # prompts re-run, instruction records), while a part and a response stay as they were made.
    return messages_of(_pieces(history), _translated)


def _pieces(history: Sequence[Any]) -> Iterator[Any]:
    for past in history:
        if past.kind == "response":
            yield past
        else:
            yield from past.parts


def _translated(piece: Any) -> list[dict[str, Any]]:
    """A response as its reply, a request's part as its message (none for parts that carry no message)."""
    if getattr(piece, "kind", None) == "response":
        return [_reply(piece, finish=False)]
    kind = piece.part_kind
    if kind == "system-prompt":
        return [message("system", piece.content)]
    if kind == "user-prompt":
        return [message("user", _content(piece.content))]
    if kind == "tool-return":
        return [message("tool", piece.content, tool_call_id=piece.tool_call_id)]
    if kind == "retry-prompt":  # a tool's retry, or the output's
        text = piece.model_response()
        return [message("tool", text, tool_call_id=piece.tool_call_id) if piece.tool_name else message("user", text)]
    return []


def _reply(response: Any, *, finish: bool = True) -> dict[str, Any]:
    texts: list[str] = []
    calls: list[dict[str, Any]] = []
    for part in response.parts:
        if part.part_kind == "text":
            texts.append(part.content)
        elif part.part_kind == "tool-call":
            calls.append(tool_call(part.tool_call_id, part.tool_name, part.args))
    content = "".join(texts) if texts else None
    return reply(content, tool_calls=calls, finish_reason=response.finish_reason if finish else None)


def _content(content: Any) -> Any:
    """A prompt's content: its text, and what else it holds by kind (an image's bytes are not captured)."""
    if isinstance(content, str) or not isinstance(content, Sequence):
        return content
    return [item if isinstance(item, str) else _media(item) for item in content]


def _media(item: Any) -> dict[str, Any]:
    described: dict[str, Any] = {"type": type(item).__name__}
    url = getattr(item, "url", None)
    if isinstance(url, str):
        described["url"] = url
    return described


# --- tool calls ----------------------------------------------------------------------------------


def _without_session(args: Any) -> Any:
    """The model's raw arguments without a ``_session`` (never let a model choose the session)."""
    if isinstance(args, dict) and "_session" in args:
        return {key: value for key, value in args.items() if key != "_session"}
    if isinstance(args, str) and '"_session"' in args:
        with guarded(FRAMEWORK, "reading a tool call's arguments"):
            decoded = json.loads(args)
            if isinstance(decoded, dict):
                decoded.pop("_session", None)
                return decoded
    return args


def _tool_attributes(ctx: Any, call: Any) -> dict[str, Any]:
    attributes: dict[str, Any] = {"tool_call_id": call.tool_call_id}
    if ctx.retry:
        attributes["retry"] = ctx.retry
    return attributes


def _describe_tool(ctx: Any, call: Any) -> tuple[str, dict[str, Any]] | None:
    try:
        return str(call.tool_name), _tool_attributes(ctx, call)
    except Exception as exc:
        log_once(FRAMEWORK, "describing a tool call", exc)
        return None


def _output_function(output_context: Any) -> str | None:
    """The name of the output function about to run, or None when the output is only validated."""
    try:
        if not output_context.has_function:
            return None
        called = output_context.tool_call
        return str(output_context.function_name or (called.tool_name if called is not None else "output"))
    except Exception as exc:
        log_once(FRAMEWORK, "describing an output function", exc)
        return None


def _record_invalid(ctx: Any, call: Any, args: Any, exc: Exception) -> None:
    with guarded(FRAMEWORK, "recording a tool call with invalid arguments"):
        attributes = {**_tool_attributes(ctx, call), "executed": False}
        arguments = tool_call(None, None, args)["arguments"]  # JSON text decoded when it is JSON
        invalid = LaterCall.begin("tool", str(call.tool_name), FRAMEWORK, arguments, attributes)
        if invalid is not None:
            invalid.end(exc)


def _wrap_validate_tool_call(original: Callable[..., Any], integration: Integration) -> Callable[..., Any]:
    # Pydantic AI refuses a call of a tool it does not know (or not yet available) before any hook
    # runs, and tells the model (or, unwrapped, raises): recorded here, as a failed tool call.
    async def validate_tool_call(self: Any, call: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            validated = await original(self, call, *args, **kwargs)
        except Exception as exc:
            if integration.active and _unknown_tool(self, call):
                _record_refused(call, exc)
            raise
        if integration.active:
            with guarded(FRAMEWORK, "reading a validated tool call"):
                if validated.tool is None and not validated.args_valid and validated.validation_error is not None:
                    _record_refused(call, validated.validation_error)
        return validated

    return wraps_like(original)(validate_tool_call)


def _unknown_tool(manager: Any, call: Any) -> bool:
    tools = getattr(manager, "tools", None)
    return isinstance(tools, dict) and getattr(call, "tool_name", None) not in tools


def _record_refused(call: Any, exc: BaseException) -> None:
    with guarded(FRAMEWORK, "recording a call of an unknown tool"):
        arguments = tool_call(None, None, call.args)["arguments"]  # JSON text decoded when it is JSON
        rejected_tool_call(FRAMEWORK, str(call.tool_name), arguments, exc, call.tool_call_id)


def _self_recording(ctx: Any, call: Any) -> list[tuple[frozenset[str], frozenset[str]]] | None:
    """For a tool whose function is an ``@openprogram.tool``: the injected-arguments hint for its ``RunContext``.

    None for any other tool; an empty list when the function takes no ``RunContext``.
    """
    try:
        tool = ctx.tool_manager.tools.get(call.tool_name)
        for _ in range(8):  # a combined or wrapped toolset's tool holds the one it came from
            if tool is None or hasattr(tool, "call_func"):
                break
            tool = getattr(tool, "source_tool", None)
        schema = getattr(getattr(tool, "call_func", None), "__self__", None)  # a function toolset's FunctionSchema
        if schema is None or not records_itself(schema, "function"):
            return None
        if not schema.takes_ctx:
            return []
        function = schema.function
        first = next(iter(inspect.signature(function).parameters))
        return [(frozenset({function.__openprogram_tool__}), frozenset({first}))]
    except Exception as exc:
        log_once(FRAMEWORK, "finding a tool's function", exc)
        return None

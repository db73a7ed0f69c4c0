"""Semantic Kernel adapter: every kernel function, chat request, agent and orchestration in the session DAG.

After ``openprogram.instrument()``, every ``Kernel`` — including kernels, agents and
clones built earlier — records each function execution as a ``function`` call
named ``plugin.function``, with its arguments and result, under the call that
was running when it started. The hooks (the table in :meth:`SemanticKernelIntegration.targets`):

- ``KernelFilterExtension.construct_call_stack`` is wrapped so that our
  function-invocation and auto-function-invocation filters are the outermost
  filters of every call stack. Nothing is added to a kernel's filter lists, so
  filters can never be added twice and ``uninstrument()`` leaves no trace.
- Every chat service's own ``_inner_get_chat_message_contents`` / ``..._streaming_...``
  records each request it sends to its model as an ``llm`` call — each round of
  auto function calling is one (:mod:`.models`). The functions
  the model asked for run after their round's call, under the function or agent
  that made the request.
- ``Kernel.invoke_prompt`` / ``invoke_prompt_stream`` build a function with a
  random name: it is recorded as ``prompt``, begun before it renders (the
  functions its template calls are its children), its rendered prompt its input.
- ``ChatCompletionAgent`` (``get_response``, ``invoke``, ``invoke_stream``),
  ``AgentGroupChat`` and orchestrations (``OrchestrationBase.invoke``, ended when
  its result is) record ``agent`` / ``call`` calls.
- ``Kernel.invoke_function_call``: a model's call SK refuses (no such function, arguments it
  rejects) is a ``tool`` call ending ``error``, with what SK told the model as its error.
- ``InProcessRuntime``: each send/publish envelope keeps a snapshot of the
  sender's context (:func:`openprogram.propagate`) and the handler runs in it,
  so a message is handled in the session that sent it — also when sessions
  share one runtime (SK alone runs handlers in the context of ``runtime.start()``).

A streaming function's body (a generator iterated after the filter returned)
runs with its call current around each step. ``Kernel.invoke_stream`` /
``invoke_prompt_stream`` are wrapped so that closing one early ends the function
stream it owns at once: SK iterates it with ``async for`` and never closes it.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import AsyncGenerator, Awaitable, Callable
from contextvars import ContextVar
from functools import partial
from typing import Any

import openprogram
from openprogram._kit import (
    Integration,
    LaterCall,
    StreamCall,
    Target,
    async_steps_under_call,
    close_call,
    close_inner,
    guarded,
    json_string,
    log_once,
    open_call,
    recorded,
    rejected_tool_call,
    steps_under_call,
    tool_call,
    wraps_like,
)

from .models import MODEL_TARGETS, owning_rounds

__all__ = ["SemanticKernelIntegration"]

FRAMEWORK = "semantic_kernel"
_AGENT = "semantic_kernel.agents.chat_completion.chat_completion_agent:ChatCompletionAgent"
_GROUP_CHAT = "semantic_kernel.agents.group_chat.agent_group_chat:AgentGroupChat"
_CHAT = "semantic_kernel.connectors.ai.chat_completion_client_base:ChatCompletionClientBase"
_RUNTIME = "semantic_kernel.agents.runtime.in_process.in_process_runtime"
_KERNEL = "semantic_kernel.kernel:Kernel"
PROMPT = "prompt"


class SemanticKernelIntegration(Integration):
    """Records Semantic Kernel functions, chat requests, agents and orchestrations."""

    identifier = "semantic_kernel"
    framework = FRAMEWORK
    distribution = "semantic-kernel"
    extra = "semantic-kernel"
    trigger = "semantic_kernel"

    def targets(self) -> list[Target]:
        # Each owner is the module defining the class: SK's agent modules load lazily, on first use.
        return [
            Target(
                "semantic_kernel.filters.kernel_filters_extension:KernelFilterExtension",
                "construct_call_stack",
                _wrap_call_stack,
            ),
            Target(_CHAT, "get_streaming_chat_message_contents", _wrap_streaming_chat_request),
            Target(_KERNEL, "invoke_stream", _wrap_kernel_stream),
            Target(_KERNEL, "invoke_function_call", _wrap_invoke_function_call),
            Target(_KERNEL, "invoke_prompt", _wrap_invoke_prompt),
            Target(_KERNEL, "invoke_prompt_stream", _wrap_prompt_stream),
            Target(_AGENT, "get_response", recorded("agent", _describe_agent, output=_response_text)),
            Target(_AGENT, "invoke", recorded("agent", _describe_agent, text_of=_chunk_text)),
            Target(_AGENT, "invoke_stream", _wrap_agent_stream),
            Target(_GROUP_CHAT, "invoke", _wrap_group_chat),
            Target(_GROUP_CHAT, "invoke_stream", _wrap_group_chat),
            Target(
                "semantic_kernel.agents.orchestration.orchestration_base:OrchestrationBase",
                "invoke",
                _wrap_orchestration,
            ),
            Target(f"{_RUNTIME}:SendMessageEnvelope", "__init__", _wrap_envelope_init),
            Target(f"{_RUNTIME}:PublishMessageEnvelope", "__init__", _wrap_envelope_init),
            Target(f"{_RUNTIME}:InProcessRuntime", "_process_send", _wrap_process),
            Target(f"{_RUNTIME}:InProcessRuntime", "_process_publish", _wrap_process),
            *MODEL_TARGETS,
        ]


# --- naming and capture ---------------------------------------------------------------------


def _function_name(function: Any) -> str:
    metadata = function.metadata
    plugin = metadata.plugin_name
    return f"{plugin}.{metadata.name}" if plugin else str(metadata.name)


def _function_output(context: Any) -> Any:
    result = context.result
    if result is None:
        return None
    if context.function.is_prompt:
        return str(result)  # the completion text, not the full message objects
    return result.value


def _describe_agent(agent: Any, *args: Any, **kwargs: Any) -> tuple[str, Any]:
    # `messages` is positional-or-keyword in recent SK, keyword-only in older releases.
    messages = args[0] if args else kwargs.get("messages")
    if messages is None:
        return str(agent.name), None
    if isinstance(messages, list):
        return str(agent.name), {"messages": [str(m) for m in messages]}
    return str(agent.name), {"messages": str(messages)}


def _messages_text(messages: Any) -> list[str]:
    return [str(message) for message in messages]


def _response_text(response: Any) -> list[str]:
    return _messages_text([getattr(response, "message", response)])


def _chunk_text(item: Any) -> str | None:
    """The text of streamed SK content (a chunk or a list of chunks); None for anything else."""
    first = item[0] if isinstance(item, list) and item else item
    if not hasattr(first, "content_type"):
        return None
    try:
        return "".join(str(part) for part in item) if isinstance(item, list) else str(item)
    except Exception:
        return ""


# --- kernel function filters -------------------------------------------------------------------

# What the auto-function-invocation filter knows about the function it is about to run (the
# model's tool call): read by the function-invocation filter of that very function, cleared
# for anything it calls in turn.
_auto_call: ContextVar[tuple[Any, str] | None] = ContextVar("openprogram.sk.auto_call", default=None)


class _FunctionStream(StreamCall):
    """A streaming function's call, open while SK iterates its stream (``source``, driven under it)."""

    __slots__ = ("source",)

    def __init__(self, rec: tuple[Any, ...], framework: str) -> None:
        super().__init__(rec, framework)
        self.text_of = _chunk_text
        self.source: Any = None


def _wrap_call_stack(original: Callable[..., Any], integration: Integration) -> Callable[..., Any]:
    from semantic_kernel.filters.filter_types import FilterTypes

    function_type, auto_type = FilterTypes.FUNCTION_INVOCATION, FilterTypes.AUTO_FUNCTION_INVOCATION
    render_type = FilterTypes.PROMPT_RENDERING

    def construct_call_stack(self: Any, filter_type: Any, inner_function: Callable[..., Any]) -> Any:
        if not integration.active:
            return original(self, filter_type, inner_function)
        stack = original(self, filter_type, inner_function)
        # Stacks are built for each invocation; a positional partial is called in C, with no frame of its own.
        if filter_type == function_type:
            return partial(_function_filter, stack)
        if filter_type == auto_type:
            reached = _function_call_reached.get()
            if reached is not None:
                reached[0] = True
            return partial(_auto_function_filter, stack)
        prompt = _pending_prompt.get()
        if filter_type == render_type and prompt is not None and not prompt.rendered:
            return partial(_render_filter, stack, prompt)
        return stack

    return wraps_like(original)(construct_call_stack)


async def _function_filter(next: Callable[[Any], Awaitable[None]], context: Any) -> None:
    """Outermost function-invocation filter: one ``function`` call per function execution."""
    # try/except, not guarded(): this runs for every function (a `with` costs three calls).
    try:
        function = context.function
        pending = _auto_call.get()
        matched = pending is not None and pending[0] is function
        attributes = pending[1] if pending is not None and matched else None
        if context.is_streaming:
            attributes = '{"streaming":true}' if attributes is None else attributes[:-1] + ',"streaming":true}'
        is_prompt = function.metadata.is_prompt  # the field, not the property that reads it
        if _prompt_requested.get() and is_prompt:  # the function invoke_prompt built
            built_by_invoke_prompt = True
        else:
            built_by_invoke_prompt = False
            name = _function_name(function)
    except Exception as error:
        log_once(FRAMEWORK, "the function-invocation filter (start)", error)
        return await next(context)
    if built_by_invoke_prompt:
        return await _prompt_filter(context, next, attributes)
    opened = open_call("function", name, FRAMEWORK, context.arguments, attributes)  # logs its own errors
    if opened is None:
        return await next(context)
    if matched:
        _auto_call.set(None)  # what it calls is not the model's tool call (the auto filter's reset restores it)
    try:
        await next(context)
    except BaseException as exc:
        close_call(opened, exc)
        raise
    output = None
    try:
        result = context.result
        if result is not None:
            value = result.value
            if context.is_streaming and (inspect.isasyncgen(value) or inspect.isgenerator(value)):
                _drive_under(_FunctionStream.of(opened, FRAMEWORK, detach=True), context, value)
                return
            output = str(result) if is_prompt else value  # a prompt's completion text, not its messages
    except Exception as error:
        log_once(FRAMEWORK, "the function-invocation filter (end)", error)
    close_call(opened, None, output)


def _stream_returned(context: Any) -> Any:
    """The stream a streaming function returned (SK iterates it after the filter returned), or None."""
    if not context.is_streaming:
        return None
    result = context.result
    value = result.value if result is not None else None
    return value if inspect.isasyncgen(value) or inspect.isgenerator(value) else None


def _drive_under(call: _FunctionStream, context: Any, stream: Any) -> None:
    """Hand SK the function's stream driven under its call, which ends with it."""
    call.source = async_steps_under_call(stream, call) if inspect.isasyncgen(stream) else steps_under_call(stream, call)
    context.result.value = call.source
    owner = _kernel_stream.get()
    if owner is not None and owner.open:  # the kernel stream's own function (its first step)
        owner.open = False
        owner.stream = call


async def _auto_function_filter(next: Callable[[Any], Awaitable[None]], context: Any) -> None:
    """Outermost auto-function-invocation filter: tells the function filter it runs a model's tool call."""
    token = None
    try:
        call = getattr(context, "function_call_content", None)  # absent in SK 1.30
        request, function = context.request_sequence_index, context.function_sequence_index
        count = context.function_count
        # Built as JSON text here: SK's own counters and the model's call id.
        attributes = (
            f'{{"auto_invoked":true,"request_index":{request if type(request) is int else "null"},'
            f'"function_index":{function if type(function) is int else "null"},'
            f'"function_count":{count if type(count) is int else "null"}'
        )
        if call is not None and call.id:
            attributes += f',"tool_call_id":{json_string(str(call.id))}'
        token = _auto_call.set((context.function, attributes + "}"))
    except Exception as error:
        log_once(FRAMEWORK, "the auto-function-invocation filter", error)
    try:
        await next(context)
    finally:
        if token is not None:
            _auto_call.reset(token)


# --- a model's tool call SK refused ------------------------------------------------------------------

# Set around ``Kernel.invoke_function_call``: whether it went on to build the call's auto-invocation
# stack, which it does for every call it accepts (its early returns are its refusals).
_function_call_reached: ContextVar[list[bool] | None] = ContextVar("openprogram.sk.function_call_reached", default=None)


def _wrap_invoke_function_call(original: Callable[..., Any], integration: Integration) -> Callable[..., Any]:
    # SK answers a call of a function it does not have (or may not call), or with arguments it
    # rejects, with a message to the model instead of a result, and goes on: no function runs.
    async def invoke_function_call(self: Any, *args: Any, **kwargs: Any) -> Any:
        if not integration.active:
            return await original(self, *args, **kwargs)
        reached = [False]
        token = _function_call_reached.set(reached)
        try:
            result = await original(self, *args, **kwargs)
        finally:
            _function_call_reached.reset(token)
        if not reached[0]:
            function_call = args[0] if args else kwargs.get("function_call")
            history = args[1] if len(args) > 1 else kwargs.get("chat_history")
            _record_refused(function_call, history)
        return result

    return wraps_like(original)(invoke_function_call)


def _record_refused(function_call: Any, history: Any) -> None:
    with guarded(FRAMEWORK, "recording a function call it refused"):
        plugin, function = function_call.plugin_name, function_call.function_name
        name = f"{plugin}.{function}" if plugin and function else str(function or function_call.name)
        arguments = tool_call(None, None, function_call.arguments)["arguments"]  # JSON text decoded
        rejected_tool_call(FRAMEWORK, name, arguments, _answer_to(function_call, history), function_call.id)


def _answer_to(function_call: Any, history: Any) -> str:
    """What SK told the model instead of the function's result: the result it added for that call."""
    for message in reversed(list(getattr(history, "messages", ()))[-16:]):
        for item in getattr(message, "items", ()):
            if getattr(item, "content_type", None) == "function_result" and item.id == function_call.id:
                return str(item.result)
    return f"Semantic Kernel did not call {function_call.name}"


# --- prompts built on the fly (invoke_prompt) ------------------------------------------------------

# True around ``invoke_prompt`` (the first step of ``invoke_prompt_stream``) when it names no
# function: the function it builds is the first to start, and is recorded as ``prompt``.
_prompt_requested: ContextVar[bool] = ContextVar("openprogram.sk.prompt_requested", default=False)


class _PromptOnTheFly:
    """The function ``invoke_prompt`` built, while it runs: its call, current while it renders and asks
    (the functions its template calls and its chat request are its children), given the rendered
    prompt as input once rendered; a streaming one drives its stream under it."""

    __slots__ = ("call", "function", "rendered")

    def __init__(self, function: Any, call: _FunctionStream) -> None:
        self.function = function
        self.call = call
        self.rendered = False


_pending_prompt: ContextVar[_PromptOnTheFly | None] = ContextVar("openprogram.sk.pending_prompt", default=None)


def _names_no_function(args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
    """Whether ``invoke_prompt(prompt, function_name=None, ...)`` builds its function under a random name."""
    return not (args[1] if len(args) > 1 else kwargs.get("function_name"))


def _wrap_invoke_prompt(original: Callable[..., Any], integration: Integration) -> Callable[..., Any]:
    async def invoke_prompt(self: Any, *args: Any, **kwargs: Any) -> Any:
        if not integration.active or not _names_no_function(args, kwargs):
            return await original(self, *args, **kwargs)
        token = _prompt_requested.set(True)
        try:
            return await original(self, *args, **kwargs)
        finally:
            _prompt_requested.reset(token)

    return wraps_like(original)(invoke_prompt)


async def _prompt_filter(context: Any, next: Callable[[Any], Awaitable[None]], attributes: str | None) -> None:
    """The function-invocation filter of the function ``invoke_prompt`` built."""
    call = _FunctionStream.begin("function", PROMPT, FRAMEWORK, None, attributes)
    if call is None:
        return await next(context)
    pending = _pending_prompt.set(_PromptOnTheFly(context.function, call))
    requested = _prompt_requested.set(False)
    try:
        with call.current():
            await next(context)
    except BaseException as exc:
        call.end(exc)
        raise
    finally:
        _prompt_requested.reset(requested)
        _pending_prompt.reset(pending)
    output = None
    try:
        stream = _stream_returned(context)
        if stream is not None:
            _drive_under(call, context, stream)
            return
        output = _function_output(context)
    except Exception as error:
        log_once(FRAMEWORK, "the function-invocation filter of a prompt (end)", error)
    call.end(None, output)


async def _render_filter(next: Callable[[Any], Awaitable[None]], prompt: _PromptOnTheFly, context: Any) -> None:
    """Outermost prompt-rendering filter of ``invoke_prompt``'s function: its input is what was rendered."""
    await next(context)
    if context.function is prompt.function and not prompt.rendered:
        prompt.rendered = True
        prompt.call.set_inputs({"prompt": context.rendered_prompt})


# --- chat requests ----------------------------------------------------------------------------------


def _wrap_streaming_chat_request(original: Callable[..., Any], integration: Integration) -> Callable[..., Any]:
    async def get_streaming_chat_message_contents(self: Any, *args: Any, **kwargs: Any) -> AsyncGenerator[Any, Any]:
        inner = original(self, *args, **kwargs)
        if integration.active:
            inner = owning_rounds(inner)
        try:
            async for item in inner:
                yield item
        finally:
            await close_inner(inner)

    return wraps_like(original)(get_streaming_chat_message_contents)


def _wrap_agent_stream(original: Callable[..., Any], integration: Integration) -> Callable[..., Any]:
    # SK's agent iterates its chat stream with ``async for``: closed early, it leaves it open.
    agent_stream = recorded("agent", _describe_agent, text_of=_chunk_text)(original, integration)

    async def invoke_stream(self: Any, *args: Any, **kwargs: Any) -> AsyncGenerator[Any, Any]:
        inner = agent_stream(self, *args, **kwargs)
        if integration.active:
            inner = owning_rounds(inner)
        try:
            async for item in inner:
                yield item
        finally:
            await close_inner(inner)

    return wraps_like(original)(invoke_stream)


# --- kernel streams ------------------------------------------------------------------------------


class _KernelStream:
    """What one kernel stream owns, registered in its first step: the stream of the function it
    invoked, or the kernel stream it iterates (``invoke_prompt_stream`` runs ``invoke_stream``)."""

    __slots__ = ("agen", "nested", "open", "stream")

    def __init__(self, agen: AsyncGenerator[Any, Any]) -> None:
        self.agen = agen  # SK's own generator for this kernel stream
        self.open = True
        self.stream: _FunctionStream | None = None
        self.nested: _KernelStream | None = None


# The kernel stream whose step is running, set around each step in the consumer's context.
_kernel_stream: ContextVar[_KernelStream | None] = ContextVar("openprogram.sk.kernel_stream", default=None)


def _wrap_prompt_stream(original: Callable[..., Any], integration: Integration) -> Callable[..., Any]:
    return _wrap_kernel_stream(original, integration, builds_prompt=True)


def _wrap_kernel_stream(
    original: Callable[..., Any], integration: Integration, builds_prompt: bool = False
) -> Callable[..., Any]:
    async def invoke_stream(self: Any, *args: Any, **kwargs: Any) -> AsyncGenerator[Any, Any]:
        agen = original(self, *args, **kwargs)
        owner = _KernelStream(agen) if integration.active else None
        outer = _kernel_stream.get()
        if owner is not None and outer is not None and outer.open:  # iterated by another kernel stream
            outer.open = False
            outer.nested = owner
        # invoke_prompt_stream starts the function it built in its first step.
        prompt_step = owner is not None and builds_prompt and _names_no_function(args, kwargs)
        exc: BaseException | None = None
        try:
            while True:
                token = _kernel_stream.set(owner)  # around the step only: the consumer's context, as SK runs it
                requested = _prompt_requested.set(True) if prompt_step else None
                try:
                    item = await agen.__anext__()
                except StopAsyncIteration:
                    return
                finally:
                    if requested is not None:
                        _prompt_requested.reset(requested)
                        prompt_step = False
                    _kernel_stream.reset(token)
                    if owner is not None:
                        owner.open = False
                yield item
        except BaseException as error:
            exc = error
            raise
        finally:
            try:
                await close_inner(agen)
            finally:
                if owner is not None:
                    await _close_owned(owner, exc)

    return wraps_like(original)(invoke_stream)


async def _close_owned(owner: _KernelStream, exc: BaseException | None) -> None:
    """End what a kernel stream owns, if its consumer left it open."""
    nested = owner.nested
    if nested is not None:  # SK iterates it with ``async for``, which never closes it
        with guarded(FRAMEWORK, "closing a nested kernel stream"):
            await close_inner(nested.agen)  # not if it is running: being closed elsewhere
        await _close_owned(nested, exc)
    call = owner.stream
    if call is None or call.ended:
        return
    source = call.source
    with guarded(FRAMEWORK, "closing a function stream left open"):
        if inspect.isasyncgen(source):
            if source.ag_running:
                return  # being iterated elsewhere: it ends by itself
            await close_inner(source)  # GeneratorExit at its yield: closes the function's generator, ends the call
        elif inspect.isgenerator(source):
            if source.gi_running:
                return
            source.close()
    if not call.ended:  # never started: nothing was suspended to close
        call.finish(exc if exc is not None else GeneratorExit())


# --- group chats, orchestrations and the in-process runtime -------------------------------------

# The group chat whose invoke is running, so a nested invoke is not recorded twice.
_group_chat: ContextVar[int | None] = ContextVar("openprogram.sk.group_chat", default=None)


class _GroupChatCall(StreamCall):
    """A group chat's call: its steps also mark the chat as running."""

    __slots__ = ("chat", "marks")

    def __init__(self, rec: tuple[Any, ...], framework: str) -> None:
        super().__init__(rec, framework)
        self.text_of = _chunk_text
        self.chat: int | None = None
        self.marks: list[Any] = []

    def __enter__(self) -> _GroupChatCall:
        self.marks.append(_group_chat.set(self.chat))
        super().__enter__()
        return self

    def __exit__(self, *exc_info: Any) -> None:
        super().__exit__(*exc_info)
        _group_chat.reset(self.marks.pop())


def _wrap_group_chat(original: Callable[..., Any], integration: Integration) -> Callable[..., Any]:
    async def invoke(self: Any, *args: Any, **kwargs: Any) -> AsyncGenerator[Any, Any]:
        agen = original(self, *args, **kwargs)
        call = None
        if integration.active and _group_chat.get() != id(self):
            call = _GroupChatCall.begin("call", type(self).__name__, FRAMEWORK)
        if call is None:
            inner = agen
        else:
            call.chat = id(self)
            inner = async_steps_under_call(agen, call)
        if integration.active:
            inner = owning_rounds(inner)  # SK iterates its agents' streams with ``async for``
        try:
            async for item in inner:
                yield item
        finally:
            await close_inner(inner)  # also when closed early

    return wraps_like(original)(invoke)


_watchers: set[asyncio.Task[None]] = set()


def _wrap_orchestration(original: Callable[..., Any], integration: Integration) -> Callable[..., Any]:
    async def invoke(self: Any, task: Any, runtime: Any) -> Any:
        if not integration.active:
            return await original(self, task, runtime)
        call = None
        with guarded(FRAMEWORK, "OrchestrationBase.invoke"):
            call = LaterCall.begin("call", type(self).__name__, FRAMEWORK, {"task": str(task)})
        if call is None:
            return await original(self, task, runtime)
        try:
            # Its messages are sent while its call is current: every agent it runs is attributed to it.
            with call.current():
                result = await original(self, task, runtime)
        except BaseException as exc:
            call.end(exc)
            raise
        with guarded(FRAMEWORK, "watching an orchestration result"):
            watcher = asyncio.ensure_future(_end_when_done(result, call))
            _watchers.add(watcher)
            watcher.add_done_callback(_watchers.discard)
        return result

    return wraps_like(original)(invoke)


async def _end_when_done(result: Any, call: LaterCall) -> None:
    try:
        await result.event.wait()
    except BaseException as exc:
        call.end(exc)
        raise
    error: BaseException | None = result.exception
    if error is None and result.value is None and result.cancellation_token.is_cancelled():
        error = asyncio.CancelledError("orchestration cancelled")
    output = None
    with guarded(FRAMEWORK, "an orchestration's result"):
        output = _messages_text(result.value) if isinstance(result.value, list) else result.value
    call.end(error, output)


_ENVELOPE_ATTR = "_openprogram_spawn"


def _wrap_envelope_init(original: Callable[..., Any], integration: Integration) -> Callable[..., Any]:
    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        original(self, *args, **kwargs)
        if integration.active:
            with guarded(FRAMEWORK, "snapshotting a runtime envelope"):
                # Built by send_message/publish_message in the sender's task: its context.
                self.__dict__[_ENVELOPE_ATTR] = openprogram.propagate(asyncio.ensure_future)

    return wraps_like(original)(__init__)


def _wrap_process(original: Callable[..., Any], integration: Integration) -> Callable[..., Any]:
    async def process(self: Any, message_envelope: Any) -> None:
        spawn = message_envelope.__dict__.get(_ENVELOPE_ATTR) if integration.active else None
        coro = original(self, message_envelope)
        task = None
        if spawn is not None:
            with guarded(FRAMEWORK, "re-installing a runtime envelope's context"):
                task = spawn(coro)  # a task created inside the sender's context: the handler runs there
        await (coro if task is None else task)

    return wraps_like(original)(process)

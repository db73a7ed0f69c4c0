"""Semantic Kernel adapter: every kernel function, chat request, agent and orchestration in the session DAG.

After ``openprogram.instrument()``, every ``Kernel`` — including kernels, agents and
clones built earlier — records each function execution as a ``function`` call
named ``plugin.function``, with its arguments and result, under the call that
was running when it started. The hooks:

- ``KernelFilterExtension.construct_call_stack`` is wrapped so that our
  function-invocation and auto-function-invocation filters are the outermost
  filters of every call stack. Nothing is added to a kernel's filter lists, so
  filters can never be added twice and ``uninstrument()`` leaves no trace.
- ``ChatCompletionClientBase.get_chat_message_contents`` / ``..._streaming_...``
  record each chat request not made by a prompt function (agents, direct use)
  as a ``call`` named ``chat:<model>``. The chat/prompt call — that call, or the
  prompt function — is the parent of the functions the model asked for; the
  several calls of one model turn, run concurrently by SK, share it.
- ``ChatCompletionAgent`` (``get_response``, ``invoke``, ``invoke_stream``),
  ``AgentGroupChat`` and orchestrations (``OrchestrationBase.invoke``) record
  ``agent`` / ``call`` calls.
- ``InProcessRuntime``: each send/publish envelope keeps a snapshot of the
  sender's context (:func:`openprogram.propagate`) and the handler runs in it,
  so a message is handled in the session that sent it — also when sessions
  share one runtime (SK alone runs handlers in the context of ``runtime.start()``).

Streaming bodies (async generators iterated after the filter returned) get the
session and their call re-installed around each step. ``Kernel.invoke_stream`` /
``invoke_prompt_stream`` are wrapped (iterated in the consumer's context, as SK
does) so that closing one early ends the function stream it owns at once: SK
iterates it with ``async for`` and never closes it, so it would stay running
until a garbage-collection pass. Errors in this module are
logged on the ``openprogram`` logger and never raised into SK; the user's
exceptions pass through unchanged.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
import threading
from collections.abc import AsyncGenerator, Callable, Generator
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any

from openprogram._capture import json_string
from openprogram._context import SessionHandle, call_var, session_var
from openprogram._instrument import DidNotEnable, Integration
from openprogram._propagation import close_inner, propagate
from openprogram._recorder import Opened, _reset, close_call, detach_call, end_call, open_call

if TYPE_CHECKING:
    from semantic_kernel.filters.auto_function_invocation.auto_function_invocation_context import (
        AutoFunctionInvocationContext,
    )
    from semantic_kernel.filters.functions.function_invocation_context import FunctionInvocationContext

__all__ = ["LOWEST_VERSION", "SemanticKernelIntegration"]

logger = logging.getLogger("openprogram")

FRAMEWORK = "semantic_kernel"
#: The lowest semantic-kernel release the adapter supports (tested by the nox session):
#: agent orchestrations and InProcessRuntime first shipped in 1.30.0.
LOWEST_VERSION = (1, 30, 0)
_MAX_ITEMS = 100
_MAX_TEXT_CHUNKS = 1000
_ENVELOPE_ATTR = "_openprogram_spawn"

_active = False
_logged: set[str] = set()
_logged_lock = threading.Lock()

# What the auto-function-invocation filter knows about the function it is about
# to run (the model's tool call); read by the function-invocation filter of that
# very function, cleared for anything it calls in turn.
_auto_call: ContextVar[tuple[Any, str] | None] = ContextVar("openprogram.sk.auto_call", default=None)
# Calls of prompt functions now running. A chat request made directly under one
# is not recorded separately: the prompt function is that chat/prompt call, and
# the functions the model asks for become its children.
_prompt_calls: set[str] = set()
# The kernel stream (``Kernel.invoke_stream`` / ``invoke_prompt_stream``) whose step is
# running, set around each step in the consumer's context. SK iterates the function's own
# stream with ``async for`` and never closes it, so a consumer closing the kernel stream
# early would leave it running until a garbage-collection pass: the kernel stream's
# wrapper closes the one it owns.
_kernel_stream: ContextVar[_KernelStream | None] = ContextVar("openprogram.sk.kernel_stream", default=None)
# The group chat whose invoke is running, so a nested invoke is not recorded twice.
_group_chat: ContextVar[int | None] = ContextVar("openprogram.sk.group_chat", default=None)


def _log_once(what: str) -> None:
    """Log an instrumentation error once per place, with its traceback."""
    with _logged_lock:
        first = what not in _logged
        _logged.add(what)
    if first:
        logger.exception("openprogram: semantic_kernel instrumentation failed in %s; the kernel is unaffected", what)
    else:
        logger.debug("openprogram: semantic_kernel instrumentation failed again in %s", what, exc_info=True)


# --- streaming bodies ---------------------------------------------------------------


class _Stream:
    """A call that stays open while a generator produced under it is iterated."""

    __slots__ = ("count", "ended", "handle", "items", "rec", "source", "text")

    def __init__(self, handle: SessionHandle, rec: tuple[Any, ...]) -> None:
        self.handle = handle
        self.rec = rec
        self.items: list[Any] = []
        self.count = 0
        self.text: list[str] | None = None
        self.ended = False
        self.source: AsyncGenerator[Any, Any] | Generator[Any, Any, Any] | None = None  # the traced generator

    def add(self, item: Any) -> None:
        self.count += 1
        if self.text is not None or _is_content(item):
            # Streamed SK content (chunks of a completion): record the text, not the objects.
            if self.text is None:
                self.text = []
            if len(self.text) < _MAX_TEXT_CHUNKS:
                self.text.append(_content_text(item))
        elif len(self.items) < _MAX_ITEMS:
            self.items.append(item)

    def output(self) -> dict[str, Any]:
        if self.text is not None:
            return {"text": "".join(self.text), "count": self.count}
        return {"yielded": self.items, "count": self.count}

    def end(self, exc: BaseException | None) -> None:
        self.ended = True
        _prompt_calls.discard(self.rec[0])
        try:
            end_call(self.rec, exc, self.output())
        except Exception:
            _log_once("ending a streamed call")


class _KernelStream:
    """What one kernel stream owns, registered in its first step: the stream of the function it
    invoked, or the kernel stream it iterates (``invoke_prompt_stream`` runs ``invoke_stream``)."""

    __slots__ = ("agen", "nested", "open", "stream")

    def __init__(self, agen: AsyncGenerator[Any, Any]) -> None:
        self.agen = agen  # SK's own generator for this kernel stream
        self.open = True
        self.stream: _Stream | None = None
        self.nested: _KernelStream | None = None


def _is_content(item: Any) -> bool:
    if isinstance(item, list):
        return bool(item) and hasattr(item[0], "content_type")
    return hasattr(item, "content_type")


def _content_text(item: Any) -> str:
    try:
        if isinstance(item, list):
            return "".join(str(part) for part in item)
        return str(item)
    except Exception:
        return ""


def _detach(opened: Opened) -> _Stream:
    """Restore the context ``open_call`` changed but keep its call open, for a stream that outlives it."""
    rec = detach_call(opened)
    return _Stream(rec[1], rec)


async def _traced_agen(agen: AsyncGenerator[Any, Any], stream: _Stream) -> AsyncGenerator[Any, Any]:
    """Iterate ``agen`` with the stream's session and call current in every step; end the call at the end."""
    handle, call_id = stream.handle, stream.rec[0]
    while True:
        s_token = session_var.set(handle)
        c_token = call_var.set(call_id)
        try:
            item = await agen.__anext__()
        except StopAsyncIteration:
            stream.end(None)
            return
        except BaseException as exc:
            stream.end(exc)
            raise
        finally:
            _reset(call_var, c_token)
            _reset(session_var, s_token)
        stream.add(item)
        try:
            yield item
        except BaseException as exc:  # closed or thrown into by the consumer
            s_token = session_var.set(handle)
            c_token = call_var.set(call_id)
            try:
                await close_inner(agen)
            finally:
                _reset(call_var, c_token)
                _reset(session_var, s_token)
                stream.end(exc)
            raise


def _traced_gen(gen: Generator[Any, Any, Any], stream: _Stream) -> Generator[Any, Any, Any]:
    """The sync-generator counterpart of :func:`_traced_agen`."""
    handle, call_id = stream.handle, stream.rec[0]
    while True:
        s_token = session_var.set(handle)
        c_token = call_var.set(call_id)
        try:
            item = next(gen)
        except StopIteration:
            stream.end(None)
            return
        except BaseException as exc:
            stream.end(exc)
            raise
        finally:
            _reset(call_var, c_token)
            _reset(session_var, s_token)
        stream.add(item)
        try:
            yield item
        except BaseException as exc:
            s_token = session_var.set(handle)
            c_token = call_var.set(call_id)
            try:
                gen.close()
            finally:
                _reset(call_var, c_token)
                _reset(session_var, s_token)
                stream.end(exc)
            raise


# --- kernel function filters -----------------------------------------------------------


def _function_name(function: Any) -> str:
    metadata = function.metadata
    plugin = metadata.plugin_name
    return f"{plugin}.{metadata.name}" if plugin else str(metadata.name)


def _begin_function(context: FunctionInvocationContext) -> Opened | None:
    """The opened call of a function, or None when it runs unrecorded."""
    try:
        function = context.function
        attributes: str | None = None
        pending = _auto_call.get()
        matched = pending is not None and pending[0] is function
        if matched:
            attributes = pending[1]  # type: ignore[index]
        if context.is_streaming:
            attributes = '{"streaming":true}' if attributes is None else attributes[:-1] + ',"streaming":true}'
        name = _function_name(function)
        arguments = context.arguments
    except Exception:
        _log_once("the function-invocation filter (start)")
        return None
    # open_call logs its own errors; it raises only under the user's "error" no-session policy.
    opened = open_call("function", name, FRAMEWORK, arguments, attributes)
    if opened is None:
        return None
    if matched:
        # Whatever this function calls is not the model's tool call any more
        # (the auto filter's reset restores the context afterwards).
        _auto_call.set(None)
    if function.is_prompt:
        _prompt_calls.add(opened[0][0])
    return opened


def _function_output(context: FunctionInvocationContext) -> Any:
    result = context.result
    if result is None:
        return None
    if context.function.is_prompt:
        return str(result)  # the completion text, not the full message objects
    return result.value


async def _function_filter(context: FunctionInvocationContext, next: Callable[[Any], Any]) -> None:
    """Outermost function-invocation filter: one ``function`` call per function execution."""
    if not _active:
        await next(context)
        return
    opened = _begin_function(context)
    if opened is None:
        await next(context)
        return
    call_id = opened[0][0]
    try:
        await next(context)
    except BaseException as exc:
        _prompt_calls.discard(call_id)
        close_call(opened, exc)
        raise
    output = None
    try:
        result = context.result
        value = result.value if result is not None else None
        if context.is_streaming and (inspect.isasyncgen(value) or inspect.isgenerator(value)):
            stream = _detach(opened)
            if result is not None:
                result.value = _traced_agen(value, stream) if inspect.isasyncgen(value) else _traced_gen(value, stream)
                stream.source = result.value
                owner = _kernel_stream.get()
                if owner is not None and owner.open:  # the kernel stream's own function (its first step)
                    owner.open = False
                    owner.stream = stream
            return
        _prompt_calls.discard(call_id)
        output = _function_output(context)
    except Exception:
        _log_once("the function-invocation filter (end)")
    close_call(opened, None, output)


async def _auto_function_filter(context: AutoFunctionInvocationContext, next: Callable[[Any], Any]) -> None:
    """Outermost auto-function-invocation filter: tells the function filter it runs a model's tool call."""
    if not _active:
        await next(context)
        return
    token = None
    try:
        call = getattr(context, "function_call_content", None)  # absent in SK 1.30
        # Built as JSON text here: SK's own counters and the model's call id.
        attributes = (
            f'{{"auto_invoked":true,"request_index":{_int_json(context.request_sequence_index)},'
            f'"function_index":{_int_json(context.function_sequence_index)},'
            f'"function_count":{_int_json(context.function_count)}'
        )
        if call is not None and call.id:
            attributes += f',"tool_call_id":{json_string(str(call.id))}'
        token = _auto_call.set((context.function, attributes + "}"))
    except Exception:
        _log_once("the auto-function-invocation filter")
    try:
        await next(context)
    finally:
        if token is not None:
            _reset(_auto_call, token)


def _int_json(value: Any) -> str:
    return str(value) if type(value) is int else "null"


def _wrap_construct_call_stack(original: Callable[..., Any]) -> Callable[..., Any]:
    from semantic_kernel.filters.filter_types import FilterTypes

    function_type = FilterTypes.FUNCTION_INVOCATION
    auto_type = FilterTypes.AUTO_FUNCTION_INVOCATION

    def construct_call_stack(self: Any, filter_type: Any, inner_function: Callable[..., Any]) -> Any:
        stack = original(self, filter_type, inner_function)
        if not _active:
            return stack
        # Not functools.partial(filter, next=stack): a closure is cheaper to call.
        if filter_type == function_type:

            async def function_stack(context: Any) -> None:
                await _function_filter(context, stack)

            return function_stack
        if filter_type == auto_type:

            async def auto_stack(context: Any) -> None:
                await _auto_function_filter(context, stack)

            return auto_stack
        return stack

    construct_call_stack.__wrapped__ = original  # type: ignore[attr-defined]
    construct_call_stack.__doc__ = original.__doc__
    return construct_call_stack


# --- chat requests, agents, group chats ------------------------------------------------------


def _chat_name(service: Any) -> str:
    try:
        return f"chat:{service.ai_model_id}"
    except Exception:
        return "chat"


def _messages_text(messages: Any) -> Any:
    try:
        return [str(message) for message in messages]
    except Exception:
        return None


def _chat_attributes(service: Any, chat_history: Any) -> str | None:
    try:
        return f'{{"service":{json_string(type(service).__name__)},"messages":{len(chat_history.messages)}}}'
    except Exception:
        return None


def _wrap_chat(original: Callable[..., Any]) -> Callable[..., Any]:
    async def get_chat_message_contents(self: Any, chat_history: Any, *args: Any, **kwargs: Any) -> Any:
        if not _active or call_var.get() in _prompt_calls:
            return await original(self, chat_history, *args, **kwargs)
        try:
            name, attributes = _chat_name(self), _chat_attributes(self, chat_history)
        except Exception:
            _log_once("a chat request")
            return await original(self, chat_history, *args, **kwargs)
        opened = open_call("call", name, FRAMEWORK, None, attributes)
        if opened is None:
            return await original(self, chat_history, *args, **kwargs)
        try:
            result = await original(self, chat_history, *args, **kwargs)
        except BaseException as exc:
            close_call(opened, exc)
            raise
        close_call(opened, None, _messages_text(result))
        return result

    return _wraps(get_chat_message_contents, original)


def _open_stream(kind: str, describe: Callable[[], tuple[str, Any, dict[str, Any] | str | None]]) -> _Stream | None:
    """Begin a call for an async generator about to run; None when unrecorded.

    ``describe`` returns the call's name, inputs and attributes (called here, so its errors are contained).
    """
    try:
        name, inputs, attributes = describe()
    except Exception:
        _log_once(f"starting a streamed {kind} call")
        return None
    opened = open_call(kind, name, FRAMEWORK, inputs, attributes)  # logs its own errors
    return None if opened is None else _detach(opened)


def _driven(agen: AsyncGenerator[Any, Any], stream: _Stream | None) -> AsyncGenerator[Any, Any]:
    """``agen``, run under the stream's call when there is one."""
    return agen if stream is None else _traced_agen(agen, stream)


def _wrap_chat_stream(original: Callable[..., Any]) -> Callable[..., Any]:
    async def get_streaming_chat_message_contents(
        self: Any, chat_history: Any, *args: Any, **kwargs: Any
    ) -> AsyncGenerator[Any, Any]:
        agen = original(self, chat_history, *args, **kwargs)
        stream = (
            _open_stream("call", lambda: (_chat_name(self), None, _chat_attributes(self, chat_history)))
            if _active and call_var.get() not in _prompt_calls
            else None
        )
        inner = _driven(agen, stream)
        try:
            async for item in inner:
                yield item
        finally:
            await close_inner(inner)  # also when closed early

    return _wraps(get_streaming_chat_message_contents, original)


async def _close_owned(owner: _KernelStream, exc: BaseException | None) -> None:
    """End what a kernel stream owns, if its consumer left it open."""
    nested = owner.nested
    if nested is not None:  # SK iterates it with ``async for``, which never closes it
        try:
            await close_inner(nested.agen)  # not if it is running: being closed elsewhere
        except Exception:
            _log_once("closing a nested kernel stream")
        await _close_owned(nested, exc)
    stream = owner.stream
    if stream is None or stream.ended:
        return
    source = stream.source
    try:
        if inspect.isasyncgen(source):
            if source.ag_running:
                return  # being iterated elsewhere: it ends by itself
            await close_inner(source)  # GeneratorExit at its yield: closes the function's generator, ends the call
        elif inspect.isgenerator(source):
            if source.gi_running:
                return
            source.close()
    except Exception:
        _log_once("closing a function stream left open")
    if not stream.ended:  # never started: nothing was suspended to close
        stream.end(exc if exc is not None else GeneratorExit())


def _wrap_kernel_stream(original: Callable[..., Any]) -> Callable[..., Any]:
    async def invoke_stream(self: Any, *args: Any, **kwargs: Any) -> AsyncGenerator[Any, Any]:
        agen = original(self, *args, **kwargs)
        owner = _KernelStream(agen) if _active else None
        outer = _kernel_stream.get()
        if owner is not None and outer is not None and outer.open:  # iterated by another kernel stream
            outer.open = False
            outer.nested = owner
        exc: BaseException | None = None
        try:
            while True:
                token = _kernel_stream.set(owner)  # around the step only: the consumer's context, as SK runs it
                try:
                    item = await agen.__anext__()
                except StopAsyncIteration:
                    return
                finally:
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

    return _wraps(invoke_stream, original)


def _agent_inputs(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    # `messages` is positional-or-keyword in recent SK, keyword-only in older releases.
    messages = args[0] if args else kwargs.get("messages")
    if messages is None:
        return None
    if isinstance(messages, list):
        return {"messages": [str(m) for m in messages]}
    return {"messages": str(messages)}


def _agent_name(agent: Any) -> str:
    try:
        return str(agent.name)
    except Exception:
        return type(agent).__name__


def _wrap_agent_call(original: Callable[..., Any]) -> Callable[..., Any]:
    async def get_response(self: Any, *args: Any, **kwargs: Any) -> Any:
        if not _active:
            return await original(self, *args, **kwargs)
        try:
            name, inputs = _agent_name(self), _agent_inputs(args, kwargs)
        except Exception:
            _log_once("ChatCompletionAgent.get_response")
            return await original(self, *args, **kwargs)
        opened = open_call("agent", name, FRAMEWORK, inputs)
        if opened is None:
            return await original(self, *args, **kwargs)
        try:
            result = await original(self, *args, **kwargs)
        except BaseException as exc:
            close_call(opened, exc)
            raise
        close_call(opened, None, _messages_text([getattr(result, "message", result)]))
        return result

    return _wraps(get_response, original)


def _wrap_agent_stream(original: Callable[..., Any]) -> Callable[..., Any]:
    async def invoke(self: Any, *args: Any, **kwargs: Any) -> AsyncGenerator[Any, Any]:
        agen = original(self, *args, **kwargs)
        stream = (
            _open_stream("agent", lambda: (_agent_name(self), _agent_inputs(args, kwargs), None)) if _active else None
        )
        inner = _driven(agen, stream)
        try:
            async for item in inner:
                yield item
        finally:
            await close_inner(inner)  # also when closed early

    return _wraps(invoke, original)


def _wrap_group_chat(original: Callable[..., Any]) -> Callable[..., Any]:
    async def invoke(self: Any, *args: Any, **kwargs: Any) -> AsyncGenerator[Any, Any]:
        agen = original(self, *args, **kwargs)
        if not _active or _group_chat.get() == id(self):
            inner = _driven(agen, None)
            try:
                async for item in inner:
                    yield item
            finally:
                await close_inner(inner)  # also when closed early
            return
        token = _group_chat.set(id(self))
        try:
            stream = _open_stream("call", lambda: (type(self).__name__, None, None))
        finally:
            _reset(_group_chat, token)
        # Steps see the group chat as running: its nested invokes are not recorded again.
        inner = _driven(_marking(agen, id(self)), stream)
        try:
            async for item in inner:
                yield item
        finally:
            await close_inner(inner)  # also when closed early

    return _wraps(invoke, original)


async def _marking(agen: AsyncGenerator[Any, Any], marker: int) -> AsyncGenerator[Any, Any]:
    """Run each step of ``agen`` with ``_group_chat`` set to ``marker``."""
    try:
        while True:
            token = _group_chat.set(marker)
            try:
                item = await agen.__anext__()
            except StopAsyncIteration:
                return
            finally:
                _reset(_group_chat, token)
            yield item
    finally:
        await close_inner(agen)


# --- orchestrations and the in-process runtime --------------------------------------------------

_watchers: set[asyncio.Task[None]] = set()


def _wrap_orchestration(original: Callable[..., Any]) -> Callable[..., Any]:
    async def invoke(self: Any, task: Any, runtime: Any) -> Any:
        if not _active:
            return await original(self, task, runtime)
        try:
            inputs = {"task": task if isinstance(task, str) else str(task)}
        except Exception:
            _log_once("OrchestrationBase.invoke")
            return await original(self, task, runtime)
        # The orchestration's messages are sent while its call is current, so
        # every agent it runs (in the runtime's tasks) is attributed to it.
        opened = open_call("call", type(self).__name__, FRAMEWORK, inputs)
        if opened is None:
            return await original(self, task, runtime)
        try:
            result = await original(self, task, runtime)
        except BaseException as exc:
            close_call(opened, exc)
            raise
        stream = _detach(opened)
        try:
            watcher = asyncio.ensure_future(_end_when_done(result, stream.rec))
            _watchers.add(watcher)
            watcher.add_done_callback(_watchers.discard)
        except Exception:
            _log_once("watching an orchestration result")
        return result

    return _wraps(invoke, original)


async def _end_when_done(result: Any, rec: tuple[Any, ...]) -> None:
    try:
        await result.event.wait()
    except BaseException as exc:
        end_call(rec, exc)
        raise
    error: BaseException | None = result.exception
    if error is None and result.value is None and result.cancellation_token.is_cancelled():
        error = asyncio.CancelledError("orchestration cancelled")
    value = result.value
    end_call(rec, error, _messages_text(value) if isinstance(value, list) else value)


def _wrap_envelope_init(original: Callable[..., Any]) -> Callable[..., Any]:
    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        original(self, *args, **kwargs)
        if _active:
            try:
                # Built by send_message/publish_message in the sender's task: its context.
                self.__dict__[_ENVELOPE_ATTR] = propagate(asyncio.ensure_future)
            except Exception:
                _log_once("snapshotting a runtime envelope")

    return _wraps(__init__, original)


def _wrap_process(original: Callable[..., Any]) -> Callable[..., Any]:
    async def process(self: Any, message_envelope: Any) -> None:
        spawn = message_envelope.__dict__.get(_ENVELOPE_ATTR) if _active else None
        coro = original(self, message_envelope)
        if spawn is None:
            return await coro  # type: ignore[no-any-return]
        try:
            # A task created inside the sender's context: the handler runs there.
            task = spawn(coro)
        except Exception:
            _log_once("re-installing a runtime envelope's context")
            return await coro  # type: ignore[no-any-return]
        return await task  # type: ignore[no-any-return]

    return _wraps(process, original)


def _wraps(wrapper: Callable[..., Any], original: Callable[..., Any]) -> Callable[..., Any]:
    for attr in ("__module__", "__name__", "__qualname__", "__doc__"):
        with contextlib.suppress(AttributeError):
            setattr(wrapper, attr, getattr(original, attr))
    wrapper.__wrapped__ = original  # type: ignore[attr-defined]
    return wrapper


# --- the integration ---------------------------------------------------------------------------


def _version_tuple(text: str) -> tuple[int, ...]:
    parts: list[int] = []
    for piece in text.split(".")[:3]:
        digits = "".join(ch for ch in piece if ch.isdigit())
        parts.append(int(digits or 0))
    return tuple(parts)


class SemanticKernelIntegration(Integration):
    """Records Semantic Kernel functions, chat requests, agents and orchestrations."""

    identifier = "semantic_kernel"
    extra = "semantic-kernel"

    def __init__(self) -> None:
        self._patches: list[tuple[type, str, Any]] = []  # (class, attribute, what was in its __dict__)

    def _targets(self) -> list[tuple[type, str, Callable[[Callable[..., Any]], Callable[..., Any]]]]:
        from semantic_kernel.connectors.ai.chat_completion_client_base import ChatCompletionClientBase
        from semantic_kernel.filters.kernel_filters_extension import KernelFilterExtension
        from semantic_kernel.kernel import Kernel

        targets: list[tuple[type, str, Callable[[Callable[..., Any]], Callable[..., Any]]]] = [
            (KernelFilterExtension, "construct_call_stack", _wrap_construct_call_stack),
            (ChatCompletionClientBase, "get_chat_message_contents", _wrap_chat),
            (ChatCompletionClientBase, "get_streaming_chat_message_contents", _wrap_chat_stream),
            (Kernel, "invoke_stream", _wrap_kernel_stream),
            (Kernel, "invoke_prompt_stream", _wrap_kernel_stream),
        ]
        try:
            from semantic_kernel.agents import AgentGroupChat, ChatCompletionAgent

            targets += [
                (ChatCompletionAgent, "get_response", _wrap_agent_call),
                (ChatCompletionAgent, "invoke", _wrap_agent_stream),
                (ChatCompletionAgent, "invoke_stream", _wrap_agent_stream),
                (AgentGroupChat, "invoke", _wrap_group_chat),
                (AgentGroupChat, "invoke_stream", _wrap_group_chat),
            ]
        except ImportError:
            logger.debug("openprogram: semantic_kernel agents not available; not recording agents")
        try:
            from semantic_kernel.agents.orchestration.orchestration_base import OrchestrationBase
            from semantic_kernel.agents.runtime.in_process.in_process_runtime import (
                InProcessRuntime,
                PublishMessageEnvelope,
                SendMessageEnvelope,
            )

            targets += [
                (OrchestrationBase, "invoke", _wrap_orchestration),
                (SendMessageEnvelope, "__init__", _wrap_envelope_init),
                (PublishMessageEnvelope, "__init__", _wrap_envelope_init),
                (InProcessRuntime, "_process_send", _wrap_process),
                (InProcessRuntime, "_process_publish", _wrap_process),
            ]
        except ImportError:
            logger.debug("openprogram: semantic_kernel orchestrations not available; not recording them")
        return targets

    def setup(self) -> None:
        global _active
        try:
            import semantic_kernel
        except ImportError as exc:
            raise self.missing("semantic_kernel") from exc
        version = getattr(semantic_kernel, "__version__", "0")
        if _version_tuple(version) < LOWEST_VERSION:
            lowest = ".".join(map(str, LOWEST_VERSION))
            raise DidNotEnable(
                f"semantic_kernel: semantic-kernel {version} is too old (need >= {lowest}); "
                f"pip install 'openprogram[{self.extra}]'"
            )
        targets = self._targets()
        try:
            for cls, attr, make in targets:
                missing = object()
                own = cls.__dict__.get(attr, missing)
                original = getattr(cls, attr)
                setattr(cls, attr, make(original))
                self._patches.append((cls, attr, None if own is missing else own))
        except Exception:
            self._restore()
            raise
        _active = True

    def teardown(self) -> None:
        global _active
        _active = False
        self._restore()

    def _restore(self) -> None:
        while self._patches:
            cls, attr, own = self._patches.pop()
            try:
                if own is None:
                    delattr(cls, attr)
                else:
                    setattr(cls, attr, own)
            except Exception:
                logger.exception("openprogram: could not restore %s.%s", cls.__qualname__, attr)

"""Semantic Kernel chat completion requests as ``llm`` calls: one per request a service sends.

SK loops over the rounds of auto function calling in ``ChatCompletionClientBase``'s
``get_chat_message_contents`` / ``get_streaming_chat_message_contents`` and sends each
round with ``_inner_get_chat_message_contents`` / ``_inner_get_streaming_chat_message_contents``,
which every connector overrides. So :data:`MODEL_TARGETS` wraps the round methods of every
service class that defines its own (the kit's ``overrides`` rows: the classes imported so far
and every one defined later; a subclass calling ``super()`` is one request: the kit's ``client=``).

A round's call ends when its reply has arrived, before SK runs the tools the model asked for:
those run after it, its siblings under the function or agent that made the request (as in the
GenAI conventions: ``chat``, then ``execute_tool``, under ``invoke_agent``), each with the
``tool_call_id`` of the model's call. SK iterates a round's stream with ``async for`` and
never closes it; :func:`owning_rounds` ends the rounds begun under a stream of ours that its
consumer closed (``interrupted``, with what arrived).
"""

from __future__ import annotations

import enum
import inspect
from collections.abc import AsyncGenerator, Callable, Mapping
from contextvars import ContextVar
from functools import partial
from typing import Any, TypeVar, cast

from openprogram import NoSessionError
from openprogram._kit import (
    Integration,
    ModelCall,
    ModelStream,
    Target,
    async_steps_under_call,
    close_inner,
    log_once,
    message,
    model_inputs,
    reply,
    tool_call,
    usage,
    wraps_like,
)

__all__ = ["MODEL_TARGETS", "owning_rounds"]

FRAMEWORK = "semantic_kernel"
_CHAT = "semantic_kernel.connectors.ai.chat_completion_client_base:ChatCompletionClientBase"
_ROUND = "_inner_get_chat_message_contents"
_STREAMED_ROUND = "_inner_get_streaming_chat_message_contents"

# Settings fields that are not model parameters: the request's own plumbing (messages, tools,
# streaming flags the connector sets), or what may carry credentials (extra headers, query).
_NOT_PARAMS = frozenset(
    {
        "ai_model_id",
        "extension_data",
        "extra_headers",
        "extra_query",
        "function_call",
        "function_choice_behavior",
        "functions",
        "input",
        "messages",
        "prompt",
        "service_id",
        "stream",
        "stream_options",
        "tool_choice",
        "tool_config",
        "tools",
    }
)


# --- each service class's rounds ----------------------------------------------------------------


def _wrap_round(original: Callable[..., Any], integration: Integration) -> Callable[..., Any]:
    if not inspect.iscoroutinefunction(original):
        return original  # not the shape SK awaits: left alone

    async def request(self: Any, *args: Any, **kwargs: Any) -> Any:
        if not integration.active:
            return await original(self, *args, **kwargs)
        call = _begin(ModelCall, self, args, kwargs)
        if call is None:
            return await original(self, *args, **kwargs)
        return await call.arun(partial(original, self, *args, **kwargs), _answer)  # a partial: no frame of its own

    return wraps_like(original)(request)


def _wrap_streamed_round(original: Callable[..., Any], integration: Integration) -> Callable[..., Any]:
    if not inspect.isasyncgenfunction(original):
        return original

    async def stream(self: Any, *args: Any, **kwargs: Any) -> AsyncGenerator[Any, Any]:
        inner = original(self, *args, **kwargs)
        call = _begin(ModelStream, self, args, kwargs) if integration.active else None
        if call is not None:
            call.absorb = _absorb
            owner = _owner.get()
            if owner is not None:
                owner.add(call)
            # The kit's step driver takes a ModelStream (add/finish) where its signature says StreamCall.
            inner = async_steps_under_call(inner, cast(Any, call))
        try:
            async for item in inner:
                yield item
        finally:
            await close_inner(inner)

    return wraps_like(original)(stream)


MODEL_TARGETS = (
    # ChatCompletionClientBase's own rounds only raise NotImplementedError.
    Target(_CHAT, _ROUND, _wrap_round, overrides=True, skip_owner=True),
    Target(_CHAT, _STREAMED_ROUND, _wrap_streamed_round, overrides=True, skip_owner=True),
)
"""The rows the adapter's table adds for the requests each service sends."""


# --- one request: begin, answer ------------------------------------------------------------------

_Request = TypeVar("_Request", bound=ModelCall)


def _begin(kind: type[_Request], service: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> _Request | None:
    # try/except, not guarded(): this runs for every round (a `with` costs three calls).
    try:
        history = args[0] if args else kwargs.get("chat_history")
        settings = args[1] if len(args) > 1 else kwargs.get("settings")
        return kind.request(
            FRAMEWORK,
            _model_of(service, settings),
            partial(_request_inputs, history, settings),
            provider=getattr(type(service), "MODEL_PROVIDER_NAME", None),
            stream=kind is ModelStream,
            client=service,
        )
    except NoSessionError:
        raise  # the "error" no-session policy, by the user's choice
    except Exception as error:
        log_once(FRAMEWORK, "describing a chat request", error)
    return None


def _model_of(service: Any, settings: Any) -> str:
    """What SK sends as the model: the settings' ``ai_model_id``, else the service's, else its class name."""
    return str(getattr(settings, "ai_model_id", None) or service.ai_model_id or type(service).__name__)


def _answer(call: ModelCall, replies: Any) -> None:
    output = token_usage = None
    try:
        first = replies[0] if replies else None  # the choice SK goes on with
        if first is not None:
            counts = _counts(first.metadata)
            token_usage = usage(*counts) if counts else None
            if call.captures_content:  # the switch as the request read it
                text, calls, _ = _contents(first)
                finish = first.finish_reason
                if isinstance(finish, str):
                    finish = str.__str__(finish)  # SK's FinishReason is a str enum: its text, without a call
                output = reply(text, tool_calls=calls, finish_reason=finish)
    except Exception as error:
        log_once(FRAMEWORK, "reading a chat reply", error)
    call.answered(output, token_usage)


def _request_inputs(history: Any, settings: Any) -> dict[str, Any]:
    return model_inputs(_messages(history.messages), _tool_names(getattr(settings, "tools", None)), _params(settings))


# --- SK's contents in the one shape -----------------------------------------------------------------


def _messages(history: list[Any]) -> list[dict[str, Any]]:
    translated: list[dict[str, Any]] = []
    for sent in history:
        text, calls, results = _contents(sent)
        if results:  # a tool message: one per result, as connectors send them
            for result in results:
                value = result.result
                text_sent = value if isinstance(value, str) or value is None else str(value)  # what the model is sent
                translated.append(message("tool", text_sent, tool_call_id=result.id))
            continue
        name = sent.role
        if isinstance(name, str):
            name = str.__str__(name)  # SK's AuthorRole is a str enum: its plain text is read without a call
        translated.append(message(name, text, tool_calls=calls))
    return translated


def _contents(sent: Any) -> tuple[str | None, list[dict[str, Any]], list[Any]]:
    """A message's text, its tool calls in the one shape, and its function results: one pass over its items."""
    texts: list[str] = []
    calls: list[dict[str, Any]] = []
    results: list[Any] = []
    for item in sent.items:
        kind = getattr(item, "content_type", None)
        if kind == "text":
            if item.text:
                texts.append(item.text)
        elif kind == "function_call":
            arguments = item.arguments
            if type(arguments) is str:
                decoded = _decoded_arguments.get(arguments, _decoded_arguments)
                arguments = _decoded(arguments) if decoded is _decoded_arguments else decoded
            elif isinstance(arguments, Mapping):
                arguments = dict(arguments)
            calls.append(tool_call(item.id, item.name, arguments))
        elif kind == "function_result":
            results.append(item)
    return ("".join(texts) if texts else None), calls, results


# Tool-call arguments (JSON text) decoded by the kit's tool_call, by their text: a round's
# history resends every earlier call. A decoded value is only read: each record encodes it at once.
_decoded_arguments: dict[str, Any] = {}


def _decoded(arguments: str) -> Any:
    decoded = tool_call(None, None, arguments)["arguments"]
    if len(arguments) <= 1024:
        if len(_decoded_arguments) >= 512:
            _decoded_arguments.clear()
        _decoded_arguments[arguments] = decoded
    return decoded


def _tool_names(tools: Any) -> list[str]:
    """The names of the tools a request offers, in the shape of any connector's settings."""
    names: list[str] = []
    for tool in tools or ():
        if type(tool) is dict and "function" in tool:  # OpenAI, Mistral, Ollama, NVIDIA
            names.append(str(tool["function"].get("name")))
            continue
        spec = tool if isinstance(tool, Mapping) else getattr(tool, "__dict__", {})
        declarations = spec.get("function_declarations")  # Google: one tool, many functions
        for entry in declarations if declarations else [spec.get("function") or spec.get("toolSpec") or tool]:
            name = entry.get("name") if isinstance(entry, Mapping) else getattr(entry, "name", None)
            if name:
                names.append(str(name))
    return names


def _params(settings: Any) -> dict[str, Any]:
    """The model parameters the request's settings set (temperature, max_tokens, top_p, stop, ...)."""
    found: dict[str, Any] = {}
    # model_fields_set's own store, read without its property (one call less each request).
    for name in getattr(settings, "__pydantic_fields_set__", None) or settings.model_fields_set:
        if name not in _NOT_PARAMS:
            found[name] = _plain(getattr(settings, name, None))
    for name, value in (settings.extension_data or {}).items():
        if name not in _NOT_PARAMS:
            found.setdefault(name, _plain(value))
    return found


def _plain(value: Any) -> Any:
    if isinstance(value, type):
        return value.__name__  # a response_format given as a model class
    return value.value if isinstance(value, enum.Enum) else value


def _counts(metadata: Any) -> tuple[Any, Any, Any] | None:
    """The counts in ``metadata["usage"]``: a ``CompletionUsage`` (prompt/completion tokens) or a connector's dict."""
    found = metadata.get("usage") if isinstance(metadata, dict) else None
    if found is None:
        return None
    # A pydantic model's fields are in its __dict__ (its getattr of a missing name is slow); it is
    # told apart before the (slower) Mapping check.
    fields: Mapping[str, Any]
    if type(found) is dict:
        fields = found
    elif hasattr(type(found), "__pydantic_fields__"):
        fields = found.__dict__
    else:
        fields = found if isinstance(found, Mapping) else getattr(found, "__dict__", {})
    input_tokens, output_tokens = fields.get("prompt_tokens"), fields.get("completion_tokens")
    if input_tokens is None and output_tokens is None:
        input_tokens, output_tokens = fields.get("input_tokens"), fields.get("output_tokens")
    return input_tokens, output_tokens, fields.get("total_tokens")


def _first(a: Any, b: Any) -> Any:
    return a if a is not None else b


# --- streams ----------------------------------------------------------------------------------------


def _absorb(stream: ModelStream, item: Any) -> None:
    """One step of a streamed round: a list of chunks, one per choice; the first choice is joined."""
    for chunk in item if isinstance(item, list) else (item,):
        choice: Any = getattr(chunk, "choice_index", 0)
        if chunk is None or choice:
            continue
        for part in chunk.items:
            kind = getattr(part, "content_type", None)
            if kind == "text":
                stream.add_text(part.text)
            elif kind == "function_call":
                key = part.index if part.index is not None else part.id
                arguments = dict(part.arguments) if isinstance(part.arguments, Mapping) else part.arguments
                stream.add_tool_call(key, part.id, part.name, arguments)
        stream.set_finish_reason(chunk.finish_reason)
        counts = _counts(chunk.metadata)
        if counts is not None:  # connectors report usage in one chunk or spread over several: keep the latest of each
            known = stream.state or (None, None, None)
            stream.state = tuple(_first(new, old) for new, old in zip(counts, known, strict=True))
            stream.set_usage(usage(*stream.state))


class _OpenRounds:
    """The streamed rounds begun while a stream of ours ran a step, and those of the streams it runs."""

    __slots__ = ("parent", "rounds")

    def __init__(self, parent: _OpenRounds | None) -> None:
        self.parent = parent
        self.rounds: list[ModelStream] = []

    def add(self, call: ModelStream) -> None:
        owner: _OpenRounds | None = self
        while owner is not None:
            owner.rounds = [open_round for open_round in owner.rounds if not open_round.ended]
            owner.rounds.append(call)
            owner = owner.parent

    def end(self, exc: BaseException | None) -> None:
        for open_round in self.rounds:
            if not open_round.ended:
                open_round.finish(exc if exc is not None else GeneratorExit())


_owner: ContextVar[_OpenRounds | None] = ContextVar("openprogram.sk.open_rounds", default=None)


async def owning_rounds(agen: AsyncGenerator[Any, Any]) -> AsyncGenerator[Any, Any]:
    """Iterate ``agen``; the rounds begun under it and still open when it ends end with it (closed: interrupted)."""
    owner = _OpenRounds(_owner.get())
    exc: BaseException | None = None
    try:
        while True:
            token = _owner.set(owner)  # around the step only: the consumer's context, as SK runs it
            try:
                item = await agen.__anext__()
            except StopAsyncIteration:
                return
            finally:
                _owner.reset(token)
            yield item
    except BaseException as error:
        exc = error
        raise
    finally:
        try:
            await close_inner(agen)
        finally:
            owner.end(exc)

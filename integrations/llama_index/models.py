"""LlamaIndex LLM chat requests as ``llm`` calls, in the one shape for every framework.

Every LLM class's own ``chat``, ``achat``, ``stream_chat`` and ``astream_chat`` is wrapped
(``Target(..., overrides=True)`` on ``BaseLLM``: subclasses defined later too, the user's own
included). ``chat_with_tools`` and the agents' requests all end in one of them. A request that
the same LLM makes again inside its own (``CustomLLM.achat`` calling ``chat``) is that request,
recorded once. A streamed request stays open while its chunks are read and ends with the whole
reply (``interrupted`` when the reader stops early).

The dispatcher's ``LLMChatStartEvent``/``LLMChatEndEvent`` carry the same messages and reply,
but an event handler can make nothing current and never hears of a stream its reader
abandoned; the methods themselves are wrapped instead.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from openprogram._kit import (
    Integration,
    ModelCall,
    ModelStream,
    async_steps_under_call,
    guarded,
    message,
    messages_of,
    model_inputs,
    reply,
    steps_under_call,
    tool_call,
    usage,
    wraps_like,
)

__all__ = ["wrap_achat", "wrap_astream_chat", "wrap_chat", "wrap_stream_chat"]

FRAMEWORK = "llama_index"
# LLM fields recorded as a request's params, when the LLM class has them.
_PARAMS = ("temperature", "max_tokens", "top_p", "seed")


def wrap_chat(original: Callable[..., Any], integration: Integration) -> Callable[..., Any]:
    def chat(self: Any, messages: Sequence[Any], **kwargs: Any) -> Any:
        call = _begin(integration, self, messages, kwargs, stream=False) if integration.active else None
        if call is None:
            return original(self, messages, **kwargs)
        return call.run(lambda: original(self, messages, **kwargs), _answered)

    return wraps_like(original)(chat)


def wrap_achat(original: Callable[..., Any], integration: Integration) -> Callable[..., Any]:
    async def achat(self: Any, messages: Sequence[Any], **kwargs: Any) -> Any:
        call = _begin(integration, self, messages, kwargs, stream=False) if integration.active else None
        if call is None:
            return await original(self, messages, **kwargs)
        return await call.arun(lambda: original(self, messages, **kwargs), _answered)

    return wraps_like(original)(achat)


def wrap_stream_chat(original: Callable[..., Any], integration: Integration) -> Callable[..., Any]:
    """``stream_chat`` returns a generator: the call is open until it is read to its end."""

    def stream_chat(self: Any, messages: Sequence[Any], **kwargs: Any) -> Any:
        call = _begin(integration, self, messages, kwargs, stream=True) if integration.active else None
        if call is None:
            return original(self, messages, **kwargs)
        try:
            with call:
                chunks = original(self, messages, **kwargs)
        except BaseException as exc:
            call.failed(exc)
            raise
        return steps_under_call(chunks, call)

    return wraps_like(original)(stream_chat)


def wrap_astream_chat(original: Callable[..., Any], integration: Integration) -> Callable[..., Any]:
    """``astream_chat`` is awaited for an async generator: the call is open until it is read to its end."""

    async def astream_chat(self: Any, messages: Sequence[Any], **kwargs: Any) -> Any:
        call = _begin(integration, self, messages, kwargs, stream=True) if integration.active else None
        if call is None:
            return await original(self, messages, **kwargs)
        try:
            with call:
                chunks = await original(self, messages, **kwargs)
        except BaseException as exc:
            call.failed(exc)
            raise
        return async_steps_under_call(chunks, call)

    return wraps_like(original)(astream_chat)


def _begin(integration: Integration, llm: Any, messages: Sequence[Any], kwargs: dict[str, Any], *, stream: bool) -> Any:
    name, provider = _model_of(llm)
    kind = ModelStream if stream else ModelCall
    call = kind.request(
        FRAMEWORK,
        name,
        inputs=lambda: _inputs(llm, messages, kwargs),
        provider=provider,
        stream=stream,
        client=llm,
    )
    if isinstance(call, ModelStream):
        call.absorb = _absorb
    return call


def _model_of(llm: Any) -> tuple[str, str | None]:
    """The model's name (the LLM's ``model`` field, else its metadata's, else its class) and provider."""
    name: Any = None
    with guarded(FRAMEWORK, "naming a model"):
        name = getattr(llm, "model", None) or getattr(llm, "model_name", None)
        if not isinstance(name, str) or not name:
            name = llm.metadata.model_name
    if not isinstance(name, str) or not name or name == "unknown":
        name = type(llm).__name__
    # Provider packages are ``llama_index.llms.<provider>``.
    module = type(llm).__module__.split(".")
    provider = module[2] if len(module) > 2 and module[:2] == ["llama_index", "llms"] else None
    return name, provider


def _inputs(llm: Any, messages: Sequence[Any], kwargs: Mapping[str, Any]) -> dict[str, Any]:
    tools = [_tool_name(spec) for spec in kwargs.get("tools") or ()]
    params = {key: getattr(llm, key, None) for key in _PARAMS}
    for key in _PARAMS:
        if kwargs.get(key) is not None:
            params[key] = kwargs[key]
    return model_inputs(messages_of(messages, _translated), tools, {k: v for k, v in params.items() if _plain(v)})


def _plain(value: Any) -> bool:
    return isinstance(value, (int, float, str)) and not isinstance(value, bool)


def _tool_name(spec: Any) -> Any:
    """A tool offered to the model: an OpenAI-style dict, a plain ``{"name": ...}``, or a LlamaIndex tool."""
    if isinstance(spec, Mapping):
        function = spec.get("function")
        if isinstance(function, Mapping):
            return function.get("name")
        return spec.get("name")
    metadata = getattr(spec, "metadata", None)
    return getattr(metadata, "name", None) or getattr(spec, "name", None)


def _translated(chat_message: Any) -> list[dict[str, Any]]:
    """A ``ChatMessage`` as its message in the one shape."""
    extra = chat_message.additional_kwargs or {}
    raw_role = getattr(chat_message.role, "value", chat_message.role)
    return [
        message(
            "tool" if raw_role in ("tool", "function") else raw_role,
            chat_message.content,
            tool_calls=_tool_calls(chat_message),
            tool_call_id=extra.get("tool_call_id"),
        )
    ]


def _tool_calls(chat_message: Any) -> list[dict[str, Any]]:
    """The tool calls a message carries: its ``tool_call`` blocks, else ``additional_kwargs["tool_calls"]``."""
    made = [
        tool_call(block.tool_call_id, block.tool_name, block.tool_kwargs)
        for block in getattr(chat_message, "blocks", None) or ()
        if getattr(block, "block_type", None) == "tool_call"
    ]
    if made:
        return made
    for called in (chat_message.additional_kwargs or {}).get("tool_calls") or ():
        function = _field(called, "function")
        made.append(tool_call(_field(called, "id"), _field(function, "name"), _field(function, "arguments")))
    return made


def _field(value: Any, name: str) -> Any:
    """A field of an OpenAI-style tool call, given as a dict or as the client's object."""
    return value.get(name) if isinstance(value, Mapping) else getattr(value, name, None)


def _answered(call: ModelCall, response: Any) -> None:
    output = None
    token_usage = None
    with guarded(FRAMEWORK, "reading a model response"):
        token_usage = _usage(response)
        if call.captures_content:
            output = _reply(response)
    call.answered(output, token_usage)


def _reply(response: Any) -> dict[str, Any]:
    answer = response.message
    return reply(answer.content, tool_calls=_tool_calls(answer), finish_reason=_finish_reason(response))


def _finish_reason(response: Any) -> Any:
    raw = response.raw
    choices = raw.get("choices") if isinstance(raw, Mapping) else getattr(raw, "choices", None)
    if isinstance(choices, Sequence) and choices:
        return _field(choices[0], "finish_reason")
    return None


def _usage(response: Any) -> dict[str, int] | None:
    """Token counts as the provider reported them: OpenAI's names in ``additional_kwargs``, or ``raw.usage``."""
    extra = response.additional_kwargs or {}
    if "prompt_tokens" in extra or "completion_tokens" in extra:
        return usage(extra.get("prompt_tokens"), extra.get("completion_tokens"), extra.get("total_tokens"))
    raw = response.raw
    counted = raw.get("usage") if isinstance(raw, Mapping) else getattr(raw, "usage", None)
    if counted is None:
        return None
    given = _first(counted, "prompt_tokens", "input_tokens")
    made = _first(counted, "completion_tokens", "output_tokens")
    return usage(given, made, _field(counted, "total_tokens"))


def _first(counted: Any, *names: str) -> Any:
    for name in names:
        value = _field(counted, name)
        if value is not None:
            return value
    return None


def _absorb(stream: ModelStream, chunk: Any) -> None:
    """One streamed ``ChatResponse``: its delta joins the text; tool calls and usage come whole, the latest wins."""
    stream.add_text(chunk.delta)
    # A chunk's message is the reply so far: its tool calls' arguments, once whole JSON, arrive decoded and
    # replace what an earlier chunk gave.
    for index, called in enumerate(_tool_calls(chunk.message)):
        stream.add_tool_call(index, called["id"], called["name"], called["arguments"])
    stream.set_usage(_usage(chunk))
    stream.set_finish_reason(_finish_reason(chunk))

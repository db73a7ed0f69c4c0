"""LangChain chat models: every request a ``BaseChatModel`` sends is one ``llm`` call, under the call that asked.

Its ``framework`` is the one whose run it is in (:mod:`.caller`): ``"langgraph"`` inside a graph, else ``"langchain"``.

Two funnels on ``BaseChatModel`` catch every request once. ``_generate_with_cache`` /
``_agenerate_with_cache`` run one request each for ``invoke``, ``ainvoke``, ``batch``,
``abatch`` and ``generate`` (through ``bind_tools``, ``with_structured_output`` and the
agents built on them), including the streaming LangGraph and ``astream_events`` drive
inside ``invoke``. ``stream`` / ``astream`` call the model's ``_stream`` themselves, or fall
back to ``invoke``: the same request, recorded once (the kit's ``client=``).
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Callable, Generator, Iterable, Sequence
from typing import Any, TypeVar

from openprogram._kit import (
    Integration,
    ModelCall,
    ModelStream,
    Target,
    async_steps_under_call,
    attribute,
    close_inner,
    content_captured,
    log_once,
    message,
    messages_of,
    model_inputs,
    reply,
    steps_under_call,
    tool_call,
    usage,
    wraps_like,
)

from .caller import running_framework

__all__ = ["CHAT_MODEL_TARGETS"]

_CHAT_MODEL = "langchain_core.language_models.chat_models:BaseChatModel"
_Call = TypeVar("_Call", bound=ModelCall)

# The arguments of the patched methods that are not the request's own keywords.
_PLUMBING = frozenset({"stop", "run_manager", "config", "input"})
# Request keywords that are not model parameters: the tools offered, LangSmith's tracing extras.
_NOT_PARAMS = frozenset({"tools", "functions", "ls_structured_output_format", "structured_output_format", "stream"})
# Content blocks that carry no text of the message: tool calls (recorded as tool_calls) and reasoning.
_TEXTLESS_BLOCKS = frozenset(
    {"tool_use", "tool_call", "tool_call_chunk", "invalid_tool_call", "function_call", "reasoning", "thinking"}
)
_FINISH_KEYS = ("finish_reason", "stop_reason")  # OpenAI-style, Anthropic-style response metadata


# --- who is asked, and what ----------------------------------------------------------


def _described(
    model: Any, stop: Any, kwargs: dict[str, Any], framework: str, manager: Any = None
) -> tuple[str, Any, dict[str, Any]]:
    """The model's name, its provider and LangSmith's standard parameters (``_get_ls_params``) for this request.

    LangChain puts those parameters in the metadata of the request's run manager: read there
    when it did, rather than asking the model again.
    """
    standard: dict[str, Any] = {}
    metadata = attribute(manager, "metadata")
    if isinstance(metadata, dict) and "ls_model_type" in metadata:
        standard = metadata  # only read: its ``ls_`` keys
    else:
        try:
            params = {k: v for k, v in kwargs.items() if k not in _NOT_PARAMS}
            standard = dict(model._get_ls_params(stop=stop, **params))
        except Exception as exc:
            log_once(framework, f"{type(model).__name__}._get_ls_params", exc)
    name = standard.get("ls_model_name") or next(
        (
            value
            for value in (attribute(model, "model_name"), attribute(model, "model"))
            if isinstance(value, str) and value
        ),
        None,
    )
    return str(name or type(model).__name__), standard.get("ls_provider"), standard


def _inputs(messages: Iterable[Any], stop: Any, kwargs: dict[str, Any], standard: dict[str, Any]) -> dict[str, Any]:
    params = {key: value for key, value in kwargs.items() if key not in _NOT_PARAMS and _is_param(value)}
    params.setdefault("temperature", standard.get("ls_temperature"))
    params.setdefault("max_tokens", standard.get("ls_max_tokens"))
    params.setdefault("stop", stop or standard.get("ls_stop"))
    tools = [*(kwargs.get("tools") or ()), *(kwargs.get("functions") or ())]
    return model_inputs(messages_of(messages, _one_message), [_tool_name(t) for t in tools], params)


def _is_param(value: Any) -> bool:
    if isinstance(value, (list, tuple)):
        return all(isinstance(item, str) for item in value)
    return isinstance(value, (str, int, float, bool))


def _tool_name(tool: Any) -> Any:
    """The name of a tool as offered: an OpenAI / Anthropic / Bedrock dict, a BaseTool, a function or a class."""
    if isinstance(tool, dict):
        for nested in ("function", "toolSpec"):
            if isinstance(tool.get(nested), dict):
                return tool[nested].get("name")
        return tool.get("name") or tool.get("type")  # a provider's built-in tool: {"type": "web_search"}
    name = getattr(tool, "name", None)
    return name if isinstance(name, str) else getattr(tool, "__name__", type(tool).__name__)


def _request_messages(request: Any) -> list[Any]:
    """The messages of a ``stream()`` request: a str, a PromptValue, or a list of messages, tuples, dicts, strs."""
    if hasattr(request, "to_messages"):
        return list(request.to_messages())
    from langchain_core.messages import convert_to_messages

    return list(convert_to_messages([request] if isinstance(request, str) else request))


def _one_message(item: Any) -> list[dict[str, Any]]:
    # A graph's state keeps its messages from request to request: the kit translates each once.
    return [_message(item)]


def _message(item: Any) -> dict[str, Any]:
    kind = str(attribute(item, "type", "user"))
    if kind == "chat":  # a ChatMessage names its own role
        kind = str(attribute(item, "role", kind))
    calls = [tool_call(c.get("id"), c.get("name"), c.get("args")) for c in attribute(item, "tool_calls") or ()]
    return message(
        kind.removesuffix("MessageChunk"),
        _text(attribute(item, "content")),
        tool_calls=calls,
        tool_call_id=attribute(item, "tool_call_id"),
    )


def _text(content: Any) -> Any:
    """A message's content: its text when its blocks are text (tool calls and reasoning aside), else the blocks."""
    if not isinstance(content, list):
        return content
    texts: list[str] = []
    for block in content:
        if isinstance(block, str):
            texts.append(block)
        elif isinstance(block, dict) and block.get("type") == "text":
            texts.append(str(block.get("text") or ""))
        elif not (isinstance(block, dict) and block.get("type") in _TEXTLESS_BLOCKS):
            return content
    return "".join(texts)


# --- what came back -----------------------------------------------------------------


def _finish_reason(reply_message: Any) -> Any:
    metadata = attribute(reply_message, "response_metadata") or {}
    return next((metadata[key] for key in _FINISH_KEYS if metadata.get(key) is not None), None)


def _usage(reply_message: Any) -> dict[str, int] | None:
    counts = attribute(reply_message, "usage_metadata")
    if not counts:
        return None
    return usage(counts.get("input_tokens"), counts.get("output_tokens"), counts.get("total_tokens"))


def _answer(call: ModelCall, result: Any) -> None:
    """End ``call`` with the ChatResult's (first) message: its reply and usage."""
    output = counts = None
    try:
        answer = result.generations[0].message
        counts = _usage(answer)
        if content_captured():
            calls = [tool_call(c.get("id"), c.get("name"), c.get("args")) for c in answer.tool_calls or ()]
            output = reply(_text(answer.content), tool_calls=calls, finish_reason=_finish_reason(answer))
    except Exception as exc:
        log_once(call.framework, "reading a chat model's reply", exc)
    call.answered(output, counts)


def _absorb(stream: ModelStream, chunk: Any) -> None:
    """One streamed piece: an AIMessageChunk, or the whole AIMessage of a model that does not stream."""
    content = getattr(chunk, "content", None)
    if isinstance(content, str):
        stream.add_text(content)
    elif isinstance(content, list):
        for block in content:
            if isinstance(block, dict) and block.get("type") == "text":
                stream.add_text(block.get("text"))
            elif isinstance(block, str):
                stream.add_text(block)
    pieces = getattr(chunk, "tool_call_chunks", None)
    if pieces is None:
        for i, whole in enumerate(getattr(chunk, "tool_calls", None) or ()):
            stream.add_tool_call(i, whole.get("id"), whole.get("name"), whole.get("args"))
    for i, piece in enumerate(pieces or ()):
        index = piece.get("index")  # pieces of one call share it; a piece without one stands alone
        stream.add_tool_call(
            (stream.count, i) if index is None else index, piece.get("id"), piece.get("name"), piece.get("args")
        )
    counts = getattr(chunk, "usage_metadata", None)
    if counts:  # summed over the chunks, as AIMessageChunk's ``+`` does
        total = stream.state or {"input_tokens": 0, "output_tokens": 0, "total_tokens": 0}
        for key in total:
            total[key] += counts.get(key) or 0
        stream.state = total
        stream.set_usage(usage(**total))
    stream.set_finish_reason(_finish_reason(chunk))


# --- the wrappers -----------------------------------------------------------------


def _request(
    cls: type[_Call],
    model: Any,
    messages: Callable[[], Iterable[Any]],
    stop: Any,
    kwargs: dict[str, Any],
    framework: str,
) -> _Call | None:
    """Begin the ``llm`` call of one request of ``model`` (``messages()`` builds its messages, only if captured)."""
    keywords = {key: value for key, value in kwargs.items() if key not in _PLUMBING}
    name, provider, standard = _described(model, stop, keywords, framework, kwargs.get("run_manager"))
    return cls.request(
        framework,
        name,
        lambda: _inputs(messages(), stop, keywords, standard),
        provider=provider,
        stream=cls is ModelStream,
        client=model,
    )


def _stop_of(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    return kwargs.get("stop", args[0] if args else None)  # ``_generate_with_cache(messages, stop, run_manager)``


def _wrap_generate(original: Callable[..., Any], integration: Integration) -> Callable[..., Any]:
    def _generate_with_cache(self: Any, messages: Any, *args: Any, **kwargs: Any) -> Any:
        if not integration.active:
            return original(self, messages, *args, **kwargs)
        call = _request(ModelCall, self, lambda: messages, _stop_of(args, kwargs), kwargs, running_framework.get())
        if call is None:
            return original(self, messages, *args, **kwargs)
        return call.run(lambda: original(self, messages, *args, **kwargs), _answer)

    return wraps_like(original)(_generate_with_cache)


def _wrap_agenerate(original: Callable[..., Any], integration: Integration) -> Callable[..., Any]:
    async def _agenerate_with_cache(self: Any, messages: Any, *args: Any, **kwargs: Any) -> Any:
        if not integration.active:
            return await original(self, messages, *args, **kwargs)
        call = _request(ModelCall, self, lambda: messages, _stop_of(args, kwargs), kwargs, running_framework.get())
        if call is None:
            return await original(self, messages, *args, **kwargs)
        return await call.arun(lambda: original(self, messages, *args, **kwargs), _answer)

    return wraps_like(original)(_agenerate_with_cache)


def _begin_stream(model: Any, args: tuple[Any, ...], kwargs: dict[str, Any], framework: str) -> ModelStream | None:
    request = args[0] if args else kwargs.get("input")
    stop = kwargs.get("stop")
    stream = _request(ModelStream, model, lambda: _request_messages(request), stop, kwargs, framework)
    if stream is None:
        return None
    stream.absorb = _absorb
    return stream


def _wrap_stream(original: Callable[..., Any], integration: Integration) -> Callable[..., Any]:
    def stream(self: Any, *args: Any, **kwargs: Any) -> Generator[Any, Any, Any]:
        if not integration.active:
            return (yield from original(self, *args, **kwargs))
        call = _begin_stream(self, args, kwargs, running_framework.get())
        chunks = original(self, *args, **kwargs)
        return (yield from (chunks if call is None else steps_under_call(chunks, call)))

    return wraps_like(original)(stream)


def _wrap_astream(original: Callable[..., Any], integration: Integration) -> Callable[..., Any]:
    async def astream(self: Any, *args: Any, **kwargs: Any) -> AsyncGenerator[Any, Any]:
        call = _begin_stream(self, args, kwargs, running_framework.get()) if integration.active else None
        chunks = original(self, *args, **kwargs)
        inner = chunks if call is None else async_steps_under_call(chunks, call)
        try:
            async for chunk in inner:
                yield chunk
        finally:
            await close_inner(inner)  # abandoned: the request's call ends "interrupted" now

    return wraps_like(original)(astream)


CHAT_MODEL_TARGETS: Sequence[Target] = (
    Target(_CHAT_MODEL, "_generate_with_cache", _wrap_generate),
    Target(_CHAT_MODEL, "_agenerate_with_cache", _wrap_agenerate),
    Target(_CHAT_MODEL, "stream", _wrap_stream),
    Target(_CHAT_MODEL, "astream", _wrap_astream),
)
"""The rows of the LangChain adapter's table for chat models: each request, an ``llm`` call."""

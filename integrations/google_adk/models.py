"""Model requests: each ``BaseLlm.generate_content_async`` (every subclass's own) as one ``llm`` call.

ADK sends every request through the model's ``generate_content_async``, an async generator:
one ``LlmResponse`` for a plain request, ``partial`` chunks and then the whole reply for a
streamed one (``stream=True``). The request is complete there (contents, system instruction,
tools, config), after every ``before_model_callback`` and plugin has had its say, so what is
recorded is what the model was sent. The call is current around each step of the generator
(a fallback model calling another nests under it), and ends when the generator does.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Callable, Sequence
from typing import Any

from openprogram._kit import (
    Integration,
    ModelCall,
    async_steps_under_call,
    close_inner,
    guarded,
    log_once,
    message,
    messages_of,
    model_inputs,
    reply,
    tool_call,
    usage,
    wraps_like,
)

__all__ = ["FRAMEWORK", "content_text", "wrap_generate"]

FRAMEWORK = "google_adk"
# GenerateContentConfig fields recorded as a request's params (ours: ``max_tokens``, ``stop``).
_PARAMS = {
    "temperature": "temperature",
    "top_p": "top_p",
    "top_k": "top_k",
    "max_output_tokens": "max_tokens",
    "seed": "seed",
    "presence_penalty": "presence_penalty",
    "frequency_penalty": "frequency_penalty",
    "stop_sequences": "stop",
    "response_mime_type": "response_mime_type",
}
# Model classes whose provider their class says (by class name: none of them is imported here).
_PROVIDERS = {
    "Gemini": "google",
    "Gemma": "google",
    "ApigeeLlm": "google",
    "AnthropicLlm": "anthropic",
    "Claude": "anthropic",
}


def wrap_generate(original: Callable[..., Any], integration: Integration) -> Callable[..., Any]:
    """A class's own ``generate_content_async``: one ``llm`` call while its responses are iterated."""

    async def generate_content_async(
        self: Any, llm_request: Any, *args: Any, **kwargs: Any
    ) -> AsyncGenerator[Any, Any]:
        responses = original(self, llm_request, *args, **kwargs)
        request = _begin(self, llm_request, args, kwargs) if integration.active else None
        inner = responses if request is None else async_steps_under_call(responses, request)
        try:
            async for response in inner:
                yield response
        finally:
            await close_inner(inner)

    return wraps_like(original)(generate_content_async)


class _Request:
    """One request while its responses arrive: the call is current around each step; the reply is
    the last whole response (a streamed request's partial chunks joined, if no whole one came)."""

    __slots__ = ("call", "finish_reason", "partial", "token_usage", "whole")

    def __init__(self, call: ModelCall) -> None:
        self.call = call
        self.whole: Any = None  # the last response that was not a partial chunk
        self.partial: list[Any] = []  # partial chunks since it
        self.token_usage: dict[str, int] | None = None
        self.finish_reason: Any = None

    def __enter__(self) -> Any:
        return self.call.__enter__()

    def __exit__(self, *exc_info: Any) -> None:
        self.call.__exit__(*exc_info)

    def add(self, response: Any) -> None:
        with guarded(FRAMEWORK, "reading a model response"):
            counted = _usage(getattr(response, "usage_metadata", None))
            if counted:
                self.token_usage = counted
            if getattr(response, "finish_reason", None) is not None:
                self.finish_reason = response.finish_reason
            if getattr(response, "partial", None):
                if len(self.partial) < 10_000:
                    self.partial.append(response)
            else:
                self.whole, self.partial = response, []

    def finish(self, exc: BaseException | None) -> None:
        output = None
        if self.call.captures_content:
            with guarded(FRAMEWORK, "reading a model reply"):
                output = self._reply()
        if isinstance(exc, GeneratorExit) and (self.whole is None or self.partial):  # the consumer stopped reading
            self.call.ended_with(None, output, self.token_usage, status="interrupted")
        elif exc is not None and not isinstance(exc, GeneratorExit):  # ADK closes a stream once it has the reply
            self.call.failed(exc)
        else:
            self.call.answered(output, self.token_usage)

    def _reply(self) -> dict[str, Any]:
        responses = [self.whole] if self.whole is not None and not self.partial else self.partial
        texts: list[str] = []
        called: list[dict[str, Any]] = []
        for response in responses:
            said = _reply_of(getattr(response, "content", None))
            if said["content"]:
                texts.append(said["content"])
            called += said.get("tool_calls", ())
        return reply("".join(texts) or None, tool_calls=called, finish_reason=_finish_reason(self.finish_reason))


def _begin(model: Any, llm_request: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> _Request | None:
    stream = bool(args[0] if args else kwargs.get("stream", False))
    try:
        name = str(getattr(llm_request, "model", None) or getattr(model, "model", None) or type(model).__name__)
        provider = _provider(model, name)
    except Exception as exc:
        log_once(FRAMEWORK, "describing a model request", exc)
        return None
    call = ModelCall.request(
        FRAMEWORK, name, lambda: _request_inputs(llm_request), provider=provider, stream=stream, client=model
    )
    return None if call is None else _Request(call)


def _provider(model: Any, name: str) -> str | None:
    for cls in type(model).__mro__:
        found = _PROVIDERS.get(cls.__name__)
        if found is not None:
            return found
        if cls.__name__ == "LiteLlm" and "/" in name:  # "openai/gpt-4o": LiteLLM's provider prefix
            return name.partition("/")[0]
    return None


def _finish_reason(reason: Any) -> Any:
    if reason is None:
        return None
    return str(getattr(reason, "name", None) or getattr(reason, "value", reason)).lower()


def _usage(metadata: Any) -> dict[str, int] | None:
    if metadata is None:
        return None
    return usage(
        getattr(metadata, "prompt_token_count", None),
        getattr(metadata, "candidates_token_count", None),
        getattr(metadata, "total_token_count", None),
    )


# --- the request in the one message shape ------------------------------------------------------------


def _request_inputs(llm_request: Any) -> dict[str, Any]:
    config = getattr(llm_request, "config", None)
    messages = messages_of(llm_request.contents or (), _translated)
    system = content_text(getattr(config, "system_instruction", None))
    if system:
        messages.insert(0, message("system", system))
    tools = list(getattr(llm_request, "tools_dict", None) or ())
    params = {ours: getattr(config, theirs, None) for theirs, ours in _PARAMS.items()}
    return model_inputs(messages, tools, params)


def content_text(content: Any) -> str | None:
    """The text of a system instruction or a ``Content``: a str, a ``Content``, a ``Part`` or a list of them."""
    if content is None or isinstance(content, str):
        return content
    if isinstance(content, Sequence):
        pieces = [content_text(item) for item in content]
        return "\n".join(piece for piece in pieces if piece) or None
    parts = getattr(content, "parts", None)
    if parts is not None:
        texts = [part.text for part in parts if part.text and not getattr(part, "thought", None)]
        return "".join(texts) or None
    said = getattr(content, "text", None)
    return said if isinstance(said, str) else None


def _translated(content: Any) -> list[dict[str, Any]]:
    """One ``Content`` as messages: a model's text and tool calls; a user's text, each function response a tool
    message."""
    parts = content.parts or ()
    if content.role == "model":
        said = _reply_of(content)
        return [message("assistant", said["content"], tool_calls=said.get("tool_calls", ()))]
    made: list[dict[str, Any]] = []
    texts: list[Any] = []
    for part in parts:
        answered = part.function_response
        if answered is not None:
            made.append(message("tool", _result(answered.response), tool_call_id=answered.id or answered.name))
        elif part.text is not None:
            texts.append(part.text)
        elif part.inline_data is not None or part.file_data is not None:
            texts.append({"type": "media", "mime_type": _mime_type(part)})
    if texts:
        content_of = "".join(texts) if all(isinstance(piece, str) for piece in texts) else texts
        made.append(message("user", content_of))
    return made


def _mime_type(part: Any) -> Any:
    data = part.inline_data if part.inline_data is not None else part.file_data
    return getattr(data, "mime_type", None)


def _result(response: Any) -> Any:
    """A function response as ADK wraps it: ``{"result": value}`` for a tool that returned a value."""
    if isinstance(response, dict) and list(response) == ["result"]:
        return response["result"]
    return response


def _reply_of(content: Any) -> dict[str, Any]:
    texts: list[str] = []
    called: list[dict[str, Any]] = []
    for part in getattr(content, "parts", None) or ():
        asked = part.function_call
        if asked is not None:
            called.append(tool_call(asked.id, asked.name, dict(asked.args or {})))
        elif part.text and not part.thought:
            texts.append(part.text)
    return reply("".join(texts) or None, tool_calls=called)

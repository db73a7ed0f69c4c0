"""CrewAI model calls: each request sent through a CrewAI ``BaseLLM`` is one ``llm`` call.

Every ``BaseLLM`` subclass defines its own ``call`` / ``acall`` (CrewAI's ``LLM``, each
native provider, a user's own class): patching ``BaseLLM`` would miss them, and patching
the agent executor's call sites would miss the requests CrewAI makes elsewhere (converters,
planning, memory, flows) and a user's own ``llm.call("hi")``. So each class's own methods
are wrapped (the kit's ``overrides`` rows): the classes that exist when CrewAI is patched,
and every later one once CrewAI's own ``__init_subclass__`` has put ``call`` under its retry
policy (a retried request stays one call).

A request's token usage is what it adds to CrewAI's own accounting of its LLM: every
provider reports usage through ``_track_token_usage_internal``, wrapped the same way, and
only what the request running in this context adds counts (an LLM shared by concurrent
agents). Its finish reason is the one the provider gives CrewAI's completion event.
"""

from __future__ import annotations

import contextvars
import functools
import threading
from collections.abc import Callable, Iterable, Mapping
from types import ModuleType, TracebackType
from typing import Any

from openprogram import NoSessionError
from openprogram._kit import (
    Integration,
    ModelCall,
    Target,
    content_captured,
    guarded,
    log_once,
    message,
    model_inputs,
    reply,
    shape_of,
    tool_call,
    usage,
)

__all__ = ["MODEL_TARGETS"]

FRAMEWORK = "crewai"
_BASE_LLM = "crewai.llms.base_llm:BaseLLM"
_REQUESTS = ("call", "acall")
_TRACK_USAGE = "_track_token_usage_internal"
_COUNTERS = ("prompt_tokens", "completion_tokens", "total_tokens")
# The LLM's own settings a request is sent with (CrewAI passes none per call, except stop words).
_PARAMS = (
    "temperature",
    "top_p",
    "max_tokens",
    "max_completion_tokens",
    "seed",
    "frequency_penalty",
    "presence_penalty",
    "n",
    "reasoning_effort",
)


class _Request:
    """One recorded request: its ``llm`` call, with the usage and finish reason its LLM reports meanwhile."""

    __slots__ = ("_token", "call", "client", "counted", "counting", "finish_reason", "tokens")

    def __init__(self, call: ModelCall, client: object) -> None:
        self.call = call
        self.client = id(client)
        self.tokens = [0, 0, 0]
        self.counted = False  # the LLM reported usage (possibly zero)
        self.counting = False  # inside the LLM's usage tracking: an override calling super() counts once
        self.finish_reason: Any = None
        self._token: contextvars.Token[_Request | None] | None = None

    def __enter__(self) -> _Request:
        self.call.__enter__()
        self._token = _request.set(self)
        return self

    def __exit__(self, et: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        if self._token is not None:
            _request.reset(self._token)
            self._token = None
        self.call.__exit__(et, exc, tb)

    def count(self, before: tuple[int, ...], after: tuple[int, ...]) -> None:
        self.counted = True
        self.tokens = [total + a - b for total, a, b in zip(self.tokens, after, before, strict=True)]

    def end(self, result: Any) -> None:
        output = None
        if content_captured():
            with guarded(FRAMEWORK, "reading a model reply"):
                output = _reply(result, self.finish_reason)
        self.call.answered(output, usage(*self.tokens) if self.counted else None)


_request: contextvars.ContextVar[_Request | None] = contextvars.ContextVar("openprogram.crewai.request", default=None)
"""The request being recorded in this context: set by the request wrapper only, which resets it."""


def _asked_by(llm: object) -> _Request | None:
    """The request this context is recording, if ``llm`` is the LLM it was sent to."""
    request = _request.get()
    return request if request is not None and request.client == id(llm) else None


# --- the table rows and the wrappers ------------------------------------------------------


def _noting_finish_reason(original: Callable[..., Any], integration: Integration) -> Callable[..., Any]:
    """``BaseLLM._emit_call_completed_event``: where providers hand CrewAI the reply's finish reason."""

    def replacement(self: Any, *args: Any, **kwargs: Any) -> Any:
        request = _asked_by(self) if integration.active else None
        if request is not None and kwargs.get("finish_reason") is not None:
            request.finish_reason = kwargs["finish_reason"]
        return original(self, *args, **kwargs)

    return functools.update_wrapper(replacement, original)


def _requesting(original: Callable[..., Any], integration: Integration) -> Callable[..., Any]:
    """A class's own ``call`` / ``acall``: the request is one ``llm`` call under the caller's call."""
    replacement: Callable[..., Any]
    if shape_of(original) == "coroutine":

        async def replacement(self: Any, *args: Any, **kwargs: Any) -> Any:
            request = _begin(self, args, kwargs) if integration.active else None
            if request is None:
                return await original(self, *args, **kwargs)
            with request:
                try:
                    result = await original(self, *args, **kwargs)
                except BaseException as exc:
                    request.call.failed(exc)
                    raise
            request.end(result)
            return result

    else:

        def replacement(self: Any, *args: Any, **kwargs: Any) -> Any:
            request = _begin(self, args, kwargs) if integration.active else None
            if request is None:
                return original(self, *args, **kwargs)
            with request:
                try:
                    result = original(self, *args, **kwargs)
                except BaseException as exc:
                    request.call.failed(exc)
                    raise
            request.end(result)
            return result

    return functools.update_wrapper(replacement, original)


def _counting_usage(original: Callable[..., Any], integration: Integration) -> Callable[..., Any]:
    """A class's own ``_track_token_usage_internal``: what it adds to the LLM's totals is the request's usage."""

    def replacement(self: Any, *args: Any, **kwargs: Any) -> Any:
        if not integration.active:
            return original(self, *args, **kwargs)
        request = _asked_by(self)
        with _counting:  # another thread's report on the same LLM lands before or after this one, not within
            if request is None or request.counting:
                return original(self, *args, **kwargs)  # not a recorded request's, or a super() call inside one
            before = _counters(self)
            request.counting = True
            try:
                return original(self, *args, **kwargs)
            finally:
                request.counting = False
                with guarded(FRAMEWORK, "reading token usage"):
                    request.count(before, _counters(self))

    return functools.update_wrapper(replacement, original)


_counting = threading.RLock()


MODEL_TARGETS = (
    # BaseLLM's own call is abstract and its acall raises NotImplementedError: its subclasses' are wrapped.
    *(Target(_BASE_LLM, name, _requesting, overrides=True, skip_owner=True) for name in _REQUESTS),
    Target(_BASE_LLM, _TRACK_USAGE, _counting_usage, overrides=True),
    Target(_BASE_LLM, "_emit_call_completed_event", _noting_finish_reason),
)
"""The rows the adapter's table adds for model calls."""


def _counters(llm: Any) -> tuple[int, ...]:
    totals = getattr(llm, "_token_usage", None)
    if not isinstance(totals, Mapping):
        return (0, 0, 0)
    return tuple(int(totals.get(name) or 0) for name in _COUNTERS)


def _begin(llm: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> _Request | None:
    try:
        model, provider, streamed = _model_name(llm), _provider(llm), _streamed(llm)
    except Exception as exc:
        log_once(FRAMEWORK, "describing a model request", exc)
        return None
    try:
        call = ModelCall.request(
            FRAMEWORK, model, lambda: _inputs(llm, args, kwargs), provider=provider, stream=streamed, client=llm
        )
    except NoSessionError:
        raise  # the "error" no-session policy, by the user's choice
    return None if call is None else _Request(call, llm)


# --- what a request and its reply are ----------------------------------------------------


def _model_name(llm: Any) -> str:
    return str(getattr(llm, "model", None) or type(llm).__name__)


def _provider(llm: Any) -> str | None:
    provider = getattr(llm, "provider", None)
    if provider:
        return str(provider)
    model = getattr(llm, "model", None)
    return model.partition("/")[0] if isinstance(model, str) and "/" in model else None


def _streamed(llm: Any) -> bool:
    # The call-scoped mode (``stream_events`` streams an LLM built without stream=True); older: the field.
    effective = getattr(type(llm), "_effective_stream", None)
    return bool(effective(llm) if callable(effective) else getattr(llm, "stream", False))


def _inputs(llm: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
    # BaseLLM.call(messages, tools, callbacks, available_functions, from_task, from_agent, response_model)
    messages = args[0] if args else kwargs.get("messages")
    tools = args[1] if len(args) > 1 else kwargs.get("tools")
    response_model = args[6] if len(args) > 6 else kwargs.get("response_model")
    fields = getattr(llm, "__dict__", None) or {}  # a pydantic model's field values: no __getattr__ for those unset
    params = {name: fields.get(name) for name in _PARAMS}
    params["stop"] = list(getattr(llm, "stop_sequences", None) or ()) or None  # the executor's per-call stop words
    if response_model is not None:
        params["response_model"] = getattr(response_model, "__name__", str(response_model))
    return model_inputs(_messages(messages), _tool_names(tools), params)


def _messages(raw: Any) -> list[dict[str, Any]]:
    if raw is None:
        return []
    if isinstance(raw, str):
        return [message("user", raw)]
    made = []
    for item in raw:
        if isinstance(item, Mapping):
            calls = _tool_calls(item.get("tool_calls") or ())
            made.append(
                message(item.get("role"), item.get("content"), tool_calls=calls, tool_call_id=item.get("tool_call_id"))
            )
        else:
            made.append(message("user", str(item)))
    return made


def _tool_names(tools: Iterable[Any] | None) -> list[str]:
    """The names of the tools offered: OpenAI-style schemas (``{"function": {"name"}}``) or ``{"name"}``."""
    names = []
    for schema in tools or ():
        if isinstance(schema, Mapping):
            function = schema.get("function")
            name = function.get("name") if isinstance(function, Mapping) else schema.get("name")
        else:
            name = getattr(schema, "name", None)
        if name:
            names.append(str(name))
    return names


def _tool_calls(raw: Iterable[Any]) -> list[dict[str, Any]]:
    """Tool calls in any provider's shape, read the way CrewAI's executor reads them."""
    extract = _agent_utils().extract_tool_call_info
    calls = []
    for item in raw:
        info = extract(item)
        if info is not None:
            calls.append(tool_call(*info))
    return calls


def _reply(result: Any, finish_reason: Any) -> dict[str, Any]:
    """What ``call`` returned: text, the tool calls the model asked for (native function calling), a
    structured output, or what the LLM's own execution of ``available_functions`` returned."""
    if isinstance(result, list) and _agent_utils().is_tool_call_list(result):
        return reply(None, tool_calls=_tool_calls(result), finish_reason=finish_reason)
    return reply(result, finish_reason=finish_reason)


@functools.cache
def _agent_utils() -> ModuleType:
    from crewai.utilities import agent_utils

    return agent_utils

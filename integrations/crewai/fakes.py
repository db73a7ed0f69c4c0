"""Offline CrewAI LLMs for the demo, tests and benchmark (no network, no keys).

``scripted_llm(steps, final=..., native=...)`` returns a ``crewai`` ``BaseLLM``
that asks for the tool calls in ``steps`` one after another, then gives
``final`` as the answer, reporting its token usage the way CrewAI's providers do
(``_track_token_usage_internal``). ``openai_llm(...)`` is CrewAI's real OpenAI
provider (``LLM(model="openai/...")``) whose HTTP client answers offline with
scripted chat completions, streamed (server-sent events) or not, usage included.
Both are stateless (the step is derived from the conversation), so one instance
is safe under concurrency. crewai is imported on first use only.
"""

from __future__ import annotations

import copy
import functools
import json
import os
from collections.abc import Callable
from typing import Any

__all__ = ["CREWAI_OFFLINE_ENV", "answer_offline", "offline_environment", "openai_llm", "scripted_llm"]

#: Environment that keeps CrewAI offline (telemetry, tracing, prompts, version check);
#: it must be in place before crewai is imported.
CREWAI_OFFLINE_ENV = {
    "CREWAI_DISABLE_TELEMETRY": "true",
    "CREWAI_DISABLE_TRACKING": "true",
    "OTEL_SDK_DISABLED": "true",
    "CREWAI_TRACING_ENABLED": "false",
    "CREWAI_TESTING": "true",
    "CREWAI_DISABLE_VERSION_CHECK": "true",
}


def offline_environment() -> None:
    """Set :data:`CREWAI_OFFLINE_ENV` (values already set by the user win)."""
    for key, value in CREWAI_OFFLINE_ENV.items():
        os.environ.setdefault(key, value)


def _text(message: Any) -> str:
    content = message.get("content") if isinstance(message, dict) else str(message)
    return " ".join(map(str, content)) if isinstance(content, list) else (content or "")


class _Script:
    """The scripted behaviour, shared by the pydantic (crewai >= 1.6-ish) and plain ``BaseLLM`` variants."""

    steps: list[Any]
    final: str
    native: bool
    error: BaseException | None
    received: list[Any] | None
    context_window: int
    _track_token_usage_internal: Callable[[dict[str, Any]], None]  # BaseLLM's: how every provider reports usage

    def supports_function_calling(self) -> bool:
        return self.native

    def supports_stop_words(self) -> bool:
        return True

    def get_context_window_size(self) -> int:
        return self.context_window

    def get_input_tokens_count(self, messages: Any, tools: Any = None, response_model: Any = None) -> int:
        items = messages if isinstance(messages, list) else [messages]
        return sum(len(_text(m)) for m in items) // 4

    def call(
        self,
        messages: Any,
        tools: Any = None,
        callbacks: Any = None,
        available_functions: Any = None,
        from_task: Any = None,
        from_agent: Any = None,
        response_model: Any = None,
    ) -> Any:
        if self.error is not None:
            raise self.error
        msgs = [{"role": "user", "content": messages}] if isinstance(messages, str) else list(messages)
        if self.received is not None:
            self.received.append(copy.deepcopy(msgs))  # as sent: CrewAI may change its messages afterwards
        answer = self._answer(msgs, tools)
        # Reported as CrewAI's providers report it: the provider's usage dict, tracked on the LLM.
        prompt_tokens = sum(len(_text(m)) for m in msgs) // 4
        self._track_token_usage_internal(
            {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": len(str(answer)) // 4,
                "total_tokens": prompt_tokens + len(str(answer)) // 4,
            }
        )
        return answer

    def _answer(self, msgs: list[Any], tools: Any) -> Any:
        if self.native and tools:
            # one assistant message with tool_calls per executed batch
            done = sum(1 for m in msgs if m.get("role") == "assistant" and m.get("tool_calls"))
            if done < len(self.steps):
                step = self.steps[done]
                batch = step if isinstance(step, list) else [step]
                return [
                    {
                        "id": f"call_{done}_{i}",
                        "type": "function",
                        "function": {"name": name, "arguments": json.dumps(args)},
                    }
                    for i, (name, args) in enumerate(batch)
                ]
            return self.final
        # ReAct text protocol: count executed steps by assistant messages, not by the
        # word "Observation:" (CrewAI adds format reminders containing it).
        done = sum(
            1
            for m in msgs
            if m.get("role") == "assistant" and "Action Input:" in _text(m) and "Observation:" in _text(m)
        )
        if done < len(self.steps):
            name, args = self.steps[done]
            return f"Thought: I should use {name}\nAction: {name}\nAction Input: {json.dumps(args)}"
        return f"Thought: I now know the final answer\nFinal Answer: {self.final}"

    async def acall(self, *args: Any, **kwargs: Any) -> Any:
        return self.call(*args, **kwargs)


@functools.cache
def _llm_class() -> type:
    from crewai.llms.base_llm import BaseLLM
    from pydantic import BaseModel, Field

    if issubclass(BaseLLM, BaseModel):

        class ScriptedLLM(_Script, BaseLLM):  # type: ignore[misc, unused-ignore]
            """Asks for ``steps`` (``(tool, args)``; in native mode a list is one parallel batch), then ``final``."""

            llm_type: str = "scripted"
            steps: list[Any] = Field(default_factory=list)
            final: str = "done"
            native: bool = False
            error: Any = None
            received: Any = None
            context_window: int = 100_000

        return ScriptedLLM

    class PlainScriptedLLM(_Script, BaseLLM):  # type: ignore[misc, unused-ignore]
        """Older crewai: ``BaseLLM`` is a plain class."""

        def __init__(
            self,
            model: str,
            steps: list[Any],
            final: str,
            native: bool,
            error: Any,
            received: Any = None,
            context_window: int = 100_000,
        ) -> None:
            super().__init__(model=model)
            self.steps, self.final, self.native, self.error = steps, final, native, error
            self.received, self.context_window = received, context_window

    return PlainScriptedLLM


def scripted_llm(
    steps: list[Any] | None = None,
    *,
    final: str = "done",
    native: bool = False,
    error: BaseException | None = None,
    received: list[Any] | None = None,
    context_window: int = 100_000,
) -> Any:
    """A new scripted LLM (a ``crewai.llms.base_llm.BaseLLM``); with ``error``, every request raises it.

    ``received``, when given, gets a copy of each request's messages as the LLM was sent them;
    ``context_window`` is the size in tokens it reports (CrewAI sizes what it sends by it).
    """
    return _llm_class()(
        model="scripted-offline",
        steps=list(steps or []),
        final=final,
        native=native,
        error=error,
        received=received,
        context_window=context_window,
    )


# --- CrewAI's OpenAI provider, answered offline --------------------------------------------


def openai_llm(
    steps: list[Any] | None = None,
    *,
    final: str = "done",
    stream: bool = False,
    status: int = 200,
    model: str = "openai/gpt-4o-mini",
    **llm_kwargs: Any,
) -> Any:
    """CrewAI's ``LLM(model=...)`` (its native OpenAI provider) over an offline HTTP transport.

    Offered tools, it asks for the calls in ``steps`` (``(tool, args)``, or a list of them for
    one parallel batch) one after another, then answers ``final``; without tools it answers
    ``final``. Every completion reports usage (a stream: in its last chunk, as OpenAI does).
    ``status`` other than 200 answers every request with that HTTP error (no retries).
    """
    from crewai import LLM

    llm = LLM(model=model, api_key="sk-offline", stream=stream, **llm_kwargs)
    return answer_offline(llm, steps, final=final, status=status)


def answer_offline(llm: Any, steps: list[Any] | None = None, *, final: str = "done", status: int = 200) -> Any:
    """Give an OpenAI-provider LLM (``OpenAICompletion`` or a subclass) offline clients; see :func:`openai_llm`."""
    import httpx
    from openai import AsyncOpenAI, OpenAI

    transport = httpx.MockTransport(_OpenAIScript(list(steps or []), final, status).answer)
    key, url = "sk-offline", "http://openai.offline/v1"
    llm._client = OpenAI(api_key=key, base_url=url, max_retries=0, http_client=httpx.Client(transport=transport))
    llm._async_client = AsyncOpenAI(
        api_key=key, base_url=url, max_retries=0, http_client=httpx.AsyncClient(transport=transport)
    )
    return llm


class _OpenAIScript:
    """Answers ``POST /chat/completions`` like OpenAI: a completion, or its stream of chunks."""

    def __init__(self, steps: list[Any], final: str, status: int) -> None:
        self.steps, self.final, self.status = steps, final, status

    def answer(self, request: Any) -> Any:
        import httpx

        if self.status != 200:
            error = {"error": {"message": f"offline error {self.status}", "type": "server_error", "code": None}}
            return httpx.Response(self.status, json=error)
        body = json.loads(request.content)
        messages = body.get("messages", [])
        done = sum(1 for m in messages if m.get("role") == "assistant" and m.get("tool_calls"))
        calls = None
        if body.get("tools") and done < len(self.steps):
            step = self.steps[done]
            batch = step if isinstance(step, list) else [step]
            calls = [
                {
                    "id": f"call_{done}_{i}",
                    "type": "function",
                    "function": {"name": name, "arguments": json.dumps(args)},
                }
                for i, (name, args) in enumerate(batch)
            ]
        content = None if calls else self.final
        prompt_tokens = sum(len(str(m.get("content") or "")) for m in messages) // 4
        completion_tokens = max(1, len(content or json.dumps(calls)) // 4)
        counts = {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        }
        finish_reason = "tool_calls" if calls else "stop"
        if body.get("stream"):
            return self._stream(body["model"], content, calls, finish_reason, counts)
        choice = {
            "index": 0,
            "message": {"role": "assistant", "content": content, "tool_calls": calls},
            "finish_reason": finish_reason,
        }
        completion = {
            "id": "chatcmpl-offline",
            "object": "chat.completion",
            "created": 0,
            "model": body["model"],
            "choices": [choice],
            "usage": counts,
        }
        return httpx.Response(200, json=completion)

    @staticmethod
    def _stream(model: str, content: str | None, calls: list[Any] | None, finish_reason: str, counts: Any) -> Any:
        import httpx

        deltas: list[dict[str, Any]] = []
        if content:
            deltas += [{"role": "assistant", "content": content[i : i + 4]} for i in range(0, len(content), 4)]
        for index, call in enumerate(calls or ()):
            name, arguments = call["function"]["name"], call["function"]["arguments"]
            deltas.append(
                {
                    "tool_calls": [
                        {
                            "index": index,
                            "id": call["id"],
                            "type": "function",
                            "function": {"name": name, "arguments": ""},
                        }
                    ]
                }
            )
            deltas.append({"tool_calls": [{"index": index, "function": {"arguments": arguments}}]})
        chunk = {"id": "chatcmpl-offline", "object": "chat.completion.chunk", "created": 0, "model": model}
        events = [{**chunk, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]} for delta in deltas]
        events.append({**chunk, "choices": [{"index": 0, "delta": {}, "finish_reason": finish_reason}]})
        events.append({**chunk, "choices": [], "usage": counts})  # stream_options.include_usage, as CrewAI asks
        text = "".join(f"data: {json.dumps(event)}\n\n" for event in events) + "data: [DONE]\n\n"
        return httpx.Response(200, content=text.encode(), headers={"content-type": "text/event-stream"})

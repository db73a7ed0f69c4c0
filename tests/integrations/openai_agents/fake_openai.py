"""The SDK's own OpenAI models over an offline HTTP transport: the real provider code, scripted replies.

Each request gets the next step of a script — text, or tool calls ``(name, arguments)`` —
answered as the OpenAI API would (Responses JSON, or Chat Completions server-sent events
ending with a usage chunk). ``httpx.MockTransport`` answers in-process: no socket is opened.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import AsyncIterator, Sequence
from typing import Any

import httpx
from agents import OpenAIChatCompletionsModel, OpenAIConversationsSession, OpenAIResponsesModel
from openai import AsyncOpenAI

Step = str | Sequence[tuple[str, dict[str, Any]]]
_ids = itertools.count()


def _client(handler: Any) -> AsyncOpenAI:
    transport = httpx.MockTransport(handler)
    return AsyncOpenAI(
        api_key="offline", base_url="http://offline.invalid/v1", http_client=httpx.AsyncClient(transport=transport)
    )


def responses_model(script: Sequence[Step], model: str = "gpt-4o-mini") -> tuple[OpenAIResponsesModel, list[Any]]:
    """An ``OpenAIResponsesModel`` answering from ``script``; the list collects each request's JSON body."""
    steps = iter(script)
    sent: list[Any] = []

    def answer(request: httpx.Request) -> httpx.Response:
        sent.append(json.loads(request.content))
        step = next(steps)
        if isinstance(step, str):
            output: list[dict[str, Any]] = [
                {
                    "type": "message",
                    "id": f"msg_{next(_ids)}",
                    "role": "assistant",
                    "status": "completed",
                    "content": [{"type": "output_text", "text": step, "annotations": []}],
                }
            ]
        else:
            output = [
                {
                    "type": "function_call",
                    "id": f"fc_{next(_ids)}",
                    "call_id": f"call_{next(_ids)}",
                    "name": name,
                    "arguments": json.dumps(arguments),
                    "status": "completed",
                }
                for name, arguments in step
            ]
        body = {
            "id": f"resp_{next(_ids)}",
            "object": "response",
            "created_at": 0,
            "model": model,
            "status": "completed",
            "output": output,
            "parallel_tool_calls": True,
            "tool_choice": "auto",
            "tools": [],
            "usage": {
                "input_tokens": 21,
                "output_tokens": 7,
                "total_tokens": 28,
                "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
                "output_tokens_details": {"reasoning_tokens": 0},
            },
        }
        return httpx.Response(200, json=body)

    return OpenAIResponsesModel(model=model, openai_client=_client(answer)), sent


class _FailingClose(httpx.AsyncByteStream):
    """A response body whose close fails, as a provider's transport can: the SDK surfaces that error."""

    def __init__(self, body: bytes, error: Exception) -> None:
        self.body, self.error = body, error

    async def __aiter__(self) -> AsyncIterator[bytes]:
        yield self.body

    async def aclose(self) -> None:
        raise self.error


def chat_model(
    script: Sequence[Step], model: str = "gpt-4o-mini", close_error: Exception | None = None
) -> tuple[OpenAIChatCompletionsModel, list[Any]]:
    """An ``OpenAIChatCompletionsModel`` streaming ``script`` (4-character text pieces, arguments in two);
    with ``close_error``, closing a response's stream raises it."""
    steps = iter(script)
    sent: list[Any] = []

    def chunk(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> str:
        body = {
            "id": "chatcmpl-1",
            "object": "chat.completion.chunk",
            "created": 0,
            "model": model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
            **extra,
        }
        return f"data: {json.dumps(body)}\n\n"

    def answer(request: httpx.Request) -> httpx.Response:
        sent.append(json.loads(request.content))
        step = next(steps)
        events = [chunk({"role": "assistant", "content": ""})]
        if isinstance(step, str):
            events += [chunk({"content": step[i : i + 4]}) for i in range(0, len(step), 4)]
            finish = "stop"
        else:
            for index, (name, arguments) in enumerate(step):
                text = json.dumps(arguments)
                events.append(
                    chunk(
                        {
                            "tool_calls": [
                                {
                                    "index": index,
                                    "id": f"call_{next(_ids)}",
                                    "type": "function",
                                    "function": {"name": name, "arguments": text[: len(text) // 2]},
                                }
                            ]
                        }
                    )
                )
                events.append(
                    chunk({"tool_calls": [{"index": index, "function": {"arguments": text[len(text) // 2 :]}}]})
                )
            finish = "tool_calls"
        events.append(chunk({}, finish))
        last = {
            "id": "chatcmpl-1",
            "object": "chat.completion.chunk",
            "created": 0,
            "model": model,
            "choices": [],
            "usage": {"prompt_tokens": 13, "completion_tokens": 4, "total_tokens": 17},
        }
        events.append(f"data: {json.dumps(last)}\n\n")
        events.append("data: [DONE]\n\n")
        headers = {"content-type": "text/event-stream"}
        if close_error is not None:
            return httpx.Response(200, stream=_FailingClose("".join(events).encode(), close_error), headers=headers)
        return httpx.Response(200, text="".join(events), headers=headers)

    return OpenAIChatCompletionsModel(model=model, openai_client=_client(answer)), sent


def conversations_session() -> tuple[OpenAIConversationsSession, list[str]]:
    """An ``OpenAIConversationsSession`` over an offline Conversations API; the list collects each request's path.

    Its conversation is made remotely on its first request, so it has no id before a run starts.
    """
    paths: list[str] = []

    def answer(request: httpx.Request) -> httpx.Response:
        paths.append(f"{request.method} {request.url.path}")
        if request.url.path.endswith("/conversations"):
            return httpx.Response(200, json={"id": "conv_1", "object": "conversation", "created_at": 0, "metadata": {}})
        page = {"object": "list", "data": [], "first_id": None, "last_id": None, "has_more": False}
        return httpx.Response(200, json=page)

    return OpenAIConversationsSession(openai_client=_client(answer)), paths

"""SK's real OpenAI connector, answering offline: an httpx transport replays scripted Chat Completions replies.

Each reply is what the OpenAI API sends: a ``chat.completion`` with ``usage``, or, for a
streamed request, ``chat.completion.chunk`` events whose tool-call arguments arrive in
pieces, then the usage chunk (``stream_options.include_usage``, which SK always asks for).
A scripted ``int`` is an HTTP error status.
"""

from __future__ import annotations

import json
from typing import Any

import httpx
from openai import AsyncOpenAI
from semantic_kernel.connectors.ai.open_ai import OpenAIChatCompletion

MODEL = "gpt-4o-mini"


def tool_calls(*calls: tuple[str, str, dict[str, Any]]) -> dict[str, Any]:
    """A reply asking for tools, each ``(call id, plugin-function, arguments)``."""
    return {
        "tool_calls": [
            {"id": i, "type": "function", "function": {"name": n, "arguments": json.dumps(a)}} for i, n, a in calls
        ]
    }


def text(content: str) -> dict[str, Any]:
    """A reply answering with text."""
    return {"content": content}


class ScriptedOpenAI:
    """The transport's handler: one scripted reply per request, with the request bodies it received."""

    def __init__(self, *script: dict[str, Any] | int) -> None:
        self.script = list(script)
        self.bodies: list[dict[str, Any]] = []

    def service(self) -> OpenAIChatCompletion:
        client = AsyncOpenAI(
            api_key="offline", http_client=httpx.AsyncClient(transport=httpx.MockTransport(self)), max_retries=0
        )
        return OpenAIChatCompletion(ai_model_id=MODEL, async_client=client)

    def __call__(self, request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        self.bodies.append(body)
        step = self.script.pop(0)
        if isinstance(step, int):
            return httpx.Response(step, json={"error": {"message": "scripted failure", "type": "server_error"}})
        usage = {
            "prompt_tokens": 10 * len(self.bodies),
            "completion_tokens": 3,
            "total_tokens": 10 * len(self.bodies) + 3,
        }
        finish = "tool_calls" if "tool_calls" in step else "stop"
        if not body.get("stream"):
            message = {"role": "assistant", "content": step.get("content"), **step}
            return httpx.Response(
                200,
                json={
                    "id": "chatcmpl-1",
                    "object": "chat.completion",
                    "created": 0,
                    "model": MODEL,
                    "choices": [{"index": 0, "message": message, "finish_reason": finish}],
                    "usage": usage,
                },
            )
        events = [_chunk(delta, None) for delta in _deltas(step)]
        events += [_chunk({}, finish), {**_chunk({}, None), "choices": [], "usage": usage}]
        sse = "".join(f"data: {json.dumps(event)}\n\n" for event in events) + "data: [DONE]\n\n"
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=sse.encode())


def _deltas(step: dict[str, Any]) -> list[dict[str, Any]]:
    """The pieces a reply streams in: words of text, or each tool call's head and then its arguments in two halves."""
    if "content" in step:
        return [{"role": "assistant", "content": word + " "} for word in step["content"].split(" ")]
    deltas: list[dict[str, Any]] = []
    for index, call in enumerate(step["tool_calls"]):
        arguments = call["function"]["arguments"]
        half = len(arguments) // 2
        deltas.append(
            {
                "role": "assistant",
                "tool_calls": [
                    {
                        "index": index,
                        "id": call["id"],
                        "type": "function",
                        "function": {"name": call["function"]["name"], "arguments": ""},
                    }
                ],
            }
        )
        for piece in (arguments[:half], arguments[half:]):
            deltas.append({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
    return deltas


def _chunk(delta: dict[str, Any], finish_reason: str | None) -> dict[str, Any]:
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": MODEL,
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}],
    }

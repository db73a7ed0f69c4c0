"""Offline models for the Pydantic AI tests: Pydantic AI's own ``FunctionModel`` and ``TestModel``.

``scripted(...)`` answers like a provider does: each response carries the usage it reports
(input tokens counted over what was sent, output tokens over what it said), its finish
reason, the model name and the provider name; streamed, it sends its text in pieces and its
tool calls as deltas, and Pydantic AI accounts the usage of the stream as it does for a
provider's. ``failing(...)`` fails the way a provider does, with ``ModelHTTPError``.
"""

from __future__ import annotations

import copy
import json
from collections.abc import AsyncIterator, Collection, Sequence
from typing import Any

from pydantic_ai.exceptions import ModelHTTPError
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, DeltaToolCall, FunctionModel
from pydantic_ai.usage import RequestUsage

MODEL = "gpt-fake"

Step = Sequence[tuple[str, dict[str, Any]]]  # the tool calls of one model response


def words(value: Any) -> int:
    """What the fake counts as tokens: the words of a value's text."""
    return len(str(value).split())


def sent_tokens(messages: list[ModelMessage]) -> int:
    """The input tokens a request reports: the words of every part's content (and instructions) sent."""
    count = 0
    for past in messages:
        count += words(getattr(past, "instructions", None) or "")
        for part in past.parts:
            content = getattr(part, "content", None)
            if content is not None:
                count += words(content)
            args = getattr(part, "args", None)
            if args is not None:
                count += words(json.dumps(args) if isinstance(args, dict) else args)
    return count


def scripted(steps: Sequence[Step], final: str = "done", *, model_name: str = MODEL) -> FunctionModel:
    """A model that makes the tool calls of each step in turn, then answers ``final`` (or calls the output tool)."""
    answered = [0]

    def next_response(messages: list[ModelMessage], info: AgentInfo) -> tuple[list[Any], str]:
        index = answered[0]
        answered[0] += 1
        if index < len(steps):
            calls = [
                ToolCallPart(name, args, tool_call_id=f"call-{index}-{n}")
                for n, (name, args) in enumerate(steps[index])
            ]
            return calls, "tool_call"
        if info.output_tools and not info.allow_text_output:  # structured output: the model calls the output tool
            output = info.output_tools[0]
            return [ToolCallPart(output.name, json.loads(final), tool_call_id=f"call-{index}-out")], "tool_call"
        return [TextPart(final)], "stop"

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        parts, finish = next_response(messages, info)
        said = sum(words(getattr(p, "content", None) or json.dumps(getattr(p, "args", {}))) for p in parts)
        return ModelResponse(
            parts=parts,
            usage=RequestUsage(input_tokens=sent_tokens(messages), output_tokens=said),
            model_name=model_name,
            provider_name="openai",
            finish_reason=finish,  # type: ignore[arg-type]
        )

    async def stream(messages: list[ModelMessage], info: AgentInfo) -> AsyncIterator[Any]:
        parts, _ = next_response(messages, info)
        for part in parts:
            if isinstance(part, TextPart):
                for piece in _pieces(part.content):
                    yield piece
            else:
                text = json.dumps(part.args)
                half = len(text) // 2
                yield {0: DeltaToolCall(name=part.tool_name, json_args=text[:half], tool_call_id=part.tool_call_id)}
                yield {0: DeltaToolCall(json_args=text[half:])}

    return FunctionModel(respond, stream_function=stream, model_name=model_name)


def _pieces(text: str) -> list[str]:
    pieces = text.split(" ")
    return [piece + " " for piece in pieces[:-1]] + [pieces[-1]]


class ProviderDown(ModelHTTPError):
    """What a provider's 503 raises."""


def failing(*, model_name: str = "gpt-down") -> FunctionModel:
    """A model whose every request fails with the provider's HTTP error (streamed: before its first chunk)."""

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        raise ProviderDown(status_code=503, model_name=model_name, body={"error": "overloaded"})

    async def stream(messages: list[ModelMessage], info: AgentInfo) -> AsyncIterator[str]:
        raise ProviderDown(status_code=503, model_name=model_name, body={"error": "overloaded"})
        yield ""  # an async generator, like a provider's stream

    return FunctionModel(respond, stream_function=stream, model_name=model_name)


def file_text(index: int, size: int = 1_500) -> str:
    """A deterministic file of ``size`` characters, different for every index."""
    line = f"def function_{index}(value):  # file {index}: returns value scaled by {index}\n"
    return (line * (size // len(line) + 1))[:size]


def reader(
    steps: int, received: list[tuple[list[ModelMessage], str | None]], answers: Collection[int] = ()
) -> FunctionModel:
    """A model that asks to read ``src/file_<n>.py`` at its n-th request for ``steps`` requests, then answers
    (and answers at the requests numbered in ``answers``, counted from 0, ending a run there).

    ``received`` gets a copy of each request as the model was sent it (its messages and its
    instructions), taken at once: Pydantic AI may later change the parts of a message it sent.
    """

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        done = len(received)
        received.append((copy.deepcopy(messages), info.instructions))
        if done >= steps or done in answers:
            return ModelResponse(parts=[TextPart(f"Read {done} files.")], model_name=MODEL)
        call = ToolCallPart("read_file", {"path": f"src/file_{done}.py"}, tool_call_id=f"call_{done}")
        return ModelResponse(parts=[call], model_name=MODEL)

    return FunctionModel(respond, model_name=MODEL)

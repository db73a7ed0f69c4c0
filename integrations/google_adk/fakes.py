"""An offline ADK model for the demo, the tests and the benchmark.

:class:`ScriptedLlm` is a ``BaseLlm`` subclass that answers from a script instead of a
model: each step is text, a list of ``(tool name, arguments)`` calls, or a callable
``(llm_request) -> LlmResponse``. It reports token usage as Gemini does, streams its text
word by word when ADK asks for a streamed response (``partial`` chunks, then the whole
reply), and keeps every request it was sent in ``requests``. Importing this module imports
ADK: only the demo, tests and benchmarks import it.
"""

from __future__ import annotations

import itertools
from collections.abc import AsyncGenerator, Callable, Sequence
from typing import Any

from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.genai import types
from pydantic import Field

__all__ = ["ScriptedLlm", "calls", "text"]

Step = str | Sequence[tuple[str, dict[str, Any]]] | Callable[[LlmRequest], LlmResponse]
_ids = itertools.count()


def _usage(request: LlmRequest, parts: Sequence[types.Part]) -> types.GenerateContentResponseUsageMetadata:
    """Token counts as a provider reports them: a word a token."""
    sent = sum(len(str(part.text or "").split()) + 1 for content in request.contents for part in content.parts or ())
    said = sum(len(str(part.text or "").split()) + 1 for part in parts)
    return types.GenerateContentResponseUsageMetadata(
        prompt_token_count=sent, candidates_token_count=said, total_token_count=sent + said
    )


def text(words: str) -> list[types.Part]:
    """The parts of a text reply."""
    return [types.Part(text=words)]


def calls(*called: tuple[str, dict[str, Any]]) -> list[types.Part]:
    """The parts of a reply asking for tools, each with an id as Gemini gives one."""
    return [
        types.Part(function_call=types.FunctionCall(id=f"call-{next(_ids)}", name=name, args=dict(args)))
        for name, args in called
    ]


class ScriptedLlm(BaseLlm):
    """A ``BaseLlm`` answering each request with the next step of its script (text when it runs out)."""

    model: str = "scripted-model"
    script: list[Any] = Field(default_factory=list)
    requests: list[LlmRequest] = Field(default_factory=list)
    fallback: str = "done"

    def _reply(self, request: LlmRequest) -> LlmResponse:
        step: Step = self.script.pop(0) if self.script else self.fallback
        if callable(step):
            return step(request)
        parts = text(step) if isinstance(step, str) else calls(*step)
        return LlmResponse(
            content=types.Content(role="model", parts=parts),
            usage_metadata=_usage(request, parts),
            finish_reason=types.FinishReason.STOP,
        )

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        self.requests.append(llm_request.model_copy(deep=True))
        response = self._reply(llm_request)
        content = response.content
        if stream and content is not None and content.parts and all(part.text for part in content.parts):
            words = "".join(part.text or "" for part in content.parts).split(" ")
            for n, word in enumerate(words):
                piece = word if n == len(words) - 1 else word + " "
                yield LlmResponse(content=types.Content(role="model", parts=[types.Part(text=piece)]), partial=True)
        yield response

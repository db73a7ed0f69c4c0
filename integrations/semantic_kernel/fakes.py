"""An offline Semantic Kernel chat service for the demo, the tests and the benchmark.

:class:`ScriptedChatService` answers from a script instead of a model: each
step is a message (tool calls or text) or a callable ``(chat_history,
settings) -> message``. It declares function-calling support and renders tools
exactly as the OpenAI connector does, so SK's auto function calling runs for
real — several calls per model turn, streaming included — and ``requests``
keeps the tools JSON each request would have sent. Importing this module
imports semantic-kernel: only the demo, tests and benchmarks import it.
"""

from __future__ import annotations

import copy
import itertools
import json
from collections.abc import AsyncGenerator, Callable
from typing import Any, ClassVar

from pydantic import Field
from semantic_kernel.connectors.ai.chat_completion_client_base import ChatCompletionClientBase
from semantic_kernel.connectors.ai.completion_usage import CompletionUsage
from semantic_kernel.connectors.ai.function_calling_utils import update_settings_from_function_call_configuration
from semantic_kernel.connectors.ai.open_ai import OpenAIChatPromptExecutionSettings
from semantic_kernel.connectors.ai.prompt_execution_settings import PromptExecutionSettings
from semantic_kernel.contents import (
    AuthorRole,
    ChatHistory,
    ChatMessageContent,
    FunctionCallContent,
    StreamingChatMessageContent,
    StreamingTextContent,
    TextContent,
)
from semantic_kernel.contents.utils.finish_reason import FinishReason

__all__ = ["ScriptedChatService", "calls_message", "text_message", "token_count", "tools_then_answer"]

Step = Callable[[ChatHistory, PromptExecutionSettings], ChatMessageContent]
_ids = itertools.count()


def calls_message(*calls: tuple[str, str, dict[str, Any]]) -> ChatMessageContent:
    """One assistant turn requesting several tool calls, each ``(plugin, function, arguments)``."""
    items: list[Any] = [
        FunctionCallContent(
            id=f"call_{next(_ids)}",
            index=i,
            plugin_name=plugin,
            function_name=function,
            name=f"{plugin}-{function}",
            arguments=json.dumps(arguments),
        )
        for i, (plugin, function, arguments) in enumerate(calls)
    ]
    return ChatMessageContent(role=AuthorRole.ASSISTANT, items=items)


def text_message(text: str) -> ChatMessageContent:
    """One assistant turn answering with text."""
    return ChatMessageContent(role=AuthorRole.ASSISTANT, items=[TextContent(text=text)])


def tools_then_answer(calls: list[tuple[str, str, dict[str, Any]]], answer: str = "final answer") -> Step:
    """A step that requests ``calls`` unless the last message is a tool result, then answers ``answer``.

    Reusable across requests, so one service can serve agents and orchestrations
    that call it many times.
    """

    def step(chat_history: ChatHistory, settings: PromptExecutionSettings) -> ChatMessageContent:
        last = chat_history.messages[-1] if chat_history.messages else None
        if calls and (last is None or last.role != AuthorRole.TOOL):
            return calls_message(*calls)
        return text_message(answer)

    return step


def token_count(text: str | None) -> int:
    """The fake's tokenizer: one token per word."""
    return len((text or "").split())


def _prompt_tokens(chat_history: ChatHistory) -> int:
    return sum(token_count(str(item)) for m in chat_history.messages for item in m.items)


class ScriptedChatService(ChatCompletionClientBase):
    """A chat-completion service that replays a script (see the module docstring)."""

    SUPPORTS_FUNCTION_CALLING: ClassVar[bool] = True
    MODEL_PROVIDER_NAME: ClassVar[str] = "scripted"

    script: list[Any] = Field(default_factory=list, exclude=True)
    default_step: Any = Field(default=None, exclude=True)
    requests: list[dict[str, Any]] = Field(default_factory=list, exclude=True)

    def __init__(self, script: list[Any] | None = None, default_step: Any = None, **kwargs: Any) -> None:
        kwargs.setdefault("ai_model_id", "scripted-model")
        super().__init__(script=list(script or []), default_step=default_step, **kwargs)  # type: ignore[call-arg]

    def get_prompt_execution_settings_class(self) -> type[PromptExecutionSettings]:
        return OpenAIChatPromptExecutionSettings

    def _update_function_choice_settings_callback(self) -> Callable[..., None]:
        return update_settings_from_function_call_configuration

    def _reset_function_choice_settings(self, settings: PromptExecutionSettings) -> None:
        if hasattr(settings, "tool_choice"):
            settings.tool_choice = None
        if hasattr(settings, "tools"):
            settings.tools = None

    def _next(self, chat_history: ChatHistory, settings: PromptExecutionSettings) -> ChatMessageContent:
        self.requests.append(
            {
                "tools": copy.deepcopy(getattr(settings, "tools", None)),
                "n_messages": len(chat_history.messages),
            }
        )
        step = self.script.pop(0) if self.script else self.default_step
        if step is None:
            step = text_message("default answer")
        if isinstance(step, BaseException):
            raise step
        if callable(step):
            step = step(chat_history, settings)
        message: ChatMessageContent = copy.deepcopy(step)
        calls = any(isinstance(item, FunctionCallContent) for item in message.items)
        message.finish_reason = FinishReason.TOOL_CALLS if calls else FinishReason.STOP
        return message  # a scripted message may be replayed: never share it with a history

    def _usage(self, chat_history: ChatHistory, message: ChatMessageContent) -> CompletionUsage:
        completion = sum(token_count(str(item)) for item in message.items)
        usage = CompletionUsage(prompt_tokens=_prompt_tokens(chat_history), completion_tokens=completion)
        self.requests[-1]["usage"] = usage
        return usage

    async def _inner_get_chat_message_contents(
        self, chat_history: ChatHistory, settings: PromptExecutionSettings
    ) -> list[ChatMessageContent]:
        message = self._next(chat_history, settings)
        message.ai_model_id = self.ai_model_id
        message.metadata["usage"] = self._usage(chat_history, message)
        return [message]

    async def _inner_get_streaming_chat_message_contents(
        self, chat_history: ChatHistory, settings: PromptExecutionSettings, function_invoke_attempt: int = 0
    ) -> AsyncGenerator[list[StreamingChatMessageContent], Any]:
        message = self._next(chat_history, settings)
        usage = self._usage(chat_history, message)
        calls = [item for item in message.items if isinstance(item, FunctionCallContent)]
        if calls:
            yield [self._chunk(calls, function_invoke_attempt, finish_reason=message.finish_reason)]
        else:
            words = (message.content or "").split(" ")
            for i, word in enumerate(words):
                finish_reason = message.finish_reason if i == len(words) - 1 else None
                text = StreamingTextContent(choice_index=0, text=word + " ")
                yield [self._chunk([text], function_invoke_attempt, finish_reason=finish_reason)]
        yield [self._chunk([], function_invoke_attempt, metadata={"usage": usage})]  # as OpenAI's include_usage

    def _chunk(
        self, items: list[Any], function_invoke_attempt: int, finish_reason: Any = None, metadata: Any = None
    ) -> StreamingChatMessageContent:
        return StreamingChatMessageContent(
            role=AuthorRole.ASSISTANT,
            choice_index=0,
            items=items,
            ai_model_id=self.ai_model_id,
            finish_reason=finish_reason,
            metadata=metadata or {"usage": None},
            function_invoke_attempt=function_invoke_attempt,
        )

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

__all__ = ["ScriptedChatService", "calls_message", "text_message", "tools_then_answer"]

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


class ScriptedChatService(ChatCompletionClientBase):
    """A chat-completion service that replays a script (see the module docstring)."""

    SUPPORTS_FUNCTION_CALLING: ClassVar[bool] = True

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
        self.requests.append({
            "tools": copy.deepcopy(getattr(settings, "tools", None)),
            "n_messages": len(chat_history.messages),
        })  # fmt: skip
        step = self.script.pop(0) if self.script else self.default_step
        if step is None:
            step = text_message("default answer")
        if callable(step):
            step = step(chat_history, settings)
        message: ChatMessageContent = copy.deepcopy(step)
        return message  # a scripted message may be replayed: never share it with a history

    async def _inner_get_chat_message_contents(
        self, chat_history: ChatHistory, settings: PromptExecutionSettings
    ) -> list[ChatMessageContent]:
        message = self._next(chat_history, settings)
        message.ai_model_id = self.ai_model_id
        return [message]

    async def _inner_get_streaming_chat_message_contents(
        self, chat_history: ChatHistory, settings: PromptExecutionSettings, function_invoke_attempt: int = 0
    ) -> AsyncGenerator[list[StreamingChatMessageContent], Any]:
        message = self._next(chat_history, settings)
        calls = [item for item in message.items if isinstance(item, FunctionCallContent)]
        if calls:
            yield [
                StreamingChatMessageContent(
                    role=AuthorRole.ASSISTANT,
                    choice_index=0,
                    items=calls,  # type: ignore[arg-type]
                    ai_model_id=self.ai_model_id,
                    function_invoke_attempt=function_invoke_attempt,
                )
            ]
            return
        for word in (message.content or "").split(" "):
            yield [
                StreamingChatMessageContent(
                    role=AuthorRole.ASSISTANT,
                    choice_index=0,
                    items=[StreamingTextContent(choice_index=0, text=word + " ")],
                    ai_model_id=self.ai_model_id,
                    function_invoke_attempt=function_invoke_attempt,
                )
            ]

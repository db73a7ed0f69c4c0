"""An offline, scripted function-calling LLM for the demo and the tests: no network, no keys.

``scripted_llm(script, final)`` answers each request with the next entry of ``script`` — a list of
tool calls ``[(tool name, arguments), ...]`` or a text — then with ``final``. Its tool calls ride
in ``additional_kwargs["tool_calls"]`` as OpenAI-style dicts, and every reply reports token usage
in ``raw["usage"]`` as a provider does, streamed or not; ``requests`` keeps a copy of what each
request sent. It is a real ``FunctionCallingLLM`` subclass, so agents use it exactly as they use
a hosted model (``chat``, ``achat``, ``stream_chat``, ``astream_chat``). LlamaIndex's own
``MockFunctionCallingLLM`` exists only in 0.14.x releases later than the lowest one supported,
and reports no usage.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Sequence
from typing import Any

__all__ = ["scripted_llm"]


def scripted_llm(script: Sequence[Any] = (), final: str = "done", *, model: str = "scripted-model") -> Any:
    """A ``FunctionCallingLLM`` giving ``script``'s replies in turn, then ``final`` (see the module docstring)."""
    return _scripted_class()(script=list(script), final=final, model=model)


@functools.cache
def _scripted_class() -> type[Any]:
    # Built on first use: importing this module imports no framework.
    from llama_index.core.base.llms.types import (  # type: ignore[import-not-found, unused-ignore]
        ChatMessage,
        ChatResponse,
        CompletionResponse,
        LLMMetadata,
    )
    from llama_index.core.bridge.pydantic import Field, PrivateAttr  # type: ignore[import-not-found, unused-ignore]
    from llama_index.core.llms.function_calling import (  # type: ignore[import-not-found, unused-ignore]
        FunctionCallingLLM,
    )
    from llama_index.core.tools import ToolSelection  # type: ignore[import-not-found, unused-ignore]

    class ScriptedLLM(FunctionCallingLLM):  # type: ignore[misc, valid-type, unused-ignore]
        """A function-calling LLM replaying a script (see :func:`scripted_llm`)."""

        model: str = "scripted-model"
        final: str = "done"
        script: list[Any] = Field(default_factory=list)
        _answered: int = PrivateAttr(default=0)
        _requests: list[list[Any]] = PrivateAttr(default_factory=list)

        @property
        def requests(self) -> list[list[Any]]:
            """Each request's messages, copied as they arrived."""
            return self._requests

        @classmethod
        def class_name(cls) -> str:
            return "ScriptedLLM"

        @property
        def metadata(self) -> Any:
            return LLMMetadata(model_name=self.model, is_chat_model=True, is_function_calling_model=True)

        def _reply(self, messages: Sequence[Any]) -> Any:
            index = self._answered
            self._answered += 1
            self._requests.append([m.model_copy(deep=True) for m in messages])
            step = self.script[index] if index < len(self.script) else self.final
            sent = sum(len(str(m.content or "").split()) for m in messages)
            if isinstance(step, str):
                message = ChatMessage(role="assistant", content=step)
                made = len(step.split())
            else:
                calls = [
                    {
                        "id": f"call-{index}-{n}",
                        "type": "function",
                        "function": {"name": name, "arguments": json.dumps(arguments)},
                    }
                    for n, (name, arguments) in enumerate(step)
                ]
                message = ChatMessage(role="assistant", content="", additional_kwargs={"tool_calls": calls})
                made = 4 * len(calls)
            counts = {"prompt_tokens": sent, "completion_tokens": made, "total_tokens": sent + made}
            return message, {"usage": counts}

        def chat(self, messages: Sequence[Any], **kwargs: Any) -> Any:
            message, raw = self._reply(messages)
            return ChatResponse(message=message, raw=raw)

        async def achat(self, messages: Sequence[Any], **kwargs: Any) -> Any:
            return self.chat(messages, **kwargs)

        def stream_chat(self, messages: Sequence[Any], **kwargs: Any) -> Any:
            message, raw = self._reply(messages)
            words = str(message.content or "").split(" ") if message.content else [""]

            def stream() -> Any:
                text = ""
                for n, word in enumerate(words):
                    delta = word if n == 0 else " " + word
                    text += delta
                    last = n == len(words) - 1
                    yield ChatResponse(
                        message=ChatMessage(
                            role="assistant",
                            content=text,
                            additional_kwargs=message.additional_kwargs if last else {},
                        ),
                        delta=delta,
                        raw=raw if last else {},
                    )

            return stream()

        async def astream_chat(self, messages: Sequence[Any], **kwargs: Any) -> Any:
            chunks = self.stream_chat(messages, **kwargs)

            async def stream() -> Any:
                for chunk in chunks:
                    yield chunk

            return stream()

        def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> Any:
            return CompletionResponse(text=self.chat([ChatMessage(role="user", content=prompt)]).message.content)

        async def acomplete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> Any:
            return self.complete(prompt)

        def stream_complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> Any:
            return iter([self.complete(prompt)])

        async def astream_complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> Any:
            done = self.complete(prompt)

            async def stream() -> Any:
                yield done

            return stream()

        def _prepare_chat_with_tools(
            self,
            tools: Sequence[Any],
            user_msg: Any = None,
            chat_history: list[Any] | None = None,
            verbose: bool = False,
            allow_parallel_tool_calls: bool = False,
            tool_required: bool = False,
            **kwargs: Any,
        ) -> dict[str, Any]:
            messages = list(chat_history or [])
            if user_msg is not None:
                messages.append(ChatMessage(role="user", content=user_msg) if isinstance(user_msg, str) else user_msg)
            specs = [
                {"type": "function", "function": {"name": tool.metadata.name, "description": tool.metadata.description}}
                for tool in tools
            ]
            return {"messages": messages, "tools": specs}

        def get_tool_calls_from_response(
            self, response: Any, error_on_no_tool_call: bool = True, **kwargs: Any
        ) -> list[Any]:
            calls = response.message.additional_kwargs.get("tool_calls") or []
            if not calls and error_on_no_tool_call:
                raise ValueError("expected at least one tool call")
            return [
                ToolSelection(
                    tool_id=call["id"],
                    tool_name=call["function"]["name"],
                    tool_kwargs=json.loads(call["function"]["arguments"]),
                )
                for call in calls
            ]

    return ScriptedLLM

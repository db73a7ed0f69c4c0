"""An offline, scripted CrewAI LLM for the demo, tests and benchmark (no network, no keys).

``scripted_llm(steps, final=..., native=...)`` returns a ``crewai`` ``BaseLLM``
that asks for the tool calls in ``steps`` one after another, then gives
``final`` as the answer. It is stateless (the step is derived from the
conversation), so one instance is safe under concurrency. crewai is imported
on first use only.
"""

from __future__ import annotations

import functools
import json
import os
from typing import Any

__all__ = ["CREWAI_OFFLINE_ENV", "offline_environment", "scripted_llm"]

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

    def supports_function_calling(self) -> bool:
        return self.native

    def supports_stop_words(self) -> bool:
        return True

    def get_context_window_size(self) -> int:
        return 100_000

    def get_input_tokens_count(self, messages: Any, tools: Any = None, response_model: Any = None) -> int:
        items = messages if isinstance(messages, list) else [messages]
        return sum(len(_text(m)) for m in items) // 4

    def call(
        self, messages: Any, tools: Any = None, callbacks: Any = None, available_functions: Any = None,
        from_task: Any = None, from_agent: Any = None, response_model: Any = None,
    ) -> Any:  # fmt: skip
        msgs = [{"role": "user", "content": messages}] if isinstance(messages, str) else list(messages)
        if self.native and tools:
            # one assistant message with tool_calls per executed batch
            done = sum(1 for m in msgs if m.get("role") == "assistant" and m.get("tool_calls"))
            if done < len(self.steps):
                step = self.steps[done]
                batch = step if isinstance(step, list) else [step]
                return [
                    {"id": f"call_{done}_{i}", "type": "function",
                     "function": {"name": name, "arguments": json.dumps(args)}}
                    for i, (name, args) in enumerate(batch)
                ]  # fmt: skip
            return self.final
        # ReAct text protocol: count executed steps by assistant messages, not by the
        # word "Observation:" (CrewAI adds format reminders containing it).
        done = sum(
            1 for m in msgs
            if m.get("role") == "assistant" and "Action Input:" in _text(m) and "Observation:" in _text(m)
        )  # fmt: skip
        if done < len(self.steps):
            name, args = self.steps[done]
            return f"Thought: I should use {name}\nAction: {name}\nAction Input: {json.dumps(args)}"
        return f"Thought: I now know the final answer\nFinal Answer: {self.final}"

    async def acall(
        self, messages: Any, tools: Any = None, callbacks: Any = None, available_functions: Any = None,
        from_task: Any = None, from_agent: Any = None, response_model: Any = None,
    ) -> Any:  # fmt: skip
        return self.call(messages, tools, callbacks, available_functions, from_task, from_agent, response_model)


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

        return ScriptedLLM

    class PlainScriptedLLM(_Script, BaseLLM):  # type: ignore[misc, unused-ignore]
        """Older crewai: ``BaseLLM`` is a plain class."""

        def __init__(self, model: str, steps: list[Any], final: str, native: bool) -> None:
            super().__init__(model=model)
            self.steps, self.final, self.native = steps, final, native

    return PlainScriptedLLM


def scripted_llm(steps: list[Any] | None = None, *, final: str = "done", native: bool = False) -> Any:
    """A new scripted LLM (a ``crewai.llms.base_llm.BaseLLM``)."""
    return _llm_class()(model="scripted-offline", steps=list(steps or []), final=final, native=native)

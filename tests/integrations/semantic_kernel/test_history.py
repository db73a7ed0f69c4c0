"""The next turn sees the conversation: ``openprogram.history()`` given back to a Semantic Kernel agent."""

from __future__ import annotations

import asyncio
from typing import Any

import openprogram
import pytest
from openprogram.integrations.semantic_kernel import as_chat_history
from openprogram.integrations.semantic_kernel.fakes import ScriptedChatService, tools_then_answer
from semantic_kernel import Kernel
from semantic_kernel.agents import ChatCompletionAgent
from semantic_kernel.connectors.ai.function_choice_behavior import FunctionChoiceBehavior
from semantic_kernel.contents import AuthorRole, ChatHistory, FunctionCallContent, FunctionResultContent

from tests.integrations.semantic_kernel.plugins import Weather

pytestmark = pytest.mark.usefixtures("instrumented")


def test_the_second_turn_of_a_chat_completion_agent_sees_the_first(store: openprogram.Store) -> None:
    seen: list[list[tuple[str, str, list[str]]]] = []
    answer = tools_then_answer([("weather", "forecast", {"city": "Paris"})], "Paris is sunny.")

    def step(chat_history: ChatHistory, settings: Any) -> Any:
        seen.append(
            [(str(m.role.value), m.content, [type(i).__name__ for i in m.items]) for m in chat_history.messages]
        )
        return answer(chat_history, settings)

    kernel = Kernel()
    kernel.add_plugin(Weather(), "weather")
    agent = ChatCompletionAgent(
        name="forecaster",
        instructions="You know the weather.",
        service=ScriptedChatService(default_step=step),
        kernel=kernel,
        function_choice_behavior=FunctionChoiceBehavior.Auto(),
    )

    async def main() -> str:
        with openprogram.session_context(store=store) as first:
            await agent.get_response(messages="What is the weather in Paris?")
        with openprogram.session_context(first.session_id, store=store):
            before = as_chat_history(openprogram.history()).messages
            await agent.get_response(messages=[*before, "And tomorrow?"])
        return first.session_id

    session_id = asyncio.run(main())
    assert seen[2] == [
        ("system", "You know the weather.", ["TextContent"]),
        ("user", "What is the weather in Paris?", ["TextContent"]),
        ("assistant", "", ["FunctionCallContent"]),
        ("tool", "", ["FunctionResultContent"]),
        ("assistant", "Paris is sunny.", ["TextContent"]),
        ("user", "And tomorrow?", ["TextContent"]),
    ]
    assert len(openprogram.history(session_id, store=store)) == 8


def test_as_chat_history_carries_function_calls_and_results() -> None:
    made = as_chat_history(
        [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": "", "tool_calls": [{"id": "c1", "name": "w-f", "arguments": {"a": 1}}]},
            {"role": "tool", "content": "2", "tool_call_id": "c1"},
            {"role": "assistant", "content": "done"},
        ]
    )
    assert [m.role for m in made.messages] == [
        AuthorRole.USER,
        AuthorRole.ASSISTANT,
        AuthorRole.TOOL,
        AuthorRole.ASSISTANT,
    ]
    (call,) = made.messages[1].items
    assert isinstance(call, FunctionCallContent) and call.id == "c1" and call.arguments == '{"a": 1}'
    (result,) = made.messages[2].items
    assert isinstance(result, FunctionResultContent) and result.id == "c1" and result.result == "2"
    assert call.function_name == "f" and call.plugin_name == "w"

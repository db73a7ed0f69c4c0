"""``openprogram demo`` for Semantic Kernel: a streamed prompt, an agent with parallel auto function calls and a
two-agent orchestration.

Runs offline (a scripted chat service stands in for the model) inside the
demo's open session; every function, model request (one ``llm`` call per round
of auto function calling), agent and the orchestration land in that session's
call DAG.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Annotated, Any

__all__ = ["run_demo"]


def _travel_plugin() -> Any:
    from semantic_kernel.functions import kernel_function

    class Travel:
        """A tiny offline travel desk."""

        @kernel_function(description="The weather forecast for a city.")
        def forecast(self, city: Annotated[str, "the city"]) -> str:
            return {"Oslo": "light snow, -2 C", "Lisbon": "sunny, 19 C"}.get(city, "mild, 12 C")

        @kernel_function(description="Train connections to a city.")
        async def trains(self, city: Annotated[str, "the city"]) -> str:
            await asyncio.sleep(0.001)
            return f"3 trains to {city} today"

        @kernel_function(description="Hotels with free rooms in a city.")
        async def hotels(self, city: Annotated[str, "the city"]) -> list[str]:
            await asyncio.sleep(0.001)
            return [f"{city} Central", f"{city} Harbour"]

    return Travel()


def _agent(name: str, instructions: str, calls: list[tuple[str, str, dict[str, Any]]], answer: str) -> Any:
    from semantic_kernel import Kernel
    from semantic_kernel.agents import ChatCompletionAgent
    from semantic_kernel.connectors.ai.function_choice_behavior import FunctionChoiceBehavior

    from .fakes import ScriptedChatService, tools_then_answer

    kernel = Kernel()
    kernel.add_plugin(_travel_plugin(), "travel")
    return ChatCompletionAgent(
        name=name,
        description=instructions,
        instructions=instructions,
        kernel=kernel,
        service=ScriptedChatService(default_step=tools_then_answer(calls, answer)),
        function_choice_behavior=FunctionChoiceBehavior.Auto(),
    )


async def _streamed_prompt(emit: Callable[[str], None]) -> None:
    from semantic_kernel import Kernel
    from semantic_kernel.connectors.ai.function_choice_behavior import FunctionChoiceBehavior
    from semantic_kernel.connectors.ai.open_ai import OpenAIChatPromptExecutionSettings
    from semantic_kernel.functions import KernelArguments

    from .fakes import ScriptedChatService, tools_then_answer

    kernel = Kernel()
    kernel.add_plugin(_travel_plugin(), "travel")
    kernel.add_service(
        ScriptedChatService(
            default_step=tools_then_answer([("travel", "forecast", {"city": "Lisbon"})], "Lisbon: sunny, 19 C.")
        )
    )
    settings = OpenAIChatPromptExecutionSettings(
        function_choice_behavior=FunctionChoiceBehavior.Auto(), temperature=0.2
    )
    text = ""
    async for chunk in kernel.invoke_prompt_stream("Weather in Lisbon?", arguments=KernelArguments(settings=settings)):
        text += str(chunk[0]) if isinstance(chunk, list) else str(chunk)
    emit(f"semantic_kernel streamed prompt (2 model requests, 1 function call): {text.strip()}")


async def _main(emit: Callable[[str], None]) -> None:
    await _streamed_prompt(emit)
    planner = _agent(
        "Planner",
        "Plan a trip.",
        [
            ("travel", "forecast", {"city": "Oslo"}),
            ("travel", "trains", {"city": "Oslo"}),
            ("travel", "hotels", {"city": "Oslo"}),
        ],
        "Oslo: light snow; 3 trains today; Oslo Central has rooms.",
    )
    response = await planner.get_response(messages="Plan a day trip to Oslo.")
    emit(f"semantic_kernel agent (3 parallel function calls): {response.message.content}")

    try:
        from semantic_kernel.agents import SequentialOrchestration
        from semantic_kernel.agents.runtime import InProcessRuntime
    except ImportError as exc:  # orchestrations need protobuf
        emit(f"semantic_kernel orchestration: skipped ({exc})")
        return
    researcher = _agent(
        "Researcher",
        "Find facts about the destination.",
        [("travel", "forecast", {"city": "Lisbon"}), ("travel", "hotels", {"city": "Lisbon"})],
        "Lisbon is sunny; Lisbon Central has rooms.",
    )
    writer = _agent(
        "Writer",
        "Write the itinerary.",
        [("travel", "trains", {"city": "Lisbon"})],
        "Take a morning train, stay at Lisbon Central, enjoy the sun.",
    )
    runtime = InProcessRuntime()
    runtime.start()
    try:
        orchestration = SequentialOrchestration(members=[researcher, writer])
        result = await orchestration.invoke(task="A weekend in Lisbon.", runtime=runtime)
        output = await result.get(timeout=30)
        emit(f"semantic_kernel orchestration (Researcher -> Writer): {str(output).strip()}")
    finally:
        await runtime.stop_when_idle()


def run_demo(emit: Callable[[str], None]) -> None:
    """Run the Semantic Kernel demo in the current session, printing one line per agent run."""
    asyncio.run(_main(emit))

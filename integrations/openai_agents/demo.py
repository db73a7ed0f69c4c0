"""``openprogram demo`` for the OpenAI Agents SDK, and the offline model its demo, tests and benchmark use.

The demo runs a triage agent that guards its input, looks an order up with two
tools (one sync, one async), hands off to a billing agent that asks a second
agent used as a tool, and answers: every agent, hand-off, tool, guardrail and
model request lands in the demo's open session. Then the same agent streams.

:func:`scripted_model` is the offline model: a ``Model`` subclass answering from a
script instead of a network, reporting token usage and streaming the way the SDK's
OpenAI Responses model does. Nothing here imports the SDK until it is called.
"""

from __future__ import annotations

import asyncio
import functools
import itertools
import json
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any

__all__ = ["Step", "prepare", "run_demo", "scripted_model"]

Step = str | Sequence[tuple[str, dict[str, Any]]] | BaseException
"""One scripted model turn: text (the final answer), tool calls ``(name, arguments)``, or an exception to raise."""

_ids = itertools.count()


def prepare() -> None:
    """Keep the demo offline: the SDK's tracing would export to OpenAI's servers."""
    from agents import set_tracing_disabled  # type: ignore[import-not-found, unused-ignore]

    set_tracing_disabled(True)


def scripted_model(script: Sequence[Step], *, model: str = "scripted-offline") -> Any:
    """A ``Model`` answering each request with the next step of ``script`` (from the start again once done).

    Usage is counted in words, like a tokenizer would: input tokens are the words of the
    instructions and input sent, output tokens those of the reply; streamed replies arrive in
    pieces (text in 4-character deltas, arguments in two) ending with the completed response.
    """
    return _model_class()(list(script), model)


@functools.cache
def _model_class() -> type:
    from agents.items import ModelResponse  # type: ignore[import-not-found, unused-ignore]
    from agents.models.interface import Model  # type: ignore[import-not-found, unused-ignore]
    from agents.tracing import generation_span  # type: ignore[import-not-found, unused-ignore]
    from agents.usage import Usage  # type: ignore[import-not-found, unused-ignore]
    from openai.types.responses import (
        Response,
        ResponseCompletedEvent,
        ResponseCreatedEvent,
        ResponseFunctionCallArgumentsDeltaEvent,
        ResponseFunctionToolCall,
        ResponseOutputItemAddedEvent,
        ResponseOutputItemDoneEvent,
        ResponseOutputMessage,
        ResponseOutputText,
        ResponseTextDeltaEvent,
        ResponseUsage,
    )

    def words(value: Any) -> int:
        return len(json.dumps(value, default=str).split()) if value else 0

    def output_of(step: str | Sequence[tuple[str, dict[str, Any]]]) -> list[Any]:
        if isinstance(step, str):
            text = ResponseOutputText(annotations=[], text=step, type="output_text")
            return [
                ResponseOutputMessage(
                    id=f"msg_{next(_ids)}", content=[text], role="assistant", status="completed", type="message"
                )
            ]
        return [
            ResponseFunctionToolCall(
                id=f"fc_{next(_ids)}",
                call_id=f"call_{next(_ids)}",
                name=name,
                arguments=json.dumps(arguments),
                type="function_call",
                status="completed",
            )
            for name, arguments in step
        ]

    class ScriptedModel(Model):  # type: ignore[misc, unused-ignore]
        """Answers from a script; ``requests`` keeps what each request was sent."""

        def __init__(self, script: list[Step], model: str) -> None:
            self.script = script
            self.model = model
            self.requests: list[dict[str, Any]] = []
            self._next = 0

        def _step(
            self, system_instructions: str | None, input: Any, tools: list[Any], tracing: Any
        ) -> tuple[list[Any], Usage]:
            names = [getattr(tool, "name", None) or tool.tool_name for tool in tools]  # tools and hand-offs
            self.requests.append({"instructions": system_instructions, "input": input, "tools": names})
            step = self.script[self._next % len(self.script)]
            self._next += 1
            # A generation span for the SDK's tracing, as the SDK's own models make one.
            with generation_span(model=self.model, disabled=tracing is None or tracing.is_disabled()) as span:
                if isinstance(step, BaseException):
                    raise step
                output = output_of(step)
                asked = words(system_instructions) + words(input)
                answered = words([item.model_dump() for item in output])
                if tracing is not None and tracing.include_data():
                    sent = [{"role": "user", "content": input}] if isinstance(input, str) else input
                    span.span_data.input = [{"role": "system", "content": system_instructions}, *sent]
                    span.span_data.output = [item.model_dump() for item in output]
                span.span_data.usage = {"input_tokens": asked, "output_tokens": answered}
            return output, Usage(requests=1, input_tokens=asked, output_tokens=answered, total_tokens=asked + answered)

        async def get_response(
            self,
            system_instructions: str | None,
            input: Any,
            model_settings: Any,
            tools: list[Any],
            output_schema: Any,
            handoffs: list[Any],
            tracing: Any,
            **kwargs: Any,
        ) -> Any:
            output, usage = self._step(system_instructions, input, [*tools, *handoffs], tracing)
            await asyncio.sleep(0)
            return ModelResponse(output=output, usage=usage, response_id=f"resp_{next(_ids)}")

        async def stream_response(
            self,
            system_instructions: str | None,
            input: Any,
            model_settings: Any,
            tools: list[Any],
            output_schema: Any,
            handoffs: list[Any],
            tracing: Any,
            **kwargs: Any,
        ) -> AsyncIterator[Any]:
            output, usage = self._step(system_instructions, input, [*tools, *handoffs], tracing)
            response = Response(
                id=f"resp_{next(_ids)}",
                created_at=0,
                model=self.model,
                object="response",
                output=[],
                tool_choice="auto",
                tools=[],
                parallel_tool_calls=True,
                status="in_progress",
            )
            numbers = itertools.count()
            yield ResponseCreatedEvent(type="response.created", response=response, sequence_number=next(numbers))
            for index, item in enumerate(output):
                if isinstance(item, ResponseOutputMessage):
                    added = item.model_copy(update={"content": [], "status": "in_progress"})
                else:
                    added = item.model_copy(update={"arguments": "", "status": "in_progress"})
                yield ResponseOutputItemAddedEvent(
                    type="response.output_item.added", item=added, output_index=index, sequence_number=next(numbers)
                )
                if isinstance(item, ResponseOutputMessage):
                    text = item.content[0].text  # type: ignore[union-attr]
                    for start in range(0, len(text), 4):
                        await asyncio.sleep(0)
                        yield ResponseTextDeltaEvent(
                            type="response.output_text.delta",
                            item_id=item.id,
                            output_index=index,
                            content_index=0,
                            delta=text[start : start + 4],
                            logprobs=[],
                            sequence_number=next(numbers),
                        )
                else:
                    half = len(item.arguments) // 2
                    for piece in (item.arguments[:half], item.arguments[half:]):
                        yield ResponseFunctionCallArgumentsDeltaEvent(
                            type="response.function_call_arguments.delta",
                            item_id=item.id or "",
                            output_index=index,
                            delta=piece,
                            sequence_number=next(numbers),
                        )
                yield ResponseOutputItemDoneEvent(
                    type="response.output_item.done", item=item, output_index=index, sequence_number=next(numbers)
                )
            # As the Responses API reports it (newer openai releases also require cache_write_tokens).
            reported = ResponseUsage.model_validate(
                {
                    "input_tokens": usage.input_tokens,
                    "output_tokens": usage.output_tokens,
                    "total_tokens": usage.total_tokens,
                    "output_tokens_details": {"reasoning_tokens": 0},
                    "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
                }
            )
            done = response.model_copy(update={"output": output, "status": "completed", "usage": reported})
            yield ResponseCompletedEvent(type="response.completed", response=done, sequence_number=next(numbers))

    return ScriptedModel


# --- the demo ---------------------------------------------------------------------------------------


def _agents() -> Any:
    from agents import Agent, GuardrailFunctionOutput, function_tool, input_guardrail  # type: ignore[import-not-found, unused-ignore]

    def find_order(order_id: str) -> str:
        """Find an order by its id."""
        return f"order {order_id}: 2 tickets to Oslo, paid twice"

    async def refund_policy(reason: str) -> str:
        """The refund policy for a reason."""
        await asyncio.sleep(0.001)
        return f"{reason}: full refund within 30 days"

    def on_topic(context: Any, agent: Any, input: Any) -> Any:
        return GuardrailFunctionOutput(output_info={"topic": "orders"}, tripwire_triggered=False)

    policy = Agent(
        name="Policy",
        instructions="Quote the refund policy.",
        model=scripted_model(["Double payments are refunded in full."]),
    )
    billing = Agent(
        name="Billing",
        instructions="Settle billing questions.",
        tools=[function_tool(refund_policy), policy.as_tool(tool_name="ask_policy", tool_description="Ask Policy.")],
        model=scripted_model(
            [
                [("refund_policy", {"reason": "double payment"})],
                [("ask_policy", {"input": "double payment?"})],
                "You were charged twice: a full refund is on its way.",
            ]
        ),
    )
    triage = Agent(
        name="Triage",
        instructions="Find the order, then hand billing questions to Billing.",
        tools=[function_tool(find_order)],
        handoffs=[billing],
        input_guardrails=[input_guardrail(on_topic)],
        model=scripted_model([[("find_order", {"order_id": "A-17"})], [("transfer_to_billing", {})]]),
    )
    return triage


async def _main(emit: Callable[[str], None]) -> None:
    from agents import Runner  # type: ignore[import-not-found, unused-ignore]

    result = await Runner.run(_agents(), "I was charged twice for order A-17.")
    emit(f"openai_agents run (Triage -> hand-off -> Billing, 3 tools, a guardrail): {result.final_output}")
    streamed = Runner.run_streamed(_agents(), "Charged twice for A-17?")
    events = 0
    async for _ in streamed.stream_events():
        events += 1
    emit(f"openai_agents streamed run ({events} events): {streamed.final_output}")


def run_demo(emit: Callable[[str], None]) -> None:
    """Run the OpenAI Agents SDK demo in the current session, printing one line per run."""
    prepare()
    asyncio.run(_main(emit))

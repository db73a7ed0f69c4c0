"""Small agents the OTLP tests record, in this process or a child's: a tool and a model request through the kit."""

from __future__ import annotations

import openprogram
from openprogram._kit import ModelCall, message, model_inputs, reply, tool_call, usage


class Client:
    """Stands for a chat model client (the kit only uses its identity)."""


@openprogram.tool
def search(route: str) -> str:
    return f"flights for {route}"


def ask_model(answer: str = "Book TP1234.") -> None:
    """One model request recorded as an adapter records it: messages, tools, parameters, a reply and usage."""
    call = ModelCall.request(
        "langgraph",
        "gpt-test",
        lambda: model_inputs(
            [
                message("system", "You book flights."),
                message("user", "Lisbon to Oslo, Tuesday."),
                message("assistant", None, tool_calls=[tool_call("c1", "search", {"from": "LIS", "to": "OSL"})]),
                message("tool", '[{"flight": "TP1234"}]', tool_call_id="c1"),
            ],
            ["search", "book"],
            {"temperature": 0.2, "max_tokens": 256, "stop": ["END"]},
        ),
        provider="openai",
        client=Client(),
    )
    assert call is not None
    with call:
        pass
    call.answered(
        reply(answer, tool_calls=[tool_call("c2", "book", '{"flight": "TP1234"}')], finish_reason="stop"),
        usage(412, 37),
    )

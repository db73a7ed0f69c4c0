"""Pydantic AI's own OpenTelemetry instrumentation keeps working beside openprogram, span for span."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import openprogram
from openprogram.stores import Store
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from pydantic_ai import Agent
from pydantic_ai.models.instrumented import InstrumentationSettings

from tests.integrations.pydantic_ai.fakes import scripted
from tests.support import calls, one


def _traced_run(store: Store) -> tuple[list[Any], list[openprogram.CallRecord], list[tuple[bool, str | None]]]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    seen: list[tuple[bool, str | None]] = []
    agent = Agent(scripted([[("forecast", {"city": "Nice"})]], final="sunny"), name="traced")
    agent.instrument = InstrumentationSettings(tracer_provider=provider)  # what Agent(instrument=...) did in 1.x

    @agent.tool_plain
    def forecast(city: str) -> str:
        seen.append((trace.get_current_span().get_span_context().is_valid, openprogram.current_call_id()))
        return f"{city}: sunny"

    with openprogram.session_context(store=store) as h:
        assert agent.run_sync("weather?").output == "sunny"
    return list(exporter.get_finished_spans()), calls(store, h.session_id), seen


def test_its_spans_and_openprogram_records_are_both_complete_when_both_are_on(
    store: Store, instrument: Callable[..., set[str]]
) -> None:
    plain_spans, _, _ = _traced_run(store)
    instrument("pydantic_ai")
    spans, records, seen = _traced_run(store)
    assert sorted(s.name for s in spans) == sorted(s.name for s in plain_spans)  # the same spans as without us
    assert {(s.attributes or {}).get("gen_ai.operation.name") for s in spans} >= {
        "invoke_agent",
        "chat",
        "execute_tool",
    }
    assert [r.kind for r in records] == ["turn", "agent", "llm", "tool", "llm"]
    assert seen == [(True, one(records, "forecast", "tool").call_id)]  # the tool's body sees its span and its call

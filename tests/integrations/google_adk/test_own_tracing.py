"""ADK's own OpenTelemetry tracing keeps working beside openprogram, span for span and parent for parent."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from typing import Any

import openprogram
import pytest
from google.adk.agents import LlmAgent
from google.adk.runners import InMemoryRunner
from openprogram.integrations.google_adk.fakes import ScriptedLlm
from openprogram.stores import Store

from tests.integrations.google_adk.helpers import ask
from tests.support import calls, one

trace = pytest.importorskip("opentelemetry.trace", reason="needs opentelemetry-sdk")
sdk_trace = pytest.importorskip("opentelemetry.sdk.trace", reason="needs opentelemetry-sdk")
from opentelemetry.sdk.trace.export import SimpleSpanProcessor  # noqa: E402
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter  # noqa: E402

_exporter = InMemorySpanExporter()


@pytest.fixture(scope="module", autouse=True)
def _tracer_provider() -> Iterator[None]:
    """ADK traces through the global tracer provider: one for the module (OpenTelemetry allows setting it once)."""
    provider = sdk_trace.TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(_exporter))
    trace.set_tracer_provider(provider)
    yield


def _traced_run(store: Store) -> tuple[list[Any], list[openprogram.CallRecord], list[tuple[bool, str | None]]]:
    _exporter.clear()
    seen: list[tuple[bool, str | None]] = []

    def forecast(city: str) -> str:
        """The forecast for a city."""
        seen.append((trace.get_current_span().get_span_context().is_valid, openprogram.current_call_id()))
        return f"{city}: sunny"

    model = ScriptedLlm(script=[[("forecast", {"city": "Nice"})], "sunny"])
    runner = InMemoryRunner(agent=LlmAgent(name="traced", model=model, tools=[forecast]), app_name="app")
    with openprogram.session_context(store=store) as h:
        assert asyncio.run(ask(runner, "weather?")) == "sunny"
    return list(_exporter.get_finished_spans()), calls(store, h.session_id), seen


def _shape(spans: list[Any]) -> list[tuple[str, str | None]]:
    """Each span's name and its parent's name: the trees compared."""
    names = {span.context.span_id: span.name for span in spans}
    return sorted((span.name, names.get(span.parent.span_id) if span.parent else None) for span in spans)


def test_its_spans_and_openprogram_records_are_both_complete_when_both_are_on(
    store: Store, instrument: Callable[..., set[str]]
) -> None:
    plain_spans, _, _ = _traced_run(store)
    instrument("google_adk")
    spans, records, seen = _traced_run(store)
    assert _shape(spans) == _shape(plain_spans)  # the same spans, under the same parents, as without us
    assert {name for name, _ in _shape(spans)} >= {"invoke_agent traced", "execute_tool forecast"}
    assert [r.kind for r in records] == ["turn", "agent", "llm", "tool", "llm"]
    assert seen == [(True, one(records, "forecast", "tool").call_id)]  # the tool's body sees its span and its call

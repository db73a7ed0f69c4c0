"""P1: the cost of one recorded ``@openprogram.tool`` call (small arguments, inside a session).

Compared in the same run with the bare function, a wrapper that only sets and
resets a ContextVar, and an OpenTelemetry SDK span (BatchSpanProcessor, no-op
exporter). Targets: <= 1 us per call and >= 15x cheaper than the span.
"""

from __future__ import annotations

import contextvars
import os
import sys
import tempfile
from collections.abc import Sequence

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import openprogram
from openprogram._recording import writer

from bench._util import interleaved, per_call_ns

N = 20_000  # calls per timed burst; the writer drains between bursts (P2 measures sustained load)


def search(query: str, limit: int) -> str:
    return query


def main() -> dict[str, float]:
    os.environ.setdefault("OPENPROGRAM_HOME", tempfile.mkdtemp(prefix="op-bench-"))
    recorded = openprogram.tool(search)
    interval = writer.INTERVAL
    var: contextvars.ContextVar[int | None] = contextvars.ContextVar("v", default=None)

    def var_only(query: str, limit: int) -> str:
        token = var.set(1)
        try:
            return search(query, limit)
        finally:
            var.reset(token)

    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult

    class NoopExporter(SpanExporter):
        def export(self, spans: Sequence[object]) -> SpanExportResult:  # type: ignore[override]
            return SpanExportResult.SUCCESS

    provider = TracerProvider()
    provider.add_span_processor(BatchSpanProcessor(NoopExporter()))
    tracer = provider.get_tracer("bench")

    def otel(query: str, limit: int) -> str:
        with tracer.start_as_current_span("search") as span:
            span.set_attribute("query", query)
            return search(query, limit)

    def loop_of(fn):  # type: ignore[no-untyped-def]
        def loop(n: int) -> None:
            for _ in range(n):
                fn("what is a session", 5)

        return loop

    def burst(fn, n, writer_paused=False):  # type: ignore[no-untyped-def]
        def run() -> float:
            if writer_paused:
                writer.INTERVAL = 3600.0  # takes effect at the writer's next wait
                openprogram.flush()
            cost = per_call_ns(loop_of(fn), n, 1)
            writer.INTERVAL = interval
            openprogram.flush()
            return cost

        return run

    store = openprogram.open_store(f"sqlite:///{tempfile.mkdtemp(prefix='op-p1-')}/p1.db")
    with openprogram.session_context(store=store):
        results = interleaved(
            {
                "bare": burst(search, N),
                "contextvar": burst(var_only, N),
                "openprogram": burst(recorded, N),
                "openprogram_hot": burst(recorded, N, writer_paused=True),
                "otel_span": burst(otel, N // 10),  # its batch queue holds 2048 spans: stay near it
            },
            rounds=15,
        )
    provider.shutdown()
    results["openprogram_net"] = results["openprogram_hot"] - results["bare"]
    results["ratio_otel_over_openprogram"] = results["otel_span"] / results["openprogram"]
    return results


if __name__ == "__main__":
    r = main()
    print("P1 hot path (ns per call, median of interleaved runs)")
    labels = {
        "bare": "bare function",
        "contextvar": "ContextVar set/reset-only wrapper",
        "openprogram_hot": "@openprogram.tool, caller's thread only (writer paused)",
        "openprogram": "@openprogram.tool, writer running (its encoding shares the GIL)",
        "otel_span": "OpenTelemetry SDK span, batch processor, no-op exporter",
    }
    for key, label in labels.items():
        print(f"  {r[key]:8.0f} ns  {label}")
    ratio = r["openprogram_hot"] / r["contextvar"]
    print(
        f"  openprogram costs {r['openprogram_net']:.0f} ns over the bare call on the caller's thread "
        f"({ratio:.2f}x a set/reset-only wrapper); target <= 1000 ns"
    )
    print(f"  an OpenTelemetry span costs {r['ratio_otel_over_openprogram']:.1f}x a recorded call; target >= 15x")

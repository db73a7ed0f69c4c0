"""The cost of live OTLP export per call, against export off.

An agent's view: a process records one long burst of tool calls (a tool calling a tool, small
arguments — a CPU-bound agent, the worst case for a background thread sharing the GIL) in one
session into the SQLite store, ended by ``flush()`` (durable): with export off, with
``OPENPROGRAM_EXPORT=otlp`` sending to a real OTLP/HTTP receiver (another process, decoding
every request), and with export on and nobody listening. The processes alternate, round after
round; figures are medians.

The exporter's view: the CPU time its thread spends per span — building it from the stored
row and sending it through the official exporter (protobuf encoding included) to the receiver.
"""

from __future__ import annotations

import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
RECEIVER = os.path.join(ROOT, "tests", "otlp", "otlp_receiver.py")
N = 50_000  # calls in the burst (each a tool calling a tool: 2 records): seconds, so the exporter runs throughout
ROUNDS = 3
SPANS = 4_000  # spans timed for the exporter's own cost


def _agent(mode: str, endpoint: str) -> None:
    """Record the burst in this process; print its wall time per call as JSON."""
    os.environ["OPENPROGRAM_HOME"] = tempfile.mkdtemp(prefix="op-bench-otlp-")
    if mode != "off":
        os.environ["OPENPROGRAM_EXPORT"] = "otlp"
        os.environ["OTEL_EXPORTER_OTLP_ENDPOINT"] = endpoint
        os.environ["OTEL_EXPORTER_OTLP_TIMEOUT"] = "2"
    import openprogram
    from openprogram import _otlp

    @openprogram.tool
    def lookup(city: str, day: int) -> str:
        return f"{city}: sunny on day {day}"

    @openprogram.tool
    def plan(city: str) -> str:
        return lookup(city, 3)

    with openprogram.session_context():
        for _ in range(500):  # warm up: the store, the writer, the exporter's thread and connection
            plan("Oslo")
        openprogram.flush()
        _otlp.flush_export(10)
        started = time.perf_counter_ns()
        for i in range(N):
            plan("Lisbon" if i % 2 else "Oslo")
        openprogram.flush()
        elapsed = time.perf_counter_ns() - started
    print(json.dumps({"per_call_ns": elapsed / N}))


def _exporter(endpoint: str) -> None:
    """The exporter thread's work per span, timed on this thread (CPU time); print it as JSON."""
    os.environ["OPENPROGRAM_HOME"] = tempfile.mkdtemp(prefix="op-bench-otlp-")
    import openprogram
    from openprogram._capture import content_captured
    from openprogram._cli import row_of
    from openprogram._otlp import MAX_BATCH, Sender, default_resource, spans_of

    @openprogram.tool
    def lookup(city: str, day: int) -> str:
        return f"{city}: sunny on day {day}"

    store = openprogram.open_store("memory://")
    with openprogram.session_context(store=store) as handle:
        for i in range(SPANS - 1):
            lookup("Lisbon", i)
    rows = [row_of(call) for call in store.iter_calls(handle.session_id)]
    sender, resource = Sender(endpoint), default_resource()
    samples = []
    for _ in range(5):
        started = time.thread_time_ns()
        for start in range(0, len(rows), MAX_BATCH):
            spans = spans_of(rows[start : start + MAX_BATCH], resource, content=content_captured())
            assert sender.send(spans) is None
        samples.append((time.thread_time_ns() - started) / len(rows))
    print(json.dumps({"per_span_ns": statistics.median(samples)}))


def _run(*args: str) -> dict[str, float]:
    out = subprocess.run([sys.executable, __file__, *args], capture_output=True, text=True, check=True, cwd=ROOT)
    figures: dict[str, float] = json.loads(out.stdout.strip().splitlines()[-1])
    return figures


def _free_url() -> str:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{probe.getsockname()[1]}"


def main() -> dict[str, float]:
    receiver = subprocess.Popen(
        [sys.executable, RECEIVER],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": ROOT},
    )
    assert receiver.stdout is not None and receiver.stdin is not None
    endpoint = receiver.stdout.readline().strip()
    modes = {"off": endpoint, "on": endpoint, "unreachable": _free_url()}
    samples: dict[str, list[float]] = {mode: [] for mode in modes}
    try:
        names = list(modes)
        for r in range(ROUNDS):
            for mode in names[r % len(names) :] + names[: r % len(names)]:
                samples[mode].append(_run("agent", mode, modes[mode])["per_call_ns"])
        per_span = _run("exporter", endpoint)["per_span_ns"]
    finally:
        receiver.stdin.close()
        receiver.stdout.readline()
        receiver.wait(10)
    figures = {mode: statistics.median(values) for mode, values in samples.items()}
    off = figures["off"]
    print(
        f"a call (a tool calling a tool: 2 records) in a CPU-bound burst, until durable, export off: "
        f"{off / 1000:.1f} us"
    )
    for mode, label in (("on", "on"), ("unreachable", "on, nobody listening")):
        print(f"export {label}: {figures[mode] / 1000:.1f} us ({figures[mode] / off:.2f}x export off)")
    print(
        f"the exporter's thread, per span (build + encode + send): {per_span / 1000:.1f} us of CPU, "
        f"{2 * per_span / off:.1f}x a call's recording; it takes at most a tenth of the process's time"
    )
    figures["exporter_per_span"] = per_span
    return figures


if __name__ == "__main__":
    if sys.argv[1:2] == ["agent"]:
        _agent(sys.argv[2], sys.argv[3])
    elif sys.argv[1:2] == ["exporter"]:
        _exporter(sys.argv[2])
    else:
        main()

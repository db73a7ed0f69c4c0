"""Live export (``OPENPROGRAM_EXPORT=otlp`` / ``configure(export="otlp")``): each call sent once it has ended."""

from __future__ import annotations

import json
import logging
import os
import re
import shlex
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable

import openprogram
import pytest
from openprogram import _otlp

from tests.support import calls

from .conftest import CliRun, by_name, tree_is_whole
from .otlp_receiver import ReceivedSpan, Receiver

AGENT = """
    import openprogram, sys

    @openprogram.tool
    def leaf(i):
        return i

    @openprogram.tool
    def branch(n):
        return [leaf(i) for i in range(n)]

    with openprogram.session_context() as handle:
        branch(2)
        openprogram.flush()
        print(handle.session_id, flush=True)
        sys.stdin.readline()  # the test looks at the receiver while this process still runs
        branch(3)
"""

BUSY_AGENT = """
    import json, time, openprogram

    @openprogram.tool
    def step(i):
        return i

    flushes = []
    with openprogram.session_context() as handle:
        for _ in range(6):
            for i in range(200):
                step(i)
            started = time.perf_counter()
            durable = openprogram.flush()
            flushes.append(time.perf_counter() - started)
            time.sleep(0.25)
    print(json.dumps({"session": handle.session_id, "flushes": flushes, "durable": durable}))
"""


def test_child_process_exports_each_call_once_it_ends_with_the_ids_the_cli_sends(
    receiver: Receiver, make_receiver: Callable[..., Receiver], store_url: str, export_cli: Callable[..., CliRun]
) -> None:
    env = {
        **os.environ,
        "OPENPROGRAM_STORE": store_url,
        "OPENPROGRAM_EXPORT": "otlp",
        "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.url,
    }
    child = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(AGENT)],
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert child.stdout is not None and child.stdin is not None
    session_id = child.stdout.readline().strip()

    early = receiver.wait_for(3)  # branch(2) and its two leaves, sent while the turn is still open
    assert child.poll() is None, "the child still runs"
    assert sorted(s.name for s in early) == ["execute_tool branch", "execute_tool leaf", "execute_tool leaf"]
    _, err = child.communicate("\n", timeout=60)
    assert child.returncode == 0, err
    assert "openprogram" not in err  # no warning

    live = receiver.wait_for(8)
    assert len(live) == len(calls(openprogram.open_store(store_url), session_id)) == 8
    assert tree_is_whole(live) and {s.attributes["session.id"] for s in live} == {session_id}
    later = make_receiver()
    assert export_cli(session_id, "--endpoint", later.url).code == 0

    def identity(spans: list[ReceivedSpan]) -> set[tuple[str, str, str, str, int, int]]:
        return {(s.trace_id, s.span_id, s.parent_span_id, s.name, s.start_time, s.end_time) for s in spans}

    assert identity(later.wait_for(8)) == identity(live)


def test_unreachable_backend_is_warned_about_once_and_never_slows_the_agent(
    unreachable_url: str, run_child: Callable[..., subprocess.CompletedProcess[str]], store_url: str
) -> None:
    started = time.monotonic()
    child = run_child(
        BUSY_AGENT,
        OPENPROGRAM_EXPORT="otlp",
        OTEL_EXPORTER_OTLP_ENDPOINT=unreachable_url,
        OTEL_EXPORTER_OTLP_TIMEOUT="1",
    )
    took = time.monotonic() - started

    assert child.returncode == 0, child.stderr
    report = json.loads(child.stdout)
    assert report["durable"] is True and max(report["flushes"]) < 0.5
    warnings = [line for line in child.stderr.splitlines() if "openprogram" in line]
    # The outage, once if a send failed before the exit (the run is short); at exit, once, what was not sent.
    outage = [line for line in warnings if "retrying in the background" in line]
    (at_exit,) = [line for line in warnings if "not exported" in line]
    assert len(outage) <= 1 and len(warnings) == len(outage) + 1, child.stderr
    assert all(f"cannot reach {unreachable_url}/v1/traces" in line and "export otlp" in line for line in warnings)
    assert f"export otlp {report['session']}`" in at_exit
    assert len(calls(openprogram.open_store(store_url), report["session"])) == 1201  # the store has everything
    assert took < 6 * 0.25 + _otlp.EXIT_SECONDS + 8  # the run, the bounded exit, two interpreter starts


def test_slow_backend_never_delays_flush_and_the_exit_waits_a_bounded_time(
    make_receiver: Callable[..., Receiver], run_child: Callable[..., subprocess.CompletedProcess[str]]
) -> None:
    slow = make_receiver(delay=4.0)
    started = time.monotonic()
    child = run_child(BUSY_AGENT, OPENPROGRAM_EXPORT="otlp", OTEL_EXPORTER_OTLP_ENDPOINT=slow.url)
    took = time.monotonic() - started

    assert child.returncode == 0, child.stderr
    report = json.loads(child.stdout)
    assert max(report["flushes"]) < 0.5
    assert took < 6 * 0.25 + _otlp.EXIT_SECONDS + 8
    assert slow.wait_for(1, timeout=10)  # the first batch, sent while the agent ran, did arrive


def test_configure_export_sends_from_the_background_and_none_stops_it(
    receiver: Receiver, store: openprogram.Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", receiver.traces_url)

    @openprogram.tool
    def remember(fact: str) -> str:
        return fact.upper()

    assert _otlp.export_choice() == "none"
    openprogram.configure(export="otlp")
    assert _otlp.export_choice() == "otlp"
    with openprogram.session_context(store=store) as handle:
        remember("one")
        remember("two")
    assert _otlp.flush_export(10)
    spans = receiver.wait_for(3)
    assert sorted(s.name for s in spans) == ["execute_tool remember", "execute_tool remember", "turn main"]
    assert {s.attributes["session.id"] for s in spans} == {handle.session_id}

    openprogram.configure(export="none")
    assert _otlp.export_choice() == "none"
    with openprogram.session_context(store=store):
        remember("three")
    openprogram.flush()
    time.sleep(_otlp.BATCH_DELAY * 3)
    assert len(receiver.spans) == 3

    with pytest.raises(ValueError, match="'otlp' or 'none'"):
        openprogram.configure(export="zipkin")


def test_backend_that_comes_back_receives_what_waited(
    make_receiver: Callable[..., Receiver],
    store: openprogram.Store,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="openprogram")
    flaky = make_receiver(status=503)
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", flaky.url)
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TIMEOUT", "1")
    openprogram.configure(export="otlp")

    @openprogram.tool
    def ping(n: int) -> int:
        return n

    with openprogram.session_context(store=store):
        for n in range(5):
            ping(n)
    assert not _otlp.flush_export(3)  # the backend refuses: not sent yet
    flaky.status = 200
    arrived = flaky.wait_for(6, timeout=30)

    assert sorted(by_name(arrived)) == ["execute_tool ping", "turn main"] and len(arrived) == 6
    assert _otlp.flush_export(10)
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and f"the backend at {flaky.traces_url} refused the spans" in warnings[0]
    assert any(f"exporting to {flaky.traces_url} again" in r.getMessage() for r in caplog.records)


SHORT_AGENT = """
    import openprogram

    @openprogram.tool
    def step(i):
        return i

    with openprogram.session_context() as handle:
        for i in range(3):
            step(i)
    print(handle.session_id)
"""


def test_a_short_program_says_once_at_exit_what_was_not_exported_and_how_to_send_it(
    unreachable_url: str,
    run_child: Callable[..., subprocess.CompletedProcess[str]],
    store_url: str,
    receiver: Receiver,
) -> None:
    started = time.monotonic()
    child = run_child(SHORT_AGENT, OPENPROGRAM_EXPORT="otlp", OTEL_EXPORTER_OTLP_ENDPOINT=unreachable_url)
    took = time.monotonic() - started

    assert child.returncode == 0, child.stderr
    session_id = child.stdout.strip()
    said = [line for line in child.stderr.splitlines() if "openprogram" in line]
    assert len(said) == 1, child.stderr  # was: nothing at all
    assert said[0].startswith("openprogram: live export: 4 spans of 1 session not exported (cannot reach ")
    assert "Connection refused" in said[0] and "they are in the store" in said[0]
    command = re.search(r"`(openprogram [^`]+)`", said[0])
    assert command is not None and command.group(1).endswith(f"export otlp {session_id}")
    assert took < _otlp.EXIT_SECONDS + 8  # a refused connection: no waiting out the exit's grace either
    # The command it names sends them (here to a backend that is up).
    words = shlex.split(command.group(1))[1:]
    sent = subprocess.run(
        [sys.executable, "-m", "openprogram", *words, "--endpoint", receiver.url],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert sent.returncode == 0, sent.stderr
    assert len(receiver.wait_for(4)) == 4


def test_calls_waiting_for_an_unreachable_backend_are_bounded(
    unreachable_url: str,
    store: openprogram.Store,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    monkeypatch.setattr(_otlp.live, "MAX_QUEUED_CALLS", 100)
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", unreachable_url)
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TIMEOUT", "1")
    openprogram.configure(export="otlp")
    live = _otlp.live._live
    assert live is not None

    @openprogram.tool
    def tick(n: int) -> int:
        return n

    with openprogram.session_context(store=store) as handle:
        for _ in range(20):
            for n in range(50):
                tick(n)
            openprogram.flush()  # one written batch each time
            assert live.waiting() <= 100 + 50

    assert len(calls(store, handle.session_id)) == 1001  # the store keeps every call
    dropped = [r.getMessage() for r in caplog.records if "more than 100 calls are waiting" in r.getMessage()]
    assert len(dropped) == 1

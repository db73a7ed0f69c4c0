"""``openprogram export otlp``: recorded sessions sent to a real OTLP/HTTP receiver."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable

import openprogram
import pytest
from openprogram._otlp import span_id_of, trace_id_of

from tests.support import calls

from .conftest import CliRun, by_name, tree_is_whole
from .otlp_receiver import ReceivedSpan, Receiver


@openprogram.tool
def lookup(city: str) -> str:
    if city == "Atlantis":
        raise LookupError(f"no such city: {city}")
    return f"{city}: sunny"


@openprogram.tool
def plan(cities: list[str]) -> list[str]:
    found = []
    for city in cities:
        try:
            found.append(lookup(city))
        except LookupError:
            found.append("?")
    return found


def record_two_turns(store_url: str) -> str:
    """A session of two turns: nested tool calls, one of which fails."""
    with openprogram.session_context(store=store_url) as first:
        plan(["Paris", "Atlantis"])
    with openprogram.session_context(first.session_id, store=store_url):
        plan(["Oslo"])
    return first.session_id


def test_session_becomes_one_trace_per_turn_with_parent_links_and_the_error_with_its_stack(
    store_url: str, receiver: Receiver, export_cli: Callable[..., CliRun]
) -> None:
    session_id = record_two_turns(store_url)
    recorded = calls(openprogram.open_store(store_url), session_id)

    result = export_cli(session_id, "--endpoint", receiver.url)

    assert result.code == 0, result.err
    assert f"exported 1 session ({len(recorded)} spans) to {receiver.traces_url}" in result.out
    spans = receiver.wait_for(len(recorded))
    assert len(spans) == len(recorded) == 7
    by_call = {s.attributes["openprogram.call.id"]: s for s in spans}
    for call in recorded:
        span = by_call[call.call_id]
        assert span.trace_id == f"{trace_id_of(session_id, call.turn_id):032x}"
        assert span.span_id == f"{span_id_of(call.call_id):016x}"
        assert span.parent_span_id == ("" if call.kind == "turn" else f"{span_id_of(call.parent_id or ''):016x}")
        assert span.start_time == int(call.started_at * 1e9) and span.end_time == int((call.ended_at or 0) * 1e9)
        assert span.attributes["session.id"] == span.attributes["gen_ai.conversation.id"] == session_id
        assert span.attributes["openprogram.call.kind"] == call.kind
    assert len({s.trace_id for s in spans}) == 2 and tree_is_whole(spans)
    names = by_name(spans)
    assert sorted(names) == ["execute_tool lookup", "execute_tool plan", "turn main"]
    plans = names["execute_tool plan"]
    assert {p.attributes["input.value"] for p in plans} == {'{"cities":["Paris","Atlantis"]}', '{"cities":["Oslo"]}'}
    assert {p.attributes["output.value"] for p in plans} == {'["Paris: sunny","?"]', '["Oslo: sunny"]'}
    tool = plans[0]
    assert tool.attributes["gen_ai.operation.name"] == "execute_tool"
    assert tool.attributes["openinference.span.kind"] == "TOOL"
    assert tool.attributes["gen_ai.tool.name"] == "plan"
    assert tool.attributes["input.mime_type"] == tool.attributes["output.mime_type"] == "application/json"
    assert "openprogram.framework" not in tool.attributes  # no framework made it
    (failed,) = [s for s in spans if s.status_code == 2]  # error
    assert failed.status_message == "LookupError: no such city: Atlantis"
    assert failed.attributes["openprogram.call.id"] == next(c.call_id for c in recorded if c.status == "error")
    ((event, failure),) = failed.events
    stack = failure.pop("exception.stacktrace")
    assert (event, failure) == (
        "exception",
        {"exception.type": "LookupError", "exception.message": "no such city: Atlantis"},
    )
    # the stack the call kept, as Python prints it: where it was raised, then the exception
    assert stack.startswith("Traceback (most recent call last):\n") and ", in lookup\n" in stack
    assert '    raise LookupError(f"no such city: {city}")\n' in stack
    assert stack.endswith("LookupError: no such city: Atlantis\n")
    assert "openprogram.attributes.traceback" not in failed.attributes  # sent once, in the event
    assert failed.attributes["error.type"] == "LookupError"
    assert {s.status_code for s in spans if s is not failed} == {1}  # ok


def test_exporting_twice_sends_the_same_ids(
    store_url: str, receiver: Receiver, export_cli: Callable[..., CliRun]
) -> None:
    session_id = record_two_turns(store_url)

    assert export_cli(session_id, "--endpoint", receiver.url).code == 0
    first = receiver.wait_for(7)
    receiver.clear()
    assert export_cli(session_id, "--endpoint", receiver.url).code == 0
    second = receiver.wait_for(7)

    def identity(spans: list[ReceivedSpan]) -> set[tuple[str, str, str, str, int, int]]:
        return {(s.trace_id, s.span_id, s.parent_span_id, s.name, s.start_time, s.end_time) for s in spans}

    assert len(first) == len(second) == 7
    assert identity(first) == identity(second)


def test_endpoint_and_headers_come_from_the_standard_environment(
    store_url: str,
    make_receiver: Callable[..., Receiver],
    unreachable_url: str,
    export_cli: Callable[..., CliRun],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    session_id = record_two_turns(store_url)
    base, traces = make_receiver(), make_receiver()
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", base.url)
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_HEADERS", "x-team=agents,authorization=Bearer%20s3cret-token")

    result = export_cli(session_id)

    assert result.code == 0, result.err
    assert len(base.wait_for(7)) == 7  # OTEL_EXPORTER_OTLP_ENDPOINT + /v1/traces
    assert base.requests[0]["authorization"] == "Bearer s3cret-token" and base.requests[0]["x-team"] == "agents"
    assert "s3cret-token" not in result.out + result.err

    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", unreachable_url)
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", traces.traces_url)
    assert export_cli(session_id).code == 0
    assert len(traces.wait_for(7)) == 7  # the traces endpoint wins over the base one


@pytest.mark.parametrize("status", [401, 503])
def test_refusing_backend_exits_non_zero_naming_the_endpoint_and_no_header_value(
    status: int,
    store_url: str,
    make_receiver: Callable[..., Receiver],
    export_cli: Callable[..., CliRun],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    session_id = record_two_turns(store_url)
    refusing = make_receiver(status=status)
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_HEADERS", "authorization=Basic%20cGstbGYtc2VjcmV0")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TIMEOUT", "3")  # a 503 is retried by the exporter until then

    result = export_cli(session_id, "--endpoint", refusing.url)

    assert result.code == 1
    assert f"the backend at {refusing.traces_url} refused the spans" in result.err
    assert f"(HTTP {status}: {'Unauthorized' if status == 401 else 'Service Unavailable'})" in result.err
    assert "0 of 1 sessions were sent" in result.err
    assert refusing.requests and refusing.requests[0]["authorization"] == "Basic cGstbGYtc2VjcmV0"
    assert "cGstbGYtc2VjcmV0" not in result.out + result.err


def test_unreachable_backend_exits_non_zero_and_says_so(
    store_url: str, unreachable_url: str, export_cli: Callable[..., CliRun], monkeypatch: pytest.MonkeyPatch
) -> None:
    session_id = record_two_turns(store_url)
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TIMEOUT", "2")

    result = export_cli(session_id, "--endpoint", unreachable_url)

    assert result.code == 1
    assert f"cannot reach {unreachable_url}/v1/traces (" in result.err and "refused" in result.err.lower()


def test_all_and_since_pick_sessions_with_a_progress_line(
    store_url: str, receiver: Receiver, export_cli: Callable[..., CliRun]
) -> None:
    sessions = [record_two_turns(store_url) for _ in range(3)]

    everything = export_cli("--all", "--endpoint", receiver.url)
    assert everything.code == 0, everything.err
    assert "exported 3 sessions (21 spans)" in everything.out
    assert "exporting: 3/3 sessions, 21 spans" in everything.err
    assert {s.attributes["session.id"] for s in receiver.wait_for(21)} == set(sessions)

    recent = export_cli("--since", "1h", "--endpoint", receiver.url)
    assert recent.code == 0 and "exported 3 sessions" in recent.out
    future = export_cli("--since", "2999-01-01", "--endpoint", receiver.url)
    assert future.code == 0 and "no sessions to export" in future.out

    assert export_cli("--since", "yesterday").code == 2
    assert export_cli().code == 2
    missing = export_cli("no-such-session", "--endpoint", receiver.url)
    assert missing.code == 1 and "no session 'no-such-session'" in missing.err


def test_service_name_is_openprogram_unless_the_environment_names_one(
    store_url: str, receiver: Receiver, export_cli: Callable[..., CliRun], monkeypatch: pytest.MonkeyPatch
) -> None:
    session_id = record_two_turns(store_url)
    assert export_cli(session_id, "--endpoint", receiver.url).code == 0
    assert {s.resource["service.name"] for s in receiver.wait_for(7)} == {"openprogram"}
    assert {s.scope for s in receiver.spans} == {"openprogram"}

    receiver.clear()
    monkeypatch.setenv("OTEL_RESOURCE_ATTRIBUTES", "service.name=from-attributes,openinference.project.name=travel")
    monkeypatch.setenv("OTEL_SERVICE_NAME", "travel-agent")
    assert export_cli(session_id, "--endpoint", receiver.url).code == 0
    resources = [s.resource for s in receiver.wait_for(7)]
    assert {r["service.name"] for r in resources} == {"travel-agent"}
    assert {r["openinference.project.name"] for r in resources} == {"travel"}


def export_command(store_url: str, *args: str, **env: str) -> tuple[int, str, str, float]:
    """``openprogram --store URL export otlp ARGS`` in a child process: status, stdout, stderr, seconds taken."""
    openprogram.flush()
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "openprogram", "--store", store_url, "export", "otlp", *args],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    return done.returncode, done.stdout, done.stderr, time.monotonic() - started


def test_a_refused_connection_fails_at_once_with_the_same_message(store_url: str, unreachable_url: str) -> None:
    session_id = record_two_turns(store_url)

    code, _, err, took = export_command(store_url, session_id, "--endpoint", unreachable_url)

    assert code == 1
    assert f"openprogram: cannot reach {unreachable_url}/v1/traces ([Errno 111] Connection refused)" in err
    assert "0 of 1 sessions were sent" in err
    assert took < 4.0  # was 8 s of the exporter's retries (its default 10 s timeout) before saying so


def test_sessions_are_named_by_a_unique_start_of_their_id(store_url: str, receiver: Receiver) -> None:
    for session_id in ("trip-paris", "trip-oslo", "home"):
        with openprogram.session_context(session_id, store=store_url):
            lookup("Paris")

    code, out, err, _ = export_command(store_url, "trip-p", "ho", "--endpoint", receiver.url)
    assert code == 0, err
    assert "exported 2 sessions (4 spans)" in out
    assert {s.attributes["session.id"] for s in receiver.wait_for(4)} == {"trip-paris", "home"}
    code, out, err, _ = export_command(store_url, "trip", "--endpoint", receiver.url)
    assert code == 1 and "'trip' is the start of 2 session ids" in err
    assert "trip-paris" in err and "trip-oslo" in err

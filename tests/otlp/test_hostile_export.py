"""Export never prints an endpoint's token and never fails on what a record holds: a lone surrogate in a model's
message, a number past 64 bits, a time no clock gives, parents that loop, captures that are not JSON."""

from __future__ import annotations

import json
import sqlite3
import subprocess
from collections.abc import Callable
from typing import Any

import openprogram
import pytest

from .conftest import CliRun, by_name
from .otlp_agents import search
from .otlp_receiver import Receiver

SECRET = "S3CR3T-t0ken"


def with_secrets(url: str) -> str:
    """``url`` with a token in its query string and a user and password, as some backends are configured."""
    scheme, _, rest = url.partition("://")
    return f"{scheme}://alice-user:{SECRET}-pw@{rest}/v1/traces?api_key={SECRET}&region=eu#{SECRET}-frag"


@pytest.mark.parametrize("backend", ["refusing", "unreachable", "taking"])
def test_export_never_prints_the_endpoint_s_query_string_or_user(
    backend: str,
    store_url: str,
    make_receiver: Callable[..., Receiver],
    unreachable_url: str,
    export_cli: Callable[..., CliRun],
) -> None:
    with openprogram.session_context(store=store_url) as handle:
        search("LIS-OSL")
    base = unreachable_url if backend == "unreachable" else make_receiver(401 if backend == "refusing" else 200).url

    result = export_cli(handle.session_id, "--endpoint", with_secrets(base))

    assert result.code == (0 if backend == "taking" else 1), result.err
    printed = result.out + result.err
    assert SECRET not in printed and "api_key" not in printed and "alice-user" not in printed
    assert f"{base}/v1/traces" in printed


LIVE_AGENT = """
    import time, openprogram
    from tests.otlp.otlp_agents import search

    with openprogram.session_context():
        search("LIS-OSL")
    time.sleep(2.5)  # the exporter tries, fails and warns while the agent runs
"""


def test_live_export_never_prints_the_endpoint_s_query_string(
    unreachable_url: str, run_child: Callable[..., subprocess.CompletedProcess[str]]
) -> None:
    child = run_child(
        LIVE_AGENT,
        OPENPROGRAM_EXPORT="otlp",
        OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=with_secrets(unreachable_url),
        OTEL_EXPORTER_OTLP_TIMEOUT="1",
    )

    assert child.returncode == 0, child.stderr
    assert f"cannot reach {unreachable_url}/v1/traces" in child.stderr
    assert SECRET not in child.stderr and "api_key" not in child.stderr


SURROGATE_AGENT = """
    import openprogram
    from openprogram._kit import ModelCall, message, model_inputs, reply, usage

    with openprogram.session_context() as handle:
        call = ModelCall.request("toy", "gpt\\ud800x", lambda: model_inputs([message("user", "hi \\ud800 there")]))
        call.answered(reply("ok \\udcff"), usage(3, 2**64))
    print(handle.session_id)
"""


def test_a_lone_surrogate_in_a_model_message_is_exported_escaped_without_a_traceback(
    receiver: Receiver, run_child: Callable[..., subprocess.CompletedProcess[str]]
) -> None:
    child = run_child(SURROGATE_AGENT, OPENPROGRAM_EXPORT="otlp", OTEL_EXPORTER_OTLP_ENDPOINT=receiver.url)

    assert child.returncode == 0, child.stderr
    assert "Traceback" not in child.stderr and "openprogram" not in child.stderr, child.stderr
    chat = by_name(receiver.wait_for(2))["chat gpt\\ud800x"][0]
    assert chat.attributes["llm.input_messages.0.message.content"] == "hi \\ud800 there"
    assert chat.attributes["llm.output_messages.0.message.content"] == "ok \\udcff"
    assert chat.attributes["llm.token_count.completion"] == str(2**64)


def insert(store_url: str, *rows: dict[str, Any]) -> None:
    """Rows another process wrote into the (shared) store."""
    with sqlite3.connect(store_url.removeprefix("sqlite:///")) as db:
        for changes in rows:
            row: dict[str, Any] = {
                "call_id": "x", "session_id": "shared", "turn_id": "other", "parent_id": None, "kind": "tool",
                "name": "x", "framework": None, "status": "ok", "inputs": None, "output": None, "error": None,
                "attributes": None, "started_at": 1_765_000_000.0, "ended_at": 1_765_000_001.0, "owner": "o:1:a",
                **changes,
            }  # fmt: skip
            db.execute(f"INSERT INTO calls VALUES ({', '.join('?' * len(row))})", list(row.values()))


def test_export_sends_every_call_of_hostile_rows(
    store_url: str, receiver: Receiver, export_cli: Callable[..., CliRun]
) -> None:
    with openprogram.session_context("shared", store=store_url):
        search("LIS-OSL")
    assert openprogram.flush()
    usage = json.dumps({"model": "m", "usage": {"input_tokens": 2**64, "output_tokens": -(2**70)}})
    insert(
        store_url,
        {"call_id": "own", "parent_id": "own", "name": "own-parent"},
        {"call_id": "a", "parent_id": "b", "name": "loop-a", "kind": "llm", "attributes": usage},
        {"call_id": "b", "parent_id": "a", "name": "loop-b", "status": "error", "error": "Boom: failed"},
        {"call_id": "far", "name": "far-future", "started_at": 1e300, "ended_at": float("inf")},
        {"call_id": "early", "name": "before-1970", "started_at": -5.0, "ended_at": -4.0},
        {"call_id": "bad", "name": "not-json", "inputs": "{not json", "output": "[1,", "attributes": "{oops"},
    )

    result = export_cli("shared", "--endpoint", receiver.url)

    assert result.code == 0, result.err
    names = set(by_name(receiver.wait_for(8)))
    assert {"execute_tool own-parent", "chat m", "execute_tool loop-b", "execute_tool far-future"} <= names
    assert {"execute_tool before-1970", "execute_tool not-json"} <= names


def test_a_bare_endpoint_with_a_token_in_its_query_string_gets_the_traces_path_before_it(
    store_url: str, receiver: Receiver, export_cli: Callable[..., CliRun]
) -> None:
    with openprogram.session_context(store=store_url) as handle:
        search("LIS-OSL")

    result = export_cli(handle.session_id, "--endpoint", f"{receiver.url}?api_key={SECRET}")

    assert result.code == 0, result.err
    assert f"to {receiver.url}/v1/traces\n" in result.out and SECRET not in result.out
    assert len(receiver.wait_for(2)) == 2

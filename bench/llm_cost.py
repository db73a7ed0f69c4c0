"""The cost of recording a model call (``llm``) against a tool call with the same payload.

Both record a request of four messages and a reply with a tool call, inside a session, into
the SQLite store, until durable (``flush()`` returned): the tool as an ``@openprogram.tool``
taking the messages and returning the reply; the model call through the kit's ``ModelCall``,
translating each message into the one shape as an adapter does (and, apart, handed the messages
in that shape already, to tell translating from recording). Target: the model call costs no more
than the tool call.

Timed by default; ``--instructions`` counts instructions under valgrind's callgrind instead
(each kind in its own process, 0 and 2,000 requests, the difference per request), which this
noisy machine does not change.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import openprogram
from openprogram._kit import ModelCall, message, model_inputs, reply, tool_call, usage

from bench._util import interleaved, per_call_ns

N = 2_000  # requests per timed burst, each burst ended by flush()

MESSAGES = [
    {"role": "system", "content": "You are a careful travel agent. " * 8},
    {"role": "user", "content": "Find me a flight from Lisbon to Oslo next Tuesday, morning if possible."},
    {
        "role": "assistant",
        "content": "",
        "tool_calls": [{"id": "c1", "name": "search_flights", "arguments": {"from": "LIS", "to": "OSL"}}],
    },
    {"role": "tool", "content": '[{"flight": "TP1234", "departs": "07:10"}]', "tool_call_id": "c1"},
]
TOOLS = ["search_flights", "book_flight"]
PARAMS = {"temperature": 0.2, "max_tokens": 512}
REPLY = {
    "role": "assistant",
    "content": "TP1234 departs at 07:10.",
    "tool_calls": [{"id": "c2", "name": "book_flight", "arguments": {"flight": "TP1234"}}],
}


class Client:
    model = "fake-model"


@openprogram.tool
def chat(messages: list[dict[str, Any]], tools: list[str], params: dict[str, Any]) -> dict[str, Any]:
    return REPLY


def as_request() -> dict[str, Any]:
    translated = [
        message(
            m["role"],
            m["content"],
            tool_calls=[tool_call(c["id"], c["name"], c["arguments"]) for c in m.get("tool_calls", ())],
            tool_call_id=m.get("tool_call_id"),
        )
        for m in MESSAGES
    ]
    return model_inputs(translated, TOOLS, PARAMS)


def main() -> dict[str, float]:
    os.environ.setdefault("OPENPROGRAM_HOME", tempfile.mkdtemp(prefix="op-bench-"))
    calls = _workload(Client())
    with openprogram.session_context():
        calls["tool"](200)  # warm up: the store, the writer, the encoder's caches
        calls["llm"](200)
        figures = interleaved({kind: lambda run=run: per_call_ns(run, N, 3) for kind, run in calls.items()}, rounds=5)
    tool = figures["tool"]
    print(f"tool call, recorded until durable: {tool / 1000:.1f} us")
    print(
        f"llm call, same payload translated into the one shape: {figures['llm'] / 1000:.1f} us "
        f"({figures['llm'] / tool:.2f}x the tool call)"
    )
    print(
        f"llm call, payload handed over in the one shape: {figures['llm, shaped'] / 1000:.1f} us "
        f"({figures['llm, shaped'] / tool:.2f}x the tool call)"
    )
    return figures


def _workload(client: Client) -> dict[str, Any]:
    """Each kind of request as a function of how many to record (then flush)."""

    def tool_calls(n: int) -> None:
        for _ in range(n):
            chat(MESSAGES, TOOLS, PARAMS)
        openprogram.flush()

    def model_calls(n: int, inputs: Any = as_request) -> None:
        for _ in range(n):
            call = ModelCall.request("bench", "fake-model", inputs, provider="fake", client=client)
            assert call is not None
            with call:
                answer = REPLY
            out = answer["tool_calls"][0]
            call.answered(
                reply(answer["content"], tool_calls=[tool_call(out["id"], out["name"], out["arguments"])]),
                usage(412, 37),
            )
        openprogram.flush()

    shaped_inputs = as_request()
    return {
        "tool": tool_calls,
        "llm": model_calls,
        "llm, shaped": lambda n: model_calls(n, lambda: shaped_inputs),
    }


def _child(kind: str, n: int) -> None:
    calls = _workload(Client())
    with openprogram.session_context():
        for run in calls.values():
            run(50)  # the same warm-up for every count
        calls[kind](n)


def instructions() -> dict[str, float]:
    """Instructions per request of each kind: callgrind totals at 0 and N requests, differenced."""
    totals: dict[tuple[str, int], int] = {}
    for kind in ("tool", "llm", "llm, shaped"):
        for n in (0, N):
            out = tempfile.mktemp(prefix="op-llm-cost-", suffix=".out")
            command = [
                "valgrind",
                "--tool=callgrind",
                f"--callgrind-out-file={out}",
                sys.executable,
                __file__,
                "--child",
                kind,
                str(n),
            ]
            subprocess.run(command, check=True, capture_output=True, env=dict(os.environ, PYTHONHASHSEED="0"))
            with open(out) as f:
                totals[kind, n] = next(int(m[1]) for line in f if (m := re.match(r"(?:summary|totals): (\d+)", line)))
            os.unlink(out)
    per = {kind: (totals[kind, N] - totals[kind, 0]) / N for kind in ("tool", "llm", "llm, shaped")}
    for kind, count in per.items():
        print(f"{kind}: {count / 1000:.1f}k instructions a request ({count / per['tool']:.2f}x the tool call)")
    return per


if __name__ == "__main__":
    os.environ.setdefault("OPENPROGRAM_HOME", tempfile.mkdtemp(prefix="op-bench-"))
    if sys.argv[1:2] == ["--child"]:
        _child(sys.argv[2], int(sys.argv[3]))
    elif sys.argv[1:2] == ["--instructions"]:
        instructions()
    else:
        main()

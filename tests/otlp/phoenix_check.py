"""Send a recorded LangGraph session to a real Arize Phoenix and check, through Phoenix's own API, that it arrived.

``python tests/otlp/phoenix_check.py --phoenix-python PATH`` starts Phoenix with the Python of
its own virtualenv (``pip install arize-phoenix`` there), bound to 127.0.0.1, telemetry off,
in a temporary working directory; records the LangGraph demo twice in one session (two turns)
in this interpreter; exports it with ``openprogram export otlp`` twice; and asks Phoenix's
GraphQL and REST APIs for it: one session holding one trace per turn, every call a span
(the second export deduplicated), the span kinds, and the session's tokens. Exits non-zero
when anything differs. Run by ``nox -s phoenix``.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

import openprogram

STARTUP_SECONDS = 240.0  # Phoenix runs its database migrations on first start
ARRIVAL_SECONDS = 60.0

SESSION_QUERY = """
query {
  projects { edges { node { name sessions(first: 20) { edges { node {
    sessionId numTraces tokenUsage { prompt completion total }
    traces(first: 20) { edges { node { traceId numSpans rootSpan { name spanKind } } } }
  } } } } } }
}
"""


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def _get(url: str, body: dict[str, Any] | None = None) -> Any:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, headers={"content-type": "application/json"})
    with urllib.request.urlopen(request, timeout=10) as response:
        text = response.read().decode()
    return json.loads(text) if text.strip().startswith(("{", "[")) else text


def start_phoenix(python: str, workdir: Path) -> tuple[subprocess.Popen[bytes], str]:
    """Phoenix serving on free loopback ports; its base URL once it answers."""
    port = _free_port()
    env = {
        **os.environ,
        "PHOENIX_HOST": "127.0.0.1",
        "PHOENIX_PORT": str(port),
        "PHOENIX_GRPC_PORT": str(_free_port()),
        "PHOENIX_WORKING_DIR": str(workdir),
        "PHOENIX_TELEMETRY_ENABLED": "false",
        "PHOENIX_LOG_MIGRATIONS": "false",
    }
    log = open(workdir / "phoenix.log", "wb")  # noqa: SIM115 - open for the server's lifetime
    server = subprocess.Popen(
        [python, "-m", "phoenix.server.main", "serve"],
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + STARTUP_SECONDS
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise SystemExit(f"Phoenix exited with {server.returncode}; see {workdir / 'phoenix.log'}")
        try:
            if _get(f"{base}/healthz") == "OK":
                return server, base
        except OSError:
            pass
        time.sleep(1.0)
    stop(server)
    raise SystemExit(f"Phoenix did not answer within {STARTUP_SECONDS:.0f}s; see {workdir / 'phoenix.log'}")


def stop(server: subprocess.Popen[bytes]) -> None:
    """Stop the Phoenix server this script started (its own process group)."""
    if server.poll() is None:
        os.killpg(server.pid, signal.SIGTERM)
        try:
            server.wait(20)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait(10)


def record_session(store_url: str) -> tuple[str, int, int, int]:
    """The LangGraph demo, twice, in one session: (session id, turns, calls, tokens)."""
    from openprogram.integrations.langgraph.demo import run_demo

    openprogram.instrument("langgraph")
    with openprogram.session_context(store=store_url) as first:
        run_demo(lambda line: None)
    with openprogram.session_context(first.session_id, store=store_url):
        run_demo(lambda line: None)
    store = openprogram.open_store(store_url)
    info = store.get_session(first.session_id)
    assert info is not None
    return first.session_id, 2, len(store.list_calls(first.session_id)), info.tokens


def export(store_url: str, session_id: str, base: str) -> None:
    command = [
        sys.executable,
        "-m",
        "openprogram",
        "--store",
        store_url,
        "export",
        "otlp",
        session_id,
        "--endpoint",
        base,
    ]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
    print(done.stdout.strip() or done.stderr.strip())
    if done.returncode != 0:
        raise SystemExit(f"export failed ({done.returncode}): {done.stderr.strip()}")


def phoenix_session(base: str, session_id: str, spans: int) -> dict[str, Any] | None:
    """The session as Phoenix's GraphQL API reports it, once it holds ``spans`` spans (or the wait ran out)."""
    deadline = time.monotonic() + ARRIVAL_SECONDS
    found: dict[str, Any] | None = None
    while time.monotonic() < deadline:
        answer = _get(f"{base}/graphql", {"query": SESSION_QUERY})
        for project in answer["data"]["projects"]["edges"]:
            for session in project["node"]["sessions"]["edges"]:
                if session["node"]["sessionId"] == session_id:
                    found = session["node"]
        if found is not None and sum(t["node"]["numSpans"] for t in found["traces"]["edges"]) >= spans:
            return found
        time.sleep(1.0)
    return found


def check(base: str, session_id: str, turns: int, calls: int, tokens: int) -> list[str]:
    """What Phoenix shows that differs from what openprogram recorded."""
    problems: list[str] = []
    session = phoenix_session(base, session_id, calls)
    if session is None:
        return [f"Phoenix has no session {session_id}"]
    traces = [edge["node"] for edge in session["traces"]["edges"]]
    span_count = sum(trace["numSpans"] for trace in traces)
    print(
        f"Phoenix session {session_id}: {session['numTraces']} traces, {span_count} spans, "
        f"tokens {session['tokenUsage']}, roots {[t['rootSpan']['name'] for t in traces]}"
    )
    if session["numTraces"] != turns:
        problems.append(f"{session['numTraces']} traces, not one per turn ({turns})")
    if span_count != calls:
        problems.append(f"{span_count} spans, not one per call ({calls})")
    if int(session["tokenUsage"]["total"]) != tokens:
        problems.append(f"{session['tokenUsage']['total']} tokens, not the {tokens} openprogram counted")
    if {t["rootSpan"]["name"] for t in traces} != {"turn main"}:
        problems.append("a trace's root is not its turn")
    listed = _get(f"{base}/v1/projects/default/spans?limit=1000")["data"]
    ours = [s for s in listed if s["attributes"].get("session.id") == session_id]
    kinds = {s["span_kind"] for s in ours}
    print(f"span kinds {sorted(kinds)}; names include {sorted({s['name'] for s in ours})[:8]}")
    if not {"LLM", "TOOL", "CHAIN"} <= kinds:
        problems.append(f"span kinds {sorted(kinds)} lack LLM, TOOL or CHAIN")
    chats = [s for s in ours if s["name"] == "chat demo-chat"]
    if not chats or any(s["attributes"].get("llm.token_count.total", 0) <= 0 for s in chats):
        problems.append("no chat span with its token count")
    return problems


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--phoenix-python", required=True, help="the python of a virtualenv with arize-phoenix")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="openprogram-phoenix-") as tmp:
        workdir = Path(tmp)
        os.environ["OPENPROGRAM_HOME"] = str(workdir / "home")
        store_url = f"sqlite:///{workdir / 'sessions.db'}"
        session_id, turns, calls, tokens = record_session(store_url)
        print(f"recorded session {session_id}: {turns} turns, {calls} calls, {tokens} tokens")
        server, base = start_phoenix(args.phoenix_python, workdir)
        try:
            export(store_url, session_id, base)
            export(store_url, session_id, base)  # the same ids again: Phoenix keeps one copy
            problems = check(base, session_id, turns, calls, tokens)
        finally:
            stop(server)
    for problem in problems:
        print(f"FAILED: {problem}")
    print("Phoenix check: " + ("failed" if problems else "passed"))
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main())

"""A tool call crosses to an MCP server in another process, over the SDK's real stdio and streamable HTTP
transports, and the server records the tool it runs in the client's session, under the client's call."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import openprogram
import pytest
from mcp import ClientSession
from openprogram._otlp import span_id_of, trace_id_of

from tests.support import attributes, by_kind, one

ROOT = Path(__file__).resolve().parents[3]
Transport = Callable[[dict[str, str]], contextlib.AbstractAsyncContextManager[ClientSession]]


@pytest.fixture
def store_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """One SQLite file both processes record into (the default store of each)."""
    path = tmp_path / "shared.db"
    monkeypatch.setenv("OPENPROGRAM_STORE", f"sqlite:///{path}")
    return path


@pytest.fixture
def mcp_on(instrument: Callable[..., set[str]]) -> None:
    instrument("mcp")


def _server_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "MCP_TEST_PLAIN"}
    env["PYTHONPATH"] = str(ROOT)
    env["COLUMNS"] = "1000"  # the SDK logs through rich, which wraps at the terminal's width
    env.update(extra)
    return env


@contextlib.asynccontextmanager
async def _stdio(env: dict[str, str]) -> AsyncIterator[ClientSession]:
    from mcp import StdioServerParameters
    from mcp.client.stdio import stdio_client

    params = StdioServerParameters(
        command=sys.executable, args=["-m", "tests.integrations.mcp.servers", "stdio"], env=env, cwd=str(ROOT)
    )
    home = Path(env["OPENPROGRAM_HOME"])
    home.mkdir(parents=True, exist_ok=True)
    with open(home / "server.log", "a+") as errlog:  # the server's stderr: its log
        async with stdio_client(params, errlog=errlog) as streams, ClientSession(streams[0], streams[1]) as session:
            await session.initialize()
            yield session


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@contextlib.asynccontextmanager
async def _http(env: dict[str, str]) -> AsyncIterator[ClientSession]:
    try:
        from mcp.client.streamable_http import streamable_http_client as connect
    except ImportError:  # pragma: no cover - named streamablehttp_client only before 1.24
        from mcp.client.streamable_http import streamablehttp_client as connect

    port = _free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "tests.integrations.mcp.servers", "http", str(port)],
        env=env,
        cwd=str(ROOT),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=0.2):
                break
            assert server.poll() is None and time.monotonic() < deadline, "the HTTP server did not start"
            await asyncio.sleep(0.1)
        async with connect(f"http://127.0.0.1:{port}/mcp") as streams, ClientSession(streams[0], streams[1]) as session:
            await session.initialize()
            yield session
    finally:
        server.terminate()  # the server writes what it recorded as it exits
        server.wait(timeout=30)


TRANSPORTS = {"stdio": _stdio, "streamable-http": _http}


@pytest.fixture(params=sorted(TRANSPORTS))
def transport(request: pytest.FixtureRequest) -> tuple[str, Transport]:
    return request.param, TRANSPORTS[request.param]


def _read(path: Path, session_id: str) -> list[openprogram.CallRecord]:
    openprogram.flush()
    store = openprogram.open_store(f"sqlite:///{path}")
    try:
        return store.list_calls(session_id)
    finally:
        store.close()


def _sessions(path: Path) -> list[str]:
    store = openprogram.open_store(f"sqlite:///{path}")
    try:
        return [info.session_id for info in store.list_sessions()]
    finally:
        store.close()


def _sides(records: list[openprogram.CallRecord], name: str) -> tuple[openprogram.CallRecord, openprogram.CallRecord]:
    found = [c for c in records if c.name == name and c.framework == "mcp"]
    client = [c for c in found if attributes(c).get("mcp.side") == "client"]
    server = [c for c in found if attributes(c).get("mcp.side") == "server"]
    assert len(client) == 1 and len(server) == 1, [(c.name, attributes(c)) for c in found]
    return client[0], server[0]


@pytest.mark.usefixtures("mcp_on")
async def test_a_tool_call_is_one_tree_across_client_and_server_in_a_shared_store(
    store_path: Path, transport: tuple[str, Transport]
) -> None:
    name, connect = transport
    with openprogram.session_context("mcp-one-tree") as handle:
        async with connect(_server_env()) as session:
            added = await session.call_tool("add", {"a": 2, "b": 3})
            nested = await session.call_tool("nested", {"x": 4})
    assert added.content[0].text == "5" and nested.content[0].text == "9"  # type: ignore[union-attr]

    records = _read(store_path, "mcp-one-tree")
    client, server = _sides(records, "add")
    assert client.parent_id == handle.root_call_id
    assert server.parent_id == client.call_id and server.turn_id == client.turn_id == handle.turn_id
    assert client.kind == server.kind == "tool" and client.status == server.status == "ok"
    assert attributes(client)["mcp.server"] == attributes(server)["mcp.server"] == "calculator"
    assert attributes(client)["mcp.transport"] == name
    assert client.inputs == {"a": 2, "b": 3}
    # What the tool does nests under the server's call.
    nested_client, nested_server = _sides(records, "nested")
    double = one(records, "double")
    assert nested_server.parent_id == nested_client.call_id and double.parent_id == nested_server.call_id
    assert double.output == 8


@pytest.mark.usefixtures("mcp_on")
async def test_the_request_carries_the_context_and_a_traceparent_with_the_ids_otlp_export_gives_the_call(
    store_path: Path,
) -> None:
    with openprogram.session_context("mcp-meta") as handle:
        async with _stdio(_server_env(MCP_TEST_PLAIN="1")) as session:
            result = await session.call_tool("echo_meta", {}, meta={"mine": "kept"})
    meta = json.loads(result.content[0].text)  # type: ignore[union-attr]
    (client,) = by_kind(_read(store_path, "mcp-meta"), "tool")
    assert meta["openprogram/context"] == {"session": "mcp-meta", "turn": handle.turn_id, "parent": client.call_id}
    trace, span = trace_id_of("mcp-meta", handle.turn_id), span_id_of(client.call_id)
    assert meta["traceparent"] == f"00-{trace:032x}-{span:016x}-01"
    assert meta["mine"] == "kept"  # the caller's own keys pass through


@pytest.mark.usefixtures("mcp_on")
async def test_a_traceparent_the_caller_set_is_left_as_it_is(store_path: Path) -> None:
    theirs = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
    with openprogram.session_context("mcp-their-trace"):
        async with _stdio(_server_env(MCP_TEST_PLAIN="1")) as session:
            result = await session.call_tool("echo_meta", {}, meta={"traceparent": theirs})
    assert json.loads(result.content[0].text)["traceparent"] == theirs  # type: ignore[union-attr]


async def _fail_result(env: dict[str, str]) -> Any:
    async with _stdio(env) as session:
        return await session.call_tool("fail", {"reason": "no"})


async def test_a_failing_tool_ends_error_on_both_sides_and_the_client_gets_the_result_it_gets_without_openprogram(
    store_path: Path, instrument: Callable[..., set[str]]
) -> None:
    plain = await _fail_result(_server_env(MCP_TEST_PLAIN="1"))
    instrument("mcp")
    with openprogram.session_context("mcp-fail"):
        recorded = await _fail_result(_server_env())
    assert getattr(recorded, "is_error", getattr(recorded, "isError", None)) is True  # SDK 2 | SDK 1
    assert recorded.model_dump() == plain.model_dump()
    client, server = _sides(_read(store_path, "mcp-fail"), "fail")
    assert client.status == server.status == "error"
    text = recorded.content[0].text  # SDK 1 says why; SDK 2 does not pass the exception's message on
    assert text in (client.error or "") and "Error executing tool fail" in (server.error or "")


@pytest.mark.usefixtures("mcp_on")
async def test_a_server_without_openprogram_keeps_working_and_the_client_records_its_side(
    store_path: Path, transport: tuple[str, Transport]
) -> None:
    _, connect = transport
    with openprogram.session_context("mcp-plain-server"):
        async with connect(_server_env(MCP_TEST_PLAIN="1")) as session:
            result = await session.call_tool("add", {"a": 1, "b": 1})
    assert result.content[0].text == "2"  # type: ignore[union-attr]
    records = _read(store_path, "mcp-plain-server")
    assert [(c.name, attributes(c)["mcp.side"]) for c in by_kind(records, "tool")] == [("add", "client")]
    assert _sessions(store_path) == ["mcp-plain-server"]


async def test_a_client_without_openprogram_gets_its_tool_recorded_by_the_server_under_the_no_session_policy(
    store_path: Path,
) -> None:
    async with _stdio(_server_env()) as session:
        result = await session.call_tool("add", {"a": 20, "b": 22})
    assert result.content[0].text == "42"  # type: ignore[union-attr]
    (session_id,) = _sessions(store_path)  # the server's implicit session
    (server,) = by_kind(_read(store_path, session_id), "tool")
    assert (server.name, server.framework, attributes(server)["mcp.side"]) == ("add", "mcp", "server")


HOSTILE_CONTEXTS = {
    "not an object": "session=victim",
    "ids that are paths": {"session": "../../etc/passwd", "turn": "t", "parent": "p"},
    "an id too long": {"session": "s" * 5000, "turn": "t", "parent": "p"},
    "a parent missing": {"session": "victim"},
    "ids of the wrong type": {"session": ["victim"], "turn": {"x": 1}, "parent": 3},
}


@pytest.mark.parametrize("context", list(HOSTILE_CONTEXTS.values()), ids=list(HOSTILE_CONTEXTS))
async def test_a_malformed_or_hostile_context_is_ignored_with_one_warning_and_never_breaks_the_call(
    store_path: Path, isolated_home: Path, context: Any
) -> None:
    meta = {"openprogram/context": context, "openprogram/store": f"sqlite:///{store_path.parent / 'elsewhere.db'}"}
    async with _stdio(_server_env()) as session:
        first = await session.call_tool("add", {"a": 1, "b": 2}, meta=meta)
        second = await session.call_tool("add", {"a": 1, "b": 2}, meta=meta)
    assert first.content[0].text == second.content[0].text == "3"  # type: ignore[union-attr]
    (session_id,) = _sessions(store_path)  # the server's own implicit session, in its own store
    assert session_id != "victim"
    assert [c.name for c in by_kind(_read(store_path, session_id), "tool")] == ["add", "add"]
    assert not (store_path.parent / "elsewhere.db").exists()
    log = (isolated_home / "server.log").read_text()
    assert log.count("ignoring a request's openprogram/context") == 1, log


async def test_a_server_that_does_not_join_its_clients_sessions_records_under_its_own_policy(
    store_path: Path, instrument: Callable[..., set[str]]
) -> None:
    instrument("mcp")
    with openprogram.session_context("mcp-not-joined"):
        async with _stdio(_server_env(OPENPROGRAM_MCP_JOIN="off")) as session:
            assert (await session.call_tool("whoami", {})).content[0].text != "mcp-not-joined"  # type: ignore[union-attr]
    sessions = _sessions(store_path)
    assert len(sessions) == 2 and "mcp-not-joined" in sessions
    assert [attributes(c)["mcp.side"] for c in by_kind(_read(store_path, "mcp-not-joined"), "tool")] == ["client"]


@pytest.mark.usefixtures("mcp_on")
async def test_separate_stores_each_hold_their_side_with_the_same_trace_and_the_client_call_as_parent(
    store_path: Path, tmp_path: Path
) -> None:
    server_store = tmp_path / "server.db"
    with openprogram.session_context("mcp-two-stores") as handle:
        async with _stdio(_server_env(OPENPROGRAM_STORE=f"sqlite:///{server_store}")) as session:
            await session.call_tool("add", {"a": 1, "b": 2})
    (client,) = by_kind(_read(store_path, "mcp-two-stores"), "tool")
    (server,) = by_kind(_read(server_store, "mcp-two-stores"), "tool")
    assert attributes(client)["mcp.side"] == "client" and attributes(server)["mcp.side"] == "server"
    assert server.parent_id == client.call_id and server.turn_id == client.turn_id == handle.turn_id


@pytest.mark.usefixtures("mcp_on")
async def test_a_client_with_no_session_open_records_into_its_implicit_session_and_the_server_joins_it(
    store_path: Path,
) -> None:
    async with _stdio(_server_env()) as session:
        await session.call_tool("add", {"a": 1, "b": 2})
    implicit = openprogram.implicit_session()
    assert implicit is not None
    assert _sessions(store_path) == [implicit.session_id]
    client, server = _sides(_read(store_path, implicit.session_id), "add")
    assert server.parent_id == client.call_id


@pytest.mark.usefixtures("mcp_on")
async def test_concurrent_calls_on_one_session_each_nest_under_their_own_client_call(store_path: Path) -> None:
    with openprogram.session_context("mcp-concurrent"):
        async with _stdio(_server_env()) as session:
            results = await asyncio.gather(*(session.call_tool("add", {"a": i, "b": 1}) for i in range(8)))
    assert [r.content[0].text for r in results] == [str(i + 1) for i in range(8)]  # type: ignore[union-attr]
    records = _read(store_path, "mcp-concurrent")
    clients = {c.call_id: c for c in records if attributes(c).get("mcp.side") == "client"}
    servers = [c for c in records if attributes(c).get("mcp.side") == "server"]
    assert len(clients) == len(servers) == 8
    assert all(clients[s.parent_id].inputs == s.inputs for s in servers if s.parent_id)


def test_uninstrument_restores_the_sdk(instrument: Callable[..., set[str]]) -> None:
    from mcp.client.session import ClientSession as Session
    from mcp.server.lowlevel.server import Server

    before = (Session.call_tool, Session.__init__, Server.__init__, getattr(Server, "call_tool", None))
    instrument("mcp")
    assert Session.call_tool is not before[0]
    openprogram.uninstrument("mcp")
    assert (Session.call_tool, Session.__init__, Server.__init__, getattr(Server, "call_tool", None)) == before

"""An MCP client and server recording into separate stores are joined again by OTLP export: the server's span
is in the client's trace, under the client's span."""

from __future__ import annotations

import io
import os
import sys
from pathlib import Path

import openprogram
import pytest
from openprogram import _cli

from .otlp_receiver import Receiver

ROOT = Path(__file__).resolve().parents[2]


def _export(store_url: str, session_id: str, endpoint: str) -> None:
    openprogram.flush()
    assert (
        _cli.main(["--store", store_url, "export", "otlp", session_id, "--endpoint", endpoint], out=io.StringIO()) == 0
    )


async def test_both_sides_exported_from_their_own_stores_make_one_trace(
    tmp_path: Path, receiver: Receiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    client_store, server_store = f"sqlite:///{tmp_path / 'client.db'}", f"sqlite:///{tmp_path / 'server.db'}"
    monkeypatch.setenv("OPENPROGRAM_STORE", client_store)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OPENPROGRAM_STORE": server_store}
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "tests.integrations.mcp.servers", "stdio"], env=env
    )
    openprogram.instrument("mcp")
    try:
        with openprogram.session_context("mcp-trace"):
            async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
                await session.initialize()
                await session.call_tool("nested", {"x": 1})
    finally:
        openprogram.uninstrument("mcp")

    _export(client_store, "mcp-trace", receiver.url)
    _export(server_store, "mcp-trace", receiver.url)
    spans = receiver.wait_for(4)  # client: its turn and tool; server: its tool and the @openprogram.tool in it
    assert len({span.trace_id for span in spans}) == 1
    tools = {span.attributes["openprogram.call.id"]: span for span in spans if span.name == "execute_tool nested"}
    (client,) = [s for s in tools.values() if s.attributes.get("openprogram.attributes.mcp.side") == "client"]
    (server,) = [s for s in tools.values() if s.attributes.get("openprogram.attributes.mcp.side") == "server"]
    assert server.parent_span_id == client.span_id
    (double,) = [span for span in spans if span.name == "execute_tool double"]
    assert double.parent_span_id == server.span_id

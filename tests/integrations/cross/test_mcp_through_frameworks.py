"""Each framework's own MCP path gives one chain in one session: the framework's tool call, the MCP client's
call, and the call of the server process that ran the tool (the test server, over stdio, sharing the store)."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import openprogram
import pytest

from tests.support import attributes

ROOT = Path(__file__).resolve().parents[3]
SERVER = ["-m", "tests.integrations.mcp.servers", "stdio"]


@pytest.fixture
def store_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    path = tmp_path / "shared.db"
    monkeypatch.setenv("OPENPROGRAM_STORE", f"sqlite:///{path}")
    yield path


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT)}


def _chain(path: Path, session_id: str) -> list[tuple[str, str | None, str]]:
    """(kind, framework, side) from the turn down to the server's ``add`` call."""
    openprogram.flush()
    store = openprogram.open_store(f"sqlite:///{path}")
    try:
        records = store.list_calls(session_id)
    finally:
        store.close()
    by_id = {c.call_id: c for c in records}
    (leaf,) = [c for c in records if c.name == "add" and attributes(c).get("mcp.side") == "server"]
    chain = []
    node: openprogram.CallRecord | None = leaf
    while node is not None:
        chain.append((node.kind, node.framework, str(attributes(node).get("mcp.side", ""))))
        node = by_id.get(node.parent_id) if node.parent_id else None
    return chain[::-1]


async def test_an_agents_sdk_agent_with_an_mcp_server(store_path: Path) -> None:
    openprogram.instrument("agents", "mcp")
    try:
        from agents import Agent, Runner
        from agents.mcp import MCPServerStdio
        from openprogram.integrations.openai_agents.demo import prepare, scripted_model

        prepare()
        params: Any = {"command": sys.executable, "args": SERVER, "env": _env(), "cwd": str(ROOT)}
        async with MCPServerStdio(params=params, name="calculator", client_session_timeout_seconds=60) as server:
            agent = Agent(name="math", model=scripted_model([[("add", {"a": 2, "b": 3})], "5"]), mcp_servers=[server])
            with openprogram.session_context("agents-mcp"):
                result = await Runner.run(agent, "2 + 3?")
    finally:
        openprogram.uninstrument("agents", "mcp")
    assert result.final_output == "5"
    assert _chain(store_path, "agents-mcp") == [
        ("turn", None, ""),
        ("agent", "openai_agents", ""),
        ("tool", "openai_agents", ""),
        ("tool", "mcp", "client"),
        ("tool", "mcp", "server"),
    ]


async def test_a_pydantic_ai_agent_with_an_mcp_toolset(store_path: Path) -> None:
    openprogram.instrument("pydantic_ai", "mcp")
    try:
        from fastmcp.client import Client
        from fastmcp.client.transports import StdioTransport
        from pydantic_ai import Agent
        from pydantic_ai.mcp import MCPToolset
        from pydantic_ai.models.test import TestModel

        toolset = MCPToolset(Client(StdioTransport(command=sys.executable, args=SERVER, env=_env(), cwd=str(ROOT))))
        agent = Agent(TestModel(call_tools=["add"]), toolsets=[toolset])
        with openprogram.session_context("pydantic-mcp"):
            async with agent:
                await agent.run("add")
    finally:
        openprogram.uninstrument("pydantic_ai", "mcp")
    assert _chain(store_path, "pydantic-mcp") == [
        ("turn", None, ""),
        ("agent", "pydantic_ai", ""),
        ("tool", "pydantic_ai", ""),
        ("tool", "mcp", "client"),
        ("tool", "mcp", "server"),
    ]


async def test_a_langgraph_agent_with_langchain_mcp_adapters(store_path: Path) -> None:
    openprogram.instrument("langgraph", "mcp")
    try:
        from langchain.agents import create_agent
        from langchain_core.messages import AIMessage
        from langchain_mcp_adapters.client import MultiServerMCPClient

        from tests.integrations.langgraph.fakes import openai_model, tool_calls

        client = MultiServerMCPClient(
            {
                "calculator": {
                    "transport": "stdio",
                    "command": sys.executable,
                    "args": SERVER,
                    "env": _env(),
                    "cwd": str(ROOT),
                }
            }
        )
        tools = [t for t in await client.get_tools() if t.name == "add"]
        model = openai_model(tool_calls(("add", {"a": 2, "b": 3})), AIMessage(content="5"))
        graph = create_agent(model, tools)
        with openprogram.session_context("langgraph-mcp"):
            await graph.ainvoke({"messages": [("user", "2 + 3?")]})
    finally:
        openprogram.uninstrument("langgraph", "mcp")
    chain = _chain(store_path, "langgraph-mcp")
    assert chain[:2] == [("turn", None, ""), ("graph", "langgraph", "")]
    assert chain[-4:] == [
        ("node", "langgraph", ""),
        ("tool", "langgraph", ""),
        ("tool", "mcp", "client"),
        ("tool", "mcp", "server"),
    ]

"""MCP adapter: a tool call crosses to the MCP server that runs it, and the session crosses with it.

The client's ``ClientSession.call_tool`` (what every framework's MCP tools call, and ``ClientSession`` users
directly) is a ``tool`` call whose request carries the session (:mod:`.client`); a server instrumented too
records the tool it runs under that call, in that session (:mod:`.server`). Both sides are on in any process
that calls ``instrument()`` with the ``mcp`` package installed.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from openprogram._kit import Integration, Target

from . import client, server

__all__ = ["MCPIntegration"]

_SESSION = "mcp.client.session:ClientSession"
_SERVER = "mcp.server.lowlevel.server:Server"

#: transport -> where its ``async with`` function is bound: the SDK's modules, and the frameworks' modules that
#: import it by name (one imported before ``instrument()`` keeps the SDK's original otherwise, and its sessions'
#: transport would read ``unknown``)
TRANSPORTS: dict[str, list[tuple[str, str]]] = {
    "stdio": [
        ("mcp.client.stdio", "stdio_client"),
        ("mcp", "stdio_client"),
        ("agents.mcp.server", "stdio_client"),
        ("fastmcp.client.transports.stdio", "stdio_client"),
        ("langchain_mcp_adapters.sessions", "stdio_client"),
    ],
    "streamable-http": [
        ("mcp.client.streamable_http", "streamable_http_client"),
        ("mcp.client.streamable_http", "streamablehttp_client"),
        ("agents.mcp.server", "streamablehttp_client"),
        ("agents.mcp.server", "streamable_http_client_v2"),
        ("fastmcp.client.transports.http", "streamable_http_client"),
        ("langchain_mcp_adapters.sessions", "streamable_http_client"),
    ],
    "sse": [
        ("mcp.client.sse", "sse_client"),
        ("agents.mcp.server", "sse_client"),
        ("fastmcp.client.transports.sse", "sse_client"),
        ("langchain_mcp_adapters.sessions", "sse_client"),
    ],
    "websocket": [
        ("mcp.client.websocket", "websocket_client"),
        ("langchain_mcp_adapters.sessions", "websocket_client"),
    ],
}


class MCPIntegration(Integration):
    """Records MCP tool calls on the client and on the server, joined into one session."""

    identifier: ClassVar[str] = "mcp"
    framework: ClassVar[str] = client.FRAMEWORK
    distribution: ClassVar[str] = "mcp"
    extra: ClassVar[str] = "mcp"
    trigger: ClassVar[str] = "mcp"

    def targets(self) -> Sequence[Target]:
        return [
            Target(_SESSION, "__init__", client.wrap_session_init),
            Target(_SESSION, "initialize", client.wrap_initialize),
            Target(_SESSION, "call_tool", client.wrap_call_tool),
            *(
                Target(module, attribute, client.wrap_transport(transport))
                for transport, bindings in TRANSPORTS.items()
                for module, attribute in bindings
            ),
            Target(_SERVER, "call_tool", server.wrap_call_tool_registration),  # SDK 1
            Target(_SERVER, "__init__", server.wrap_server_init),  # SDK 2: its middleware list
        ]

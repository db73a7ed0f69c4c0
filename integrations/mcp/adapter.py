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
            Target("mcp.client.stdio", "stdio_client", client.wrap_transport("stdio")),
            Target("mcp.client.streamable_http", "streamable_http_client", client.wrap_transport("streamable-http")),
            Target("mcp.client.streamable_http", "streamablehttp_client", client.wrap_transport("streamable-http")),
            Target("mcp.client.sse", "sse_client", client.wrap_transport("sse")),
            Target("mcp.client.websocket", "websocket_client", client.wrap_transport("websocket")),
            Target(_SERVER, "call_tool", server.wrap_call_tool_registration),  # SDK 1
            Target(_SERVER, "__init__", server.wrap_server_init),  # SDK 2: its middleware list
        ]

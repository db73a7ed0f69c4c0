"""An MCP server for the tests, run as its own process: ``python -m tests.integrations.mcp.servers stdio|http PORT``.

It is built with the installed SDK's own server class (``FastMCP`` in SDK 1, ``MCPServer`` in SDK 2) and is
instrumented unless ``MCP_TEST_PLAIN`` is set. Its tools: ``add``; ``fail``, which raises; ``nested``, which
runs an ``@openprogram.tool`` inside; ``echo_meta``, which returns the request's ``_meta``; ``whoami``, which
returns the session it records into.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

import openprogram

try:
    from mcp.server.mcpserver import Context  # SDK 2
    from mcp.server.mcpserver import MCPServer as Server
except ImportError:
    from mcp.server.fastmcp import Context  # SDK 1
    from mcp.server.fastmcp import FastMCP as Server


def build() -> Any:
    server = Server("calculator")

    @openprogram.tool
    def double(x: int) -> int:
        return 2 * x

    @server.tool()
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    @server.tool()
    def fail(reason: str) -> str:
        """Always fails."""
        raise ValueError(f"refused: {reason}")

    @server.tool()
    def nested(x: int) -> int:
        """Doubles x with an openprogram tool."""
        return double(x) + 1

    @server.tool()
    def echo_meta(ctx: Context) -> str:  # type: ignore[type-arg]
        """The request's _meta, as JSON."""
        meta = ctx.request_context.meta
        if meta is not None and not isinstance(meta, dict):
            meta = meta.model_dump(by_alias=True, exclude_none=True)
        return json.dumps(meta or {})

    @server.tool()
    def whoami() -> str:
        """The session this server records into."""
        handle = openprogram.get_current_session()
        return "none" if handle is None else handle.session_id

    return server


def main() -> None:
    if not os.environ.get("MCP_TEST_PLAIN"):
        openprogram.instrument("mcp")
    server = build()
    transport = sys.argv[1]
    if transport == "stdio":
        server.run("stdio")
    else:
        port = int(sys.argv[2])
        if hasattr(server.settings, "host"):  # SDK 1: set on the server's settings
            server.settings.host, server.settings.port = "127.0.0.1", port
            server.run("streamable-http")
        else:  # SDK 2: given to run()
            server.run("streamable-http", host="127.0.0.1", port=port)
    openprogram.flush()


if __name__ == "__main__":
    main()

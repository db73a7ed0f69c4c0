"""The MCP adapter (:mod:`.adapter`): the client's tool calls (:mod:`.client`) carry the session (:mod:`.context`)
to the servers that run them (:mod:`.server`).

Importing this package imports only the adapter, which imports no part of the ``mcp`` package.
"""

from __future__ import annotations

from .adapter import MCPIntegration
from .results import MCPToolError

__all__ = ["MCPIntegration", "MCPToolError"]

"""A tool result the MCP server marks as an error, as the exception that ends its call in error."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from openprogram._kit import attribute

__all__ = ["MCPToolError", "error_of"]

_MAX_TEXT = 2000


class MCPToolError(Exception):
    """A tool's result came back marked ``isError``: recorded as the call's error; never raised."""


def error_of(result: Any) -> MCPToolError | None:
    """The error a ``CallToolResult`` (a model, or its dict on the server side of SDK 2) reports, or None."""
    if isinstance(result, Mapping):
        failed, content = result.get("isError") is True, result.get("content")
    else:
        flag = attribute(result, "is_error")
        failed, content = (
            (flag if flag is not None else attribute(result, "isError")) is True,
            attribute(result, "content"),
        )
    if not failed:
        return None
    texts = [text for block in content or () if isinstance(text := _text_of(block), str)]
    return MCPToolError(" ".join(texts)[:_MAX_TEXT] or "the tool's result is marked isError")


def _text_of(block: Any) -> Any:
    return block.get("text") if isinstance(block, Mapping) else attribute(block, "text")

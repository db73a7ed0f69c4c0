"""The two-process example of docs/mcp.md runs as written (SDK 2: with the server import its comment names)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import openprogram

from tests.support import attributes

DOC = Path(__file__).resolve().parents[3] / "docs" / "mcp.md"


def test_the_docs_two_process_example_records_one_tree(tmp_path: Path) -> None:
    server, client = re.findall(r"```python\n(.*?)```", DOC.read_text(), re.S)[1:3]
    try:
        import mcp.server.mcpserver  # noqa: F401 - SDK 2
    except ImportError:
        pass
    else:
        server = server.replace(
            "from mcp.server.fastmcp import FastMCP", "from mcp.server.mcpserver import MCPServer as FastMCP"
        )
    (tmp_path / "server.py").write_text(server)
    (tmp_path / "client.py").write_text(client)
    store = f"sqlite:///{tmp_path / 'sessions.db'}"
    env = {**os.environ, "OPENPROGRAM_STORE": store}
    done = subprocess.run(
        [sys.executable, "client.py"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    records = openprogram.open_store(store).list_calls("mcp-example")
    client_call, server_call = [c for c in records if c.kind == "tool"]
    assert [attributes(c)["mcp.side"] for c in (client_call, server_call)] == ["client", "server"]
    assert server_call.parent_id == client_call.call_id

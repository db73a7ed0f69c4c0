"""The cost of the MCP hooks per tool call: the client's, and the client's with the server's.

One process, the SDK's in-memory transport (no subprocess, no socket: what is left is the SDK's own work per
call, which the hooks add to). Three servers of the same ``add`` tool, timed in the same run, interleaved:

- ``plain``: neither side instrumented;
- ``client``: ``instrument("mcp")`` on, the server built before it (not recorded): the client's hook alone,
  which opens the call, adds the context and ``traceparent`` to ``_meta`` and closes the call;
- ``both``: the server built after it too: the server's hook joins the session, records the tool and waits for
  its calls to be written (a SQLite store) before answering.

Each burst is ``N`` sequential ``call_tool`` inside a session, ended by ``flush()``; the figures are the median
microseconds of CPU per call (every thread of the process: the writer too) and the difference to ``plain``.
"""

from __future__ import annotations

import asyncio
import logging
import os
import statistics
import sys
import tempfile
import time
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import openprogram

N = 200
ROUNDS = 11


def _server(name: str) -> Any:
    from mcp.server.fastmcp import FastMCP

    server = FastMCP(name)

    @server.tool()
    def add(a: int, b: int) -> int:
        return a + b

    return server


async def _burst(server: Any, store: str) -> float:
    from mcp.shared.memory import create_connected_server_and_client_session

    async with create_connected_server_and_client_session(server) as client:
        await client.call_tool("add", {"a": 0, "b": 0})  # warm
        with openprogram.session_context(store=store):
            start = time.process_time_ns()
            for i in range(N):
                await client.call_tool("add", {"a": i, "b": 1})
            await openprogram.flush_async()
            return (time.process_time_ns() - start) / N / 1000


async def main() -> None:
    try:
        import mcp.shared.memory  # noqa: F401
        from mcp.server.fastmcp import FastMCP  # noqa: F401
    except ImportError:
        print("== mcp-cost: needs the MCP SDK 1 (FastMCP and the in-memory transport); skipped")
        return
    logging.getLogger("mcp").setLevel(logging.WARNING)  # the SDK logs each request at INFO, through rich
    directory = tempfile.mkdtemp()
    os.environ["OPENPROGRAM_STORE"] = store = f"sqlite:///{directory}/bench.db"
    plain_server = _server("plain")
    openprogram.instrument("mcp")
    both_server = _server("both")
    samples: dict[str, list[float]] = {"plain": [], "client": [], "both": []}
    for r in range(ROUNDS):
        order = ["plain", "client", "both"]
        for name in order[r % 3 :] + order[: r % 3]:
            if name == "plain":
                openprogram.uninstrument("mcp")
            else:
                openprogram.instrument("mcp")
            samples[name].append(await _burst(both_server if name == "both" else plain_server, store))
    openprogram.uninstrument("mcp")
    medians = {name: statistics.median(values) for name, values in samples.items()}
    print(f"== mcp-cost: {N} sequential call_tool per burst, in-memory transport, median of {ROUNDS} (CPU us per call)")
    for name, value in medians.items():
        extra = "" if name == "plain" else f"  (+{value - medians['plain']:.0f} us, {value / medians['plain']:.2f}x)"
        print(f"  {name:<7} {value:8.0f}{extra}")


if __name__ == "__main__":
    asyncio.run(main())

"""``openprogram ui``: a local, read-only web viewer of the sessions in a store.

The pages, the JSON API and the server are in ``_viewer_http``, ``_viewer_api`` and ``_viewer_tree``;
the page's script and style are package data under ``viewer/``, served as they are (no build step, no CDN).
"""

from __future__ import annotations

import ipaddress
import sys
import threading
import webbrowser
from typing import TextIO

from ..stores import Store, describe_store
from .api import ViewerApi
from .http import ViewerServer

__all__ = ["DEFAULT_HOST", "DEFAULT_PORT", "is_loopback", "make_server", "serve"]

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8765


def is_loopback(host: str) -> bool:
    """True if ``host`` is reachable from this machine only."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def make_server(store: Store, host: str = DEFAULT_HOST, port: int = DEFAULT_PORT) -> ViewerServer:
    """A viewer of ``store`` bound to ``host:port`` (port 0: any free one), not yet serving."""
    return ViewerServer(ViewerApi(store), host.strip("[]"), port)


def serve(
    store: Store,
    host: str = DEFAULT_HOST,
    port: int = DEFAULT_PORT,
    *,
    open_browser: bool = True,
    out: TextIO | None = None,
) -> int:
    """Serve the viewer until interrupted (Ctrl-C); print its URL and open it in a browser unless told not to."""
    out = out or sys.stdout
    try:
        server = make_server(store, host, port)
    except OSError as exc:
        sys.stderr.write(
            f"openprogram ui: cannot listen on {host}:{port}: {exc.strerror or exc}"
            f"{' (try another --port)' if port else ''}\n"
        )
        return 1
    if not is_loopback(host):
        sys.stderr.write(
            f"openprogram ui: warning: listening on {host}, not only on this machine: anyone who can "
            "reach it can read every recorded session, inputs and outputs included\n"
        )
    out.write(f"openprogram ui: {server.url}  (store {describe_store(store)}; Ctrl-C to stop)\n")
    out.flush()
    if open_browser:
        # A console browser may take over the terminal until it exits: never wait for it.
        threading.Thread(target=webbrowser.open, args=(server.url,), name="openprogram-ui-browser", daemon=True).start()
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0

"""``openprogram ui``: a local, read-only web viewer of the sessions in a store.

- ``tree``: one session's call tree as the viewer serves it (children, paths and matches per call);
- ``cache``: the trees the viewer keeps, read again only when their session changed;
- ``lookup``: one call's captures, read when its details are opened;
- ``api``: the JSON API over a store;
- ``http``: the HTTP server (pages, ``static/`` assets and ``/api/...``), for this machine's browser;
- ``server``: making and serving it.
"""

from __future__ import annotations

from .api import ViewerApi
from .cache import TreeCache
from .http import ViewerServer, json_bytes
from .lookup import find_captures
from .server import DEFAULT_HOST, DEFAULT_PORT, is_loopback, make_server, serve
from .tree import SessionTree

__all__ = [
    "DEFAULT_HOST",
    "DEFAULT_PORT",
    "SessionTree",
    "TreeCache",
    "ViewerApi",
    "ViewerServer",
    "find_captures",
    "is_loopback",
    "json_bytes",
    "make_server",
    "serve",
]

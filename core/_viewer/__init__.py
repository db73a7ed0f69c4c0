"""``openprogram ui``: a local, read-only web viewer of the sessions in a store.

- ``tree``: one session's call tree as the viewer serves it (children, paths and matches per call);
- ``cache``: the trees the viewer keeps, read again only when their session changed (a running one only
  where it changed), one session's read never waiting on another's;
- ``lookup``: one call's captures, read when its details are opened;
- ``prompts``: which messages of a model call were new (the rest repeat an earlier request, folded);
- ``conversation``: each turn's input and answer, found in its model calls;
- ``api``: the JSON API over a store;
- ``http``: the HTTP server (pages, ``static/`` assets and ``/api/...``), for this machine's browser;
- ``server``: making and serving it.
"""

from __future__ import annotations

from .api import ViewerApi
from .cache import TreeCache
from .conversation import Conversation
from .http import ViewerServer, json_bytes
from .lookup import find_captures
from .prompts import PromptLinks
from .server import DEFAULT_HOST, DEFAULT_PORT, is_loopback, make_server, serve
from .tree import SessionTree

__all__ = [
    "DEFAULT_HOST",
    "DEFAULT_PORT",
    "Conversation",
    "PromptLinks",
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

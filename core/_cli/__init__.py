"""The ``openprogram`` command.

- ``main``: the parser and the commands (``sessions``, ``show``, ``demo``, ``import``, ``export``, ``undo``, ``ui``);
- ``sessions``: the table ``openprogram sessions`` prints;
- ``tree``: the call tree ``openprogram show`` draws;
- ``undo``: ``openprogram undo``, its plan and confirmation;
- ``export``: ``openprogram export otlp``;
- ``demo``: ``openprogram demo``, offline agents on every installed framework.
- ``printable``: recorded text escaped before it reaches a terminal.
"""

from __future__ import annotations

from .demo import follow_up_lines
from .export import row_of
from .main import build_parser, main
from .session_ids import SessionNotFound, find_session
from .tree import render_tree

__all__ = ["SessionNotFound", "build_parser", "find_session", "follow_up_lines", "main", "render_tree", "row_of"]

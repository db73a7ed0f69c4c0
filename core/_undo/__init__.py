"""Undo: how a tool's effects are journaled before it runs, and taken back later, newest first.

- ``compensations``: each tool's compensation, by its recorded name (``.undo``, ``register_undo``);
- ``effects``: the undo journal, written to the session's store before an undoable call's body runs;
- ``journaled``: an undoable tool's body, its effect journaled around it, in the function's shape;
- ``signing``: journal rows signed with this home's key, so undo acts only on rows journaled here;
- ``files``: ``file_effect``, snapshots of files and directories, and their restore;
- ``plan``: the effects still to compensate;
- ``run``: ``undo()``.
"""

from __future__ import annotations

from . import compensations
from .compensations import compensation_for, register_undo
from .effects import Effect, write_outcomes
from .files import file_effect
from .plan import UndoPlan
from .run import describe_effect, run_plan, undo

__all__ = [
    "Effect",
    "UndoPlan",
    "compensation_for",
    "compensations",
    "describe_effect",
    "file_effect",
    "register_undo",
    "run_plan",
    "undo",
    "write_outcomes",
]

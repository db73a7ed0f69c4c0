"""Compensations: how each tool's effects are undone, by the tool's recorded name.

``@some_tool.undo`` declares the compensation of an ``@openprogram.tool`` function and makes
the tool undoable (its effects journaled before its body runs); :func:`register_undo` declares
one for a framework-native tool by the name its calls are recorded under. The process that
undoes must have declared them too: the CLI's ``--import MODULE`` imports the module that does.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, TypeVar

from .._calls import declare_undo_with
from .effects import Effect
from .journaled import journaled

__all__ = ["Compensation", "compensation_for", "declarer", "derived_names", "register_undo"]

C = TypeVar("C", bound=Callable[[Effect], Any])


@dataclasses.dataclass(frozen=True)
class Compensation:
    """A tool's compensation; ``journaled`` when the tool journals its effects itself (``.undo``), else its
    effects are read from its recorded calls (``register_undo``)."""

    undo: Callable[[Effect], Any]
    journaled: bool


_compensations: dict[str, Compensation] = {}


def register_undo(name: str, fn: C) -> C:
    """Have ``fn(effect)`` compensate each successful call of the tool recorded as ``name``; returns ``fn``.

    For framework-native tools, by the name their calls are recorded under: a LangChain
    tool's ``name``, a CrewAI tool's name, a Semantic Kernel function's ``plugin.function``.
    Their effects are the recorded calls themselves: a call that ended ``ok`` is undone, one
    whose process died (``interrupted``) is of unknown outcome. ``fn`` may be a coroutine function.
    """
    if not isinstance(name, str) or not name:
        raise TypeError(f"register_undo needs a tool's recorded name, not {name!r}")
    if not callable(fn):
        raise TypeError(f"register_undo needs a callable compensation, not {type(fn).__name__}")
    _compensations[name] = Compensation(fn, journaled=False)
    return fn


def compensation_for(name: str) -> Compensation | None:
    """The compensation declared in this process for the tool recorded as ``name``."""
    return _compensations.get(name)


def derived_names() -> frozenset[str]:
    """Tools whose effects are read from their recorded calls (declared with :func:`register_undo`)."""
    return frozenset(name for name, found in _compensations.items() if not found.journaled)


def declarer(
    func: Callable[..., Any],
    name: str,
    names: tuple[str, ...],
    skip: int,
    shape: str,
    rebind: Callable[[Callable[..., Any]], None],
) -> Callable[[C], C]:
    """The ``.undo`` of an ``@openprogram.tool`` function: ``rebind(body)`` makes its wrapper run ``body``."""

    def undo(fn: C) -> C:
        """Declare ``fn(effect)`` as this tool's compensation (a decorator); the tool becomes undoable:
        before each call's body runs, its effect is durable in the session's store."""
        if not callable(fn):
            raise TypeError(f"{name}.undo needs a callable compensation, not {type(fn).__name__}")
        _compensations[name] = Compensation(fn, journaled=True)
        rebind(journaled(func, name, names, skip, shape))
        return fn

    return undo


declare_undo_with(declarer)  # every @openprogram.tool gets its .undo from here

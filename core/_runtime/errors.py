"""openprogram's public exceptions, in one place (each re-exported by ``openprogram``)."""

from __future__ import annotations

from typing import Any

__all__ = ["DidNotEnable", "InvalidSessionId", "NoSessionError", "StoreError", "UndoError", "install_hint"]


class NoSessionError(RuntimeError):
    """Raised by an instrumented call made with no session under the ``"error"`` no-session policy."""


class InvalidSessionId(ValueError):
    """A session or turn id that is empty, too long or has characters we do not allow."""


class DidNotEnable(RuntimeError):
    """An integration could not be enabled (framework missing or unsupported)."""


class StoreError(RuntimeError):
    """A store could not be opened or used. The message names the path or host."""


class UndoError(RuntimeError):
    """An undo stopped before compensating every planned effect; nothing past ``effect`` was touched.

    ``effect`` is the :class:`openprogram.Effect` where it stopped (its compensation failed — the cause
    is ``__cause__`` — or it is missing, or the effect's outcome is unknown, or another process is
    undoing it); ``done`` are the effects this undo compensated first. A later ``undo()`` resumes.
    """

    def __init__(self, message: str, effect: Any = None, done: tuple[Any, ...] = ()) -> None:
        super().__init__(message)
        self.effect = effect
        self.done = done


def install_hint(extra: str) -> str:
    """How to install one of openprogram's extras: from its checkout, as the name on the package index is
    another project's."""
    return f"pip install -e '.[{extra}]' in openprogram's checkout"

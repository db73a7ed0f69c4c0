"""The one guard around instrumentation code: an error of ours is logged once, never raised.

An adapter's own code (naming a call, capturing its result, patching a class)
runs inside ``with guarded(framework, what):`` or calls :func:`log_once` from an
``except Exception`` block. The user's agent keeps running; what must reach the
user (the ``"error"`` no-session policy's :class:`~openprogram.NoSessionError`)
passes through.
"""

from __future__ import annotations

import logging
import threading
from types import TracebackType

from .errors import NoSessionError

__all__ = ["forget_logged", "guarded", "log_once"]

logger = logging.getLogger("openprogram")

_logged: set[tuple[str, str]] = set()
_logged_lock = threading.Lock()


def log_once(framework: str, what: str, exc: BaseException | None = None) -> None:
    """Log the exception being handled, with its traceback, once per ``(framework, what)``.

    Later failures at the same place are logged at debug level only, so a bug hit by
    every call of a busy agent does not flood its log.
    """
    with _logged_lock:
        first = (framework, what) not in _logged
        _logged.add((framework, what))
    exc_info: BaseException | bool = exc if exc is not None else True
    if first:
        logger.error(
            "openprogram: %s instrumentation failed in %s; the program is unaffected",
            framework,
            what,
            exc_info=exc_info,
        )
    else:
        logger.debug("openprogram: %s instrumentation failed again in %s", framework, what, exc_info=exc_info)


def forget_logged() -> None:
    """Log every place's next failure again, as in a new process (for tests of the log-once rule)."""
    with _logged_lock:
        _logged.clear()


class guarded:
    """``with guarded("crewai", "the before-tool hook"):`` — an ``Exception`` inside is logged once and swallowed.

    ``NoSessionError`` (the user chose the ``"error"`` policy) and ``BaseException``s that are not
    ``Exception`` (cancellation, Ctrl-C) propagate unchanged.
    """

    __slots__ = ("framework", "what")

    def __init__(self, framework: str, what: str) -> None:
        self.framework = framework
        self.what = what

    def __enter__(self) -> None:
        return None

    def __exit__(self, et: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> bool:
        if exc is None or not isinstance(exc, Exception) or isinstance(exc, NoSessionError):
            return False
        log_once(self.framework, self.what, exc)
        return True

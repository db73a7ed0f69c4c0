"""``instrument()`` / ``uninstrument()``: switching framework adapters on and off.

Adapters live in ``openprogram.integrations.<name>`` and are found by the import
strings of its registry. ``instrument()`` imports no framework: an adapter whose framework is
imported already is enabled at once, any other when the program imports it.
"""

from __future__ import annotations

import importlib
import logging
import threading

from .._runtime import DidNotEnable
from .integration import Integration

__all__ = ["instrument", "instrumented", "uninstrument"]

logger = logging.getLogger("openprogram")


_lock = threading.RLock()
_armed: dict[str, Integration] = {}


def _registry() -> tuple[dict[str, str], dict[str, str]]:
    """The adapters' import strings and the other spellings of their names, read when first needed:
    importing openprogram imports nothing of ``openprogram.integrations``."""
    from openprogram.integrations import ALIASES, INTEGRATIONS

    return INTEGRATIONS, ALIASES


def _load(name: str) -> Integration:
    module_name, _, attr = _registry()[0][name].partition(":")
    cls: type[Integration] = getattr(importlib.import_module(module_name), attr)
    return cls()


def instrument(*names: str) -> set[str]:
    """Enable adapters; return the names enabled or waiting for their framework to be imported.

    With no names, every supported framework that is installed is enabled (now if the
    program imported it already, else when it does) and the others are skipped; when
    none can be, a warning says so. A named framework that is missing or too old raises
    :class:`DidNotEnable` with the install hint. Calling it again wraps nothing twice.
    """
    explicit = bool(names)
    INTEGRATIONS, ALIASES = _registry()
    wanted = [ALIASES.get(name, name) for name in names] or list(INTEGRATIONS)
    for name in wanted:
        if name not in INTEGRATIONS:
            known = ", ".join(sorted([*INTEGRATIONS, *ALIASES]))
            raise ValueError(f"unknown integration {name!r}; known: {known}")
    with _lock:
        skipped: list[str] = []
        for name in wanted:
            if name in _armed:
                continue
            integration = _load(name)
            try:
                integration.arm()
            except DidNotEnable as exc:
                if explicit:
                    raise
                skipped.append(str(exc))
                continue
            except Exception as exc:
                integration.disable()
                if explicit:
                    raise DidNotEnable(f"{name}: setup failed: {exc}") from exc
                logger.warning("openprogram: could not enable %s: %s", name, exc, exc_info=True)
                continue
            _armed[name] = integration
        if not _armed:
            logger.warning("openprogram: instrument() enabled nothing: %s", "; ".join(skipped) or "no adapter")
        return set(_armed)


def uninstrument(*names: str) -> None:
    """Disable adapters (all by default), cancel the ones still waiting, and restore the frameworks. Idempotent."""
    aliases = _registry()[1]
    with _lock:
        for name in names or tuple(_armed):
            integration = _armed.pop(aliases.get(name, name), None)
            if integration is not None:
                integration.disable()


def instrumented() -> set[str]:
    """Names of the adapters enabled or waiting for their framework to be imported."""
    with _lock:
        return set(_armed)

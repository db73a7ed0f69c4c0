"""``instrument()`` / ``uninstrument()``: switching framework adapters on and off.

Adapters live in ``openprogram.integrations.<name>`` and are found by import
string, so importing openprogram imports no framework. Each adapter is one
:class:`Integration` subclass; ``setup()`` runs at most once per
``instrument()``/``uninstrument()`` cycle, under a lock.
"""

from __future__ import annotations

import importlib
import logging
import threading
from typing import ClassVar

__all__ = ["INTEGRATIONS", "DidNotEnable", "Integration", "instrument", "instrumented", "uninstrument"]

logger = logging.getLogger("openprogram")

#: name -> (import string of the Integration subclass, pip extra)
INTEGRATIONS: dict[str, tuple[str, str]] = {
    "langgraph": ("openprogram.integrations.langgraph:LangGraphIntegration", "langgraph"),
    "crewai": ("openprogram.integrations.crewai:CrewAIIntegration", "crewai"),
    "semantic_kernel": ("openprogram.integrations.semantic_kernel:SemanticKernelIntegration", "semantic-kernel"),
}


class DidNotEnable(RuntimeError):
    """An integration could not be enabled (framework missing or unsupported)."""


class Integration:
    """Base class of every framework adapter.

    Subclasses set ``identifier`` and ``extra`` and implement ``setup`` (raise
    :class:`DidNotEnable` if the framework is missing or too old; patch it
    otherwise) and ``teardown`` (undo every patch). Both are called under a
    lock, never twice in a row.
    """

    identifier: ClassVar[str] = ""
    extra: ClassVar[str] = ""

    def setup(self) -> None:
        raise NotImplementedError

    def teardown(self) -> None:
        raise NotImplementedError

    @classmethod
    def missing(cls, module: str, detail: str = "") -> DidNotEnable:
        """The DidNotEnable to raise when ``module`` cannot be imported."""
        hint = f"pip install 'openprogram[{cls.extra}]'"
        return DidNotEnable(f"{cls.identifier}: {module} is not installed{detail}; {hint}")


_lock = threading.RLock()
_active: dict[str, Integration] = {}


def _load(name: str) -> Integration:
    target, extra = INTEGRATIONS[name]
    module_name, _, attr = target.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise DidNotEnable(f"{name}: cannot import {module_name} ({exc}); pip install 'openprogram[{extra}]'") from exc
    cls: type[Integration] = getattr(module, attr)
    return cls()


def instrument(*names: str) -> set[str]:
    """Enable adapters and return the set of enabled names.

    With no names, every supported framework that is installed is enabled and
    the others are skipped (logged at debug level). A named framework that
    cannot be enabled raises :class:`DidNotEnable` with the install hint.
    Calling it again does not wrap anything twice.
    """
    explicit = bool(names)
    wanted = names or tuple(INTEGRATIONS)
    for name in wanted:
        if name not in INTEGRATIONS:
            raise ValueError(f"unknown integration {name!r}; known: {', '.join(sorted(INTEGRATIONS))}")
    with _lock:
        for name in wanted:
            if name in _active:
                continue
            try:
                integration = _load(name)
                integration.setup()
            except DidNotEnable as exc:
                if explicit:
                    raise
                logger.debug("openprogram: not enabling %s: %s", name, exc)
                continue
            except Exception as exc:
                if explicit:
                    raise DidNotEnable(f"{name}: setup failed: {exc}") from exc
                logger.warning("openprogram: could not enable %s: %s", name, exc, exc_info=True)
                continue
            _active[name] = integration
        if not _active:
            logger.debug("openprogram: instrument() enabled nothing: no supported framework is installed")
        return set(_active)


def uninstrument(*names: str) -> None:
    """Disable adapters (all by default) and restore the frameworks. Idempotent."""
    with _lock:
        for name in names or tuple(_active):
            integration = _active.pop(name, None)
            if integration is None:
                continue
            try:
                integration.teardown()
            except Exception:
                logger.exception("openprogram: could not fully uninstrument %s", name)


def instrumented() -> set[str]:
    """Names of the adapters currently enabled."""
    with _lock:
        return set(_active)

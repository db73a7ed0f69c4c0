"""``instrument()`` / ``uninstrument()``: switching framework adapters on and off.

Adapters live in ``openprogram.integrations.<name>`` and are found by the import
strings of its registry. ``instrument()`` imports no framework: an adapter whose framework is
imported already is enabled at once, any other when the program imports it. An adapter's
``needs`` (the adapters it builds on) are armed with it and held until it is disabled.
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
_armed: dict[str, Integration] = {}  # every armed adapter: named, or needed by one that is
_named: set[str] = set()  # armed by name, or by instrument() naming none: what instrument() answers
_chosen: set[str] = set()  # named explicitly: kept when an adapter that needs it is disabled
_needed_by: dict[str, set[str]] = {}  # an adapter -> the armed adapters that need it (their ``needs``)


def _registry() -> tuple[dict[str, str], dict[str, str]]:
    """The adapters' import strings and the other spellings of their names, read when first needed:
    importing openprogram imports nothing of ``openprogram.integrations``."""
    from openprogram.integrations import ALIASES, INTEGRATIONS

    return INTEGRATIONS, ALIASES


def _load(name: str) -> Integration:
    module_name, _, attr = _registry()[0][name].partition(":")
    cls: type[Integration] = getattr(importlib.import_module(module_name), attr)
    return cls()


def _arm(name: str) -> None:
    """Arm ``name`` and, first, what it needs (each held by it); on failure nothing new stays armed."""
    if name in _armed:
        return
    integration = _load(name)
    integration.check_version()  # its own framework missing is what to report, not a need's
    held: list[str] = []
    try:
        for need in integration.needs:
            _arm(need)
            _needed_by.setdefault(need, set()).add(name)
            held.append(need)
        integration.arm()
    except BaseException:
        integration.disable()
        for need in held:
            _release(need, name)
        raise
    _armed[name] = integration


def _release(name: str, holder: str) -> None:
    """``holder`` no longer needs ``name``."""
    holders = _needed_by.get(name)
    if holders is not None:
        holders.discard(holder)
        if not holders:
            del _needed_by[name]
    _disarm_if_unused(name)


def _disarm_if_unused(name: str) -> None:
    """Disable ``name`` unless it was named explicitly or is still needed, and release what it needs."""
    if name in _chosen or name in _needed_by:
        return
    _named.discard(name)
    integration = _armed.pop(name, None)
    if integration is None:
        return
    integration.disable()
    for need in integration.needs:
        _release(need, name)


def instrument(*names: str) -> set[str]:
    """Enable adapters; return the names enabled or waiting for their framework to be imported.

    With no names, every supported framework that is installed is enabled (now if the
    program imported it already, else when it does) and the others are skipped; when
    none can be, a warning says so. A named framework that is missing or too old raises
    :class:`DidNotEnable` with the install hint. Calling it again wraps nothing twice.
    What an adapter needs (its ``needs``: LangGraph needs the LangChain adapter, whose
    models and tools its graphs run) is armed with it, and stays armed while it is.
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
            if explicit:
                _chosen.add(name)  # (added before arming: a failure raises, and uninstrument() forgets it)
            if name in _named:
                continue
            try:
                _arm(name)
            except DidNotEnable as exc:
                if explicit:
                    _chosen.discard(name)
                    raise
                skipped.append(str(exc))
                continue
            except Exception as exc:
                if explicit:
                    _chosen.discard(name)
                    raise DidNotEnable(f"{name}: setup failed: {exc}") from exc
                logger.warning("openprogram: could not enable %s: %s", name, exc, exc_info=True)
                continue
            _named.add(name)
        if not _named:
            logger.warning("openprogram: instrument() enabled nothing: %s", "; ".join(skipped) or "no adapter")
        return set(_named)


def uninstrument(*names: str) -> None:
    """Disable adapters (all by default), cancel the ones still waiting, and restore the frameworks. Idempotent.

    An adapter another armed one needs stays armed for it until that one is disabled too; then it is
    disabled with it unless it was named to ``instrument()`` (``instrument()`` naming none names none).
    """
    aliases = _registry()[1]
    with _lock:
        if not names:
            _named.clear()
            _chosen.clear()
            _needed_by.clear()
            while _armed:
                _armed.popitem()[1].disable()  # the last armed first: an adapter before what it needs
            return
        for given in names:
            name = aliases.get(given, given)
            _chosen.discard(name)
            _disarm_if_unused(name)


def instrumented() -> set[str]:
    """Names of the adapters enabled or waiting for their framework to be imported (the ones named)."""
    with _lock:
        return set(_named)

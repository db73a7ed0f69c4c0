"""Post-import hooks: run a function when a module is imported, without importing it.

``instrument()`` patches a framework the program has not imported yet at the
moment it is imported: ``when_imported("crewai", enable)`` runs ``enable(module)``
right after ``crewai`` finishes executing (or at once if it already has).
A finder placed first on ``sys.meta_path`` only while hooks wait spots the
import and wraps the module's loader; the module keeps its real loader.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import logging
import sys
import threading
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import Any

__all__ = ["when_imported"]

logger = logging.getLogger("openprogram")

Hook = Callable[[ModuleType], None]

_waiting: dict[str, list[Hook]] = {}
_lock = threading.RLock()
_finding = threading.local()  # names this thread is looking up through the other finders


def when_imported(name: str, hook: Hook) -> Callable[[], None]:
    """Call ``hook(module)`` once module ``name`` has been imported; return a function that cancels it.

    If the module is imported already, the hook runs now. ``name`` must be a regular
    module or package (a namespace package has no loader to follow: name a submodule).
    """
    module = sys.modules.get(name)
    if module is not None:
        hook(module)
        return _nothing
    with _lock:
        _waiting.setdefault(name, []).append(hook)
        if _finder not in sys.meta_path:
            sys.meta_path.insert(0, _finder)

    def cancel() -> None:
        with _lock:
            hooks = _waiting.get(name)
            if hooks is not None and hook in hooks:
                hooks.remove(hook)
                if not hooks:
                    del _waiting[name]
            _retire_if_idle()

    return cancel


def _nothing() -> None:
    return None


def _retire_if_idle() -> None:
    if not _waiting and _finder in sys.meta_path:
        sys.meta_path.remove(_finder)


def _fire(module: ModuleType) -> None:
    with _lock:
        hooks = _waiting.pop(module.__name__, [])
        _retire_if_idle()
    for hook in hooks:
        try:
            hook(module)
        except Exception:
            logger.exception("openprogram: the hook run after importing %s failed", module.__name__)


class _Finder(importlib.abc.MetaPathFinder):
    """Finds nothing itself: for a waited-for module it asks the other finders and follows the load."""

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname not in _waiting:
            return None
        busy: set[str] = _finding.__dict__.setdefault("names", set())
        if fullname in busy:
            return None
        busy.add(fullname)
        try:
            for finder in list(sys.meta_path):
                if finder is self:
                    continue
                find = getattr(finder, "find_spec", None)
                spec: importlib.machinery.ModuleSpec | None = find(fullname, path, target) if find is not None else None
                if spec is not None:
                    break
            else:
                return None
        finally:
            busy.discard(fullname)
        if spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec  # a namespace package: nothing runs, nothing to follow
        spec.loader = _FollowingLoader(spec.loader)
        return spec


class _FollowingLoader(importlib.abc.Loader):
    """Runs the real loader, gives the module its real loader back, then fires the module's hooks."""

    def __init__(self, loader: Any) -> None:
        self.loader = loader

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        module: ModuleType | None = self.loader.create_module(spec)
        return module

    def exec_module(self, module: ModuleType) -> None:
        module.__loader__ = self.loader
        if module.__spec__ is not None:
            module.__spec__.loader = self.loader
        self.loader.exec_module(module)
        _fire(module)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.loader, name)


_finder = _Finder()

"""The base of every framework adapter: a table of targets it patches and restores.

An adapter is one :class:`Integration` subclass. It names its framework
(``identifier``, ``distribution``, ``extra``, the ``trigger`` module whose import
enables it) and returns its :class:`Target` table from :meth:`Integration.targets`:
rows of (owner, attribute, wrap); a row with ``overrides=True`` also wraps the attribute
on every subclass of the owner that defines its own (:mod:`.overrides`). The base checks the installed version against
the floor declared once, in openprogram's extras metadata; waits for the trigger
module to be imported; applies each row when its owner's module is imported;
and restores exactly what it replaced. Applying twice wraps once.
"""

from __future__ import annotations

import dataclasses
import importlib
import importlib.metadata
import logging
import re
import threading
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import Any, ClassVar

from .._runtime import DidNotEnable, install_hint, log_once
from .import_hooks import when_imported
from .overrides import MISSING as _MISSING
from .overrides import ORIGINAL, Overrides, hook_new_subclasses
from .overrides import function_of as _function_of
from .overrides import rewrap as _rewrap

__all__ = ["ORIGINAL", "Integration", "Target", "lowest_supported", "version_tuple"]

logger = logging.getLogger("openprogram")

Wrap = Callable[[Callable[..., Any], "Integration"], Callable[..., Any]]
"""Makes the replacement of ``original`` for ``integration``."""


@dataclasses.dataclass(frozen=True)
class Target:
    """One patch: ``owner`` is ``"module:Class"`` (a class attribute) or ``"module"`` (a module attribute).

    A target whose module is never imported, or whose attribute this version of the
    framework lacks, is skipped. ``overrides=True`` (a class owner): the attribute is also
    wrapped on every subclass that defines its own, now and when one is defined later, and
    restored on each; ``skip_owner=True`` leaves the owner's own definition alone (an abstract
    or raising base). See :mod:`openprogram._instrumentation.overrides`.
    """

    owner: str
    attribute: str
    wrap: Wrap
    overrides: bool = False
    skip_owner: bool = False


def version_tuple(text: str) -> tuple[int, ...]:
    """The release numbers of a version string: ``"1.15.0rc1"`` -> ``(1, 15, 0)``."""
    parts: list[int] = []
    for piece in text.split(".")[:3]:
        digits = re.match(r"\d+", piece)
        if digits is None:
            break
        parts.append(int(digits.group()))
        if digits.end() != len(piece):
            break  # a pre-release or local tail: the release numbers end here
    return tuple(parts)


_REQUIREMENT = re.compile(
    r"^\s*(?P<name>[A-Za-z0-9][A-Za-z0-9._-]*)\s*(?:\[[^\]]*\])?\s*(?P<specs>[^;]*);(?P<marker>.*)$"
)


def lowest_supported(distribution: str, extra: str) -> str | None:
    """The ``>=`` floor that openprogram's ``extra`` declares for ``distribution`` (None if it declares none)."""
    try:
        requirements = importlib.metadata.requires("openprogram") or []
    except importlib.metadata.PackageNotFoundError:
        return None
    wanted = re.sub(r"[-_.]+", "-", distribution).lower()
    for requirement in requirements:
        match = _REQUIREMENT.match(requirement)
        if match is None or re.sub(r"[-_.]+", "-", match["name"]).lower() != wanted:
            continue
        if not re.search(rf"extra\s*==\s*['\"]{re.escape(extra)}['\"]", match["marker"]):
            continue
        floor = re.search(r">=\s*([0-9][^,\s]*)", match["specs"])
        if floor is not None:
            return floor.group(1)
    return None


_CLASS_HOOK = "__init_subclass__"  # what every class definition calls on its bases: where later subclasses are met


@dataclasses.dataclass
class _Patch:
    owner: Any
    attribute: str
    own: Any  # what the owner's own __dict__ held, or _MISSING when the attribute was inherited


class Integration:
    """Base class of every framework adapter; see the module docstring.

    ``active`` is True between enabling and :meth:`disable`; every replacement's first
    line reads it and passes straight through when it is False.
    """

    identifier: ClassVar[str] = ""
    """The name ``instrument()`` takes (the framework's import name)."""
    framework: ClassVar[str] = ""
    """The ``framework`` of the calls it records (defaults to ``identifier``)."""
    distribution: ClassVar[str] = ""
    """The PyPI distribution whose installed version is checked."""
    extra: ClassVar[str] = ""
    """openprogram's extra that installs the framework (``pip install -e '.[<extra>]'``)."""
    trigger: ClassVar[str] = ""
    """The module whose import enables the adapter (a real module: not a namespace package)."""
    needs: ClassVar[tuple[str, ...]] = ()
    """Names of the adapters this one builds on: ``instrument()`` arms them with it (LangGraph needs LangChain's)."""

    def __init__(self) -> None:
        self.active = False
        self._lock = threading.RLock()
        self._patches: list[_Patch] = []
        self._overrides: dict[type, Overrides] = {}  # by owner class: its override rows and what they patched
        self._cancels: list[Callable[[], None]] = []
        self._armed = False

    # --- what an adapter provides ---------------------------------------------------

    def targets(self) -> Sequence[Target]:
        """The table of patches; called once the trigger module is imported."""
        return ()

    def setup(self) -> None:
        """What patching alone cannot do (a framework's own hook registry), once the trigger is imported."""

    def teardown(self) -> None:
        """Undo :meth:`setup`; the targets are restored by the base."""

    # --- what the base does -------------------------------------------------------------

    @classmethod
    def missing(cls, detail: str) -> DidNotEnable:
        """The DidNotEnable to raise, naming the install command."""
        return DidNotEnable(f"{cls.identifier}: {detail}; {install_hint(cls.extra)}")

    def check_version(self) -> None:
        """Raise :class:`DidNotEnable` unless a supported version of the framework is installed (imports nothing)."""
        try:
            installed = importlib.metadata.version(self.distribution)
        except importlib.metadata.PackageNotFoundError:
            raise self.missing(f"{self.distribution} is not installed") from None
        floor = lowest_supported(self.distribution, self.extra)
        if floor is not None and version_tuple(installed) < version_tuple(floor):
            raise self.missing(f"{self.distribution} {installed} is older than the lowest supported, {floor}")

    def arm(self) -> None:
        """Check the version, then enable now if the trigger module is imported, else when it is."""
        with self._lock:
            if self._armed:
                return
            self.check_version()
            self._armed = True
            try:
                self._cancels.append(when_imported(self.trigger, self._enable))
            except BaseException:
                self.disable()
                raise

    def disable(self) -> None:
        """Cancel pending hooks, switch the adapter off and restore every patch. Idempotent."""
        with self._lock:
            self._armed = False
            was_active, self.active = self.active, False
            while self._cancels:
                self._cancels.pop()()
            if was_active:
                try:
                    self.teardown()
                except Exception:
                    log_once(self.identifier, "teardown")
            self._restore_all()

    def _enable(self, module: ModuleType) -> None:
        with self._lock:
            if not self._armed or self.active:
                return
            try:
                for target in self.targets():
                    module_name = target.owner.partition(":")[0]
                    self._cancels.append(when_imported(module_name, self._applier(target)))
                self.setup()
            except BaseException:
                self._restore_all()
                raise
            self.active = True

    def _applier(self, target: Target) -> Callable[[ModuleType], None]:
        def apply(module: ModuleType) -> None:
            with self._lock:
                if self._armed:
                    self._apply(target, module)

        return apply

    def _apply(self, target: Target, module: ModuleType) -> None:
        _, _, class_name = target.owner.partition(":")
        try:
            owner: Any = module
            for part in filter(None, class_name.split(".")):
                owner = getattr(owner, part)
        except AttributeError:
            logger.debug("openprogram: %s: %s is not in this version; not patched", self.identifier, target.owner)
            return
        if target.overrides:
            self._apply_overrides(target, owner)
            return
        own = owner.__dict__.get(target.attribute, _MISSING)
        current = own if own is not _MISSING else _inherited(owner, target.attribute)
        if current is _MISSING:
            logger.debug(
                "openprogram: %s: %s.%s is not in this version; not patched",
                self.identifier,
                target.owner,
                target.attribute,
            )
            return
        if hasattr(_function_of(current), ORIGINAL):
            return  # ours already
        try:
            replacement = _rewrap(current, lambda fn: target.wrap(fn, self))
            if _function_of(replacement) is _function_of(current):
                return  # the wrap leaves this definition alone
            setattr(_function_of(replacement), ORIGINAL, _function_of(current))
            setattr(owner, target.attribute, replacement)
        except Exception:
            log_once(self.identifier, f"patching {target.owner}.{target.attribute}")
            return
        self._patches.append(_Patch(owner, target.attribute, own))

    def _apply_overrides(self, target: Target, owner: Any) -> None:
        if not isinstance(owner, type):
            log_once(self.identifier, f"patching {target.owner}: overrides of a module attribute")
            return
        overrides = self._overrides.get(owner)
        if overrides is None:
            overrides = self._overrides[owner] = Overrides(owner, lambda what: log_once(self.identifier, what))
            self._hook_new_subclasses(overrides)
        overrides.add(target.attribute, lambda fn: target.wrap(fn, self), target.skip_owner)

    def _hook_new_subclasses(self, overrides: Overrides) -> None:
        """Set the owner's ``__init_subclass__`` so that a subclass defined later gets the rows too."""
        owner = overrides.owner
        own = owner.__dict__.get(_CLASS_HOOK, _MISSING)
        current = own if own is not _MISSING else _inherited(owner, _CLASS_HOOK)
        if hasattr(_function_of(own), ORIGINAL):
            return  # ours already: the integration that set it patches the classes defined later

        def patch_new_class(cls: type) -> None:
            if self._armed:
                try:
                    overrides.patch(cls)
                except Exception:
                    log_once(self.identifier, f"patching {cls.__qualname__}")

        try:
            hook = hook_new_subclasses(owner, patch_new_class)
            setattr(_function_of(hook), ORIGINAL, _function_of(current))
            setattr(owner, _CLASS_HOOK, hook)
        except Exception:
            log_once(self.identifier, f"hooking the subclasses of {owner.__qualname__}")
            return
        self._patches.append(_Patch(owner, _CLASS_HOOK, own))

    def _restore_all(self) -> None:
        while self._overrides:
            self._overrides.popitem()[1].restore()
        while self._patches:
            self._restore(self._patches.pop())

    def _restore(self, patch: _Patch) -> None:
        try:
            if patch.own is _MISSING:
                delattr(patch.owner, patch.attribute)
            else:
                setattr(patch.owner, patch.attribute, patch.own)
        except Exception:
            log_once(self.identifier, f"restoring {patch.attribute}")


def _inherited(owner: Any, attribute: str) -> Any:
    for klass in getattr(owner, "__mro__", ())[1:]:
        if attribute in klass.__dict__:
            return klass.__dict__[attribute]
    return _MISSING

"""A method patched where a class defines it and where each of its subclasses defines its own.

For a framework base class whose subclasses each override a method (every model client its
own request method): patching the base alone misses them. :class:`Overrides` holds the
``overrides=True`` rows of one integration on one owner class, wraps each row's attribute
on the owner and on every subclass that defines its own (those existing now, found through
``__subclasses__()``, and those defined later, through the owner's ``__init_subclass__``),
once each, and puts back what each class held.

Which definition of a class ``cls`` is wrapped, by where ``cls`` finds the attribute first:

- ``cls`` itself: wrapped there (the owner's own is left alone with ``skip_owner``: an
  abstract or raising base definition);
- the owner or a class between ``cls`` and the owner: wrapped there, not again on ``cls``;
- a mixin outside the owner's hierarchy: its function is wrapped on ``cls`` itself (the
  mixin may serve classes of other hierarchies), and removed from ``cls`` on restore.

An abstract definition is never what runs: it is left alone. A wrap may return the original
itself to leave a definition it does not handle alone.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable, Iterator
from typing import Any

__all__ = ["MISSING", "ORIGINAL", "Overrides", "function_of", "hook_new_subclasses", "rewrap"]

ORIGINAL = "__openprogram_original__"
"""Set on every replacement the kit installs: the callable it replaced (and the mark that it is ours)."""

MISSING: Any = object()
"""What a class's own ``__dict__`` held of an attribute it inherited: nothing."""

Wrapper = Callable[[Callable[..., Any]], Callable[..., Any]]


class Overrides:
    """The override rows on one owner class, and what they replaced on each class of its hierarchy."""

    def __init__(self, owner: type, on_error: Callable[[str], None]) -> None:
        self.owner = owner
        self.on_error = on_error  # logs one of our errors, naming what failed
        self.active = True  # False once restored: a class defined meanwhile is left alone
        self._rows: list[tuple[str, Wrapper, bool]] = []  # (attribute, wrapper, skip_owner)
        self._lock = threading.RLock()
        # Weak: a class built at run time (and its replaced methods) is not kept alive by us.
        self._patched: weakref.WeakKeyDictionary[type, dict[str, tuple[Any, Any]]] = weakref.WeakKeyDictionary()

    def add(self, attribute: str, wrapper: Wrapper, skip_owner: bool) -> None:
        """Wrap ``attribute`` across the hierarchy as it stands; classes defined later get it from :meth:`patch`."""
        with self._lock:
            self._rows.append((attribute, wrapper, skip_owner))
            for cls in self._hierarchy():
                self._patch_one(cls, attribute, wrapper, skip_owner)

    def patch(self, cls: type) -> None:
        """Apply every row to ``cls``, a subclass of the owner just defined."""
        with self._lock:
            if self.active:
                for attribute, wrapper, skip_owner in self._rows:
                    self._patch_one(cls, attribute, wrapper, skip_owner)

    def restore(self) -> None:
        """Put back what every class held; a replacement someone else has replaced since stays theirs."""
        with self._lock:
            self.active = False
            patched = list(self._patched.items())
            self._patched.clear()
        for cls, attributes in patched:
            for attribute, (own, replacement) in attributes.items():
                if cls.__dict__.get(attribute) is not replacement:
                    continue
                try:
                    if own is MISSING:
                        delattr(cls, attribute)
                    else:
                        setattr(cls, attribute, own)
                except Exception:
                    self.on_error(f"restoring {cls.__qualname__}.{attribute}")

    def _hierarchy(self) -> Iterator[type]:
        """The owner and every subclass, each once, a class before its subclasses."""
        seen: set[type] = set()
        todo = [self.owner]
        while todo:
            cls = todo.pop()
            if cls in seen:
                continue
            seen.add(cls)
            yield cls
            todo.extend(type.__subclasses__(cls))

    def _patch_one(self, cls: type, attribute: str, wrapper: Wrapper, skip_owner: bool) -> None:
        definer = next((klass for klass in cls.__mro__ if attribute in klass.__dict__), None)
        if definer is None:
            return
        if cls is self.owner:
            if skip_owner:
                return
        elif definer is not cls and (definer in self.owner.__mro__ or issubclass(definer, self.owner)):
            return  # wrapped where it is defined (or, the owner's, left alone)
        current = definer.__dict__[attribute]
        function = function_of(current)
        if not callable(function) or hasattr(function, ORIGINAL) or getattr(function, "__isabstractmethod__", False):
            return  # not a method, ours already, or never what runs
        try:
            replacement = rewrap(current, wrapper)
            if function_of(replacement) is function:
                return  # the wrap leaves this definition alone
            setattr(function_of(replacement), ORIGINAL, function)
            own = cls.__dict__.get(attribute, MISSING)
            setattr(cls, attribute, replacement)
        except Exception:
            self.on_error(f"patching {cls.__qualname__}.{attribute}")
            return
        self._patched.setdefault(cls, {})[attribute] = (own, replacement)


def hook_new_subclasses(owner: type, on_new_class: Callable[[type], None]) -> Any:
    """The ``__init_subclass__`` to set on ``owner``: the one it had, then ``on_new_class`` for the class defined.

    Hooked at class creation, which every class runs (pydantic's too, after its framework's own
    ``__init_subclass__``): a cost per class defined and none per call; patching at first call would
    cost a check on every call and needs a base method that every call passes through.
    """
    own = owner.__dict__.get("__init_subclass__")

    def __init_subclass__(cls: type, /, **kwargs: Any) -> None:
        if own is None:
            super(owner, cls).__init_subclass__(**kwargs)  # type: ignore[arg-type]  # mypy: owner is a type
        else:
            function_of(own)(cls, **kwargs)
        on_new_class(cls)

    __init_subclass__.__qualname__ = f"{owner.__qualname__}.__init_subclass__"
    # A classmethod, as Python makes every __init_subclass__ defined in a class body.
    return classmethod(__init_subclass__)


def function_of(value: Any) -> Any:
    """The function inside a static or class method, else ``value``."""
    return value.__func__ if isinstance(value, (staticmethod, classmethod)) else value


def rewrap(current: Any, wrap: Wrapper) -> Any:
    """Wrap the function inside a static or class method, keeping the descriptor."""
    if isinstance(current, staticmethod):
        return staticmethod(wrap(current.__func__))
    if isinstance(current, classmethod):
        return classmethod(wrap(current.__func__))
    return wrap(current)

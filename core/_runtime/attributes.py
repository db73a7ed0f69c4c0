"""``attribute(obj, name)``: ``getattr(obj, name, None)`` without the exception a pydantic model raises inside.

A pydantic model answers a name it has no field for from its ``__getattr__``, which raises
AttributeError for ``getattr`` to catch: many times the cost of reading a field. Adapters
read such names on every message of every request (a LangChain ``HumanMessage`` has no
``tool_calls``, an ``AIMessage`` no ``tool_call_id``). Where the class defines nothing by that
name and its ``__getattr__`` is pydantic's own (or it has none), the instance's ``__dict__`` and
pydantic's extra fields are all ``getattr`` could find, and they are read directly; anything
else (properties, slots, other ``__getattr__``, private ``_names``) goes through ``getattr``.
"""

from __future__ import annotations

from typing import Any

__all__ = ["attribute"]

_MAX_LEARNED = 4096
# (class, name) -> True where the instance's own storage is the whole answer (learned once a pair).
_instance_only: dict[tuple[type, str], bool] = {}


def attribute(obj: Any, name: str, default: Any = None) -> Any:
    """What ``getattr(obj, name, default)`` returns, without raising inside a pydantic model."""
    kind = type(obj)
    direct = _instance_only.get((kind, name))
    if direct is None:
        direct = _learn(kind, name)
    if not direct:
        return getattr(obj, name, default)
    own = getattr(obj, "__dict__", None)
    if own is not None and name in own:
        return own[name]
    extra = getattr(obj, "__pydantic_extra__", None)
    return extra.get(name, default) if extra else default


def _learn(kind: type, name: str) -> bool:
    direct = not name.startswith("_") and not any(name in klass.__dict__ for klass in kind.__mro__)
    if direct:
        answering = next((klass for klass in kind.__mro__ if "__getattr__" in klass.__dict__), None)
        # pydantic's BaseModel defines its __getattr__ beside the slot of its extra fields.
        direct = answering is None or "__pydantic_extra__" in answering.__dict__
    if len(_instance_only) >= _MAX_LEARNED:
        _instance_only.clear()
    _instance_only[kind, name] = direct
    return direct

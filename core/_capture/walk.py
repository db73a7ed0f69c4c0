"""The careful walk: any value to bounded, redacted, JSON-safe data under given limits, never raising."""

from __future__ import annotations

import dataclasses
import math
import operator
from collections.abc import Mapping
from typing import Any, Final

from .redaction import REDACTED, is_secret_key, redact_bounded, redact_repr
from .settings import Limits

__all__ = [
    "NOTHING",
    "Budget",
    "big_int",
    "clip",
    "convert_object",
    "describe",
    "model_fields",
    "safe_str",
    "sorted_safely",
    "walk_value",
]


class Budget:
    __slots__ = ("left",)

    def __init__(self, left: int) -> None:
        self.left = left


def describe(value: object, lim: Limits) -> str:
    try:
        text = repr(value)
    except Exception:  # a user's __repr__ may raise anything
        return f"<{type(value).__qualname__} object (repr failed)>"
    if not isinstance(text, str):
        return f"<{type(value).__qualname__} object>"
    # Redacted before it is clipped (a secret across the cut is still found), but only a
    # bounded head of it: what lies past 4x the limit is cut anyway.
    limit = lim.max_string
    if len(text) <= 4 * limit:
        return clip(redact_repr(text), limit)
    redacted = redact_repr(text[: 4 * limit])
    # A secret cut in two at 4x the limit may be missed: the last limit's worth of the head is
    # never shown (redacting earlier fields can shrink the head and pull it into view).
    return f"{redacted[: min(limit, len(redacted) - limit)]}...[{len(text) - limit} more chars]"


def clip(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return f"{text[:limit]}...[{len(text) - limit} more chars]"


def walk_value(value: object, lim: Limits, budget: Budget, depth: int, seen: set[int]) -> Any:
    if budget.left <= 0:
        return "...[truncated]"
    kind = type(value)
    if kind is str:
        text = redact_bounded(value, min(lim.max_string, max(budget.left, 16)))  # type: ignore[arg-type]
        budget.left -= len(text) + 2
        return text
    if kind is bool or value is None:
        budget.left -= 5
        return value
    if kind is int:
        budget.left -= 20
        if -(2**63) <= value < 2**63:  # type: ignore[operator]
            return value
        return big_int(value)  # type: ignore[arg-type]
    if kind is float:
        budget.left -= 24
        return value if math.isfinite(value) else str(value)  # type: ignore[arg-type]
    if isinstance(value, (bytes, bytearray, memoryview)):
        budget.left -= 32
        return f"<{kind.__name__} len={len(value)}>"
    if depth >= lim.max_depth:
        budget.left -= 40
        return f"<{kind.__qualname__} nested too deep>"
    ident = id(value)
    if ident in seen:
        budget.left -= 12
        return "<recursive>"
    if isinstance(value, Mapping):
        seen.add(ident)
        try:
            return _walk_mapping(value, lim, budget, depth, seen)
        finally:
            seen.discard(ident)
    if isinstance(value, (list, tuple, set, frozenset)):
        seen.add(ident)
        try:
            out: list[Any] = []
            items = value if isinstance(value, (list, tuple)) else sorted_safely(value)
            hidden = _named_secrets(items) if isinstance(value, (list, tuple)) else ()
            for n, item in enumerate(items):
                if n >= lim.max_items or budget.left <= 0:
                    out.append(f"...[{len(value) - n} more items]")
                    break
                if n in hidden:
                    budget.left -= 12
                    out.append(REDACTED)
                else:
                    out.append(walk_value(item, lim, budget, depth + 1, seen))
            budget.left -= 2
            return out
        finally:
            seen.discard(ident)
    if isinstance(value, BaseException):  # an exception returned as a value: its message is text like any
        return redact_bounded(f"{type(value).__qualname__}: {safe_str(value)}", lim.max_string)
    converted = convert_object(value)
    if converted is not NOTHING:
        seen.add(ident)
        try:
            return walk_value(converted, lim, budget, depth + 1, seen)
        finally:
            seen.discard(ident)
    text = describe(value, lim)
    budget.left -= len(text) + 2
    return text


def big_int(value: int) -> str:
    # str() of an int past 4300 digits raises ValueError (Python >= 3.11), which would lose the whole capture.
    try:
        return clip(str(value), 64)
    except ValueError:
        return f"<int of {value.bit_length()} bits>"


def _walk_mapping(value: Mapping[Any, Any], lim: Limits, budget: Budget, depth: int, seen: set[int]) -> Any:
    out: dict[str, Any] = {}
    try:
        items = list(value.items())
    except Exception:
        return describe(value, lim)
    for n, (key, item) in enumerate(items):
        if n >= lim.max_items or budget.left <= 0:
            out["..."] = f"[{len(items) - n} more keys]"
            break
        name = redact_bounded(key, 256) if type(key) is str else clip(describe(key, lim), 256)
        budget.left -= len(name) + 4
        out[name] = REDACTED if is_secret_key(name) else walk_value(item, lim, budget, depth + 1, seen)
    return out


def _named_secrets(items: list[Any] | tuple[Any, ...]) -> set[int] | tuple[()]:
    """Positions of the values a sequence names as secret: ``("Authorization", value)`` pairs (a
    header list's items) and argv's ``["--password", value]``."""
    if len(items) == 2 and type(items[0]) is str and is_secret_key(items[0]):
        return {1}
    hidden = set()
    for n, item in enumerate(items[:-1]):
        if type(item) is str and item.startswith("-") and "=" not in item and is_secret_key(item.lstrip("-")):
            hidden.add(n + 1)
    return hidden or ()


NOTHING: Final = object()


# pydantic model class -> (its dumped field names, an itemgetter of them when there are several)
model_fields: dict[type, tuple[tuple[str, ...], Any]] = {}


def convert_object(value: object) -> Any:
    """Plain data for dataclasses and pydantic models, else ``NOTHING``."""
    try:
        kind = type(value)
        if hasattr(kind, "__pydantic_fields__"):
            # A pydantic v2 model's field values are in __dict__, far cheaper to read than model_dump():
            # nested models are converted as reached; fields excluded from dumps (clients, keys) stay out.
            fields = model_fields.get(kind)
            if fields is None:
                names = tuple(
                    name for name, info in kind.__pydantic_fields__.items() if not getattr(info, "exclude", False)
                )
                fields = model_fields[kind] = (names, operator.itemgetter(*names) if len(names) > 1 else None)
            names, getter = fields
            state = value.__dict__
            if getter is not None:
                try:
                    return dict(zip(names, getter(state), strict=True))  # in C
                except KeyError:  # a field without a value (model_construct): take those there are
                    pass
            return {name: state[name] for name in names if name in state}
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            return {f.name: getattr(value, f.name, None) for f in dataclasses.fields(value)}
        dump = getattr(kind, "model_dump", None)
        if dump is not None and hasattr(kind, "model_fields"):
            return dump(value)
    except Exception:
        return NOTHING
    return NOTHING


def sorted_safely(items: Any) -> list[Any]:
    try:
        return sorted(items)
    except Exception:
        return list(items)


def safe_str(value: object) -> str:
    try:
        return str(value)
    except Exception:
        return "<str() failed>"

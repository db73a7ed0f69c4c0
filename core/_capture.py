"""Bounded, JSON-safe, secret-redacted captures of arguments and results.

Every value recorded by openprogram goes through :func:`capture` before it
reaches a store. The guarantee: the result is plain JSON data (``dict``,
``list``, ``str``, ``int``, ``float``, ``bool``, ``None``), at most
:data:`Limits.max_chars` characters once encoded, and no value stored under a
secret-looking key (``password``, ``api_key``, ``token``, ...) survives. It
never raises: recursive structures, objects whose ``repr`` fails and other
oddities become short descriptive strings.
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
from collections.abc import Mapping
from typing import Any, Final

__all__ = [
    "ATOMIC_TYPES",
    "PRECAPTURED",
    "Limits",
    "REDACTED",
    "capture",
    "capture_arguments",
    "dumps",
    "is_secret_key",
    "limits",
    "set_limits",
]

REDACTED: Final = "[redacted]"


@dataclasses.dataclass(frozen=True)
class Limits:
    """Size bounds for one captured value (inputs, output or error of one call).

    The defaults keep a call's record well under 100 KB: ``max_chars`` bounds the
    encoded JSON of each of ``inputs``/``output`` at 32 KiB.
    """

    max_chars: int = 32 * 1024
    max_string: int = 4096
    max_items: int = 100
    max_depth: int = 8


_limits = Limits()


def limits() -> Limits:
    """The capture limits in force."""
    return _limits


def set_limits(new: Limits) -> None:
    """Replace the capture limits (process-wide)."""
    global _limits
    _limits = new


# Types whose values cannot change after the call, so the hot path may keep a
# reference and let the background writer encode them later.
ATOMIC_TYPES: Final = frozenset({str, int, float, bool, type(None), bytes})

#: Put in a record's ``names`` slot when its ``args`` slot already holds captured inputs.
PRECAPTURED: Final[tuple[str, ...]] = ("<precaptured>",)

_SECRET_WORDS: Final = frozenset(
    {
        "password", "passwd", "pwd", "passphrase", "secret", "secrets", "token",
        "apikey", "authorization", "auth", "credential", "credentials", "cookie",
        "cookies", "privatekey", "signature", "sessionkey", "accesskey", "clientsecret",
    }
)
_SECRET_COMPOUNDS: Final = ("api_key", "apikey", "access_key", "private_key", "secret_key", "client_secret")
_WORD_SPLIT: Final = re.compile(r"[^a-z0-9]+")
_CAMEL: Final = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
# Values that are secrets whatever their key: bearer headers and well-known key prefixes.
_SECRET_VALUE: Final = re.compile(
    r"^(?:Bearer\s+\S{8,}|Basic\s+[A-Za-z0-9+/=]{8,}|sk-[A-Za-z0-9_-]{16,}|gh[pousr]_[A-Za-z0-9]{20,}"
    r"|xox[abpr]-[A-Za-z0-9-]{10,}|AKIA[0-9A-Z]{16}|AIza[0-9A-Za-z_-]{30,})"
)
_key_cache: dict[str, bool] = {}


def is_secret_key(key: str) -> bool:
    """True if a mapping key names something that must not be recorded."""
    hit = _key_cache.get(key)
    if hit is None:
        lowered = _CAMEL.sub("_", key).lower()
        parts = _WORD_SPLIT.split(lowered)
        words = set(parts)
        # Compounds are matched with any separator: "x-api-key" and "Api Key" as "api_key".
        joined = "_".join(p for p in parts if p)
        hit = bool(words & _SECRET_WORDS) or any(c in joined for c in _SECRET_COMPOUNDS)
        if len(_key_cache) < 10_000:
            _key_cache[key] = hit
    return hit


class _Budget:
    __slots__ = ("left",)

    def __init__(self, left: int) -> None:
        self.left = left


def _describe(value: object, lim: Limits) -> str:
    try:
        text = repr(value)
    except Exception:  # a user's __repr__ may raise anything
        return f"<{type(value).__qualname__} object (repr failed)>"
    if not isinstance(text, str):
        return f"<{type(value).__qualname__} object>"
    return _clip(text, lim.max_string)


def _clip(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return f"{text[:limit]}...[{len(text) - limit} more chars]"


def _walk(value: object, lim: Limits, budget: _Budget, depth: int, seen: set[int]) -> Any:
    if budget.left <= 0:
        return "...[truncated]"
    kind = type(value)
    if kind is str:
        text: str = value  # type: ignore[assignment]
        if len(text) > 7 and _SECRET_VALUE.match(text):
            budget.left -= 10
            return REDACTED
        text = _clip(text, min(lim.max_string, max(budget.left, 16)))
        budget.left -= len(text) + 2
        return text
    if kind is bool or value is None:
        budget.left -= 5
        return value
    if kind is int:
        budget.left -= 20
        if -(2**63) <= value < 2**63:  # type: ignore[operator]
            return value
        return _big_int(value)  # type: ignore[arg-type]
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
            items = value if isinstance(value, (list, tuple)) else _sorted_safely(value)
            for n, item in enumerate(items):
                if n >= lim.max_items or budget.left <= 0:
                    out.append(f"...[{len(value) - n} more items]")
                    break
                out.append(_walk(item, lim, budget, depth + 1, seen))
            budget.left -= 2
            return out
        finally:
            seen.discard(ident)
    if isinstance(value, BaseException):
        return _clip(f"{type(value).__qualname__}: {_safe_str(value)}", lim.max_string)
    converted = _convert_object(value)
    if converted is not _NOTHING:
        seen.add(ident)
        try:
            return _walk(converted, lim, budget, depth + 1, seen)
        finally:
            seen.discard(ident)
    text = _describe(value, lim)
    budget.left -= len(text) + 2
    return text


def _big_int(value: int) -> str:
    # str() of an int past 4300 digits raises ValueError (Python >= 3.11), which would lose the whole capture.
    try:
        return _clip(str(value), 64)
    except ValueError:
        return f"<int of {value.bit_length()} bits>"


def _walk_mapping(value: Mapping[Any, Any], lim: Limits, budget: _Budget, depth: int, seen: set[int]) -> Any:
    out: dict[str, Any] = {}
    try:
        items = list(value.items())
    except Exception:
        return _describe(value, lim)
    for n, (key, item) in enumerate(items):
        if n >= lim.max_items or budget.left <= 0:
            out["..."] = f"[{len(items) - n} more keys]"
            break
        name = key if type(key) is str else _describe(key, lim)
        name = _clip(name, 256)
        budget.left -= len(name) + 4
        out[name] = REDACTED if is_secret_key(name) else _walk(item, lim, budget, depth + 1, seen)
    return out


_NOTHING: Final = object()


def _convert_object(value: object) -> Any:
    """Plain data for dataclasses and pydantic models, else ``_NOTHING``."""
    try:
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            return {f.name: getattr(value, f.name, None) for f in dataclasses.fields(value)}
        dump = getattr(type(value), "model_dump", None)
        if dump is not None and hasattr(type(value), "model_fields"):
            return dump(value)
    except Exception:
        return _NOTHING
    return _NOTHING


def _sorted_safely(items: Any) -> list[Any]:
    try:
        return sorted(items)
    except Exception:
        return list(items)


def _safe_str(value: object) -> str:
    try:
        return str(value)
    except Exception:
        return "<str() failed>"


def capture(value: object) -> Any:
    """Return a bounded, JSON-safe, redacted copy of ``value``. Never raises."""
    lim = _limits
    try:
        return _walk(value, lim, _Budget(lim.max_chars), 0, set())
    except RecursionError:
        return "<too deeply nested>"
    except Exception as exc:  # instrumentation must never break the caller
        return f"<capture failed: {type(exc).__name__}>"


def capture_arguments(names: tuple[str, ...], args: tuple[Any, ...], kwargs: Mapping[str, Any] | None) -> Any:
    """Capture a call's arguments as one mapping of parameter name to value.

    Positional arguments are named after the parameters they bind to, so a
    password passed positionally is redacted like a keyword one.
    """
    bound: dict[str, Any] = {}
    n = len(names)
    for i, arg in enumerate(args):
        bound[names[i] if i < n else f"*args[{i - n}]"] = arg
    if kwargs:
        bound.update(kwargs)
    return capture(bound)


def dumps(value: Any) -> str:
    """Encode an already captured value; the size bound is enforced here as a last resort."""
    try:
        # ASCII output: lone surrogates and other odd unicode survive any store encoding.
        text = json.dumps(value, separators=(",", ":"), allow_nan=False)
    except Exception as exc:
        text = json.dumps(f"<not encodable: {type(exc).__name__}>")
    limit = _limits.max_chars * 2
    if len(text) > limit:
        text = json.dumps({"truncated": True, "preview": text[: _limits.max_chars]})
    return text

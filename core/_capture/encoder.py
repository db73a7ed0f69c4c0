"""The limits in force and every entry point that reads them.

:func:`capture` (the careful walk under them), :func:`capture_json` (the C encoder's text
when it is short enough and the pre-check finds nothing to redact), the direct encoders of
arguments, mappings and scalars, and :func:`dumps`. The limits live beside all their readers so
that :func:`set_limits` rebinds the one global each reads: a copy imported elsewhere would go
stale, and an accessor call would cost the hot path.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any, Final

from . import scalars, walk
from .credentials import may_hold_credential
from .precheck import needs_care
from .redaction import is_secret_key
from .scalars import ATOMIC_TYPES, BIG, REDACTED_JSON, Shape, encode_string, scalar_json_within, shape_of
from .settings import Limits
from .walk import NOTHING, Budget, convert_object, describe, safe_str, sorted_safely, walk_value

__all__ = [
    "PRECAPTURED",
    "arguments_json",
    "bind_arguments",
    "capture",
    "capture_arguments",
    "capture_json",
    "dumps",
    "fast_encode",
    "limits",
    "mapping_json",
    "scalar_json",
    "set_limits",
]

# Two caches shared with their modules, bound by assignment, not imported: CPython compiles
# a method call on an imported name (shapes.get) to make a bound method at each call.
model_fields: Final = walk.model_fields
shapes: Final = scalars.shapes

_limits = Limits()


def limits() -> Limits:
    """The capture limits in force."""
    return _limits


def set_limits(new: Limits) -> None:
    """Replace the capture limits (process-wide)."""
    global _limits
    _limits = new


#: Put in a record's ``names`` slot when its ``args`` slot already holds captured inputs.
PRECAPTURED: Final[tuple[str, ...]] = ("<precaptured>",)


def capture(value: object) -> Any:
    """Return a bounded, JSON-safe, redacted copy of ``value``. Never raises."""
    lim = _limits
    try:
        return walk_value(value, lim, Budget(lim.max_chars), 0, set())
    except RecursionError:
        return "<too deeply nested>"
    except Exception as exc:  # instrumentation must never break the caller
        return f"<capture failed: {type(exc).__name__}>"


def _fast_default(value: Any) -> Any:
    fields = model_fields.get(type(value))
    if fields is not None and fields[1] is not None:  # a pydantic model seen before: the common case
        try:
            state = value.__dict__
            if tuple(state) == fields[0]:
                return state  # holds its fields and nothing else, in order: the encoder only reads it
            return dict(zip(fields[0], fields[1](state), strict=True))
        except (KeyError, AttributeError):
            pass
    if isinstance(value, (set, frozenset)):
        return sorted_safely(value)
    if isinstance(value, Mapping):
        return dict(value)
    if isinstance(value, (bytes, bytearray, memoryview)):
        return f"<{type(value).__name__} len={len(value)}>"
    if isinstance(value, BaseException):
        return f"{type(value).__qualname__}: {safe_str(value)}"
    converted = convert_object(value)
    if converted is not NOTHING:
        return converted
    return describe(value, _limits)


def _make_fast_encode() -> Any:
    # Made once: JSONEncoder.encode() builds one per call, dearer than encoding a small value.
    # No cycle markers: a cycle ends in the C encoder's RecursionError, and the careful walk takes over.
    make = getattr(json.encoder, "c_make_encoder", None)
    if make is None:  # no C accelerator (e.g. PyPy)
        return json.JSONEncoder(separators=(",", ":"), allow_nan=False, default=_fast_default).encode
    chunks = make(None, _fast_default, json.encoder.encode_basestring_ascii, None, ":", ",", False, False, False)
    join = "".join

    def encode(value: Any) -> str:
        return join(chunks(value, 0))

    return encode


fast_encode: Callable[[Any], str] = _make_fast_encode()


def capture_json(value: object) -> str:
    """``dumps(capture(value))``, computed in C when nothing needs cutting or redacting. Never raises.

    The JSON encoder does the walk; when its text is within ``max_chars`` and
    holds nothing that might need redacting, that text is the capture. Otherwise
    (too big, cyclic, odd keys, NaN, anything secret-looking) the careful walk runs.
    """
    text: str | None
    try:
        text = fast_encode(value)
    except Exception:  # cycles, non-string keys, NaN, depth, a failing model_dump: take the careful path
        text = None
    if text is None or len(text) > _limits.max_chars or needs_care(text):
        text = dumps(capture(value))
    return text


def capture_arguments(names: tuple[str, ...], args: tuple[Any, ...], kwargs: Mapping[str, Any] | None) -> Any:
    """Capture a call's arguments as one mapping of parameter name to value.

    Positional arguments are named after the parameters they bind to, so a
    password passed positionally is redacted like a keyword one.
    """
    return capture(bind_arguments(names, args, kwargs))


def bind_arguments(names: tuple[str, ...], args: tuple[Any, ...], kwargs: Mapping[str, Any] | None) -> dict[str, Any]:
    """A call's arguments as one dict of parameter name to value (extra positionals as ``*args[i]``)."""
    bound: dict[str, Any] = {}
    n = len(names)
    for i, arg in enumerate(args):
        bound[names[i] if i < n else f"*args[{i - n}]"] = arg
    if kwargs:
        bound.update(kwargs)
    return bound


def arguments_json(names: tuple[str, ...] | Shape, args: tuple[Any, ...], kwargs: Mapping[str, Any] | None) -> str:
    """JSON text of ``capture_arguments(...)`` for arguments of :data:`ATOMIC_TYPES` only, built directly.

    The background writer's fast path: same result as ``dumps(capture_arguments(...))``
    for the common case of a few small scalars, at a fraction of the cost. ``names``
    may be the parameter names or their :func:`parameter_shape` (cheaper: no lookup).
    """
    # (type() rather than isinstance(): cheaper, and Shape is the only tuple subclass passed here)
    shape = names if type(names) is Shape else (shapes.get(names) or shape_of(names))  # type: ignore[arg-type]
    templates = shape.templates
    # len(templates) is len(names) + 1: a template per count of positional arguments.
    if templates is not None and not kwargs and len(args) < len(templates):
        # No secret-looking name: one %-format of the encoded values. (Written out flat:
        # this runs once per recorded call on the writer's thread.)
        max_string = _limits.max_string
        values = []
        for arg in args:
            kind = type(arg)
            if kind is str:
                if len(arg) > max_string or may_hold_credential(arg):
                    break
                values.append(encode_string(arg))
            elif kind is int and -BIG < arg < BIG:
                values.append(int.__repr__(arg))
            elif arg is None:
                values.append("null")
            elif kind is bool:
                values.append("true" if arg else "false")
            else:
                break
        else:
            text = templates[len(args)] % tuple(values)
            if len(text) <= _limits.max_chars * 2:
                return text
    lim = _limits
    names = shape.names
    if kwargs or len(args) > len(names):
        return _arguments_json_general(names, args, kwargs, lim)
    max_string = lim.max_string
    parts = []
    for key, hidden, arg in zip(shape.keys, shape.secret, args, strict=False):  # names may outnumber args
        kind = type(arg)
        if hidden:
            parts.append(key + REDACTED_JSON)
        elif kind is str and len(arg) <= max_string and not may_hold_credential(arg):
            parts.append(key + encode_string(arg))
        elif kind is int and -BIG < arg < BIG:
            parts.append(key + int.__repr__(arg))
        else:
            parts.append(key + scalar_json_within(arg, lim))
    text = "{" + ",".join(parts) + "}"
    return text if len(text) <= lim.max_chars * 2 else dumps(capture_arguments(names, args, kwargs))


def _arguments_json_general(
    names: tuple[str, ...], args: tuple[Any, ...], kwargs: Mapping[str, Any] | None, lim: Limits
) -> str:
    if len(args) + (len(kwargs) if kwargs else 0) > lim.max_items:
        return dumps(capture_arguments(names, args, kwargs))
    parts: list[str] = []
    n = len(names)
    for i, arg in enumerate(args):
        key = names[i] if i < n else f"*args[{i - n}]"
        parts.append(encode_string(key) + ":" + (REDACTED_JSON if is_secret_key(key) else scalar_json_within(arg, lim)))
    if kwargs:
        for key, arg in kwargs.items():
            parts.append(
                encode_string(key) + ":" + (REDACTED_JSON if is_secret_key(key) else scalar_json_within(arg, lim))
            )
    text = "{" + ",".join(parts) + "}"
    return text if len(text) <= lim.max_chars * 2 else dumps(capture_arguments(names, args, kwargs))


def mapping_json(value: Mapping[str, Any]) -> str:
    """JSON text of ``capture(value)``: built directly for a small dict of scalars under str keys
    (the shape of attributes), or of such dicts one level down (a model call's ``usage``), else
    through :func:`capture_json`."""
    if type(value) is dict and 0 < len(value) <= 16:
        values = tuple(value.values())
        keys = tuple(value)
        for key in keys:
            if type(key) is not str:
                return capture_json(value)
        nested = False
        for item in values:
            kind = type(item)
            if kind not in ATOMIC_TYPES:
                if kind is not dict or not _flat_small(item):
                    return capture_json(value)
                nested = True
        if not nested:
            return arguments_json(keys, values, None)
        lim = _limits
        parts = []
        for key, item in zip(keys, values, strict=True):
            if is_secret_key(key):
                encoded = REDACTED_JSON
            elif type(item) is dict:
                encoded = arguments_json(tuple(item), tuple(item.values()), None)
            elif type(item) is str and _plain_text(item, lim.max_string):
                encoded = encode_string(item)
            else:
                encoded = scalar_json_within(item, lim)
            parts.append(encode_string(key) + ":" + encoded)
        text = "{" + ",".join(parts) + "}"
        if len(text) <= lim.max_chars * 2:
            return text
    return capture_json(value)


def _plain_text(text: str, max_string: int) -> bool:
    """Short and nothing in it that redaction looks for: encoded as it is."""
    return len(text) <= max_string and not may_hold_credential(text)


def _flat_small(value: dict[Any, Any]) -> bool:
    """A dict of at most 16 scalars under str keys."""
    if not 0 < len(value) <= 16:
        return False
    return all(type(key) is str and type(item) in ATOMIC_TYPES for key, item in value.items())


def scalar_json(value: Any) -> str:
    """JSON text of ``capture(value)`` for a value of :data:`ATOMIC_TYPES`."""
    if type(value) is str and len(value) <= _limits.max_string and not may_hold_credential(value):
        return encode_string(value)  # nothing to cut or redact: the common case, without the checks below
    return scalar_json_within(value, _limits)


_dump_compact = json.JSONEncoder(separators=(",", ":"), allow_nan=False).encode


def dumps(value: Any) -> str:
    """Encode an already captured value; the size bound is enforced here as a last resort."""
    try:
        # ASCII output: lone surrogates and other odd unicode survive any store encoding.
        text = _dump_compact(value)
    except Exception as exc:
        text = json.dumps(f"<not encodable: {type(exc).__name__}>")
    limit = _limits.max_chars * 2
    if len(text) > limit:
        preview = text[: _limits.max_chars]
        text = json.dumps({"truncated": True, "preview": preview})
        if len(text) > limit:  # quotes and backslashes in the preview doubled when encoded again
            text = json.dumps({"truncated": True, "preview": preview[: len(preview) // 2]})
    return text

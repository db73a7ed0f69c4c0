"""JSON text built without the walk: a scalar's under given limits, and a parameter list's shape, worked out once."""

from __future__ import annotations

import json
import math
from typing import Any, Final, NamedTuple

from .redaction import REDACTED, is_secret_key, redact_bounded
from .settings import Limits
from .walk import big_int

__all__ = [
    "ATOMIC_TYPES",
    "BIG",
    "REDACTED_JSON",
    "Shape",
    "encode_string",
    "json_string",
    "parameter_shape",
    "scalar_json_within",
    "shape_of",
    "shapes",
]

# Types whose values cannot change after the call, so the hot path may keep a
# reference and let the background writer encode them later.
ATOMIC_TYPES: Final = frozenset({str, int, float, bool, type(None), bytes})

encode_string = json.encoder.encode_basestring_ascii
json_string: Final = encode_string
"""A str as JSON text, ASCII-only (for adapters building attribute JSON from their framework's own ids)."""
REDACTED_JSON: Final = '"' + REDACTED + '"'


BIG: Final = 2**63


def scalar_json_within(value: Any, lim: Limits) -> str:
    kind = type(value)
    if kind is str:
        return encode_string(redact_bounded(value, lim.max_string))
    if kind is int:
        return str(value) if -BIG < value < BIG else encode_string(big_int(value))
    if kind is bool:
        return "true" if value else "false"
    if value is None:
        return "null"
    if kind is float:
        return repr(value) if math.isfinite(value) else encode_string(str(value))
    return encode_string(f"<{kind.__name__} len={len(value)}>")  # bytes


class Shape(NamedTuple):
    """What encoding a call's arguments needs to know about its parameter names, worked out once."""

    names: tuple[str, ...]
    keys: tuple[str, ...]  # '"name":' per name
    secret: tuple[bool, ...]  # whether that name is secret-looking
    templates: tuple[str, ...] | None  # per argument count, '{"a":%s,"b":%s}'; None if any name is secret


shapes: dict[tuple[str, ...], Shape] = {}


def parameter_shape(names: tuple[str, ...]) -> Shape:
    """Worked out once per function: what the writer needs to encode its scalar arguments."""
    return shape_of(names)


def shape_of(names: tuple[str, ...]) -> Shape:
    shape = shapes.get(names)
    if shape is None:
        keys = tuple(encode_string(k) + ":" for k in names)
        secret = tuple(is_secret_key(k) for k in names)
        templates = None
        if not any(secret):
            escaped = [k.replace("%", "%%") + "%s" for k in keys]
            templates = tuple("{" + ",".join(escaped[:n]) + "}" for n in range(len(keys) + 1))
        shape = Shape(names, keys, secret, templates)
        if len(shapes) < 10_000:
            shapes[names] = shape
    return shape

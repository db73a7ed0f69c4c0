"""JSON the CLI prints: valid JSON whatever a store holds.

A row another process wrote may hold an infinite or NaN time, which ``json.dumps`` would
print as ``Infinity``/``NaN`` (no JSON parser takes those): they are printed as null. Lone
surrogates and control characters are escaped by JSON itself (ASCII output).
"""

from __future__ import annotations

import json
import math
from typing import Any

__all__ = ["json_text"]


def _finite(value: Any) -> Any:
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {key: _finite(inner) for key, inner in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(inner) for inner in value]
    return value


def json_text(value: Any, indent: int | None = None) -> str:
    """``value`` as JSON text, with every number that is not finite as null."""
    try:
        try:
            return json.dumps(value, indent=indent, allow_nan=False)
        except ValueError:  # a NaN or infinity somewhere: the rare case, walked
            return json.dumps(_finite(value), indent=indent, allow_nan=False)
    except RecursionError:  # nested deeper than Python recurses: no reader wrote it, none can print it
        return json.dumps("[openprogram: nested too deep to print]")

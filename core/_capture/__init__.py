"""Bounded, JSON-safe, secret-redacted captures of arguments and results.

Every value recorded by openprogram goes through :func:`capture` before it
reaches a store. The guarantee: the result is plain JSON data (``dict``,
``list``, ``str``, ``int``, ``float``, ``bool``, ``None``), at most
:data:`Limits.max_chars` characters once encoded, and no value stored under a
secret-looking key (``password``, ``api_key``, ``token``, ...) survives. It
never raises: recursive structures, objects whose ``repr`` fails and other
oddities become short descriptive strings.

This is the package's only door. Its modules, each importing only those above it:

- ``settings``: :class:`Limits` and the content-capture switch.
- ``redaction``: what is secret (key names, credential-looking values) and how it is hidden.
- ``precheck``: whether the C encoder's text may hold anything the walk would redact.
- ``walk``: the careful walk of any value under given limits.
- ``scalars``: JSON text of scalars and the shapes of parameter lists, built without the walk.
- ``encoder``: the limits in force and the entry points: ``capture``, ``capture_json``, ``dumps``...
"""

from .encoder import (
    PRECAPTURED,
    arguments_json,
    bind_arguments,
    capture,
    capture_arguments,
    capture_json,
    dumps,
    fast_encode,
    limits,
    mapping_json,
    scalar_json,
    set_limits,
)
from .precheck import needs_care
from .redaction import REDACTED, SECRET_COMPOUNDS, SECRET_WORDS, is_secret_key, redact_error_text, redact_text
from .scalars import ATOMIC_TYPES, json_string, parameter_shape
from .settings import Limits, content_captured, set_content_capture

__all__ = [
    "ATOMIC_TYPES",
    "PRECAPTURED",
    "REDACTED",
    "Limits",
    "arguments_json",
    "bind_arguments",
    "capture",
    "capture_arguments",
    "capture_json",
    "content_captured",
    "dumps",
    "is_secret_key",
    "json_string",
    "limits",
    "mapping_json",
    "parameter_shape",
    "redact_error_text",
    "redact_text",
    "scalar_json",
    "set_content_capture",
    "set_limits",
    # for the tests of the encoder's fast path
    "SECRET_COMPOUNDS",
    "SECRET_WORDS",
    "fast_encode",
    "needs_care",
]

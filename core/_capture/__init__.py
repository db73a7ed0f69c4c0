"""Bounded, JSON-safe, secret-redacted captures of arguments and results.

Every value recorded by openprogram goes through :func:`capture` before it
reaches a store. The guarantee: the result is plain JSON data (``dict``,
``list``, ``str``, ``int``, ``float``, ``bool``, ``None``), at most
:data:`Limits.max_chars` characters once encoded, no value stored under a
secret-looking key (``password``, ``api_key``, ``token``, ...) or named by the item
before it (``("Authorization", ...)``, ``["--password", ...]``) survives, and no
credential a rule knows survives anywhere in a string. It never raises: recursive
structures, objects whose ``repr`` fails and other oddities become short descriptive strings.

This is the package's only door. Its modules, each importing only those above it:

- ``settings``: :class:`Limits` and the content-capture switch.
- ``secret_names``: which keys, fields, headers and options name a secret.
- ``credentials``: the rule set, credentials anywhere in a text, and the cheap check before it.
- ``redaction``: how secrets are hidden (texts, bounded texts, reprs).
- ``precheck``: whether the C encoder's text may hold anything the walk would redact.
- ``walk``: the careful walk of any value under given limits.
- ``scalars``: JSON text of scalars and the shapes of parameter lists, built without the walk.
- ``encoder``: the limits in force and the entry points: ``capture``, ``capture_json``, ``dumps``...
"""

from .credentials import RULES, may_hold_credential
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
from .redaction import (
    REDACTED,
    SECRET_COMPOUNDS,
    SECRET_WORDS,
    is_secret_key,
    redact_error_text,
    redact_tail,
    redact_text,
)
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
    "redact_tail",
    "redact_text",
    "scalar_json",
    "set_content_capture",
    "set_limits",
    # for the tests of the encoder's fast path and of the credential rules
    "RULES",
    "may_hold_credential",
    "SECRET_COMPOUNDS",
    "SECRET_WORDS",
    "fast_encode",
    "needs_care",
]

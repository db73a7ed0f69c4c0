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
import itertools
import json
import math
import operator
import os
import re
from collections.abc import Callable, Mapping
from typing import Any, Final, NamedTuple

__all__ = [
    "ATOMIC_TYPES",
    "PRECAPTURED",
    "Limits",
    "REDACTED",
    "capture",
    "bind_arguments",
    "capture_arguments",
    "capture_json",
    "arguments_json",
    "json_string",
    "mapping_json",
    "parameter_shape",
    "dumps",
    "scalar_json",
    "is_secret_key",
    "limits",
    "redact_error_text",
    "redact_text",
    "content_captured",
    "set_content_capture",
    "set_limits",
    "SECRET_COMPOUNDS",
    "SECRET_WORDS",
    "fast_encode",
    "needs_care",
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


ENV_CAPTURE_CONTENT: Final = "OPENPROGRAM_CAPTURE_CONTENT"
_content: bool | None = None  # configured; None: the environment decides, read at each use


def content_captured() -> bool:
    """Whether inputs, outputs and message text are written: the configured choice, else
    ``OPENPROGRAM_CAPTURE_CONTENT`` (``false``, ``0``, ``no``, ``off`` turn it off), else True."""
    if _content is not None:
        return _content
    value = os.environ.get(ENV_CAPTURE_CONTENT)
    return value is None or value.strip().lower() not in ("false", "0", "no", "off")


def set_content_capture(captured: bool | None) -> None:
    """Capture content (True), or not (False), or leave it to the environment (None)."""
    global _content
    _content = captured


# Types whose values cannot change after the call, so the hot path may keep a
# reference and let the background writer encode them later.
ATOMIC_TYPES: Final = frozenset({str, int, float, bool, type(None), bytes})

#: Put in a record's ``names`` slot when its ``args`` slot already holds captured inputs.
PRECAPTURED: Final[tuple[str, ...]] = ("<precaptured>",)

# fmt: off
SECRET_WORDS: Final = frozenset(
    {
        "password", "passwords", "passwd", "pwd", "passphrase", "secret", "secrets", "token",
        "apikey", "authorization", "auth", "credential", "credentials", "cookie",
        "cookies", "privatekey", "signature", "sessionkey", "accesskey", "clientsecret",
    }
)
# fmt: on
SECRET_COMPOUNDS: Final = ("api_key", "apikey", "access_key", "private_key", "secret_key", "client_secret")
_WORD_SPLIT: Final = re.compile(r"[^a-z0-9]+")
# camelCase and acronyms: "dbPassword", "DBPassword", "APIToken" -> db password, api token.
_CAMEL: Final = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
# Values that are secrets whatever their key: bearer headers and well-known key prefixes.
_SECRET_VALUE: Final = re.compile(
    r"^(?:Bearer\s+\S{8,}|Basic\s+[A-Za-z0-9+/=]{8,}|sk-[A-Za-z0-9_-]{16,}|gh[pousr]_[A-Za-z0-9]{20,}"
    r"|xox[abpr]-[A-Za-z0-9-]{10,}|AKIA[0-9A-Z]{16}|AIza[0-9A-Za-z_-]{30,})"
)
# The same credentials anywhere in a text (an error message quoting a key), for texts that are
# not captured values: error messages.
_SECRET_ANYWHERE: Final = re.compile(r"(?<![A-Za-z0-9_-])" + _SECRET_VALUE.pattern[1:])
# Passwords inside strings: ``scheme://user:PASSWORD@host`` and ``password=...`` (URL query or libpq DSN).
# (A scheme starts only where a run of scheme characters starts: a match tried at every
# letter of a long run would make this quadratic.)
_URL_PASSWORD: Final = re.compile(
    r"((?<![a-z0-9+.-])[a-z][a-z0-9+.-]{0,32}://[^\s:/@]{0,256}:)[^\s@]{1,256}(?=@)", re.IGNORECASE
)  # bounded parts: a scan from each "x://" of a long text must not run to its end
_PARAM_PASSWORD: Final = re.compile(r"((?:^|[\s?&;])(?:ssl)?password\s*=\s*)[^\s&;]+", re.IGNORECASE)
_key_cache: dict[str, bool] = {}


def is_secret_key(key: str) -> bool:
    """True if a mapping key names something that must not be recorded."""
    hit = _key_cache.get(key)
    if hit is None:
        lowered = _CAMEL.sub("_", key).lower()
        parts = [p for p in _WORD_SPLIT.split(lowered) if p]
        # Adjacent pairs too: "x-api-key", "private-key", "SessionKey" spell compound secret words.
        words = set(parts) | {a + b for a, b in itertools.pairwise(parts)}
        hit = bool(words & SECRET_WORDS) or any(c in lowered for c in SECRET_COMPOUNDS)
        if len(_key_cache) < 10_000:
            _key_cache[key] = hit
    return hit


def redact_error_text(text: str) -> str:
    """An error message with connection-string passwords and credential-looking values redacted."""
    return _SECRET_ANYWHERE.sub(REDACTED, redact_text(text))


def redact_text(text: str) -> str:
    """``text`` with the passwords of any connection strings in it replaced by ``[redacted]``."""
    if "@" in text or "assword" in text:
        text = _PARAM_PASSWORD.sub(rf"\g<1>{REDACTED}", _URL_PASSWORD.sub(rf"\g<1>{REDACTED}", text))
    return text


# A field name in a repr: ``name=`` (dataclasses, pydantic models, namedtuples), ``name:``
# (hand-written reprs; a ``token: str`` annotation is redacted too, the safe way to be wrong) or
# a quoted ``'key':`` (dicts). A name starts only where a word starts: the scan stays linear.
_REPR_FIELD: Final = re.compile(
    r"""(?<![A-Za-z0-9_-])(?:([A-Za-z_][A-Za-z0-9_-]*)[ \t]*[=:](?![=:/])"""
    r"""|"([^"\\\n]{1,200})"[ \t]*:|'([^'\\\n]{1,200})'[ \t]*:)\s*"""
)
_OPENING: Final = "([{<"
_CLOSING: Final = ")]}>"


def _value_end(text: str, at: int) -> int:
    """Where the value starting at ``at`` ends: at the first separator outside quotes and
    brackets, which are taken whole wherever they start (``'x'``, ``(a, b)``, ``Token(...)``, ``b'...'``)."""
    n, i, depth, quote = len(text), at, 0, ""
    while i < n:
        ch = text[i]
        if quote:
            if ch == "\\":
                i += 2
                continue
            if ch == quote:
                quote = ""
                if depth == 0:
                    return i + 1
        elif ch in "'\"":
            quote = ch
        elif ch in _OPENING:
            depth += 1
        elif ch in _CLOSING:
            if depth == 0:
                return i  # the end of the object holding the field
            depth -= 1
            if depth == 0:
                return i + 1
        elif depth == 0 and ch in " \t\r\n,;":
            return i
        i += 1
    return n


def redact_repr(text: str) -> str:
    """An object's repr with the values of secret-named fields (``api_key='...'``,
    ``'password': ...``, ``auth=(...)``, at any depth) and credential-looking values redacted."""
    pieces: list[str] = []
    done = 0
    found = _REPR_FIELD.search(text)
    while found is not None:
        if is_secret_key(found.group(1) or found.group(2) or found.group(3)):
            end = _value_end(text, found.end())
            pieces.append(text[done : found.end()])
            pieces.append(REDACTED)
            done = end
            found = _REPR_FIELD.search(text, end)
        else:  # look inside the value too: App(db=DB(password=...))
            found = _REPR_FIELD.search(text, found.end())
    pieces.append(text[done:])
    return redact_error_text("".join(pieces))


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
    # Redacted before it is clipped (a secret across the cut is still found), but only a
    # bounded head of it: what lies past 4x the limit is cut anyway.
    limit = lim.max_string
    if len(text) <= 4 * limit:
        return _clip(redact_repr(text), limit)
    redacted = redact_repr(text[: 4 * limit])
    # A secret cut in two at 4x the limit may be missed: the last limit's worth of the head is
    # never shown (redacting earlier fields can shrink the head and pull it into view).
    return f"{redacted[: min(limit, len(redacted) - limit)]}...[{len(text) - limit} more chars]"


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
        text = redact_text(text)
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


# pydantic model class -> (its dumped field names, an itemgetter of them when there are several)
_model_fields: dict[type, tuple[tuple[str, ...], Any]] = {}


def _convert_object(value: object) -> Any:
    """Plain data for dataclasses and pydantic models, else ``_NOTHING``."""
    try:
        kind = type(value)
        if hasattr(kind, "__pydantic_fields__"):
            # A pydantic v2 model keeps its field values in __dict__: reading them is much
            # cheaper than model_dump(), and nested models are converted as they are reached.
            # Fields the model excludes from dumps (often clients or keys) stay out.
            fields = _model_fields.get(kind)
            if fields is None:
                names = tuple(
                    name for name, info in kind.__pydantic_fields__.items() if not getattr(info, "exclude", False)
                )
                fields = _model_fields[kind] = (names, operator.itemgetter(*names) if len(names) > 1 else None)
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


# What might need redaction in an encoded text, as supersets of what the careful
# walk redacts: credential-looking strings, passwords in connection strings,
# secret-looking keys. Literal prefixes keep the regex scans at C speed.
# (A tab or newline after "Bearer" is escaped in the encoded text: a backslash there counts too.)
_CREDENTIAL_STRING: Final = re.compile(r'"(?:Bearer[\s\\]|Basic[\s\\]|sk-|gh[pousr]_|xox[abpr]-|AKIA|AIza)')
_URL_CREDENTIALS: Final = re.compile(r'://[^"\s/@]{0,512}@')  # bounded: linear on long texts
_JSON_KEY: Final = re.compile(r'"([^"\\]*(?:\\.[^"\\]*)*)":')


def _may_hold_credential(text: str) -> bool:
    """Whether a string in ``text`` may start like a credential: the literal heads of
    ``_CREDENTIAL_STRING``, each found by a substring scan, cheaper than the regex trying
    every quote of a JSON text."""
    return (
        '"sk-' in text
        or '"gh' in text
        or '"xox' in text
        or '"AKIA' in text
        or '"AIza' in text
        or '"Bearer' in text
        or '"Basic' in text
    )


_KEY_WORDS: Final = ("key", "token", "auth", "pass", "secret", "pwd", "credential", "cookie", "signature")
"""Every secret key (:func:`is_secret_key`) contains one of these, case aside."""


def needs_care(text: str) -> bool:
    if "assword" in text or (_may_hold_credential(text) and _CREDENTIAL_STRING.search(text) is not None):
        return True
    if "://" in text and _URL_CREDENTIALS.search(text) is not None:
        return True
    lowered = text.lower()
    # _KEY_WORDS spelled out as one expression, not any(...): this runs for every captured value.
    if not (
        "key" in lowered
        or "token" in lowered
        or "auth" in lowered
        or "pass" in lowered
        or "secret" in lowered
        or "pwd" in lowered
        or "credential" in lowered
        or "cookie" in lowered
        or "signature" in lowered
    ):
        return False
    if not text.isascii():  # not the encoder's output: positions in lower() might shift
        return _any_secret_key(text)
    # Only keys holding a key word are judged. Finding them from the word's position costs a
    # few string operations each; taking every key of a message apart (the old way) cost
    # twice the encoding of a LangChain message that merely reports "input_tokens".
    for word in _KEY_WORDS:
        at = lowered.find(word)
        while at >= 0:
            end = _closing_quote(text, at)  # the end of the string holding the word
            if end < 0:
                return True  # not JSON as the encoder writes it: take the careful path
            if text.startswith(":", end + 1):  # that string is a key
                start = text.rfind('"', 0, at)
                if start <= 0 or text[start - 1] == "\\":
                    return True  # a quote inside the key before the word: rare, take the careful path
                if _secret_spelling(text[start + 1 : end]):
                    return True
            at = lowered.find(word, end)
    return False


def _closing_quote(text: str, at: int) -> int:
    """The index of the first unescaped '"' at or after ``at`` (-1 if none)."""
    end = text.find('"', at)
    while end > 0 and text[end - 1] == "\\":
        first = end - 1
        while first > 0 and text[first - 1] == "\\":
            first -= 1
        if (end - first) % 2 == 0:  # an even run of backslashes escapes only itself
            break
        end = text.find('"', end + 1)
    return end


def _any_secret_key(text: str) -> bool:
    return any(_secret_spelling(spelled) for spelled in _JSON_KEY.findall(text))


def _secret_spelling(spelled: str) -> bool:
    """Whether a key, as spelled between the quotes of encoded JSON, is secret (or cannot be read)."""
    if "\\" not in spelled:
        return is_secret_key(spelled)
    try:  # escaped ("\u00e9secret"): judge the key itself, not its JSON spelling
        return is_secret_key(json.loads(f'"{spelled}"'))
    except ValueError:
        return True


def _fast_default(value: Any) -> Any:
    fields = _model_fields.get(type(value))
    if fields is not None and fields[1] is not None:  # a pydantic model seen before: the common case
        try:
            state = value.__dict__
            if tuple(state) == fields[0]:
                return state  # holds its fields and nothing else, in order: the encoder only reads it
            return dict(zip(fields[0], fields[1](state), strict=True))
        except (KeyError, AttributeError):
            pass
    if isinstance(value, (set, frozenset)):
        return _sorted_safely(value)
    if isinstance(value, Mapping):
        return dict(value)
    if isinstance(value, (bytes, bytearray, memoryview)):
        return f"<{type(value).__name__} len={len(value)}>"
    if isinstance(value, BaseException):
        return f"{type(value).__qualname__}: {_safe_str(value)}"
    converted = _convert_object(value)
    if converted is not _NOTHING:
        return converted
    return _describe(value, _limits)


def _make_fast_encode() -> Any:
    # The C encoder made once: JSONEncoder.encode() builds a new one on every call, which
    # cost more than encoding a small value. No cycle markers: a cycle ends in the C
    # encoder's RecursionError, and the careful walk takes over.
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


_encode_string = json.encoder.encode_basestring_ascii
json_string: Final = _encode_string
"""A str as JSON text, ASCII-only (for adapters building attribute JSON from their framework's own ids)."""
_REDACTED_JSON: Final = '"' + REDACTED + '"'


_BIG: Final = 2**63
_SECRET_INITIALS: Final = frozenset("BsgxA")  # first letters of every _SECRET_VALUE alternative


def _scalar_json(value: Any, lim: Limits) -> str:
    kind = type(value)
    if kind is str:
        if len(value) > 7 and value[0] in _SECRET_INITIALS and _SECRET_VALUE.match(value):
            return _REDACTED_JSON
        value = redact_text(value)
        if len(value) > lim.max_string:
            value = _clip(value, lim.max_string)
        return _encode_string(value)
    if kind is int:
        return str(value) if -_BIG < value < _BIG else _encode_string(_big_int(value))
    if kind is bool:
        return "true" if value else "false"
    if value is None:
        return "null"
    if kind is float:
        return repr(value) if math.isfinite(value) else _encode_string(str(value))
    return _encode_string(f"<{kind.__name__} len={len(value)}>")  # bytes


class _Shape(NamedTuple):
    """What encoding a call's arguments needs to know about its parameter names, worked out once."""

    names: tuple[str, ...]
    keys: tuple[str, ...]  # '"name":' per name
    secret: tuple[bool, ...]  # whether that name is secret-looking
    templates: tuple[str, ...] | None  # per argument count, '{"a":%s,"b":%s}'; None if any name is secret


_shapes: dict[tuple[str, ...], _Shape] = {}


def parameter_shape(names: tuple[str, ...]) -> _Shape:
    """Worked out once per function: what the writer needs to encode its scalar arguments."""
    return _shape(names)


def _shape(names: tuple[str, ...]) -> _Shape:
    shape = _shapes.get(names)
    if shape is None:
        keys = tuple(_encode_string(k) + ":" for k in names)
        secret = tuple(is_secret_key(k) for k in names)
        templates = None
        if not any(secret):
            escaped = [k.replace("%", "%%") + "%s" for k in keys]
            templates = tuple("{" + ",".join(escaped[:n]) + "}" for n in range(len(keys) + 1))
        shape = _Shape(names, keys, secret, templates)
        if len(_shapes) < 10_000:
            _shapes[names] = shape
    return shape


def arguments_json(names: tuple[str, ...] | _Shape, args: tuple[Any, ...], kwargs: Mapping[str, Any] | None) -> str:
    """JSON text of ``capture_arguments(...)`` for arguments of :data:`ATOMIC_TYPES` only, built directly.

    The background writer's fast path: same result as ``dumps(capture_arguments(...))``
    for the common case of a few small scalars, at a fraction of the cost. ``names``
    may be the parameter names or their :func:`parameter_shape` (cheaper: no lookup).
    """
    # (type() rather than isinstance(): cheaper, and _Shape is the only tuple subclass passed here)
    shape = names if type(names) is _Shape else (_shapes.get(names) or _shape(names))  # type: ignore[arg-type]
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
                if (
                    len(arg) > max_string
                    or "@" in arg
                    or "assword" in arg
                    or (len(arg) > 7 and arg[0] in _SECRET_INITIALS)
                ):
                    break
                values.append(_encode_string(arg))
            elif kind is int and -_BIG < arg < _BIG:
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
            parts.append(key + _REDACTED_JSON)
        elif (
            kind is str
            and len(arg) <= max_string
            and (len(arg) < 8 or arg[0] not in _SECRET_INITIALS)
            and "@" not in arg
            and "assword" not in arg
        ):
            parts.append(key + _encode_string(arg))
        elif kind is int and -_BIG < arg < _BIG:
            parts.append(key + int.__repr__(arg))
        else:
            parts.append(key + _scalar_json(arg, lim))
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
        parts.append(_encode_string(key) + ":" + (_REDACTED_JSON if is_secret_key(key) else _scalar_json(arg, lim)))
    if kwargs:
        for key, arg in kwargs.items():
            parts.append(_encode_string(key) + ":" + (_REDACTED_JSON if is_secret_key(key) else _scalar_json(arg, lim)))
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
                encoded = _REDACTED_JSON
            elif type(item) is dict:
                encoded = arguments_json(tuple(item), tuple(item.values()), None)
            elif type(item) is str and _plain_text(item, lim.max_string):
                encoded = _encode_string(item)
            else:
                encoded = _scalar_json(item, lim)
            parts.append(_encode_string(key) + ":" + encoded)
        text = "{" + ",".join(parts) + "}"
        if len(text) <= lim.max_chars * 2:
            return text
    return capture_json(value)


def _plain_text(text: str, max_string: int) -> bool:
    """Short and nothing in it that redaction looks for: encoded as it is."""
    return (
        len(text) <= max_string
        and (len(text) < 8 or text[0] not in _SECRET_INITIALS)
        and "@" not in text
        and "assword" not in text
    )


def _flat_small(value: dict[Any, Any]) -> bool:
    """A dict of at most 16 scalars under str keys."""
    if not 0 < len(value) <= 16:
        return False
    return all(type(key) is str and type(item) in ATOMIC_TYPES for key, item in value.items())


def scalar_json(value: Any) -> str:
    """JSON text of ``capture(value)`` for a value of :data:`ATOMIC_TYPES`."""
    if (
        type(value) is str
        and len(value) <= _limits.max_string
        and (len(value) < 8 or value[0] not in _SECRET_INITIALS)
        and "@" not in value
        and "assword" not in value
    ):
        return _encode_string(value)  # nothing to cut or redact: the common case, without the checks below
    return _scalar_json(value, _limits)


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

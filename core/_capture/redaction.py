"""What is secret (keys that name secrets, values that look like credentials) and how it is hidden."""

from __future__ import annotations

import itertools
import re
from typing import Final

__all__ = [
    "REDACTED",
    "SECRET_COMPOUNDS",
    "SECRET_INITIALS",
    "SECRET_VALUE",
    "SECRET_WORDS",
    "is_secret_key",
    "redact_error_text",
    "redact_repr",
    "redact_text",
]

REDACTED: Final = "[redacted]"

SECRET_WORDS: Final = frozenset(
    {
        "password",
        "passwords",
        "passwd",
        "pwd",
        "passphrase",
        "secret",
        "secrets",
        "token",
        "apikey",
        "authorization",
        "auth",
        "credential",
        "credentials",
        "cookie",
        "cookies",
        "privatekey",
        "signature",
        "sessionkey",
        "accesskey",
        "clientsecret",
    }
)
SECRET_COMPOUNDS: Final = ("api_key", "apikey", "access_key", "private_key", "secret_key", "client_secret")
_WORD_SPLIT: Final = re.compile(r"[^a-z0-9]+")
# camelCase and acronyms: "dbPassword", "DBPassword", "APIToken" -> db password, api token.
_CAMEL: Final = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
# Values that are secrets whatever their key: bearer headers and well-known key prefixes.
SECRET_VALUE: Final = re.compile(
    r"^(?:Bearer\s+\S{8,}|Basic\s+[A-Za-z0-9+/=]{8,}|sk-[A-Za-z0-9_-]{16,}|gh[pousr]_[A-Za-z0-9]{20,}"
    r"|xox[abpr]-[A-Za-z0-9-]{10,}|AKIA[0-9A-Z]{16}|AIza[0-9A-Za-z_-]{30,})"
)
SECRET_INITIALS: Final = frozenset("BsgxA")  # first letters of every SECRET_VALUE alternative
# The same credentials anywhere in a text (an error message quoting a key), for texts that are
# not captured values: error messages.
_SECRET_ANYWHERE: Final = re.compile(r"(?<![A-Za-z0-9_-])" + SECRET_VALUE.pattern[1:])
# Passwords inside strings: ``scheme://user:PASSWORD@host`` and ``password=...`` (URL query or libpq DSN).
# A scheme starts only where a run of scheme characters starts: one tried at every letter is quadratic.
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

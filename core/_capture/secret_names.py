"""Names of secrets: which keys, fields, headers and options name a value that must not be recorded."""

from __future__ import annotations

import itertools
import re
from typing import Final

__all__ = ["SECRET_COMPOUNDS", "SECRET_WORDS", "is_secret_key", "names_a_secret"]

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
# A name ending so is secret however it starts: "PGPASSWORD", "authtoken", "dbsecret".
_SECRET_ENDINGS: Final = ("password", "passwd", "passphrase", "secret", "token", "apikey", "accesskey", "privatekey")
_WORD_SPLIT: Final = re.compile(r"[^a-z0-9]+")
# camelCase and acronyms: "dbPassword", "DBPassword", "APIToken" -> db password, api token.
_CAMEL: Final = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
_key_cache: dict[str, bool] = {}
_name_cache: dict[str, bool] = {}


def _words(name: str) -> list[str]:
    return [p for p in _WORD_SPLIT.split(_CAMEL.sub("_", name).lower()) if p]


def is_secret_key(key: str) -> bool:
    """True if a mapping key names something that must not be recorded."""
    hit = _key_cache.get(key)
    if hit is None:
        lowered = _CAMEL.sub("_", key).lower()
        parts = [p for p in _WORD_SPLIT.split(lowered) if p]
        # Adjacent pairs too: "x-api-key", "private-key", "SessionKey" spell compound secret words.
        words = set(parts) | {a + b for a, b in itertools.pairwise(parts)}
        hit = (
            bool(words & SECRET_WORDS)
            or any(c in lowered for c in SECRET_COMPOUNDS)
            or any(part.endswith(_SECRET_ENDINGS) for part in parts)
        )
        if len(_key_cache) < 10_000:
            _key_cache[key] = hit
    return hit


def names_a_secret(name: str) -> bool:
    """True if a name written in free text (``name=...``, ``"name": ...``, ``--name ...``) names a secret.

    Stricter than :func:`is_secret_key`: the name must *end* in a secret word, because prose and
    logs are full of names that merely hold one (``token_count: 12``, ``password_policy: strict``).
    """
    hit = _name_cache.get(name)
    if hit is None:
        words = _words(name)
        last = words[-1] if words else ""
        pair = words[-2] + last if len(words) > 1 else last
        hit = last in SECRET_WORDS or pair in SECRET_WORDS or last.endswith(_SECRET_ENDINGS)
        if len(_name_cache) < 10_000:
            _name_cache[name] = hit
    return hit

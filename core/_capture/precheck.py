"""Whether a text from the C encoder may hold anything the careful walk would redact (:func:`needs_care`).

Its checks are supersets of what the walk redacts: credential-looking strings, passwords in
connection strings, secret-looking keys.
"""

from __future__ import annotations

import json
import re
from typing import Final

from .redaction import is_secret_key

__all__ = ["needs_care"]

# Literal prefixes keep the regex scans at C speed. A tab or newline after "Bearer" is escaped
# in the encoded text: a backslash there counts too.
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
    # Only keys holding a key word are judged, each found from the word's position: a text that
    # merely reports "input_tokens" must not pay for taking every key apart (see bench/README.md).
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

"""Whether a text from the C encoder may hold anything the careful walk would redact (:func:`needs_care`).

Its checks are supersets of what the walk redacts: anything a credential rule may match inside a
string, secret-looking keys, and strings that name the next item of their list (a header pair's
``["Authorization", ...]``, argv's ``"--password"``).
"""

from __future__ import annotations

import json

from .credentials import KEY_WORDS, holds_format_head, holds_key_word, names_a_value_at
from .secret_names import is_secret_key

__all__ = ["needs_care"]


def needs_care(text: str) -> bool:
    if holds_format_head(text):
        return True
    lowered = text.lower()
    if not holds_key_word(lowered):
        return False
    if not text.isascii():  # not the encoder's output (that is ASCII): positions in lower() might shift
        return True
    if "\\u" in text:  # an escaped character ("\u00e9api_key") would read as a letter of the word beside it
        return True
    # Only strings holding a key word are judged, each found from the word's position: a text that
    # merely reports "input_tokens" must not pay for taking every key apart (see bench/README.md).
    for word in KEY_WORDS:
        at = lowered.find(word)
        judged_to = -1  # the end of the last string judged as a key or a list's item
        while at >= 0:
            if names_a_value_at(text, lowered, at, word, in_json=True):
                return True  # a secret's name and its value inside a string: "password=..."
            if at > judged_to:
                end = _closing_quote(text, at)  # the end of the string holding the word
                if end < 0:
                    return True  # not JSON as the encoder writes it: take the careful path
                if _names_a_secret_as_json(text, at, end):
                    return True
                judged_to = end
            at = lowered.find(word, at + len(word))
    return False


def _names_a_secret_as_json(text: str, at: int, end: int) -> bool:
    """Whether the string ending at ``end`` (holding ``at``) is a secret key, or a list's item
    naming the next as one."""
    follows = text[end + 1 : end + 2]
    if follows == ":":  # that string is a key
        start = text.rfind('"', 0, at)
        if start <= 0 or text[start - 1] == "\\":
            return True  # a quote inside the key before the word: rare, take the careful path
        return _secret_spelling(text[start + 1 : end])
    if follows == ",":  # a list's item, which may name the next: ["Authorization", ...], "--password"
        start = _opening_quote(text, at)
        return (text[start - 1] == "[" or text.startswith("-", start + 1)) and _secret_spelling(text[start + 1 : end])
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


def _opening_quote(text: str, at: int) -> int:
    """The index of the last unescaped '"' before ``at`` (0 if none: the text's first character)."""
    start = text.rfind('"', 0, at)
    while start > 0 and text[start - 1] == "\\":
        first = start - 1
        while first > 0 and text[first - 1] == "\\":
            first -= 1
        if (start - first) % 2 == 0:  # an even run of backslashes escapes only itself
            break
        start = text.rfind('"', 0, start)
    return max(start, 0)


def _secret_spelling(spelled: str) -> bool:
    """Whether a key, as spelled between the quotes of encoded JSON, is secret (or cannot be read)."""
    if "\\" not in spelled:
        return is_secret_key(spelled)
    try:  # escaped ("\u00e9secret"): judge the key itself, not its JSON spelling
        return is_secret_key(json.loads(f'"{spelled}"'))
    except ValueError:
        return True

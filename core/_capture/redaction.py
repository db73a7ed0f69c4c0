"""How secrets are hidden: credentials anywhere in a text (see ``credentials``) and secret fields of a repr."""

from __future__ import annotations

import re
from typing import Final

from .credentials import credential_spans, may_hold_credential, value_end
from .secret_names import SECRET_COMPOUNDS, SECRET_WORDS, is_secret_key

__all__ = [
    "REDACTED",
    "SECRET_COMPOUNDS",
    "SECRET_WORDS",
    "is_secret_key",
    "redact_bounded",
    "redact_error_text",
    "redact_tail",
    "redact_repr",
    "redact_text",
]

REDACTED: Final = "[redacted]"
# Past this many characters beyond a cut, a secret running across the cut may go unrecognised:
# that stretch is redacted with the rest but never shown.
_MARGIN: Final = 512


def redact_text(text: str) -> str:
    """``text`` with every credential the rules find in it replaced by ``[redacted]`` (all of it, if
    it is one credential; a secret's name, a URL's user, a "Bearer " are kept)."""
    if len(text) < 5 or not may_hold_credential(text):  # "pwd=x" is the shortest match
        return text
    spans = credential_spans(text)
    if not spans:
        return text
    if spans == [(0, len(text))]:
        return REDACTED
    pieces: list[str] = []
    done = 0
    for start, end in spans:
        pieces.append(text[done:start])
        pieces.append(REDACTED)
        done = end
    pieces.append(text[done:])
    return "".join(pieces)


# An error message is redacted by the same rules as any text (the same function: no frame more
# for a message described near the recursion limit).
redact_error_text: Final = redact_text


def redact_bounded(text: str, limit: int) -> str:
    """``text`` redacted and cut to about ``limit`` characters; only a bounded head is scanned."""
    if len(text) <= limit:
        return redact_text(text)
    if len(text) <= limit + _MARGIN:  # scanned whole: nothing was cut through
        redacted = redact_text(text)
        shown = min(limit, len(redacted))
    else:
        redacted = redact_text(text[: limit + _MARGIN])
        shown = max(0, min(limit, len(redacted) - _MARGIN))
    return f"{redacted[:shown]}...[{len(text) - shown} more chars]" if shown < len(redacted) else redacted


def redact_tail(text: str, limit: int) -> str:
    """``text`` redacted and cut to about its last ``limit`` characters, from a line's start (a traceback's
    most recent frames are at its end); only a bounded tail is scanned."""
    if len(text) <= limit:
        return redact_text(text)
    redacted = redact_text(text[-(limit + _MARGIN) :])
    cut = max(_MARGIN, len(redacted) - limit)  # the margin, where a secret cut in two may be missed, is never shown
    line = redacted.find("\n", cut)
    if line != -1:
        cut = line + 1
    return f"...[{len(text) - (len(redacted) - cut)} earlier chars]\n{redacted[cut:]}"


# A field name in a repr: ``name=`` (dataclasses, pydantic models, namedtuples), ``name:``
# (hand-written reprs; a ``token: str`` annotation is redacted too, the safe way to be wrong) or
# a quoted ``'key':`` (dicts). A name starts only where a word starts: the scan stays linear.
_REPR_FIELD: Final = re.compile(
    r"""(?<![A-Za-z0-9_-])(?:([A-Za-z_][A-Za-z0-9_-]*)[ \t]*[=:](?![=:/])"""
    r"""|"([^"\\\n]{1,200})"[ \t]*:|'([^'\\\n]{1,200})'[ \t]*:)\s*"""
)


def redact_repr(text: str) -> str:
    """An object's repr with the values of secret-named fields (``api_key='...'``,
    ``'password': ...``, ``auth=(...)``, at any depth) and credential-looking values redacted."""
    pieces: list[str] = []
    done = 0
    found = _REPR_FIELD.search(text)
    while found is not None:
        if is_secret_key(found.group(1) or found.group(2) or found.group(3)):
            end = value_end(text, found.end())
            pieces.append(text[done : found.end()])
            pieces.append(REDACTED)
            done = end
            found = _REPR_FIELD.search(text, end)
        else:  # look inside the value too: App(db=DB(password=...))
            found = _REPR_FIELD.search(text, found.end())
    pieces.append(text[done:])
    return redact_text("".join(pieces))

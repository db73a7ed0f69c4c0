"""Recorded text made safe to print on a terminal.

A session's record holds text an agent, a model or another process wrote: an escape
sequence in it would reach the terminal raw through ``show`` or the undo plan (clear the
screen, write the clipboard with OSC 52, rewrite a confirmation line with a carriage
return). Every recorded string the CLI prints goes through :func:`printable` first.
"""

from __future__ import annotations

import unicodedata

__all__ = ["printable"]

# Control (Cc), format (Cf: bidirectional overrides), surrogate, private-use and unassigned
# (Cs, Co, Cn), and line or paragraph separators (Zl, Zp): none prints as itself.
_UNPRINTABLE = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"})


def _escaped(character: str) -> str:
    code = ord(character)
    if code <= 0xFF:
        return f"\\x{code:02x}"
    if code <= 0xFFFF:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"


def printable(text: str, *, keep_newlines: bool = False) -> str:
    """``text`` with every character a terminal would act on escaped as ``\\xNN``/``\\uNNNN``.

    ``keep_newlines`` keeps ``\\n`` and ``\\t`` (text shown as a block); otherwise they are
    escaped too (text shown on one line).
    """
    if text.isprintable():
        return text  # the common case, checked in C
    kept = "\n\t" if keep_newlines else ""
    out = []
    for character in text:
        if character in kept or unicodedata.category(character) not in _UNPRINTABLE:
            out.append(character)
        else:
            out.append(_escaped(character))
    return "".join(out)

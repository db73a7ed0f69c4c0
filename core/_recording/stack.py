"""The stack a failed call keeps: its exception's traceback, bounded and redacted, in ``attributes["traceback"]``.

Laid out as Python prints it (causes first, most recent call last), without the column carets:
Python's own formatter parses each line's source for them, 200-900 us per failing call, against a
few microseconds here (see ``bench/error_traceback.py``). Written on the failing call's thread,
since keeping the traceback for the writer would keep every frame and its locals alive.
"""

from __future__ import annotations

import json
import linecache
import os
from types import TracebackType
from typing import Any, Final

from .._capture import json_string, mapping_json, redact_tail
from .._runtime import log_once

__all__ = ["MAX_FRAMES", "MAX_TRACEBACK", "describe_traceback", "with_traceback"]

MAX_FRAMES: Final = 64  # of each exception in a chain, the most recent
MAX_TRACEBACK: Final = 16 * 1024  # characters, the most recent kept
_MAX_CHAIN: Final = 4  # exceptions described: the call's and its last three causes or contexts
_MAX_LINE: Final = 240  # of a source line (a minified one is a whole file)
_MAX_MESSAGE: Final = 4096  # of an exception's message, as describe_error keeps it
_REPEATS: Final = 3  # identical lines shown before Python's "[Previous line repeated N more times]"

# A call's traceback begins at the frame that recorded it: openprogram's own wrapper (or the compiled
# @openprogram.tool's), which says nothing about the failure.
_OWN_DIR: Final = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
_OWN_CODE: Final = "<openprogram.tool "

_CAUSE: Final = "\nThe above exception was the direct cause of the following exception:\n\n"
_CONTEXT: Final = "\nDuring handling of the above exception, another exception occurred:\n\n"


def describe_traceback(exc: BaseException) -> str | None:
    """``exc``'s traceback as Python prints it, bounded and redacted; None when it has none. Never raises."""
    try:
        if exc.__traceback__ is None:
            return None
        chain: list[tuple[BaseException, str]] = []  # most recent first, each with what links it to the next
        seen: set[int] = set()
        link = ""
        current: BaseException | None = exc
        while current is not None and id(current) not in seen and len(chain) < _MAX_CHAIN:
            seen.add(id(current))
            chain.append((current, link))
            if current.__cause__ is not None:
                current, link = current.__cause__, _CAUSE
            elif current.__context__ is not None and not current.__suppress_context__:
                current, link = current.__context__, _CONTEXT
            else:
                current = None
        parts: list[str] = []
        for index, (item, link) in enumerate(reversed(chain)):
            tb = item.__traceback__
            if tb is not None and index == len(chain) - 1:  # the call's own exception: below openprogram's frames
                tb = _below_own(tb)
            if tb is not None:
                parts.append("Traceback (most recent call last):\n")
                _frames(tb, parts)
            parts.append(_exception_line(item))
            parts.append(link)
        return redact_tail("".join(parts), MAX_TRACEBACK)
    except RecursionError:  # no stack left to describe it: the call keeps its error alone
        return None
    except Exception as error:
        log_once("openprogram", "describing a failed call's traceback", error)
        return None


def with_traceback(attributes: dict[str, Any] | str | None, exc: BaseException) -> dict[str, Any] | str | None:
    """A failed call's attributes with ``exc``'s traceback, as JSON text; unchanged when it has none.

    JSON text, because the writer bounds each attribute it captures to ``Limits.max_string``
    from its start, and a traceback's most recent frames are at its end.
    """
    text = describe_traceback(exc)
    if text is None:
        return attributes
    if type(attributes) is str:
        base = attributes
        if '"traceback"' in base:  # one of the call's own: the stack replaces it
            base = mapping_json({k: v for k, v in _json_object(base).items() if k != "traceback"})
    elif attributes:
        base = mapping_json({k: v for k, v in attributes.items() if k != "traceback"})  # type: ignore[union-attr]
    else:
        base = "{}"
    if not base.startswith("{") or not base.endswith("}"):
        base = "{}"
    return base[:-1] + ("," if len(base) > 2 else "") + '"traceback":' + json_string(text) + "}"


def _json_object(text: str) -> dict[str, Any]:
    value = json.loads(text)
    return value if isinstance(value, dict) else {}


def _below_own(tb: TracebackType) -> TracebackType:
    """The traceback from its first frame that is not openprogram's (all of it, if every frame is)."""
    first: TracebackType | None = tb
    while first is not None:
        filename = first.tb_frame.f_code.co_filename
        if not (filename.startswith(_OWN_DIR) or filename.startswith(_OWN_CODE)):
            return first
        first = first.tb_next
    return tb


def _frames(tb: TracebackType | None, parts: list[str]) -> None:
    """The traceback's last MAX_FRAMES frames, each ``File "...", line N, in name`` and its source line."""
    frames: list[tuple[str, int, str]] = []
    while tb is not None:
        code = tb.tb_frame.f_code
        if not code.co_filename.startswith(_OWN_CODE):  # a compiled @openprogram.tool wrapper: no source, no news
            frames.append((code.co_filename, tb.tb_lineno, code.co_name))
        tb = tb.tb_next
    if len(frames) > MAX_FRAMES:
        parts.append(f"  ...[{len(frames) - MAX_FRAMES} earlier frames]\n")
        frames = frames[-MAX_FRAMES:]
    previous: tuple[str, int, str] | None = None
    repeated = 0
    for frame in frames:
        if frame == previous:
            repeated += 1
            if repeated >= _REPEATS:
                continue
        else:
            _repeated(repeated, parts)
            previous, repeated = frame, 0
        filename, lineno, name = frame
        parts.append(f'  File "{filename}", line {lineno}, in {name}\n')
        line = linecache.getline(filename, lineno).strip()
        if line:
            parts.append(f"    {line[:_MAX_LINE]}{'...' if len(line) > _MAX_LINE else ''}\n")
    _repeated(repeated, parts)


def _repeated(repeated: int, parts: list[str]) -> None:
    if repeated >= _REPEATS:
        more = repeated - _REPEATS + 1
        parts.append(f"  [Previous line repeated {more} more time{'s' if more > 1 else ''}]\n")


def _exception_line(exc: BaseException) -> str:
    kind = type(exc)
    name = kind.__qualname__
    if kind.__module__ not in ("builtins", "__main__"):
        name = f"{kind.__module__}.{name}"
    try:
        message = str(exc)
    except Exception:
        message = "<str() failed>"
    if len(message) > _MAX_MESSAGE:
        message = message[:_MAX_MESSAGE] + "...[truncated]"
    line = f"{name}: {message}\n" if message else f"{name}\n"
    notes = getattr(exc, "__notes__", None)
    if isinstance(notes, list):
        line += "".join(f"{note[:_MAX_MESSAGE]}\n" for note in notes[:8] if isinstance(note, str))
    return line

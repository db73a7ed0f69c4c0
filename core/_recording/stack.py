"""The stack a failed call keeps: its exception's traceback, bounded and redacted, in ``attributes["traceback"]``.

Taken in two steps. On the failing call's thread, :func:`with_traceback` notes each frame's file,
line and function and each exception's line, and nothing more: no source file is read there (a
first read is blocking I/O, on an event loop too), and no frame is kept alive for later (with its
locals). The writer lays it out (:meth:`PendingTraceback.json`): as Python prints it, causes first,
most recent call last, with each frame's source line but without the column carets (Python's own
formatter parses every line for them: 90-700 us a failing call, see ``bench/error_traceback.py``).
"""

from __future__ import annotations

import json
import linecache
import os
from types import TracebackType
from typing import Any, Final

from .._capture import json_string, mapping_json, redact_tail
from .._runtime import log_once

__all__ = ["MAX_FRAMES", "MAX_TRACEBACK", "PendingTraceback", "describe_traceback", "with_traceback"]

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

_Frame = tuple[str, int, str]  # file, line, function
_Exception = tuple["list[_Frame] | None", int, str, str]  # frames (None: no traceback), frames left out, line, link


class PendingTraceback:
    """A failed call's attributes, its traceback taken and not yet laid out: the writer calls :meth:`json`."""

    __slots__ = ("attributes", "chain")

    def __init__(self, attributes: dict[str, Any] | str | None, chain: list[_Exception]) -> None:
        self.attributes = attributes
        self.chain = chain  # oldest first, as printed

    def json(self) -> str:
        """The attributes as JSON text, ``traceback`` among them (replacing one of the call's own).

        Built here, not captured with the others: a capture keeps a string's start, a traceback's
        most recent frames are at its end.
        """
        attributes = self.attributes
        if type(attributes) is str:
            base = attributes
            if '"traceback"' in base:
                base = mapping_json({k: v for k, v in _json_object(base).items() if k != "traceback"})
        elif attributes:
            base = mapping_json({k: v for k, v in attributes.items() if k != "traceback"})  # type: ignore[union-attr]
        else:
            base = "{}"
        if not base.startswith("{") or not base.endswith("}"):
            base = "{}"
        text = _laid_out(self.chain)
        return base[:-1] + ("," if len(base) > 2 else "") + '"traceback":' + json_string(text) + "}"


def with_traceback(attributes: dict[str, Any] | str | None, exc: BaseException) -> Any:
    """A failed call's attributes with ``exc``'s traceback taken (a :class:`PendingTraceback`); unchanged when
    it has none, or it could not be taken. Never raises."""
    chain = _taken(exc)
    return attributes if chain is None else PendingTraceback(attributes, chain)


def describe_traceback(exc: BaseException) -> str | None:
    """``exc``'s traceback as a failed call keeps it (bounded, redacted); None when it has none. Never raises."""
    chain = _taken(exc)
    return None if chain is None else _laid_out(chain)


def _taken(exc: BaseException) -> list[_Exception] | None:
    try:
        if exc.__traceback__ is None:
            return None
        found: list[tuple[BaseException, str]] = []  # most recent first, each with what links it to the next
        seen: set[int] = set()
        link = ""
        current: BaseException | None = exc
        while current is not None and id(current) not in seen and len(found) < _MAX_CHAIN:
            seen.add(id(current))
            found.append((current, link))
            if current.__cause__ is not None:
                current, link = current.__cause__, _CAUSE
            elif current.__context__ is not None and not current.__suppress_context__:
                current, link = current.__context__, _CONTEXT
            else:
                current = None
        chain: list[_Exception] = []
        for item, link in reversed(found):
            tb = item.__traceback__
            if tb is not None and item is exc:  # the call's own exception: below openprogram's frames
                tb = _below_own(tb)
            frames, left_out = (None, 0) if tb is None else _frames(tb)
            chain.append((frames, left_out, _exception_line(item), link))
        return chain
    except RecursionError:  # no stack left to take it: the call keeps its error alone
        return None
    except Exception as error:
        log_once("openprogram", "taking a failed call's traceback", error)
        return None


def _below_own(tb: TracebackType) -> TracebackType:
    """The traceback from its first frame that is not openprogram's (all of it, if every frame is)."""
    first: TracebackType | None = tb
    while first is not None:
        filename = first.tb_frame.f_code.co_filename
        if not (filename.startswith(_OWN_DIR) or filename.startswith(_OWN_CODE)):
            return first
        first = first.tb_next
    return tb


def _frames(tb: TracebackType | None) -> tuple[list[_Frame], int]:
    """The traceback's last MAX_FRAMES frames, and how many before them were left out."""
    frames: list[_Frame] = []
    while tb is not None:
        code = tb.tb_frame.f_code
        if not code.co_filename.startswith(_OWN_CODE):  # a compiled @openprogram.tool wrapper: no source, no news
            frames.append((code.co_filename, tb.tb_lineno, code.co_name))
        tb = tb.tb_next
    if len(frames) > MAX_FRAMES:
        return frames[-MAX_FRAMES:], len(frames) - MAX_FRAMES
    return frames, 0


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


# --- laid out, on the writer's thread ------------------------------------------------------------------


def _laid_out(chain: list[_Exception]) -> str:
    """The chain as Python prints it, each frame with its source line, redacted, its last MAX_TRACEBACK characters."""
    parts: list[str] = []
    for frames, left_out, line, link in chain:
        if frames is not None:
            parts.append("Traceback (most recent call last):\n")
            if left_out:
                parts.append(f"  ...[{left_out} earlier frames]\n")
            _lay_out_frames(frames, parts)
        parts.append(line)
        parts.append(link)
    return redact_tail("".join(parts), MAX_TRACEBACK)


def _lay_out_frames(frames: list[_Frame], parts: list[str]) -> None:
    previous: _Frame | None = None
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
        source = linecache.getline(filename, lineno).strip()
        if source:
            parts.append(f"    {source[:_MAX_LINE]}{'...' if len(source) > _MAX_LINE else ''}\n")
    _repeated(repeated, parts)


def _repeated(repeated: int, parts: list[str]) -> None:
    if repeated >= _REPEATS:
        more = repeated - _REPEATS + 1
        parts.append(f"  [Previous line repeated {more} more time{'s' if more > 1 else ''}]\n")


def _json_object(text: str) -> dict[str, Any]:
    value = json.loads(text)
    return value if isinstance(value, dict) else {}

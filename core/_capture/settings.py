"""What a capture keeps: how much of a value (:class:`Limits`) and whether any content at all."""

from __future__ import annotations

import dataclasses
import os
from typing import Final

__all__ = [
    "ENV_CAPTURE_CONTENT",
    "Limits",
    "content_captured",
    "set_content_capture",
]


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

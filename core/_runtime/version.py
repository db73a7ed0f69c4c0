"""openprogram's version, as the installed distribution's metadata states it (declared once, in pyproject.toml)."""

from __future__ import annotations

from importlib import metadata

__all__ = ["VERSION"]

try:
    VERSION = metadata.version("openprogram")
except metadata.PackageNotFoundError:  # imported from a source tree that was never installed
    VERSION = "0+unknown"

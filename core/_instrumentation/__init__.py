"""Instrumentation: the adapter kit's machinery and the switch that turns adapters on and off.

- ``integration``: ``Integration`` and ``Target``, an adapter's table of patches, applied and restored;
- ``overrides``: a patch applied where a class defines a method and where each subclass overrides it;
- ``import_hooks``: run a function when a module is imported, without importing it;
- ``wrappers``: ``recorded(...)``, the one wrapper that records each call of a framework method;
- ``switch``: ``instrument()`` / ``uninstrument()`` over the registry in ``openprogram.integrations``.
"""

from __future__ import annotations

from . import integration  # the module too: a test raises the version floor it reads
from .integration import ORIGINAL, Integration, Target, Wrap, version_tuple
from .switch import instrument, instrumented, uninstrument
from .wrappers import Describe, recorded, shape_of, wraps_like

__all__ = [
    "ORIGINAL",
    "Describe",
    "Integration",
    "Target",
    "Wrap",
    "instrument",
    "instrumented",
    "integration",
    "recorded",
    "shape_of",
    "uninstrument",
    "version_tuple",
    "wraps_like",
]

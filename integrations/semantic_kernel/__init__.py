"""The Semantic Kernel adapter (:mod:`.adapter`), with its chat completion requests (:mod:`.models`), its
offline demo (:mod:`.demo`) and the offline chat service of the demo, tests and benchmark (:mod:`.fakes`).

Importing this package imports only the adapter, which imports no framework.
"""

from __future__ import annotations

from .adapter import SemanticKernelIntegration

__all__ = ["SemanticKernelIntegration"]

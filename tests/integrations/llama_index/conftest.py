"""LlamaIndex adapter tests: the real framework with an offline scripted LLM (``integrations/llama_index/fakes.py``).

Home isolation, ``store`` and ``instrument`` come from the root ``tests/conftest.py``.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

pytest.importorskip("llama_index.core", reason="needs openprogram[llama-index]")


@pytest.fixture
def instrumented(instrument: Callable[..., set[str]]) -> None:
    instrument("llama_index")

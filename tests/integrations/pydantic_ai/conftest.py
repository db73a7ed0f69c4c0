"""Pydantic AI adapter tests: the real framework with its own offline models (``fakes``).

Home isolation, ``store`` and ``instrument`` come from the root ``tests/conftest.py``.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

pytest.importorskip("pydantic_ai", reason="needs openprogram[pydantic-ai]")


@pytest.fixture
def instrumented(instrument: Callable[..., set[str]]) -> None:
    instrument("pydantic_ai")

"""Semantic Kernel's own fixture: the adapter enabled around a test (home, store and helpers are the root's)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

pytest.importorskip("semantic_kernel", reason="needs openprogram[semantic-kernel]")


@pytest.fixture
def instrumented(instrument: Callable[..., set[str]]) -> None:
    instrument("semantic_kernel")

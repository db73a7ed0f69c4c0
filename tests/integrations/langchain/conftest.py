"""LangChain adapter tests: the adapter on for every test, LangGraph not needed (the root conftest gives the store)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

pytest.importorskip("langchain_core")


@pytest.fixture(autouse=True)
def instrumented(instrument: Callable[..., set[str]]) -> None:
    instrument("langchain")

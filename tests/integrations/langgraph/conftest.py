"""LangGraph adapter tests: the adapter on for every test (the root conftest gives the private home and store)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

pytest.importorskip("langgraph")


@pytest.fixture(autouse=True)
def instrumented(instrument: Callable[..., set[str]]) -> None:
    instrument("langgraph")

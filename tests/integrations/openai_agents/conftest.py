"""OpenAI Agents SDK adapter tests: the real SDK, offline models, the SDK's tracing off (nothing is exported).

Home isolation, ``store`` and ``instrument`` come from the root ``tests/conftest.py``.
"""

from __future__ import annotations

import os

# The SDK's default trace exporter would send spans to OpenAI: off before anything imports the SDK.
os.environ["OPENAI_AGENTS_DISABLE_TRACING"] = "1"

from collections.abc import Callable, Iterator

import pytest

pytest.importorskip("agents")

from agents import set_tracing_disabled

set_tracing_disabled(True)


@pytest.fixture(autouse=True)
def _instrumented(instrument: Callable[..., set[str]]) -> Iterator[None]:
    instrument("agents")
    yield

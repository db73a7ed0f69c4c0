"""Google ADK adapter tests: the real framework with a scripted ``BaseLlm`` (``google_adk.fakes``).

Home isolation, ``store`` and ``instrument`` come from the root ``tests/conftest.py``.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

pytest.importorskip("google.adk", reason="needs openprogram[google-adk]")


@pytest.fixture
def instrumented(instrument: Callable[..., set[str]]) -> None:
    instrument("google_adk")

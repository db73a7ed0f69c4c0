"""CrewAI adapter tests: real crewai, an offline scripted LLM, no telemetry, CrewAI's storage in a tmp dir.

Home isolation, ``store`` and ``instrument`` come from the root ``tests/conftest.py``.
"""

from __future__ import annotations

import os
import tempfile

from openprogram.integrations.crewai.fakes import CREWAI_OFFLINE_ENV  # imports no crewai

# CrewAI reads these at import time (and creates ~/.config/crewai): set them before anything imports crewai.
_home = tempfile.mkdtemp(prefix="openprogram_crewai_home_")
os.environ.update(
    {
        "HOME": _home,
        "XDG_DATA_HOME": f"{_home}/.local/share",
        "CREWAI_STORAGE_DIR": f"{_home}/crewai_storage",
        **CREWAI_OFFLINE_ENV,
    }
)

from collections.abc import Callable  # noqa: E402

import pytest  # noqa: E402

pytest.importorskip("crewai")


@pytest.fixture(autouse=True)
def _instrumented(instrument: Callable[..., set[str]]) -> None:
    instrument("crewai")

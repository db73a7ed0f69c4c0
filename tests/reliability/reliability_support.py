"""Helpers shared by the reliability tests (a uniquely named module: every test directory has a conftest)."""

from __future__ import annotations

import logging
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:  # the workloads live in bench/, shared with the long runs
    sys.path.insert(0, str(ROOT))

#: Scale knob for CI: OPENPROGRAM_RELIABILITY_SCALE=10 runs ten times the default counts.
SCALE = float(os.environ.get("OPENPROGRAM_RELIABILITY_SCALE", "1"))


def scaled(n: int) -> int:
    return max(1, int(n * SCALE))


class WarningCounter(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)

    @property
    def messages(self) -> list[str]:
        return [r.getMessage() for r in self.records]

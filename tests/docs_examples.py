"""The examples of ``docs/``, run as the users' test files they are (by ``pytester``), so the pages stay true."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[1] / "docs"


def example(page: str, heading: str) -> str:
    """The first ``python`` code block of the section ``## heading`` of ``docs/page``."""
    section = (DOCS / page).read_text().split(f"\n## {heading}\n", 1)[1].split("\n## ", 1)[0]
    found = re.search(r"```python\n(.*?)```", section, re.DOTALL)
    assert found is not None, f"no python example under {heading!r} in docs/{page}"
    return found.group(1)


def run_example(pytester: pytest.Pytester, page: str, heading: str) -> None:
    """Run the example as a test file of its own; its one test must pass.

    The calling test's fixtures have instrumented the framework, as the page's ``conftest.py`` does.
    """
    pytester.makeini("[pytest]\nasyncio_mode = auto\nasyncio_default_fixture_loop_scope = function\n")
    pytester.makepyfile(test_example=example(page, heading))
    result = pytester.runpytest("-q", "-p", "no:cacheprovider", "-W", "ignore::DeprecationWarning")
    result.assert_outcomes(passed=1)

"""docs/fakes.md's example for this framework passes as a user's test file (with the ``recorded`` fixture)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tests.docs_examples import run_example

pytest_plugins = ["pytester"]


def test_the_offline_model_example_of_the_docs_passes(
    pytester: pytest.Pytester, instrument: Callable[..., set[str]]
) -> None:
    instrument("semantic_kernel")  # as the page's conftest.py does
    run_example(pytester, "fakes.md", "Semantic Kernel: `ScriptedChatService`")

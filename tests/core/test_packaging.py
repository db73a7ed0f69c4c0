"""``import openprogram`` needs no framework; ``instrument()`` then enables nothing and says so."""

from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import logging
import re
from pathlib import Path

import openprogram
import pytest
from openprogram.integrations import INTEGRATIONS

from .conftest import run_python

FRAMEWORK_MODULES = ("langgraph", "langchain_core", "crewai", "semantic_kernel", "psycopg")


def test_import_loads_no_framework_and_no_optional_dependency() -> None:
    result = run_python(
        f"""
        import json, sys
        import openprogram, openprogram.integrations
        print(json.dumps([m for m in {FRAMEWORK_MODULES!r} if m in sys.modules]))
        """
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == []


def test_public_api_is_exported() -> None:
    for name in openprogram.__all__:
        assert hasattr(openprogram, name), name
    for name in (
        "session_context",
        "run_with_session",
        "get_current_session",
        "require_current_session",
        "tool",
        "instrument",
        "uninstrument",
        "DidNotEnable",
        "open_store",
        "flush",
    ):
        assert name in openprogram.__all__


def test_package_is_typed() -> None:
    assert (Path(openprogram.__file__).parent / "py.typed").exists()


def _installed(module: str) -> bool:
    return importlib.util.find_spec(module) is not None


@pytest.mark.skipif(
    any(_installed(m) for m in ("langgraph", "langchain_core", "crewai", "semantic_kernel")),
    reason="a framework is installed: the core tests expect none",
)
def test_instrument_with_no_framework_enables_nothing_and_says_so(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="openprogram")
    try:
        assert openprogram.instrument() == set()
        assert openprogram.instrumented() == set()
    finally:
        openprogram.uninstrument()
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and "enabled nothing" in warnings[0].getMessage()
    assert "langgraph is not installed" in warnings[0].getMessage()


@pytest.mark.skipif(_installed("langgraph"), reason="langgraph is installed")
def test_instrument_named_missing_framework_raises_with_the_install_hint() -> None:
    with pytest.raises(openprogram.DidNotEnable) as info:
        openprogram.instrument("langgraph")
    assert "pip install -e '.[langgraph]'" in str(info.value)
    assert openprogram.instrumented() == set()


@pytest.mark.skipif(_installed("semantic_kernel"), reason="semantic-kernel is installed")
def test_extra_name_is_the_distribution_name() -> None:
    with pytest.raises(openprogram.DidNotEnable, match=r"\.\[semantic-kernel\]"):
        openprogram.instrument("semantic_kernel")
    with pytest.raises(openprogram.DidNotEnable, match=r"\.\[semantic-kernel\]"):
        openprogram.instrument("semantic-kernel")  # the distribution's spelling is accepted too


def test_the_all_extra_installs_every_supported_framework() -> None:
    requirements = importlib.metadata.requires("openprogram") or []
    pattern = re.compile(r"openprogram\[(?P<extra>[\w-]+)\]\s*;\s*extra\s*==\s*['\"]all['\"]")
    in_all = {match["extra"] for match in map(pattern.match, requirements) if match is not None}
    adapters = [
        getattr(importlib.import_module(module), name)
        for module, _, name in (target.partition(":") for target in INTEGRATIONS.values())
    ]
    assert {adapter.extra for adapter in adapters} <= in_all


def test_unknown_integration_name() -> None:
    with pytest.raises(ValueError, match="unknown integration"):
        openprogram.instrument("django")


def test_uninstrument_is_idempotent() -> None:
    openprogram.uninstrument()
    openprogram.uninstrument()
    assert openprogram.instrumented() == set()

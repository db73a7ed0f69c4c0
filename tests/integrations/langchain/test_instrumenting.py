"""Switching the LangChain adapter on and off: by name, with ``instrument()`` naming none, lazily, and back."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import openprogram
import openprogram._instrumentation
import pytest
from langchain_core.language_models import BaseChatModel
from langchain_core.tools import BaseTool
from openprogram.integrations.langchain import LangChainIntegration

from tests.integrations.langchain.fakes import add, listed
from tests.support import calls

CHAT_MODEL_METHODS = ("_generate_with_cache", "_agenerate_with_cache", "stream", "astream")
TOOL_METHODS = ("run", "arun", "_parse_input")
PATCHED = [(BaseChatModel, name) for name in CHAT_MODEL_METHODS] + [(BaseTool, name) for name in TOOL_METHODS]


def _current() -> list[Any]:
    return [vars(owner)[name] for owner, name in PATCHED]


def test_instrument_langchain_names_it_and_wraps_the_model_and_tool_methods() -> None:
    assert openprogram.instrument("langchain") == {"langchain"}  # the conftest's already: nothing wraps twice
    assert "langchain" in openprogram.instrumented()
    assert all(getattr(w, "__openprogram_original__", None) is not None for w in _current())
    before = _current()
    assert openprogram.instrument("langchain-core") == {"langchain"}  # its distribution's name
    assert _current() == before


def test_uninstrument_restores_the_original_methods_and_records_nothing(store: Any) -> None:
    wrapped = _current()
    openprogram.uninstrument("langchain")
    originals = _current()
    assert [w.__openprogram_original__ for w in wrapped] == originals
    assert all(getattr(o, "__openprogram_original__", None) is None for o in originals)
    with openprogram.session_context(store=store) as h:
        assert listed("plain").invoke("x").content == "plain" and add.invoke({"a": 1, "b": 1}) == 2
    assert [c.kind for c in calls(store, h.session_id)] == ["turn"]
    assert "langchain" not in openprogram.instrumented()
    openprogram.uninstrument("langchain")  # idempotent
    assert _current() == originals


def test_instrument_naming_nothing_arms_langchain(store: Any) -> None:
    openprogram.uninstrument()
    try:
        assert "langchain" in openprogram.instrument()
        with openprogram.session_context(store=store) as h:
            listed("armed").invoke("x")
        assert [(c.kind, c.framework) for c in calls(store, h.session_id)] == [("turn", None), ("llm", "langchain")]
    finally:
        openprogram.uninstrument()


def test_a_missing_or_old_langchain_core_is_reported_with_the_install_hint(monkeypatch: pytest.MonkeyPatch) -> None:
    hint = r"; pip install -e '\.\[langchain\]' in openprogram's checkout"
    with monkeypatch.context() as patched:
        # The floor is read from openprogram's extras metadata: raise it past the installed langchain-core.
        patched.setattr(
            openprogram._instrumentation.integration, "lowest_supported", lambda distribution, extra: "99.0"
        )
        with pytest.raises(openprogram.DidNotEnable, match=r"older than the lowest supported, 99\.0" + hint):
            LangChainIntegration().arm()
    monkeypatch.setattr(LangChainIntegration, "distribution", "langchain-core-not-installed")
    with pytest.raises(openprogram.DidNotEnable, match=r"langchain-core-not-installed is not installed" + hint):
        LangChainIntegration().arm()


def test_the_floor_is_the_extras() -> None:
    assert openprogram._instrumentation.integration.lowest_supported("langchain-core", "langchain") == "1.0"


def test_a_langchain_only_program_imports_no_langgraph_and_is_recorded_once_it_imports_langchain(
    tmp_path: Path,
) -> None:
    code = """
        import json, sys
        import openprogram
        enabled = openprogram.instrument()
        imported_before = "langchain_core" in sys.modules
        from langchain_core.language_models import FakeListChatModel
        from langchain_core.output_parsers import StrOutputParser
        from langchain_core.prompts import ChatPromptTemplate
        from langchain_core.tools import tool

        @tool
        def shout(text: str) -> str:
            '''Shout.'''
            return text.upper()

        store = openprogram.open_store("memory://")
        with openprogram.session_context(store=store) as h:
            chain = ChatPromptTemplate.from_messages([("human", "{q}")]) | FakeListChatModel(responses=["hi"])
            answer = (chain | StrOutputParser()).invoke({"q": "hello?"})
            shout.invoke({"text": answer})
        openprogram.flush()
        print(json.dumps({
            "enabled": sorted(enabled), "imported_before": imported_before,
            "langgraph": any(m.startswith("langgraph") for m in sys.modules),
            "calls": [(c.kind, c.name, c.framework) for c in store.list_calls(h.session_id)],
        }))
    """
    env = {"HOME": str(tmp_path), "OPENPROGRAM_HOME": str(tmp_path / "op"), "PATH": "/usr/bin:/bin"}
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], check=False, env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert "langchain" in result["enabled"] and result["imported_before"] is False
    assert result["langgraph"] is False
    assert result["calls"] == [
        ["turn", "main", None],
        ["llm", "FakeListChatModel", "langchain"],
        ["tool", "shout", "langchain"],
    ]

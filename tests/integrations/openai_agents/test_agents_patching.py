"""instrument() / uninstrument(): objects built before are covered, everything is restored, nothing breaks a run."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import openprogram
import pytest
from agents import Agent, Runner, function_tool, set_trace_processors, set_tracing_disabled
from agents.models.interface import Model
from agents.run import AgentRunner
from agents.run_internal import run_loop, tool_execution, turn_resolution
from agents.tracing import TracingProcessor
from openprogram._kit import ORIGINAL
from openprogram.integrations.openai_agents import adapter
from openprogram.integrations.openai_agents.demo import scripted_model
from openprogram.stores import Store

from tests.integrations.openai_agents.helpers import tree
from tests.support import calls

TREE = ["turn main", "  agent Clerk", "    llm scripted-offline", "    tool lookup", "    llm scripted-offline"]


@function_tool
def lookup(key: str) -> str:
    """Look a key up."""
    return f"value of {key}"


def _clerk(model: Any = None) -> Agent[Any]:
    return Agent(name="Clerk", tools=[lookup], model=model or scripted_model([[("lookup", {"key": "a"})], "done"]))


def test_agents_tools_and_models_built_before_instrument_are_recorded(store: Store) -> None:
    openprogram.uninstrument("agents")

    class EarlyModel(type(scripted_model(["x"]))):  # type: ignore[misc]
        """A user's model class defined before instrument()."""

    agent = _clerk(EarlyModel([[("lookup", {"key": "a"})], "done"], "early-model"))
    assert "agents" in openprogram.instrument("openai_agents")  # with every other adapter still enabled
    with openprogram.session_context(store=store) as h:
        assert Runner.run_sync(agent, "go").final_output == "done"
    assert tree(calls(store, h.session_id)) == [line.replace("scripted-offline", "early-model") for line in TREE]


def _patched() -> dict[str, Any]:
    return {
        "AgentRunner.run": AgentRunner.__dict__["run"],
        "run_single_turn_streamed": run_loop.run_single_turn_streamed,
        "execute_handoffs": turn_resolution.execute_handoffs,
        "tool invocation": getattr(tool_execution, "_invoke_function_tool_with_metadata", None)
        or tool_execution.invoke_function_tool,
        "model": type(scripted_model(["x"])).__dict__["get_response"],
    }


def test_uninstrument_restores_everything_and_instrument_twice_wraps_once(store: Store) -> None:
    wrapped = _patched()
    assert all(hasattr(fn, ORIGINAL) for fn in wrapped.values()) and "__init_subclass__" in Model.__dict__
    openprogram.instrument("agents")
    assert _patched() == wrapped
    openprogram.uninstrument("agents")
    assert not any(hasattr(fn, ORIGINAL) for fn in _patched().values())
    assert "__init_subclass__" not in Model.__dict__
    with openprogram.session_context(store=store) as h:
        assert Runner.run_sync(_clerk(), "go").final_output == "done"
    assert tree(calls(store, h.session_id)) == ["turn main"]  # ran, unrecorded
    openprogram.instrument("agents")
    with openprogram.session_context(store=store) as h2:
        Runner.run_sync(_clerk(), "go")
    assert tree(calls(store, h2.session_id)) == TREE


def test_an_error_in_the_adapter_never_breaks_the_run(
    store: Store, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def broken(*args: Any, **kwargs: Any) -> Any:
        raise TypeError("adapter bug")

    caplog.set_level(logging.DEBUG, logger="openprogram")  # an error logged once already is logged at debug level
    monkeypatch.setattr(adapter, "_agent_name", broken)  # every agent, hand-off target and run
    monkeypatch.setattr(adapter, "_model_name", broken)  # every model request
    monkeypatch.setattr(adapter, "_records_itself", broken)  # every tool call
    with openprogram.session_context(store=store) as h:
        assert Runner.run_sync(_clerk(), "go").final_output == "done"
    assert tree(calls(store, h.session_id)) == ["turn main"]
    assert "instrumentation failed" in caplog.text and "adapter bug" in caplog.text


class Collector(TracingProcessor):
    """The SDK's tracing, kept in memory."""

    def __init__(self) -> None:
        self.spans: list[str] = []

    def on_trace_start(self, trace: Any) -> None:
        self.spans.append("trace")

    def on_trace_end(self, trace: Any) -> None:
        pass

    def on_span_start(self, span: Any) -> None:
        pass

    def on_span_end(self, span: Any) -> None:
        data = span.span_data
        self.spans.append(f"{data.type} {getattr(data, 'name', '') or ''}".strip())

    def shutdown(self) -> None:
        pass

    def force_flush(self) -> None:
        pass


def test_the_sdks_own_tracing_sees_the_same_spans_with_openprogram_recording(store: Store) -> None:
    collector = Collector()
    set_trace_processors([collector])  # a local processor only: nothing is exported
    set_tracing_disabled(False)
    try:
        openprogram.uninstrument("agents")
        Runner.run_sync(_clerk(), "go")
        plain, collector.spans = collector.spans, []
        openprogram.instrument("agents")
        with openprogram.session_context(store=store) as h:
            Runner.run_sync(_clerk(), "go")
    finally:
        set_tracing_disabled(True)
        set_trace_processors([])
    assert collector.spans == plain and "function lookup" in plain and "agent Clerk" in plain
    assert tree(calls(store, h.session_id)) == TREE


def test_instrument_before_the_sdk_is_imported_patches_it_on_import(tmp_path: Path) -> None:
    code = textwrap.dedent(
        """
        import json, sys
        import openprogram
        enabled = openprogram.instrument("agents")
        imported_early = "agents" in sys.modules
        from agents.run import AgentRunner
        print(json.dumps({"enabled": sorted(enabled), "imported_early": imported_early,
                          "patched": hasattr(AgentRunner.__dict__["run"], "__openprogram_original__")}))
        """
    )
    env = {
        "HOME": str(tmp_path),
        "OPENPROGRAM_HOME": str(tmp_path / "op"),
        "PATH": "/usr/bin:/bin",
        "OPENAI_AGENTS_DISABLE_TRACING": "1",
    }
    done = subprocess.run(
        [sys.executable, "-c", code], check=False, env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.strip().splitlines()[-1]) == {
        "enabled": ["agents"],
        "imported_early": False,
        "patched": True,
    }


async def test_a_module_importing_the_tool_invocation_after_patching_records_again_after_reinstrument(
    store: Store,
) -> None:
    from agents.realtime import session as realtime  # imports the already patched invoke_function_tool
    from agents.tool_context import ToolContext

    openprogram.uninstrument("agents")
    openprogram.instrument("agents")
    context = ToolContext(context=None, tool_name="lookup", tool_call_id="call_1", tool_arguments='{"key": "a"}')
    async with openprogram.session_context(store=store) as h:
        out = await realtime.invoke_function_tool(function_tool=lookup, context=context, arguments='{"key": "a"}')
    assert out == "value of a"
    assert tree(calls(store, h.session_id)) == ["turn main", "  tool lookup"]

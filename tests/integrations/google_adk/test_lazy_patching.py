"""``instrument("google_adk")`` imports no ADK: ADK is patched when the program imports it; twice wraps once."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path

import openprogram
from google.adk.agents.base_agent import BaseAgent
from google.adk.runners import Runner
from openprogram.integrations.google_adk.fakes import ScriptedLlm


def test_instrument_before_importing_adk_imports_nothing_and_records_the_run(tmp_path: Path) -> None:
    code = """
        import asyncio, json, sys
        import openprogram
        enabled = openprogram.instrument("google_adk")
        before = sorted(m for m in sys.modules if m.startswith("google.adk"))
        from google.adk.agents import LlmAgent
        from google.adk.runners import InMemoryRunner
        from google.genai import types
        from openprogram.integrations.google_adk.fakes import ScriptedLlm

        async def main():
            runner = InMemoryRunner(agent=LlmAgent(name="late", model=ScriptedLlm(script=["hi"])), app_name="app")
            made = await runner.session_service.create_session(app_name="app", user_id="u")
            message = types.Content(role="user", parts=[types.Part(text="hello")])
            async for _ in runner.run_async(user_id="u", session_id=made.id, new_message=message):
                pass

        with openprogram.session_context() as h:
            asyncio.run(main())
        kinds = [c.kind for c in openprogram.open_store().list_calls(h.session_id)]
        print(json.dumps({"enabled": sorted(enabled), "before": before, "kinds": kinds}))
    """
    env = {"HOME": str(tmp_path), "OPENPROGRAM_HOME": str(tmp_path / "op"), "PATH": "/usr/bin:/bin"}
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], check=False, env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result == {"enabled": ["google_adk"], "before": [], "kinds": ["turn", "agent", "llm"]}


def test_instrument_twice_wraps_once_and_uninstrument_restores(instrument: Callable[..., set[str]]) -> None:
    originals = (Runner.run_async, BaseAgent.run_async, ScriptedLlm.generate_content_async)
    instrument("google_adk")
    wrapped = (Runner.run_async, BaseAgent.run_async, ScriptedLlm.generate_content_async)
    instrument("google_adk")
    assert (Runner.run_async, BaseAgent.run_async, ScriptedLlm.generate_content_async) == wrapped
    assert all(w is not o and w.__wrapped__ is o for w, o in zip(wrapped, originals, strict=True))
    openprogram.uninstrument("google_adk")
    assert (Runner.run_async, BaseAgent.run_async, ScriptedLlm.generate_content_async) == originals

"""``instrument("pydantic_ai")`` imports nothing: Pydantic AI is patched when the program imports it.

Run in a fresh interpreter, so what is imported is exactly what the program asked for.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path


def test_instrument_before_import_patches_pydantic_ai_when_the_program_imports_it(tmp_path: Path) -> None:
    code = """
        import json, sys
        import openprogram
        enabled = openprogram.instrument("pydantic_ai")
        imported_early = "pydantic_ai" in sys.modules
        from pydantic_ai import Agent
        from pydantic_ai.models.test import TestModel
        agent = Agent(TestModel(), name="late")
        with openprogram.session_context() as h:
            agent.run_sync("hi")
        openprogram.flush()
        kinds = [c.kind for c in openprogram.open_store().list_calls(h.session_id)]
        print(json.dumps({"enabled": sorted(enabled), "imported_early": imported_early, "kinds": kinds}))
    """
    env = {"HOME": str(tmp_path), "OPENPROGRAM_HOME": str(tmp_path / "op"), "PATH": "/usr/bin:/bin"}
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], check=False, env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result == {"enabled": ["pydantic_ai"], "imported_early": False, "kinds": ["turn", "agent", "llm"]}

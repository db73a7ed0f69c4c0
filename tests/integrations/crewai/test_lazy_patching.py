"""``instrument()`` imports no CrewAI (whose import creates ~/.config/crewai and more); its import patches it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from openprogram.integrations.crewai.fakes import CREWAI_OFFLINE_ENV

SCRIPT = """
import sys
import openprogram

assert "crewai" in openprogram.instrument(), "crewai is not enabled"
assert "crewai" not in sys.modules, "instrument() imported crewai"

from crewai import Crew
from crewai.hooks import get_after_tool_call_hooks, get_before_tool_call_hooks, tool_hooks
from crewai.utilities import tool_utils
from openprogram.integrations.crewai import adapter

assert hasattr(Crew.kickoff, "__openprogram_original__")
assert hasattr(tool_utils.execute_tool_and_check_finality, "__openprogram_original__")
if hasattr(tool_hooks, "run_before_tool_call_hooks"):  # CrewAI's hook runners, wrapped
    assert hasattr(tool_hooks.run_before_tool_call_hooks, "__openprogram_original__")
    assert hasattr(tool_utils.run_after_tool_call_hooks, "__openprogram_original__")
else:  # before 1.15.3: hooks of its own in CrewAI's registry
    assert adapter._before_tool in get_before_tool_call_hooks() and adapter._after_tool in get_after_tool_call_hooks()
openprogram.uninstrument()
assert not hasattr(Crew.kickoff, "__openprogram_original__")
print("ok")
"""


def test_instrument_imports_no_crewai_and_patches_it_when_imported(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    env = {
        **os.environ,
        **CREWAI_OFFLINE_ENV,
        "HOME": str(home),
        "XDG_DATA_HOME": str(home / ".local" / "share"),
        "CREWAI_STORAGE_DIR": str(home / "crewai_storage"),
        "OPENPROGRAM_HOME": str(tmp_path / "openprogram"),
    }
    check = "import sys, openprogram; openprogram.instrument(); assert 'crewai' not in sys.modules"
    subprocess.run([sys.executable, "-c", check], env=env, check=True, timeout=120)
    assert list(home.iterdir()) == []  # nothing of CrewAI's was created
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().endswith("ok")

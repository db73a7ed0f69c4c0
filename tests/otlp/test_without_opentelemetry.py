"""With no OpenTelemetry installed, openprogram still imports and records; export says what to install."""

from __future__ import annotations

import importlib
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import openprogram

CORE = Path(openprogram.__file__).resolve().parent
INTEGRATIONS = Path(importlib.import_module("openprogram.integrations").__file__ or "").resolve().parent

PROGRAM = """
    import importlib.util, sys
    sys.path.insert(0, {packages!r})
    assert importlib.util.find_spec("opentelemetry") is None, "this interpreter must not see OpenTelemetry"
    import openprogram
    from openprogram import _cli

    try:
        openprogram.configure(export="otlp")
    except openprogram.DidNotEnable as exc:
        print("configure raised:", exc)
    print("export exit status:", _cli.main(["--store", "memory://", "export", "otlp", "--all"]))

    @openprogram.tool
    def work():
        return "done"

    with openprogram.session_context(store="memory://"):
        print("tool:", work())
"""


def test_without_opentelemetry_openprogram_records_and_export_names_the_extra(tmp_path: Path) -> None:
    packages = tmp_path / "site"
    packages.mkdir()
    # The package as installed (the adapters' package inside it), without the venv's site-packages (-S).
    shutil.copytree(CORE, packages / "openprogram", ignore=shutil.ignore_patterns("__pycache__"))
    (packages / "openprogram" / "integrations").symlink_to(INTEGRATIONS)

    child = subprocess.run(
        [sys.executable, "-I", "-S", "-c", textwrap.dedent(PROGRAM.format(packages=str(packages)))],
        env={"OPENPROGRAM_EXPORT": "otlp", "OPENPROGRAM_HOME": str(tmp_path / "home"), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )

    assert child.returncode == 0, child.stderr
    hint = "pip install -e '.[otlp]' in openprogram's checkout"
    assert child.stdout.splitlines() == [
        f"configure raised: configure(export='otlp') needs the OpenTelemetry OTLP/HTTP exporter: {hint}",
        "export exit status: 1",
        "tool: done",
    ]
    assert f"openprogram export otlp needs the OpenTelemetry OTLP/HTTP exporter: {hint}" in child.stderr
    from_environment = [line for line in child.stderr.splitlines() if "OPENPROGRAM_EXPORT=otlp needs" in line]
    assert len(from_environment) == 1 and hint in from_environment[0]

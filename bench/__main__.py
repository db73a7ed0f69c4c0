"""Run benchmarks: ``python -m bench [NAME ...] [-- OPTION ...]`` (default: all). Each runs in its own process.

Options after ``--`` go to every benchmark named (``python -m bench llm-cost -- --instructions``).

Every benchmark prints its figures as ratios against a baseline measured in
the same run, because machines here are noisy. A benchmark whose framework is
not installed is reported as skipped, with the extra to install.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))

# name -> (script, module that must be importable, extra that provides it)
BENCHMARKS: dict[str, tuple[str, str | None, str | None]] = {
    "p1": ("p1_hot_path.py", "opentelemetry.sdk", None),
    "p2": ("p2_sqlite.py", None, None),
    "p2-postgres": ("p2_postgres.py", "psycopg", "postgres"),
    "p3-langgraph": ("p3_langgraph.py", "langgraph", "langgraph"),
    "p3-langchain": ("p3_langchain.py", "langchain_core", "langchain"),
    "p3-crewai": ("p3_crewai.py", "crewai", "crewai"),
    "p3-semantic-kernel": ("p3_semantic_kernel.py", "semantic_kernel", "semantic-kernel"),
    "p3-instructions": ("p3_instructions.py", None, None),
    "p3-floor": ("p3_floor.py", None, None),
    "p3-rows": ("p3_rows.py", None, None),
    "reliability": ("reliability.py", None, None),
    "startup": ("startup.py", "langgraph", "langgraph"),
    "llm-cost": ("llm_cost.py", None, None),
    "capture-cost": ("capture_cost.py", None, None),
    "undo-cost": ("undo_cost.py", None, None),
    "error-traceback": ("error_traceback.py", None, None),
    "otlp-live": ("otlp_live.py", "opentelemetry.exporter.otlp.proto.http", "otlp"),
    "p3-pydantic-ai": ("p3_pydantic_ai.py", "pydantic_ai", "pydantic-ai"),
    "p3-openai-agents": ("p3_openai_agents.py", "agents", "openai-agents"),
    "sk-profile": ("sk_profile.py", "semantic_kernel", "semantic-kernel"),
    "sk-ab": ("sk_ab.py", "semantic_kernel", "semantic-kernel"),
    "long-conversations": ("long_conversations.py", "langgraph", "langgraph"),
    "mcp-cost": ("mcp_cost.py", "mcp", "mcp"),
    "p3-llama-index": ("p3_llama_index.py", "llama_index", "llama-index"),
    "p3-google-adk": ("p3_google_adk.py", "google.adk", "google-adk"),
}


def main(argv: list[str]) -> int:
    options = argv[argv.index("--") + 1 :] if "--" in argv else []
    names = argv[: len(argv) - len(options) - 1] if "--" in argv else argv
    names = names or list(BENCHMARKS)
    failed = 0
    for name in names:
        if name not in BENCHMARKS:
            print(f"unknown benchmark {name!r}; known: {', '.join(BENCHMARKS)}")
            return 2
        script, needs, extra = BENCHMARKS[name]
        path = os.path.join(HERE, script)
        if not os.path.exists(path):
            print(f"== {name}: not written yet ({script})")
            continue
        if needs and importlib.util.find_spec(needs) is None:
            hint = f"pip install -e '.[{extra}]'" if extra else f"pip install {needs.split('.')[0]}"
            print(f"== {name}: skipped, {needs} is not installed ({hint})")
            continue
        print(f"== {name} ({script})", flush=True)
        started = time.perf_counter()
        code = subprocess.call([sys.executable, path, *options], cwd=os.path.dirname(HERE))
        print(f"   ({time.perf_counter() - started:.0f}s, exit {code})", flush=True)
        failed += code != 0
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
